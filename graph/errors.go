package graph

import (
	"errors"
	"fmt"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/manifest"
)

// Errors, classified with errors.Is. The manifest package's branch errors
// (manifest.ErrBranchNotFound, ErrBranchExists, ErrBranchOverlap,
// ErrCommitNotFound) and manifest.ErrStamp pass through wrapped.
var (
	// ErrGraphExists: Init found a graph at the location.
	ErrGraphExists = errors.New("a graph already exists at this location; open it instead, or pick an empty location")
	// ErrNotEmpty: Init found objects that are not a graph's at the location.
	ErrNotEmpty = errors.New("the location is not empty and holds no graph")
	// ErrNoGraph: Open found no graph at the location.
	ErrNoGraph = errors.New("no graph at this location; create one with 'omnigraph init --schema FILE.pg URL'")
	// ErrReadOnly: a write was attempted on a read-only handle.
	ErrReadOnly = errors.New("the graph is open read-only; open it read-write to change it")
	// ErrInvalidBranch: a branch name or branch operation is not allowed
	// (creating main, deleting main or the current branch, an internal name).
	ErrInvalidBranch = errors.New("invalid branch operation")
	// ErrHasDescendants: a branch delete found branches forked from it.
	ErrHasDescendants = errors.New("branch has descendants")
	// ErrInvalidSchema: Init was given a schema that does not compile.
	ErrInvalidSchema = errors.New("invalid schema")
)

// ReadSetChanged is returned when the branch-authority token a write
// prepared against changed before the write made any durable effect.
// Nothing was written. Member names what changed: "branch" (deleted),
// "branch_identifier", "graph_head" or "schema_identity".
//
// Retryable is true for writes that re-prepare (insert, append, merge):
// the caller prepares again against a fresh token, with a bounded retry.
// Strict writes (update, delete, overwrite) report it to the user.
type ReadSetChanged struct {
	Branch    string
	Member    string
	Expected  string
	Actual    string
	Retryable bool
	// Maintenance: only maintenance commits (optimize, index builds: no
	// row or schema changed) moved the branch, so what the write read is
	// still what the branch holds, and even a strict write prepares again
	// (Retryable is set). A client never sees a conflict with the
	// server's own compaction.
	Maintenance bool
}

func (e *ReadSetChanged) Error() string {
	return fmt.Sprintf("branch %q changed while the write was prepared (%s: expected %s, found %s); nothing was written, run it again",
		e.Branch, e.Member, e.Expected, e.Actual)
}

// OutcomeUnknown is returned when the manifest publish was sent but its
// answer was lost and reading the version back could not tell whether it
// landed. The commit may or may not be visible, so the write must not be
// sent again blindly (a retry that lands twice duplicates rows and edges):
// look for CommitID in 'omnigraph commit list' first, and at 'omnigraph
// recovery list' for its pending intent. It matches backend.ErrUnknown.
type OutcomeUnknown struct {
	Branch   string
	CommitID string
	Version  uint64
	Err      error
}

func (e *OutcomeUnknown) Error() string {
	return fmt.Sprintf("the outcome of commit %s on branch %q is unknown (the storage answer was lost), so it may have landed: do not run the write again before checking: look for commit %s in 'omnigraph commit list --branch %s'; if it is there the write is done, if not check 'omnigraph recovery list' (a read-write open resolves a pending intent) and only then write again: %v",
		e.CommitID, e.Branch, e.CommitID, e.Branch, e.Err)
}

// Unwrap exposes the storage error (which matches backend.ErrUnknown).
func (e *OutcomeUnknown) Unwrap() error { return e.Err }

// Is makes errors.Is(err, backend.ErrUnknown) hold even when the cause was
// reclassified on the way.
func (e *OutcomeUnknown) Is(target error) bool { return target == backend.ErrUnknown }

// TableDrift is returned, before anything is written, when a table the
// write targets has a live HEAD that differs from its manifest pin and no
// recovery intent covers it (a table commit no graph commit published, for
// example left by a tool or an older binary). Writing over it would commit
// the other tables and then fail; 'omnigraph repair' previews the drift
// and 'omnigraph repair --confirm' restores it. Matches ErrTableDrift.
type TableDrift struct {
	Branch string
	Table  string
	Pin    uint64
	Head   uint64
}

func (e *TableDrift) Error() string {
	return fmt.Sprintf("table %s on branch %q is at version %d but the branch's last commit pins version %d, and no recovery intent covers the difference; nothing was written: run 'omnigraph repair' to see the drift and 'omnigraph repair --confirm' to restore it, then run the write again",
		e.Table, e.Branch, e.Head, e.Pin)
}

// ErrTableDrift matches every *TableDrift.
var ErrTableDrift = errors.New("table drift")

// Is makes errors.Is(err, ErrTableDrift) hold.
func (e *TableDrift) Is(target error) bool { return target == ErrTableDrift }

// RecoveryRequired is returned when a write failed after a durable table
// effect, or when an unresolved recovery intent covers what a write needs.
// The graph stays consistent at its last published commit; the next
// read-write open (or the in-process heal, or 'omnigraph repair --confirm')
// resolves the operation, by rolling it forward (the write becomes
// visible, with its own commit) or back. So a write that returned it may
// still land: the message says what to check before writing again, never
// to retry blindly.
type RecoveryRequired struct {
	OperationID string
	Reason      string
	Err         error
}

