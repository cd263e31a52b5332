package recovery

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/manifest"
	"github.com/omnigraph-go/omnigraph/table"
)

// Mode selects what a sweep may do.
type Mode int

const (
	// Full is the read-write open sweep: roll forward, roll back, discard.
	Full Mode = iota
	// RollForwardOnly is the in-process heal of a live handle: it rolls
	// forward, retires published and no-effect sidecars (keeping any
	// untouched first-touch fork, which the next write adopts), and defers
	// anything that needs a restore or a fork deletion (ErrDeferred).
	RollForwardOnly
	// Compensate is Full, except that a sidecar whose tables carry foreign
	// state (UnexpectedAtP1, UnexpectedMultistep) does not fail closed: the
	// write's own effects are rolled back (restored, or their unpublished
	// forks deleted), every foreign table is left exactly as found, and the
	// sidecar is retired with a RolledBack (or Discarded) row whose tables
	// say "left_foreign". It is what 'omnigraph repair --confirm' runs
	// before restoring the drift it then finds, and what a write that lost
	// a race after its first effect runs on its own intent before it
	// prepares again. InvariantViolation still fails closed.
	Compensate
)

// Options configure a sweep.
type Options struct {
	Mode      Mode
	Manifests Manifests
	// Lock, when set, is called before a sidecar is resolved: it must
	// block until no live writer of this process can still act on the
	// sidecar (the writer's gates) and return the release function. The
	// sweep re-reads the sidecar after it, so one the writer finished with
	// is skipped.
	Lock func(ctx context.Context, sc *Sidecar) (release func(), err error)
	// Unresolved, when set, is asked after Lock: false means the sidecar's
	// writer finished with it while the sweep waited (for example it
	// published and only deferred the delete), so it is skipped.
	Unresolved func(sc *Sidecar) bool
	// Filter, when set, limits the sweep to the sidecars it accepts.
	Filter func(sc *Sidecar) bool
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Failpoint, when set, is called at the recovery's own phase
	// boundaries ("recovery.post_restore", "recovery.post_publish",
	// "recovery.post_audit"); an error stops the recovery there.
	Failpoint func(name string) error
}

func (o *Options) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

func (o *Options) hit(name string) error {
	if o.Failpoint == nil {
		return nil
	}
	return o.Failpoint(name)
}

// Outcome is what happened to one sidecar.
type Outcome struct {
	OperationID string
	Class       Classification
	// Record is the audit row of a completed recovery (nil otherwise).
	Record *Record
	// Deferred: left for a read-write open (RollForwardOnly).
	Deferred bool
	// Skipped: the sidecar's writer finished with it while the sweep waited
	// (Vanished: it is gone from storage).
	Skipped  bool
	Vanished bool
	// Warning: the recovery completed but the sidecar could not be deleted.
	Warning string
}

// Report is the result of a sweep.
type Report struct {
	Outcomes []Outcome
}

// Deferred returns the outcomes left for a read-write open.
func (r *Report) Deferred() []Outcome {
	var out []Outcome
	for _, o := range r.Outcomes {
		if o.Deferred {
			out = append(out, o)
		}
	}
	return out
}

// Sweep resolves every pending sidecar. A failed List (ErrList) or a
// corrupt sidecar (ErrCorruptSidecar) fails the sweep; so does any sidecar
// recovery must fail closed on (ErrForeign, ErrInvariantViolation), with
// the sidecar kept. In RollForwardOnly mode a sidecar that needs a rollback
// is reported Deferred, not as an error.
func Sweep(ctx context.Context, store backend.StorageAdapter, opts Options) (*Report, error) {
	keys, err := Pending(ctx, store)
	if err != nil {
		return nil, err
	}
	return SweepKeys(ctx, store, keys, opts)
}

// SweepKeys is Sweep over sidecar keys the caller already listed (a
// read-write open lists __recovery/ in parallel with its head read).
func SweepKeys(ctx context.Context, store backend.StorageAdapter, keys []string, opts Options) (*Report, error) {
	rep := &Report{}
	for _, key := range keys {
		sc, err := Read(ctx, store, key)
		if backend.IsNotFound(err) {
			continue // resolved concurrently
		}
		if err != nil {
			return rep, err
		}
		if opts.Filter != nil && !opts.Filter(sc) {
			continue
		}
		out, err := Resolve(ctx, store, sc, opts)
		rep.Outcomes = append(rep.Outcomes, out)
		if err != nil {
			if errors.Is(err, ErrDeferred) {
				continue
			}
			return rep, err
		}
	}
	return rep, nil
}

