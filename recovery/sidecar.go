package recovery

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/manifest"
)

// Dir is where sidecars live, relative to the graph root.
const Dir = dirRecovery + "/"

const dirRecovery = "__recovery"

// LayoutWords returns the directory words of the recovery layout (the
// sidecars and the audit log), so a branch name cannot be given a
// component that reads as one.
func LayoutWords() []string { return []string{dirRecovery, dirAudit} }

// Format is the one sidecar format this binary reads and writes.
const Format = 1

// RecoveryActor is the actor of rollback commits.
const RecoveryActor = "omnigraph:recovery"

// Errors, classified with errors.Is.
var (
	// ErrCorruptSidecar: a sidecar cannot be decoded or is inconsistent. It
	// is never deleted or guessed at; an operator inspects it.
	ErrCorruptSidecar = errors.New("recovery: corrupt sidecar")
	// ErrList: __recovery/ could not be listed. Every consumer fails loudly
	// rather than skip recovery.
	ErrList = errors.New("recovery: cannot list pending sidecars")
	// ErrArm: Phase A did not make the sidecar durable; the writer aborts
	// before any effect.
	ErrArm = errors.New("recovery: sidecar not armed")
	// ErrInvariantViolation: a table HEAD is behind its manifest pin, which
	// no writer can cause. Recovery stops and keeps the sidecar.
	ErrInvariantViolation = errors.New("recovery: invariant violation")
	// ErrForeign: a table covered by a sidecar moved in a way the sidecar
	// does not own (another writer's commit, or one burying this write's).
	// Recovery fails closed and keeps the sidecar.
	ErrForeign = errors.New("recovery: foreign table movement")
	// ErrAuditNotWritten: a repair or recovery took effect (it published)
	// but its audit row could not be written. The change stands; only the
	// log of it is missing.
	ErrAuditNotWritten = errors.New("recovery: the audit row was not written")
	// ErrDeferred: the sidecar needs a rollback, which only a read-write
	// open (Full mode) performs.
	ErrDeferred = errors.New("a pending recovery sidecar requires rollback — reopen the graph read-write")
)

// Sidecar is the durable intent of one write: everything recovery needs to
// finish or undo it without the writer.
//
// It carries no Armed/EffectsConfirmed flag: the state is derived from the
// tables' exact transaction identities (docs/dev/recovery.md argues the
// equivalence), which saves the confirming write on every commit.
type Sidecar struct {
	Format int `json:"format"`
	// CreatedMicros is when the writer armed it (microseconds, Unix).
	CreatedMicros int64 `json:"created_us"`
	// RollbackCommitID is pre-minted with the intent, so a rollback that is
	// interrupted after its publish is recognised and never published twice.
	RollbackCommitID string `json:"rollback_commit_id"`
	// Intent is the complete plan: writer kind, actor, operation id, the
	// authority token, every table effect (table key, path, branch,
	// expected version = manifest pin, planned version, exact transaction
	// uuid, first-touch ref identity) and the exact manifest version to
	// publish with its pre-minted commit id.
	Intent manifest.Intent `json:"intent"`
}

// Key is the object key of the sidecar of operation id.
func Key(operationID string) string { return Dir + operationID + ".json" }

// OperationIDOf parses a sidecar key.
func OperationIDOf(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, Dir)
	if !ok || !strings.HasSuffix(rest, ".json") || strings.Contains(rest, "/") {
		return "", false
	}
	return strings.TrimSuffix(rest, ".json"), true
}

// Encode validates and serialises a sidecar.
func Encode(sc *Sidecar) ([]byte, error) {
	if err := sc.validate(); err != nil {
		return nil, err
	}
	return json.Marshal(sc)
}

// Decode parses the sidecar stored at key. Anything unreadable or
// inconsistent is ErrCorruptSidecar.
func Decode(key string, data []byte) (*Sidecar, error) {
	// Messages name the operation, never the key (keys are internal).
	op, _ := OperationIDOf(key)
	var sc Sidecar
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sc); err != nil {
		return nil, fmt.Errorf("%w: operation %s: %v", ErrCorruptSidecar, op, err)
	}
	if err := sc.validate(); err != nil {
		return nil, fmt.Errorf("%w: operation %s: %v", ErrCorruptSidecar, op, err)
	}
	if id, _ := OperationIDOf(key); id != sc.Intent.OperationID {
		return nil, fmt.Errorf("%w: the sidecar of operation %s holds operation %q", ErrCorruptSidecar, op, sc.Intent.OperationID)
	}
	return &sc, nil
}

