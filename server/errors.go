package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/poison"
	"github.com/omnigraph-go/omnigraph/clusterlock"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/blob"
	"github.com/omnigraph-go/omnigraph/graph/merge"
	"github.com/omnigraph-go/omnigraph/lang/gq"
	"github.com/omnigraph-go/omnigraph/lang/pg"
	"github.com/omnigraph-go/omnigraph/manifest"
	"github.com/omnigraph-go/omnigraph/recovery"
)

// Failure is an error already mapped to an HTTP answer.
type Failure struct {
	Status     int
	Body       api.ErrorOutput
	RetryAfter int // seconds; 0 sends no Retry-After
}

func (f *Failure) Error() string { return f.Body.Error }

func fail(status int, code api.ErrorCode, format string, args ...any) *Failure {
	return &Failure{Status: status, Body: api.ErrorOutput{Error: fmt.Sprintf(format, args...), Code: code}}
}

func badRequest(format string, args ...any) *Failure {
	return fail(http.StatusBadRequest, api.CodeBadRequest, format, args...)
}

// errTooLarge is the server's own body limit, raised as a *Failure.
func tooLarge(resource string, limit, actual int64) *Failure {
	return &Failure{Status: http.StatusRequestEntityTooLarge, Body: api.ErrorOutput{
		Error:         fmt.Sprintf("the request body exceeds the %d-byte limit of this route; nothing was written", limit),
		Code:          api.CodeBadRequest,
		ResourceLimit: &api.ResourceLimit{Resource: resource, Limit: limit, Actual: actual},
	}}
}

// userText is an engine message safe to show: input and query errors name
// lines, statements, types and ids the client sent, never storage keys;
// Redact strips any credential that slipped into a URL.
func userText(err error) string { return backend.Redact(err.Error()) }

// MapError maps an engine error to its HTTP answer: the one place that
// decides status codes, envelope details and messages. Messages of
// storage, recovery and lock failures are written here, not taken from
// the engine, so they never carry storage keys, paths or credentials;
// input and query errors keep the engine's text (what the client sent).
// graphID is used in the "how to check" hint of an unknown outcome.
func MapError(err error, graphID string) *Failure {
	var f *Failure
	if errors.As(err, &f) {
		return f
	}
	f = mapError(err, graphID)
	if f.Body.Reason == "" {
		f.Body.Reason = Reason(err)
	}
	return f
}

