package graph_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/mutate"
	"github.com/omnigraph-go/omnigraph/graph/query"
)

// TestUndoneTableVersionIsNotServedFromTheWritersCache is the simulation's
// finding (sim seed 94): a write that first-touches a table on a branch
// forks it and commits version v, then loses the publish race; its undo
// deletes the fork, so the next write that touches the table there forks
// it again and commits another version v. The losing handle had cached its
// own version v at commit time and served it afterwards: it read the rows
// of a write that never happened (or, once cleanup had removed their
// files, failed). A handle now caches a committed table version only once
// the publish that pins it has landed.
func TestUndoneTableVersionIsNotServedFromTheWritersCache(t *testing.T) {
	ctx := context.Background()
	store := mem.New()
	g0, err := graph.Init(ctx, store, `
node Person {
  handle: String @key
  age: I32?
}
node Company {
  slug: String @key
}
`, graph.InitOptions{Actor: "init"})
	if err != nil {
		t.Fatal(err)
	}
	mut := func(g *graph.Graph, src string) error {
		_, err := mutate.Query(ctx, g, src, "", mutate.Options{Branch: "f"})
		return err
	}
	if _, err := mutate.Query(ctx, g0, `mutation m() { insert Person { handle: "p", age: 0 } }`, "", mutate.Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := g0.CreateBranch(ctx, "f", "main"); err != nil {
		t.Fatal(err)
	}
	p1, p2 := graph.NewProcess(), graph.NewProcess()
	a, err := graph.Open(ctx, store, graph.OpenOptions{Actor: "a", Process: p1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := graph.Open(ctx, store, graph.OpenOptions{Actor: "b", Process: p2})
	if err != nil {
		t.Fatal(err)
	}
	// a's update forks Person on f and commits it; before a publishes, b
	// (another process) publishes a write of Company on f: a lost the race.
	var once sync.Once
	var raceErr error
	p1.Failpoints().Set(a.ID(), graph.FailpointPostPhaseB, func() error {
		once.Do(func() { raceErr = mut(b, `mutation m() { insert Company { slug: "x" } }`) })
		return nil
	})
	err = mut(a, `mutation m() { update Person set { age: 1 } where handle = "p" }`)
	if raceErr != nil {
		t.Fatal(raceErr)
	}
	if !errors.Is(err, graph.ErrReadSetChanged) {
		t.Fatalf("a's update after losing the race: %v, want ReadSetChanged", err)
	}
	// b's update forks Person on f again: the same table version number,
	// other rows.
	if err := mut(b, `mutation m() { update Person set { age: 2 } where handle = "p" }`); err != nil {
		t.Fatal(err)
	}
	for _, h := range []*graph.Graph{a, b} {
		res, err := query.Head(ctx, h, "f", `query q() { match { $p: Person } return { $p.handle, $p.age } }`, "", nil)
		if err != nil {
			t.Fatalf("%s reads f: %v", h.Actor(), err)
		}
		if got := fmt.Sprint(res.Rows); got != "[[p 2]]" {
			t.Fatalf("%s reads f as %s, want [[p 2]] (a's undone update must not be served)", h.Actor(), got)
		}
	}
}
