package recovery

import (
	"context"
	"errors"
	"fmt"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/internal/plant"
	"github.com/omnigraph-go/omnigraph/manifest"
	"github.com/omnigraph-go/omnigraph/table"
)

// Manifests is the manifest access the sweep needs. *manifest.Store
// implements it; the graph engine passes a wrapper that also refreshes its
// head cache after a recovery publish.
type Manifests interface {
	// Probe returns a branch's newest version key (one List).
	Probe(ctx context.Context, branch string) (manifest.Ref, error)
	// Read fetches the entry a live Ref points at (one GET).
	Read(ctx context.Context, r manifest.Ref) (*manifest.Entry, error)
	// ReadVersion fetches one exact version; a missing one matches
	// backend.ErrNotFound.
	ReadVersion(ctx context.Context, branch string, incarnation, version uint64) (*manifest.Entry, error)
	// Publish stores e as the next version of its branch with exactly one
	// conditional create (manifest.Store.Publish semantics).
	Publish(ctx context.Context, e *manifest.Entry) error
}

var _ Manifests = (*manifest.Store)(nil)

// TableState is what one planned table effect looks like in storage,
// compared with the table's current manifest pin.
type TableState string

// Table states.
const (
	// NoMovement: HEAD equals the pin; the effect did not land (a
	// first-touch fork may exist untouched).
	NoMovement TableState = "NoMovement"
	// RolledPastExpected: HEAD is exactly the planned version and carries
	// the planned transaction (read version, uuid): this write's effect.
	RolledPastExpected TableState = "RolledPastExpected"
	// Compensated: this write's effect landed and a restore to the pin
	// landed on top of it (a rollback interrupted before its publish).
	Compensated TableState = "Compensated"
	// CompensatedPublished: the rollback restore is already published.
	CompensatedPublished TableState = "CompensatedPublished"
	// UnexpectedAtP1: HEAD is one past the pin, but not by this write.
	UnexpectedAtP1 TableState = "UnexpectedAtP1"
	// UnexpectedMultistep: HEAD is several versions past the pin (foreign
	// commits, or this write's effect buried under one).
	UnexpectedMultistep TableState = "UnexpectedMultistep"
	// InvariantViolation: HEAD is behind the pin.
	InvariantViolation TableState = "InvariantViolation"
)

// Classification is the verdict on a whole sidecar.
type Classification string

// Classifications. The first six are the all-or-nothing decision tree; the
// last two are found before any table is examined.
const (
	ClassRolledPastExpected  Classification = "RolledPastExpected"
	ClassNoMovement          Classification = "NoMovement"
	ClassUnexpectedAtP1      Classification = "UnexpectedAtP1"
	ClassUnexpectedMultistep Classification = "UnexpectedMultistep"
	ClassIncompletePhaseB    Classification = "IncompletePhaseB"
	ClassInvariantViolation  Classification = "InvariantViolation"
	// ClassPublished: the planned manifest version is visible; only Phase D
	// is missing.
	ClassPublished Classification = "Published"
	// ClassOrphaned: the branch incarnation the write targeted is gone, so
	// its effects are unreachable.
	ClassOrphaned Classification = "Orphaned"
)

// TableAssessment is one table of an assessment.
type TableAssessment struct {
	manifest.IntentTable
	State TableState `json:"state"`
	// Pin is the table's current manifest version on Branch (for an
	// unpublished first touch: the fork point).
	Pin uint64 `json:"pin"`
	// Head is the live HEAD version of Branch.
	Head uint64 `json:"head"`
	// Unpublished: a first touch whose fork the manifest does not pin.
	Unpublished bool `json:"unpublished,omitempty"`
	// RefPresent: for an unpublished first touch, the table ref exists.
	RefPresent bool `json:"ref_present,omitempty"`
	// Residue: an unpublished first touch left versions under an absent
	// ref (a fork delete interrupted), to be reclaimed.
	Residue bool   `json:"residue,omitempty"`
	Detail  string `json:"detail,omitempty"`
}

