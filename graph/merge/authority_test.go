package merge_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/fault"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/load"
	"github.com/omnigraph-go/omnigraph/graph/merge"
	"github.com/omnigraph-go/omnigraph/manifest"
)

// mergeCommits counts main's commits whose second parent is src: a merge of
// src lands at most once.
func mergeCommits(t testing.TB, g *graph.Graph, target, src string) int {
	t.Helper()
	cs, err := g.Commits(context.Background(), target, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range cs {
		if len(c.Parents) == 2 && c.Parents[1] == src {
			n++
		}
	}
	return n
}

func headOf(t testing.TB, g *graph.Graph, branch string) string {
	t.Helper()
	s, err := g.Snapshot(context.Background(), branch)
	if err != nil {
		t.Fatal(err)
	}
	return s.CommitID()
}

// TestMergeTargetMovedMidMergeIsReadSetChanged pins the seed's rule "re-check
// the target token before any effect; a moved target is ReadSetChanged": a
// write lands on the target after the merge captured it. The merge is
// refused with a non-retryable ReadSetChanged (its classification was
// against the captured target), nothing of it is written (the target holds
// exactly the racing write), both branches take writes at once, and the
// merge run again lands.
func TestMergeTargetMovedMidMergeIsReadSetChanged(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		targetOwn bool // main has its own commit: three-way, else fast-forward
		persons   string
		// persons on main after the merge is run again
		merged string
	}{
		{name: "fast-forward", persons: "ada|handle=ada|name=Ada bob|handle=bob|name=Bob cy|handle=cy|name=Cy gus|handle=gus|name=Gus",
			merged: "ada|handle=ada|name=Ada bob|handle=bob|name=Bob cy|handle=cy|name=Cy dan|handle=dan|name=Dan gus|handle=gus|name=Gus"},
		{name: "three-way", targetOwn: true,
			persons: "ada|handle=ada|name=Ada bob|handle=bob|name=Bob cy|handle=cy|name=Cy eve|handle=eve|name=Eve gus|handle=gus|name=Gus",
			merged:  "ada|handle=ada|name=Ada bob|handle=bob|name=Bob cy|handle=cy|name=Cy dan|handle=dan|name=Dan eve|handle=eve|name=Eve gus|handle=gus|name=Gus"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			r.branch(t, "f", "main")
			r.load(t, "f", `{"type":"Person","data":{"handle":"dan","name":"Dan"}}
{"edge":"Knows","from":"dan","to":"ada","data":{"id":"k2"}}`)
			if tc.targetOwn {
				r.load(t, "main", `{"type":"Person","data":{"handle":"eve","name":"Eve"}}`)
			}
			fHead := headOf(t, r.g, "f")
			fRows := strings.Join(rows(t, r.g, "f", "node:Person"), " ")
			// The racer is another process: a write of this one to the
			// target queues behind the merge (graph/queue.go).
			other, err := graph.Open(ctx, r.count, graph.OpenOptions{Process: graph.NewProcess(), Actor: "racer"})
			if err != nil {
				t.Fatal(err)
			}
			raced := false
			opts := merge.WithAfterCapture(merge.Options{}, func() {
				raced = true
				if _, err := load.Run(ctx, other, strings.NewReader(`{"type":"Person","data":{"handle":"gus","name":"Gus"}}`), load.Options{Branch: "main", Mode: load.Merge}); err != nil {
					t.Error(err)
				}
			})
			res, err := merge.Run(ctx, r.g, "f", "main", opts)
			if !raced {
				t.Fatal("the hook did not run")
			}
			var rs *graph.ReadSetChanged
			if !errors.As(err, &rs) || !errors.Is(err, graph.ErrReadSetChanged) {
				t.Fatalf("got %+v, %v; want a ReadSetChanged", res, err)
			}
			if rs.Retryable || graph.IsRetryable(err) || rs.Branch != "main" || rs.Member != "graph_head" {
				t.Errorf("ReadSetChanged %+v: want non-retryable, branch main, member graph_head", rs)
			}
			if res != nil {
				t.Errorf("a refused merge reported %+v", res)
			}
			// Nothing of the merge: main holds the racing write only.
			if got := names(t, r.g, "main"); got != tc.persons {
				t.Errorf("main persons:\n got %s\nwant %s", got, tc.persons)
			}
			if got := strings.Join(rows(t, r.g, "main", "edge:Knows"), " "); got != "k1|dst=bob|src=ada|weight=1" {
				t.Errorf("main knows: %s", got)
			}
			if n := mergeCommits(t, r.g, "main", fHead); n != 0 {
				t.Errorf("%d merge commits after a refused merge", n)
			}
			if got := strings.Join(rows(t, r.g, "f", "node:Person"), " "); got != fRows || headOf(t, r.g, "f") != fHead {
				t.Errorf("the source changed: %s", got)
			}
			// Both branches take writes at once (no lingering state).
			r.load(t, "main", `{"type":"Person","data":{"handle":"hal","name":"Hal"}}`)
			r.load(t, "f", `{"type":"Person","data":{"handle":"ivy","name":"Ivy"}}`)
			if got := names(t, r.g, "main"); !strings.Contains(got, "hal|handle=hal|name=Hal") {
				t.Errorf("main after its write: %s", got)
			}
			if got := names(t, r.g, "f"); !strings.Contains(got, "ivy|handle=ivy|name=Ivy") {
				t.Errorf("f after its write: %s", got)
			}
			// The merge, run again, lands exactly once.
			res, err = merge.Run(ctx, r.g, "f", "main", merge.Options{})
			if err != nil || res.Outcome != merge.Merged {
				t.Fatalf("merge again: %+v %v", res, err)
			}
			got := names(t, r.g, "main")
			for _, p := range strings.Fields(tc.merged + " hal|handle=hal|name=Hal ivy|handle=ivy|name=Ivy") {
				if !strings.Contains(got, p) {
					t.Errorf("main after the merge lacks %s: %s", p, got)
				}
			}
			if got := strings.Join(rows(t, r.g, "main", "edge:Knows"), " "); got != "k1|dst=bob|src=ada|weight=1 k2|dst=ada|src=dan" {
				t.Errorf("main knows after the merge: %s", got)
			}
		})
	}
}

