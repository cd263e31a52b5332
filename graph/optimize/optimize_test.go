package optimize_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/fault"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/mutate"
	"github.com/omnigraph-go/omnigraph/graph/optimize"
	"github.com/omnigraph-go/omnigraph/graph/query"
	"github.com/omnigraph-go/omnigraph/lang/pg"
)

var probes = []string{
	`query q() { match { $p: Person } return { count($p) as n } }`,
	`query q() { match { $p: Person  $p.age >= 30 } return { $p.handle, $p.age } order { $p.handle } }`,
	`query q() { match { $p: Person { handle: "p0007" }  $p knows $f } return { $f.handle } order { $f.handle } }`,
	`query q() { match { $p: Person  not { $p knows $_ } } return { count($p) as n } }`,
}

func schema(t testing.TB) string {
	t.Helper()
	src, err := os.ReadFile("../../examples/social.pg")
	if err != nil {
		t.Fatal(err)
	}
	return string(src)
}

func mut(t testing.TB, g *graph.Graph, src string, params map[string]any) {
	t.Helper()
	if _, err := mutate.Query(context.Background(), g, src, "", mutate.Options{Params: params}); err != nil {
		t.Fatalf("%s: %v", src, err)
	}
}

// build makes a graph of n one-row commits (persons, knows edges, and a
// few deletes, so there are deletion vectors to fold).
func build(t testing.TB, store backend.StorageAdapter, n int) *graph.Graph {
	t.Helper()
	g, err := graph.Init(context.Background(), store, schema(t), graph.InitOptions{Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		mut(t, g, `mutation m($h: String, $a: I32) { insert Person { handle: $h, name: "P", age: $a } }`,
			map[string]any{"h": fmt.Sprintf("p%04d", i), "a": i % 60})
		if i > 0 && i%3 == 0 {
			mut(t, g, `mutation m($a: String, $b: String) { insert Knows { from: $a, to: $b } }`,
				map[string]any{"a": fmt.Sprintf("p%04d", i), "b": fmt.Sprintf("p%04d", i-1)})
		}
		if i%10 == 9 {
			mut(t, g, `mutation m($h: String) { delete Person where handle = $h }`, map[string]any{"h": fmt.Sprintf("p%04d", i-5)})
		}
	}
	return g
}

func answers(t testing.TB, g *graph.Graph) string {
	t.Helper()
	var out []string
	for _, src := range probes {
		r, err := query.Head(context.Background(), g, "main", src, "", nil)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		out = append(out, fmt.Sprint(r.Rows))
	}
	return strings.Join(out, "\n")
}

func fragments(t testing.TB, g *graph.Graph, key string) (int, bool) {
	t.Helper()
	s, err := g.Snapshot(context.Background(), "main")
	if err != nil {
		t.Fatal(err)
	}
	ds, err := s.OpenTable(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return len(ds.Manifest().Fragments), ds.KeyIndexCovers()
}

// TestOptimizeChangesNoAnswer pins the optimize contract: one commit
// compacts every table of the branch to at most one fragment (they are
// small) covered by the key index, every query answer is unchanged (also on
// a fresh handle), and a second run is a no-op.
func TestOptimizeChangesNoAnswer(t *testing.T) {
	ctx := context.Background()
	store := mem.New()
	g := build(t, store, 40)
	before := answers(t, g)
	if n, _ := fragments(t, g, graph.NodeTableKey("Person")); n < 20 {
		t.Fatalf("Person has %d fragments before optimize; the fixture should leave many", n)
	}
	res, err := optimize.Run(ctx, g, optimize.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.NoOp || res.Commit == nil || len(res.Tables) < 2 {
		t.Fatalf("optimize result %+v: want one commit over Person and Knows", res)
	}
	for _, k := range []string{graph.NodeTableKey("Person"), graph.EdgeTableKey("Knows")} {
		if n, cov := fragments(t, g, k); n != 1 || !cov {
			t.Fatalf("%s after optimize: %d fragments, index covers=%v; want 1, true", k, n, cov)
		}
	}
	if after := answers(t, g); after != before {
		t.Fatalf("optimize changed answers:\nbefore %s\nafter  %s", before, after)
	}
	fresh, err := graph.Open(ctx, store, graph.OpenOptions{Process: graph.NewProcess()})
	if err != nil {
		t.Fatal(err)
	}
	if after := answers(t, fresh); after != before {
		t.Fatalf("optimize changed answers on a fresh handle:\nbefore %s\nafter  %s", before, after)
	}
	again, err := optimize.Run(ctx, g, optimize.Options{})
	if err != nil || !again.NoOp {
		t.Fatalf("second optimize: %+v, %v; want a no-op", again, err)
	}
	if !adjacencyCovers(t, g) {
		t.Fatal("optimize left the Knows table without a traversal index covering it")
	}
}

func adjacencyCovers(t testing.TB, g *graph.Graph) bool {
	t.Helper()
	s, err := g.Snapshot(context.Background(), "main")
	if err != nil {
		t.Fatal(err)
	}
	ds, err := s.OpenTable(context.Background(), graph.EdgeTableKey("Knows"))
	if err != nil {
		t.Fatal(err)
	}
	return ds.AdjacencyCovers(pg.ColSrc, pg.ColDst)
}

// TestOptimizeBuildsTraversalIndex: an edge table that is compact but has
// no traversal index covering it (a small write since the last optimize)
// is work for optimize: it builds the index without rewriting the
// fragment, and answers do not change.
func TestOptimizeBuildsTraversalIndex(t *testing.T) {
	ctx := context.Background()
	g := build(t, mem.New(), 12)
	if _, err := optimize.Run(ctx, g, optimize.Options{}); err != nil {
		t.Fatal(err)
	}
	mut(t, g, `mutation m() { insert Knows { from: "p0001", to: "p0011" } }`, nil)
	if adjacencyCovers(t, g) {
		t.Fatal("a write after optimize left the index covering the table; the test is vacuous")
	}
	before := answers(t, g)
	res, err := optimize.Run(ctx, g, optimize.Options{Tables: []string{graph.EdgeTableKey("Knows")}, MinSmallFragments: 100})
	if err != nil || res.NoOp {
		t.Fatalf("optimize with a stale traversal index: %+v %v; want a commit", res, err)
	}
	if !adjacencyCovers(t, g) {
		t.Fatal("optimize did not rebuild the traversal index")
	}
	if after := answers(t, g); after != before {
		t.Fatalf("answers changed:\nbefore %s\nafter  %s", before, after)
	}
}

// TestOptimizeCrashAtEveryWrite pins crash safety: the store crashes at
// (and, separately, right after) every write optimize makes; a fresh
// process then opens the graph read-write (the recovery sweep runs), and
// the graph gives the same answers as before, takes a write, and a new
// optimize completes with the same answers again.
func TestOptimizeCrashAtEveryWrite(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []string{"at", "after"} {
		for k := 1; ; k++ {
			inner := mem.New()
			inj := fault.New(inner)
			g := build(t, inj, 12)
			want := answers(t, g)
			inj.Reset()
			if mode == "at" {
				inj.CrashAtWrite(k)
			} else {
				inj.CrashAfterWrite(k)
			}
			_, runErr := optimize.Run(ctx, g, optimize.Options{})
			crashed := inj.Crashed()
			writes := inj.Writes()
			inj.Heal()
			where := fmt.Sprintf("crash %s write %d", mode, k)
			if !crashed && runErr != nil {
				t.Fatalf("%s: optimize failed without a crash: %v", where, runErr)
			}
			re, err := graph.Open(ctx, inner, graph.OpenOptions{Process: graph.NewProcess()})
			if err != nil {
				t.Fatalf("%s: reopen: %v", where, err)
			}
			if got := answers(t, re); got != want {
				t.Fatalf("%s: answers changed:\nbefore %s\nafter  %s", where, want, got)
			}
			mut(t, re, `mutation m() { insert Person { handle: "after", name: "A" } }`, nil)
			if _, err := optimize.Run(ctx, re, optimize.Options{}); err != nil {
				t.Fatalf("%s: optimize after recovery: %v", where, err)
			}
			if n, cov := fragments(t, re, graph.NodeTableKey("Person")); n != 1 || !cov {
				t.Fatalf("%s: Person after recovery + optimize: %d fragments, covered %v", where, n, cov)
			}
			if !crashed || writes < k {
				t.Logf("crash %s: optimize makes %d writes; every one crashed once", mode, k-1)
				break
			}
		}
	}
}

// TestAutoOptimizeCrashAtEveryWrite pins issue 14's crash rule for the
// automatic run: a crash at (and after) every storage write of optimize.Auto
// — the compaction a writer runs after its own acknowledged write — leaves,
// after a fresh reopen (new process scope: no in-memory state survives),
// the same answers, the user's write included; and the next write plus
// automatic run compacts the table.
func TestAutoOptimizeCrashAtEveryWrite(t *testing.T) {
	ctx := context.Background()
	const threshold = 4
	for _, mode := range []string{"at", "after"} {
		for k := 1; ; k++ {
			inner := mem.New()
			inj := fault.New(inner)
			g := build(t, inj, 6)
			// The user's write that makes the table pass the threshold.
			mut(t, g, `mutation m() { insert Person { handle: "trigger", name: "T" } }`, nil)
			want := answers(t, g)
			inj.Reset()
			if mode == "at" {
				inj.CrashAtWrite(k)
			} else {
				inj.CrashAfterWrite(k)
			}
			res, runErr := optimize.Auto(ctx, g, optimize.AutoOptions{Threshold: threshold})
			crashed := inj.Crashed()
			writes := inj.Writes()
			inj.Heal()
			where := fmt.Sprintf("crash %s write %d", mode, k)
			if !crashed && (runErr != nil || res == nil) {
				t.Fatalf("%s: the automatic run did not compact without a crash: %v, %v", where, res, runErr)
			}
			re, err := graph.Open(ctx, inner, graph.OpenOptions{Process: graph.NewProcess()})
			if err != nil {
				t.Fatalf("%s: reopen: %v", where, err)
			}
			if got := answers(t, re); got != want {
				t.Fatalf("%s: answers changed:\nbefore %s\nafter  %s", where, want, got)
			}
			mut(t, re, `mutation m() { insert Person { handle: "after", name: "A" } }`, nil)
			if _, err := optimize.Auto(ctx, re, optimize.AutoOptions{Threshold: threshold}); err != nil {
				t.Fatalf("%s: automatic run after recovery: %v", where, err)
			}
			if n, _ := fragments(t, re, graph.NodeTableKey("Person")); n > threshold {
				t.Fatalf("%s: Person after recovery + automatic run: %d fragments, want at most %d", where, n, threshold)
			}
			if !crashed || writes < k {
				t.Logf("crash %s: the automatic run makes %d writes; every one crashed once", mode, k-1)
				break
			}
		}
	}
}
