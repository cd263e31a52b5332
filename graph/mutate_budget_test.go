package graph_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend/counter"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/mutate"
	"github.com/omnigraph-go/omnigraph/lang/gq"
)

// insertRig is a graph with a history of depth commits on main (each a
// one-row insert of Person) and a warm handle with a compiled one-row
// insert.
type insertRig struct {
	*wrig
	plan *gq.Plan
}

func newInsertRig(t testing.TB, depth int) *insertRig {
	t.Helper()
	ctx := context.Background()
	r := &insertRig{wrig: newWRig(t)}
	cat, err := r.g.Schema(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	prog, err := gq.Compile(`mutation add($h: String) { insert Person { handle: $h, name: "n" } }`, cat)
	if err != nil {
		t.Fatal(err)
	}
	r.plan, _ = prog.Plan("")
	// History is built fast: a few real inserts, then pointer-only commits
	// (each a manifest version like any other) up to depth.
	for i := 1; i < depth; i++ { // Init made commit 1
		if i <= 5 {
			r.insert(t, fmt.Sprintf("d%05d", i))
			continue
		}
		w, err := r.g.BeginWrite(ctx, "main", graph.WriteOptions{})
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
	if n := r.commits(t, "main"); n != depth {
		t.Fatalf("history depth %d, want %d", n, depth)
	}
	return r
}

func (r *insertRig) insert(t testing.TB, handle string) {
	t.Helper()
	res, err := mutate.Run(context.Background(), r.g, r.plan, mutate.Options{Params: map[string]any{"h": handle}})
	if err != nil || res.Commit == nil {
		t.Fatalf("insert %s: %+v %v", handle, res, err)
	}
}

// measureInsert counts one one-row insert on the warm handle. Requests
// take latency each, so that requests sent together overlap and the
// counter's round-trip depth is exact.
func (r *insertRig) measureInsert(t testing.TB, handle string, latency time.Duration) counter.Counts {
	t.Helper()
	r.fault.Latency(latency)
	defer r.fault.Latency(0)
	r.count.Reset()
	r.insert(t, handle)
	return r.count.Snapshot()
}

func describeCounts(c counter.Counts) string {
	return fmt.Sprintf("%d requests (list %d, get %d, head %d, put %d, cond_put %d, delete %d) in %d round trips",
		c.Total, c.List, c.Get, c.Head, c.Put, c.CondPut, c.Delete, c.RoundTrips)
}

// TestOneRowInsertBudget: a one-row insert on main through a warm handle
// costs at most 8 storage requests in at most 5 serial round trips, and
// exactly the same at history depth 10 and 1,000.
func TestOneRowInsertBudget(t *testing.T) {
	const maxRequests, maxRoundTrips = 8, 5
	var got []counter.Counts
	for _, depth := range []int{10, 1000} {
		r := newInsertRig(t, depth)
		r.insert(t, "w-warm") // the handle has read the head and the schema
		c := r.measureInsert(t, "x-new", 25*time.Millisecond)
		t.Logf("depth %d: %s", depth, describeCounts(c))
		if c.Total > maxRequests {
			t.Errorf("depth %d: %d requests, budget %d: %s", depth, c.Total, maxRequests, describeCounts(c))
		}
		if c.RoundTrips > maxRoundTrips {
			t.Errorf("depth %d: %d round trips, budget %d: %s", depth, c.RoundTrips, maxRoundTrips, describeCounts(c))
		}
		got = append(got, c)
	}
	if got[0] != got[1] {
		t.Errorf("cost depends on history depth:\n  10:    %s\n  1000:  %s", describeCounts(got[0]), describeCounts(got[1]))
	}
}