// Resolve recovers one sidecar (see the package doc). The sidecar is
// deleted only after its audit row is durable; any error keeps it.
func Resolve(ctx context.Context, store backend.StorageAdapter, sc *Sidecar, opts Options) (Outcome, error) {
	out := Outcome{OperationID: sc.Intent.OperationID}
	if opts.Manifests == nil {
		return out, errors.New("recovery: no manifest access")
	}
	if opts.Lock != nil {
		release, err := opts.Lock(ctx, sc)
		if err != nil {
			return out, err
		}
		defer release()
		if opts.Unresolved != nil && !opts.Unresolved(sc) {
			out.Skipped = true
			return out, nil
		}
		// The writer may have finished (and deleted it) while we waited.
		if _, err := Read(ctx, store, Key(sc.Intent.OperationID)); err != nil {
			if backend.IsNotFound(err) {
				out.Skipped, out.Vanished = true, true
				return out, nil
			}
			return out, err
		}
	}
	a, err := Assess(ctx, store, opts.Manifests, sc)
	if err != nil {
		return out, err
	}
	out.Class = a.Class
	in := &sc.Intent
	rec := &Record{
		OperationID:      in.OperationID,
		RecoveryForActor: in.Actor,
		WriterKind:       in.Kind,
		Branch:           in.Token.Branch,
		Classification:   a.Class,
	}
	switch {
	case a.Class == ClassPublished:
		rec.RecoveryKind, rec.CommitID, rec.Actor = RolledForward, in.Entry.Commit.ID, in.Entry.Commit.Actor
		for _, t := range in.Tables {
			rec.Tables = append(rec.Tables, TableOutcome{Key: t.Key, Path: t.Path, Branch: t.Branch, State: RolledPastExpected,
				FromVersion: t.ExpectedVersion, ToVersion: t.PlannedVersion, PublishedVersion: t.PlannedVersion, Action: "published"})
		}
	case a.Class == ClassOrphaned:
		// The incarnation is gone and its table forks are named for it, so
		// nothing reachable depends on this write.
		rec.RecoveryKind = OrphanDiscarded
		for _, t := range in.Tables {
			rec.Tables = append(rec.Tables, TableOutcome{Key: t.Key, Path: t.Path, Branch: t.Branch, FromVersion: t.ExpectedVersion, ToVersion: t.ExpectedVersion, Action: "none"})
		}
	case a.Class == ClassInvariantViolation:
		return out, fmt.Errorf("%w: operation %s: %s; its sidecar is kept for inspection (omnigraph recovery list)", ErrInvariantViolation, in.OperationID, describe(a))
	case (a.Class == ClassUnexpectedAtP1 || a.Class == ClassUnexpectedMultistep) && opts.Mode == Compensate:
		if err := rollBack(ctx, store, opts, a, rec); err != nil {
			return out, err
		}
	case a.Class == ClassUnexpectedAtP1 || a.Class == ClassUnexpectedMultistep:
		return out, fmt.Errorf("%w: operation %s (%s): %s; recovery will not adopt or restore through it, its sidecar is kept for inspection (omnigraph recovery list; omnigraph repair --confirm rolls it back)",
			ErrForeign, in.OperationID, a.Class, describe(a))
	case a.Class == ClassRolledPastExpected && !a.AuthorityMoved:
		if err := opts.Manifests.Publish(ctx, in.Entry); err != nil {
			return out, fmt.Errorf("roll forward operation %s: %w", in.OperationID, err)
		}
		if err := opts.hit("recovery.post_publish"); err != nil {
			return out, err
		}
		rec.RecoveryKind, rec.CommitID, rec.Actor = RolledForward, in.Entry.Commit.ID, in.Entry.Commit.Actor
		for _, t := range a.Tables {
			rec.Tables = append(rec.Tables, TableOutcome{Key: t.Key, Path: t.Path, Branch: t.Branch, State: t.State,
				FromVersion: t.ExpectedVersion, ToVersion: t.PlannedVersion, PublishedVersion: t.PlannedVersion, Action: "published"})
		}
	case opts.Mode == RollForwardOnly && a.Class != ClassNoMovement:
		out.Deferred = true
		return out, fmt.Errorf("operation %s (%s): %w", in.OperationID, a.Class, ErrDeferred)
	default:
		if err := rollBack(ctx, store, opts, a, rec); err != nil {
			return out, err
		}
	}
	rec.RecoveredMicros = opts.now().UnixMicro()
	if err := AppendAudit(ctx, store, rec); err != nil {
		return out, err
	}
	if err := opts.hit("recovery.post_audit"); err != nil {
		return out, err
	}
	out.Record = rec
	if err := Disarm(ctx, store, in.OperationID); err != nil {
		out.Warning = backend.Redact(err.Error())
	}
	return out, nil
}

func describe(a *Assessment) string {
	s := ""
	for _, t := range a.Tables {
		if s != "" {
			s += "; "
		}
		s += fmt.Sprintf("%s on %q: %s (pin %d, HEAD %d)", t.Key, t.Branch, t.State, t.Pin, t.Head)
		if t.Detail != "" {
			s += ": " + t.Detail
		}
	}
	return s
}

