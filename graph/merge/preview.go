package merge

import (
	"context"

	"github.com/omnigraph-go/omnigraph/graph"
)

// PreviewResult is what merging source into target would do now. Its
// Result has the outcome, the merge base and the counts of the changes
// that would apply (Commit is nil: nothing is written). Changes lists them
// (nodes before edges, then type and id; Before is the row the target
// holds, After the row it would hold), at most Limit of them. Conflicts
// are the conflicts that would refuse the merge, ordered as
// MergeConflicts orders them; a merge with any writes nothing.
type PreviewResult struct {
	Result
	Changes   []Change   `json:"changes"`
	Truncated bool       `json:"truncated,omitempty"`
	Conflicts []Conflict `json:"conflicts"`

	limit int
}

// PreviewOptions shape a preview.
type PreviewOptions struct {
	// Limit caps Changes (0: all); the counts always cover every change.
	Limit int
	// MaxChanges is Options.MaxChanges: a larger merge is refused with
	// ErrMergeTooLarge, as the merge itself would be.
	MaxChanges int
}

// Preview runs the merge of source into target (default main) up to the
// point where it would write: the same capture, merge base,
// classification, orphan and value checks and constraint evaluation as
// Run, so a preview and the merge that follows it (with no write in
// between) reach the same verdict. It reads only: it works on a read-only
// handle and takes no write slot. Errors are Run's (unknown branches,
// ErrSchemaBoundary, ErrMergeTooLarge, no shared history); conflicts are
// not an error here but PreviewResult.Conflicts.
func Preview(ctx context.Context, g *graph.Graph, source, target string, opts PreviewOptions) (*PreviewResult, error) {
	pv := &PreviewResult{Changes: []Change{}, Conflicts: []Conflict{}, limit: opts.Limit}
	res, err := run(ctx, g, source, target, Options{MaxChanges: opts.MaxChanges}, pv)
	if err != nil {
		err = g.IfBranchDeleted(ctx, "merge source", source, err)
		err = g.IfBranchDeleted(ctx, "merge target", target, err)
		return nil, err
	}
	pv.Result = *res
	if pv.Conflicts == nil {
		pv.Conflicts = []Conflict{}
	}
	return pv, nil
}

// record notes one change the merge applies to the target (nil pv: a real
// merge, nothing to record).
func (pv *PreviewResult) record(c *Change) {
	if pv == nil {
		return
	}
	if pv.limit > 0 && len(pv.Changes) >= pv.limit {
		pv.Truncated = true
		return
	}
	pv.Changes = append(pv.Changes, *c)
}
