package graph_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/counter"
	"github.com/omnigraph-go/omnigraph/backend/fault"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/manifest"
)

// budget is what one operation cost.
type budget struct {
	total, rt, list, get, condPut, put int
}

func costOf(c counter.Counts) budget {
	return budget{total: c.Total, rt: c.RoundTrips, list: c.List, get: c.Get, condPut: c.CondPut, put: c.Put}
}

func (b budget) String() string {
	return fmt.Sprintf("%d requests (%d lists, %d gets, %d conditional puts, %d puts) in %d round trips", b.total, b.list, b.get, b.condPut, b.put, b.rt)
}

// TestRequestBudgets measures, with the counting wrapper, the operations of
// the architecture's cost table at history depth 10 and 1,000, and asserts
// each stays within budget and costs exactly the same at both depths.
func TestRequestBudgets(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 1,000-commit history")
	}
	type costs struct{ openRead, openReadNamed, create, createCold, publish, probeRead budget }
	measure := func(t *testing.T, depth int) costs {
		ctx := context.Background()
		r := newRig(t)
		for i := 1; i < depth; i++ { // Init made commit 1
			pinCommit(t, r.g, "main")
		}
		if _, err := r.g.CreateBranch(ctx, "deep", ""); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < depth; i++ {
			pinCommit(t, r.g, "deep")
		}
		var c costs
		// Requests take a little time, so that requests sent together
		// overlap and the counter's round-trip depth is exact.
		r.fault.Latency(20 * time.Millisecond)
		defer r.fault.Latency(0)

		// Open + read the head of a branch.
		r.count.Reset()
		g, err := graph.Open(ctx, r.count, graph.OpenOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.Snapshot(ctx, "main"); err != nil {
			t.Fatal(err)
		}
		c.openRead = costOf(r.count.Snapshot())
		r.count.Reset()
		g2, err := graph.Open(ctx, r.count, graph.OpenOptions{ReadOnly: true, Branch: "deep"})
		if err != nil {
			t.Fatal(err)
		}
		if s, err := g2.Snapshot(ctx, "deep"); err != nil || s.Version() != uint64(depth+1) {
			t.Fatalf("deep head: %v %v", s, err)
		}
		c.openReadNamed = costOf(r.count.Snapshot())

		// A read of an unchanged branch on a warm handle.
		r.count.Reset()
		if _, err := g.Snapshot(ctx, "main"); err != nil {
			t.Fatal(err)
		}
		c.probeRead = costOf(r.count.Snapshot())

		// Branch create on a freshly opened handle (Open not counted), and
		// on a warm handle whose main head must be re-probed.
		h := r.open(t, graph.OpenOptions{})
		r.count.Reset()
		if _, err := h.CreateBranch(ctx, "fresh", ""); err != nil {
			t.Fatal(err)
		}
		c.create = costOf(r.count.Snapshot())
		r.count.Reset()
		if _, err := h.CreateBranch(ctx, "from-deep", "deep"); err != nil {
			t.Fatal(err)
		}
		c.createCold = costOf(r.count.Snapshot())

		// Commit publish through the pipeline on a warm handle.
		pinCommit(t, h, "main")
		r.count.Reset()
		pinCommit(t, h, "main")
		c.publish = costOf(r.count.Snapshot())
		return c
	}
	shallow := measure(t, 10)
	deep := measure(t, 1000)
	t.Logf("depth 10:   %+v", shallow)
	t.Logf("depth 1000: %+v", deep)
	if shallow != deep {
		t.Fatalf("costs differ with history depth:\n  10:   %+v\n  1000: %+v", shallow, deep)
	}
	checks := []struct {
		name        string
		got         budget
		maxRequests int
		maxRT       int
	}{
		{"open + read main head", deep.openRead, 2, 2},
		{"open + read a named branch head", deep.openReadNamed, 2, 2},
		{"read an unchanged branch (warm)", deep.probeRead, 1, 1},
		{"branch create", deep.create, 4, 3},
		// From a branch other than main: plus the probe of the source after
		// the publish that fences a racing delete of it (checkSourceSurvived).
		{"branch create from an uncached branch", deep.createCold, 5, 4},
	}
	for _, ck := range checks {
		if ck.got.total > ck.maxRequests || ck.got.rt > ck.maxRT {
			t.Errorf("%s: %s; budget %d requests, %d round trips", ck.name, ck.got, ck.maxRequests, ck.maxRT)
		}
	}
	if deep.probeRead.get != 0 {
		t.Errorf("a warm read of an unchanged branch made %d GETs", deep.probeRead.get)
	}
	if deep.publish.condPut != 1 || deep.publish.put != 0 || deep.publish.get != 0 {
		t.Errorf("commit publish: %s; want exactly one conditional PUT and no GET", deep.publish)
	}
}