// Assessment is a classified sidecar: what recovery would do with it.
type Assessment struct {
	Sidecar        *Sidecar          `json:"sidecar"`
	Class          Classification    `json:"classification"`
	AuthorityMoved bool              `json:"authority_moved"`
	Tables         []TableAssessment `json:"tables"`
	// head is the branch head the assessment compared against.
	head *manifest.Entry
}

// Assess classifies a sidecar against the live store. It writes nothing.
func Assess(ctx context.Context, store backend.StorageAdapter, man Manifests, sc *Sidecar) (*Assessment, error) {
	in := &sc.Intent
	a := &Assessment{Sidecar: sc}
	pub, err := man.ReadVersion(ctx, in.Entry.Branch, in.Entry.Incarnation, in.Entry.Version)
	switch {
	case err == nil && pub.Kind == manifest.KindCommit && pub.Commit.ID == in.Entry.Commit.ID:
		a.Class = ClassPublished
		return a, nil
	case err != nil && !backend.IsNotFound(err):
		return nil, fmt.Errorf("assess operation %s: %w", in.OperationID, err)
	}
	ref, err := man.Probe(ctx, in.Token.Branch)
	if err != nil {
		return nil, fmt.Errorf("assess operation %s: %w", in.OperationID, err)
	}
	if !ref.Live() || ref.Incarnation != in.Token.Incarnation {
		a.Class = ClassOrphaned
		return a, nil
	}
	head, err := man.Read(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("assess operation %s: %w", in.OperationID, err)
	}
	a.head = head
	a.AuthorityMoved = head.Version != in.Token.Head || head.SchemaIdentity != in.Token.SchemaIdentity
	for _, t := range in.Tables {
		ta, err := assessTable(ctx, store, head, t)
		if err != nil {
			return nil, fmt.Errorf("assess operation %s table %s: %w", in.OperationID, t.Key, err)
		}
		a.Tables = append(a.Tables, ta)
	}
	a.Class = classify(a.Tables)
	return a, nil
}

func classify(ts []TableAssessment) Classification {
	count := map[TableState]int{}
	for _, t := range ts {
		count[t.State]++
	}
	switch {
	case count[InvariantViolation] > 0:
		return ClassInvariantViolation
	case count[UnexpectedMultistep] > 0:
		return ClassUnexpectedMultistep
	case count[UnexpectedAtP1] > 0:
		return ClassUnexpectedAtP1
	case len(ts) == 0 || count[NoMovement] == len(ts):
		return ClassNoMovement
	case count[RolledPastExpected] == len(ts):
		return ClassRolledPastExpected
	case plant.On(plant.RollForwardUnconfirmed) && count[RolledPastExpected] > 0:
		return ClassRolledPastExpected
	}
	return ClassIncompletePhaseB
}

// txnAt reads the exact transaction that produced version v of a table
// branch (one GET).
func txnAt(ctx context.Context, store backend.StorageAdapter, path, branch string, v uint64) (table.Transaction, error) {
	m, err := table.ReadManifest(ctx, store, path, branch, v)
	if err != nil {
		return table.Transaction{}, err
	}
	return m.Transaction, nil
}

