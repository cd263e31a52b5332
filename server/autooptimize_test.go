package server

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/query"
)

func personFragments(t *testing.T, g *graph.Graph) int {
	t.Helper()
	snap, err := g.Snapshot(context.Background(), "main")
	if err != nil {
		t.Fatal(err)
	}
	ds, err := snap.OpenTable(context.Background(), graph.NodeTableKey("Person"))
	if err != nil {
		t.Fatal(err)
	}
	return len(ds.Manifest().Fragments)
}

// TestServerAutoOptimize pins the server's automatic compaction: with
// AutoOptimize, writes through the API are followed, in the background, by
// optimize.Auto on their branch, so a table of one-row commits is compacted
// once it passes the threshold, with every row kept; without it nothing is
// compacted; Close stops the compactor.
func TestServerAutoOptimize(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprint("auto=", on), func(t *testing.T) {
			g := testGraph(t)
			s, base := newTestServer(t, g, Config{AutoOptimize: on, AutoOptimizeThreshold: 4})
			c := &client{t: t, base: base}
			const n = 6
			for i := 0; i < n; i++ {
				st, m := c.json("POST", "/graphs/default/mutate", fmt.Sprintf(`{"query":"mutation m() { insert Person { name: \"p%d\", age: %d } }"}`, i, i))
				if st != 200 {
					t.Fatalf("mutate %d: %d %v", i, st, m)
				}
			}
			if on {
				deadline := time.Now().Add(30 * time.Second)
				for {
					runs, idle := s.compactors["default"].idle()
					if runs > 0 && idle && personFragments(t, g) <= 4 {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("no automatic compaction within 30 s: %d checks, %d fragments", runs, personFragments(t, g))
					}
					time.Sleep(20 * time.Millisecond)
				}
			} else if f := personFragments(t, g); f != n {
				t.Fatalf("without AutoOptimize the table has %d fragments, want %d", f, n)
			}
			s.Close()
			r, err := query.Head(context.Background(), g, "main", `query q() { match { $p: Person } return { count($p) as n, max($p.age) as oldest } }`, "", nil)
			if err != nil || fmt.Sprint(r.Rows) != "[[6 5]]" {
				t.Fatalf("rows after the writes: %v, %v", r, err)
			}
		})
	}
}

// TestServerAutoOptimizeStopCause: the background compaction is a write
// like a client's, so a stop cause in it stops the server too: a
// compaction that stops after its table commits (RecoveryRequired, the
// post-Phase-B failpoint on its write, which comes after the client's
// last) closes admission for every graph and tells OnFatal, though no
// client saw it; the client's acknowledged writes all survive the
// restart's recovery.
func TestServerAutoOptimizeStopCause(t *testing.T) {
	stopped := make(chan string, 1)
	var f fatals
	_, base, g, store := twoGraphServer(t, Config{AutoOptimize: true, AutoOptimizeThreshold: 4, OnFatal: func(cause string) {
		f.on(cause)
		stopped <- cause
	}})
	c := &client{t: t, base: base}
	mutate := func(i int) {
		t.Helper()
		st, m := c.json("POST", "/graphs/default/mutate", fmt.Sprintf(`{"query":"mutation m() { insert Person { name: \"p%d\" } }"}`, i))
		mustStatus(t, fmt.Sprint("mutate ", i), st, 200, m)
	}
	// Three one-row commits: below the threshold, no compaction writes.
	for i := 0; i < 3; i++ {
		mutate(i)
	}
	// From here the pipeline's writes are the client's fourth (which
	// passes) and then the compaction it brings over the threshold.
	var hits atomic.Int32
	clear := graph.Failpoints.Set(g.ID(), graph.FailpointPostPhaseB, func() error {
		if hits.Add(1) == 2 {
			return errors.New("injected: the compaction stopped after its table commits")
		}
		return nil
	})
	defer clear()
	mutate(3)
	select {
	case cause := <-stopped:
		if cause != StopRecoveryRequired {
			t.Fatalf("the compaction's stop cause %q, want %q", cause, StopRecoveryRequired)
		}
	case <-time.After(time.Minute): // a guard against a hang, not a timing assertion
		t.Fatalf("the compaction never stopped the server (%d pipeline writes reached the failpoint)", hits.Load())
	}
	mustStopped(t, base, &f, StopRecoveryRequired)
	clear()
	got := restartedNames(t, store)
	if len(got) != 4 || got["p0"] != 1 || got["p3"] != 1 {
		t.Fatalf("people after the restart: %v", got)
	}
}
