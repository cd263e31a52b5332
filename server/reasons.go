package server

import (
	"errors"

	"github.com/omnigraph-go/omnigraph/clusterlock"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/blob"
	"github.com/omnigraph-go/omnigraph/graph/changes"
	"github.com/omnigraph-go/omnigraph/graph/diff"
	"github.com/omnigraph-go/omnigraph/graph/merge"
	"github.com/omnigraph-go/omnigraph/graph/schema"
	"github.com/omnigraph-go/omnigraph/lang/pg"
	"github.com/omnigraph-go/omnigraph/manifest"
	"github.com/omnigraph-go/omnigraph/recovery"
	"github.com/omnigraph-go/omnigraph/table"
)

// reasons name the engine's refusals and failures, most specific first.
// One table serves both faces: the CLI prints the name as its JSON error
// code, and the server sends it as the envelope's reason, so a command
// run with --server reports what the same command run with --store does.
// docs/cli.md lists them.
var reasons = []struct {
	name   string
	target error
}{
	{clusterlock.CodeLockHeld, clusterlock.ErrLockHeld},
	{clusterlock.CodeWrongID, clusterlock.ErrWrongID},
	{clusterlock.CodeNotHeld, clusterlock.ErrNotHeld},
	{"schema_change_refused", schema.ErrRefused},
	{"branches_exist", schema.ErrBranchesExist},
	{"schema_locked", graph.ErrSchemaLocked},
	{"recovery_required", graph.ErrRecoveryRequired},
	{"recovery_pending", recovery.ErrPending},
	{"write_contended", graph.ErrContended},
	{"write_withdrawn", graph.ErrWithdrawn},
	{"read_set_changed", graph.ErrReadSetChanged},
	{"key_conflict", graph.ErrKeyConflict},
	{"invalid_input", graph.ErrInvalidInput},
	{"invalid_schema", graph.ErrInvalidSchema},
	{"invalid_schema", pg.ErrInvalidSchema},
	{"invalid_value", pg.ErrInvalidValue},
	{"not_a_read", graph.ErrNotARead},
	{"graph_exists", graph.ErrGraphExists},
	{"not_empty", graph.ErrNotEmpty},
	{"no_graph", graph.ErrNoGraph},
	{"read_only", graph.ErrReadOnly},
	{"invalid_branch", graph.ErrInvalidBranch},
	{"invalid_branch", manifest.ErrInvalidBranchName},
	{"has_descendants", graph.ErrHasDescendants},
	{"branch_not_found", manifest.ErrBranchNotFound},
	{"branch_exists", manifest.ErrBranchExists},
	{"branch_overlap", manifest.ErrBranchOverlap},
	{"commit_not_found", manifest.ErrCommitNotFound},
	{"invalid_commit_id", manifest.ErrInvalidCommitID},
	{"head_moved", manifest.ErrHeadMoved},
	{"storage_version", manifest.ErrStamp},
	{"corrupt", manifest.ErrCorrupt},
	{"corrupt", recovery.ErrCorruptSidecar},
	{"precondition_failed", graph.ErrPreconditionFailed},
	{"blob_not_found", blob.ErrNotFound},
	{"blob_range", table.ErrBlobRange},
	{"blob_external", blob.ErrExternal},
	{"blob_integrity", blob.ErrIntegrity},
	{"change_feed_gap", changes.ErrGap},
	{"change_cursor_rejected", changes.ErrCursorRejected},
	{"schema_boundary", diff.ErrSchemaBoundary},
	{"parentless_commit", diff.ErrParentlessCommit},
	{"budget_exceeded", graph.ErrBudgetExceeded},
	{"merge_conflict", merge.ErrMergeConflict},
	{"merge_too_large", merge.ErrMergeTooLarge},
	{"parentless_commit", merge.ErrParentlessCommit},
	{"schema_boundary", merge.ErrSchemaBoundary},
}

// Reason is the engine's name for err (branch_not_found, blob_range,
// ...), or "" when err is none of the engine's named errors.
func Reason(err error) string {
	for _, r := range reasons {
		if errors.Is(err, r.target) {
			return r.name
		}
	}
	return ""
}
