package merge_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend/counter"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/merge"
)

// writes is the number of store writes since the counter's last reset.
func writes(c *counter.Counter) int {
	n := c.Snapshot()
	return n.Put + n.CondPut + n.Delete
}

// TestPreviewIsTheMergesVerdict: for each shape of merge, the preview
// (which writes nothing) reports the outcome, counts, changes and
// conflicts that the merge run right after it reaches.
func TestPreviewIsTheMergesVerdict(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name    string
		setup   func(t *testing.T, r *rig)
		outcome merge.Outcome
		counts  [3]int // inserted, updated, deleted
		changes []string
		kinds   []string // conflict kinds (a refused merge)
	}{
		{name: "fast-forward", setup: func(t *testing.T, r *rig) {
			r.mutate(t, "f", `mutation m() { insert Person { handle: "dee", name: "Dee" } }`)
		}, outcome: merge.FastForward, counts: [3]int{1, 0, 0}, changes: []string{"insert node Person dee"}},
		{name: "three-way", setup: func(t *testing.T, r *rig) {
			r.mutate(t, "f", `mutation m() { insert Person { handle: "dee", name: "Dee" } }`)
			r.mutate(t, "f", `mutation m() { update Person set { name: "Cyrus" } where handle = "cy" }`)
			r.mutate(t, "main", `mutation m() { update Person set { name: "Bobby" } where handle = "bob" }`)
		}, outcome: merge.Merged, counts: [3]int{1, 1, 0}, changes: []string{"update node Person cy", "insert node Person dee"}},
		{name: "delete", setup: func(t *testing.T, r *rig) {
			r.mutate(t, "f", `mutation m() { delete Knows where from = "ada" }`)
			r.mutate(t, "main", `mutation m() { update Person set { name: "Bobby" } where handle = "bob" }`)
		}, outcome: merge.Merged, counts: [3]int{0, 0, 1}, changes: []string{"delete edge Knows k1"}},
		{name: "up to date", setup: func(t *testing.T, r *rig) {
			r.mutate(t, "main", `mutation m() { update Person set { name: "Bobby" } where handle = "bob" }`)
		}, outcome: merge.AlreadyUpToDate},
		{name: "divergent update", setup: func(t *testing.T, r *rig) {
			r.mutate(t, "f", `mutation m() { update Person set { name: "A1" } where handle = "ada" }`)
			r.mutate(t, "main", `mutation m() { update Person set { name: "A2" } where handle = "ada" }`)
		}, outcome: merge.Merged, kinds: []string{"divergent_update Person ada"}},
		{name: "unique collision found by the evaluator", setup: func(t *testing.T, r *rig) {
			r.mutate(t, "f", `mutation m() { update Person set { email: "x@y" } where handle = "ada" }`)
			r.mutate(t, "main", `mutation m() { update Person set { email: "x@y" } where handle = "bob" }`)
		}, outcome: merge.Merged, counts: [3]int{0, 1, 0}, changes: []string{"update node Person ada"}, kinds: []string{"unique_violation Person "}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			r.branch(t, "f", "main")
			tc.setup(t, r)
			before := image(t, r.g)
			r.count.Reset()
			pv, err := merge.Preview(ctx, r.g, "f", "main", merge.PreviewOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if w := writes(r.count); w != 0 {
				t.Fatalf("the preview wrote %d objects", w)
			}
			if image(t, r.g) != before {
				t.Fatal("the preview changed the graph")
			}
			var got []string
			for _, c := range pv.Changes {
				got = append(got, fmt.Sprintf("%s %s %s %s", c.Op, c.EntityKind, c.TypeName, c.ID))
				if c.Op != merge.OpInsert && c.Before == nil || c.Op != merge.OpDelete && c.After == nil {
					t.Errorf("change %s lacks its before or after image: %+v", got[len(got)-1], c)
				}
			}
			var kinds []string
			for _, c := range pv.Conflicts {
				id := c.EntityID
				if c.Kind == merge.UniqueViolation {
					id = "" // the evaluator names whichever row it met second
				}
				kinds = append(kinds, fmt.Sprintf("%s %s %s", c.Kind, c.TypeName, id))
			}
			if pv.Outcome != tc.outcome || fmt.Sprint(got) != fmt.Sprint(tc.changes) || fmt.Sprint(kinds) != fmt.Sprint(tc.kinds) {
				t.Fatalf("preview: outcome %s, changes %v, conflicts %v; want %s, %v, %v", pv.Outcome, got, kinds, tc.outcome, tc.changes, tc.kinds)
			}
			if len(tc.kinds) == 0 && [3]int{pv.Inserted, pv.Updated, pv.Deleted} != tc.counts {
				t.Fatalf("preview counts %d/%d/%d, want %v", pv.Inserted, pv.Updated, pv.Deleted, tc.counts)
			}
			// The merge itself, now: the same verdict.
			res, err := merge.Run(ctx, r.g, "f", "main", merge.Options{})
			var mc *merge.MergeConflicts
			switch {
			case len(tc.kinds) > 0:
				if !errors.As(err, &mc) || fmt.Sprint(mc.Conflicts) != fmt.Sprint(pv.Conflicts) {
					t.Fatalf("merge: %v; the preview listed %v", err, pv.Conflicts)
				}
			case err != nil:
				t.Fatalf("merge after a clean preview: %v", err)
			case res.Outcome != pv.Outcome || res.Inserted != pv.Inserted || res.Updated != pv.Updated || res.Deleted != pv.Deleted || res.BaseCommit != pv.BaseCommit:
				t.Fatalf("merge %+v, preview %+v", *res, pv.Result)
			}
		})
	}
}

