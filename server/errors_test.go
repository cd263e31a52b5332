package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

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

// secretKey stands for a storage key or path that must never reach a
// client: every storage, recovery and lock error below carries it.
const secretKey = "nodes/Person/_versions/7.manifest?X-Amz-Signature=SECRET"

// TestMapErrorEveryEngineError pins the one mapping from engine errors to
// answers: each typed engine error (wrapped with %w, as callers see them)
// gets its status, code and detail, and no message carries a storage key.
func TestMapErrorEveryEngineError(t *testing.T) {
	storage := func(k backend.Kind) error { return backend.NewError("put", secretKey, k, errors.New("raw "+secretKey)) }
	cases := []struct {
		name   string
		err    error
		status int
		code   api.ErrorCode
		detail string // the envelope field that must be set
	}{
		{"query error", &gq.Error{Code: "GQ001", Msg: "bad"}, 400, api.CodeBadRequest, ""},
		{"invalid query", gq.ErrInvalidQuery, 400, api.CodeBadRequest, ""},
		{"input error", graph.InputErrorf("line 2", "bad value"), 400, api.CodeBadRequest, ""},
		{"invalid value", pg.ErrInvalidValue, 400, api.CodeBadRequest, ""},
		{"invalid schema (pg)", pg.ErrInvalidSchema, 400, api.CodeBadRequest, ""},
		{"invalid schema", graph.ErrInvalidSchema, 400, api.CodeBadRequest, ""},
		{"not a read", graph.ErrNotARead, 400, api.CodeBadRequest, ""},
		{"invalid branch", graph.ErrInvalidBranch, 400, api.CodeBadRequest, ""},
		{"read-only", graph.ErrReadOnly, 403, api.CodeForbidden, ""},
		{"no graph", graph.ErrNoGraph, 404, api.CodeNotFound, ""},
		{"branch not found", manifest.ErrBranchNotFound, 404, api.CodeNotFound, ""},
		{"commit not found", manifest.ErrCommitNotFound, 404, api.CodeNotFound, ""},
		{"read set changed", &graph.ReadSetChanged{Branch: "main", Member: "graph_head", Expected: "A", Actual: "B"}, 409, api.CodeConflict, "read_set_conflict"},
		{"key conflict", &graph.KeyConflict{EntityKind: "node", TypeName: "Person", EntityID: "ada", Branch: "main"}, 409, api.CodeConflict, "key_conflict"},
		{"merge conflicts", &merge.MergeConflicts{Source: "f", Target: "main", Conflicts: []merge.Conflict{{EntityKind: "node", TypeName: "Person", EntityID: "ada", Kind: merge.DivergentUpdate}}}, 409, api.CodeConflict, "merge_conflicts"},
		{"branch exists", manifest.ErrBranchExists, 409, api.CodeConflict, ""},
		{"branch overlap", manifest.ErrBranchOverlap, 409, api.CodeConflict, ""},
		{"has descendants", graph.ErrHasDescendants, 409, api.CodeConflict, ""},
		{"head moved", manifest.ErrHeadMoved, 409, api.CodeConflict, ""},
		{"table drift", &graph.TableDrift{Branch: "main", Table: secretKey, Pin: 1, Head: 2}, 409, api.CodeConflict, ""},
		{"parentless commit", merge.ErrParentlessCommit, 409, api.CodeConflict, "change_diff_refusal"},
		{"schema boundary", merge.ErrSchemaBoundary, 409, api.CodeConflict, "change_diff_refusal"},
		{"precondition failed", &graph.PreconditionFailed{Branch: "main", Expected: "A", Actual: "B"}, 412, "", "precondition_failure"},
		{"merge too large", merge.ErrMergeTooLarge, 413, api.CodeBadRequest, "resource_limit"},
		{"body too large", &maxBytesError{limit: 10, resource: "request_body_bytes"}, 413, api.CodeBadRequest, "resource_limit"},
		{"outcome unknown", &graph.OutcomeUnknown{Branch: "main", CommitID: "C9", Err: storage(backend.KindUnknown)}, 500, api.CodeInternal, "outcome_unknown"},
		{"manifest outcome unknown", manifest.ErrOutcomeUnknown, 500, api.CodeInternal, "outcome_unknown"},
		{"storage unknown", storage(backend.KindUnknown), 500, api.CodeInternal, "outcome_unknown"},
		{"recovery required", &graph.RecoveryRequired{OperationID: "OP1", Reason: "r", Err: storage(backend.KindTransient)}, 503, "", "recovery_required"},
		{"recovery pending", recovery.ErrPending, 503, "", "recovery_required"},
		{"recovery deferred", recovery.ErrDeferred, 503, "", "recovery_required"},
		{"lease lost", &clusterlock.LostError{Reason: clusterlock.ReasonLapsed}, 503, "", ""},
		{"lock not held", clusterlock.ErrNotHeld, 503, "", ""},
		{"poisoned key", &poison.Error{Op: "put " + secretKey}, 503, "", ""},
		{"cancelled", context.Canceled, 503, "", ""},
		{"unfenced store", graph.ErrUnfencedStore, 500, api.CodeInternal, ""},
		{"storage stamp", manifest.ErrStamp, 500, api.CodeInternal, ""},
		{"corrupt manifest", manifest.ErrCorrupt, 500, api.CodeInternal, ""},
		{"corrupt sidecar", recovery.ErrCorruptSidecar, 500, api.CodeInternal, ""},
		{"storage transient", storage(backend.KindTransient), 500, api.CodeInternal, ""},
		{"storage permanent", storage(backend.KindPermanent), 500, api.CodeInternal, ""},
		{"storage configuration", storage(backend.KindConfiguration), 500, api.CodeInternal, ""},
		{"opaque", errors.New("boom " + secretKey), 500, api.CodeInternal, ""},
		{"blob not found", blob.ErrNotFound, 404, api.CodeNotFound, ""},
		{"blob range", &blob.RangeError{Start: 9, End: 10, Length: 4}, 416, api.CodeBadRequest, "blob_range"},
		{"blob external", blob.ErrExternal, 400, api.CodeBadRequest, ""},
		{"blob integrity", fmt.Errorf("%w: piece %s missing", blob.ErrIntegrity, secretKey), 500, api.CodeInternal, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := MapError(fmt.Errorf("wrapped: %w", tc.err), "default")
			if f.Status != tc.status || f.Body.Code != tc.code {
				t.Fatalf("status %d code %q, want %d %q (%s)", f.Status, f.Body.Code, tc.status, tc.code, f.Body.Error)
			}
			details := map[string]bool{
				"read_set_conflict":    f.Body.ReadSetConflict != nil,
				"key_conflict":         f.Body.KeyConflict != nil,
				"merge_conflicts":      f.Body.MergeConflicts != nil,
				"resource_limit":       f.Body.ResourceLimit != nil,
				"recovery_required":    f.Body.RecoveryRequired != nil,
				"precondition_failure": f.Body.PreconditionFailure != nil,
				"outcome_unknown":      f.Body.OutcomeUnknown != nil,
				"change_diff_refusal":  f.Body.ChangeDiffRefusal != nil,
				"blob_range":           f.Body.BlobRange != nil,
			}
			for name, set := range details {
				if set != (name == tc.detail) {
					t.Errorf("detail %s set=%v; want only %q", name, set, tc.detail)
				}
			}
			for _, bad := range []string{"nodes/", "_versions", "SECRET", "X-Amz"} {
				if strings.Contains(f.Body.Error, bad) {
					t.Errorf("message names %q: %s", bad, f.Body.Error)
				}
			}
			if f.Status >= 500 && f.Body.Class == "" {
				t.Errorf("a %d carries no failure class", f.Status)
			}
		})
	}
	// The unknown outcome says how to check.
	f := MapError(&graph.OutcomeUnknown{Branch: "main", CommitID: "C9"}, "g1")
	if f.Body.OutcomeUnknown.Check != "GET /graphs/g1/commits?branch=main" || !strings.Contains(f.Body.Error, "C9") {
		t.Fatalf("outcome_unknown: %+v", f.Body)
	}
	if r := MapError(&graph.RecoveryRequired{OperationID: "OP1"}, "g1"); r.Body.RecoveryRequired.OperationID != "OP1" {
		t.Fatalf("recovery_required: %+v", r.Body)
	}
}

