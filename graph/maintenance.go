package graph

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/manifest"
	"github.com/omnigraph-go/omnigraph/recovery"
)

// The maintenance-class publish (seed 000's Optimize). Optimize changes no
// row: its table effects only replace a table version by an equivalent one.
// So when another writer (another process: the gates order this one's)
// moves the graph head between optimize's table effects and its publish,
// optimize does not undo its work: it publishes on top of the new head
// only the pointers still needed. A table whose pin there is still the
// version optimize compacted gets the compacted version; a pin already at
// or beyond it is converged and omitted; every other pin is the new
// head's, so the other writer's pointers are never rolled back. Any other
// movement of an optimized table (a writer of that table meets the
// pending intent's drift, so it cannot happen) is a lost race, undone as
// before.
//
// Crash safety: before each such publish the intent is rewritten in place
// (one Put of the same sidecar key, so a crash leaves exactly one of the
// two): the old intent names a version the other writer took, so recovery
// rolls the effects back; the rebased one names the new head as its
// authority and the version on top of it, so recovery rolls it forward
// while that head stands, and back otherwise.

// maxMaintenanceRebases bounds the publishes on top of a moving head
// before optimize gives up and undoes its effects (a lost race).
const maxMaintenanceRebases = 3

// rebaseMaintenance is called after the publish of intent lost the graph
// head (ErrHeadMoved) with table effects made.
func (w *Write) rebaseMaintenance(ctx context.Context, intent *manifest.Intent, cause error) (*Result, error) {
	g := w.g
	for range maxMaintenanceRebases {
		head, err := g.man.Head(ctx, w.base.Branch)
		if err != nil {
			return nil, &RecoveryRequired{OperationID: w.opID, Reason: "the manifest head could not be read after another writer published first", Err: errors.Join(cause, err)}
		}
		if head.Incarnation != w.base.Incarnation || head.SchemaIdentity != w.base.SchemaIdentity || head.Stamp != w.base.Stamp {
			return w.lostRace(ctx, intent, "graph_head", cause)
		}
		next := w.nextEntry(head)
		var tables []manifest.IntentTable
		for _, it := range intent.Tables {
			pin, ok := head.Pin(it.Key)
			if !ok || pin.Path != it.Path || pin.Branch != it.Branch || it.FirstTouch {
				return w.lostRace(ctx, intent, "table:"+it.Key, cause)
			}
			switch {
			case pin.Version >= it.PlannedVersion:
				// Converged: the head already pins this version or a later one.
			case pin.Version == it.ExpectedVersion:
				tables = append(tables, it)
				setPin(next, manifest.TablePin{Key: it.Key, Path: it.Path, Branch: it.Branch, Version: it.PlannedVersion})
			default:
				return w.lostRace(ctx, intent, "table:"+it.Key, cause)
			}
		}
		if len(tables) == 0 {
			// Every pointer converged: nothing is left to publish.
			if err := g.disarmIntent(ctx, intent); err != nil {
				return nil, &RecoveryRequired{OperationID: w.opID, Reason: "the recovery intent of a converged optimize could not be removed", Err: err}
			}
			g.forget(w.base.Branch)
			return &Result{NoOp: true, Snapshot: &Snapshot{g: g, entry: head}}, nil
		}
		rebased := &manifest.Intent{OperationID: intent.OperationID, Kind: intent.Kind, Actor: intent.Actor, Token: manifest.TokenOf(head), Tables: tables, Entry: next}
		if err := g.rewriteIntent(ctx, rebased); err != nil {
			return nil, &RecoveryRequired{OperationID: w.opID, Reason: "the recovery intent could not be moved onto the new head", Err: errors.Join(cause, err)}
		}
		intent = rebased
		err = g.man.Publish(ctx, next)
		switch {
		case err == nil:
			return w.published(ctx, intent), nil
		case errors.Is(err, backend.ErrUnknown):
			g.forget(w.base.Branch)
			return nil, &OutcomeUnknown{Branch: w.base.Branch, CommitID: w.commit, Version: next.Version, Err: err}
		case errors.Is(err, manifest.ErrHeadMoved):
			cause = err
			continue
		}
		g.forget(w.base.Branch)
		return nil, &RecoveryRequired{OperationID: w.opID, Reason: "the manifest publish failed after the table commits", Err: err}
	}
	return w.lostRace(ctx, intent, "graph_head", cause)
}

// rewriteIntent replaces the armed sidecar of in.OperationID by one
// naming in (same creation time and rollback commit), with one Put.
func (g *Graph) rewriteIntent(ctx context.Context, in *manifest.Intent) error {
	old := g.intents.armed(in.OperationID)
	if old == nil {
		return fmt.Errorf("operation %s: no armed recovery intent to rewrite", in.OperationID)
	}
	sc := recovery.New(in, old.RollbackCommitID, time.UnixMicro(old.CreatedMicros))
	data, err := recovery.Encode(sc)
	if err != nil {
		return err
	}
	if err := g.failpoint(FailpointMaintenanceRebase); err != nil {
		return err
	}
	if _, err := g.store.Put(ctx, recovery.Key(in.OperationID), data); err != nil {
		return fmt.Errorf("rewrite recovery intent: %w", err)
	}
	g.intents.add(sc)
	return nil
}

// armed returns the pending sidecar of an operation (nil: none).
func (r *intentRegistry) armed(opID string) *recovery.Sidecar {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pending[opID]
}
