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

// GateCount is the number of named gates in the handle's root map.
func (g *Graph) GateCount() int { return g.gates.size() }

// AcquireGates takes the root's gates as a writer's Commit does (schema
// exclusive or shared, then branch and table gates) and returns their
// release.
func (g *Graph) AcquireGates(ctx context.Context, schemaExclusive bool, branches, tables []string) (release func(), err error) {
	h, err := g.gates.acquire(ctx, schemaExclusive, branches, tables)
	if err != nil {
		return nil, err
	}
	return h.release, nil
}

// BranchGateRefs is how many writers hold or await the branch gate of
// branch (0: no entry).
func (g *Graph) BranchGateRefs(branch string) int {
	g.gates.mu.Lock()
	defer g.gates.mu.Unlock()
	if e := g.gates.locks["branch\x00"+branch]; e != nil {
		return e.refs
	}
	return 0
}

// SchemaWaiting reports whether an exclusive acquirer waits for the
// shared holders of the schema gate to drain.
func (g *Graph) SchemaWaiting() bool {
	g.gates.mu.Lock()
	defer g.gates.mu.Unlock()
	return g.gates.drained != nil
}