func (sc *Sidecar) validate() error {
	in := &sc.Intent
	switch {
	case sc.Format != Format:
		return fmt.Errorf("sidecar format %d, this omnigraph reads %d", sc.Format, Format)
	case in.OperationID == "" || strings.ContainsAny(in.OperationID, "/."):
		return fmt.Errorf("bad operation id %q", in.OperationID)
	case sc.RollbackCommitID == "":
		return fmt.Errorf("no rollback commit id")
	case in.Kind == "":
		return fmt.Errorf("no writer kind")
	case in.Entry == nil:
		return fmt.Errorf("no manifest delta")
	case in.Entry.Kind != manifest.KindCommit || in.Entry.Commit == nil:
		return fmt.Errorf("the planned manifest version is not a commit")
	case in.Entry.Branch != in.Token.Branch || in.Entry.Incarnation != in.Token.Incarnation || in.Entry.Version != in.Token.Head+1:
		return fmt.Errorf("the planned manifest version %s@%d/%d does not follow the token %s@%d/%d",
			in.Entry.Branch, in.Entry.Incarnation, in.Entry.Version, in.Token.Branch, in.Token.Incarnation, in.Token.Head)
	}
	if _, err := manifest.Encode(in.Entry); err != nil {
		return fmt.Errorf("planned manifest version: %v", err)
	}
	seen := map[string]bool{}
	for _, t := range in.Tables {
		switch {
		case t.Key == "" || t.Path == "" || t.Branch == "" || t.TxnUUID == "":
			return fmt.Errorf("table effect %+v is incomplete", t)
		case seen[t.Key]:
			return fmt.Errorf("table %q planned twice", t.Key)
		case t.PlannedVersion == 0 || t.PlannedVersion != readVersionOf(t)+1:
			return fmt.Errorf("table %q plans version %d from %d", t.Key, t.PlannedVersion, readVersionOf(t))
		case t.FirstTouch && t.ForkBranch == "":
			return fmt.Errorf("first-touch table %q has no fork point", t.Key)
		}
		seen[t.Key] = true
		pin, ok := in.Entry.Pin(t.Key)
		if !ok || pin.Branch != t.Branch || pin.Version != t.PlannedVersion {
			return fmt.Errorf("the planned manifest version does not pin table %q at %s@%d", t.Key, t.Branch, t.PlannedVersion)
		}
	}
	return nil
}

// readVersionOf is the version the effect's transaction reads: the pin, or
// for a first touch the fork point (the fork's first version keeps it).
func readVersionOf(t manifest.IntentTable) uint64 {
	if t.FirstTouch {
		return t.ForkVersion
	}
	return t.ExpectedVersion
}

// New builds the sidecar of an intent, minting its rollback commit id.
func New(in *manifest.Intent, rollbackCommitID string, now time.Time) *Sidecar {
	c := *in
	c.Tables = append([]manifest.IntentTable(nil), in.Tables...)
	sort.Slice(c.Tables, func(i, j int) bool { return c.Tables[i].Key < c.Tables[j].Key })
	if in.Entry != nil {
		c.Entry = in.Entry.Clone()
	}
	return &Sidecar{Format: Format, CreatedMicros: now.UnixMicro(), RollbackCommitID: rollbackCommitID, Intent: c}
}

// Arm is Phase A: one PutIfAbsent of the sidecar. An error means the writer
// must abort before its first effect; it matches ErrArm. A lost answer is
// read back once: our exact bytes mean armed; anything else withdraws the
// sidecar (best-effort Delete) and fails, so a late landing is at worst a
// sidecar with no effects, which the next sweep discards.
func Arm(ctx context.Context, store backend.StorageAdapter, sc *Sidecar) error {
	data, err := Encode(sc)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrArm, err)
	}
	key := Key(sc.Intent.OperationID)
	_, err = store.PutIfAbsent(ctx, key, data)
	if err == nil {
		return nil
	}
	if errors.Is(err, backend.ErrUnknown) {
		got, _, rerr := store.Get(ctx, key)
		if rerr == nil && bytes.Equal(got, data) {
			return nil
		}
		_ = store.Delete(ctx, key) // withdraw: the writer will not act on it
	}
	return fmt.Errorf("%w: write the sidecar of operation %s: %w", ErrArm, sc.Intent.OperationID, err)
}

// Disarm is Phase D: delete the sidecar. The caller treats an error as a
// warning: the write already published, and the next heal or open consumes
// the stale sidecar.
func Disarm(ctx context.Context, store backend.StorageAdapter, operationID string) error {
	if err := store.Delete(ctx, Key(operationID)); err != nil {
		return fmt.Errorf("delete recovery sidecar of operation %s: %w", operationID, err)
	}
	return nil
}

// Pending lists the sidecar keys under __recovery/ in key order. A failed
// List is ErrList: consumers fail loudly.
func Pending(ctx context.Context, store backend.StorageAdapter) ([]string, error) {
	objs, err := backend.ListAll(ctx, store, Dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrList, err)
	}
	keys := make([]string, 0, len(objs))
	for _, o := range objs {
		keys = append(keys, o.Key)
	}
	return keys, nil
}

// Read reads one sidecar (one GET). A missing key is backend.ErrNotFound; an
// unparseable one is ErrCorruptSidecar.
func Read(ctx context.Context, store backend.StorageAdapter, key string) (*Sidecar, error) {
	if _, ok := OperationIDOf(key); !ok {
		return nil, fmt.Errorf("%w: an object in the recovery directory is not a sidecar", ErrCorruptSidecar)
	}
	data, _, err := store.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("read recovery sidecar: %w", err)
	}
	return Decode(key, data)
}
