package gq

import (
	"reflect"
	"testing"
)

// TestParseTraversals checks the AST of every traversal form.
func TestParseTraversals(t *testing.T) {
	f, err := Parse(`query q($a: String?, $b: [I64], $c: Vector(4)?, $d: DateTime) {
  match {
    $x knows $y
    $x knows{2,5} $y
    $x <knows> $y
    $x <knows>{1,2} $y
    $x $e:worksAt $z
    $x contains $y
  }
  return { $x }
}`)
	if err != nil {
		t.Fatal(err)
	}
	q := f.Queries[0]
	var types []string
	for _, p := range q.Params {
		types = append(types, p.Type.String())
	}
	if want := []string{"String?", "[I64]", "Vector(4)?", "DateTime"}; !reflect.DeepEqual(types, want) {
		t.Errorf("param types %v, want %v", types, want)
	}
	type shape struct {
		edge, ev   string
		undirected bool
		hops       bool
		min, max   int
	}
	want := []shape{
		{"knows", "", false, false, 0, 0},
		{"knows", "", false, true, 2, 5},
		{"knows", "", true, false, 0, 0},
		{"knows", "", true, true, 1, 2},
		{"worksAt", "e", false, false, 0, 0},
	}
	for i, w := range want {
		tc, ok := q.Read.Match[i].(*TraversalClause)
		if !ok {
			t.Fatalf("clause %d is %T", i, q.Read.Match[i])
		}
		got := shape{tc.Edge, tc.EdgeVar, tc.Undirected, tc.HasHops, tc.Min, tc.Max}
		if got != w {
			t.Errorf("clause %d: got %+v want %+v", i, got, w)
		}
	}
	// `$x contains $y` is a filter: contains is an operator, never an edge.
	if fc, ok := q.Read.Match[5].(*FilterClause); !ok || fc.Op != OpContains {
		t.Errorf("contains clause parsed as %T", q.Read.Match[5])
	}
}

func TestParseMutations(t *testing.T) {
	f, err := Parse(`mutation m($n: String) {
  insert Person { handle: "a", name: $n, joined: now() }
  update Person set { age: 3 } where name starts_with "A"
}
query d() { delete Knows where from != "a" }`)
	if err != nil {
		t.Fatal(err)
	}
	m := f.Queries[0]
	if m.Keyword != "mutation" || len(m.Mutation) != 2 || m.Mutation[0].Kind != StmtInsert || m.Mutation[1].Kind != StmtUpdate {
		t.Fatalf("statements %+v", m.Mutation)
	}
	if w := m.Mutation[1].Where; w.Left.Text != "name" || w.Op != OpStartsWith || w.Right.Text != "A" {
		t.Errorf("where %+v", w)
	}
	if v := m.Mutation[0].Set[2].Value; v.Kind != ExprNow {
		t.Errorf("now() parsed as %+v", v)
	}
	d := f.Queries[1]
	if d.Keyword != "query" || d.Mutation[0].Kind != StmtDelete || d.Mutation[0].Where.Op != OpNe {
		t.Errorf("delete %+v", d.Mutation[0])
	}
}
