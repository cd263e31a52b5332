package clusterlock

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
)

// Reasons a lease is lost.
const (
	ReasonLapsed    = "lease_lapsed"    // no heartbeat answered for two thirds of a lease
	ReasonSuccessor = "successor_claim" // the record now names another lock (or none)
)

// LostError says why a lease was lost. It satisfies errors.Is(err,
// ErrLeaseLost).
type LostError struct {
	Reason string
	// Class is the failure class of the last heartbeat failure, if any.
	Class backend.Kind
}

func (e *LostError) Error() string {
	switch e.Reason {
	case ReasonSuccessor:
		return CodeLost + ": another server claimed the cluster lock (or it was unlocked); every storage write is refused"
	default:
		return fmt.Sprintf("%s: no cluster lock heartbeat was answered for two thirds of the lease (last failure class %s); every storage write is refused", CodeLost, e.Class)
	}
}

// Is matches ErrLeaseLost.
func (e *LostError) Is(target error) bool { return target == ErrLeaseLost }

// Code is CodeLost.
func (e *LostError) Code() string { return CodeLost }

// Lease is a held leased lock: a server's, renewed by heartbeats until
// Release, or lost.
type Lease struct {
	store  backend.StorageAdapter
	opts   Options
	clock  Clock
	log    *slog.Logger
	poison *Poison
	rec    Record
	lease  time.Duration

	ctx    context.Context // ends when the lease is lost or released
	cancel context.CancelCauseFunc
	lost   chan struct{}
	wg     sync.WaitGroup

	mu        sync.Mutex
	version   string    // the record's storage version
	answered  time.Time // send time of the newest answered heartbeat
	seq       uint64    // last heartbeat sequence number sent
	beats     int       // heartbeats answered
	lastClass backend.Kind
	lostErr   error
	released  bool
}

// AcquireLeased takes a leased lock for a server. The store must have
// conditional create and update (callers choose leased locks by
// LeasedScheme; local and Azure roots take Acquire's unleased lock).
//
// A free lock is created and its first heartbeat written; if that heartbeat
// is not answered within two thirds of the lease, AcquireLeased releases the
// lock and fails with ErrFirstHeartbeat: the server must not start. A lock
// held without a lease (a CLI writer) is refused at once. A leased lock held
// by another server is watched: while its heartbeats advance the starter is
// refused with a *HeldError (HeartbeatsContinue); after a lease and a half of
// silence (the owner's recorded lease) it is taken over by a compare-and-
// swap, so of two starters exactly one wins and the other is refused.
//
// The returned Lease heartbeats every third of the lease until Release. Its
// Lost channel closes, and opts.OnLost is called, when no heartbeat has been
// answered for two thirds of the lease or the record no longer names it.
func AcquireLeased(ctx context.Context, s backend.StorageAdapter, opts Options) (*Lease, error) {
	lease := opts.Lease
	if lease == 0 {
		lease = DefaultLease
	}
	if err := validLease(lease); err != nil {
		return nil, err
	}
	if c := s.Capabilities(); !c.ConditionalCreate || !c.ConditionalUpdate {
		return nil, ErrLeaseUnsupported
	}
	clock, p := opts.clock(), opts.poison()
	rec := Record{
		FormatVersion: FormatLeased,
		LockID:        NewLockID(),
		Operation:     opts.Operation,
		Owner:         opts.owner(),
		CreatedAt:     clock.Now().UTC(),
		LeaseSeconds:  int(lease / time.Second),
	}
	if rec.Operation == "" {
		rec.Operation = "serve"
	}
	for {
		version, held, err := create(ctx, s, p, rec, opts)
		if err != nil {
			return nil, err
		}
		if held == nil {
			return start(ctx, s, p, rec, version, opts)
		}
		if !held.Leased || held.UnknownFormat {
			return nil, held
		}
		outcome, err := watch(ctx, s, held, opts)
		if err != nil {
			return nil, err
		}
		switch outcome {
		case watchAlive:
			held.HeartbeatsContinue = true
			return nil, held
		case watchChanged:
			continue
		}
		// Silent for a lease and a half: take over, conditionally on the
		// record still being the one watched.
		if err := p.Check(LockKey); err != nil {
			return nil, err
		}
		rec.CreatedAt = clock.Now().UTC()
		a, err := s.PutIfMatch(ctx, LockKey, encodeRecord(rec), held.version)
		switch {
		case err == nil:
			version = a.Version
		case backend.IsPrecondition(err) || backend.IsNotFound(err):
			// Someone else moved first: another starter took it over
			// (refuse: it has just started), or it was released (retry).
			f, rerr := read(ctx, s)
			if rerr != nil {
				return nil, rerr
			}
			if f.absent || (f.format == nil && f.rec.Released) {
				continue
			}
			return nil, heldError(f, opts)
		default:
			if version, err = settle(ctx, s, p, rec, err, opts); err != nil {
				return nil, err
			}
		}
		opts.logger().Warn("took over a silent owner's cluster lock",
			"lock_id", rec.LockID, "previous_lock_id", held.LockID, "lease_seconds", held.Holder.LeaseSeconds)
		return start(ctx, s, p, rec, version, opts)
	}
}

