package optimize_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/load"
	"github.com/omnigraph-go/omnigraph/graph/merge"
	"github.com/omnigraph-go/omnigraph/graph/mutate"
	"github.com/omnigraph-go/omnigraph/graph/optimize"
	"github.com/omnigraph-go/omnigraph/graph/query"
)

// strictWrites are the writes a moved branch used to refuse: each returns
// the commit it made.
var strictWrites = []struct {
	name string
	// prepare runs before the interleaving is armed (a branch to merge).
	prepare func(t *testing.T, g *graph.Graph)
	write   func(ctx context.Context, g *graph.Graph, head string) (*graph.CommitInfo, error)
	// rows is a query and its answer once the write landed exactly once.
	rows, want string
}{
	{
		name: "update",
		write: func(ctx context.Context, g *graph.Graph, _ string) (*graph.CommitInfo, error) {
			r, err := mutate.Query(ctx, g, `mutation m() { update Person set { age: 77 } where handle = "p0003" }`, "", mutate.Options{})
			return commitOf(r), err
		},
		rows: `query q() { match { $p: Person  $p.age = 77 } return { $p.handle } }`, want: "[[p0003]]",
	},
	{
		name: "delete",
		write: func(ctx context.Context, g *graph.Graph, _ string) (*graph.CommitInfo, error) {
			r, err := mutate.Query(ctx, g, `mutation m() { delete Person where handle = "p0002" }`, "", mutate.Options{})
			return commitOf(r), err
		},
		rows: `query q() { match { $p: Person { handle: "p0002" } } return { $p.handle } }`, want: "[]",
	},
	{
		name: "conditional insert",
		write: func(ctx context.Context, g *graph.Graph, head string) (*graph.CommitInfo, error) {
			r, err := mutate.Query(ctx, g, `mutation m() { insert Person { handle: "new", name: "N" } }`, "", mutate.Options{IfCommit: head})
			return commitOf(r), err
		},
		rows: `query q() { match { $p: Person { handle: "new" } } return { $p.name } }`, want: "[[N]]",
	},
	{
		name: "load overwrite",
		write: func(ctx context.Context, g *graph.Graph, _ string) (*graph.CommitInfo, error) {
			r, err := load.Run(ctx, g, strings.NewReader(`{"type":"Company","data":{"slug":"c9","name":"Nine"}}`+"\n"), load.Options{Mode: load.Overwrite})
			if err != nil {
				return nil, err
			}
			return r.Commit, nil
		},
		rows: `query q() { match { $c: Company } return { $c.slug } order { $c.slug } }`, want: "[[c9]]",
	},
	{
		name: "merge",
		prepare: func(t *testing.T, g *graph.Graph) {
			if _, err := g.CreateBranch(context.Background(), "review", "main"); err != nil {
				t.Fatal(err)
			}
			if _, err := mutate.Query(context.Background(), g, `mutation m() { insert Person { handle: "rev", name: "R" } }`, "", mutate.Options{Branch: "review"}); err != nil {
				t.Fatal(err)
			}
			mut(t, g, `mutation m() { insert Person { handle: "onmain", name: "M" } }`, nil)
		},
		write: func(ctx context.Context, g *graph.Graph, _ string) (*graph.CommitInfo, error) {
			r, err := merge.Run(ctx, g, "review", "main", merge.Options{})
			if err != nil {
				return nil, err
			}
			return r.Commit, nil
		},
		rows: `query q() { match { $p: Person  $p.name = "R" } return { $p.handle } }`, want: "[[rev]]",
	},
}

func commitOf(r *mutate.Result) *graph.CommitInfo {
	if r == nil {
		return nil
	}
	return r.Commit
}

// yieldGraph is a graph whose Person and Company tables hold enough
// small fragments for an automatic compaction to have work, after
// prepare (when set); before is main's head then.
func yieldGraph(t *testing.T, prepare func(*testing.T, *graph.Graph)) (g *graph.Graph, before *graph.Snapshot) {
	g = build(t, mem.New(), 8)
	for i := range 3 {
		mut(t, g, `mutation m($s: String) { insert Company { slug: $s, name: "C" } }`, map[string]any{"s": fmt.Sprintf("c%d", i)})
	}
	if prepare != nil {
		prepare(t, g)
	}
	before, err := g.Snapshot(context.Background(), "main")
	if err != nil {
		t.Fatal(err)
	}
	return g, before
}