// TestPreviewLimitAndReadOnly: Limit caps the listed changes (counts stay
// whole), and a read-only handle previews (no write slot is taken).
func TestPreviewLimitAndReadOnly(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	r.branch(t, "f", "main")
	r.mutate(t, "f", `mutation m() { insert Person { handle: "dee", name: "Dee" } }`)
	r.mutate(t, "f", `mutation m() { insert Person { handle: "eve", name: "Eve" } }`)
	pv, err := merge.Preview(ctx, r.g, "f", "main", merge.PreviewOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(pv.Changes) != 1 || !pv.Truncated || pv.Inserted != 2 || pv.Changes[0].ID != "dee" {
		t.Fatalf("limited preview: %d changes (truncated %v), %d inserted", len(pv.Changes), pv.Truncated, pv.Inserted)
	}
	ro, err := graph.Open(ctx, r.count, graph.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	pv, err = merge.Preview(ctx, ro, "f", "main", merge.PreviewOptions{})
	if err != nil || pv.Outcome != merge.FastForward || pv.Inserted != 2 {
		t.Fatalf("preview on a read-only handle: %+v, %v", pv, err)
	}
	if _, err := merge.Preview(ctx, r.g, "nope", "main", merge.PreviewOptions{}); err == nil {
		t.Fatal("preview of an unknown branch succeeded")
	}
}

// TestAheadBehind counts the commits each side has that the other lacks,
// through forks and merges.
func TestAheadBehind(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	r.branch(t, "f", "main")
	div := func(a, b string, limit int) merge.Divergence {
		t.Helper()
		sa, err := r.g.Snapshot(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		sb, err := r.g.Snapshot(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		d, err := merge.AheadBehind(ctx, sa, sb, limit)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	want := func(what string, got merge.Divergence, ahead, behind int, capped bool) {
		t.Helper()
		if got != (merge.Divergence{Ahead: ahead, Behind: behind, Capped: capped}) {
			t.Fatalf("%s: %+v, want ahead %d behind %d capped %v", what, got, ahead, behind, capped)
		}
	}
	want("a fresh fork", div("f", "main", 0), 0, 0, false)
	r.mutate(t, "f", `mutation m() { insert Person { handle: "f1", name: "F" } }`)
	r.mutate(t, "f", `mutation m() { insert Person { handle: "f2", name: "F" } }`)
	for i := range 3 {
		r.mutate(t, "main", fmt.Sprintf(`mutation m() { insert Person { handle: "m%d", name: "M" } }`, i))
	}
	want("diverged", div("f", "main", 0), 2, 3, false)
	want("diverged, reversed", div("main", "f", 0), 3, 2, false)
	// Newest first: main's three commits come before f's two.
	want("capped", div("main", "f", 2), 2, 0, true)
	if _, err := merge.Run(ctx, r.g, "f", "main", merge.Options{}); err != nil {
		t.Fatal(err)
	}
	// main has f's two commits through the merge, plus its three and the
	// merge commit.
	want("merged", div("f", "main", 0), 0, 4, false)
	want("merged, reversed", div("main", "f", 0), 4, 0, false)
	r.mutate(t, "f", `mutation m() { insert Person { handle: "f3", name: "F" } }`)
	want("after the merge", div("f", "main", 0), 1, 4, false)
}

// TestAheadBehindCostFlatWithHistory: the walk reads the commits since the
// fork, not the history below it: the same request count over 5 and over
// 40 commits of main before the fork.
func TestAheadBehindCostFlatWithHistory(t *testing.T) {
	ctx := context.Background()
	cost := func(depth int) counter.Counts {
		r := newRig(t)
		for i := range depth {
			r.mutate(t, "main", fmt.Sprintf(`mutation m() { insert Person { handle: "h%d", name: "H" } }`, i))
		}
		r.branch(t, "f", "main")
		r.mutate(t, "f", `mutation m() { insert Person { handle: "f1", name: "F" } }`)
		r.mutate(t, "main", `mutation m() { insert Person { handle: "m1", name: "M" } }`)
		// A cold handle: nothing of the history is cached.
		g, err := graph.Open(ctx, r.count, graph.OpenOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		a, _ := g.Snapshot(ctx, "f")
		b, _ := g.Snapshot(ctx, "main")
		r.count.Reset()
		d, err := merge.AheadBehind(ctx, a, b, 0)
		if err != nil || d != (merge.Divergence{Ahead: 1, Behind: 1}) {
			t.Fatalf("depth %d: %+v %v", depth, d, err)
		}
		return r.count.Snapshot()
	}
	shallow, deep := cost(5), cost(40)
	if deep.Total != shallow.Total || deep.Total > 10 {
		t.Fatalf("requests of one ahead/behind: %d over 5 commits of history, %d over 40 (want equal, and at most 10)", shallow.Total, deep.Total)
	}
	t.Logf("ahead/behind of a branch one commit from its fork: %d requests (%d round trips), whatever the history below", deep.Total, deep.RoundTrips)
}