type watchOutcome int

const (
	watchAlive   watchOutcome = iota // the holder's heartbeats advanced
	watchChanged                     // the record changed or went away
	watchSilent                      // a lease and a half without a new heartbeat
)

// watch observes a leased holder's heartbeats on the holder's own lease.
// Silence is measured on this process's clock from its first successful
// observation, and only a round whose reads succeeded can end it.
func watch(ctx context.Context, s backend.StorageAdapter, held *HeldError, o Options) (watchOutcome, error) {
	clock, lease := o.clock(), held.Holder.Lease()
	poll := heartbeatInterval(lease) / 2
	var (
		base    string
		started time.Time
		have    bool
	)
	for {
		outcome, ok := func() (watchOutcome, bool) {
			rctx, cancel := context.WithTimeout(ctx, o.requestTimeout(lease))
			defer cancel()
			a, err := s.Stat(rctx, LockKey)
			if backend.IsNotFound(err) || (err == nil && a.Version != held.version) {
				return watchChanged, true
			}
			if err != nil {
				return 0, false
			}
			newest, _, err := newestBeat(rctx, s, held.LockID)
			if err != nil {
				return 0, false
			}
			now := clock.Now()
			switch {
			case !have:
				base, started, have = newest.Key, now, true
			case newest.Key > base:
				return watchAlive, true
			case now.Sub(started) >= takeoverSilence(lease):
				return watchSilent, true
			}
			return 0, false
		}()
		if ok {
			return outcome, nil
		}
		if err := clock.Sleep(ctx, poll); err != nil {
			return 0, fmt.Errorf("watching the cluster lock's heartbeats: %w", err)
		}
	}
}

func (o Options) requestTimeout(lease time.Duration) time.Duration {
	if o.RequestTimeout > 0 {
		return o.RequestTimeout
	}
	return heartbeatInterval(lease)
}

// start writes the first heartbeat and, once it is answered, starts the
// heartbeat loop and the lapse watchdog.
func start(ctx context.Context, s backend.StorageAdapter, p *Poison, rec Record, version string, o Options) (*Lease, error) {
	lctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	l := &Lease{
		store: s, opts: o, clock: o.clock(), log: o.logger(), poison: p, rec: rec, lease: rec.Lease(),
		ctx: lctx, cancel: cancel, lost: make(chan struct{}), version: version,
	}
	t0 := l.clock.Now()
	if !l.beat(ctx, 1, t0.Add(lapseAfter(l.lease))) {
		l.log.Error("cluster lock first heartbeat not answered", "failure_class", l.lastClass.String(), "lock_id", rec.LockID, "lease_seconds", rec.LeaseSeconds)
		cancel(ErrFirstHeartbeat)
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), o.requestTimeout(l.lease))
		_ = release(rctx, s, p, rec.LockID, version, o) // best effort; a lock left behind is taken over later
		rcancel()
		return nil, fmt.Errorf("%w within two thirds of the lease (failure class %s); not starting", ErrFirstHeartbeat, l.lastClass)
	}
	l.wg.Add(2)
	go l.heartbeats(t0)
	go l.watchdog()
	return l, nil
}