// TestMergeSourceMovedMidMergeMergesTheCapturedSource pins "a moved source
// is fine: merge the captured source": a write lands on the source after
// capture; the merge succeeds with the captured head as second parent, the
// later write is not on the target, and the next merge brings it.
func TestMergeSourceMovedMidMergeMergesTheCapturedSource(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	r.branch(t, "f", "main")
	r.load(t, "f", `{"type":"Person","data":{"handle":"dan","name":"Dan"}}`)
	r.load(t, "main", `{"type":"Person","data":{"handle":"eve","name":"Eve"}}`)
	captured := headOf(t, r.g, "f")
	opts := merge.WithAfterCapture(merge.Options{}, func() {
		r.load(t, "f", `{"type":"Person","data":{"handle":"late","name":"Late"}}`)
	})
	res, err := merge.Run(ctx, r.g, "f", "main", opts)
	if err != nil || res.Outcome != merge.Merged {
		t.Fatalf("%+v %v", res, err)
	}
	if res.SourceCommit != captured || res.Commit == nil || len(res.Commit.Parents) != 2 || res.Commit.Parents[1] != captured {
		t.Errorf("result %+v: want the captured source %s as second parent", res, captured)
	}
	const want = "ada|handle=ada|name=Ada bob|handle=bob|name=Bob cy|handle=cy|name=Cy dan|handle=dan|name=Dan eve|handle=eve|name=Eve"
	if got := names(t, r.g, "main"); got != want {
		t.Errorf("main:\n got %s\nwant %s", got, want)
	}
	res, err = merge.Run(ctx, r.g, "f", "main", merge.Options{})
	if err != nil || res.Outcome == merge.AlreadyUpToDate {
		t.Fatalf("the later source write was not merged: %+v %v", res, err)
	}
	if got := names(t, r.g, "main"); got != "ada|handle=ada|name=Ada bob|handle=bob|name=Bob cy|handle=cy|name=Cy dan|handle=dan|name=Dan eve|handle=eve|name=Eve late|handle=late|name=Late" {
		t.Errorf("main after the second merge: %s", got)
	}
}

// condPuts records the keys of the conditional puts that pass through it.
type condPuts struct {
	backend.StorageAdapter
	mu   sync.Mutex
	keys []string
}

func (c *condPuts) record(key string) {
	c.mu.Lock()
	c.keys = append(c.keys, key)
	c.mu.Unlock()
}

func (c *condPuts) PutIfAbsent(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	c.record(key)
	return c.StorageAdapter.PutIfAbsent(ctx, key, data)
}

func (c *condPuts) PutIfMatch(ctx context.Context, key string, data []byte, version string) (backend.Attrs, error) {
	c.record(key)
	return c.StorageAdapter.PutIfMatch(ctx, key, data, version)
}

