package graph_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/load"
	"github.com/omnigraph-go/omnigraph/graph/mutate"
)

const (
	insertPerson = `mutation m($h: String) { insert Person { handle: $h, name: "P" } }`
	updatePerson = `mutation m($h: String, $a: I32) { update Person set { age: $a } where handle = $h }`
)

// waitQueued waits until n writes of branch hold or wait for their turn
// (a count, not a time: the writers are goroutines of this test).
func waitQueued(t *testing.T, g *graph.Graph, branch string, n int) {
	t.Helper()
	for i := 0; g.QueuedWrites(branch) < n; i++ {
		if i > 5_000_000 {
			t.Fatalf("%d writes queued on %s, want %d", g.QueuedWrites(branch), branch, n)
		}
		runtime.Gosched()
	}
}

// TestQueuedWritersNeverConflict (issue 42 items 2, 5): 16 writers insert
// new people and 16 others update their own, distinct person, all at once
// on one handle, each with a retry budget of one attempt. The branch queue
// orders them, so none is prepared against a head another one moved: 0
// conflicts, 32 commits, each inserted key present exactly once, each
// update applied. Without the queue the writers race for the head and
// most of them are refused (ReadSetChanged, or Contended once the single
// attempt is spent).
func TestQueuedWritersNeverConflict(t *testing.T) {
	ctx := context.Background()
	r := newWRig(t)
	const n = 16
	var seed strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&seed, `{"type":"Person","data":{"handle":"u%d","name":"U"}}`+"\n", i)
	}
	r.load(t, load.Merge, seed.String())
	c0 := r.commits(t, "main")

	var wg sync.WaitGroup
	errs := make([]error, 2*n)
	start := make(chan struct{})
	for i := 0; i < 2*n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			opts := mutate.Options{Retries: 1}
			src := insertPerson
			if i < n {
				opts.Params = map[string]any{"h": fmt.Sprintf("u%d", i), "a": 20 + i}
				src = updatePerson
			} else {
				opts.Params = map[string]any{"h": fmt.Sprintf("p%d", i)}
			}
			res, err := mutate.Query(ctx, r.g, src, "", opts)
			if err == nil && res.Commit == nil {
				err = errors.New("no commit")
			}
			errs[i] = err
		}(i)
	}
	close(start)
	wg.Wait()
	conflicts := 0
	for i, err := range errs {
		if err != nil {
			conflicts++
			t.Errorf("writer %d: %v", i, err)
		}
	}
	if conflicts != 0 {
		t.Fatalf("%d of %d writers refused, want 0", conflicts, 2*n)
	}
	if got := r.commits(t, "main") - c0; got != 2*n {
		t.Errorf("%d commits, want %d (one per write)", got, 2*n)
	}
	seen := map[string]int{}
	for _, row := range r.rows(t, "main", "node:Person", "age") {
		seen[strings.SplitN(row, "|", 2)[0]]++
		for i := 0; i < n; i++ {
			if strings.HasPrefix(row, fmt.Sprintf("u%d|", i)) && row != fmt.Sprintf("u%d|age=%d", i, 20+i) {
				t.Errorf("update of u%d lost: %s", i, row)
			}
		}
	}
	for i := n; i < 2*n; i++ {
		if k := fmt.Sprintf("p%d", i); seen[k] != 1 {
			t.Errorf("%s present %d times, want once", k, seen[k])
		}
	}
	if len(seen) != 2*n {
		t.Errorf("%d people, want %d", len(seen), 2*n)
	}
	if q := r.g.QueuedWrites("main"); q != 0 {
		t.Errorf("%d writes still queued", q)
	}
}

// TestWriteQueueOrder (issue 42 item 5): writes that arrive while the
// branch's turn is held commit in arrival order, one commit each.
func TestWriteQueueOrder(t *testing.T) {
	ctx := context.Background()
	r := newWRig(t)
	qctx, leave, err := r.g.EnterWriteQueue(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	_ = qctx
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, errs[i] = mutate.Query(ctx, r.g, insertPerson, "", mutate.Options{Params: map[string]any{"h": fmt.Sprintf("q%d", i)}, Actor: fmt.Sprintf("w%d", i)})
		}(i)
		waitQueued(t, r.g, "main", i+2) // ours, and every writer so far
	}
	leave()
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("writer %d: %v", i, err)
		}
	}
	cs, err := r.g.Commits(ctx, "main", n)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cs { // newest first
		if want := fmt.Sprintf("w%d", n-1-i); c.Actor != want {
			t.Errorf("commit %d from the head by %s, want %s (arrival order)", i, c.Actor, want)
		}
	}
}

