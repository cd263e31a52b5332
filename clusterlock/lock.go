package clusterlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
)

// Options configure Acquire, AcquireLeased, Status and Unlock. The zero
// value is usable: no wait, the system clock, OS liveness, no logs.
type Options struct {
	// Operation names what the lock is for ("load", "repair", "serve").
	Operation string
	// Wait > 0 polls a held unleased lock until it is free or Wait has
	// passed. A leased holder (a server) is refused at once.
	Wait time.Duration
	// PollInterval is the pause between polls while waiting; zero means
	// one second (or Wait, if shorter).
	PollInterval time.Duration
	// StoreURL is the redacted store URL quoted in the unlock command of a
	// refusal; empty leaves PlaceholderURL.
	StoreURL string
	// Owner describes this process; zero means ThisOwner(BinaryVersion).
	Owner Owner
	// BinaryVersion goes into the default Owner.
	BinaryVersion string
	// Clock drives every timer; nil means SystemClock.
	Clock Clock
	// Alive reports whether a pid on this host is alive; nil asks the OS.
	Alive func(pid int) bool
	// Logger receives structured events; nil discards them.
	Logger *slog.Logger
	// Poison is the set of this process's uncertain reused keys for this
	// store; share one per store for the life of the process. Nil scopes a
	// fresh set to this call and the handle it returns.
	Poison *Poison

	// Lease is the lease of AcquireLeased; zero means DefaultLease. Must be
	// whole seconds from 2 to 600 (see LeaseFromEnv).
	Lease time.Duration
	// OnLost is called once, from the lease's own goroutine, when a leased
	// owner's lease is lost. The server exits 2 from it. Lease.Lost is the
	// channel form.
	OnLost func(error)
	// RequestTimeout bounds each heartbeat and watch request; zero means a
	// third of the lease.
	RequestTimeout time.Duration
}

func (o Options) clock() Clock {
	if o.Clock == nil {
		return SystemClock{}
	}
	return o.Clock
}

func (o Options) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Logger
}

func (o Options) alive(pid int) bool {
	if o.Alive == nil {
		return processAlive(pid)
	}
	return o.Alive(pid)
}

func (o Options) owner() Owner {
	if o.Owner == (Owner{}) {
		return ThisOwner(o.BinaryVersion)
	}
	return o.Owner
}

func (o Options) poison() *Poison {
	if o.Poison == nil {
		return NewPoison()
	}
	return o.Poison
}

func (o Options) poll() time.Duration {
	p := o.PollInterval
	if p <= 0 {
		p = time.Second
	}
	if o.Wait > 0 && o.Wait < p {
		p = o.Wait
	}
	return p
}

// Lock is a held unleased lock. Release it when the operation is done.
type Lock struct {
	store   backend.StorageAdapter
	opts    Options
	poison  *Poison
	rec     Record
	version string
}

// ID is the exact lock id.
func (l *Lock) ID() string { return l.rec.LockID }

// Record is the record this lock wrote.
func (l *Lock) Record() Record { return l.rec }

// Release removes the lock if it is still this one; a lock someone unlocked
// (and perhaps someone else took) is left alone and reported as ErrNotHeld.
//
// On a store with conditional update the record is replaced, compare-and-
// swap on the version this lock wrote, by a tombstone, and the tombstone is
// left in place: deleting it afterwards could delete a new holder's record
// that replaced it in between, and the contract has no conditional delete.
// A later Acquire replaces a tombstone by the same compare-and-swap. On a
// store without conditional update the record is read, its id compared, and
// deleted; the gap between the read and the delete matters only if an
// operator unlocks this live lock and another writer takes it within it.
//
// A release whose outcome is unknown poisons the record's key (see Poison)
// and returns an error satisfying backend.ErrUnknown.
func (l *Lock) Release(ctx context.Context) error {
	return release(ctx, l.store, l.poison, l.rec.LockID, l.version, l.opts)
}

func release(ctx context.Context, s backend.StorageAdapter, p *Poison, id, version string, o Options) error {
	if err := p.Check(LockKey); err != nil {
		return err
	}
	if s.Capabilities().ConditionalUpdate && version != "" {
		_, err := s.PutIfMatch(ctx, LockKey, encodeRecord(tombstone(id, o.clock().Now())), version)
		switch {
		case err == nil:
			return nil
		case backend.IsPrecondition(err), backend.IsNotFound(err):
			return fmt.Errorf("releasing cluster lock %s: %w: it was unlocked or replaced; nothing was changed", id, ErrNotHeld)
		case p.Observe(LockKey, err):
			o.logger().Error("cluster lock release outcome unknown", "failure_class", backend.KindOf(err).String(), "scoped", true, "lock_id", id)
		}
		return wrapStorage("releasing the lock", err)
	}
	b, _, err := s.Get(ctx, LockKey)
	if backend.IsNotFound(err) {
		return fmt.Errorf("releasing cluster lock %s: %w", id, ErrNotHeld)
	}
	if err != nil {
		return wrapStorage("reading the lock", err)
	}
	if rec, derr := decodeRecord(b); derr != nil || rec.Released || rec.LockID != id {
		return fmt.Errorf("releasing cluster lock %s: %w: it was unlocked or replaced; nothing was changed", id, ErrNotHeld)
	}
	if err := s.Delete(ctx, LockKey); err != nil {
		if p.Observe(LockKey, err) {
			o.logger().Error("cluster lock release outcome unknown", "failure_class", backend.KindOf(err).String(), "scoped", true, "lock_id", id)
		}
		return wrapStorage("releasing the lock", err)
	}
	return nil
}