// TestStopCause pins which failed writes stop the server (seed 001 "When
// the server stops"): RecoveryRequired and an opaque failure do; every
// other typed failure, including an unknown outcome scoped to the write's
// own keys and a poisoned key, fails that write only.
func TestStopCause(t *testing.T) {
	storage := func(k backend.Kind) error { return backend.NewError("put", "nodes/x", k, errors.New("injected")) }
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"recovery required", &graph.RecoveryRequired{OperationID: "OP1", Reason: "r"}, StopRecoveryRequired},
		{"recovery required wrapping a storage failure", &graph.RecoveryRequired{OperationID: "OP1", Err: storage(backend.KindPermanent)}, StopRecoveryRequired},
		{"opaque", errors.New("boom"), StopOpaqueFailure},
		{"outcome unknown", &graph.OutcomeUnknown{Branch: "main", CommitID: "C9", Err: storage(backend.KindUnknown)}, ""},
		{"storage unknown", storage(backend.KindUnknown), ""},
		{"storage permanent", storage(backend.KindPermanent), ""},
		{"storage transient", storage(backend.KindTransient), ""},
		{"poisoned key", &poison.Error{Op: "put"}, ""},
		{"lease lost", &clusterlock.LostError{Reason: clusterlock.ReasonLapsed}, ""},
		{"cancelled", context.Canceled, ""},
		{"key conflict", &graph.KeyConflict{EntityKind: "node", TypeName: "Person", EntityID: "a"}, ""},
		{"read set changed", &graph.ReadSetChanged{Branch: "main", Member: "graph_head"}, ""},
		{"invalid input", graph.ErrInvalidInput, ""},
		{"corrupt manifest", manifest.ErrCorrupt, ""},
	} {
		err := fmt.Errorf("wrapped: %w", tc.err)
		if got := StopCause(err, MapError(err, "default")); got != tc.want {
			t.Errorf("%s: StopCause %q, want %q", tc.name, got, tc.want)
		}
	}
	if f := MapError(errors.New("boom"), "default"); f.Body.Class != "internal" {
		t.Errorf("an untyped error's class is %q, want internal", f.Body.Class)
	}
}
