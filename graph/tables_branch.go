package graph

import (
	"context"
	"errors"
	"fmt"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/table"
)

// forkTable creates table branch name of the table at path from
// fromBranch@fromVersion and returns the fork's base dataset, which the
// first-touch stage reads. A fork left by an earlier attempt of the same
// branch incarnation is adopted only while it is untouched (same parent,
// no commit of its own); one with unpublished commits is drift that
// recovery must resolve.
func forkTable(ctx context.Context, store backend.StorageAdapter, path, name, fromBranch string, fromVersion uint64) (*table.Dataset, error) {
	_, err := table.CreateBranch(ctx, store, path, name, fromBranch, fromVersion)
	if err == nil {
		ds, oerr := table.OpenVersion(ctx, store, path, name, fromVersion)
		if oerr == nil {
			return ds, nil
		}
		return table.Open(ctx, store, path, name)
	}
	if !errors.Is(err, table.ErrBranchExists) && !errors.Is(err, backend.ErrUnknown) {
		return nil, err
	}
	ref, rerr := table.ReadRef(ctx, store, path, name)
	if rerr != nil {
		return nil, fmt.Errorf("%w (and reading the ref back failed: %v)", err, rerr)
	}
	if ref.ParentBranch != fromBranch || ref.ParentVersion != fromVersion {
		return nil, fmt.Errorf("table %s already has branch %q forked from %s@%d, not %s@%d: %w",
			path, name, ref.ParentBranch, ref.ParentVersion, fromBranch, fromVersion, err)
	}
	ds, oerr := table.Open(ctx, store, path, name)
	if oerr != nil {
		return nil, oerr
	}
	if ds.Version() != fromVersion {
		return nil, &RecoveryRequired{Reason: fmt.Sprintf("table %s branch %q has version %d that no commit published", path, name, ds.Version())}
	}
	return ds, nil
}

// forkedDataVersion is the version a first-touch write commits on a table
// branch forked at parent version v: a fork's first version keeps the
// parent's number, so the first data commit is v+1.
func forkedDataVersion(v uint64) uint64 { return v + 1 }

// deleteTableBranch removes a table branch and the files it owned alone
// (best-effort reclaim); with no ref left, it reclaims the residue a
// crashed fork or delete left under the branch's tree.
func deleteTableBranch(ctx context.Context, store backend.StorageAdapter, path, name string) error {
	err := table.DeleteBranch(ctx, store, path, name, "")
	if errors.Is(err, table.ErrNotFound) {
		return table.ReclaimBranch(ctx, store, path, name)
	}
	return err
}