func TestStrictAndRetryableConflicts(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	a, b := r.open(t, graph.OpenOptions{}), r.open(t, graph.OpenOptions{})
	for _, strict := range []bool{true, false} {
		t.Run(fmt.Sprintf("strict=%v", strict), func(t *testing.T) {
			w, err := a.BeginWrite(ctx, "main", graph.WriteOptions{Strict: strict})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.SetPin(w.Snapshot().Tables()[0]); err != nil {
				t.Fatal(err)
			}
			pinCommit(t, b, "main") // another handle wins the head
			r.count.Reset()
			_, err = w.Commit(ctx)
			var rs *graph.ReadSetChanged
			if !errors.As(err, &rs) || rs.Member != "graph_head" || rs.Retryable == strict {
				t.Fatalf("Commit = %v, want ReadSetChanged{graph_head, retryable=%v}", err, !strict)
			}
			if graph.IsRetryable(err) == strict {
				t.Fatalf("IsRetryable = %v", graph.IsRetryable(err))
			}
			if w := writes(r.count.Snapshot()); w != 0 {
				t.Fatalf("a write refused before its effects made %d writes", w)
			}
		})
	}
	// Retry re-prepares a retryable write until it lands.
	attempts := 0
	res, err := graph.Retry(ctx, 3, func(ctx context.Context) (*graph.Result, error) {
		attempts++
		w, err := a.BeginWrite(ctx, "main", graph.WriteOptions{})
		if err != nil {
			return nil, err
		}
		if err := w.SetPin(w.Snapshot().Tables()[0]); err != nil {
			return nil, err
		}
		if attempts == 1 {
			pinCommit(t, b, "main")
		}
		return w.Commit(ctx)
	})
	if err != nil || attempts != 2 || res.NoOp {
		t.Fatalf("Retry: %v after %d attempts", err, attempts)
	}
}

func TestPublishWithALostAnswer(t *testing.T) {
	tests := []struct {
		name    string
		arm     func(f *fault.Injector)
		landed  bool
		wantErr error
		condPut int // the publish plus its identical re-issues (seed 001)
	}{
		{"applied, answer lost", func(f *fault.Injector) { f.LoseAnswer(fault.CondPut, 1) }, true, nil, 2},
		{"not applied, answer lost", func(f *fault.Injector) { f.FailNth(fault.CondPut, 1, backend.KindUnknown) }, true, nil, 2},
		{"no answer to any re-issue", func(f *fault.Injector) {
			for n := 1; n <= 5; n++ {
				f.FailNth(fault.CondPut, n, backend.KindUnknown)
			}
		}, false, backend.ErrUnknown, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			r := newRig(t)
			g := r.open(t, graph.OpenOptions{})
			w, err := g.BeginWrite(ctx, "main", graph.WriteOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.SetPin(w.Snapshot().Tables()[0]); err != nil {
				t.Fatal(err)
			}
			tt.arm(r.fault)
			r.count.Reset()
			res, err := w.Commit(ctx)
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("Commit = %v, want %v", err, tt.wantErr)
			}
			var ou *graph.OutcomeUnknown
			if tt.wantErr != nil && (!errors.As(err, &ou) || ou.CommitID != w.CommitID()) {
				t.Fatalf("Commit = %v, want *OutcomeUnknown naming commit %s", err, w.CommitID())
			}
			if c := r.count.Snapshot(); c.CondPut != tt.condPut {
				t.Fatalf("%d conditional puts; want %d (the publish and its identical re-issues)", c.CondPut, tt.condPut)
			}
			// What the reader sees matches what the writer was told.
			fresh := r.open(t, graph.OpenOptions{ReadOnly: true})
			s, err := fresh.Snapshot(ctx, "main")
			if err != nil {
				t.Fatal(err)
			}
			if (s.CommitID() == w.CommitID()) != tt.landed {
				t.Fatalf("head commit %s, writer's %s, landed=%v", s.CommitID(), w.CommitID(), tt.landed)
			}
			if tt.landed && res.Commit.ID != w.CommitID() {
				t.Fatalf("result commit %s", res.Commit.ID)
			}
		})
	}
}