// ID is the exact lock id.
func (l *Lease) ID() string { return l.rec.LockID }

// Record is the record this lease wrote.
func (l *Lease) Record() Record { return l.rec }

// Lost is closed when the lease is lost (not when it is released).
func (l *Lease) Lost() <-chan struct{} { return l.lost }

// Err is the *LostError once the lease is lost, else nil.
func (l *Lease) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lostErr
}

// Context ends when the lease is lost or released; its cause says which.
func (l *Lease) Context() context.Context { return l.ctx }

// Heartbeats is the number of heartbeats answered so far.
func (l *Lease) Heartbeats() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.beats
}

// Valid returns nil while the lease holds: not lost, not released, and a
// heartbeat answered within two thirds of a lease by this clock. Otherwise it
// returns why, and a lapse found here is declared at once, without waiting
// for the watchdog.
func (l *Lease) Valid() error {
	l.mu.Lock()
	lostErr, released, answered := l.lostErr, l.released, l.answered
	l.mu.Unlock()
	switch {
	case lostErr != nil:
		return lostErr
	case released:
		return fmt.Errorf("cluster lock %s was released: %w", l.rec.LockID, ErrNotHeld)
	case l.clock.Now().Sub(answered) >= lapseAfter(l.lease):
		l.lose(ReasonLapsed)
		return l.Err()
	}
	return nil
}

func (l *Lease) lose(reason string) {
	l.mu.Lock()
	if l.lostErr != nil || l.released {
		l.mu.Unlock()
		return
	}
	err := &LostError{Reason: reason, Class: l.lastClass}
	l.lostErr = err
	unanswered := l.clock.Now().Sub(l.answered)
	l.mu.Unlock()
	l.cancel(err)
	close(l.lost)
	if reason == ReasonSuccessor {
		l.log.Error("another server claimed the cluster lock; stopping every storage write", "reason", reason, "lock_id", l.rec.LockID)
	} else {
		l.log.Error("cluster lock lease lapsed; stopping every storage write", "reason", reason,
			"failure_class", err.Class.String(), "unanswered_for", unanswered.Round(time.Millisecond).String(), "lock_id", l.rec.LockID)
	}
	if l.opts.OnLost != nil {
		l.opts.OnLost(err)
	}
}

// heartbeats sends heartbeat n at t0 + (n-1)*interval, then checks that the
// record still names this lock.
func (l *Lease) heartbeats(t0 time.Time) {
	defer l.wg.Done()
	interval := heartbeatInterval(l.lease)
	for n := uint64(2); ; n++ {
		due := t0.Add(time.Duration(n-1) * interval)
		if l.clock.Sleep(l.ctx, due.Sub(l.clock.Now())) != nil {
			return
		}
		if l.beat(l.ctx, n, due.Add(interval)) {
			l.tidy(n)
		}
		if l.ctx.Err() != nil {
			return
		}
		l.checkRecord()
	}
}