// Acquire takes an unleased lock for opts.Operation. A held lock is refused
// at once with a *HeldError (errors.Is(err, ErrLockHeld)), unless opts.Wait
// is positive and the holder is not a server, in which case it polls every
// opts.PollInterval until the lock is free or the wait has passed.
func Acquire(ctx context.Context, s backend.StorageAdapter, opts Options) (*Lock, error) {
	rec := Record{
		FormatVersion: FormatUnleased,
		LockID:        NewLockID(),
		Operation:     opts.Operation,
		Owner:         opts.owner(),
		CreatedAt:     opts.clock().Now().UTC(),
	}
	p := opts.poison()
	deadline := opts.clock().Now().Add(opts.Wait)
	for {
		version, held, err := create(ctx, s, p, rec, opts)
		if err != nil {
			return nil, err
		}
		if held == nil {
			return &Lock{store: s, opts: opts, poison: p, rec: rec, version: version}, nil
		}
		if held.Leased || held.UnknownFormat || opts.Wait <= 0 || !opts.clock().Now().Before(deadline) {
			return nil, held
		}
		if err := opts.clock().Sleep(ctx, min(opts.poll(), deadline.Sub(opts.clock().Now()))); err != nil {
			return nil, fmt.Errorf("waiting for the cluster lock: %w", err)
		}
	}
}

// found is the current content of the lock key.
type found struct {
	absent  bool
	rec     Record
	version string
	format  error // errFormat: held by a newer binary
}

func read(ctx context.Context, s backend.StorageAdapter) (found, error) {
	b, a, err := s.Get(ctx, LockKey)
	if backend.IsNotFound(err) {
		return found{absent: true}, nil
	}
	if err != nil {
		return found{}, wrapStorage("reading the lock", err)
	}
	rec, err := decodeRecord(b)
	var fe errFormat
	if errors.As(err, &fe) {
		return found{rec: rec, version: a.Version, format: err}, nil
	}
	if err != nil {
		return found{}, fmt.Errorf("reading the cluster lock: %w", err)
	}
	return found{rec: rec, version: a.Version}, nil
}

// create writes rec as the lock: PutIfAbsent, or a compare-and-swap over a
// tombstone. It returns the written version, or the holder's refusal.
func create(ctx context.Context, s backend.StorageAdapter, p *Poison, rec Record, o Options) (string, *HeldError, error) {
	data := encodeRecord(rec)
	for {
		if err := p.Check(LockKey); err != nil {
			return "", nil, err
		}
		a, err := s.PutIfAbsent(ctx, LockKey, data)
		if err == nil {
			return a.Version, nil, nil
		}
		if !backend.IsPrecondition(err) {
			v, uerr := settle(ctx, s, p, rec, err, o)
			return v, nil, uerr
		}
		f, err := read(ctx, s)
		if err != nil {
			return "", nil, err
		}
		switch {
		case f.absent:
			continue // released in between
		case f.format == nil && f.rec.Released:
			if !s.Capabilities().ConditionalUpdate {
				// A tombstone another adapter of the same bucket left (e.g.
				// native s3 vs gocloud+s3): remove it by the read-compare-
				// delete rule a release uses without CAS, then create.
				if err := s.Delete(ctx, LockKey); err != nil {
					p.Observe(LockKey, err)
					return "", nil, wrapStorage("clearing a released lock", err)
				}
				continue
			}
			a, err := s.PutIfMatch(ctx, LockKey, data, f.version)
			if err == nil {
				return a.Version, nil, nil
			}
			if backend.IsPrecondition(err) || backend.IsNotFound(err) {
				continue
			}
			v, uerr := settle(ctx, s, p, rec, err, o)
			return v, nil, uerr
		}
		return "", heldError(f, o), nil
	}
}

