package client

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/omnigraph-go/omnigraph/api"
)

// Error is a request the server refused or failed (a non-2xx answer), or
// a write whose answer never came (Status 0, ErrOutcomeUnknown). Details
// is the server's error envelope: merge_conflicts, key_conflict,
// precondition_failure, outcome_unknown and the rest.
type Error struct {
	// Operation is the route's operation id (query, mutate, ...).
	Operation string
	// Status is the HTTP status; 0 when no answer arrived.
	Status int
	// Code is the envelope's code (empty for 412, 503 and a lost answer).
	Code api.ErrorCode
	// Reason is the engine's name for the refusal (the envelope's reason:
	// branch_not_found, blob_range, invalid_commit_id...), finer than Code
	// (bad_request, not_found); empty when the server gave none. It is
	// what the CLI prints as its JSON error code.
	Reason  string
	Message string
	Details api.ErrorOutput
	// RetryAfter is the wait the server asked for (429, 503), if any.
	RetryAfter time.Duration
	// Err is the transport failure when no answer arrived.
	Err error
}

func (e *Error) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("omnigraph %s: %s", e.Operation, e.Message)
	}
	return fmt.Sprintf("omnigraph %s: %d %s: %s", e.Operation, e.Status, http.StatusText(e.Status), e.Message)
}

// Unwrap is the transport failure of a lost answer.
func (e *Error) Unwrap() error { return e.Err }

// OutcomeUnknown reports whether the request was a write that may have
// landed, and the check to run before sending it again (e.g. "GET
// /graphs/default/commits?branch=main": look for the write's commit).
func (e *Error) OutcomeUnknown() (check string, unknown bool) {
	if e.Details.OutcomeUnknown == nil {
		return "", false
	}
	return e.Details.OutcomeUnknown.Check, true
}

// The kinds of Error, for errors.Is.
var (
	ErrBadRequest       = errors.New("bad request")           // 400, 415: the input is invalid; nothing was done
	ErrUnauthorized     = errors.New("unauthorized")          // 401: no or a wrong token
	ErrForbidden        = errors.New("forbidden")             // 403: the policy denies it, or a read-only replica
	ErrNotFound         = errors.New("not found")             // 404: no such graph, branch or commit
	ErrConflict         = errors.New("conflict")              // 409: key, read-set or merge conflicts; nothing was written
	ErrPrecondition     = errors.New("precondition failed")   // 412: the branch head is not the expected commit
	ErrTooLarge         = errors.New("too large")             // 413: a body or an answer beyond a limit
	ErrRange            = errors.New("range not satisfiable") // 416: a Blob byte range outside the value (Details.BlobRange)
	ErrTooManyRequests  = errors.New("too many requests")     // 429: retry after RetryAfter; nothing was done
	ErrUnavailable      = errors.New("unavailable")           // 503: recovery required or the server is stopping
	ErrRecoveryRequired = errors.New("recovery required")     // 503 with recovery_required
	ErrOutcomeUnknown   = errors.New("outcome unknown")       // a write that may have landed: see OutcomeUnknown
	ErrInternal         = errors.New("internal")              // 500
	// ErrUnreachable: no answer came from the server (refused connection,
	// unknown host, reset, timeout) and nothing was done: a read after its
	// retries, or a write that was never sent. Safe to send again later. A
	// write that was sent and then lost its answer is ErrOutcomeUnknown
	// instead, never this.
	ErrUnreachable = errors.New("server unreachable")
)

// unreachableError is a request no answer came for, with nothing done. It
// matches ErrUnreachable and unwraps to the transport failure.
type unreachableError struct {
	op  string
	msg string
	err error
}

func (e *unreachableError) Error() string {
	return fmt.Sprintf("omnigraph %s: %s: %v", e.op, e.msg, e.err)
}

func (e *unreachableError) Unwrap() []error { return []error{ErrUnreachable, e.err} }

// Is matches the kinds above.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrOutcomeUnknown:
		return e.Details.OutcomeUnknown != nil
	case ErrRecoveryRequired:
		return e.Details.RecoveryRequired != nil
	case ErrBadRequest:
		return e.Status == 400 || e.Status == 415
	case ErrUnauthorized:
		return e.Status == 401
	case ErrForbidden:
		return e.Status == 403
	case ErrNotFound:
		return e.Status == 404
	case ErrConflict:
		return e.Status == 409
	case ErrPrecondition:
		return e.Status == 412
	case ErrRange:
		return e.Status == 416
	case ErrTooLarge:
		return e.Status == 413
	case ErrTooManyRequests:
		return e.Status == 429
	case ErrUnavailable:
		return e.Status == 503
	case ErrInternal:
		return e.Status == 500
	}
	return false
}