// ours reports whether version t.PlannedVersion is this write's effect.
func ours(ctx context.Context, store backend.StorageAdapter, t manifest.IntentTable) (bool, error) {
	tx, err := txnAt(ctx, store, t.Path, t.Branch, t.PlannedVersion)
	if err != nil {
		if backend.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	return tx.UUID == t.TxnUUID && tx.ReadVersion == readVersionOf(t), nil
}

// isCompensation reports whether version v is a restore of the effect's
// read version committed on top of the planned version.
func isCompensation(ctx context.Context, store backend.StorageAdapter, t manifest.IntentTable, v uint64) (bool, error) {
	if v != t.PlannedVersion+1 {
		return false, nil
	}
	tx, err := txnAt(ctx, store, t.Path, t.Branch, v)
	if err != nil {
		return false, err
	}
	if tx.Operation != table.OpRestore || tx.RestoreTarget != readVersionOf(t) || tx.ReadVersion != t.PlannedVersion {
		return false, nil
	}
	return ours(ctx, store, t)
}

func assessTable(ctx context.Context, store backend.StorageAdapter, head *manifest.Entry, t manifest.IntentTable) (TableAssessment, error) {
	ta := TableAssessment{IntentTable: t}
	cur, ok := head.Pin(t.Key)
	switch {
	case !ok:
		ta.State, ta.Detail = UnexpectedMultistep, "the table is no longer in the graph"
		return ta, nil
	case cur.Path != t.Path:
		ta.State, ta.Detail = UnexpectedMultistep, "a schema apply replaced the table under this key"
		return ta, nil
	case cur.Branch == t.Branch:
		ta.Pin = cur.Version
	case t.FirstTouch:
		ta.Pin, ta.Unpublished = t.ForkVersion, true
		ref, err := table.ReadRef(ctx, store, t.Path, t.Branch)
		switch {
		case err == nil:
			ta.RefPresent = true
			if ref.ParentBranch != t.ForkBranch || ref.ParentVersion != t.ForkVersion {
				ta.State = UnexpectedAtP1
				ta.Detail = fmt.Sprintf("the table ref was forked from %s@%d, not %s@%d", ref.ParentBranch, ref.ParentVersion, t.ForkBranch, t.ForkVersion)
				return ta, nil
			}
		case errors.Is(err, table.ErrNotFound):
			// No ref: the crash came before the fork, or a fork delete was
			// interrupted after the ref went. Either way nothing reachable
			// moved; versions left under the absent ref are residue.
			page, lerr := store.List(ctx, table.VersionsPrefix(t.Path, t.Branch), backend.ListOptions{MaxKeys: 1})
			if lerr != nil {
				return ta, lerr
			}
			ta.Residue = len(page.Objects) > 0
			ta.Head, ta.State = t.ForkVersion, NoMovement
			return ta, nil
		default:
			return ta, err
		}
	default:
		ta.State = UnexpectedMultistep
		ta.Detail = fmt.Sprintf("the manifest pins the table on %q, the write planned %q", cur.Branch, t.Branch)
		return ta, nil
	}
	h, err := table.LatestVersion(ctx, store, t.Path, t.Branch)
	if err != nil {
		return ta, err
	}
	ta.Head = h
	rv := readVersionOf(t)
	switch {
	case h < ta.Pin:
		ta.State = InvariantViolation
		ta.Detail = fmt.Sprintf("HEAD %d is behind the manifest pin %d", h, ta.Pin)
	case h == ta.Pin && ta.Pin == rv:
		ta.State = NoMovement
	case h == ta.Pin:
		// The pin moved past the read version. It is either this write's
		// rollback already published, or other published commits; this
		// write's effect must not be buried under them.
		comp, err := isCompensation(ctx, store, t, h)
		if err != nil {
			return ta, err
		}
		if comp {
			ta.State = CompensatedPublished
			return ta, nil
		}
		if h >= t.PlannedVersion {
			mine, err := ours(ctx, store, t)
			if err != nil {
				return ta, err
			}
			if mine {
				ta.State, ta.Detail = UnexpectedMultistep, "this write's effect is buried under other published commits"
				return ta, nil
			}
		}
		ta.State = NoMovement
	case ta.Pin == rv && h == t.PlannedVersion:
		mine, err := ours(ctx, store, t)
		if err != nil {
			return ta, err
		}
		if mine {
			ta.State = RolledPastExpected
		} else {
			ta.State, ta.Detail = UnexpectedAtP1, "another transaction holds the planned version"
		}
	case ta.Pin == rv && h == t.PlannedVersion+1:
		comp, err := isCompensation(ctx, store, t, h)
		if err != nil {
			return ta, err
		}
		if comp {
			ta.State = Compensated
		} else {
			ta.State, ta.Detail = UnexpectedMultistep, fmt.Sprintf("HEAD %d is two past the pin %d and not this write's rollback", h, ta.Pin)
		}
	case h == ta.Pin+1:
		ta.State, ta.Detail = UnexpectedAtP1, fmt.Sprintf("HEAD %d is one past the pin %d", h, ta.Pin)
	default:
		ta.State, ta.Detail = UnexpectedMultistep, fmt.Sprintf("HEAD %d is %d past the pin %d", h, h-ta.Pin, ta.Pin)
	}
	return ta, nil
}
