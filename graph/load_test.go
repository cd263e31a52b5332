package graph_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend/counter"
	"github.com/omnigraph-go/omnigraph/backend/fault"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/load"
	"github.com/omnigraph-go/omnigraph/graph/mutate"
	"github.com/omnigraph-go/omnigraph/lang/pg"
	"github.com/omnigraph-go/omnigraph/table"
)

const writeSchema = `
node Person {
  handle: String @key
  name: String
  age: I32?
  email: String?
  joined: Date?
  @unique(email)
  @range(age, 0..150)
  @check(email, "^[^@ ]+@[^@ ]+$")
}
node Company {
  slug: String @key
  industry: enum(finance, software)?
}
node Note {
  text: String
}
edge Knows: Person -> Person {
  since: Date?
}
edge WorksAt: Person -> Company @card(0..1)
edge Tagged: Note -> Person
`

// wrig is a graph over mem, behind a fault injector, behind a counter.
type wrig struct {
	mem   *mem.Store
	fault *fault.Injector
	count *counter.Counter
	g     *graph.Graph
}

func newWRig(t testing.TB) *wrig {
	t.Helper()
	r := &wrig{mem: mem.New()}
	r.fault = fault.New(r.mem)
	r.count = counter.New(r.fault)
	g, err := graph.Init(context.Background(), r.count, writeSchema, graph.InitOptions{Actor: "tester"})
	if err != nil {
		t.Fatalf("Init: %v", err)
	}
	r.g = g
	return r
}

func (r *wrig) load(t testing.TB, mode load.Mode, data string) *load.Result {
	t.Helper()
	res, err := load.Run(context.Background(), r.g, strings.NewReader(data), load.Options{Mode: mode})
	if err != nil {
		t.Fatalf("Load(%s): %v", mode, err)
	}
	return res
}

// state renders what a failed write must not change: the branch head and
// the newest version of every table on its pinned table branch (a moved
// table HEAD shows up even when the manifest did not move).
func (r *wrig) state(t testing.TB, branch string) string {
	t.Helper()
	ctx := context.Background()
	snap, err := r.g.Snapshot(ctx, branch)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "head %d %s\n", snap.Version(), snap.CommitID())
	for _, p := range snap.Tables() {
		latest, err := table.LatestVersion(ctx, r.mem, p.Path, p.Branch)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %s@%d latest %d\n", p.Key, p.Branch, p.Version, latest)
	}
	return b.String()
}

