package query

import (
	"context"
	"errors"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/manifest"
)

// TestDeletedBranchCommitReadsAsRemoved: a commit of a branch deleted
// before any live branch reached it keeps its history entry, but the
// delete reclaims its data. Reading it by id is the removed-data refusal
// (manifest.ErrCleanedUp, a 404 on the server), on the handle that wrote
// the branch (its cached table meets missing fragments) as on a fresh
// one: never a bare storage not-found (a 500).
func TestDeletedBranchCommitReadsAsRemoved(t *testing.T) {
	ctx := context.Background()
	g := newSocialGraph(t, mem.New())
	if _, err := g.CreateBranch(ctx, "review", "main"); err != nil {
		t.Fatal(err)
	}
	qAppend(t, g, "review", `{"type":"Person","data":{"handle":"zed","name":"Zed","age":3}}`)
	s, err := g.Snapshot(ctx, "review")
	if err != nil {
		t.Fatal(err)
	}
	const src = `query q() { match { $p: Person } return { $p.handle } }`
	// The write left review's tables open in g's table cache (warm).
	id := s.CommitID()
	if err := g.DeleteBranch(ctx, "review"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"warm", "cold"} {
		gg := g
		if name == "cold" {
			gg = mustOpen(t, g)
		}
		at, err := gg.SnapshotAt(ctx, id)
		if err != nil {
			t.Fatalf("%s: SnapshotAt: %v", name, err)
		}
		_, err = Run(ctx, at, src, "q", nil)
		if !errors.Is(err, manifest.ErrCleanedUp) {
			t.Fatalf("%s: a read of the deleted branch's commit: %v, want the removed-data refusal", name, err)
		}
		if errors.Is(err, backend.ErrUnknown) {
			t.Fatalf("%s: a definite removal reads as an unknown outcome: %v", name, err)
		}
	}
}
