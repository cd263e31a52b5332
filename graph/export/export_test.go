package export_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"os"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/export"
	"github.com/omnigraph-go/omnigraph/graph/load"
	"github.com/omnigraph-go/omnigraph/graph/query"
)

func initLoad(t *testing.T, schema string, data []byte, mode load.Mode) *graph.Graph {
	t.Helper()
	ctx := context.Background()
	g, err := graph.Init(ctx, mem.New(), schema, graph.InitOptions{Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	if _, err := load.Run(ctx, g, bytes.NewReader(data), load.Options{Branch: "main", Mode: mode}); err != nil {
		t.Fatalf("load: %v", err)
	}
	return g
}

func exportOf(t *testing.T, g *graph.Graph, opts export.Options) ([]byte, *export.Result) {
	t.Helper()
	ctx := context.Background()
	s, err := g.Snapshot(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	res, err := export.Run(ctx, s, &buf, opts)
	if err != nil {
		t.Fatalf("export: %v", err)
	}
	return buf.Bytes(), res
}

// answers runs each query on main and renders the rows.
func answers(t *testing.T, g *graph.Graph, queries []string, params map[string]any) []string {
	t.Helper()
	var out []string
	for _, q := range queries {
		r, err := query.Head(context.Background(), g, "main", q, "", params)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		out = append(out, fmt.Sprintf("%v", r.Rows))
	}
	return out
}

// roundTrip is the rebuild path: init a fresh graph with the exported
// schema and load the export with mode; it returns the new graph after
// checking that exporting it again gives the same bytes.
func roundTrip(t *testing.T, g *graph.Graph, mode load.Mode) (*graph.Graph, []byte) {
	t.Helper()
	first, res := exportOf(t, g, export.Options{})
	g2 := initLoad(t, res.Schema, first, mode)
	second, res2 := exportOf(t, g2, export.Options{})
	if !bytes.Equal(first, second) {
		t.Fatalf("the rebuilt graph exports differently:\n--- first\n%s\n--- second\n%s", first, second)
	}
	if res2.SchemaIdentity != res.SchemaIdentity {
		t.Fatalf("schema identity %s after rebuild, want %s", res2.SchemaIdentity, res.SchemaIdentity)
	}
	return g2, first
}

// TestExportRoundTripQuickstart: the rule "init with the exported schema +
// load of the export reproduces every query answer", on the quickstart
// graph (examples/social.pg + social.jsonl), with both documented load
// modes, and the envelope order: nodes then edges, by type then id.
func TestExportRoundTripQuickstart(t *testing.T) {
	schema, err := os.ReadFile("../../examples/social.pg")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("../../examples/social.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	g := initLoad(t, string(schema), data, load.Append)
	queries := []string{
		`query q() { match { $p: Person } return { $p.handle, $p.name, $p.age, $p.city, $p.email, $p.joined, $p.interests } order { $p.handle } }`,
		`query q() { match { $c: Company } return { $c.slug, $c.name, $c.industry, $c.founded } order { $c.slug } }`,
		`query q() { match { $p: Post } return { $p.text, $p.visibility, $p.created, $p.embedding } order { $p.created, $p.text } }`,
		`query q() { match { $a: Person  $a knows $b } return { $a.handle as a, $b.handle as b } order { a, b } }`,
		`query q() { match { $p: Person  $p $w:worksAt $c } return { $p.handle, $c.slug, $w.title, $w.since } order { $p.handle } }`,
		`query q() { match { $p: Person  $p wrote $x  $x about $t } return { $p.handle, $x.text, $t.slug } order { $p.handle, $x.text, $t.slug } }`,
		`query q() { match { $p: Person  $p follows $f } return { count($f) as n } }`,
		`query headcount() { match { $p: Person  $p worksAt $c } return { $c.name as company, count($p) as staff, avg($p.age) as mean_age } order { staff desc, company } limit 5 }`,
	}
	want := answers(t, g, queries, nil)
	for _, mode := range []load.Mode{load.Overwrite, load.Append} {
		g2, out := roundTrip(t, g, mode)
		if got := answers(t, g2, queries, nil); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("mode %s: answers differ after the rebuild:\n got %v\nwant %v", mode, got, want)
		}
		// Order: every node line before every edge line; types by name;
		// ids ascending within a type; every line carries data.id.
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) != strings.Count(strings.TrimSpace(string(data)), "\n")+1 {
			t.Fatalf("export has %d lines, the quickstart file %d", len(lines), strings.Count(string(data), "\n"))
		}
		prevKind, prevType, prevID := "", "", ""
		for i, l := range lines {
			var env struct {
				Type, Edge string
				Data       map[string]any
			}
			if err := json.Unmarshal([]byte(l), &env); err != nil {
				t.Fatal(err)
			}
			kind, typ := "node", env.Type
			if env.Edge != "" {
				kind, typ = "edge", env.Edge
			}
			id, _ := env.Data["id"].(string)
			if id == "" {
				t.Fatalf("line %d has no data.id: %s", i+1, l)
			}
			switch {
			case kind == "node" && prevKind == "edge":
				t.Fatalf("line %d: a node after an edge", i+1)
			case kind == prevKind && typ < prevType:
				t.Fatalf("line %d: type %s after %s", i+1, typ, prevType)
			case kind == prevKind && typ == prevType && id <= prevID:
				t.Fatalf("line %d: id %s after %s", i+1, id, prevID)
			}
			prevKind, prevType, prevID = kind, typ, id
		}
	}
}

const allTypesSchema = `
node Thing {
  k: String @key
  s: String?
  b: Bool?
  i32: I32?
  i64: I64?
  u32: U32?
  u64: U64?
  f32: F32?
  f64: F64?
  d: Date?
  dt: DateTime?
  v: Vector(3)?
  blob: Blob?
  tags: [String]?
  nums: [I64]?
  days: [Date]?
  color: enum(red, green, blue)?
  must: I32
}

node Loose {
  note: String?
  at: DateTime?
}

edge Link: Thing -> Thing {
  w: F64?
  at: DateTime?
  label: String?
}

edge Pins: Loose -> Thing
`

// allTypesData is a seeded graph with every property kind: extremes of the
// integer kinds, floats that need every digit, unicode and JSON-special
// text, pre-1970 dates, sub-second times, empty and binary blobs, empty
// lists, unkeyed nodes, parallel edges, and a null in every nullable slot.
func allTypesData(n int) []byte {
	rng := rand.New(rand.NewSource(16))
	var b strings.Builder
	line := func(v any) {
		j, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	texts := []string{"plain", "quote \" back \\ slash", "<html>&amp;", "line\nbreak\ttab", "ünïcødé ✓ 𝄞", ""}
	for i := 0; i < n; i++ {
		d := map[string]any{"k": fmt.Sprintf("t%03d", i), "must": int32(i - n/2)}
		// Every row has a vector: a null Vector between non-null ones cannot
		// be stored today (a table-layer limit, reported separately), which
		// is not what this test is about.
		d["v"] = []float32{rng.Float32(), -rng.Float32() * 1e-7, float32(i)}
		if i%7 != 3 { // row 3, 10, ... keep every nullable property null
			blob := make([]byte, rng.Intn(40))
			rng.Read(blob)
			d["s"] = texts[i%len(texts)]
			d["b"] = i%2 == 0
			d["i32"] = []int64{math.MinInt32, math.MaxInt32, 0, -1}[i%4]
			d["i64"] = []string{"-9223372036854775808", "9223372036854775807", "1234567890123456789", "0"}[i%4]
			d["u32"] = []uint64{0, math.MaxUint32, 7}[i%3]
			d["u64"] = []string{"18446744073709551615", "0", "9007199254740993"}[i%3]
			d["f32"] = rng.Float32()*1e6 - 5e5
			d["f64"] = []float64{0.1 + 0.2, math.MaxFloat64, -math.SmallestNonzeroFloat64, rng.NormFloat64()}[i%4]
			d["d"] = []string{"1969-07-20", "2024-02-29", "0001-01-01", "9999-12-31"}[i%4]
			d["dt"] = []string{"1969-12-31T23:59:59.999999Z", "2024-05-01T12:00:00.123456+02:00", "2000-01-01T00:00:00Z"}[i%3]
			d["blob"] = "base64:" + base64.StdEncoding.EncodeToString(blob)
			d["tags"] = [][]string{{}, {"a", "b\"c"}, {"ü"}}[i%3]
			d["nums"] = []any{int64(i), "-9223372036854775808"}
			d["days"] = []string{"2020-01-01", "1900-02-28"}
			d["color"] = []string{"red", "green", "blue"}[i%3]
		}
		line(map[string]any{"type": "Thing", "data": d})
	}
	for i := 0; i < n/2; i++ {
		d := map[string]any{"id": fmt.Sprintf("L%03d", i)}
		if i%3 != 0 {
			d["note"] = texts[i%len(texts)]
			d["at"] = "2030-06-15T01:02:03.5Z"
		}
		line(map[string]any{"type": "Loose", "data": d})
		line(map[string]any{"edge": "Pins", "from": d["id"], "to": fmt.Sprintf("t%03d", (i*5)%n)})
	}
	for i := 0; i < n; i++ {
		e := map[string]any{}
		if i%4 != 0 {
			e = map[string]any{"w": rng.NormFloat64(), "at": "2025-01-01T00:00:00.000001Z", "label": texts[i%len(texts)]}
		}
		line(map[string]any{"edge": "Link", "from": fmt.Sprintf("t%03d", i), "to": fmt.Sprintf("t%03d", (i*7+1)%n), "data": e})
		if i%5 == 0 { // a parallel edge
			line(map[string]any{"edge": "Link", "from": fmt.Sprintf("t%03d", i), "to": fmt.Sprintf("t%03d", (i*7+1)%n)})
		}
	}
	return []byte(b.String())
}

// TestExportRoundTripEveryPropertyType: the rebuild path keeps every value
// of every property kind (Blob, Vector, lists, Date/DateTime, 64-bit
// integers, floats, enums, null), the ids of unkeyed nodes and edges, and
// parallel edges: the rebuilt graph answers every query as the original
// and exports to the same bytes (queries cannot read Blob bytes, so the
// byte-identical re-export is what pins Blob values). ChunkRows is small so the streamed
// chunking is exercised.
func TestExportRoundTripEveryPropertyType(t *testing.T) {
	old := export.ChunkRows
	export.ChunkRows = 7
	t.Cleanup(func() { export.ChunkRows = old })
	g := initLoad(t, allTypesSchema, allTypesData(60), load.Append)
	queries := []string{
		`query q() { match { $t: Thing } return { $t.k, $t.s, $t.b, $t.i32, $t.i64, $t.u32, $t.u64, $t.f32, $t.f64 } order { $t.k } }`,
		`query q() { match { $t: Thing } return { $t.k, $t.d, $t.dt, $t.v, $t.tags, $t.nums, $t.days, $t.color, $t.must } order { $t.k } }`,
		`query q() { match { $l: Loose } return { $l.note, $l.at } order { $l.note, $l.at } }`,
		`query q() { match { $a: Thing  $a $e:link $b } return { $a.k as a, $b.k as b, $e.w, $e.at, $e.label } order { a, b, $e.w } }`,
		`query q() { match { $l: Loose  $l pins $t } return { $l.note, $t.k } order { $t.k } }`,
		`query q() { match { $t: Thing  $t.color = "red" } return { count($t) as n, sum($t.must) as m } }`,
	}
	want := answers(t, g, queries, nil)
	g2, out := roundTrip(t, g, load.Overwrite)
	if got := answers(t, g2, queries, nil); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("answers differ after the rebuild:\n got %v\nwant %v", got, want)
	}
	// A null is written as null, so "null" appears for the all-null rows.
	if !bytes.Contains(out, []byte(`"blob":null`)) || !bytes.Contains(out, []byte(`"u64":18446744073709551615`)) {
		t.Fatalf("export lacks an explicit null or a full-precision U64:\n%s", out[:min(len(out), 2000)])
	}
}

// TestExportTypesAndUnknownType: --type restricts the export; an unknown
// type is refused before anything is written.
func TestExportTypesAndUnknownType(t *testing.T) {
	g := initLoad(t, allTypesSchema, allTypesData(10), load.Append)
	out, res := exportOf(t, g, export.Options{Types: []string{"Loose", "Pins"}})
	if res.Nodes != 5 || res.Edges != 5 || res.Types["Thing"] != 0 {
		t.Fatalf("result %+v, want 5 Loose nodes and 5 Pins edges only", res)
	}
	if bytes.Contains(out, []byte(`"Thing"`)) || bytes.Contains(out, []byte(`"Link"`)) {
		t.Fatalf("export of Loose,Pins holds other types:\n%s", out)
	}
	s, _ := g.Snapshot(context.Background(), "main")
	var buf bytes.Buffer
	if _, err := export.Run(context.Background(), s, &buf, export.Options{Types: []string{"Nope"}}); err == nil || buf.Len() != 0 {
		t.Fatalf("unknown type: err %v, wrote %d bytes", err, buf.Len())
	}
}
