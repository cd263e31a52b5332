package merge_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend/counter"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/merge"
)

// pinOnly publishes one commit on branch that re-pins a table at its
// version: a real commit through the pipeline with no table effect.
func pinOnly(t testing.TB, g *graph.Graph, branch string) {
	t.Helper()
	ctx := context.Background()
	w, err := g.BeginWrite(ctx, branch, graph.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.SetPin(w.Snapshot().Tables()[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestMergedHistoryCostIsFlatWithDepth: on a graph whose main has a
// history of depth commits and then five short-lived branches, each
// merged and deleted, the requests of `commit list --limit 10` through
// both parents, and of deleting a branch, merged or not (the delete walks
// the live branches' newer history to keep what main's history reaches),
// are the same at depth 120 and depth 1,200 (both past the first page of
// 100 keys the branch listing reads): merges record where their second
// parent was published, and the delete's walk stops at the branch's fork
// point on main.
func TestMergedHistoryCostIsFlatWithDepth(t *testing.T) {
	ctx := context.Background()
	measure := func(depth int) (logReq, deleteReq, scratchReq counter.Counts, listed []string) {
		c := counter.New(mem.New())
		g, err := graph.Init(ctx, c, schema, graph.InitOptions{Actor: "t"})
		if err != nil {
			t.Fatal(err)
		}
		for range depth {
			pinOnly(t, g, "main")
		}
		if _, err := g.CreateBranch(ctx, "scratch", "main"); err != nil {
			t.Fatal(err)
		}
		pinOnly(t, g, "scratch")
		for i := range 5 {
			b := fmt.Sprintf("req-%d", i)
			if _, err := g.CreateBranch(ctx, b, "main"); err != nil {
				t.Fatal(err)
			}
			pinOnly(t, g, b)
			pinOnly(t, g, b)
			if _, err := merge.Run(ctx, g, b, "main", merge.Options{}); err != nil {
				t.Fatal(err)
			}
			if i < 4 {
				if err := g.DeleteBranch(ctx, b); err != nil {
					t.Fatal(err)
				}
			}
		}
		c.Reset()
		if err := g.DeleteBranch(ctx, "req-4"); err != nil {
			t.Fatal(err)
		}
		deleteReq = c.Snapshot()
		c.Reset()
		if err := g.DeleteBranch(ctx, "scratch"); err != nil {
			t.Fatal(err)
		}
		scratchReq = c.Snapshot()
		ro, err := graph.Open(ctx, c, graph.OpenOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer ro.Close()
		c.Reset()
		log, err := ro.Log(ctx, "main", graph.LogOptions{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		logReq = c.Snapshot()
		for _, ci := range log {
			listed = append(listed, ci.Branch)
		}
		return logReq, deleteReq, scratchReq, listed
	}
	l1, d1, s1, b1 := measure(120)
	l2, d2, s2, b2 := measure(1200)
	t.Logf("delete of an unmerged branch: %+v at depth 120, %+v at depth 1200", s1, s2)
	t.Logf("commit list --limit 10: %+v at depth 120, %+v at depth 1200", l1, l2)
	t.Logf("delete of a merged branch: %+v at depth 120, %+v at depth 1200", d1, d2)
	if fmt.Sprint(b1) != fmt.Sprint(b2) || len(b1) != 10 || b1[1] != "req-4" {
		t.Fatalf("listed branches %v at depth 120, %v at depth 1200; want the same ten, the last merge's commits second", b1, b2)
	}
	if l1.Total != l2.Total || d1.Total != d2.Total || s1.Total != s2.Total {
		t.Fatalf("requests grow with depth: commit list %d -> %d, delete of a merged branch %d -> %d, of an unmerged one %d -> %d",
			l1.Total, l2.Total, d1.Total, d2.Total, s1.Total, s2.Total)
	}
}