// rollBack undoes every owned effect: a landed effect on a published table
// branch is restored to its read version (one commit), an unpublished
// first-touch fork is deleted, and when any table was restored one commit
// by omnigraph:recovery publishes the restores, so manifest == HEAD.
func rollBack(ctx context.Context, store backend.StorageAdapter, opts Options, a *Assessment, rec *Record) error {
	in := &a.Sidecar.Intent
	rec.RecoveryKind = RolledBack
	if !ownsEffect(a) {
		rec.RecoveryKind = Discarded
	}
	publish := false
	alreadyPublished := false
	for _, t := range a.Tables {
		o := TableOutcome{Key: t.Key, Path: t.Path, Branch: t.Branch, State: t.State, FromVersion: t.ExpectedVersion, ToVersion: t.ExpectedVersion, Action: "none"}
		switch {
		case t.State == RolledPastExpected && t.Unpublished:
			if err := table.DeleteBranch(ctx, store, t.Path, t.Branch, ""); err != nil && !errors.Is(err, table.ErrNotFound) {
				return fmt.Errorf("roll back operation %s: delete the fork of %s: %w", in.OperationID, t.Key, err)
			}
			o.Action = "fork_deleted"
		case t.State == RolledPastExpected:
			if err := restore(ctx, store, t.IntentTable); err != nil {
				return fmt.Errorf("roll back operation %s: restore %s to version %d: %w", in.OperationID, t.Key, readVersionOf(t.IntentTable), err)
			}
			if err := opts.hit("recovery.post_restore"); err != nil {
				return err
			}
			o.Action, o.PublishedVersion = "restored", t.PlannedVersion+1
			publish = true
		case t.State == Compensated:
			o.Action, o.PublishedVersion = "restored", t.PlannedVersion+1
			publish = true
		case t.State == CompensatedPublished:
			o.Action, o.PublishedVersion = "restored", t.PlannedVersion+1
			alreadyPublished = true
		case t.State == NoMovement && (t.RefPresent || t.Residue) && opts.Mode == RollForwardOnly:
			// A live handle deletes no ref: the untouched fork stays, and
			// the next write of the branch adopts it (or cleanup reclaims
			// it); only the sidecar, which owns no effect, is retired.
			o.Action = "fork_kept"
		case t.State == NoMovement && t.RefPresent:
			if err := table.DeleteBranch(ctx, store, t.Path, t.Branch, ""); err != nil && !errors.Is(err, table.ErrNotFound) {
				return fmt.Errorf("roll back operation %s: remove the untouched fork of %s: %w", in.OperationID, t.Key, err)
			}
			o.Action = "ref_removed"
		case t.State == UnexpectedAtP1 || t.State == UnexpectedMultistep:
			// Compensate mode only: another writer's state, not ours to
			// undo ('omnigraph repair' restores drift separately).
			o.Action = "left_foreign"
		case t.State == NoMovement && t.Residue:
			if err := store.DeletePrefix(ctx, table.VersionsPrefix(t.Path, t.Branch)); err != nil {
				return fmt.Errorf("roll back operation %s: reclaim the fork residue of %s: %w", in.OperationID, t.Key, err)
			}
			o.Action = "residue_reclaimed"
		}
		rec.Tables = append(rec.Tables, o)
	}
	if publish {
		next := a.head.Successor(manifest.Commit{ID: a.Sidecar.RollbackCommitID, Parents: []string{a.head.Head}, Actor: RecoveryActor, TimeMicros: opts.now().UnixMicro()})
		for _, t := range a.Tables {
			if t.State != RolledPastExpected && t.State != Compensated || t.Unpublished {
				continue
			}
			for i, p := range next.Tables {
				if p.Key == t.Key {
					next.Tables[i] = manifest.TablePin{Key: p.Key, Path: p.Path, Branch: t.Branch, Version: t.PlannedVersion + 1}
				}
			}
		}
		if err := opts.Manifests.Publish(ctx, next); err != nil {
			return fmt.Errorf("roll back operation %s: publish the restored tables: %w", in.OperationID, err)
		}
		if err := opts.hit("recovery.post_publish"); err != nil {
			return err
		}
	}
	if publish || alreadyPublished {
		rec.CommitID, rec.Actor = a.Sidecar.RollbackCommitID, RecoveryActor
	}
	return nil
}

// ownsEffect reports whether any table of a carries this write's effect
// (landed, or landed and compensated).
func ownsEffect(a *Assessment) bool {
	for _, t := range a.Tables {
		switch t.State {
		case RolledPastExpected, Compensated, CompensatedPublished:
			return true
		}
	}
	return false
}

// restore commits a Restore of the effect's read version on top of the
// planned version: one PutIfAbsent, a lost answer resolved by its uuid.
func restore(ctx context.Context, store backend.StorageAdapter, t manifest.IntentTable) error {
	ds, err := table.OpenVersion(ctx, store, t.Path, t.Branch, t.PlannedVersion)
	if err != nil {
		return err
	}
	st, err := ds.StageRestore(ctx, readVersionOf(t))
	if err != nil {
		return err
	}
	_, err = table.Commit(ctx, st)
	if err == nil {
		return nil
	}
	if errors.Is(err, backend.ErrUnknown) {
		ok, rerr := table.ResolveCommit(ctx, store, st)
		if rerr == nil && ok {
			return nil
		}
	}
	return err
}
