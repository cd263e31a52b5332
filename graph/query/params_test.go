package query

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/mutate"
	"github.com/omnigraph-go/omnigraph/lang/gq"
)

// paramSchema has float properties of both widths, an enum and a list of
// floats, for the rule that a parameter compared with a property takes the
// property's type exactly as a literal does.
const paramSchema = `
node Item {
  sku: String @key
  w32: F32?
  w64: F64?
  l32: [F32]?
  state: enum(draft, gone, live)?
}
`

// paramFixture: every answer below is worked out from these rows. 1.2 is
// not exact in binary, so float32(1.2) widened to float64 is 1.2000000477,
// greater than float64(1.2): comparing across widths without converting
// the parameter gets = and > wrong.
const paramFixture = `
{"type":"Item","data":{"sku":"a","w32":1.2,"w64":1.2,"l32":[1.2,2.5],"state":"live"}}
{"type":"Item","data":{"sku":"b","w32":2.5,"w64":2.5,"l32":[0.1],"state":"draft"}}
{"type":"Item","data":{"sku":"c","w32":0.1,"w64":0.1,"state":"gone"}}
{"type":"Item","data":{"sku":"d"}}
`

func newParamGraph(t *testing.T) *graph.Graph {
	t.Helper()
	g, err := graph.Init(context.Background(), mem.New(), paramSchema, graph.InitOptions{Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	qAppend(t, g, "main", paramFixture)
	return g
}

// TestParamTakesPropertyFloatWidth pins: a number parameter compared with a
// float property is converted to the property's width as a literal is, in
// inline matches, filters (both operand orders), list membership, and point
// lookups, with the same answers a literal gives.
func TestParamTakesPropertyFloatWidth(t *testing.T) {
	ctx := context.Background()
	g := newParamGraph(t)
	tests := []struct {
		name   string
		src    string
		params map[string]any
		want   string
	}{
		{"F32 = F64 param", `query q($x: F64) { match { $i: Item  $i.w32 = $x } return { $i.sku } }`, map[string]any{"x": 1.2}, "a"},
		{"F32 = F64 literal (reference)", `query q() { match { $i: Item  $i.w32 = 1.2 } return { $i.sku } }`, nil, "a"},
		{"F32 > F64 param is not the same value", `query q($x: F64) { match { $i: Item  $i.w32 > $x } return { $i.sku } }`, map[string]any{"x": 1.2}, "b"},
		{"F32 >= F64 param", `query q($x: F64) { match { $i: Item  $i.w32 >= $x } return { $i.sku } }`, map[string]any{"x": 1.2}, "a | b"},
		{"F32 < F64 param", `query q($x: F64) { match { $i: Item  $i.w32 < $x } return { $i.sku } }`, map[string]any{"x": 1.2}, "c"},
		{"F32 != F64 param", `query q($x: F64) { match { $i: Item  $i.w32 != $x } return { $i.sku } }`, map[string]any{"x": 0.1}, "a | b"},
		{"param on the left", `query q($x: F64) { match { $i: Item  $x < $i.w32 } return { $i.sku } }`, map[string]any{"x": 1.2}, "b"},
		{"inline match", `query q($x: F64) { match { $i: Item { w32: $x } } return { $i.sku } }`, map[string]any{"x": 0.1}, "c"},
		{"F64 = F32 param reads as its decimal", `query q($x: F32) { match { $i: Item  $i.w64 = $x } return { $i.sku } }`, map[string]any{"x": 1.2}, "a"},
		{"F64 > F32 param", `query q($x: F32) { match { $i: Item  $i.w64 > $x } return { $i.sku } }`, map[string]any{"x": 1.2}, "b"},
		{"integer param against F32", `query q($x: I64) { match { $i: Item  $i.w32 < $x } return { $i.sku } }`, map[string]any{"x": 2}, "a | c"},
		{"list property contains F64 param", `query q($x: F64) { match { $i: Item  $i.l32 contains $x } return { $i.sku } }`, map[string]any{"x": 0.1}, "b"},
		{"list param contains F32 property", `query q($xs: [F64]) { match { $i: Item  $xs contains $i.w32 } return { $i.sku } }`, map[string]any{"xs": []any{1.2, 0.1}}, "a | c"},
		{"one param, two widths", `query q($x: F64) { match { $i: Item  $i.w32 = $x  $i.w64 = $x } return { $i.sku } }`, map[string]any{"x": 1.2}, "a"},
		{"Go float64 value", `query q($x: F64) { match { $i: Item  $i.w32 = $x } return { $i.sku } }`, map[string]any{"x": float64(2.5)}, "b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Head(ctx, g, "main", tc.src, "", tc.params)
			if err != nil {
				t.Fatalf("Query: %v", err)
			}
			if got := rowsText(res); got != tc.want {
				t.Errorf("rows:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestMutationWhereParamTakesPropertyFloatWidth pins the same rule for
// update and delete where clauses (staged rows and the pushed-down scan of
// committed rows).
func TestMutationWhereParamTakesPropertyFloatWidth(t *testing.T) {
	ctx := context.Background()
	g := newParamGraph(t)
	res, err := mutate.Query(ctx, g, `mutation m($x: F64) { update Item set { state: "gone" } where w32 = $x }`, "", mutate.Options{Params: map[string]any{"x": 1.2}})
	if err != nil {
		t.Fatal(err)
	}
	if res.AffectedNodes != 1 {
		t.Fatalf("update where w32 = 1.2 affected %d nodes, want 1 (a)", res.AffectedNodes)
	}
	res, err = mutate.Query(ctx, g, `mutation m($x: F64) { delete Item where w32 > $x }`, "", mutate.Options{Params: map[string]any{"x": 1.2}})
	if err != nil {
		t.Fatal(err)
	}
	if res.AffectedNodes != 1 {
		t.Fatalf("delete where w32 > 1.2 affected %d nodes, want 1 (b)", res.AffectedNodes)
	}
	// Read-your-writes inside one mutation: the insert is staged, the update
	// matches it through the staged rows.
	res, err = mutate.Query(ctx, g, `mutation m($x: F64) {
  insert Item { sku: "e", w32: 3.3 }
  update Item set { state: "live" } where w32 = $x
}`, "", mutate.Options{Params: map[string]any{"x": 3.3}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Head(ctx, g, "main", `query q() { match { $i: Item } return { $i.sku, $i.state } }`, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := "a,gone | c,gone | d,null | e,live"; rowsText(got) != want {
		t.Errorf("after the mutations:\n got %q\nwant %q", rowsText(got), want)
	}
}

// TestEnumParamRefusedBeforeIO pins: a String parameter compared with (or
// stored into) an enum property must be one of the enum's values; an
// unknown one is refused when binding, with the literal's code (GQ031) and
// the query's name, and nothing is read or written.
func TestEnumParamRefusedBeforeIO(t *testing.T) {
	ctx := context.Background()
	g := newParamGraph(t)
	before := mustHead(t, g)
	reads := []struct{ name, src string }{
		{"filter", `query q($s: String) { match { $i: Item  $i.state = $s } return { $i.sku } }`},
		{"inline", `query q($s: String) { match { $i: Item { state: $s } } return { $i.sku } }`},
		{"ordering", `query q($s: String) { match { $i: Item  $i.state < $s } return { $i.sku } }`},
		{"list param", `query q($s: [String]) { match { $i: Item  $s contains $i.state } return { $i.sku } }`},
	}
	for _, tc := range reads {
		t.Run("read "+tc.name, func(t *testing.T) {
			p := map[string]any{"s": "publshed"}
			if tc.name == "list param" {
				p["s"] = []any{"live", "publshed"}
			}
			_, err := Head(ctx, g, "main", tc.src, "", p)
			assertQueryError(t, err, gq.CodeBadValue, "q", `"publshed" is not one of draft, gone, live`)
		})
	}
	// A known value still runs (and compares as before).
	res, err := Head(ctx, g, "main", reads[0].src, "", map[string]any{"s": "live"})
	if err != nil || rowsText(res) != "a" {
		t.Fatalf("known value: %v %q", err, rowsText(res))
	}
	muts := []struct{ name, src string }{
		{"delete", `mutation m($s: String) { delete Item where state = $s }`},
		{"update where", `mutation m($s: String) { update Item set { w32: 1 } where state = $s }`},
		{"update set", `mutation m($s: String) { update Item set { state: $s } where sku = "a" }`},
		{"insert", `mutation m($s: String) { insert Item { sku: "z", state: $s } }`},
	}
	for _, tc := range muts {
		t.Run("mutate "+tc.name, func(t *testing.T) {
			_, err := mutate.Query(ctx, g, tc.src, "", mutate.Options{Params: map[string]any{"s": "publshed"}})
			assertQueryError(t, err, gq.CodeBadValue, "m", `"publshed" is not one of draft, gone, live`)
		})
	}
	if after := mustHead(t, g); after != before {
		t.Errorf("a refused mutation moved the head: %s -> %s", before, after)
	}
}

func mustHead(t *testing.T, g *graph.Graph) string {
	t.Helper()
	s, err := g.Snapshot(context.Background(), "main")
	if err != nil {
		t.Fatal(err)
	}
	return s.CommitID()
}

// assertQueryError checks code, the query name in both the field and the
// text (`in query "x"`), and a part of the message.
func assertQueryError(t *testing.T, err error, code gq.Code, query, msg string) {
	t.Helper()
	var e *gq.Error
	if !errors.As(err, &e) || !errors.Is(err, gq.ErrInvalidQuery) {
		t.Fatalf("want a query error %s, got %T %v", code, err, err)
	}
	if e.Code != code || e.Query != query || !strings.Contains(err.Error(), `in query "`+query+`"`) || !strings.Contains(err.Error(), msg) {
		t.Errorf("got %v\nwant %s in query %q with %q", err, code, query, msg)
	}
}

// TestRulesApplyToTheQueryRun pins: type checks and the D₂ rule apply to
// the query being run, so a file whose other queries are wrong still runs
// its valid ones, through Snapshot.Query and Graph.MutateQuery; and every
// error names the query it is about.
func TestRulesApplyToTheQueryRun(t *testing.T) {
	ctx := context.Background()
	g := newParamGraph(t)
	const file = `
query live() {
  match { $i: Item { state: "live" } }
  return { $i.sku }
}
query typo() {
  match { $i: Itme }
  return { $i.sku }
}
mutation mixed() {
  insert Item { sku: "x" }
  delete Item where sku = "d"
}
mutation add($s: String) {
  insert Item { sku: $s }
}
`
	res, err := Head(ctx, g, "main", file, "live", nil)
	if err != nil || rowsText(res) != "a" {
		t.Fatalf("live beside a type error and a mixed mutation: %v %q", err, rowsText(res))
	}
	mres, err := mutate.Query(ctx, g, file, "add", mutate.Options{Params: map[string]any{"s": "n"}})
	if err != nil || mres.AffectedNodes != 1 {
		t.Fatalf("add beside a mixed mutation: %v %+v", err, mres)
	}
	_, err = Head(ctx, g, "main", file, "typo", nil)
	assertQueryError(t, err, gq.CodeUnknownType, "typo", `in query "typo" at 7:15: unknown node type "Itme"`)
	_, err = mutate.Query(ctx, g, file, "mixed", mutate.Options{})
	assertQueryError(t, err, gq.CodeMixedMutation, "mixed", `in query "mixed" at 12:3: this delete`)
	_, err = Head(ctx, g, "main", file, "mixed", nil)
	if !errors.Is(err, graph.ErrNotARead) {
		t.Errorf("a mutation on the read path: %v", err)
	}
	_, err = mutate.Query(ctx, g, file, "add", mutate.Options{})
	assertQueryError(t, err, gq.CodeMissingParam, "add", "parameter $s (String) is required")
	_, err = Head(ctx, g, "main", `query broken() { match { $i: Item  $i.sku ~ 1 } return { $i } }`, "", nil)
	assertQueryError(t, err, gq.CodeSyntax, "broken", `in query "broken" at 1:43: unexpected character`)
	// A runtime input error of a mutation names the query and statement.
	_, err = mutate.Query(ctx, g, `mutation dup() {
  insert Item { sku: "q", w32: 1 }
  update Item set { w32: 1e39 } where sku = "q"
}`, "", mutate.Options{})
	if err == nil || !strings.Contains(err.Error(), `in query "dup"`) {
		t.Errorf("out-of-range update: %v", err)
	}
}
