package load

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/oklog/ulid/v2"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/counter"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/change"
	"github.com/omnigraph-go/omnigraph/lang/pg"
	"github.com/omnigraph-go/omnigraph/table"
)

// colSchema has no @unique group and no @card, so appends take the
// columnar path; it has a property of every kind.
const colSchema = `
node Person {
  handle: String @key
  name: String
  age: I32?
  score: F64?
  big: I64?
  active: Bool?
  born: Date?
  seen: DateTime?
  tier: enum(gold, silver)?
  tags: [String]?
  emb: Vector(2)?
  pic: Blob?
  code: String?
  level: I64?
  @check(code, "^[a-z]+$")
  @range(level, 0..10)
}
node Slot {
  org: String
  n: I32
  @key(org, n)
}
node Note {
  text: String?
}
edge Knows: Person -> Person {
  w: F64?
}
edge About: Note -> Person
`

// colLines are good lines in every shape the fast parser takes and many it
// leaves to the strict parser (escapes, odd member order, nested values).
var colLines = []string{
	`{"type":"Person","data":{"handle":"ada","name":"Ada","age":36,"score":1.5,"big":9007199254740993,"active":true}}`,
	`{"type":"Person","data":{"handle":"bob","name":"B\"o\u0062","age":"41","big":"-12","active":false,"born":"2001-02-03","seen":"2024-05-01T12:00:00+02:00"}}`,
	`{"data":{"handle":"cy","name":"Cy"},"type":"Person"}`,
	` { "type" : "Person" , "data" : { "handle" : "dee" , "name" : "Dée", "tier":"gold", "tags":["a","b"], "emb":[1,2.5], "pic":"base64:aGk=", "code":"abc", "level":3 } } `,
	`{"type":"Person","data":{"handle":"eve","name":"Eve","age":1.0,"score":7,"big":1e3,"born":19000}}`,
	`{"type":"Person","data":{"handle":"fay","name":"Fay","age":null,"score":null,"tags":null,"id":"fay"}}`,
	`{"type":"Slot","data":{"org":"acme","n":42}}`,
	`{"type":"Slot","data":{"n":7,"org":"acme"}}`,
	`{"type":"Note","data":{"text":"hello","id":"note-1"}}`,
	`{"type":"Note","data":{"text":"new id"}}`,
	`{"type":"Note"}`,
	`{"type":"Note","data":null}`,
	`{"edge":"Knows","from":"ada","to":"bob","data":{"w":0.25}}`,
	`{"edge":"knows","to":"cy","from":"bob"}`,
	`{"from":"cy","to":"zed","edge":"Knows","data":{"w":-1e-3,"id":"k-given"}}`,
	`{"edge":"About","from":"note-1","to":"ada"}`,
	`{"type":"Person","data":{"handle":"zed","name":"Zed"}}`,
	`{"edge":"Knows","from":"ada","to":"old","data":{}}`,
}

// colRig is a graph over counted mem storage with one committed node "old".
type colRig struct {
	mem   *mem.Store
	count *counter.Counter
	g     *graph.Graph
}