// interleave arms the pre-commit failpoint of g so that the first write
// to reach it (the write under test: nothing else writes) first lets
// between(ctx) write, then goes on. Later hits (between's own write, the
// write's next attempts) pass. It returns how many times the failpoint
// was reached.
func interleave(t *testing.T, g *graph.Graph, between func(ctx context.Context) error) *atomic.Int32 {
	var hits atomic.Int32
	clear := graph.Failpoints.Set(g.ID(), graph.FailpointPreCommit, func() error {
		if hits.Add(1) == 1 {
			if err := between(context.Background()); err != nil {
				t.Errorf("the interleaved write: %v", err)
			}
		}
		return nil
	})
	t.Cleanup(clear)
	return &hits
}

// TestWritesPrepareAgainOverACompaction: an automatic compaction
// (optimize.Auto, as the server runs after every write) that publishes
// between a strict write's prepare and its publish does not refuse the
// write: only a maintenance commit moved the branch, so the write
// prepares again on top of it and lands once (on main it was
// read_set_changed, 409 through the server). Checked for an update, a
// delete, a conditional write (its condition holds across a compaction),
// a load --mode overwrite and a three-way merge.
func TestWritesPrepareAgainOverACompaction(t *testing.T) {
	ctx := context.Background()
	for _, tc := range strictWrites {
		t.Run(tc.name, func(t *testing.T) {
			g, before := yieldGraph(t, tc.prepare)
			var compaction *graph.CommitInfo
			hits := interleave(t, g, func(ctx context.Context) error {
				res, err := optimize.Auto(ctx, g, optimize.AutoOptions{Branch: "main", Threshold: 2})
				if err == nil && (res == nil || res.Commit == nil) {
					err = errors.New("the compaction had nothing to do")
				}
				if err == nil {
					compaction = res.Commit
				}
				return err
			})
			c, err := tc.write(ctx, g, before.CommitID())
			if err != nil {
				t.Fatalf("%s with a compaction between its prepare and its publish: %v", tc.name, err)
			}
			if compaction == nil || hits.Load() < 3 {
				t.Fatalf("the compaction did not land between the write's prepare and its publish (%d failpoint hits)", hits.Load())
			}
			if c == nil || len(c.Parents) == 0 || c.Parents[0] != compaction.ID {
				t.Fatalf("the write's commit %+v does not follow the compaction %s", c, compaction.ID)
			}
			r, err := query.Head(ctx, g, "main", tc.rows, "", nil)
			if err != nil || fmt.Sprint(r.Rows) != tc.want {
				t.Fatalf("after the write: %v, %v; want %s", r, err, tc.want)
			}
			commits, err := g.Commits(ctx, "main", 3)
			if err != nil || len(commits) < 2 || commits[0].ID != c.ID || commits[1].ID != compaction.ID {
				t.Fatalf("history: %+v, %v; want the write once, on top of the compaction", commits, err)
			}
		})
	}
}

// TestStrictWritesStillRefuseARealChange: the same interleaving with a
// data commit (another process's insert) instead of a compaction still
// refuses every strict write (read_set_changed; a conditional write's
// precondition fails) and writes nothing of it.
func TestStrictWritesStillRefuseARealChange(t *testing.T) {
	ctx := context.Background()
	for _, tc := range strictWrites {
		t.Run(tc.name, func(t *testing.T) {
			g, before := yieldGraph(t, tc.prepare)
			// The other client is another process: a write of this one
			// queues behind the write under test (graph/queue.go).
			other, err := graph.Open(ctx, g.Store(), graph.OpenOptions{Process: graph.NewProcess(), Actor: "other"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { other.Close() })
			interleave(t, g, func(ctx context.Context) error {
				_, err := mutate.Query(ctx, other, `mutation m() { insert Topic { slug: "other", title: "T" } }`, "", mutate.Options{})
				return err
			})
			_, err = tc.write(ctx, g, before.CommitID())
			var rs *graph.ReadSetChanged
			switch {
			case tc.name == "conditional insert":
				if !errors.Is(err, graph.ErrPreconditionFailed) {
					t.Fatalf("conditional write over a data change: %v, want a failed precondition", err)
				}
			case !errors.As(err, &rs) || rs.Maintenance || graph.IsRetryable(err):
				t.Fatalf("%s over a data change: %v, want a non-retryable read_set_changed", tc.name, err)
			}
			if r, err := query.Head(ctx, g, "main", tc.rows, "", nil); err == nil && fmt.Sprint(r.Rows) == tc.want {
				t.Fatalf("the refused %s landed: %v", tc.name, r.Rows)
			}
			commits, err := g.Commits(ctx, "main", 1)
			if err != nil || commits[0].Actor != "other" {
				t.Fatalf("head after the refusal: %+v, %v", commits, err)
			}
			if r, _ := query.Head(ctx, g, "main", `query q() { match { $t: Topic } return { $t.slug } }`, "", nil); fmt.Sprint(r.Rows) != "[[other]]" {
				t.Fatalf("the other client's write: %v", r.Rows)
			}
		})
	}
}
