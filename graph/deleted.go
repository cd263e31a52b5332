package graph

import (
	"context"
	"errors"
	"fmt"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/manifest"
	"github.com/omnigraph-go/omnigraph/table"
)

// IfBranchDeleted returns err unchanged unless it is a definite failure
// on a missing table version or file and the branch (role: how the caller
// names it, e.g. "load target") no longer exists: a branch deleted while
// the operation read it takes its table versions with it. Then it returns
// the branch-not-found error that says so, naming no table branch or
// version. An unknown outcome stays what it is.
func (g *Graph) IfBranchDeleted(ctx context.Context, role, branch string, err error) error {
	if err == nil || !(errors.Is(err, table.ErrNotFound) || errors.Is(err, backend.ErrNotFound)) {
		return err
	}
	if errors.Is(err, backend.ErrUnknown) || errors.Is(err, ErrRecoveryRequired) {
		return err
	}
	if branch == "" {
		branch = manifest.MainBranch
	}
	if _, serr := g.Snapshot(ctx, branch); errors.Is(serr, manifest.ErrBranchNotFound) {
		return fmt.Errorf("%s %q was deleted while the operation read it: %w", role, branch, serr)
	}
	return err
}
