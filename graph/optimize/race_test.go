package optimize_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/optimize"
	"github.com/omnigraph-go/omnigraph/graph/query"
)

// TestOptimizePublishKeepsAConcurrentWritersPointer: another writer (a
// handle in another process scope, so the gates do not order it) commits a
// row to a table optimize does not touch after optimize's table effects
// and before its publish. Optimize must still land, the writer's pointer
// must not be rolled back by it, and every answer holds both writes.
func TestOptimizePublishKeepsAConcurrentWritersPointer(t *testing.T) {
	ctx := context.Background()
	store := mem.New()
	g := build(t, store, 30)
	other, err := graph.Open(ctx, store, graph.OpenOptions{Actor: "other", Process: graph.NewProcess()})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	fired := 0
	clear := graph.Failpoints.Set(g.ID(), graph.FailpointPostPhaseB, func() error {
		if fired == 0 {
			mut(t, other, `mutation m() { insert Company { slug: "acme", name: "Acme" } }`, nil)
		}
		fired++
		return nil
	})
	defer clear()
	res, err := optimize.Run(ctx, g, optimize.Options{})
	if err != nil {
		t.Fatalf("optimize: %v", err)
	}
	clear()
	if fired == 0 || res.NoOp {
		t.Fatalf("the concurrent write did not run between effects and publish (fired %d, no-op %v)", fired, res.NoOp)
	}
	t.Logf("optimize reached its publish %d times; result %+v", fired, res.Tables)
	fresh, err := graph.Open(ctx, store, graph.OpenOptions{ReadOnly: true, Process: graph.NewProcess()})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	for _, q := range []struct{ src, want string }{
		{`query q() { match { $c: Company } return { $c.slug } }`, "[[acme]]"},
		{`query q() { match { $p: Person } return { count($p) as n } }`, fmt.Sprint(countPeople(t, g))},
	} {
		r, err := query.Head(ctx, fresh, "main", q.src, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(r.Rows); got != q.want {
			t.Errorf("%s: %s, want %s", q.src, got, q.want)
		}
	}
	snap, err := fresh.Snapshot(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	ds, err := snap.OpenTable(ctx, graph.NodeTableKey("Person"))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(ds.Manifest().Fragments); n != 1 {
		t.Errorf("Person at the head: %d fragments, want the compacted 1", n)
	}
}

func countPeople(t *testing.T, g *graph.Graph) string {
	t.Helper()
	r, err := query.Head(context.Background(), g, "main", `query q() { match { $p: Person } return { count($p) as n } }`, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(r.Rows)
}