func newColRig(t *testing.T) *colRig {
	t.Helper()
	r := &colRig{mem: mem.New()}
	r.count = counter.New(r.mem)
	g, err := graph.Init(context.Background(), r.count, colSchema, graph.InitOptions{Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	r.g = g
	// "old" is committed through the row path (merge).
	if _, err := Run(context.Background(), g, strings.NewReader(`{"type":"Person","data":{"handle":"old","name":"Old"}}`), Options{Mode: Merge}); err != nil {
		t.Fatal(err)
	}
	return r
}

// objects counts the stored objects.
func (r *colRig) objects(t *testing.T) int {
	t.Helper()
	all, err := backend.ListAll(context.Background(), r.mem, "")
	if err != nil {
		t.Fatal(err)
	}
	return len(all)
}

// run appends data through the columnar path (rows false) or the row path.
func (r *colRig) run(t *testing.T, data string, rows bool) (*Result, error) {
	t.Helper()
	return r.runOpts(t, data, rows, Options{Mode: Append})
}

// runOpts loads data with opts through the columnar path (rows false) or
// the row path.
func (r *colRig) runOpts(t *testing.T, data string, rows bool, opts Options) (*Result, error) {
	t.Helper()
	ctx := context.Background()
	snap, err := r.g.Snapshot(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := snap.Catalog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !columnar(cat, opts) {
		t.Fatal("the test schema should take the columnar path")
	}
	in := newIntake(ctx, r.g, snap, cat)
	if rows {
		return runRows(ctx, r.g, in, newSpool(in, strings.NewReader(data)), opts)
	}
	return runColumnar(ctx, r.g, snap, in, newSpool(in, strings.NewReader(data)), opts)
}

// dump renders every table at the head: rows sorted, every column, minted
// ids (valid ULIDs the file did not give) as "<new>".
func (r *colRig) dump(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	snap, err := r.g.Snapshot(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, p := range snap.Tables() {
		ds, err := snap.OpenTable(ctx, p.Key)
		if err != nil {
			t.Fatal(err)
		}
		if ds.RowCount() == 0 {
			continue
		}
		recs, err := ds.Scan(ctx, table.ScanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var rows []string
		for _, rec := range recs {
			for _, row := range change.RecordRows(rec) {
				if id, _ := row[pg.ColID].(string); len(id) == 26 {
					if _, err := ulid.ParseStrict(id); err == nil {
						row[pg.ColID] = "<new>"
					}
				}
				keys := make([]string, 0, len(row))
				for k := range row {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				var parts []string
				for _, k := range keys {
					parts = append(parts, fmt.Sprintf("%s=%#v", k, row[k]))
				}
				rows = append(rows, strings.Join(parts, " "))
			}
			rec.Release()
		}
		sort.Strings(rows)
		fmt.Fprintf(&b, "%s (%d)\n  %s\n", p.Key, len(rows), strings.Join(rows, "\n  "))
	}
	return b.String()
}

// The columnar path loads the same rows as the row path, line for line.
func TestColumnarMatchesRowPath(t *testing.T) {
	data := strings.Join(colLines, "\n") + "\n"
	var dumps [2]string
	var results [2]*Result
	for i, rows := range []bool{false, true} {
		r := newColRig(t)
		res, err := r.run(t, data, rows)
		if err != nil {
			t.Fatalf("rows=%v: %v", rows, err)
		}
		if res.Commit == nil {
			t.Fatalf("rows=%v: no commit", rows)
		}
		res.Commit = nil
		results[i] = res
		dumps[i] = r.dump(t)
	}
	if dumps[0] != dumps[1] {
		t.Fatalf("columnar and row paths differ:\ncolumnar:\n%s\nrows:\n%s", dumps[0], dumps[1])
	}
	if fmt.Sprint(*results[0]) != fmt.Sprint(*results[1]) {
		t.Fatalf("results differ: %+v vs %+v", *results[0], *results[1])
	}
	if results[0].Nodes != 13 || results[0].Edges != 5 {
		t.Fatalf("counts: %+v", *results[0])
	}
	for _, want := range []string{
		`handle="bob" id="bob" level=<nil> name="B\"ob"`, `big=9007199254740993`, `id="[\"acme\",\"42\"]"`,
		`id="k-given" src="cy" w=-0.001`, `emb=[]float32{1, 2.5}`, `name="Dée"`,
	} {
		if !strings.Contains(dumps[0], want) {
			t.Errorf("loaded rows lack %s:\n%s", want, dumps[0])
		}
	}
}

// Every bad input fails with the row path's error, names the same line,
// and changes nothing: no commit, no table version, no stored object.
func TestColumnarErrorsMatchRowPath(t *testing.T) {
	cases := badFiles()
	names := make([]string, 0, len(cases))
	for n := range cases {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		data := cases[name]
		t.Run(name, func(t *testing.T) {
			var msgs [2]string
			for i, rows := range []bool{false, true} {
				r := newColRig(t)
				before, beforeObjs := r.dump(t), r.objects(t)
				_, err := r.run(t, data, rows)
				if err == nil {
					t.Fatalf("rows=%v: loaded a bad file", rows)
				}
				if !errors.Is(err, graph.ErrInvalidInput) && !errors.Is(err, graph.ErrKeyConflict) {
					t.Fatalf("rows=%v: error is not input or key conflict: %v", rows, err)
				}
				msgs[i] = err.Error()
				if after := r.dump(t); after != before {
					t.Fatalf("rows=%v: a failed load changed the graph", rows)
				}
				if n := r.objects(t); n != beforeObjs {
					t.Fatalf("rows=%v: a failed load left %d new objects", rows, n-beforeObjs)
				}
			}
			if msgs[0] != msgs[1] {
				t.Fatalf("errors differ:\ncolumnar: %s\nrows:     %s", msgs[0], msgs[1])
			}
		})
	}
}

// badFiles are files with one (or a first) bad line, by what is wrong.
func badFiles() map[string]string {
	good := strings.Join(colLines[:3], "\n") + "\n"
	more := "\n" + strings.Join(colLines[3:8], "\n") + "\n" // good lines after the bad one
	return map[string]string{
		"bad in the middle":   good + `{"type":"Person","data":{"handle":"x","name":"X","age":4.5}}` + more,
		"two bad lines":       good + `{"type":"Persn","data":{}}` + more + `{"type":"Person","data":{"handle":"y"}}` + "\n",
		"dup in the middle":   good + `{"type":"Person","data":{"handle":"ada","name":"Again"}}` + more + "{\n",
		"missing then syntax": `{"edge":"Knows","from":"ada","to":"ghost"}` + "\n" + good + more + `{"type":` + "\n",
		"syntax":              good + `{"type":"Person","data":{"handle":"x","name":"X"}` + "\n",
		"unknown field":       good + `{"type":"Person","data":{"handle":"x","name":"X","nmae":1}}` + "\n",
		"unknown type":        good + `{"type":"Persn","data":{}}` + "\n",
		"edge as node":        good + `{"type":"Knows","data":{}}` + "\n",
		"dup member":          good + `{"type":"Person","data":{"handle":"x","name":"X","name":"Y"}}` + "\n",
		"dup envelope":        good + `{"type":"Person","type":"Person","data":{"handle":"x","name":"X"}}` + "\n",
		"required":            good + `{"type":"Person","data":{"handle":"x"}}` + "\n",
		"required null":       good + `{"type":"Person","data":{"handle":"x","name":null}}` + "\n",
		"bad int":             good + `{"type":"Person","data":{"handle":"x","name":"X","age":4.5}}` + "\n",
		"i32 overflow":        good + `{"type":"Person","data":{"handle":"x","name":"X","age":2147483648}}` + "\n",
		"bad float":           good + `{"type":"Person","data":{"handle":"x","name":"X","score":"1"}}` + "\n",
		"check":               good + `{"type":"Person","data":{"handle":"x","name":"X","code":"ABC"}}` + "\n",
		"range":               good + `{"type":"Person","data":{"handle":"x","name":"X","level":11}}` + "\n",
		"enum":                good + `{"type":"Person","data":{"handle":"x","name":"X","tier":"bronze"}}` + "\n",
		"empty key":           good + `{"type":"Person","data":{"handle":"","name":"X"}}` + "\n",
		"id mismatch":         good + `{"type":"Person","data":{"handle":"x","name":"X","id":"y"}}` + "\n",
		"reserved":            good + `{"type":"Person","data":{"handle":"x","name":"X","_rowid":1}}` + "\n",
		"src in data":         good + `{"edge":"Knows","from":"ada","to":"bob","data":{"src":"ada"}}` + "\n",
		"no from":             good + `{"edge":"Knows","to":"bob"}` + "\n",
		"empty to":            good + `{"edge":"Knows","from":"ada","to":""}` + "\n",
		"node with from":      good + `{"type":"Person","from":"a","data":{"handle":"x","name":"X"}}` + "\n",
		"trailing":            good + `{"type":"Note"} x` + "\n",
		"bad utf8":            good + "{\"type\":\"Note\",\"data\":{\"text\":\"\xff\"}}\n",
		"control char":        good + "{\"type\":\"Note\",\"data\":{\"text\":\"a\tb\"}}\n",
		"not an object":       good + `[1]` + "\n",
		"dup id":              good + `{"type":"Person","data":{"handle":"ada","name":"Again"}}` + "\n",
		"dup then syntax":     good + `{"type":"Person","data":{"handle":"ada","name":"Again"}}` + "\n{\n",
		"key conflict":        good + `{"type":"Person","data":{"handle":"old","name":"Again"}}` + "\n",
		"src missing":         good + `{"edge":"Knows","from":"nobody","to":"ada"}` + "\n",
		"dst missing":         `{"edge":"Knows","from":"ada","to":"ghost"}` + "\n" + good,
		"both missing":        `{"edge":"Knows","from":"g1","to":"g2"}` + "\n" + `{"edge":"Knows","from":"ada","to":"g3"}` + "\n" + good,
		"wrong end type":      good + `{"edge":"About","from":"ada","to":"bob"}` + "\n",
	}
}

// A bad line after several encoded row groups still changes nothing and
// names its line; a good file that size lands in fragments of the
// configured size with every row.
func TestColumnarStreamsFragments(t *testing.T) {
	defer func(rg int, fr int64) { rowGroupRows, fragmentRows = rg, fr }(rowGroupRows, fragmentRows)
	rowGroupRows, fragmentRows = 8, 40
	var b strings.Builder
	const n = 100
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `{"type":"Person","data":{"handle":"p%03d","name":"P","age":%d}}`+"\n", i, i)
	}
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `{"edge":"Knows","from":"p%03d","to":"p%03d"}`+"\n", i, (i+1)%n)
	}
	good := b.String()
	lines := strings.Split(good, "\n")
	lines[150] = `{"edge":"Knows","from":"p001","to":"p002","data":{"w":"heavy"}}`
	bad := strings.Join(lines, "\n")

	r := newColRig(t)
	before, objs := r.dump(t), r.objects(t)
	_, err := r.run(t, bad, false)
	var ie *graph.InputError
	if !errors.As(err, &ie) || ie.Where != "line 151" {
		t.Fatalf("bad line 151: got %v", err)
	}
	if r.dump(t) != before || r.objects(t) != objs {
		t.Fatal("a failed load changed the graph or stored objects")
	}

	res, err := r.run(t, good, false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Nodes != n || res.Edges != n {
		t.Fatalf("counts %+v", res)
	}
	snap, _ := r.g.Snapshot(context.Background(), "")
	for key, want := range map[string][]int64{
		graph.NodeTableKey("Person"): {1, 40, 40, 20}, // "old", then the load
		graph.EdgeTableKey("Knows"):  {40, 40, 20},
	} {
		ds, err := snap.OpenTable(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for _, f := range ds.Manifest().Fragments {
			got = append(got, f.Rows)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s fragments %v, want %v", key, got, want)
		}
	}
	d := r.dump(t)
	for _, want := range []string{`age=99 big=<nil> born=<nil> code=<nil> emb=<nil> handle="p099" id="p099"`, `dst="p000" id="<new>" src="p099"`} {
		if !strings.Contains(d, want) {
			t.Errorf("rows lack %s", want)
		}
	}
	// Minted edge ids count up in file order.
	ds, _ := snap.OpenTable(context.Background(), graph.EdgeTableKey("Knows"))
	recs, err := ds.Scan(context.Background(), table.ScanOptions{Columns: []string{pg.ColID, pg.ColSrc}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, rec := range recs {
		for _, row := range change.RecordRows(rec) {
			ids = append(ids, row[pg.ColID].(string))
		}
		rec.Release()
	}
	if len(ids) != n || !sort.StringsAreSorted(ids) {
		t.Fatalf("edge ids are not increasing in load order: %d ids, sorted %v", len(ids), sort.StringsAreSorted(ids))
	}
}

// The fast parser takes the common lines itself: only the lines with
// escapes, data before type and an array go through the strict parser.
func TestFastParserTakesCommonLines(t *testing.T) {
	r := newColRig(t)
	ctx := context.Background()
	snap, _ := r.g.Snapshot(ctx, "")
	cat, _ := snap.Catalog(ctx)
	bl := newBulkLoad(ctx, snap, newIntake(ctx, r.g, snap, cat))
	defer bl.release()
	if err := bl.read(strings.NewReader(strings.Join(colLines, "\n")), nil); err != nil {
		t.Fatal(err)
	}
	if bl.slow != 3 {
		t.Fatalf("%d of %d lines took the strict parser, want 3", bl.slow, len(colLines))
	}
}

// A columnar append costs the same storage requests as the row path's.
func TestColumnarRequestsMatchRowPath(t *testing.T) {
	data := strings.Join(colLines, "\n") + "\n"
	var got [2]string
	for i, rows := range []bool{false, true} {
		r := newColRig(t)
		r.count.Reset()
		if _, err := r.run(t, data, rows); err != nil {
			t.Fatal(err)
		}
		c := r.count.Snapshot()
		got[i] = fmt.Sprintf("get %d head %d list %d put %d condput %d delete %d" /* round trips vary with timing */, c.Get, c.Head, c.List, c.Put, c.CondPut, c.Delete)
	}
	if got[0] != got[1] {
		t.Fatalf("columnar %s, rows %s", got[0], got[1])
	}
}

// A columnar append that loses a race (to another process) re-validates
// against the new head:
// an unrelated racer leaves it to commit every row once; a racer that
// inserts one of its ids makes it a key conflict naming the line.
func TestColumnarLosesRace(t *testing.T) {
	ctx := context.Background()
	data := `{"type":"Person","data":{"handle":"p1","name":"P1"}}
{"type":"Person","data":{"handle":"p2","name":"P2"}}
{"edge":"Knows","from":"p1","to":"p2"}
`
	for _, tc := range []struct {
		name, racer, wantErr string
		mode                 Mode
	}{
		{"unrelated", `{"type":"Person","data":{"handle":"r","name":"R"}}`, "", Append},
		{"same id", `{"type":"Person","data":{"handle":"p2","name":"Racer"}}`, `line 2: key_conflict: node Person "p2" already exists`, Append},
		{"overwrite", `{"type":"Person","data":{"handle":"p2","name":"Racer"}}`, "changed while the write was prepared", Overwrite},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newColRig(t)
			// The racer is another process: this process's writes queue
			// behind the load (graph/queue.go) instead of racing it.
			other, err := graph.Open(ctx, r.count, graph.OpenOptions{Process: graph.NewProcess(), Actor: "racer"})
			if err != nil {
				t.Fatal(err)
			}
			raced := 0
			opts := Options{Mode: tc.mode, Progress: func(phase string, _ int64) {
				if phase != "write" || raced > 0 {
					return
				}
				raced++
				if _, err := Run(ctx, other, strings.NewReader(tc.racer), Options{Mode: Merge}); err != nil {
					t.Fatal(err)
				}
			}}
			res, err := Run(ctx, r.g, strings.NewReader(data), opts)
			if tc.wantErr != "" {
				var rs *graph.ReadSetChanged
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !(errors.Is(err, graph.ErrKeyConflict) || errors.As(err, &rs) && !rs.Retryable) {
					t.Fatalf("got %v, want %s", err, tc.wantErr)
				}
				if d := r.dump(t); strings.Contains(d, `"p1"`) || !strings.Contains(d, `name="Racer"`) {
					t.Fatalf("the refused load changed rows:\n%s", d)
				}
				return
			}
			if err != nil || res.Commit == nil || res.Nodes != 2 || res.Edges != 1 {
				t.Fatalf("after a race: %+v %v", res, err)
			}
			d := r.dump(t)
			for _, want := range []string{"node:Person (4)", "edge:Knows (1)", `dst="p2" id="<new>" src="p1"`} {
				if !strings.Contains(d, want) {
					t.Fatalf("rows lack %s:\n%s", want, d)
				}
			}
		})
	}
}

var ulidText = regexp.MustCompile(`\b[0-9A-HJKMNP-TV-Z]{26}\b`)

// Overwrite takes the columnar path too: the same rows, the same errors
// (stranded edges, endpoints into a replaced type, unknown --type) as the
// row path, and nothing changed by a failed one.
func TestColumnarOverwriteMatchesRowPath(t *testing.T) {
	base := strings.Join(colLines, "\n") + "\n"
	cases := []struct {
		name, data string
		replace    []string
		bad        bool
	}{
		{name: "people and knows", data: `{"type":"Person","data":{"handle":"ada","name":"Ada 2"}}
{"type":"Person","data":{"handle":"bob","name":"Bob 2"}}
{"type":"Person","data":{"handle":"cy","name":"Cy"}}
{"type":"Person","data":{"handle":"dee","name":"Dée"}}
{"type":"Person","data":{"handle":"eve","name":"Eve"}}
{"type":"Person","data":{"handle":"fay","name":"Fay"}}
{"type":"Person","data":{"handle":"zed","name":"Zed"}}
{"type":"Person","data":{"handle":"old","name":"Old"}}
{"edge":"Knows","from":"ada","to":"bob"}
`},
		{name: "replace emptied", data: `{"type":"Note","data":{"text":"only","id":"note-1"}}` + "\n", replace: []string{"Knows", "Slot"}},
		{name: "stranded", bad: true, data: `{"type":"Person","data":{"handle":"ada","name":"Ada"}}` + "\n"},
		{name: "endpoint in replaced type", bad: true, data: `{"type":"Person","data":{"handle":"ada","name":"Ada"}}
{"edge":"Knows","from":"ada","to":"bob"}
`, replace: []string{"About"}},
		{name: "unknown replace", bad: true, data: `{"type":"Note"}` + "\n", replace: []string{"Nope"}},
		{name: "dup id", bad: true, data: `{"type":"Note","data":{"id":"a"}}` + "\n" + `{"type":"Note","data":{"id":"a"}}` + "\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var dumps, msgs [2]string
			for i, rows := range []bool{false, true} {
				r := newColRig(t)
				if _, err := r.run(t, base, true); err != nil {
					t.Fatal(err)
				}
				before, objs := r.dump(t), r.objects(t)
				res, err := r.runOpts(t, tc.data, rows, Options{Mode: Overwrite, Replace: tc.replace})
				if tc.bad {
					if err == nil || !errors.Is(err, graph.ErrInvalidInput) {
						t.Fatalf("rows=%v: got %v, want an input error", rows, err)
					}
					msgs[i] = ulidText.ReplaceAllString(err.Error(), "<new>")
					if r.dump(t) != before || r.objects(t) != objs {
						t.Fatalf("rows=%v: a failed overwrite changed the graph", rows)
					}
					continue
				}
				if err != nil || res.Commit == nil {
					t.Fatalf("rows=%v: %+v %v", rows, res, err)
				}
				dumps[i] = r.dump(t)
			}
			if msgs[0] != msgs[1] {
				t.Fatalf("errors differ:\ncolumnar: %s\nrows:     %s", msgs[0], msgs[1])
			}
			if dumps[0] != dumps[1] {
				t.Fatalf("columnar and row paths differ:\ncolumnar:\n%s\nrows:\n%s", dumps[0], dumps[1])
			}
			switch tc.name {
			case "people and knows":
				if !strings.Contains(dumps[0], "node:Person (8)") || !strings.Contains(dumps[0], "edge:Knows (1)") || !strings.Contains(dumps[0], `name="Ada 2"`) {
					t.Fatalf("overwrite result:\n%s", dumps[0])
				}
			case "replace emptied":
				if strings.Contains(dumps[0], "edge:Knows") || strings.Contains(dumps[0], "node:Slot") || !strings.Contains(dumps[0], "node:Note (1)") {
					t.Fatalf("replace result:\n%s", dumps[0])
				}
			case "stranded":
				if !strings.Contains(msgs[0], "referential integrity") {
					t.Fatalf("stranded: %s", msgs[0])
				}
			}
		})
	}
}

// TestColumnarDuplicateEdgeIDKeepsTheLast pins the original's rule on both
// load paths: a file that gives one edge id twice keeps its last line
// (endpoints and properties), counts it once, and the columnar and row
// paths store the same table, also when the two lines fall in different
// row groups and fragments.
func TestColumnarDuplicateEdgeIDKeepsTheLast(t *testing.T) {
	old := rowGroupRows
	rowGroupRows = 2
	oldFrag := fragmentRows
	fragmentRows = 4
	defer func() { rowGroupRows, fragmentRows = old, oldFrag }()
	var b strings.Builder
	b.WriteString(`{"type":"Person","data":{"handle":"ada","name":"A"}}` + "\n")
	b.WriteString(`{"type":"Person","data":{"handle":"bob","name":"B"}}` + "\n")
	b.WriteString(`{"edge":"Knows","from":"ada","to":"bob","data":{"id":"e1"}}` + "\n")
	for i := 0; i < 9; i++ {
		fmt.Fprintf(&b, `{"edge":"Knows","from":"ada","to":"bob","data":{"id":"x%d"}}`+"\n", i)
	}
	b.WriteString(`{"edge":"Knows","from":"bob","to":"ada","data":{"id":"e1"}}` + "\n")
	var dumps [2]string
	for i, rows := range []bool{false, true} {
		r := newColRig(t)
		res, err := r.run(t, b.String(), rows)
		if err != nil {
			t.Fatalf("rows=%v: %v", rows, err)
		}
		if res.Edges != 10 {
			t.Fatalf("rows=%v: %d edges counted, want 10 (e1 once)", rows, res.Edges)
		}
		dumps[i] = r.dump(t)
		if !strings.Contains(dumps[i], "e1") || strings.Count(dumps[i], `"e1"`) > 1 {
			t.Fatalf("rows=%v: e1 stored %d times:\n%s", rows, strings.Count(dumps[i], `"e1"`), dumps[i])
		}
	}
	if dumps[0] != dumps[1] {
		t.Fatalf("the paths store different tables:\ncolumnar: %s\nrows:     %s", dumps[0], dumps[1])
	}
}

// TestNullVectorBetweenValues pins that a nullable Vector property missing
// on some lines between lines that have it loads on both paths (Parquet
// writers refuse a null fixed-size list entry; the table layer writes
// vectors as lists) and the two paths store the same rows.
func TestNullVectorBetweenValues(t *testing.T) {
	data := `{"type":"Person","data":{"handle":"v1","name":"A","emb":[1,2]}}
{"type":"Person","data":{"handle":"v2","name":"B"}}
{"type":"Person","data":{"handle":"v3","name":"C","emb":[3,4]}}
{"type":"Person","data":{"handle":"v4","name":"D","emb":null}}
`
	var dumps [2]string
	for i, rows := range []bool{false, true} {
		r := newColRig(t)
		if _, err := r.run(t, data, rows); err != nil {
			t.Fatalf("rows=%v: %v", rows, err)
		}
		dumps[i] = r.dump(t)
		for _, want := range []string{"emb=[]float32{1, 2}", "emb=[]float32{3, 4}"} {
			if !strings.Contains(dumps[i], want) {
				t.Fatalf("rows=%v: no vector %s in\n%s", rows, want, dumps[i])
			}
		}
	}
	if dumps[0] != dumps[1] {
		t.Fatalf("the paths store different rows:\ncolumnar: %s\nrows:     %s", dumps[0], dumps[1])
	}
}

// TestColumnarEndpointViolationNamesTheEdge: a missing endpoint is
// reported at its first line, source side first, with the edge's id, as the
// row path reports it, when the edges span several fragments, an edge id
// is given twice before it, its value appears again later, and nodes the
// edges name come later in the file or are committed.
func TestColumnarEndpointViolationNamesTheEdge(t *testing.T) {
	defer func(rg int, fr int64) { rowGroupRows, fragmentRows = rg, fr }(rowGroupRows, fragmentRows)
	rowGroupRows, fragmentRows = 4, 12
	var lines []string
	for i := 0; i < 30; i++ {
		lines = append(lines, fmt.Sprintf(`{"edge":"Knows","from":"p%d","to":"old","data":{"id":"k%d"}}`, i%7, i))
	}
	lines = append(lines, `{"edge":"Knows","from":"p1","to":"p2","data":{"id":"k3"}}`) // k3 again: the last wins
	for _, bad := range []string{
		`{"edge":"Knows","from":"p2","to":"ghost","data":{"id":"k-dst"}}`,
		`{"edge":"Knows","from":"nobody","to":"p3","data":{"id":"k-src"}}`,
		`{"edge":"Knows","from":"nobody","to":"ghost","data":{"id":"k-both"}}`,
	} {
		lines = append(lines, bad)
	}
	for i := 0; i < 7; i++ {
		lines = append(lines, fmt.Sprintf(`{"type":"Person","data":{"handle":"p%d","name":"P"}}`, i))
	}
	check := func(lines []string, want, edge string) {
		t.Helper()
		data := strings.Join(lines, "\n") + "\n"
		var got [2]string
		for i, rows := range []bool{false, true} {
			r := newColRig(t)
			_, err := r.run(t, data, rows)
			var v *change.Violation
			if !errors.As(err, &v) || v.Kind != change.ViolationEndpoint {
				t.Fatalf("rows=%v: %v, want an endpoint violation", rows, err)
			}
			got[i] = fmt.Sprintf("%s | %s %s %s", err, v.EntityKind, v.TypeName, v.EntityID)
		}
		if got[0] != got[1] || !strings.Contains(got[0], want) || !strings.HasSuffix(got[0], "| edge Knows "+edge) {
			t.Fatalf("columnar: %s\nrows:     %s\nwant %q and the edge %s", got[0], got[1], want, edge)
		}
	}
	check(lines, `line 33: edge Knows: src "nobody" not found in Person`, "k-src")
	// "ghost" is missing as a destination first (line 32), then as a
	// source (line 39): the source side is reported first.
	nodes := lines[len(lines)-7:]
	check(slices.Concat(lines[:32], []string{`{"edge":"Knows","from":"p1","to":"p2"}`,
		`{"edge":"Knows","from":"p3","to":"p4"}`, `{"edge":"Knows","from":"ghost","to":"p4","data":{"id":"k-ghost"}}`}, nodes),
		`line 35: edge Knows: src "ghost" not found in Person`, "k-ghost")
	// Only destinations missing: the first one.
	check(slices.Concat(lines[:32], nodes), `line 32: edge Knows: dst "ghost" not found`, "k-dst")
}

// The parse pipeline gives the sequential read's rows and errors however
// the file is cut into chunks and however many workers parse them: one
// line a chunk, a few, and one chunk; one worker and several. The good
// file starts with a byte order mark and has blank lines, so line numbers
// and skipped lines are checked across chunk edges too.
func TestPipelineMatchesOneLineAChunk(t *testing.T) {
	defer func(l, b, w int) { chunkLines, chunkBytes, parseWorkers = l, b, w }(chunkLines, chunkBytes, parseWorkers)
	good := "\ufeff" + strings.Join(colLines[:9], "\n") + "\n\n  \n" + strings.Join(colLines[9:], "\n\n") + "\n"
	type config struct{ lines, bytes, workers int }
	configs := []config{{1, 1 << 20, 1}, {1, 1 << 20, 3}, {2, 1 << 20, 2}, {3, 1 << 20, 3}, {1 << 14, 100, 2}, {1 << 14, 1 << 20, 1}}
	run := func(c config, data string, rows bool) (string, string) {
		chunkLines, chunkBytes, parseWorkers = c.lines, c.bytes, c.workers
		r := newColRig(t)
		res, err := r.run(t, data, rows)
		if err != nil {
			return "", err.Error()
		}
		res.Commit = nil
		return fmt.Sprint(*res) + "\n" + r.dump(t), ""
	}
	want, msg := run(configs[0], good, true)
	if msg != "" {
		t.Fatalf("row path: %s", msg)
	}
	bad := badFiles()
	wantErr := map[string]string{}
	for name, data := range bad {
		if _, wantErr[name] = run(configs[0], data, true); wantErr[name] == "" {
			t.Fatalf("%s: the row path loaded a bad file", name)
		}
	}
	for _, c := range configs {
		if got, msg := run(c, good, false); got != want {
			t.Fatalf("%+v: the pipeline loaded other rows (error %q):\n%s\nwant:\n%s", c, msg, got, want)
		}
		for name, data := range bad {
			if _, msg := run(c, data, false); msg != wantErr[name] {
				t.Errorf("%+v %s: error\n  %s\nwant\n  %s", c, name, msg, wantErr[name])
			}
		}
	}
}