// rows returns the rows of a table at the branch head, as "id|col=v,..."
// strings sorted, with only the given columns.
func (r *wrig) rows(t testing.TB, branch, key string, cols ...string) []string {
	t.Helper()
	ctx := context.Background()
	snap, err := r.g.Snapshot(ctx, branch)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := snap.OpenTable(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := ds.ScanRecord(ctx, table.ScanOptions{Columns: append([]string{pg.ColID}, cols...)})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	var out []string
	for i := 0; i < int(rec.NumRows()); i++ {
		parts := []string{rec.Column(0).ValueStr(i)}
		for c := 1; c < int(rec.NumCols()); c++ {
			parts = append(parts, cols[c-1]+"="+rec.Column(c).ValueStr(i))
		}
		out = append(out, strings.Join(parts, "|"))
	}
	sort.Strings(out)
	return out
}

func (r *wrig) commits(t testing.TB, branch string) int {
	t.Helper()
	cs, err := r.g.Commits(context.Background(), branch, 0)
	if err != nil {
		t.Fatal(err)
	}
	return len(cs)
}

const baseData = `{"type":"Person","data":{"handle":"ada","name":"Ada","email":"ada@x.io","age":36}}
{"type":"Person","data":{"handle":"bob","name":"Bob"}}
{"type":"Company","data":{"slug":"acme","industry":"software"}}
{"edge":"WorksAt","from":"ada","to":"acme"}
`

// TestLoadValidationErrors: every kind of bad input is refused with a
// message naming the line and what to fix, and changes nothing: no
// commit, no table HEAD moved, not one write request.
func TestLoadValidationErrors(t *testing.T) {
	tests := []struct {
		name string
		mode load.Mode
		data string
		want []string // substrings of the message
		is   error
	}{
		{"syntax", load.Merge, `{"type":"Person","data":{"handle":"c","name":"C"}` + "\n", []string{"line 1", "column 50", "unexpected end of line"}, graph.ErrInvalidInput},
		{"not an object", load.Merge, `["Person"]`, []string{"line 1", "one JSON object"}, graph.ErrInvalidInput},
		{"unknown top-level field", load.Merge, `{"type":"Person","data":{"handle":"c","name":"C"},"extra":1}`, []string{"line 1", `unknown field "extra"`}, graph.ErrInvalidInput},
		{"duplicate top-level field", load.Merge, `{"type":"Person","type":"Company","data":{"slug":"x"}}`, []string{"line 1", `duplicate field "type"`}, graph.ErrInvalidInput},
		{"duplicate data field", load.Merge, "\n" + `{"type":"Person","data":{"handle":"c","name":"C","name":"D"}}`, []string{"line 2", `duplicate field "data.name"`}, graph.ErrInvalidInput},
		{"type and edge", load.Merge, `{"type":"Person","edge":"Knows","data":{}}`, []string{"not both"}, graph.ErrInvalidInput},
		{"unknown type", load.Merge, `{"type":"Persn","data":{}}`, []string{`unknown node type "Persn"`, "Person"}, graph.ErrInvalidInput},
		{"unknown property", load.Merge, `{"type":"Person","data":{"handle":"c","name":"C","nmae":"x"}}`, []string{"line 1", "Person.nmae", "unknown property"}, graph.ErrInvalidInput},
		{"missing required", load.Merge, `{"type":"Person","data":{"handle":"c"}}`, []string{"Person.name", "required"}, graph.ErrInvalidInput},
		{"wrong type", load.Merge, `{"type":"Person","data":{"handle":"c","name":"C","age":"old"}}`, []string{"Person.age"}, graph.ErrInvalidInput},
		{"enum", load.Merge, `{"type":"Company","data":{"slug":"c","industry":"mining"}}`, []string{"Company.industry", "mining"}, graph.ErrInvalidInput},
		{"range", load.Merge, `{"type":"Person","data":{"handle":"c","name":"C","age":200}}`, []string{"Person.age", "@range"}, graph.ErrInvalidInput},
		{"check", load.Merge, `{"type":"Person","data":{"handle":"c","name":"C","email":"nope"}}`, []string{"Person.email", "@check"}, graph.ErrInvalidInput},
		{"reserved field", load.Merge, `{"type":"Person","data":{"handle":"c","name":"C","_rowid":1}}`, []string{"reserved"}, graph.ErrInvalidInput},
		{"edge src in data", load.Merge, `{"edge":"Knows","from":"ada","to":"bob","data":{"src":"x"}}`, []string{"data.src", `"from"`}, graph.ErrInvalidInput},
		{"id mismatch", load.Merge, `{"type":"Person","data":{"id":"zed","handle":"c","name":"C"}}`, []string{"data.id", "@key"}, graph.ErrInvalidInput},
		{"key twice in file", load.Merge, `{"type":"Person","data":{"handle":"c","name":"C"}}` + "\n" + `{"type":"Person","data":{"handle":"c","name":"D"}}`, []string{"line 2", "line 1", "once per file"}, graph.ErrInvalidInput},
		{"unique within file", load.Merge, `{"type":"Person","data":{"handle":"c","name":"C","email":"same@x.io"}}` + "\n" + `{"type":"Person","data":{"handle":"d","name":"D","email":"same@x.io"}}`, []string{"line 2", "@unique violation on Person.email"}, graph.ErrInvalidInput},
		{"unique against branch", load.Merge, `{"type":"Person","data":{"handle":"c","name":"C","email":"ada@x.io"}}`, []string{"line 1", "@unique violation on Person.email", `"ada"`}, graph.ErrInvalidInput},
		{"append existing key", load.Append, `{"type":"Company","data":{"slug":"new"}}` + "\n" + `{"type":"Person","data":{"handle":"bob","name":"Bobby"}}`, []string{"line 2", "key_conflict", `"bob"`, "--mode merge"}, graph.ErrKeyConflict},
		{"edge endpoint missing", load.Merge, `{"edge":"Knows","from":"ada","to":"zed"}`, []string{"line 1", `dst "zed" not found in Person`}, graph.ErrInvalidInput},
		{"card within file", load.Merge, `{"type":"Company","data":{"slug":"b2"}}` + "\n" + `{"edge":"WorksAt","from":"bob","to":"acme"}` + "\n" + `{"edge":"WorksAt","from":"bob","to":"b2"}`, []string{"@card violation on edge WorksAt", `"bob" has 2 edges`}, graph.ErrInvalidInput},
		{"card against branch", load.Merge, `{"type":"Company","data":{"slug":"b2"}}` + "\n" + `{"edge":"WorksAt","from":"ada","to":"b2"}`, []string{"line 2", `"ada" has 2 edges (max 1`}, graph.ErrInvalidInput},
		{"bad mode", load.Mode("upsert"), baseData, []string{"unknown load mode", "merge"}, graph.ErrInvalidInput},
	}
	r := newWRig(t)
	r.load(t, load.Merge, baseData)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := r.state(t, "main")
			r.count.Reset()
			_, err := load.Run(context.Background(), r.g, strings.NewReader(tc.data), load.Options{Mode: tc.mode})
			if err == nil {
				t.Fatal("load succeeded; want an error")
			}
			if !errors.Is(err, tc.is) {
				t.Errorf("error %v is not %v", err, tc.is)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			c := r.count.Snapshot()
			if n := c.Put + c.CondPut + c.Delete; n != 0 {
				t.Errorf("bad input sent %d write requests; want 0", n)
			}
			if after := r.state(t, "main"); after != before {
				t.Errorf("state changed:\nbefore:\n%safter:\n%s", before, after)
			}
		})
	}
}

