package query

import (
	"context"
	"slices"
	"sort"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/lang/gq"
	"github.com/omnigraph-go/omnigraph/lang/pg"
)

// TestScanLoadsOnlyItsColumns: a full load of a node table reads only the
// columns the query touches (column projection); a later query on the same
// cached version that needs more columns reloads with the union, and every
// answer equals a cold handle's (a column not loaded never reads as NULL).
func TestScanLoadsOnlyItsColumns(t *testing.T) {
	ctx := context.Background()
	g := newSocialGraph(t, mem.New())
	h, err := graph.Open(ctx, g.Store(), graph.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := h.Snapshot(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	pin, _ := s.Pin(graph.NodeTableKey("Person"))
	loaded := func() []string {
		t.Helper()
		nr := cacheOf(h).entry(pinID(pin)).nodes
		if nr == nil || !nr.full {
			t.Fatal("the Person table was not loaded")
		}
		if nr.colSet == nil {
			return nil
		}
		var out []string
		for c := range nr.colSet {
			out = append(out, c)
		}
		sort.Strings(out)
		return out
	}
	steps := []struct {
		src  string
		cols []string // nil: every column
	}{
		{`query q() { match { $p: Person  $p.age >= 30 } return { $p.city, count($p) as n, avg($p.age) as a } order { $p.city } }`, []string{"age", "city"}},
		// an ungrouped plan ends its order with the ids (lang/gq SortID)
		{`query q() { match { $p: Person  $p.city = "Lisbon" } return { $p.handle } order { $p.handle } }`, []string{"age", "city", "handle", "id"}},
		{`query q() { match { $p: Person } return { $p.email, $p.joined } order { $p.email } }`, []string{"age", "city", "email", "handle", "id", "joined"}},
		{`query q() { match { $p: Person  $p.age < 36 } return { $p } }`, nil},
	}
	for i, st := range steps {
		r, err := Run(ctx, s, st.src, "", nil)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := loaded(); !slices.Equal(got, st.cols) {
			t.Fatalf("step %d loaded columns %v, want %v", i, got, st.cols)
		}
		cold, err := Head(ctx, mustOpen(t, g), "main", st.src, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		if rowsText(r) != rowsText(cold) || len(r.Rows) == 0 {
			t.Fatalf("step %d: %q, a cold handle says %q", i, rowsText(r), rowsText(cold))
		}
	}
}

func mustOpen(t *testing.T, g *graph.Graph) *graph.Graph {
	t.Helper()
	h, err := graph.Open(context.Background(), g.Store(), graph.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestNeededColumns: the columns a plan reads, per node type, through
// filters, anti-joins, aggregates and sort keys; a whole node needs all.
func TestNeededColumns(t *testing.T) {
	ctx := context.Background()
	g := newSocialGraph(t, mem.New())
	cat, err := g.Schema(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		src    string
		person []string // nil: every column
		absent bool     // Company is not read at all
	}{
		{`query q() { match { $p: Person  $p.age > 3 } return { count($p) as n } }`, []string{"age"}, true},
		{`query q() { match { $p: Person  $p.age > 3 } return { $p.city, count($p) as n, avg($p.age) as a } order { $p.city } }`, []string{"age", "city"}, true},
		{`query q() { match { $p: Person  $p.age > 3 } return { $p.city } }`, []string{"age", "city", "id"}, true},
		{`query q() { match { $p: Person  $p.age > 3 } return { $p.city, count($p.handle) as n } }`, []string{"age", "city", "handle"}, true},
		{`query q() { match { $p: Person  $p.handle = "alice" } return { $p.city } }`, []string{"city", "handle", "id"}, true},
		{`query q() { match { $p: Person  not { $p knows $f  $f.city = "Lisbon" } } return { $p.handle } order { $p.joined } }`, []string{"city", "handle", "id", "joined"}, true},
		{`query q() { match { $p: Person  $p worksAt $c } return { $c.name, max($p.email) as m } }`, []string{"email", "id"}, false},
		{`query q() { match { $p: Person { handle: "alice" } } return { $p } }`, nil, true},
	}
	for _, c := range cases {
		prog, err := gq.Compile(c.src, cat)
		if err != nil {
			t.Fatal(err)
		}
		plan, _ := prog.Plan("")
		got := neededColumns(plan.Read)
		if p, ok := got["Person"]; !ok || !slices.Equal(p, c.person) {
			t.Errorf("%s: Person columns %v, want %v", c.src, p, c.person)
		}
		if _, ok := got["Company"]; ok == c.absent {
			t.Errorf("%s: Company columns %v", c.src, got["Company"])
		}
		if !c.absent && !slices.Equal(got["Company"], []string{"id", "name"}) {
			t.Errorf("%s: Company columns %v, want [id name]", c.src, got["Company"])
		}
	}
}

// TestGroupKeysFromColumns: grouping by string and integer properties read
// straight from the Arrow columns (NULL a group of its own) gives the
// groups the general path gives (the expected answers are the general
// path's).
func TestGroupKeysFromColumns(t *testing.T) {
	ctx := context.Background()
	g := newSocialGraph(t, mem.New())
	for src, want := range map[string]string{
		`query q() { match { $p: Person } return { $p.city, count($p) as n } order { $p.city } }`:                                "null,1 | Lisbon,3 | Porto,1",
		`query q() { match { $p: Person  $p.age >= 0 } return { $p.age, count($p) as n } order { $p.age desc } }`:                "40,1 | 35,1 | 30,1 | 25,1",
		`query q() { match { $p: Person } return { $p.city, $p.age, count($p) as n } order { $p.city, $p.age } }`:                "null,null,1 | Lisbon,30,1 | Lisbon,35,1 | Lisbon,40,1 | Porto,25,1",
		`query q() { match { $p: Person  $p knows $f } return { $f.city, count($p) as n, min($p.age) as a } order { $f.city } }`: "null,1,40 | Lisbon,4,25 | Porto,1,30",
	} {
		r, err := Head(ctx, g, "main", src, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := rowsText(r); got != want {
			t.Errorf("%s:\n got %q\nwant %q", src, got, want)
		}
	}
}

// TestIDFreePlanLoadsNoIDs: a scan-filter-aggregate plan loads its node
// table without the id column, answers as before, and a later plan on the
// same handle that needs ids (a whole node, a traversal, a key lookup)
// loads them and answers as a fresh handle does.
func TestIDFreePlanLoadsNoIDs(t *testing.T) {
	ctx := context.Background()
	store := mem.New()
	g := newSocialGraph(t, store)
	agg := `query q() { match { $p: Person  $p.age >= 30 } return { $p.city, count($p) as n, avg($p.age) as a } order { $p.city } }`
	r, err := Head(ctx, g, "main", agg, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rowsText(r), "Lisbon,3,35"; got != want {
		t.Fatalf("aggregate: got %q, want %q", got, want)
	}
	c := cacheOf(g)
	c.mu.Lock()
	var loaded []map[string]bool
	for el := c.lru.Front(); el != nil; el = el.Next() {
		if e := el.Value.(*cacheEntry); e.nodes != nil {
			loaded = append(loaded, e.nodes.colSet)
		}
	}
	c.mu.Unlock()
	if len(loaded) != 1 || loaded[0] == nil || loaded[0][pg.ColID] || !loaded[0]["age"] || !loaded[0]["city"] {
		t.Fatalf("the aggregate loaded columns %v, want age and city without id", loaded)
	}
	for _, src := range []string{
		`query q() { match { $p: Person  $p.age >= 30 } return { $p } order { $p.handle } }`,
		`query q() { match { $p: Person  $p.age >= 30  $p knows $f } return { $p.handle, $f.handle } order { $p.handle, $f.handle } }`,
		`query q() { match { $p: Person { handle: "alice" } } return { $p.city, $p.age } }`,
		agg,
	} {
		warm, err := Head(ctx, g, "main", src, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		h, err := graph.Open(ctx, store, graph.OpenOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		fresh, err := Head(ctx, h, "main", src, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		if rowsText(warm) != rowsText(fresh) || rowsText(warm) == "" {
			t.Errorf("%s: after the id-free load %q, a fresh handle %q", src, rowsText(warm), rowsText(fresh))
		}
	}
}