// TestQueuedWriteWithdrawn: a write waiting for its turn gives up when its
// context ends, or the wait context of WithQueueWait (a server's client
// that went away), with nothing written and its place freed; the turn
// holder and the writes behind it are unaffected.
func TestQueuedWriteWithdrawn(t *testing.T) {
	ctx := context.Background()
	r := newWRig(t)
	_, leave, err := r.g.EnterWriteQueue(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	before := r.state(t, "main")
	for _, viaWait := range []bool{false, true} {
		cctx, cancel := context.WithCancel(ctx)
		wctx := cctx
		if viaWait {
			wctx = graph.WithQueueWait(ctx, cctx) // the write's own context stays live
		}
		done := make(chan error, 1)
		go func() {
			_, err := mutate.Query(wctx, r.g, insertPerson, "", mutate.Options{Params: map[string]any{"h": "gone"}})
			done <- err
		}()
		waitQueued(t, r.g, "main", 2)
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("withdrawn write (via wait %v): %v, want context.Canceled", viaWait, err)
		}
		if q := r.g.QueuedWrites("main"); q != 1 {
			t.Fatalf("%d writes queued after the withdrawal, want 1 (the holder)", q)
		}
	}
	// A write behind the holder still gets its turn.
	done := make(chan error, 1)
	go func() {
		_, err := mutate.Query(ctx, r.g, insertPerson, "", mutate.Options{Params: map[string]any{"h": "stays"}})
		done <- err
	}()
	waitQueued(t, r.g, "main", 2)
	if r.state(t, "main") != before {
		t.Fatal("a queued write changed the graph before its turn")
	}
	leave()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := r.rows(t, "main", "node:Person"); len(got) != 1 || got[0] != "stays" {
		t.Errorf("people %v, want only the write that stayed", got)
	}
}

// TestNestedTurnDoesNotWaitForItself: a caller that holds the turn of a
// branch runs writes to it inside that turn (they do not wait for the
// turn they are in), and a write to another branch takes its own.
func TestNestedTurnDoesNotWaitForItself(t *testing.T) {
	ctx := context.Background()
	r := newWRig(t)
	qctx, leave, err := r.g.EnterWriteQueue(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	defer leave()
	for i := 0; i < 2; i++ {
		if _, err := mutate.Query(qctx, r.g, insertPerson, "", mutate.Options{Params: map[string]any{"h": fmt.Sprintf("n%d", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	if q := r.g.QueuedWrites("main"); q != 1 {
		t.Errorf("%d writes queued, want 1 (the holder)", q)
	}
}

// TestInsertFromAnotherProcessContended (issue 42 item 1): a writer the
// queue does not order (another process) moves the branch before each
// attempt of an insert commits; when the bounded retry is spent the answer
// is the typed *Contended (nothing written, safe to send again), not the
// strict writes' conflict. Within the budget the insert re-prepares and
// lands once.
func TestInsertFromAnotherProcessContended(t *testing.T) {
	ctx := context.Background()
	r := newWRig(t)
	other, err := graph.Open(ctx, r.count, graph.OpenOptions{Process: graph.NewProcess(), Actor: "other"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		retries int
		moves   int // how many attempts the other process moves the branch before
		landed  bool
	}{
		{"budget spent", 3, 3, false},
		{"within budget", 3, 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := strings.ReplaceAll(tc.name, " ", "-")
			moved := 0
			clear := graph.Failpoints.Set(r.g.ID(), graph.FailpointPreCommit, func() error {
				if moved >= tc.moves {
					return nil
				}
				moved++
				_, err := mutate.Query(ctx, other, insertPerson, "", mutate.Options{Params: map[string]any{"h": fmt.Sprintf("%s-o%d", key, moved)}})
				return err
			})
			defer clear()
			c0 := r.commits(t, "main")
			_, err := mutate.Query(ctx, r.g, insertPerson, "", mutate.Options{Retries: tc.retries, Params: map[string]any{"h": key}})
			var ce *graph.Contended
			switch {
			case tc.landed && err != nil:
				t.Fatalf("insert within the budget: %v", err)
			case !tc.landed && (!errors.As(err, &ce) || !errors.Is(err, graph.ErrContended) || ce.Attempts != tc.retries || ce.Branch != "main"):
				t.Fatalf("insert past the budget: %v, want *Contended after %d attempts", err, tc.retries)
			}
			want := tc.moves
			if tc.landed {
				want++
			}
			if got := r.commits(t, "main") - c0; got != want {
				t.Errorf("%d commits, want %d", got, want)
			}
			n := 0
			for _, row := range r.rows(t, "main", "node:Person") {
				if row == key {
					n++
				}
			}
			if want := map[bool]int{true: 1, false: 0}[tc.landed]; n != want {
				t.Errorf("%s present %d times, want %d", key, n, want)
			}
		})
	}
}