func TestLoadModes(t *testing.T) {
	ctx := context.Background()
	r := newWRig(t)
	c0 := r.commits(t, "main")
	res := r.load(t, load.Append, baseData+`{"type":"Note","data":{"text":"hello"}}`+"\n")
	if res.Nodes != 4 || res.Edges != 1 || res.Commit == nil {
		t.Fatalf("append result %+v", res)
	}
	if got := r.commits(t, "main"); got != c0+1 {
		t.Fatalf("one file made %d commits", got-c0)
	}
	if got := strings.Join(r.rows(t, "main", "node:Person", "name"), " "); got != "ada|name=Ada bob|name=Bob" {
		t.Errorf("after append: %s", got)
	}
	if got := r.rows(t, "main", "edge:WorksAt", "src", "dst"); len(got) != 1 || !strings.HasSuffix(got[0], "|src=ada|dst=acme") {
		t.Errorf("edges after append: %v", got)
	}

	// merge: upsert by id; rows not in the file are kept.
	r.load(t, load.Merge, `{"type":"Person","data":{"handle":"bob","name":"Robert","age":40}}`+"\n"+`{"type":"Person","data":{"handle":"cy","name":"Cy"}}`)
	if got := strings.Join(r.rows(t, "main", "node:Person", "name", "age"), " "); got != "ada|name=Ada|age=36 bob|name=Robert|age=40 cy|name=Cy|age=(null)" {
		t.Errorf("after merge: %s", got)
	}

	// overwrite replaces each type in the file; other types keep theirs.
	// (WorksAt is replaced too: its edge from ada would outlive ada.)
	if _, err := load.Run(ctx, r.g, strings.NewReader(`{"type":"Person","data":{"handle":"dee","name":"Dee"}}`), load.Options{Mode: load.Overwrite, Replace: []string{"WorksAt"}}); err != nil {
		t.Fatalf("overwrite: %v", err)
	}
	if got := r.rows(t, "main", "edge:WorksAt"); len(got) != 0 {
		t.Errorf("WorksAt after overwrite: %v", got)
	}
	if got := strings.Join(r.rows(t, "main", "node:Person", "name"), " "); got != "dee|name=Dee" {
		t.Errorf("after overwrite: %s", got)
	}
	if got := r.rows(t, "main", "node:Company"); len(got) != 1 {
		t.Errorf("overwrite of Person touched Company: %v", got)
	}
	// Replacing a type with no rows empties it: a zero-fragment version.
	before := r.commits(t, "main")
	res, err := load.Run(ctx, r.g, strings.NewReader(""), load.Options{Mode: load.Overwrite, Replace: []string{"Note"}})
	if err != nil || res.Commit == nil {
		t.Fatalf("empty overwrite: %+v %v", res, err)
	}
	if got := r.rows(t, "main", "node:Note"); len(got) != 0 {
		t.Errorf("Note after empty overwrite: %v", got)
	}
	snap, _ := r.g.Snapshot(ctx, "main")
	ds, err := snap.OpenTable(ctx, "node:Note")
	if err != nil {
		t.Fatal(err)
	}
	if m := ds.Manifest(); len(m.Fragments) != 0 || m.Transaction.Operation != table.OpOverwrite {
		t.Errorf("empty overwrite: %d fragments, operation %s", len(m.Fragments), m.Transaction.Operation)
	}
	if got := r.commits(t, "main"); got != before+1 {
		t.Errorf("empty overwrite made %d commits", got-before)
	}
	// An empty merge changes nothing and publishes nothing.
	res, err = load.Run(ctx, r.g, strings.NewReader("\n\n"), load.Options{Mode: load.Merge})
	if err != nil || res.Commit != nil {
		t.Errorf("empty merge: %+v %v", res, err)
	}
}