func TestCommitHistoryAndTimeTravel(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	g := r.g
	first, err := g.Snapshot(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	// Move one table's pin with each commit, so each version is distinct.
	var ids []string
	for i := 0; i < 3; i++ {
		w, err := g.BeginWrite(ctx, "main", graph.WriteOptions{Actor: fmt.Sprintf("actor-%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		p := w.Snapshot().Tables()[0]
		p.Version += 10
		if err := w.SetPin(p); err != nil {
			t.Fatal(err)
		}
		res, err := w.Commit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.Commit.ID)
	}
	cs, err := g.Commits(ctx, "main", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 4 {
		t.Fatalf("%d commits, want 4", len(cs))
	}
	for i, c := range cs[:3] {
		if c.ID != ids[2-i] || c.Actor != fmt.Sprintf("actor-%d", 2-i) {
			t.Fatalf("commit %d = %+v, want %s newest first", i, c, ids[2-i])
		}
		if len(c.Parents) != 1 || c.Parents[0] != cs[i+1].ID {
			t.Fatalf("commit %s parents %v, want [%s]", c.ID, c.Parents, cs[i+1].ID)
		}
		if c.Micros < cs[i+1].Micros {
			t.Fatalf("timestamps go backwards")
		}
	}
	if lim, _ := g.Commits(ctx, "main", 2); len(lim) != 2 || lim[0].ID != ids[2] {
		t.Fatalf("limited history = %+v", lim)
	}
	// Time travel: the first commit still shows the original pins.
	old, err := g.SnapshotAt(ctx, first.CommitID())
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range old.Tables() {
		if p != first.Tables()[i] {
			t.Fatalf("time travel pin %+v, want %+v", p, first.Tables()[i])
		}
	}
	mid, err := g.SnapshotAt(ctx, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if mid.Tables()[0].Version != first.Tables()[0].Version+10 || mid.Version() != 2 {
		t.Fatalf("snapshot at %s: version %d pins %+v", ids[0], mid.Version(), mid.Tables())
	}
	v2, err := g.SnapshotAtVersion(ctx, "main", 2)
	if err != nil || v2.CommitID() != ids[0] {
		t.Fatalf("SnapshotAtVersion(2) = %v %v", v2, err)
	}
	c, err := g.Commit(ctx, ids[1])
	if err != nil || c.ManifestVersion != 3 || c.Branch != "main" {
		t.Fatalf("Commit(%s) = %+v %v", ids[1], c, err)
	}
	if _, err := g.Commit(ctx, "01KA3Q8J5YV9H0M3WQ8X2C4T7B"); !errors.Is(err, manifest.ErrCommitNotFound) {
		t.Fatalf("unknown commit = %v", err)
	}
}

func TestNoOpWriteDoesNotCommit(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	w, err := r.g.BeginWrite(ctx, "main", graph.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r.count.Reset()
	res, err := w.Commit(ctx)
	if err != nil || !res.NoOp {
		t.Fatalf("empty write = %+v %v", res, err)
	}
	if c := r.count.Snapshot(); c.Total != 0 {
		t.Fatalf("an empty write made %d requests", c.Total)
	}
}
