package clusterlock

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
)

// Stable error codes, for the CLI's JSON errors and exit-code table.
const (
	CodeLockHeld = "state_lock_held"
	CodeWrongID  = "lock_wrong_id"
	CodeNotHeld  = "lock_not_held"
	CodeLost     = "lock_lease_lost"
)

// Sentinels for errors.Is.
var (
	// ErrLockHeld: another holder has the lock. The error is a *HeldError.
	ErrLockHeld = errors.New("cluster lock is held")
	// ErrWrongID: Unlock was given an id that is not the holder's; nothing
	// was changed.
	ErrWrongID = errors.New("cluster lock id does not match the holder's")
	// ErrNotHeld: there is no lock to release or unlock, or it is no longer
	// ours (someone unlocked it); nothing was changed.
	ErrNotHeld = errors.New("cluster lock is not held")
	// ErrLeaseLost: a leased owner's lease lapsed or a successor claimed the
	// lock; every later write through Lease.Guard is refused.
	ErrLeaseLost = errors.New("cluster lock lease lost")
	// ErrLeaseUnsupported: the store cannot carry a leased lock.
	ErrLeaseUnsupported = errors.New("store cannot carry a leased cluster lock")
	// ErrFirstHeartbeat: a new owner's first heartbeat was not answered within
	// two thirds of a lease, so it must not start.
	ErrFirstHeartbeat = errors.New("first cluster lock heartbeat not answered")
)

// PlaceholderURL stands for the store URL in an unlock command when the
// caller did not supply one (Options.StoreURL); the CLI may replace it.
const PlaceholderURL = "<STORE_URL>"

// HeldError is the refusal of a held lock. It satisfies
// errors.Is(err, ErrLockHeld).
type HeldError struct {
	// Holder is the record found; for a record this binary cannot read,
	// only FormatVersion (and whatever decoded) is set.
	Holder Record
	// LockID is the exact id to pass to unlock.
	LockID string
	// Age is how long ago the holder created the lock (by this clock).
	Age time.Duration
	// Leased: the holder is a server with a lease; it is never waited for
	// and is taken over only by another server.
	Leased bool
	// HeartbeatsContinue: a watching starter saw the holder's heartbeats
	// advance.
	HeartbeatsContinue bool
	// HolderGone: the store is a local root, the holder ran on this host,
	// and its pid is no longer alive.
	HolderGone bool
	// UnknownFormat: the record was written by a binary with a newer format.
	UnknownFormat bool
	// StoreURL is the redacted URL for the unlock command (or
	// PlaceholderURL).
	StoreURL string

	version string // the record's storage version, for a takeover
}

// Code is CodeLockHeld.
func (e *HeldError) Code() string { return CodeLockHeld }

// Is matches ErrLockHeld.
func (e *HeldError) Is(target error) bool { return target == ErrLockHeld }

// UnlockCommand is the exact command that releases this lock.
func (e *HeldError) UnlockCommand() string {
	url := e.StoreURL
	if url == "" {
		url = PlaceholderURL
	}
	return fmt.Sprintf("omnigraph lock unlock --id %s --store %s", e.LockID, url)
}

func (e *HeldError) Error() string {
	var b strings.Builder
	b.WriteString(CodeLockHeld + ": the graph's cluster lock is held")
	if e.UnknownFormat {
		fmt.Fprintf(&b, " by a binary that writes lock format %d, which this one does not know (lock id %s); do not delete the record, use that binary", e.Holder.FormatVersion, e.LockID)
		return b.String()
	}
	h := e.Holder
	if h.Operation != "" {
		fmt.Fprintf(&b, " by %q", h.Operation)
	}
	fmt.Fprintf(&b, " (%s), lock id %s", h.Owner, e.LockID)
	if !h.CreatedAt.IsZero() {
		fmt.Fprintf(&b, ", taken %s ago", e.Age.Round(time.Second))
	}
	switch {
	case e.Leased && e.HeartbeatsContinue:
		fmt.Fprintf(&b, "; it is a server whose heartbeats continue (lease %d s)", h.LeaseSeconds)
	case e.Leased:
		fmt.Fprintf(&b, "; it is a server's leased lock (lease %d s): a restarted server takes it over after %s of heartbeat silence", h.LeaseSeconds, takeoverSilence(h.Lease()))
	}
	if e.HolderGone {
		b.WriteString("; the holder process is gone (no process with that pid on this host)")
	}
	fmt.Fprintf(&b, ". If no process holds it any more, release it with: %s", e.UnlockCommand())
	return b.String()
}

// WrongIDError refuses an Unlock with an id that is not the holder's. It
// satisfies errors.Is(err, ErrWrongID); nothing was changed.
type WrongIDError struct {
	Given, Holder string
}

func (e *WrongIDError) Error() string {
	return fmt.Sprintf("%s: lock id %s is not the holder's (%s); nothing was changed", CodeWrongID, e.Given, e.Holder)
}

// Is matches ErrWrongID.
func (e *WrongIDError) Is(target error) bool { return target == ErrWrongID }

// Code is CodeWrongID.
func (e *WrongIDError) Code() string { return CodeWrongID }

// storageErr wraps a storage failure for a message that names the step but
// never the key: the cause's class is kept for errors.Is, its text dropped.
type storageErr struct {
	step string
	err  error
}

func (e *storageErr) Error() string {
	return fmt.Sprintf("cluster lock: %s: storage failure (%s)", e.step, backend.KindOf(e.err))
}

func (e *storageErr) Unwrap() error { return e.err }

func wrapStorage(step string, err error) error {
	if err == nil {
		return nil
	}
	return &storageErr{step: step, err: err}
}
