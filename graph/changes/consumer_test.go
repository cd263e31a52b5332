package changes_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"sync"
	"testing"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/changes"
	"github.com/omnigraph-go/omnigraph/graph/mutate"
)

// TestConsumerWhileWritersRun: three writers commit inserts, updates and
// deletes while a consumer polls main with small pages, restarts now and
// then from its stored cursor on a fresh read-only handle, and sometimes
// "crashes" after applying a page but before storing its cursor. It sees
// every commit at least once and in commit order, and its replica equals
// the graph once it has caught up. Its handles probe the head on every
// poll (AlwaysProbe, as serve opens graphs): caught_up is then exact.
func TestConsumerWhileWritersRun(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	r.load(t, "main", seed)
	replica := state(t, r.g, "main")
	startCommit := r.head(t, "main")
	stored := r.poll(t, changes.Request{}).Cursor

	const writers, perWriter = 3, 15
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(w)))
			for i := 0; i < perWriter; i++ {
				h := fmt.Sprintf("w%d-%d", w, rng.Intn(6))
				var src string
				switch rng.Intn(3) {
				case 0:
					src = fmt.Sprintf(`query q() { insert Person { handle: %q, name: "N%d" } }`, fmt.Sprintf("w%d-%d", w, i), i)
				case 1:
					src = fmt.Sprintf(`query q() { update Person set { age: %d } where handle = %q }`, i, h)
				default:
					src = fmt.Sprintf(`query q() { delete Person where handle = %q }`, h)
				}
				_, err := mutate.Query(ctx, r.g, src, "", mutate.Options{Branch: "main"})
				if errors.Is(err, graph.ErrReadSetChanged) {
					continue // lost to another writer: nothing was written
				}
				if err != nil {
					errs <- fmt.Errorf("writer %d: %s: %w", w, src, err)
					return
				}
			}
		}(w)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	var seen []string // commit ids in the order first seen
	seenSet := map[string]bool{}
	consumer, err := graph.Open(ctx, r.count, graph.OpenOptions{ReadOnly: true, AlwaysProbe: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { consumer.Close() }()
	rng := rand.New(rand.NewSource(99))
	polls, restarts, replays := 0, 0, 0
	writersDone := false
	for {
		select {
		case <-done:
			writersDone = true
		default:
		}
		polls++
		p, err := changes.Poll(ctx, consumer, changes.Request{Cursor: stored, MaxChanges: 3, MaxCommits: 2})
		if err != nil {
			t.Fatalf("poll %d: %v", polls, err)
		}
		for p.NextPageToken != "" {
			apply(replica, p)
			note(p, &seen, seenSet)
			if p, err = changes.Poll(ctx, consumer, changes.Request{PageToken: p.NextPageToken, MaxChanges: 3, MaxCommits: 2}); err != nil {
				t.Fatalf("page: %v", err)
			}
		}
		apply(replica, p)
		note(p, &seen, seenSet)
		switch rng.Intn(8) {
		case 0:
			replays++ // crashed before the cursor was stored
		case 1:
			restarts++
			consumer.Close()
			if consumer, err = graph.Open(ctx, r.count, graph.OpenOptions{ReadOnly: true, AlwaysProbe: true}); err != nil {
				t.Fatal(err)
			}
			stored = p.Cursor
		default:
			stored = p.Cursor
		}
		if writersDone && p.CaughtUp && stored == p.Cursor {
			break
		}
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	cs, err := r.g.Commits(ctx, "main", 0)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := len(cs) - 1; i >= 0; i-- {
		want = append(want, cs[i].ID)
	}
	want = want[slices.Index(want, startCommit)+1:]
	if !slices.Equal(seen, want) {
		var missing []int
		for i, id := range want {
			if !seenSet[id] {
				missing = append(missing, i)
			}
		}
		t.Fatalf("the consumer saw %d commits, the branch has %d after the start; missing positions %v", len(seen), len(want), missing)
	}
	if got := state(t, r.g, "main"); !maps.Equal(replica, got) {
		t.Fatalf("the replica differs from the graph:\n%v\n%v", replica, got)
	}
	if restarts == 0 || replays == 0 || len(want) < 10 {
		t.Fatalf("%d commits, %d restarts, %d replays: the run proved nothing", len(want), restarts, replays)
	}
	t.Logf("%d commits, %d polls, %d restarts, %d replays", len(want), polls, restarts, replays)
}

// note records the commits of a page in the order first seen.
func note(p *changes.Page, seen *[]string, set map[string]bool) {
	for _, b := range p.Blocks {
		if id := b.Cause.CommitID; !set[id] {
			set[id] = true
			*seen = append(*seen, id)
		}
	}
}
