package server

import (
	"context"
	"fmt"
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