func (e *RecoveryRequired) Error() string {
	msg := fmt.Sprintf("recovery required for operation %s: %s. The write may still land when it is recovered: do not run it again yet. "+
		"Check 'omnigraph recovery list' (pending and completed recoveries: RolledForward means the write landed) and 'omnigraph commit list'; "+
		"a read-write open or 'omnigraph repair --confirm' resolves a pending one, and only if it was rolled back or discarded should the write be run again",
		e.OperationID, e.Reason)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *RecoveryRequired) Unwrap() error { return e.Err }

// ErrRecoveryRequired matches every *RecoveryRequired.
var ErrRecoveryRequired = errors.New("recovery required")

// Is makes errors.Is(err, ErrRecoveryRequired) hold.
func (e *RecoveryRequired) Is(target error) bool { return target == ErrRecoveryRequired }

// Contended is returned when a write that re-prepares (an insert-only
// mutation, an append or merge load, a merge) spent its bounded retry: each
// attempt was prepared against a head another writer had already moved
// (a writer the process's write queue does not order: another process,
// schema apply). Nothing was written, so sending it again is safe; Err is
// the last attempt's *ReadSetChanged. It is not a conflict of the write's
// own (that is a strict write's ReadSetChanged): the server answers 503
// with Retry-After.
type Contended struct {
	Branch   string
	Attempts int
	Err      error
}

func (e *Contended) Error() string {
	return fmt.Sprintf("branch %q moved under this write on each of its %d attempts (another process is writing it); nothing was written: send it again", e.Branch, e.Attempts)
}

// Unwrap returns the last attempt's refusal.
func (e *Contended) Unwrap() error { return e.Err }

// ErrContended matches every *Contended.
var ErrContended = errors.New("write contended")

// Is makes errors.Is(err, ErrContended) hold.
func (e *Contended) Is(target error) bool { return target == ErrContended }

// ErrReadSetChanged matches every *ReadSetChanged.
var ErrReadSetChanged = errors.New("read set changed")

// Is makes errors.Is(err, ErrReadSetChanged) hold.
func (e *ReadSetChanged) Is(target error) bool { return target == ErrReadSetChanged }

// IsRetryable reports whether err is a ReadSetChanged that the write should
// answer by preparing again.
func IsRetryable(err error) bool {
	var rs *ReadSetChanged
	return errors.As(err, &rs) && rs.Retryable
}

var _ = manifest.ErrBranchNotFound

// ErrInvalidInput matches every *InputError: bad input that changed nothing.
var ErrInvalidInput = errors.New("invalid input")

// InputError is bad load data or a mutation that breaks a rule of the
// schema. Nothing was written. Where locates it ("line 12", "statement 2"),
// empty when it concerns the whole write.
type InputError struct {
	Where string
	Msg   string
}

func (e *InputError) Error() string {
	if e.Where == "" {
		return e.Msg
	}
	return e.Where + ": " + e.Msg
}

// Is makes errors.Is(err, ErrInvalidInput) hold.
func (e *InputError) Is(target error) bool { return target == ErrInvalidInput }

// InputErrorf returns an *InputError located at where.
func InputErrorf(where, format string, args ...any) error {
	return &InputError{Where: where, Msg: fmt.Sprintf(format, args...)}
}

// ErrKeyConflict matches every *KeyConflict.
var ErrKeyConflict = errors.New("key conflict")

// KeyConflict is an append (strict insert) of an id the branch already
// holds. Nothing was written; retrying never turns it into an upsert.
type KeyConflict struct {
	Where      string
	EntityKind string // "node" or "edge"
	TypeName   string
	EntityID   string
	Branch     string
}

func (e *KeyConflict) Error() string {
	msg := fmt.Sprintf("key_conflict: %s %s %q already exists on branch %q; append never replaces rows: load with --mode merge to upsert, or remove the line",
		e.EntityKind, e.TypeName, e.EntityID, e.Branch)
	if e.Where != "" {
		msg = e.Where + ": " + msg
	}
	return msg
}

// Is makes errors.Is(err, ErrKeyConflict) hold.
func (e *KeyConflict) Is(target error) bool { return target == ErrKeyConflict }

// ErrReferentialIntegrity matches a write refused because it would leave an
// edge whose endpoint does not exist (it also matches ErrInvalidInput).
var ErrReferentialIntegrity = errors.New("referential integrity")

// ErrPreconditionFailed matches every *PreconditionFailed.
var ErrPreconditionFailed = errors.New("precondition failed")

// PreconditionFailed is a conditional write (mutate.Options.IfCommit) whose
// branch head was not the expected commit. Nothing was written and the
// write was not retried.
type PreconditionFailed struct {
	Branch   string
	Expected string
	Actual   string
}

func (e *PreconditionFailed) Error() string {
	return fmt.Sprintf("precondition failed: the head of branch %q is %s, not %s; nothing was written: read the branch again and retry with the new commit id",
		e.Branch, e.Actual, e.Expected)
}

// Is makes errors.Is(err, ErrPreconditionFailed) hold.
func (e *PreconditionFailed) Is(target error) bool { return target == ErrPreconditionFailed }

// ErrNotARead: Query was handed a mutation; mutations go through the write
// path (omnigraph mutate).
var ErrNotARead = errors.New("graph: the query is a mutation, not a read")
