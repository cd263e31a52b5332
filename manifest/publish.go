package manifest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/internal/plant"
)

// The re-issue rule: a manifest create whose answer was lost, timed out or
// throttled is sent again, unchanged, after each of these pauses: up to
// MaxReissues re-issues with about three seconds of pauses in total, plus
// each request's own time.
var reissuePauses = [...]time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 1250 * time.Millisecond}

// MaxReissues is how many times an unsettled manifest create is re-issued
// after its first attempt (so at most MaxReissues+1 requests are sent).
const MaxReissues = len(reissuePauses)

// ReissuePauses returns the pauses before each re-issue, in order.
func ReissuePauses() []time.Duration { return append([]time.Duration(nil), reissuePauses[:]...) }

// Sleeper waits d, or until ctx ends, in which case it returns ctx.Err().
type Sleeper func(ctx context.Context, d time.Duration) error

// RealSleep is the default Sleeper: the wall clock.
func RealSleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// ErrOutcomeUnknown matches every *UnknownError. Errors matching it also
// match backend.ErrUnknown.
var ErrOutcomeUnknown = errors.New("manifest publish outcome unknown")

// UnknownError is the outcome of a manifest create that no request settled:
// the version may hold this commit, or may still receive it later (a request
// can land any time before the branch's next publication, or never). The
// caller must not send the write again blindly; reading the branch's commits
// tells whether it landed. It matches ErrOutcomeUnknown and
// backend.ErrUnknown, and backend.KindOf reports it as KindUnknown. Its
// message names the branch and version, never a storage key or an error
// text from the store.
type UnknownError struct {
	Branch  string
	Version uint64
	// Attempts is the number of identical requests sent.
	Attempts int
	// Last is the class of the last failure.
	Last backend.Kind
	// Err is the last storage error.
	Err error
}

func (e *UnknownError) Error() string {
	return fmt.Sprintf("publishing version %d of branch %q: no answer settled it after %d identical conditional requests (last failure: %s), so it may have landed or may still land before the branch's next commit; read the branch's commits ('omnigraph commit list --branch %s') to find out before writing again",
		e.Version, e.Branch, e.Attempts, e.Last, e.Branch)
}

// Unwrap exposes the last storage error.
func (e *UnknownError) Unwrap() error { return e.Err }

// Is matches ErrOutcomeUnknown and backend.ErrUnknown.
func (e *UnknownError) Is(target error) bool {
	return target == ErrOutcomeUnknown || target == backend.ErrUnknown
}

// As answers a *backend.Error target with an Unknown-kind error (no key),
// so backend.KindOf reports KindUnknown even when the last attempt itself
// was classified otherwise (a throttle after an earlier lost answer).
func (e *UnknownError) As(target any) bool {
	if p, ok := target.(**backend.Error); ok {
		*p = backend.NewError("publish manifest version", "", backend.KindUnknown, e.Err)
		return true
	}
	return false
}

// Publish stores e as the next version of its branch incarnation with a
// PutIfAbsent of its version key.
//
//   - Created: done, once.
//   - The key is taken on the first attempt: another writer published
//     e.Version first or the incarnation was deleted: ErrHeadMoved, nothing
//     written.
//   - The answer was lost, timed out or throttled: the identical request is
//     re-issued (MaxReissues times at most, pausing ReissuePauses). When a
//     re-issue finds the version taken, it is read back: our exact bytes
//     (they carry our commit id) mean success, other bytes ErrHeadMoved.
//   - No request settles it: *UnknownError (errors.Is backend.ErrUnknown).
//     When every failure proved the request had no effect (all Transient),
//     nothing was published and the last error is returned as is.
//
// Re-issuing a create never publishes twice: it can only land on an absent
// key, and a landed attempt makes every later one fail its condition.
func (m *Store) Publish(ctx context.Context, e *Entry) error {
	data, err := Encode(e)
	if err != nil {
		return err
	}
	return m.create(ctx, e.Key(), e.Branch, e.Version, data)
}

// reissuable reports whether a failed create may be sent again unchanged:
// its answer was lost or timed out (Unknown) or it was throttled or refused
// without effect (Transient).
func reissuable(err error) bool {
	return errors.Is(err, backend.ErrUnknown) || errors.Is(err, backend.ErrTransient)
}

// create puts data at key (version v of branch) if absent, under the
// re-issue rule. Logs name the branch and version, never the key.
func (m *Store) create(ctx context.Context, key, branch string, v uint64, data []byte) error {
	sleep := m.sleep
	if sleep == nil {
		sleep = RealSleep
	}
	var (
		ambiguous bool  // some attempt may have taken effect
		last      error // the last failure
		sent      int   // requests sent
	)
	for attempt := 1; ; attempt++ {
		sent = attempt
		_, err := m.s.PutIfAbsent(ctx, key, data)
		switch {
		case err == nil:
			return nil
		case backend.IsPrecondition(err) && attempt == 1:
			return fmt.Errorf("%w: branch %q version %d was already published by another writer", ErrHeadMoved, branch, v)
		case backend.IsPrecondition(err):
			// A re-issue found the version taken: by an earlier attempt
			// of ours, or by another writer. The bytes tell which.
			if plant.On(plant.PublishTwice) {
				return fmt.Errorf("%w: branch %q version %d was published by another writer", ErrHeadMoved, branch, v)
			}
			got, _, rerr := m.s.Get(ctx, key)
			switch {
			case rerr == nil && bytes.Equal(got, data):
				return nil
			case rerr == nil:
				return fmt.Errorf("%w: branch %q version %d was published by another writer", ErrHeadMoved, branch, v)
			}
			ambiguous, last = true, rerr // taken, by whom is not known yet
		case reissuable(err):
			if errors.Is(err, backend.ErrUnknown) {
				ambiguous = true
			}
			last = err
		case !ambiguous:
			return fmt.Errorf("publish manifest version: %w", err)
		default:
			// Refused outright after an earlier attempt may have landed:
			// re-issuing would be refused again.
			last = err
		}
		if attempt > MaxReissues || ctx.Err() != nil || !reissuable(last) && !backend.IsPrecondition(err) {
			break
		}
		pause := reissuePauses[attempt-1]
		m.logger().Warn("manifest request outcome unknown; re-issuing the identical conditional request",
			"failure_class", backend.KindOf(last).String(), "scoped", true,
			"reissue", attempt, "pause_ms", pause.Milliseconds(), "branch", branch, "version", v)
		if sleep(ctx, pause) != nil {
			break
		}
	}
	if !ambiguous {
		// Every failure proved the request had no effect: nothing was
		// published, and nothing can land later.
		return fmt.Errorf("publish manifest version (not published): %w", last)
	}
	kind := backend.KindOf(last)
	m.logger().Error("manifest request outcome unknown after every re-issue",
		"failure_class", kind.String(), "status", 500, "scoped", true,
		"attempts", sent, "branch", branch, "version", v)
	return &UnknownError{Branch: branch, Version: v, Attempts: sent, Last: kind, Err: last}
}
