package optimize_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend/fault"
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
	// One attempt: the compaction is published on top of the other
	// writer's commit, not undone and redone.
	if fired != 1 {
		t.Errorf("optimize prepared %d times, want 1 (its publish moves onto the new head)", fired)
	}
	commits, err := g.Commits(ctx, "main", 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(commits) != 2 || commits[0].ID != res.Commit.ID || commits[1].Actor != "other" || len(commits[0].Parents) != 1 || commits[0].Parents[0] != commits[1].ID {
		t.Errorf("history: %+v, want optimize's commit on top of the other writer's", commits)
	}
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

// TestOptimizeRebasedPublishCrashAtEveryWrite: with another writer's commit
// landing between optimize's table effects and its publish, a crash at
// (and after) every write optimize makes from then on (the rewritten
// intent, the publish, the intent's delete) recovers, on a fresh open, to
// the same answers with the other writer's row, and the next optimize
// compacts.
func TestOptimizeRebasedPublishCrashAtEveryWrite(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []string{"at", "after"} {
		for k := 1; ; k++ {
			inner := mem.New()
			inj := fault.New(inner)
			g := build(t, inj, 12)
			want := answers(t, g)
			other, err := graph.Open(ctx, inner, graph.OpenOptions{Actor: "other", Process: graph.NewProcess()})
			if err != nil {
				t.Fatal(err)
			}
			fired := false
			clear := graph.Failpoints.Set(g.ID(), graph.FailpointPostPhaseB, func() error {
				if !fired {
					fired = true
					mut(t, other, `mutation m() { insert Company { slug: "acme", name: "Acme" } }`, nil)
					inj.Reset()
					if mode == "at" {
						inj.CrashAtWrite(k)
					} else {
						inj.CrashAfterWrite(k)
					}
				}
				return nil
			})
			_, runErr := optimize.Run(ctx, g, optimize.Options{})
			clear()
			other.Close()
			crashed := inj.Crashed()
			writes := inj.Writes()
			inj.Heal()
			where := fmt.Sprintf("crash %s write %d after the other commit", mode, k)
			if !fired {
				t.Fatalf("%s: the other writer never ran", where)
			}
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
			r, err := query.Head(ctx, re, "main", `query q() { match { $c: Company } return { $c.slug } }`, "", nil)
			if err != nil || fmt.Sprint(r.Rows) != "[[acme]]" {
				t.Fatalf("%s: the other writer's row: %v, %v", where, r, err)
			}
			if _, err := optimize.Run(ctx, re, optimize.Options{}); err != nil {
				t.Fatalf("%s: optimize after recovery: %v", where, err)
			}
			if n, cov := fragments(t, re, graph.NodeTableKey("Person")); n != 1 || !cov {
				t.Fatalf("%s: Person after recovery + optimize: %d fragments, covered %v", where, n, cov)
			}
			re.Close()
			if !crashed || writes < k {
				t.Logf("crash %s: optimize makes %d writes after the other commit; every one crashed once", mode, k-1)
				break
			}
		}
	}
}