// TestLoadOnBranch loads into a named branch: main is untouched and only
// the loaded types fork.
func TestLoadOnBranch(t *testing.T) {
	ctx := context.Background()
	r := newWRig(t)
	r.load(t, load.Merge, baseData)
	if _, err := r.g.CreateBranch(ctx, "dev", "main"); err != nil {
		t.Fatal(err)
	}
	mainBefore := r.state(t, "main")
	res, err := load.Run(ctx, r.g, strings.NewReader(`{"type":"Note","data":{"text":"on dev"}}`), load.Options{Mode: load.Append, Branch: "dev"})
	if err != nil || res.Commit == nil || res.Commit.Branch != "dev" {
		t.Fatalf("load on dev: %+v %v", res, err)
	}
	if got := r.state(t, "main"); got != mainBefore {
		t.Errorf("main changed by a load on dev:\n%s\n%s", mainBefore, got)
	}
	if got := r.rows(t, "dev", "node:Note", "text"); len(got) != 1 || !strings.HasSuffix(got[0], "|text=on dev") {
		t.Errorf("dev notes: %v", got)
	}
	snap, _ := r.g.Snapshot(ctx, "dev")
	for _, p := range snap.Tables() {
		forked := p.Branch != table.MainBranch
		if forked != (p.Key == "node:Note") {
			t.Errorf("table %s on table branch %q after a load of Note only", p.Key, p.Branch)
		}
	}
}

func TestParseStrictJSON(t *testing.T) {
	r := newWRig(t)
	tests := []struct {
		name, line, want string
	}{
		{"nested duplicate", `{"type":"Person","data":{"handle":"a","name":"A","joined":"2024-01-01"},"data":{}}`, `duplicate field "data"`},
		{"trailing garbage", `{"type":"Person","data":{"handle":"a","name":"A"}} x`, "after the value"},
		{"bad escape", `{"type":"Person","data":{"handle":"a\q","name":"A"}}`, "invalid escape"},
		{"bad number", `{"type":"Person","data":{"handle":"a","name":"A","age":01}}`, "expected ',' or '}'"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load.Run(context.Background(), r.g, strings.NewReader(tc.line), load.Options{Mode: load.Merge})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "line 1") {
				t.Errorf("got %v; want it to mention %q and line 1", err, tc.want)
			}
		})
	}
	// Escapes and 64-bit-safe numbers decode exactly.
	r.load(t, load.Merge, `{"type":"Person","data":{"handle":"\u00e9t\u00e9 \ud83d\ude00","name":"A\"B","age":7}}`)
	if got := r.rows(t, "main", "node:Person", "name", "age"); len(got) != 1 || got[0] != "été 😀|name=A\"B|age=7" {
		t.Errorf("decoded %v", got)
	}
}

// TestLoadLosesRace: a commit of another process lands on the branch after
// the load prepared and before it commits. append and merge prepare again and land; an
// overwrite (strict) returns a non-retryable ReadSetChanged and writes
// nothing.
func TestLoadLosesRace(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		mode   load.Mode
		strict bool
	}{{load.Append, false}, {load.Merge, false}, {load.Overwrite, true}} {
		t.Run(string(tc.mode), func(t *testing.T) {
			r := newWRig(t)
			r.load(t, load.Merge, baseData)
			// The racer is another process: a write of this one queues
			// behind the load (graph/queue.go) instead of racing it.
			other, err := graph.Open(ctx, r.count, graph.OpenOptions{Process: graph.NewProcess(), Actor: "racer"})
			if err != nil {
				t.Fatal(err)
			}
			raced := 0
			opts := load.Options{Mode: tc.mode, Progress: func(phase string, _ int64) {
				if phase != "write" || raced > 0 {
					return
				}
				raced++
				if _, err := mutate.Query(ctx, other, fmt.Sprintf(`mutation m() { insert Company { slug: "race%d" } }`, raced), "", mutate.Options{}); err != nil {
					t.Error(err)
				}
			}}
			c0 := r.commits(t, "main")
			res, err := load.Run(ctx, r.g, strings.NewReader(`{"type":"Note","data":{"text":"n"}}`), opts)
			if tc.strict {
				var rs *graph.ReadSetChanged
				if !errors.As(err, &rs) || rs.Retryable {
					t.Fatalf("overwrite after a race: %v", err)
				}
				if got := r.commits(t, "main") - c0; got != 1 {
					t.Errorf("%d commits; want only the racer's", got)
				}
				if n := len(r.rows(t, "main", "node:Note")); n != 0 {
					t.Errorf("the failed overwrite left %d notes", n)
				}
				return
			}
			if err != nil || res.Commit == nil {
				t.Fatalf("%s after a race: %+v %v", tc.mode, res, err)
			}
			if got := r.commits(t, "main") - c0; got != 2 {
				t.Errorf("%d commits, want 2 (racer + load)", got)
			}
			if n := len(r.rows(t, "main", "node:Note")); n != 1 {
				t.Errorf("%d notes, want 1", n)
			}
		})
	}
}