func mapError(err error, graphID string) *Failure {
	if f := mapFeedError(err); f != nil {
		return f
	}
	var (
		outcome *graph.OutcomeUnknown
		rr      *graph.RecoveryRequired
		rs      *graph.ReadSetChanged
		kc      *graph.KeyConflict
		pf      *graph.PreconditionFailed
		mc      *merge.MergeConflicts
		qe      *gq.Error
		mbe     *maxBytesError
		br      *blob.RangeError
	)
	commits := "GET /graphs/" + graphID + "/commits"
	if be, ok := errBudget(err); ok {
		return budgetFailure(be)
	}
	switch {
	case errors.As(err, &mbe):
		return tooLarge(mbe.resource, mbe.limit, 0)
	case errors.Is(err, poison.ErrPoisoned), errors.Is(err, clusterlock.ErrPoisoned):
		return &Failure{Status: http.StatusServiceUnavailable, Body: api.ErrorOutput{
			Error: "an earlier write to the same storage object has an unknown outcome, so this server refuses to write it again until it restarts; nothing was written",
			Class: "poisoned",
		}}
	case errors.As(err, &outcome):
		return &Failure{Status: http.StatusInternalServerError, Body: api.ErrorOutput{
			Error: fmt.Sprintf("the outcome of commit %s on branch %q is unknown (the storage answer was lost), so the write may have landed: do not send it again before checking: look for commit %s in %s?branch=%s; if it is there the write is done",
				outcome.CommitID, outcome.Branch, outcome.CommitID, commits, outcome.Branch),
			Code:           api.CodeInternal,
			OutcomeUnknown: &api.OutcomeUnknown{Branch: outcome.Branch, CommitID: outcome.CommitID, Check: commits + "?branch=" + outcome.Branch},
			Class:          "outcome_unknown",
		}}
	case errors.Is(err, manifest.ErrOutcomeUnknown), errors.Is(err, backend.ErrUnknown):
		return &Failure{Status: http.StatusInternalServerError, Body: api.ErrorOutput{
			Error:          "the outcome of the write is unknown (a storage answer was lost), so it may have landed: do not send it again before checking " + commits,
			Code:           api.CodeInternal,
			OutcomeUnknown: &api.OutcomeUnknown{Check: commits},
			Class:          "outcome_unknown",
		}}
	case errors.As(err, &rr):
		return &Failure{Status: http.StatusServiceUnavailable, Body: api.ErrorOutput{
			Error: fmt.Sprintf("recovery required for operation %s: the write may still land when it is recovered; do not send it again yet: a restart of the server (a read-write open) resolves it; then check %s and write again only if it did not land",
				rr.OperationID, commits),
			RecoveryRequired: &api.RecoveryRequired{OperationID: rr.OperationID},
			Class:            "recovery_required",
		}}
	case errors.Is(err, recovery.ErrPending), errors.Is(err, recovery.ErrDeferred):
		return &Failure{Status: http.StatusServiceUnavailable, Body: api.ErrorOutput{
			Error:            "a recovery intent is pending on this graph; a restart of the server (a read-write open) resolves it",
			RecoveryRequired: &api.RecoveryRequired{},
			Class:            "recovery_required",
		}}
	case errors.Is(err, clusterlock.ErrLeaseLost), errors.Is(err, clusterlock.ErrNotHeld):
		return &Failure{Status: http.StatusServiceUnavailable, Body: api.ErrorOutput{
			Error: "this server no longer holds the graph's writer lock and is stopping; nothing was written; send the write to the server that holds it",
			Class: "lease_lost",
		}}
	case errors.As(err, &pf):
		return &Failure{Status: http.StatusPreconditionFailed, Body: api.ErrorOutput{
			Error:               fmt.Sprintf("the head of branch %q is %s, not %s; nothing was written: read the branch again and retry with the new commit id", pf.Branch, pf.Actual, pf.Expected),
			PreconditionFailure: &api.PreconditionFailure{Expected: pf.Expected, Actual: pf.Actual},
		}}
	case errors.Is(err, graph.ErrContended):
		// Refused before any effect, so the client may send it again (the
		// Go client does, after Retry-After).
		return &Failure{Status: http.StatusServiceUnavailable, RetryAfter: 1, Body: api.ErrorOutput{
			Error: "another process kept moving the branch while this write was prepared, on every attempt; nothing was written: send it again after the Retry-After seconds",
			Class: "write_contended",
		}}
	case errors.As(err, &rs):
		return &Failure{Status: http.StatusConflict, Body: api.ErrorOutput{
			Error:           fmt.Sprintf("branch %q changed while the write was prepared (%s); nothing was written: run it again", rs.Branch, rs.Member),
			Code:            api.CodeConflict,
			ReadSetConflict: &api.ReadSetConflict{Member: rs.Member, Expected: rs.Expected, Actual: rs.Actual},
		}}
	case errors.As(err, &kc):
		return &Failure{Status: http.StatusConflict, Body: api.ErrorOutput{
			Error:       userText(kc),
			Code:        api.CodeConflict,
			KeyConflict: &api.KeyConflict{EntityKind: kc.EntityKind, TypeName: kc.TypeName, EntityID: kc.EntityID},
		}}
	case errors.As(err, &mc):
		return &Failure{Status: http.StatusConflict, Body: api.ErrorOutput{Error: userText(mc), Code: api.CodeConflict, MergeConflicts: apiConflicts(mc.Conflicts)}}
	case errors.Is(err, merge.ErrMergeTooLarge):
		return &Failure{Status: http.StatusRequestEntityTooLarge, Body: api.ErrorOutput{
			Error:         "the merge's delta exceeds the per-merge change limit; nothing was written",
			Code:          api.CodeBadRequest,
			ResourceLimit: &api.ResourceLimit{Resource: "merge_changes", Limit: merge.DefaultMaxChanges},
		}}
	case errors.Is(err, merge.ErrParentlessCommit):
		return &Failure{Status: http.StatusConflict, Body: api.ErrorOutput{Error: "the commit has no parent, so its changes cannot be computed", Code: api.CodeConflict, ChangeDiffRefusal: &api.ChangeDiffRefusal{Reason: "parentless_commit"}}}
	case errors.Is(err, merge.ErrSchemaBoundary):
		return &Failure{Status: http.StatusConflict, Body: api.ErrorOutput{Error: "the commit crosses a schema change, so its changes cannot be computed", Code: api.CodeConflict, ChangeDiffRefusal: &api.ChangeDiffRefusal{Reason: "schema_boundary"}}}
	case errors.As(err, &br):
		return &Failure{Status: http.StatusRequestedRangeNotSatisfiable, Body: api.ErrorOutput{Error: userText(br), Code: api.CodeBadRequest, BlobRange: &api.BlobRange{Start: br.Start, End: br.End, Length: br.Length}}}
	case errors.Is(err, blob.ErrNotFound):
		return fail(http.StatusNotFound, api.CodeNotFound, "%s", userText(err))
	case errors.Is(err, blob.ErrExternal):
		return badRequest("%s", userText(err))
	case errors.Is(err, blob.ErrIntegrity):
		return &Failure{Status: http.StatusInternalServerError, Body: api.ErrorOutput{
			Error: "the Blob value's stored bytes are missing or damaged; see the server log", Code: api.CodeInternal, Class: "blob_integrity",
		}}
	case errors.Is(err, graph.ErrNoGraph):
		return fail(http.StatusNotFound, api.CodeNotFound, "the graph holds no data at its storage location")
	case errors.Is(err, manifest.ErrBranchNotFound):
		return fail(http.StatusNotFound, api.CodeNotFound, "%s", userText(err))
	case errors.Is(err, manifest.ErrCommitNotFound), errors.Is(err, manifest.ErrCleanedUp):
		// A commit cleanup removed the data of is listed but unreadable.
		return fail(http.StatusNotFound, api.CodeNotFound, "%s", userText(err))
	case errors.Is(err, manifest.ErrBranchExists), errors.Is(err, manifest.ErrBranchOverlap),
		errors.Is(err, graph.ErrHasDescendants), errors.Is(err, manifest.ErrHeadMoved):
		return fail(http.StatusConflict, api.CodeConflict, "%s", userText(err))
	case errors.Is(err, graph.ErrTableDrift):
		return fail(http.StatusConflict, api.CodeConflict, "a table of this branch drifted from its last commit and no recovery intent covers it; nothing was written: an operator must run 'omnigraph repair' on the graph")
	case errors.Is(err, graph.ErrReadOnly):
		return fail(http.StatusForbidden, api.CodeForbidden, "this server is a read-only replica; send writes to the primary")
	case errors.As(err, &qe), errors.Is(err, gq.ErrInvalidQuery), errors.Is(err, graph.ErrInvalidInput),
		errors.Is(err, pg.ErrInvalidValue), errors.Is(err, pg.ErrInvalidSchema), errors.Is(err, graph.ErrInvalidSchema),
		errors.Is(err, graph.ErrNotARead), errors.Is(err, graph.ErrInvalidBranch), errors.Is(err, manifest.ErrInvalidCommitID),
		errors.Is(err, manifest.ErrInvalidBranchName):
		return badRequest("%s", userText(err))
	case errors.Is(err, graph.ErrWithdrawn):
		return &Failure{Status: http.StatusServiceUnavailable, Body: api.ErrorOutput{
			Error: "the write was withdrawn while it waited for its turn on the branch (its client went away or the server is stopping); nothing was written: send it again",
			Class: "cancelled",
		}}
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return &Failure{Status: http.StatusServiceUnavailable, Body: api.ErrorOutput{
			Error: "the request was cancelled or timed out; if it was a write, check " + commits + " before sending it again",
			Class: "cancelled",
		}}
	case errors.Is(err, graph.ErrUnfencedStore), errors.Is(err, manifest.ErrStamp),
		errors.Is(err, manifest.ErrCorrupt), errors.Is(err, recovery.ErrCorruptSidecar):
		return &Failure{Status: http.StatusInternalServerError, Body: api.ErrorOutput{
			Error: "the graph's storage is not in a state this server can use; see the server log", Code: api.CodeInternal, Class: "graph_state",
		}}
	}
	// A typed unknown outcome was answered above, so KindUnknown here is
	// KindOf's default for an error with no typed evidence at all: class
	// "internal", an opaque failure (StopCause), not a storage failure.
	class := "internal"
	if k := backend.KindOf(err); k != backend.KindNone && k != backend.KindUnknown {
		class = "storage_" + k.String()
	}
	return &Failure{Status: http.StatusInternalServerError, Body: api.ErrorOutput{
		Error: "the request failed inside the server (failure class " + class + "); if it was a write, check " + commits + " before sending it again",
		Code:  api.CodeInternal,
		Class: class,
	}}
}

// The causes of StopCause.
const (
	// StopRecoveryRequired: a write returned RecoveryRequired. Its durable
	// effects (table commits, possibly a publication) are in storage but
	// this process has not adopted them, and only a read-write open (a
	// restart) settles them for certain (seed 001: "a publication adopted
	// in storage but not in memory").
	StopRecoveryRequired = "recovery_required"
	// StopOpaqueFailure: a write failed with no typed evidence of what it
	// did: neither an engine error nor a classified storage failure
	// (MapError's class "internal"), so its effects are not known to be
	// scoped to its own storage keys.
	StopOpaqueFailure = "opaque_failure"
)

// StopCause is why a failed write (err, answered f) must stop the server,
// or "" when the server keeps serving: a definite failure, an ordinary
// conflict, or an unknown outcome scoped to the write's own keys (500
// outcome_unknown) fails that write only.
func StopCause(err error, f *Failure) string {
	var rr *graph.RecoveryRequired
	switch {
	case errors.As(err, &rr):
		return StopRecoveryRequired
	case f.Status == http.StatusInternalServerError && f.Body.Class == "internal":
		return StopOpaqueFailure
	}
	return ""
}
