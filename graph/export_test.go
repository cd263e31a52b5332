package graph

import (
	"context"
	"time"

	"github.com/omnigraph-go/omnigraph/manifest"
)

// Internals the external tests of this directory (package graph_test) reach:
// the standard export_test.go pattern, compiled only into the test binary,
// so none of it is public API.

// TableBranch is tableBranch.
var TableBranch = tableBranch

// CreateBranchInternal is createBranch: CreateBranch without the check
// that refuses the engine's internal branch names.
func (g *Graph) CreateBranchInternal(ctx context.Context, name, from string) (*Snapshot, error) {
	return g.createBranch(ctx, name, from)
}

// DeleteBranchInternal is deleteBranch.
func (g *Graph) DeleteBranchInternal(ctx context.Context, name string) error {
	return g.deleteBranch(ctx, name)
}

// Base is the head the write was begun on.
func (w *Write) Base() *manifest.Entry { return w.base }

// The re-issue pauses of a lost publish answer are instant in this package's
// tests (the rule itself, pauses included, is tested in manifest).
func init() {
	reissuePause = func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
}
