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
	// HolderGone: the holder ran on this host (same host name and, where
	// the record says, the same kernel and pid namespace) and its pid is no
	// longer a live process. Any store: a CLI writer on this host killed
	// while holding an S3 lock is gone too.
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

// UnlockCommand is the exact command that releases this lock
// (UnlockCommand of its id and StoreURL).
func (e *HeldError) UnlockCommand() string { return UnlockCommand(e.LockID, e.StoreURL) }

// UnlockCommand is the exact shell command that releases the lock id on the
// store at url (PlaceholderURL when url is empty). Every argument is quoted
// for a POSIX shell (sh, bash, zsh) where it needs it, so a URL with '?',
// '&', spaces or quotes is pasted as one argument and never globbed.
func UnlockCommand(id, url string) string {
	if url == "" {
		return "omnigraph lock unlock --id " + ShellQuote(id) + " --store " + PlaceholderURL
	}
	return "omnigraph lock unlock --id " + ShellQuote(id) + " --store " + ShellQuote(url)
}

// ShellQuote returns s as one POSIX shell word: unchanged when it holds only
// characters no shell treats specially, else in single quotes, with each
// single quote inside written as quote, backslash, quote, quote.
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, shellSafe) == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shellSafe are the characters a word may hold unquoted in sh, bash and
// zsh: no globs (* ? [), no expansions ($ ~ ! {), no separators.
const shellSafe = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+,./:=_-"

// Advice is how every message about a held lock ends (the refusal of a
// CLI writer, of a starting server, and lock status): whether the holder
// process is gone, and the exact command that releases the lock. One
// function, so the three never say different things.
func Advice(holderGone bool, unlockCommand string) string {
	if holderGone {
		return "the holder process is gone (no live process with that pid on this host), so release the lock with: " + unlockCommand
	}
	return "if no process holds it any more, release it with: " + unlockCommand
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
	fmt.Fprintf(&b, "; %s", Advice(e.HolderGone, e.UnlockCommand()))
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
