package cleanup_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/cleanup"
	"github.com/omnigraph-go/omnigraph/graph/merge"
	"github.com/omnigraph-go/omnigraph/graph/query"
	"github.com/omnigraph-go/omnigraph/manifest"
)

const handlesQ = `query q() { match { $p: Person } return { $p.handle } order { $p.handle } }`

// readAt reads the handlesQ of commit id (time travel).
func readAt(g *graph.Graph, id string) (string, error) {
	snap, err := g.SnapshotAt(context.Background(), id)
	if err != nil {
		return "", err
	}
	r, err := query.Run(context.Background(), snap, handlesQ, "", nil)
	if err != nil {
		return "", err
	}
	return fmt.Sprint(r.Rows), nil
}

// forks counts the objects of a graph branch's table forks (trees and
// refs, over every table).
func forks(t *testing.T, store backend.StorageAdapter, branch string) int {
	t.Helper()
	objs, err := backend.ListAll(context.Background(), store, "")
	if err != nil {
		t.Fatal(err)
	}
	return len(slices.DeleteFunc(objs, func(o backend.Attrs) bool {
		return !strings.Contains(o.Key, "/tree/"+branch+"@") && !strings.Contains(o.Key, "/_refs/branches/"+branch+"@")
	}))
}

// TestCleanupKeepsMergedCommitsOfDeletedBranchesWithinTheRetention: a
// branch merged and deleted keeps its table forks (its commits are in
// main's history), and cleanup keeps what a kept merge brought in: with
// the merge among main's newest Keep versions the merged commit reads as
// before; once main moves past it, cleanup reclaims the forks whole and
// the read says it was removed by cleanup. A branch deleted without a
// merge is still reclaimed at once by the delete. A chain (review merged
// into feat, feat merged into main, both deleted) is followed through.
func TestCleanupKeepsMergedCommitsOfDeletedBranchesWithinTheRetention(t *testing.T) {
	ctx := context.Background()
	store := mem.New()
	g, err := graph.Init(ctx, store, schema, graph.InitOptions{Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	mut(t, g, "main", `mutation m() { insert Person { handle: "m0" } }`, nil)
	branch := func(name, from string, rows ...string) string {
		t.Helper()
		if _, err := g.CreateBranch(ctx, name, from); err != nil {
			t.Fatal(err)
		}
		for _, h := range rows {
			mut(t, g, name, `mutation m($h: String) { insert Person { handle: $h } }`, map[string]any{"h": h})
		}
		s, err := g.Snapshot(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return s.CommitID()
	}
	mergeDelete := func(src, into string) {
		t.Helper()
		if _, err := merge.Run(ctx, g, src, into, merge.Options{}); err != nil {
			t.Fatal(err)
		}
		if err := g.DeleteBranch(ctx, src); err != nil {
			t.Fatal(err)
		}
	}
	// Unmerged: reclaimed by the delete itself.
	branch("scratch", "main", "s1")
	if err := g.DeleteBranch(ctx, "scratch"); err != nil {
		t.Fatal(err)
	}
	if n := forks(t, store, "scratch"); n != 0 {
		t.Fatalf("an unmerged deleted branch left %d objects of its table forks", n)
	}
	// Merged, directly and through a chain.
	rev := branch("review", "main", "r1", "r2")
	mergeDelete("review", "main")
	feat := branch("feat", "main", "f1")
	deep := branch("deep", "feat", "d1")
	mergeDelete("deep", "feat")
	mut(t, g, "feat", `mutation m() { insert Person { handle: "f2" } }`, nil)
	mergeDelete("feat", "main")
	for _, b := range []string{"review", "feat", "deep"} {
		if forks(t, store, b) == 0 {
			t.Fatalf("the delete of merged branch %s reclaimed its table forks", b)
		}
	}
	want := map[string]string{rev: "[[m0] [r1] [r2]]", deep: "[[d1] [f1] [m0] [r1] [r2]]", feat: "[[f1] [m0] [r1] [r2]]"}
	for id, w := range want {
		if got, err := readAt(g, id); err != nil || got != w {
			t.Fatalf("commit %s of a merged, deleted branch: %s, %v; want %s", id, got, err, w)
		}
	}
	// Within the retention (main's newest 4 hold both merges): kept.
	if _, err := cleanup.Run(ctx, g, cleanup.Options{Keep: 4, Confirm: true}); err != nil {
		t.Fatal(err)
	}
	kept, err := graph.Open(ctx, store, graph.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer kept.Close()
	for id, w := range want {
		if got, err := readAt(kept, id); err != nil || got != w {
			t.Fatalf("after a cleanup whose retention holds the merges, commit %s: %s, %v; want %s", id, got, err, w)
		}
	}
	// Main moves on: a retention of 1 keeps neither merge.
	mut(t, g, "main", `mutation m() { insert Person { handle: "m1" } }`, nil)
	res, err := cleanup.Run(ctx, g, cleanup.Options{Keep: 1, Confirm: true})
	if err != nil {
		t.Fatal(err)
	}
	dropped := 0
	for _, tr := range res.Tables {
		dropped += tr.Branches
	}
	if dropped == 0 {
		t.Fatalf("cleanup reclaimed no fork of a deleted branch: %+v", res.Tables)
	}
	for _, b := range []string{"review", "feat", "deep"} {
		if n := forks(t, store, b); n != 0 {
			t.Fatalf("cleanup beyond the retention left %d objects of %s's table forks", n, b)
		}
	}
	// A fresh handle: the old one has those versions in its cache.
	fresh, err := graph.Open(ctx, store, graph.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	for id := range want {
		_, err := readAt(fresh, id)
		if !errors.Is(err, manifest.ErrCleanedUp) || !strings.Contains(err.Error(), "removed by cleanup") || strings.Contains(err.Error(), "@") {
			t.Fatalf("commit %s beyond the retention: %v; want removed by cleanup, naming no table branch", id, err)
		}
	}
	log, err := g.Log(ctx, "main", graph.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, c := range log {
		listed[c.ID] = true
	}
	for id := range want {
		if !listed[id] {
			t.Fatalf("commit %s is no longer listed in main's history", id)
		}
	}
	if r, err := query.Head(ctx, g, "main", handlesQ, "", nil); err != nil || fmt.Sprint(r.Rows) != "[[d1] [f1] [f2] [m0] [m1] [r1] [r2]]" {
		t.Fatalf("main: %v, %v", r, err)
	}
}
