package cleanup_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/cleanup"
	"github.com/omnigraph-go/omnigraph/graph/query"
	"github.com/omnigraph-go/omnigraph/manifest"
)

// layoutNames are branch names with every storage-layout word
// (graph.LayoutWords) at every depth: alone (set 0), and first, last,
// inner and deeper inner (set 1); each set is path-prefix-disjoint.
func layoutNames(t *testing.T) [2][]string {
	var sets [2][]string
	for i, w := range graph.LayoutWords() {
		if manifest.ValidateBranchName(w) != nil {
			continue // ".v": no branch name can hold it
		}
		sets[0] = append(sets[0], w)
		sets[1] = append(sets[1], w+"/z", fmt.Sprintf("a%d/%s", i, w), fmt.Sprintf("b%d/%s/z", i, w), fmt.Sprintf("c%d/d/%s/e", i, w))
	}
	return sets
}

// legacyBranch creates branch name from main's head the way a build
// without the layout-word refusal did: its genesis manifest version,
// published directly.
func legacyBranch(t *testing.T, g *graph.Graph, name string) {
	t.Helper()
	ctx := context.Background()
	src, err := g.Manifest().Head(ctx, manifest.MainBranch)
	if err != nil {
		t.Fatal(err)
	}
	e := &manifest.Entry{Stamp: manifest.StampCurrent, Kind: manifest.KindFork, GraphID: src.GraphID, Branch: name,
		Incarnation: 1, BranchID: "legacy-" + name, Version: 1, SchemaIdentity: src.SchemaIdentity,
		Tables: append([]manifest.TablePin(nil), src.Tables...), Head: src.Head,
		Fork: &manifest.ForkPoint{Branch: src.Branch, Incarnation: src.Incarnation, Version: src.Version, Head: src.Head}}
	if err := g.Manifest().Publish(ctx, e); err != nil {
		t.Fatalf("publish the legacy branch %q: %v", name, err)
	}
}

// TestBranchNamesWithLayoutWords: a new branch name with a storage-layout
// word as a component is refused with a message naming it, and creates
// nothing; branches with such names made before the refusal (every word,
// every depth) keep every row through a cleanup that reclaims their old
// versions (cleanup once read "feat" as the branch of every key of
// "feat/_versions/x" and deleted all its versions).
func TestBranchNamesWithLayoutWords(t *testing.T) {
	ctx := context.Background()
	const people = `query q() { match { $p: Person } return { $p.handle } order { $p.handle } }`
	for set, names := range layoutNames(t) {
		g, err := graph.Init(ctx, mem.New(), schema, graph.InitOptions{Actor: "tester"})
		if err != nil {
			t.Fatal(err)
		}
		mut(t, g, "main", `mutation m() { insert Person { handle: "m0" } }`, nil)
		for _, n := range names {
			_, err := g.CreateBranch(ctx, n, "main")
			if !errors.Is(err, graph.ErrInvalidBranch) || !strings.Contains(err.Error(), "storage layout uses") && !manifest.IsInternalBranch(n) {
				t.Fatalf("create %q: %v, want a refusal naming the layout word", n, err)
			}
		}
		if bs, err := g.Branches(ctx); err != nil || len(bs) != 1 {
			t.Fatalf("after the refused creates: %v, %v; want main alone", bs, err)
		}
		for i, n := range names {
			legacyBranch(t, g, n)
			for j := range 2 {
				mut(t, g, n, `mutation m($h: String) { insert Person { handle: $h } }`, map[string]any{"h": fmt.Sprintf("s%d-%d-%d", set, i, j)})
			}
		}
		mut(t, g, "main", `mutation m() { insert Person { handle: "m1" } }`, nil)
		res, err := cleanup.Run(ctx, g, cleanup.Options{Keep: 1, Confirm: true})
		if err != nil {
			t.Fatal(err)
		}
		if res.Objects == 0 {
			t.Fatal("cleanup removed nothing; the test needs old versions to reclaim")
		}
		ro, err := graph.Open(ctx, g.Store(), graph.OpenOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		for i, n := range names {
			r, err := query.Head(ctx, ro, n, people, "", nil)
			if err != nil {
				t.Fatalf("branch %q after cleanup: %v", n, err)
			}
			want := fmt.Sprintf("[[m0] [s%d-%d-0] [s%d-%d-1]]", set, i, set, i)
			if got := fmt.Sprint(r.Rows); got != want {
				t.Fatalf("branch %q after cleanup: %s, want %s", n, got, want)
			}
		}
		r, err := query.Head(ctx, ro, "main", people, "", nil)
		if err != nil || fmt.Sprint(r.Rows) != "[[m0] [m1]]" {
			t.Fatalf("main after cleanup: %v, %v", r, err)
		}
		ro.Close()
		g.Close()
	}
}
