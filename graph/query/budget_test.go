package query

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/counter"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/graph"
)

// budgetShapes are the query shapes the request budget is asserted for.
var budgetShapes = []struct{ name, src string }{
	{"point lookup", `query q() { match { $p: Person { handle: "alice" } } return { $p } }`},
	{"filtered scan", `query q() { match { $p: Person  $p.age >= 30 } return { $p.handle } order { $p.age desc } }`},
	{"two-hop traversal", `query q() { match { $p: Person { handle: "alice" }  $p knows{2,2} $f } return { $f.name } }`},
	{"aggregate", `query q() { match { $p: Person  $p worksAt $c } return { $c.name, count($p) as n } }`},
	{"anti-join", `query q() { match { $p: Person  not { $p worksAt $_ } } return { $p.handle } }`},
	{"edge binding", `query q() { match { $p $w:worksAt $c  $w.since >= date("2019-01-01") } return { $p.handle, $w.title } }`},
}

// TestRepeatedQueryBudget counts storage requests with backend/counter: a
// read query repeated on an unchanged branch through a warm handle costs at
// most 2 requests (in fact the one List of the branch freshness probe), for
// several query shapes, and still does after 300 more commits. A query
// after commits that touched none of its tables pays only the probe and
// the new manifest version (no table reads).
func TestRepeatedQueryBudget(t *testing.T) {
	ctx := context.Background()
	cnt := counter.New(mem.New())
	writer := newSocialGraph(t, cnt)
	g, err := graph.Open(ctx, cnt, graph.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	check := func(t *testing.T, phase string) {
		for _, sh := range budgetShapes {
			first, err := Head(ctx, g, "main", sh.src, "", nil)
			if err != nil {
				t.Fatalf("%s: %v", sh.name, err)
			}
			for i := 0; i < 3; i++ {
				cnt.Reset()
				again, err := Head(ctx, g, "main", sh.src, "", nil)
				if err != nil {
					t.Fatalf("%s: %v", sh.name, err)
				}
				c := cnt.Snapshot()
				if c.Total > 2 {
					t.Errorf("%s %s: repeat %d cost %d requests (%s), budget 2", phase, sh.name, i, c.Total, c)
				}
				if c.Total != 1 || c.List != 1 {
					t.Logf("%s %s: repeat cost %s (expected 1 list)", phase, sh.name, c)
				}
				if rowsText(again) != rowsText(first) {
					t.Fatalf("%s: repeat returned %q, first %q", sh.name, rowsText(again), rowsText(first))
				}
			}
			if len(first.Rows) == 0 {
				t.Fatalf("%s returned nothing; the budget would be vacuous", sh.name)
			}
		}
	}
	check(t, "fresh")

	// 300 commits that touch only the Topic table.
	for i := 0; i < 300; i++ {
		qAppend(t, writer, "main", fmt.Sprintf(`{"type":"Topic","data":{"slug":"t%03d","title":"T%d"}}`, i, i))
	}
	cnt.Reset()
	if _, err := Head(ctx, g, "main", budgetShapes[2].src, "", nil); err != nil {
		t.Fatal(err)
	}
	c := cnt.Snapshot()
	if c.Total > 2 {
		t.Errorf("first query after 300 commits to another table cost %s, want the probe and one manifest read", c)
	}
	t.Logf("first query after 300 commits to another table: %s", c)
	check(t, "after 300 commits")

	// Commits to the tables the queries read: the next query reloads those
	// versions, and repeats are back to the probe alone.
	for i := 0; i < 5; i++ {
		qAppend(t, writer, "main", fmt.Sprintf(`{"type":"Person","data":{"handle":"new%d","name":"New","age":31}}
{"edge":"Knows","from":"alice","to":"new%d","data":{"id":"kn%d"}}`, i, i, i))
	}
	check(t, "after commits to the queried tables")

	st := CacheStatsOf(g)
	if st.Entries == 0 || st.Hits == 0 {
		t.Fatalf("cache stats %+v: the cache was not used", st)
	}
}

// TestQueryCacheBounded: with a tiny limit the LRU evicts, and queries
// still answer correctly (re-reading evicted table versions).
func TestQueryCacheBounded(t *testing.T) {
	ctx := context.Background()
	cnt := counter.New(mem.New())
	g := newSocialGraph(t, cnt)
	SetCacheLimit(g, 1) // every new entry evicts the others
	for _, sh := range budgetShapes {
		a, err := Head(ctx, g, "main", sh.src, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Head(ctx, g, "main", sh.src, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		if rowsText(a) != rowsText(b) {
			t.Fatalf("%s: %q then %q", sh.name, rowsText(a), rowsText(b))
		}
	}
	st := CacheStatsOf(g)
	if st.Evictions == 0 || st.Entries > 1 {
		t.Fatalf("stats %+v: a 1-byte cache must evict down to the entry being loaded", st)
	}
	cnt.Reset()
	if _, err := Head(ctx, g, "main", budgetShapes[3].src, "", nil); err != nil {
		t.Fatal(err)
	}
	if c := cnt.Snapshot(); c.Get == 0 {
		t.Fatalf("an evicted table was served without reading it: %s", c)
	}
}

// TestSnapshotIsolation: a query executes on the snapshot captured before
// it, so a commit that lands after the capture (while the query would be
// running) is invisible to it, and visible to the next capture.
func TestSnapshotIsolation(t *testing.T) {
	ctx := context.Background()
	g := newSocialGraph(t, mem.New())
	const q = `query q() { match { $p: Person { handle: "alice" }  $p knows $f } return { $f.handle } }`
	const count = `query q() { match { $p: Person } return { count($p) as n } }`

	old, err := g.Snapshot(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	// Warm the cache at the old versions, then commit new rows to both
	// tables the query reads.
	if r, err := Run(ctx, old, q, "", nil); err != nil || rowsText(r) != "bob | carol" {
		t.Fatalf("before: %v %v", r, err)
	}
	qAppend(t, g, "main", `{"type":"Person","data":{"handle":"frank","name":"Frank"}}
{"edge":"Knows","from":"alice","to":"frank","data":{"id":"k9"}}`)
	qDelete(t, g, "main", graph.EdgeTableKey("Knows"), "k1")

	r, err := Run(ctx, old, q, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := rowsText(r); got != "bob | carol" {
		t.Fatalf("old snapshot sees later commits: %q", got)
	}
	if r.CommitID != old.CommitID() {
		t.Fatalf("result commit %s, snapshot %s", r.CommitID, old.CommitID())
	}
	r, err = Head(ctx, g, "main", q, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := rowsText(r); got != "carol | frank" {
		t.Fatalf("new capture: %q, want carol | frank", got)
	}

	// A cold snapshot (nothing cached at its versions) is isolated too:
	// pinned versions are read, not the table heads.
	g2, err := graph.Open(ctx, g.Store(), graph.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	cold, err := g2.SnapshotAt(ctx, old.CommitID())
	if err != nil {
		t.Fatal(err)
	}
	if r, err := Run(ctx, cold, count, "", nil); err != nil || rowsText(r) != "5" {
		t.Fatalf("time travel count: %v %v", r, err)
	}
}

// TestConcurrentQueriesAndCommits: queries racing commits each see exactly
// one snapshot: the person count equals the live rows of the Person table
// version their snapshot pins, and knows-edges all point at persons of
// that same snapshot.
func TestConcurrentQueriesAndCommits(t *testing.T) {
	ctx := context.Background()
	g := newSocialGraph(t, mem.New())
	const commits = 15
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < commits; i++ {
			qAppend(t, g, "main", fmt.Sprintf(`{"type":"Person","data":{"handle":"p%02d","name":"P"}}
{"edge":"Knows","from":"alice","to":"p%02d","data":{"id":"kp%02d"}}`, i, i, i))
		}
	}()
	errs := make(chan error, 64)
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 12; i++ {
				s, err := g.Snapshot(ctx, "main")
				if err != nil {
					errs <- err
					return
				}
				stats, err := s.TableStats(ctx)
				if err != nil {
					errs <- err
					return
				}
				var persons int64
				for _, st := range stats {
					if st.Key == graph.NodeTableKey("Person") {
						persons = st.Rows
					}
				}
				r, err := Run(ctx, s, `query q() { match { $p: Person } return { count($p) as n } }`, "", nil)
				if err != nil {
					errs <- err
					return
				}
				f, err := Run(ctx, s, `query q() { match { $a: Person { handle: "alice" }  $a knows $f } return { count($f) as n } }`, "", nil)
				if err != nil {
					errs <- err
					return
				}
				n := r.Rows[0][0].(int64)
				if n != persons {
					errs <- fmt.Errorf("snapshot v%d: query counted %d persons, its Person table has %d", s.Version(), n, persons)
					return
				}
				// alice knows bob, carol and every p added so far (5 fixture persons).
				if want := 2 + (n - 5); f.Rows[0][0].(int64) != want {
					errs <- fmt.Errorf("snapshot v%d: alice knows %v, want %d", s.Version(), f.Rows[0][0], want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestPointLookupUsesKeyIndex: a query pinning the whole @key resolves
// that one node through the table's key lookup and does not load the
// table; a later scan of the same version loads it fully.
func TestPointLookupUsesKeyIndex(t *testing.T) {
	ctx := context.Background()
	g := newSocialGraph(t, mem.New())
	g2, err := graph.Open(ctx, g.Store(), graph.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := g2.Snapshot(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	if r, err := Run(ctx, s, `query q() { match { $p: Person { handle: "carol" } } return { $p.name } }`, "", nil); err != nil || rowsText(r) != "Carol" {
		t.Fatalf("lookup: %v %v", r, err)
	}
	pin, _ := s.Pin(graph.NodeTableKey("Person"))
	e := cacheOf(g2).entry(pinID(pin))
	if e.nodes == nil || e.nodes.full || len(e.nodes.byID) != 1 {
		t.Fatalf("after a point lookup the Person table holds %+v; want only carol", e.nodes)
	}
	if r, err := Run(ctx, s, `query q() { match { $p: Person { handle: "nobody" } } return { $p.name } }`, "", nil); err != nil || len(r.Rows) != 0 {
		t.Fatalf("missing key: %v %v", r, err)
	}
	if e = cacheOf(g2).entry(pinID(pin)); !e.nodes.absent["nobody"] || e.nodes.full {
		t.Fatalf("a missing key is remembered as absent without loading the table: %+v", e.nodes)
	}
	if r, err := Run(ctx, s, `query q() { match { $p: Person } return { count($p) as n } }`, "", nil); err != nil || rowsText(r) != "5" {
		t.Fatalf("scan: %v %v", r, err)
	}
	if e = cacheOf(g2).entry(pinID(pin)); !e.nodes.full || len(e.nodes.index()) != 5 {
		t.Fatalf("after a scan: %+v", e.nodes)
	}
}

// TestConcurrentColdQueries: many queries on one cold handle load the same
// table versions at once (point lookups racing full scans) and all agree
// with a serial run.
func TestConcurrentColdQueries(t *testing.T) {
	ctx := context.Background()
	g := newSocialGraph(t, mem.New())
	queries := []string{
		`query q() { match { $p: Person { handle: "alice" }  $p knows{1,3} $f } return { $f.handle, $f.age } }`,
		`query q() { match { $p: Person { handle: "bob" } } return { $p } }`,
		`query q() { match { $p: Person  $p worksAt $c } return { $c.slug, count($p) as n } }`,
		`query q() { match { $p: Person  not { $p worksAt $_ } } return { $p.handle } }`,
	}
	want := make([]string, len(queries))
	for i, q := range queries {
		r, err := Head(ctx, g, "main", q, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = rowsText(r)
	}
	for round := 0; round < 3; round++ {
		h, err := graph.Open(ctx, g.Store(), graph.OpenOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 32)
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				i := (w + round) % len(queries)
				r, err := Head(ctx, h, "main", queries[i], "", nil)
				if err != nil {
					errs <- err
					return
				}
				if got := rowsText(r); got != want[i] {
					errs <- fmt.Errorf("query %d: %q, want %q", i, got, want[i])
				}
			}(w)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	}
}

// gateStore holds the first read of a key containing match until release
// is closed, so a test can commit while a query is in the middle of
// reading its tables.
type gateStore struct {
	backend.StorageAdapter
	match   string
	once    sync.Once
	reached chan struct{}
	release chan struct{}
}

func (s *gateStore) hold(key string) {
	if strings.Contains(key, s.match) {
		s.once.Do(func() {
			close(s.reached)
			<-s.release
		})
	}
}

func (s *gateStore) Get(ctx context.Context, key string) ([]byte, backend.Attrs, error) {
	s.hold(key)
	return s.StorageAdapter.Get(ctx, key)
}

func (s *gateStore) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	s.hold(key)
	return s.StorageAdapter.GetRange(ctx, key, off, n)
}

// TestLongQueryIgnoresConcurrentCommit: a query is stopped halfway, after
// it captured its snapshot and while it reads the Knows table; two commits
// (new persons and edges, and a deleted edge) land on the branch; the
// query then finishes and answers from the state it captured.
func TestLongQueryIgnoresConcurrentCommit(t *testing.T) {
	ctx := context.Background()
	inner := mem.New()
	writer := newSocialGraph(t, inner)
	gs := &gateStore{StorageAdapter: inner, match: "edges/Knows/", reached: make(chan struct{}), release: make(chan struct{})}
	reader, err := graph.Open(ctx, gs, graph.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		r   *Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := Head(ctx, reader, "main", `query q() { match { $p: Person { handle: "alice" }  $p knows{1,2} $f } return { $f.handle } }`, "", nil)
		done <- result{r, err}
	}()
	<-gs.reached
	qAppend(t, writer, "main", `{"type":"Person","data":{"handle":"zed","name":"Zed"}}
{"edge":"Knows","from":"alice","to":"zed","data":{"id":"kz"}}
{"edge":"Knows","from":"bob","to":"zed","data":{"id":"kz2"}}`)
	qDelete(t, writer, "main", graph.EdgeTableKey("Knows"), "k4")
	close(gs.release)
	res := <-done
	if res.err != nil {
		t.Fatal(res.err)
	}
	if got := rowsText(res.r); got != "bob | carol | dave" {
		t.Fatalf("the running query saw the concurrent commits: %q", got)
	}
	after, err := Head(ctx, reader, "main", `query q() { match { $p: Person { handle: "alice" }  $p knows{1,2} $f } return { $f.handle } }`, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := rowsText(after); got != "bob | carol | zed" {
		t.Fatalf("the next query: %q, want bob | carol | zed", got)
	}
}

// TestEdgeIndexBuiltOnce: the CSR/CSC index of an edge table version is
// built once and shared by every later snapshot pinning that version; a
// commit to the edge table gives the new version its own index.
func TestEdgeIndexBuiltOnce(t *testing.T) {
	ctx := context.Background()
	g := newSocialGraph(t, mem.New())
	index := func() *edgeIndex {
		t.Helper()
		s, err := g.Snapshot(ctx, "main")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Run(ctx, s, `query q() { match { $p: Person { handle: "alice" }  $p knows $f } return { $f.handle } }`, "", nil); err != nil {
			t.Fatal(err)
		}
		pin, _ := s.Pin(graph.EdgeTableKey("Knows"))
		e := cacheOf(g).entry(pinID(pin))
		if e.edges == nil {
			t.Fatal("no index cached for the pinned Knows version")
		}
		return e.edges
	}
	first := index()
	if again := index(); again != first {
		t.Fatal("a repeated traversal rebuilt the index")
	}
	qAppend(t, g, "main", `{"type":"Topic","data":{"slug":"x","title":"X"}}`)
	if other := index(); other != first {
		t.Fatal("a commit to another table rebuilt the Knows index")
	}
	qAppend(t, g, "main", `{"edge":"Knows","from":"bob","to":"alice","data":{"id":"kx"}}`)
	if next := index(); next == first || len(next.src) != len(first.src)+1 {
		t.Fatal("a commit to Knows did not give the new version its own index")
	}
}