// beat writes heartbeat n, retrying until it is answered or until. A
// heartbeat is a conditional create of a key only this lock writes, so a
// retry is the identical request: an ErrPrecondition answer proves an
// earlier attempt landed, and counts. It counts from the send time of the
// first attempt, the earliest moment it could have landed.
func (l *Lease) beat(ctx context.Context, n uint64, until time.Time) bool {
	key := heartbeatKey(l.rec.LockID, n)
	sent := l.clock.Now()
	body, _ := json.Marshal(heartbeat{LockID: l.rec.LockID, Seq: n, SentAt: sent.UTC()})
	l.mu.Lock()
	l.seq = n
	l.mu.Unlock()
	backoff := heartbeatInterval(l.lease) / 4
	for attempt := 1; ; attempt++ {
		rctx, cancel := context.WithTimeout(ctx, l.opts.requestTimeout(l.lease))
		_, err := l.store.PutIfAbsent(rctx, key, body)
		cancel()
		if err == nil || backend.IsPrecondition(err) {
			l.poison.Settle(key)
			l.mu.Lock()
			if sent.After(l.answered) {
				l.answered = sent
			}
			l.beats++
			l.mu.Unlock()
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		kind := backend.KindOf(err)
		l.mu.Lock()
		l.lastClass = kind
		l.mu.Unlock()
		if l.poison.Observe(key, err) {
			l.log.Warn("cluster lock heartbeat outcome unknown; re-issuing the identical conditional create",
				"failure_class", kind.String(), "scoped", true, "seq", n, "attempt", attempt)
		} else {
			l.log.Warn("cluster lock heartbeat failed", "failure_class", kind.String(), "seq", n, "attempt", attempt)
		}
		wait := min(backoff, until.Sub(l.clock.Now()))
		if wait <= 0 || l.clock.Sleep(ctx, wait) != nil {
			return false
		}
	}
}

// tidy deletes the heartbeat three before n; a watcher needs only the
// newest. Keys with an uncertain write are left for Release's sweep.
func (l *Lease) tidy(n uint64) {
	if n <= 3 {
		return
	}
	key := heartbeatKey(l.rec.LockID, n-3)
	if l.poison.Poisoned(key) {
		return
	}
	ctx, cancel := context.WithTimeout(l.ctx, l.opts.requestTimeout(l.lease))
	defer cancel()
	l.poison.Observe(key, l.store.Delete(ctx, key))
}

// checkRecord declares a successor claim when the record no longer names
// this lock. A failed read proves nothing and is left to the lapse rule.
func (l *Lease) checkRecord() {
	ctx, cancel := context.WithTimeout(l.ctx, l.opts.requestTimeout(l.lease))
	defer cancel()
	f, err := read(ctx, l.store)
	if err != nil || l.ctx.Err() != nil {
		return
	}
	if f.absent || f.format != nil || f.rec.Released || f.rec.LockID != l.rec.LockID {
		l.lose(ReasonSuccessor)
	}
}

// watchdog declares a lapse when no heartbeat has been answered for two
// thirds of a lease.
func (l *Lease) watchdog() {
	defer l.wg.Done()
	for {
		l.mu.Lock()
		deadline := l.answered.Add(lapseAfter(l.lease))
		l.mu.Unlock()
		now := l.clock.Now()
		if !now.Before(deadline) {
			l.lose(ReasonLapsed)
			return
		}
		if l.clock.Sleep(l.ctx, deadline.Sub(now)) != nil {
			return
		}
	}
}

// Release is the clean shutdown: it stops the heartbeats, replaces the
// record by a tombstone (compare-and-swap on the version this lease wrote)
// and deletes the heartbeat objects. A lost lease is not released: its
// record belongs to the successor, or to the operator.
func (l *Lease) Release(ctx context.Context) error {
	l.mu.Lock()
	if l.lostErr != nil {
		err := l.lostErr
		l.mu.Unlock()
		l.wg.Wait()
		return err
	}
	if l.released {
		l.mu.Unlock()
		return nil
	}
	l.released = true
	l.mu.Unlock()
	l.cancel(fmt.Errorf("cluster lock %s released: %w", l.rec.LockID, ErrNotHeld))
	l.wg.Wait()
	if err := release(ctx, l.store, l.poison, l.rec.LockID, l.version, l.opts); err != nil {
		return err
	}
	_ = l.store.DeletePrefix(ctx, heartbeatPrefix(l.rec.LockID))
	return nil
}

// newestBeat returns the newest heartbeat object of lock id.
func newestBeat(ctx context.Context, s backend.StorageAdapter, id string) (backend.Attrs, bool, error) {
	all, err := backend.ListAll(ctx, s, heartbeatPrefix(id))
	if err != nil {
		return backend.Attrs{}, false, wrapStorage("listing heartbeats", err)
	}
	if len(all) == 0 {
		return backend.Attrs{}, false, nil
	}
	return all[len(all)-1], true, nil
}

func seqOf(key string) uint64 {
	name := key[strings.LastIndexByte(key, '/')+1:]
	n, _ := strconv.ParseUint(strings.TrimSuffix(name, ".json"), 10, 64)
	return n
}
