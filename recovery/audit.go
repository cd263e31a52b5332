package recovery

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/omnigraph-go/omnigraph/backend"
)

// AuditDir holds the recovery audit log: one object per completed recovery.
const AuditDir = dirAudit + "/"

const dirAudit = "_graph_commit_recoveries"

// Kind is what a completed recovery did.
type Kind string

// Recovery kinds.
const (
	// RolledForward: the interrupted write was published with its original
	// commit id and actor (or was already published and only its sidecar
	// was left).
	RolledForward Kind = "RolledForward"
	// RolledBack: the write's effects were undone and, when a table was
	// restored, one commit by omnigraph:recovery published the restore.
	RolledBack Kind = "RolledBack"
	// Discarded: nothing of the write had landed; its sidecar (and any
	// untouched first-touch fork) was removed.
	Discarded Kind = "Discarded"
	// OrphanDiscarded: the branch incarnation the write targeted was
	// deleted, so its effects are unreachable.
	OrphanDiscarded Kind = "OrphanDiscarded"
)

// TableOutcome is what recovery did to one table.
type TableOutcome struct {
	Key    string     `json:"table"`
	Path   string     `json:"path"`
	Branch string     `json:"table_branch"`
	State  TableState `json:"state"`
	// FromVersion is the manifest pin the write started from; ToVersion the
	// logical version the table ends at (planned on roll-forward, the pin on
	// rollback; the published restore is ToVersion's content at
	// PublishedVersion).
	FromVersion      uint64 `json:"from_version"`
	ToVersion        uint64 `json:"to_version"`
	PublishedVersion uint64 `json:"published_version,omitempty"`
	// Action: "published", "restored", "fork_deleted", "ref_removed",
	// "residue_reclaimed" or "none".
	Action string `json:"action"`
}

// Record is one row of the recovery audit log.
type Record struct {
	OperationID string `json:"operation_id"`
	// RecoveryKind is what the recovery did.
	RecoveryKind Kind `json:"recovery_kind"`
	// RecoveryForActor is the interrupted write's actor.
	RecoveryForActor string `json:"recovery_for_actor"`
	// WriterKind is the interrupted writer (mutation, load, ...).
	WriterKind     string         `json:"writer_kind"`
	Branch         string         `json:"branch"`
	Classification Classification `json:"classification"`
	// CommitID is the commit the recovery published (the original one on
	// roll-forward, the rollback commit on rollback); empty if none.
	CommitID string `json:"commit_id,omitempty"`
	// Actor is the actor of that commit.
	Actor           string         `json:"actor,omitempty"`
	RecoveredMicros int64          `json:"recovered_us"`
	Tables          []TableOutcome `json:"tables"`
}

// AuditKey is the object key of the audit row of one operation: keyed by
// operation id, so a retried recovery can never add a second row.
func AuditKey(operationID string) string { return AuditDir + operationID + ".json" }

// AppendAudit stores the audit row with one PutIfAbsent. A row already
// present for the operation (a retried recovery) is success; a lost answer
// is read back once.
func AppendAudit(ctx context.Context, store backend.StorageAdapter, r *Record) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	key := AuditKey(r.OperationID)
	_, err = store.PutIfAbsent(ctx, key, data)
	switch {
	case err == nil, backend.IsPrecondition(err):
		return nil
	case errors.Is(err, backend.ErrUnknown):
		if got, _, rerr := store.Get(ctx, key); rerr == nil && len(got) > 0 {
			return nil
		}
	}
	return fmt.Errorf("record the recovery of operation %s: %w", r.OperationID, err)
}

// Audits returns every audit row, oldest operation first.
func Audits(ctx context.Context, store backend.StorageAdapter) ([]Record, error) {
	objs, err := backend.ListAll(ctx, store, AuditDir)
	if err != nil {
		return nil, fmt.Errorf("list recovery audit: %w", err)
	}
	out := make([]Record, 0, len(objs))
	for _, o := range objs {
		if !strings.HasSuffix(o.Key, ".json") {
			continue
		}
		data, _, err := store.Get(ctx, o.Key)
		if err != nil {
			return nil, fmt.Errorf("read recovery audit: %w", err)
		}
		var r Record
		dec := json.NewDecoder(bytes.NewReader(data))
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("a recovery audit row is corrupt: %v", err)
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].OperationID < out[j].OperationID })
	return out, nil
}
