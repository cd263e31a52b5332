package gq

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/table"
)

func mustPlan(t *testing.T, src, name string) *Plan {
	t.Helper()
	prog, err := Compile(src, socialCatalog(t))
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	p, err := prog.Plan(name)
	if err != nil {
		t.Fatalf("plan %q: %v", name, err)
	}
	return p
}

// TestPlans pins the plan of every clause form: step order, pushdown, key
// lookups, inferred directions, hop bounds, anti-joins, columns, grouping,
// the total order and limit.
func TestPlans(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string
	}{
		{"binding with key lookup", `query q($h: String) { match { $p: Person { handle: $h, age: 30 } } return { $p.name } }`, `
query q($h: String)
read
  scan $p Person key($h) where $p.handle = $h and $p.age = 30
  column p.name String = $p.name
  order id($p)
`},
		{"pushdown flips constant-left comparisons", `query q() { match { $p: Person 30 < $p.age $p.name starts_with "A" } return { $p.name } }`, `
query q()
read
  scan $p Person where $p.age > 30 and $p.name starts_with "A"
  column p.name String = $p.name
  order id($p)
`},
		{"direction inferred from the bound target", `query q() { match { $c: Company { slug: "acme" } $p worksAt $c } return { $p.name } }`, `
query q()
read
  scan $c Company key("acme") where $c.slug = "acme"
  expand $c in WorksAt -> $p Person
  column p.name String = $p.name
  order id($c), id($p)
`},
		{"direction inferred from the written target type", `query q() { match { $c worksAt $p  $p: Person { handle: "ada" } } return { $c.name } }`, `
query q()
read
  scan $p Person key("ada") where $p.handle = "ada"
  expand $p out WorksAt -> $c Company
  column c.name String = $c.name
  order id($c), id($p)
`},
		{"unbound traversal scans the source side", `query q() { match { $a knows $b } return { $a.name, $b.name as other } }`, `
query q()
read
  scan $a Person
  expand $a out Knows -> $b Person
  column a.name String = $a.name
  column other String = $b.name
  order id($a), id($b)
`},
		{"multi-hop and filter after expand", `query q() { match { $a: Person { handle: "ada" } $a knows{1,3} $b $b.city = "Oslo" } return { $b.handle } }`, `
query q()
read
  scan $a Person key("ada") where $a.handle = "ada"
  expand $a out Knows{1,3} -> $b Person
  filter $b.city = "Oslo"
  column b.handle String = $b.handle
  order id($a), id($b)
`},
		{"undirected", `query q() { match { $a: Person $a <follows>{1,2} $b } return { $b.handle } }`, `
query q()
read
  scan $a Person
  expand $a both Follows{1,2} -> $b Person
  column b.handle String = $b.handle
  order id($a), id($b)
`},
		{"edge binding and ordering by an edge property", `query q() { match { $p: Person $p $w:worksAt $c $w.title contains "eng" } return { $c.slug, $w.title } order { $w.since desc } }`, `
query q()
read
  scan $p Person
  expand $p out $w:WorksAt -> $c Company
  filter $w.title contains "eng"
  column c.slug String = $c.slug
  column w.title String? = $w.title
  order $w.since desc, id($p), id($c), id($w)
`},
		{"closing a triangle checks a bound target", `query q() { match { $a: Person $a knows $b $b knows $c $c knows $a } return { $a.handle } }`, `
query q()
read
  scan $a Person
  expand $a out Knows -> $b Person
  expand $b out Knows -> $c Person
  expand $c out Knows -> $a Person (bound)
  column a.handle String = $a.handle
  order id($a), id($b), id($c)
`},
		{"disconnected match is a cross product", `query q() { match { $p: Person { handle: "a" } $c: Company { slug: "b" } } return { $p.name, $c.name as co } }`, `
query q()
read
  scan $p Person key("a") where $p.handle = "a"
  scan $c Company key("b") where $c.slug = "b"
  column p.name String = $p.name
  column co String = $c.name
  order id($p), id($c)
`},
		{"not with its own filter", `query q() { match { $p: Person not { $p worksAt $c $c.industry = "finance" } } return { $p.handle } }`, `
query q()
read
  scan $p Person
  antijoin on $p
    expand $p out WorksAt -> $c Company
    filter $c.industry = "finance"
  column p.handle String = $p.handle
  order id($p)
`},
		{"variable comparison", `query q() { match { $a: Person $a knows $b $b knows $c $c != $a } return { $c.handle } }`, `
query q()
read
  scan $a Person
  expand $a out Knows -> $b Person
  expand $b out Knows -> $c Person
  filter $c != $a
  column c.handle String = $c.handle
  order id($a), id($b), id($c)
`},
		{"return kinds and default names", `query q($x: I64) { match { $p: Person } return { $p, $x, 1, now(), "s" as s, [1, 2] as l } }`, `
query q($x: I64)
read
  scan $p Person
  column p node Person = $p
  column x I64 = $x
  column literal I64 = 1
  column now DateTime = now()
  column s String = "s"
  column l [I64] = [1, 2]
  order id($p)
`},
		{"aggregates group by the other items", `query q() { match { $p: Person $p worksAt $c } return { $c, $p.city, count($p), sum($p.age) as total, min($p.name), max($p.joined) } order { total desc } }`, `
query q()
read
  scan $p Person
  expand $p out WorksAt -> $c Company
  column c node Company = $c group
  column p.city String? = $p.city group
  column count I64 = count($p)
  column total I64? = sum($p.age)
  column min String? = min($p.name)
  column max Date? = max($p.joined)
  order total desc, c, p.city
`},
		{"order by aggregate expression and group key", `query q() { match { $p: Person } return { $p.city, count($p.age) as n } order { count($p.age), $p.city desc } limit 3 }`, `
query q()
read
  scan $p Person
  column p.city String? = $p.city group
  column n I64 = count($p.age)
  order n, p.city desc
  limit 3
`},
		{"global aggregate has no tie-breaker", `query q() { match { $p: Person } return { avg($p.age) } }`, `
query q()
read
  scan $p Person
  column avg F64? = avg($p.age)
`},
		{"order by whole node and alias", `query q() { match { $p: Person } return { $p.name as n } order { $p desc, n } limit 0 }`, `
query q()
read
  scan $p Person
  column n String = $p.name
  order id($p) desc, n, id($p)
  limit 0
`},
		{"search filters and rankings", `query q($q: String, $v: Vector(8)) { match { $p: Post  search($p.text, $q)  fuzzy($p.text, "helo", 1) } return { $p.text, bm25($p.text, $q) as s, nearest($p.embedding, $v) } order { rrf(nearest($p.embedding, $v), bm25($p.text, "x")) } limit 5 }`, `
query q($q: String, $v: Vector(8))
read
  scan $p Post where search($p.text, $q) and fuzzy($p.text, "helo", 1)
  column p.text String = $p.text
  column s F64 = bm25($p.text, $q)
  column nearest F64? = nearest($p.embedding, $v)
  order rrf(nearest($p.embedding, $v), bm25($p.text, "x"), 60) desc, id($p)
  limit 5
`},
		{"a ranking breaks ties by the greater id", `query q() { match { $p: Post } return { $p.text } order { nearest($p.embedding, "hello") } limit 1 }`, `
query q()
read
  scan $p Post
  column p.text String = $p.text
  order nearest($p.embedding, "hello"), id($p) desc, id($p)
  limit 1
`},
		{"mutation statements", `query q($h: String, $t: DateTime?) {
  insert Person { handle: $h, name: "N", interests: ["a", "b"], joined: "2024-02-03" }
  insert Knows { from: $h, to: "bob", since: date("2024-01-01") }
  insert Post { text: "t", visibility: "public", created: now() }
  update Person set { city: null, age: 5 } where handle starts_with "a"
}`, `
query q($h: String, $t: DateTime?)
mutation constructive
  insert Person upsert {handle: $h, name: "N", interests: ["a", "b"], joined: date("2024-02-03")}
  insert Knows {from: $h, to: "bob", since: date("2024-01-01")}
  insert Post {text: "t", visibility: "public", created: now()}
  update Person {city: null, age: 5} where handle starts_with "a"
`},
		{"deletes", `mutation q($id: String) { delete Knows where to = $id  delete Person where age >= 100  delete Post where visibility = "private" }`, `
query q($id: String)
mutation destructive
  delete Knows where dst = $id
  delete Person where age >= 100
  delete Post where visibility = "private"
`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := mustPlan(t, tc.src, "").String()
			want := strings.TrimPrefix(tc.want, "\n")
			if got != want {
				t.Errorf("plan mismatch\ngot:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// TestPlanShape checks fields the text rendering does not show.
func TestPlanShape(t *testing.T) {
	p := mustPlan(t, `query q($h: String) @description("d") @instruction("i") {
  match { $p: Person { handle: $h } $p knows $_ not { $p follows $_ } }
  return { $p.age }
}`, "q")
	if p.Description != "d" || p.Instruction != "i" {
		t.Errorf("annotations: %q %q", p.Description, p.Instruction)
	}
	rp := p.Read
	if len(rp.Vars) != 3 || !rp.Vars[2].Local || rp.Vars[1].Local || rp.Vars[1].Name != "_" {
		t.Fatalf("vars: %+v %+v %+v", rp.Vars[0], rp.Vars[1], rp.Vars[2])
	}
	scan := rp.Steps[0].(*ScanStep)
	if len(scan.Key) != 1 || scan.Key[0].Kind != OperandParam || scan.Key[0].Param != "h" {
		t.Errorf("key lookup: %+v", scan.Key)
	}
	ex := rp.Steps[1].(*ExpandStep)
	if ex.EdgeVar != -1 || ex.ToBound || ex.Edge.Name != "Knows" || ex.ToNode.Name != "Person" {
		t.Errorf("expand: %+v", ex)
	}
	aj := rp.Steps[2].(*AntiJoinStep)
	if !reflect.DeepEqual(aj.Outer, []int{0}) {
		t.Errorf("anti-join outer: %v", aj.Outer)
	}
	col := rp.Columns[0]
	if col.Kind != ColumnProp || col.Type.String() != "I32" || !col.Nullable || col.Expr.Prop.Name != "age" {
		t.Errorf("column: %+v", col)
	}
	// Every non-local variable is a tie-breaker; the local one is not.
	want := []SortKey{{Kind: SortID, Var: 0}, {Kind: SortID, Var: 1}}
	if !reflect.DeepEqual(rp.Order, want) {
		t.Errorf("order: %+v", rp.Order)
	}
}

func TestQuerySelection(t *testing.T) {
	src := `query a() { match { $p: Person } return { $p } }
query b() { match { $c: Company } return { $c } }`
	f, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	if q, err := f.Query("b"); err != nil || q.Name != "b" {
		t.Errorf("Query(b) = %v, %v", q, err)
	}
	var e *Error
	if _, err := f.Query(""); !errors.As(err, &e) || e.Code != CodeQueryName || !strings.Contains(e.Msg, "a, b") {
		t.Errorf("Query(\"\") = %v", err)
	}
	if _, err := f.Query("c"); !errors.As(err, &e) || e.Code != CodeQueryName || !strings.Contains(e.Msg, "the file holds: a, b") {
		t.Errorf("Query(c) = %v", err)
	}
	prog, err := Check(f, socialCatalog(t))
	if err != nil {
		t.Fatal(err)
	}
	if p, err := prog.Plan("a"); err != nil || p.Name != "a" {
		t.Errorf("Plan(a) = %v, %v", p, err)
	}
	if _, err := prog.Plan(""); !errors.As(err, &e) || e.Code != CodeQueryName {
		t.Errorf("Plan(\"\") = %v", err)
	}
	one, err := Compile(`query only() { match { $p: Person } return { $p } }`, socialCatalog(t))
	if err != nil {
		t.Fatal(err)
	}
	if p, err := one.Plan(""); err != nil || p.Name != "only" {
		t.Errorf("single query Plan(\"\") = %v, %v", p, err)
	}
}

// TestCheckReportsAllErrors: one Check reports the errors of every query,
// in source order.
func TestCheckReportsAllErrors(t *testing.T) {
	_, err := Compile(`query a() { match { $p: Persn } return { $p } }
query b() { match { $p: Person } return { $p.nam, $q } }`, socialCatalog(t))
	var l ErrorList
	if !errors.As(err, &l) || len(l) != 3 {
		t.Fatalf("want 3 errors, got %v", err)
	}
	got := []string{l[0].Pos.String(), l[1].Pos.String(), l[2].Pos.String()}
	if !reflect.DeepEqual(got, []string{"1:25", "2:43", "2:51"}) {
		t.Errorf("positions %v", got)
	}
}

func TestBind(t *testing.T) {
	p := mustPlan(t, `query q($h: String, $age: I32?, $big: U64, $d: Date, $t: DateTime, $tags: [String], $v: Vector(2), $n: I64) {
  match { $p: Person { handle: $h } }
  return { $p }
  limit $n
}`, "")
	decode := func(s string) map[string]any {
		var m map[string]any
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	a, err := BindAt(p, decode(`{"h":"ada","big":"18446744073709551615","d":"2024-01-31","t":"2024-01-31T12:00:00Z","tags":["x"],"v":[0.5,1],"n":7}`), now)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"h": "ada", "age": nil, "big": uint64(18446744073709551615), "d": int32(19753),
		"t": int64(1706702400000000), "tags": []any{"x"}, "v": []float32{0.5, 1}, "n": int64(7),
	}
	if !reflect.DeepEqual(a.Values, want) {
		t.Errorf("values\ngot  %#v\nwant %#v", a.Values, want)
	}
	if a.Now != now.UnixMicro() || a.Value(Operand{Kind: OperandNow}) != now.UnixMicro() {
		t.Errorf("now = %d", a.Now)
	}
	if n, ok := a.Limit(p.Read); !ok || n != 7 {
		t.Errorf("limit = %d %v", n, ok)
	}
	if got := a.Value(p.Read.Steps[0].(*ScanStep).Key[0]); got != "ada" {
		t.Errorf("key operand = %v", got)
	}

	base := `"h":"ada","big":1,"d":"2024-01-31","t":"2024-01-31T12:00:00Z","tags":[],"v":[0,0],"n":1`
	bad := []struct {
		name, params string
		code         Code
		msg          string
	}{
		{"missing required", `{"big":1,"d":"2024-01-31","t":"2024-01-31T12:00:00Z","tags":[],"v":[0,0],"n":1}`, CodeMissingParam, `parameter $h (String) is required`},
		{"unknown name", `{` + base + `,"x":1}`, CodeMissingParam, "there is no parameter x; the query takes $h: String, $age: I32?"},
		{"wrong kind", `{` + base + `,"age":"old"}`, CodeBadValue, "parameter $age"},
		{"overflow", `{` + base + `,"age":3000000000}`, CodeBadValue, "parameter $age"},
		{"null required", `{` + strings.Replace(base, `"h":"ada"`, `"h":null`, 1) + `}`, CodeBadValue, "parameter $h"},
		{"vector length", `{` + strings.Replace(base, `"v":[0,0]`, `"v":[0]`, 1) + `}`, CodeBadValue, "parameter $v"},
		{"negative limit", `{` + strings.Replace(base, `"n":1`, `"n":-1`, 1) + `}`, CodeLimit, "non-negative"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Bind(p, decode(tc.params))
			var e *Error
			if !errors.As(err, &e) || e.Code != tc.code || !strings.Contains(e.Msg, tc.msg) || !errors.Is(err, ErrInvalidQuery) {
				t.Errorf("got %v, want %s with %q", err, tc.code, tc.msg)
			}
		})
	}
}

func TestLexerDetails(t *testing.T) {
	f, err := Parse("/* block\n comment */ query q() { match { $p: Person { name: \"a\\\"b\\n\" } $p.age > -3 $p.age < 1.5e2 } return { $p } }")
	if err != nil {
		t.Fatal(err)
	}
	q := f.Queries[0]
	if q.Pos.String() != "2:13" {
		t.Errorf("query pos %v", q.Pos)
	}
	b := q.Read.Match[0].(*BindingClause)
	if b.Props[0].Value.Text != "a\"b\n" {
		t.Errorf("string %q", b.Props[0].Value.Text)
	}
	if fc := q.Read.Match[1].(*FilterClause); fc.Right.Text != "-3" || fc.Right.Kind != ExprInt {
		t.Errorf("negative literal %+v", fc.Right)
	}
	if fc := q.Read.Match[2].(*FilterClause); fc.Right.Kind != ExprFloat {
		t.Errorf("float literal %+v", fc.Right)
	}
}

// TestLiteralValues: literals are coerced to the canonical value of the
// type they meet.
func TestLiteralValues(t *testing.T) {
	docs := testCatalog(t)
	social := socialCatalog(t)
	tests := []struct {
		name  string
		src   string
		want  any
		docs  bool
		index int // which Where predicate of the first scan
	}{
		{"I32 from int", `$p: Person $p.age = 7`, int32(7), false, 0},
		{"I32 negative", `$p: Person $p.age > -7`, int32(-7), false, 0},
		{"String", `$p: Person { name: "x" }`, "x", false, 0},
		{"Date literal", `$p: Person $p.joined = date("1970-01-02")`, int32(1), false, 0},
		{"Date from string", `$p: Person $p.joined = "1970-01-03"`, int32(2), false, 0},
		{"DateTime literal", `$x: Post $x.created >= datetime("1970-01-01T00:00:01.5Z")`, int64(1500000), false, 0},
		{"DateTime from string", `$x: Post $x.created < "1970-01-01T00:00:02Z"`, int64(2000000), false, 0},
		{"enum", `$x: Post { visibility: "friends" }`, "friends", false, 0},
		{"list element", `$p: Person $p.interests contains "go"`, "go", false, 0},
		{"U64 max", `$d: Doc $d.size <= 18446744073709551615`, uint64(18446744073709551615), true, 0},
		{"F64 from int", `$c: Cell $c.v > 2`, float64(2), true, 0},
		{"F64 float", `$c: Cell $c.v > 2.5e1`, float64(25), true, 0},
		{"enum on doc", `$d: Doc { kind: "b" }`, "b", true, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cat := social
			if tc.docs {
				cat = docs
			}
			prog, err := Compile("query q() { match { "+tc.src+" } return { 1 } }", cat)
			if err != nil {
				t.Fatal(err)
			}
			scan := prog.Plans[0].Read.Steps[0].(*ScanStep)
			got := scan.Where[tc.index].Right.Value
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("value %#v, want %#v", got, tc.want)
			}
		})
	}
}

// TestCompositeKeyAndBlob: a composite key becomes a multi-value lookup in
// key order; a Blob literal is decoded; endpoints take the key type.
func TestCompositeKeyAndBlob(t *testing.T) {
	cat := testCatalog(t)
	prog, err := Compile(`query r() { match { $c: Cell { col: 2, row: 1 } $d holds $c } return { $d.path, $c.v } }
query w() {
  insert Doc { path: "p", size: 3, body: "base64:aGk=", vec: [1, 2, 3.5], tags: ["x"] }
  insert Holds { from: "p", to: "[\"1\",\"2\"]", weight: 4 }
}`, cat)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := prog.Plan("r")
	scan := r.Read.Steps[0].(*ScanStep)
	if len(scan.Key) != 2 || scan.Key[0].Value != int64(1) || scan.Key[1].Value != int64(2) {
		t.Errorf("composite key %+v", scan.Key)
	}
	if ex := r.Read.Steps[1].(*ExpandStep); ex.Dir != In || ex.ToNode.Name != "Doc" {
		t.Errorf("expand %+v", ex)
	}
	w, _ := prog.Plan("w")
	ins := w.Mutation.Statements[0]
	if !ins.Upsert || !reflect.DeepEqual(ins.Values[2].Value.Value, table.InlineBlob([]byte("hi"))) || !reflect.DeepEqual(ins.Values[3].Value.Value, []float32{1, 2, 3.5}) {
		t.Errorf("doc insert %+v", ins.Values)
	}
	edge := w.Mutation.Statements[1]
	if edge.From.Type.Kind.String() != "String" || edge.To.Type.Kind.String() != "String" || edge.Values[0].Value.Value != int32(4) {
		t.Errorf("edge insert from %+v to %+v", edge.From, edge.To)
	}
	// Loose has no key: inserts are plain inserts.
	p, err := Compile(`query l() { insert Loose { note: "n" } }`, cat)
	if err != nil || p.Plans[0].Mutation.Statements[0].Upsert {
		t.Errorf("unkeyed insert: %v", err)
	}
}
