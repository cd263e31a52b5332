package query

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/lang/gq"
)

// TestQueryClauses runs one query per clause against socialFixture; every
// expected answer is worked out by hand from the fixture's comment.
func TestQueryClauses(t *testing.T) {
	ctx := context.Background()
	g := newSocialGraph(t, mem.New())
	tests := []struct {
		name   string
		src    string
		params map[string]any
		want   string
	}{
		{"scan and filter, order desc", `query q() { match { $p: Person  $p.age >= 30 } return { $p.handle, $p.age } order { $p.age desc } }`, nil,
			"carol,40 | erin,35 | alice,30"},
		{"point lookup by key", `query q($h: String) { match { $p: Person { handle: $h } } return { $p.name } }`, map[string]any{"h": "bob"},
			"Bob"},
		{"point lookup of a missing key", `query q($h: String) { match { $p: Person { handle: $h } } return { $p.name } }`, map[string]any{"h": "zed"},
			""},
		{"inline equality on non-key properties", `query q() { match { $p: Person { city: "Lisbon", age: 30 } } return { $p.handle } }`, nil,
			"alice"},
		{"traversal out, ties by id", `query q() { match { $p: Person { handle: "alice" }  $p knows $f } return { $f.handle } }`, nil,
			"bob | carol"},
		{"traversal direction inferred backwards", `query q() { match { $c: Company { slug: "acme" }  $c worksAt $p } return { $p.handle } }`, nil,
			"alice | bob"},
		{"traversal with neither side bound", `query q() { match { $a worksAt $c } return { $a.handle, $c.slug } }`, nil,
			"alice,acme | bob,acme | carol,globex"},
		{"exactly two hops: nodes first reached at hop 2", `query q() { match { $p: Person { handle: "alice" }  $p knows{2,2} $f } return { $f.handle } }`, nil,
			// hop 1 reaches bob and carol; hop 2 reaches carol again (already visited) and dave
			"dave"},
		{"one to two hops, each destination once", `query q() { match { $p: Person { handle: "alice" }  $p knows{1,2} $f } return { $f.handle } }`, nil,
			"bob | carol | dave"},
		{"a cycle back to the source does not report it", `query q() { match { $p: Person { handle: "alice" }  $p knows{1,3} $f } return { $f.handle } }`, nil,
			// alice→carol→dave→alice: the source is visited before hop 1
			"bob | carol | dave"},
		{"multi-hop backwards", `query q() { match { $p: Person { handle: "dave" }  $f knows{2,2} $p } return { $f.handle } }`, nil,
			"alice | bob"},
		{"self-loop counts as one hop", `query q() { match { $p: Person { handle: "erin" }  $p knows{1,5} $f } return { $f.handle } }`, nil,
			"erin"},
		{"undirected", `query q() { match { $p: Person { handle: "alice" }  $p <knows> $q } return { $q.handle } }`, nil,
			"bob | carol | dave"},
		{"undirected self-loop once", `query q() { match { $p: Person { handle: "erin" }  $p <knows> $q } return { $q.handle } }`, nil,
			"erin"},
		{"undirected two hops", `query q() { match { $p: Person { handle: "bob" }  $p <knows>{2,2} $q } return { $q.handle } }`, nil,
			// hop 1 (both ways): alice, carol; hop 2 reaches bob (the source), carol, alice again and dave first
			"dave"},
		{"parallel edges give one row without an edge binding", `query q() { match { $b: Person { handle: "bob" }  $b follows $a } return { $a.handle } }`, nil,
			"alice"},
		{"edge binding gives one row per parallel edge", `query q() { match { $b: Person { handle: "bob" }  $b $f:follows $a } return { $a.handle } }`, nil,
			"alice | alice"},
		{"edge binding filter, return and order", `query q() { match { $c: Company { slug: "acme" }  $p $w:worksAt $c  $w.since >= date("2019-01-01") } return { $p.handle, $w.title, $w.since } order { $w.since desc } }`, nil,
			"bob,engineer,2021-03-01 | alice,lead engineer,2019-05-01"},
		{"edge binding with both ends bound", `query q() { match { $a: Person { handle: "alice" }  $b: Person { handle: "bob" }  $a $k:knows $b } return { $k.since } }`, nil,
			"2015-01-01"},
		{"check a bound destination", `query q() { match { $a: Person { handle: "alice" }  $d: Person { handle: "dave" }  $a knows{2,2} $d } return { $d.name } }`, nil,
			"Dave"},
		{"list contains", `query q() { match { $p: Person  $p.interests contains "chess" } return { $p.handle } }`, nil,
			"alice | bob"},
		{"string contains and starts_with", `query q() { match { $p: Person  $p.email contains "@x"  $p.name starts_with "Al" } return { $p.handle } }`, nil,
			"alice"},
		{"!= never matches NULL", `query q() { match { $p: Person  $p.age != 30 } return { $p.handle } }`, nil,
			"bob | carol | erin"},
		{"date comparison", `query q() { match { $p: Person  $p.joined < date("2020-06-01") } return { $p.handle } }`, nil,
			"alice | carol"},
		{"variable inequality", `query q() { match { $p: Person { handle: "alice" }  $p knows{1,3} $f  $f != $p } return { $f.handle } }`, nil,
			"bob | carol | dave"},
		{"not: anti-join", `query q() { match { $p: Person  not { $p worksAt $_ } } return { $p.handle } }`, nil,
			"dave | erin"},
		{"not with a filter inside", `query q() { match { $p: Person { handle: "alice" }  $p knows{2,2} $f  not { $p knows $f } } return { $f.handle } }`, nil,
			"dave"},
		{"whole node, literal, alias", `query q() { match { $c: Company { slug: "globex" } } return { $c, "x" as kind, $c.name as n } }`, nil,
			`{"id":"globex","name":"Globex","slug":"globex","industry":"finance","founded":null},x,Globex`},
		{"grouped aggregates, order by alias", `query q() { match { $p: Person  $p worksAt $c } return { $c.name, count($p) as staff, avg($p.age) as mean, sum($p.age) as total, min($p.joined) as first, max($p.handle) as last } order { staff desc } }`, nil,
			"Acme,2,27.5,55,2020-01-01,bob | Globex,1,40,40,2019-03-10,carol"},
		{"global aggregates", `query q() { match { $p: Person } return { count($p) as people, count($p.age) as aged, max($p.age) as oldest, sum($p.age) as total } }`, nil,
			"5,4,40,130"},
		{"global aggregate over no rows is one row", `query q() { match { $p: Person  $p.age > 100 } return { count($p) as n, sum($p.age) as s } }`, nil,
			"0,null"},
		{"grouped over no rows is empty", `query q() { match { $p: Person  $p.age > 100 } return { $p.city, count($p) } }`, nil,
			""},
		{"group by a nullable property: NULL is a group, first", `query q() { match { $p: Person } return { $p.city, count($p) as n } }`, nil,
			"null,1 | Lisbon,3 | Porto,1"},
		{"NULL first ascending", `query q() { match { $p: Person } return { $p.handle } order { $p.age } }`, nil,
			"dave | bob | alice | erin | carol"},
		{"NULL last descending", `query q() { match { $p: Person } return { $p.handle } order { $p.age desc } }`, nil,
			"carol | erin | alice | bob | dave"},
		{"ties broken by id", `query q() { match { $p: Person } return { $p.handle, $p.city } order { $p.city desc } }`, nil,
			"bob,Porto | alice,Lisbon | carol,Lisbon | erin,Lisbon | dave,null"},
		{"limit", `query q() { match { $p: Person } return { $p.handle } order { $p.name desc } limit 2 }`, nil,
			"erin | dave"},
		{"limit parameter", `query q($n: I64) { match { $p: Person } return { $p.handle } limit $n }`, map[string]any{"n": 3},
			"alice | bob | carol"},
		{"limit 0", `query q() { match { $p: Person } return { $p.handle } limit 0 }`, nil,
			""},
		{"two-step path across types", `query q() { match { $p: Person  $p wrote $x  $x about $t } return { $p.handle, $t.title } }`, nil,
			"alice,Graphs"},
		{"disconnected match is a cross product", `query q() { match { $p: Person { city: "Porto" }  $c: Company } return { $p.handle, $c.slug } }`, nil,
			"bob,acme | bob,globex"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Head(ctx, g, "main", tc.src, "", tc.params)
			if err != nil {
				t.Fatalf("Query: %v", err)
			}
			if got := rowsText(res); got != tc.want {
				t.Errorf("rows:\n got %s\nwant %s", got, tc.want)
			}
			if len(res.Rows) > 0 && len(res.Rows[0]) != len(res.Columns) {
				t.Errorf("row width %d, columns %d", len(res.Rows[0]), len(res.Columns))
			}
		})
	}
}

