package recovery

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/manifest"
	"github.com/omnigraph-go/omnigraph/table"
)

// ErrPending: repair refuses while a recovery sidecar is pending, because
// the drift it would repair may be an interrupted write that recovery must
// finish or undo exactly.
var ErrPending = errors.New("a recovery sidecar is pending; open the graph read-write (any write, or 'omnigraph repair' after recovery) to resolve it first")

// Repaired is the audit kind of an 'omnigraph repair' that restored
// uncovered drift.
const Repaired Kind = "Repaired"

// Drift is a table whose live HEAD differs from its manifest pin on the
// graph branch that owns the table branch, with no sidecar covering it.
type Drift struct {
	Branch      string `json:"branch"`
	Incarnation uint64 `json:"incarnation"`
	Key         string `json:"table"`
	Path        string `json:"path"`
	TableBranch string `json:"table_branch"`
	Pin         uint64 `json:"pin"`
	Head        uint64 `json:"head"`
}

// Behind reports an invariant violation (HEAD behind the pin), which repair
// cannot fix.
func (d Drift) Behind() bool { return d.Head < d.Pin }

// ownedTableBranch is the table branch a graph branch incarnation writes
// (graph.tableBranch; repeated here because recovery cannot import graph).
func ownedTableBranch(branch string, incarnation uint64) string {
	if branch == manifest.MainBranch {
		return table.MainBranch
	}
	return branch + "@" + strconv.FormatUint(incarnation, 10)
}

// FindDrift compares every live branch's owned table pins with the tables'
// HEADs. It writes nothing.
func FindDrift(ctx context.Context, store backend.StorageAdapter, man *manifest.Store) ([]Drift, error) {
	refs, err := man.Branches(ctx)
	if err != nil {
		return nil, err
	}
	var out []Drift
	for _, r := range refs {
		h, err := man.Read(ctx, r)
		if err != nil {
			return nil, err
		}
		own := ownedTableBranch(h.Branch, h.Incarnation)
		for _, p := range h.Tables {
			if p.Branch != own {
				continue // inherited from the parent: checked there
			}
			v, err := table.LatestVersion(ctx, store, p.Path, p.Branch)
			if err != nil {
				return nil, fmt.Errorf("read HEAD of %s on %q: %w", p.Key, p.Branch, err)
			}
			if v != p.Version {
				out = append(out, Drift{Branch: h.Branch, Incarnation: h.Incarnation, Key: p.Key, Path: p.Path, TableBranch: p.Branch, Pin: p.Version, Head: v})
			}
		}
	}
	return out, nil
}

// RepairBranch restores every drifted table of one branch to its pin (one
// Restore commit each) and publishes one commit by omnigraph:recovery that
// pins the restores, so manifest == HEAD; it appends one audit row. Drift
// behind the pin is refused (ErrInvariantViolation).
func RepairBranch(ctx context.Context, store backend.StorageAdapter, man Manifests, drifts []Drift, operationID, commitID string, now time.Time) (*Record, error) {
	if len(drifts) == 0 {
		return nil, nil
	}
	branch := drifts[0].Branch
	ref, err := man.Probe(ctx, branch)
	if err != nil {
		return nil, err
	}
	if !ref.Live() || ref.Incarnation != drifts[0].Incarnation {
		return nil, fmt.Errorf("branch %q changed while repairing; run repair again", branch)
	}
	head, err := man.Read(ctx, ref)
	if err != nil {
		return nil, err
	}
	next := head.Successor(manifest.Commit{ID: commitID, Parents: []string{head.Head}, Actor: RecoveryActor, TimeMicros: now.UnixMicro()})
	rec := &Record{OperationID: operationID, RecoveryKind: Repaired, WriterKind: "repair", Branch: branch, CommitID: commitID, Actor: RecoveryActor}
	for _, d := range drifts {
		if d.Behind() {
			return nil, fmt.Errorf("%w: %s on %q: HEAD %d is behind the manifest pin %d", ErrInvariantViolation, d.Key, d.TableBranch, d.Head, d.Pin)
		}
		pin, ok := head.Pin(d.Key)
		if !ok || pin.Version != d.Pin || pin.Branch != d.TableBranch {
			return nil, fmt.Errorf("branch %q moved while repairing; run repair again", branch)
		}
		ds, err := table.OpenVersion(ctx, store, d.Path, d.TableBranch, d.Head)
		if err != nil {
			return nil, err
		}
		st, err := ds.StageRestore(ctx, d.Pin)
		if err != nil {
			return nil, err
		}
		if _, err := table.Commit(ctx, st); err != nil {
			return nil, fmt.Errorf("restore %s to version %d: %w", d.Key, d.Pin, err)
		}
		for i, p := range next.Tables {
			if p.Key == d.Key {
				next.Tables[i].Version = d.Head + 1
			}
		}
		rec.Tables = append(rec.Tables, TableOutcome{Key: d.Key, Path: d.Path, Branch: d.TableBranch, State: UnexpectedMultistep,
			FromVersion: d.Head, ToVersion: d.Pin, PublishedVersion: d.Head + 1, Action: "restored"})
	}
	if err := man.Publish(ctx, next); err != nil {
		return nil, fmt.Errorf("publish the repair of %q: %w", branch, err)
	}
	rec.RecoveredMicros = now.UnixMicro()
	if err := AppendAudit(ctx, store, rec); err != nil {
		// The repair is published: the caller reports it as standing,
		// with its audit row missing.
		return rec, fmt.Errorf("%w: %w", ErrAuditNotWritten, err)
	}
	return rec, nil
}

// RequireNonePending is the entry check of maintenance that must not run
// while a write is unresolved (cleanup, repair): it fails with ErrPending,
// naming an operation, when any sidecar exists, and with ErrList when
// __recovery/ cannot be listed. Recovery may need the table versions and
// files a pending sidecar names, so garbage collection must not outrun it.
func RequireNonePending(ctx context.Context, store backend.StorageAdapter) error {
	keys, err := Pending(ctx, store)
	if err != nil {
		return err
	}
	if len(keys) > 0 {
		id, _ := OperationIDOf(keys[0])
		return fmt.Errorf("%d pending recovery sidecar(s), operation %s first: %w", len(keys), id, ErrPending)
	}
	return nil
}