// settle resolves a failed write of rec: a read-back that finds rec proves it
// landed; otherwise an unknown outcome poisons the key.
func settle(ctx context.Context, s backend.StorageAdapter, p *Poison, rec Record, werr error, o Options) (string, error) {
	if !errors.Is(werr, backend.ErrUnknown) {
		return "", wrapStorage("creating the lock", werr)
	}
	f, err := read(ctx, s)
	if err == nil && !f.absent && f.format == nil && !f.rec.Released && f.rec.LockID == rec.LockID {
		p.Settle(LockKey)
		return f.version, nil
	}
	p.Mark(LockKey)
	o.logger().Error("cluster lock create outcome unknown", "failure_class", backend.KindOf(werr).String(), "scoped", true, "lock_id", rec.LockID)
	return "", fmt.Errorf("cluster lock %s: the outcome of creating it is unknown; run `omnigraph lock status` and, if it shows this id, unlock it (%w)", rec.LockID, wrapStorage("creating the lock", werr))
}

func heldError(f found, o Options) *HeldError {
	e := &HeldError{Holder: f.rec, LockID: f.rec.LockID, StoreURL: o.StoreURL, Leased: f.rec.Leased(), version: f.version}
	if f.format != nil {
		e.UnknownFormat = true
		return e
	}
	if !f.rec.CreatedAt.IsZero() {
		e.Age = max(o.clock().Now().Sub(f.rec.CreatedAt), 0)
	}
	e.HolderGone = holderGone(f.rec, o)
	return e
}

// holderGone reports whether the record's holder is a process of this
// machine that no longer runs, on any store: the record names this host
// (and, when both sides know it, this kernel instance and pid namespace, so
// containers or machines sharing a host name never judge each other's pids)
// and its pid is not a live process. Nothing is removed on that ground: pids
// are reused, so it only tells the operator which unlock is safe.
func holderGone(r Record, o Options) bool {
	me := o.owner()
	if r.Owner.PID <= 0 || r.Owner.Host == "" || r.Owner.Host != me.Host {
		return false
	}
	if r.Owner.Instance != "" && me.Instance != "" && r.Owner.Instance != me.Instance {
		return false
	}
	return !o.alive(r.Owner.PID)
}

// LockStatus is what Status found.
type LockStatus struct {
	// Held: a lock is held (Holder is set). False with a non-zero Holder
	// means the last lock was released (Holder is its tombstone).
	Held   bool
	Holder Record
	// Age is how long ago the holder created the lock, by this clock.
	Age time.Duration
	// Leased and LeaseSeconds describe a server's lock.
	Leased       bool
	LeaseSeconds int
	// LastHeartbeat is the store's time of the newest heartbeat object of a
	// leased lock (zero if none), and HeartbeatSeq its sequence number.
	LastHeartbeat time.Time
	HeartbeatSeq  uint64
	// HolderGone: as in HeldError.
	HolderGone bool
	// UnknownFormat: the record was written by a newer binary.
	UnknownFormat bool
}

// Status reports the lock without changing anything.
func Status(ctx context.Context, s backend.StorageAdapter, opts Options) (LockStatus, error) {
	f, err := read(ctx, s)
	if err != nil || f.absent {
		return LockStatus{}, err
	}
	st := LockStatus{Holder: f.rec}
	if f.format != nil {
		st.Held, st.UnknownFormat = true, true
		return st, nil
	}
	if f.rec.Released {
		return st, nil
	}
	st.Held = true
	st.Age = max(opts.clock().Now().Sub(f.rec.CreatedAt), 0)
	st.Leased, st.LeaseSeconds = f.rec.Leased(), f.rec.LeaseSeconds
	st.HolderGone = holderGone(f.rec, opts)
	if st.Leased {
		last, ok, err := newestBeat(ctx, s, f.rec.LockID)
		if err != nil {
			return st, err
		}
		if ok {
			st.LastHeartbeat, st.HeartbeatSeq = last.ModTime, seqOf(last.Key)
		}
	}
	return st, nil
}

// Unlock removes the lock whose id is exactly id. A different id is refused
// with a *WrongIDError (errors.Is(err, ErrWrongID)), and a free lock with
// ErrNotHeld; neither changes anything. Unlocking a server's leased lock
// makes that server stop at its next heartbeat.
func Unlock(ctx context.Context, s backend.StorageAdapter, id string, opts Options) error {
	f, err := read(ctx, s)
	if err != nil {
		return err
	}
	if f.absent || (f.format == nil && f.rec.Released) {
		return fmt.Errorf("unlock %s: %w; nothing was changed", id, ErrNotHeld)
	}
	if f.format != nil {
		return fmt.Errorf("unlock %s: %w; nothing was changed", id, f.format)
	}
	if f.rec.LockID != id {
		return &WrongIDError{Given: id, Holder: f.rec.LockID}
	}
	p := opts.poison()
	if err := release(ctx, s, p, id, f.version, opts); err != nil {
		return err
	}
	if f.rec.Leased() {
		_ = s.DeletePrefix(ctx, heartbeatPrefix(id)) // tidy; the tombstone already freed the lock
	}
	return nil
}
