package graph_test

import (
	"context"
	"fmt"
	"math/bits"
	"reflect"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend/counter"
)

// TestCommitListAndShowCostIndependentOfDepth pins issue 14's rule that
// `commit list --limit N` costs O(N) requests and `commit show` O(log
// depth), not O(history): on real one-row table commits, listing 20
// commits costs exactly the same at depth 10 and 1,000, and finding a
// commit by id reads about log2(depth) versions.
func TestCommitListAndShowCostIndependentOfDepth(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 1,000 real commits")
	}
	ctx := context.Background()
	const limit = 9
	var lists []counter.Counts
	for _, depth := range []int{10, 1000} {
		r := newInsertRig(t, 6) // 5 real inserts
		for i := 6; i < depth; i++ {
			r.insert(t, fmt.Sprintf("h%05d", i))
		}
		all, err := r.g.Commits(ctx, "main", 0)
		if err != nil || len(all) != depth {
			t.Fatalf("depth %d: %d commits, %v", depth, len(all), err)
		}

		r.count.Reset()
		got, err := r.g.Commits(ctx, "main", limit)
		c := r.count.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, all[:limit]) {
			t.Fatalf("depth %d: limited list differs from the head of the full list", depth)
		}
		t.Logf("depth %d: commit list --limit %d: %s", depth, limit, describeCounts(c))
		if c.Total > limit+2 {
			t.Errorf("depth %d: list of %d cost %s, budget %d requests", depth, limit, describeCounts(c), limit+2)
		}
		lists = append(lists, c)

		// The oldest commit after Init, one in the middle, the newest.
		for _, want := range []int{depth - 2, depth / 2, 0} {
			id := all[want].ID
			r.count.Reset()
			ci, err := r.g.Commit(ctx, id)
			c := r.count.Snapshot()
			if err != nil {
				t.Fatalf("depth %d: show %s: %v", depth, id, err)
			}
			if !reflect.DeepEqual(ci, all[want]) {
				t.Fatalf("depth %d: show returned %+v, want %+v", depth, ci, all[want])
			}
			budget := 2 + 2*bits.Len(uint(depth)) // one List of heads, a binary search, the id's millisecond
			t.Logf("depth %d: commit show (#%d): %s (budget %d)", depth, want, describeCounts(c), budget)
			if c.Total > budget {
				t.Errorf("depth %d: commit show cost %s, budget %d", depth, describeCounts(c), budget)
			}
		}
	}
	// Requests are exact; round trips are measured from overlapping request
	// windows, so they get the same depth-independent bound as requests
	// rather than an equality that depends on scheduling.
	if lists[0].Total != lists[1].Total || lists[0].RoundTrips > limit+2 || lists[1].RoundTrips > limit+2 {
		t.Errorf("commit list cost depends on depth:\n  10:   %s\n  1000: %s", describeCounts(lists[0]), describeCounts(lists[1]))
	}
}
