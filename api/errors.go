package api

// ErrorCode is the closed set of the envelope's code field. New outcomes
// (412, 503 recovery_required) omit it and are recognised by status and
// detail, as upstream does, so an old client never meets a new enum value.
type ErrorCode string

// The error codes.
const (
	CodeUnauthorized     ErrorCode = "unauthorized"
	CodeForbidden        ErrorCode = "forbidden"
	CodeBadRequest       ErrorCode = "bad_request"
	CodeNotFound         ErrorCode = "not_found"
	CodeMethodNotAllowed ErrorCode = "method_not_allowed"
	CodeConflict         ErrorCode = "conflict"
	CodeTooManyRequests  ErrorCode = "too_many_requests"
	CodeInternal         ErrorCode = "internal"
)

// ErrorOutput is the error envelope of every non-2xx answer. At most one
// detail is set.
type ErrorOutput struct {
	Error               string               `json:"error"`
	Code                ErrorCode            `json:"code,omitempty"`
	MergeConflicts      []MergeConflict      `json:"merge_conflicts,omitempty"`
	ReadSetConflict     *ReadSetConflict     `json:"read_set_conflict,omitempty"`
	KeyConflict         *KeyConflict         `json:"key_conflict,omitempty"`
	ResourceLimit       *ResourceLimit       `json:"resource_limit,omitempty"`
	RecoveryRequired    *RecoveryRequired    `json:"recovery_required,omitempty"`
	PreconditionFailure *PreconditionFailure `json:"precondition_failure,omitempty"`
	OutcomeUnknown      *OutcomeUnknown      `json:"outcome_unknown,omitempty"`
	ChangeDiffRefusal   *ChangeDiffRefusal   `json:"change_diff_refusal,omitempty"`
	BlobRange           *BlobRange           `json:"blob_range,omitempty"`
	ChangeFeedGap       *ChangeFeedGap       `json:"change_feed_gap,omitempty"`
	// StopReason says why a stopping server refuses (503
	// server_stopping): shutdown, panic, recovery_required,
	// opaque_failure or lease_lost.
	StopReason string `json:"stop_reason,omitempty"`
	// Class is the failure class of a 500/503 (a storage failure kind,
	// "lease_lost", "poisoned"...): what the per-request log records.
	Class string `json:"failure_class,omitempty"`
	// Reason is the engine's name for the refusal or failure
	// (branch_not_found, blob_range, invalid_commit_id, ...), finer than
	// Code; the CLI prints the same name as its JSON error code.
	Reason string `json:"reason,omitempty"`
	// TraceID is the request's W3C trace id (32 hex digits) when the
	// server traces or the client sent a traceparent: quote it in an
	// error report, it leads to the trace.
	TraceID string `json:"trace_id,omitempty"`
}

// MergeConflict is one conflict of a refused merge.
type MergeConflict struct {
	EntityKind string `json:"entity_kind"` // "node" or "edge"
	TypeName   string `json:"type_name"`
	EntityID   string `json:"entity_id,omitempty"`
	Kind       string `json:"kind"`
	Message    string `json:"message"`
}

// ReadSetConflict: the write's branch authority changed before any effect.
type ReadSetConflict struct {
	Member   string `json:"member"`
	Expected string `json:"expected,omitempty"`
	Actual   string `json:"actual,omitempty"`
}

// KeyConflict: a strict insert hit an existing id.
type KeyConflict struct {
	EntityKind string `json:"entity_kind"`
	TypeName   string `json:"type_name"`
	EntityID   string `json:"entity_id,omitempty"`
}

// ResourceLimit: a request exceeded a ceiling; resource names which.
// For a query budget (query_rows, query_memory_bytes, query_time_ms,
// query_read_bytes) Actual is how far the query got when it was stopped,
// or with Estimated the planner's estimate of a query refused before it
// ran.
type ResourceLimit struct {
	Resource  string `json:"resource"`
	Limit     int64  `json:"limit"`
	Actual    int64  `json:"actual,omitempty"`
	Estimated bool   `json:"estimated,omitempty"`
}

// RecoveryRequired: an unresolved recovery intent covers the write.
type RecoveryRequired struct {
	OperationID string `json:"operation_id,omitempty"`
}

// PreconditionFailure: the graph-head compare-and-swap lost.
type PreconditionFailure struct {
	Expected string `json:"expected"`
	Actual   string `json:"actual,omitempty"`
}

// OutcomeUnknown: the write's publication answer was lost; it may have
// landed. Check says how to find out.
type OutcomeUnknown struct {
	Branch   string `json:"branch,omitempty"`
	CommitID string `json:"commit_id,omitempty"`
	Check    string `json:"check"`
}

// ChangeDiffRefusal: a commit's changes cannot be proven.
type ChangeDiffRefusal struct {
	Reason string `json:"reason"`
}

// BlobRange: a byte range outside a Blob value (416); the value holds
// Length bytes.
type BlobRange struct {
	Start  int64 `json:"start"`
	End    int64 `json:"end"`
	Length int64 `json:"length"`
}