// TestMergeLostPublishAnswer: the answer of the merge's publish (the
// conditional put of main's next manifest version) is lost. Seed 001: the
// identical request is re-issued and the version read back, so one lost
// answer is a success; when every re-issue is unknown too the merge is a
// typed OutcomeUnknown, never success or plain failure. After a reopen in a
// fresh process main holds the full merge or none of it, and never a
// second merge commit, also after the merge is run again.
func TestMergeLostPublishAnswer(t *testing.T) {
	ctx := context.Background()
	prep := func(t *testing.T, r *rig) {
		r.branch(t, "f", "main")
		r.load(t, "f", `{"type":"Person","data":{"handle":"dan","name":"Dan"}}
{"edge":"Knows","from":"dan","to":"ada","data":{"id":"k2"}}
{"type":"Company","data":{"slug":"initech"}}`)
		r.load(t, "main", `{"type":"Person","data":{"handle":"eve","name":"Eve"}}`)
	}
	instant := func(ctx context.Context, _ time.Duration) error { return ctx.Err() }

	// The reference: which conditional put is the publish, and the images.
	var rec *condPuts
	ref := newRigWith(t, func(s backend.StorageAdapter) backend.StorageAdapter {
		rec = &condPuts{StorageAdapter: s}
		return rec
	})
	prep(t, ref)
	before := image(t, ref.g)
	rec.mu.Lock()
	rec.keys = nil
	rec.mu.Unlock()
	if _, err := merge.Run(ctx, ref.g, "f", "main", merge.Options{}); err != nil {
		t.Fatal(err)
	}
	after := image(t, ref.g)
	publish := 0
	for i, k := range rec.keys {
		if strings.HasPrefix(k, manifest.Dir+"branches/main/") {
			if publish != 0 {
				t.Fatalf("two manifest puts on main: %q", rec.keys)
			}
			publish = i + 1
		}
	}
	if publish == 0 || before == after {
		t.Fatalf("no publish among the conditional puts %q", rec.keys)
	}
	t.Logf("the publish is conditional put %d of %d", publish, len(rec.keys))

	for _, tc := range []struct {
		name    string
		arm     func(f *fault.Injector)
		success bool // the only acceptable outcome is success
	}{
		{"answer lost, re-issue reads it back", func(f *fault.Injector) {
			f.LoseAnswer(fault.CondPut, publish)
		}, true},
		{"answer lost, every re-issue unknown", func(f *fault.Injector) {
			f.LoseAnswer(fault.CondPut, publish)
			for i := 1; i <= manifest.MaxReissues+1; i++ {
				f.FailNth(fault.CondPut, publish+i, backend.KindUnknown)
			}
		}, false},
		{"never applied, every attempt unknown", func(f *fault.Injector) {
			for i := 0; i <= manifest.MaxReissues+1; i++ {
				f.FailNth(fault.CondPut, publish+i, backend.KindUnknown)
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			prep(t, r)
			if image(t, r.g) != before {
				t.Fatal("the seed is not deterministic")
			}
			r.g.Manifest().SetSleeper(instant)
			r.g.Manifest().SetLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
			src := headOf(t, r.g, "f")
			r.fault.Reset()
			tc.arm(r.fault)
			res, err := merge.Run(ctx, r.g, "f", "main", merge.Options{})
			r.fault.Reset() // disarm what did not fire
			var ou *graph.OutcomeUnknown
			switch {
			case err == nil:
				if res.Outcome != merge.Merged || res.Commit == nil {
					t.Fatalf("success without a commit: %+v", res)
				}
			case tc.success:
				t.Fatalf("one lost answer, read back, must be a success: %v", err)
			case errors.As(err, &ou):
				if !errors.Is(err, backend.ErrUnknown) || ou.Branch != "main" || ou.CommitID == "" {
					t.Errorf("OutcomeUnknown %+v", ou)
				}
			default:
				t.Fatalf("a lost publish answer surfaced as %T: %v", err, err)
			}
			g, oerr := graph.Open(ctx, r.count, graph.OpenOptions{Process: graph.NewProcess(), Actor: "tester"})
			if oerr != nil {
				t.Fatalf("reopen: %v", oerr)
			}
			got := image(t, g)
			n := mergeCommits(t, g, "main", src)
			switch {
			case got == after && n == 1:
				t.Logf("after reopen: the full merge (merge returned %v)", err)
				if err == nil && ou == nil && res.Commit.ID != headOf(t, g, "main") {
					t.Errorf("the acknowledged commit %s is not main's head", res.Commit.ID)
				}
				// Run again: already up to date, no second commit.
				again, err := merge.Run(ctx, g, "f", "main", merge.Options{})
				if err != nil || again.Outcome != merge.AlreadyUpToDate {
					t.Fatalf("merge after it landed: %+v %v", again, err)
				}
			case got == before && n == 0:
				t.Logf("after reopen: none of the merge (merge returned %v)", err)
				if err == nil {
					t.Fatal("an acknowledged merge is not visible")
				}
				again, err := merge.Run(ctx, g, "f", "main", merge.Options{})
				if err != nil || again.Outcome != merge.Merged {
					t.Fatalf("merge again: %+v %v", again, err)
				}
			default:
				t.Fatalf("%d merge commits and the image:\n%s\nbefore\n%s\nafter\n%s", n, got, before, after)
			}
			if got := image(t, g); got != after {
				t.Errorf("main is not the full merge:\n%s\nwant\n%s", got, after)
			}
			if n := mergeCommits(t, g, "main", src); n != 1 {
				t.Errorf("%d merge commits of %s", n, src)
			}
			r.g = g
			r.load(t, "main", `{"type":"Person","data":{"handle":"next","name":"N"}}`)
			r.load(t, "f", `{"type":"Person","data":{"handle":"next","name":"N"}}`)
		})
	}
}
