package merge

import (
	"errors"
	"fmt"
	"strings"
)

// Conflict kinds (snake_case, as on the wire).
const (
	DivergentInsert          = "divergent_insert"
	DivergentUpdate          = "divergent_update"
	DeleteVsUpdate           = "delete_vs_update"
	OrphanEdge               = "orphan_edge"
	UniqueViolation          = "unique_violation"
	CardinalityViolation     = "cardinality_violation"
	ValueConstraintViolation = "value_constraint_violation"
)

// Conflict is one reason a merge was refused.
type Conflict struct {
	EntityKind string `json:"entity_kind"` // "node" or "edge"
	TypeName   string `json:"type_name"`
	EntityID   string `json:"entity_id,omitempty"`
	Kind       string `json:"kind"`
	Message    string `json:"message"`
}

// ErrMergeConflict matches every *MergeConflicts.
var ErrMergeConflict = errors.New("merge conflict")

// ErrMergeTooLarge: the merge's delta exceeds Options.MaxChanges; nothing
// was written.
var ErrMergeTooLarge = errors.New("merge too large")

// MergeConflicts is a merge refused because of conflicts; nothing was
// written and both branches stay writable. Conflicts are sorted (nodes
// before edges, then type, id and kind).
type MergeConflicts struct {
	Source, Target string
	Conflicts      []Conflict
}

// SummaryLimit is how many conflicts the error message spells out.
const SummaryLimit = 3

func (e *MergeConflicts) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "merge of %q into %q refused: %d conflict", e.Source, e.Target, len(e.Conflicts))
	if len(e.Conflicts) != 1 {
		b.WriteString("s")
	}
	b.WriteString(" (nothing was written)")
	for i, c := range e.Conflicts {
		if i == SummaryLimit {
			fmt.Fprintf(&b, "; and %d more", len(e.Conflicts)-SummaryLimit)
			break
		}
		fmt.Fprintf(&b, "; %s: %s", c.Kind, c.Message)
	}
	return b.String()
}

// Is makes errors.Is(err, ErrMergeConflict) hold.
func (e *MergeConflicts) Is(target error) bool { return target == ErrMergeConflict }