// TestQueryResultJSON checks the JSON envelope and value spelling.
func TestQueryResultJSON(t *testing.T) {
	ctx := context.Background()
	g := newSocialGraph(t, mem.New())
	res, err := Head(ctx, g, "", `query staff() { match { $p: Person  $p worksAt $c } return { $p.handle, $c.slug as company, $p.joined } order { $p.handle } limit 1 }`, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		QueryName string           `json:"query_name"`
		RowCount  int              `json:"row_count"`
		Columns   []string         `json:"columns"`
		Rows      []map[string]any `json:"rows"`
		Commit    string           `json:"graph_commit_id"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	snap, _ := g.Snapshot(ctx, "main")
	if got.QueryName != "staff" || got.RowCount != 1 || strings.Join(got.Columns, ",") != "p.handle,company,p.joined" || got.Commit != snap.CommitID() {
		t.Fatalf("envelope: %s", b)
	}
	if got.Rows[0]["p.handle"] != "alice" || got.Rows[0]["company"] != "acme" || got.Rows[0]["p.joined"] != "2020-01-01" {
		t.Fatalf("row: %v", got.Rows[0])
	}
	if !strings.Contains(string(b), `{"p.handle":"alice","company":"acme","p.joined":"2020-01-01"}`) {
		t.Fatalf("row keys are not in column order: %s", b)
	}
}

// TestQueryErrors: bad queries and parameters are rejected with the
// checker's coded errors, and mutations are refused by the read path.
func TestQueryErrors(t *testing.T) {
	ctx := context.Background()
	g := newSocialGraph(t, mem.New())
	tests := []struct {
		name, src string
		params    map[string]any
		code      gq.Code
		sentinel  error
	}{
		{name: "unknown type", src: `query q() { match { $p: Persn } return { $p } }`, code: gq.CodeUnknownType},
		{name: "missing parameter", src: `query q($h: String) { match { $p: Person { handle: $h } } return { $p } }`, code: gq.CodeMissingParam},
		{name: "mutation on the read path", src: `mutation m() { insert Topic { slug: "x", title: "X" } }`, sentinel: graph.ErrNotARead},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Head(ctx, g, "main", tc.src, "", tc.params)
			if err == nil {
				t.Fatal("query succeeded")
			}
			if tc.sentinel != nil {
				if !errors.Is(err, tc.sentinel) {
					t.Fatalf("error %v is not %v", err, tc.sentinel)
				}
				return
			}
			if !errors.Is(err, gq.ErrInvalidQuery) || !strings.Contains(err.Error(), string(tc.code)) {
				t.Fatalf("error %v does not carry %s", err, tc.code)
			}
		})
	}
}

// TestQueryDanglingEdge: an edge whose endpoint was deleted binds nothing.
func TestQueryDanglingEdge(t *testing.T) {
	ctx := context.Background()
	g := newSocialGraph(t, mem.New())
	qDelete(t, g, "main", graph.NodeTableKey("Person"), "bob")
	res, err := Head(ctx, g, "main", `query q() { match { $p: Person { handle: "alice" }  $p knows $f } return { $f.handle } }`, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := rowsText(res); got != "carol" {
		t.Fatalf("got %q, want carol (bob was deleted)", got)
	}
}

// TestScanFastPathMatchesRowPath: the in-place Arrow filter of scans
// agrees with row-by-row predicate evaluation for every operator on
// integer, date and string columns with NULLs.
func TestScanFastPathMatchesRowPath(t *testing.T) {
	ctx := context.Background()
	g := newSocialGraph(t, mem.New())
	var lines []string
	for i := 0; i < 200; i++ {
		age, city, joined := "null", "null", "null"
		if i%7 != 0 {
			age = fmt.Sprint(i % 60)
		}
		if i%5 != 0 {
			city = fmt.Sprintf("%q", fmt.Sprintf("c%d", i%13))
		}
		if i%3 != 0 {
			joined = fmt.Sprintf(`"2020-01-%02d"`, 1+i%28)
		}
		lines = append(lines, fmt.Sprintf(`{"type":"Person","data":{"handle":"h%03d","name":"N","age":%s,"city":%s,"joined":%s}}`, i, age, city, joined))
	}
	qAppend(t, g, "main", strings.Join(lines, "\n"))
	s, err := g.Snapshot(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	nr, err := nodeTable(ctx, s, "Person", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	cat, _ := s.Catalog(ctx)
	ops := []string{"=", "!=", "<", "<=", ">", ">="}
	var filters []string
	for _, op := range ops {
		filters = append(filters, "$p.age "+op+" 30", `$p.city `+op+` "c5"`, `$p.joined `+op+` date("2020-01-14")`)
	}
	filters = append(filters, `$p.city starts_with "c1"`, `$p.city contains "1"`)
	for _, f := range filters {
		prog, err := gq.Compile(`query q() { match { $p: Person  `+f+` } return { $p.handle } }`, cat)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		plan, _ := prog.Plan("")
		args, _ := gq.Bind(plan, nil)
		ex := &executor{s: s, rp: plan.Read, args: args, nodes: map[string]*nodeRows{"Person": nr}, edges: map[string]*edgeIndex{}}
		fs := &gq.FilterStep{Pred: plan.Read.Steps[0].(*gq.ScanStep).Where[0]}
		all := make([]int32, len(nr.ids))
		for i := range all {
			all[i] = int32(i)
		}
		fast, ok := ex.filterRows(nr, fs.Pred, slices.Clone(all))
		if !ok {
			t.Fatalf("%s: fast path declined", f)
		}
		var slow []int32
		for _, r := range all {
			row := make([]ref, len(plan.Read.Vars))
			row[0] = ref{id: nr.ids[r], nr: nr, row: r, set: true}
			if ex.pred(fs.Pred, row) {
				slow = append(slow, r)
			}
		}
		if !slices.Equal(fast, slow) || len(slow) == 0 {
			t.Fatalf("%s: fast %d rows, row path %d rows", f, len(fast), len(slow))
		}
	}
}
