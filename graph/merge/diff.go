package merge

// The entity diff lives in graph/diff (the change feed pages it too);
// merge classifies its three-way changes with it. These names keep
// merge's own vocabulary and its callers' (merge.Change, merge.Diff).

import (
	"context"
	"fmt"
	"strings"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/change"
	"github.com/omnigraph-go/omnigraph/graph/diff"
	"github.com/omnigraph-go/omnigraph/lang/pg"
	"github.com/omnigraph-go/omnigraph/manifest"
)

// Op is what a change did to one entity.
type Op = diff.Op

// The change ops.
const (
	OpInsert = diff.OpInsert
	OpUpdate = diff.OpUpdate
	OpDelete = diff.OpDelete
)

// Change is one entity's change between two snapshots (diff.Change).
type Change = diff.Change

// Filter selects changes; a zero field selects everything.
type Filter = diff.Filter

// Errors of the diff, classified with errors.Is.
var (
	// ErrParentlessCommit: the genesis commit has no parent to diff against.
	ErrParentlessCommit = diff.ErrParentlessCommit
	// ErrSchemaBoundary: the two sides have different accepted schemas.
	ErrSchemaBoundary = diff.ErrSchemaBoundary
)

// Diff returns the changes that turn snapshot a into snapshot b (diff.Diff).
func Diff(ctx context.Context, a, b *graph.Snapshot, f Filter) ([]Change, error) {
	return diff.Diff(ctx, a, b, f)
}

// CommitChanges is the diff of commit id against its first parent.
func CommitChanges(ctx context.Context, g *graph.Graph, id string, f Filter) ([]Change, error) {
	if err := manifest.ValidateCommitID(id); err != nil {
		return nil, err
	}
	w := newWalker(g)
	e, err := g.Manifest().FindCommit(ctx, id)
	if err != nil {
		return nil, err
	}
	w.remember(e)
	if len(e.Commit.Parents) == 0 {
		return nil, fmt.Errorf("%w: commit %s is the graph's first commit; it has no parent to compare with", ErrParentlessCommit, id)
	}
	p, err := w.firstParent(ctx, e)
	if err != nil {
		return nil, err
	}
	if p.SchemaIdentity != e.SchemaIdentity {
		return nil, fmt.Errorf("%w: commit %s changed the schema; its rows cannot be compared with its parent's", ErrSchemaBoundary, id)
	}
	return Diff(ctx, g.SnapshotOf(p), g.SnapshotOf(e), f)
}

// tableRef names one table of the catalog.
type tableRef struct {
	key, name, kind string
	node            *pg.NodeType
	edge            *pg.EdgeType
}

func (t tableRef) table() diff.Table {
	return diff.Table{Key: t.key, Name: t.name, Kind: t.kind, Node: t.node, Edge: t.edge}
}

// tablesOf lists the catalog's tables: nodes before edges, by type name.
func tablesOf(cat *pg.Catalog) []tableRef {
	var out []tableRef
	for _, t := range diff.Tables(cat) {
		out = append(out, tableRef{key: t.Key, name: t.Name, kind: t.Kind, node: t.Node, edge: t.Edge})
	}
	return out
}

func sortedIDs[V any](m map[string]V) []string { return diff.SortedIDs(m) }

// diffTable is one table's diff from a to b, by id (nil when the pins are
// equal: nothing is read).
func diffTable(ctx context.Context, a, b *graph.Snapshot, t tableRef) (map[string]*Change, error) {
	return diff.TableChanges(ctx, a, b, t.table())
}

// rowsEqual is the whole-row comparison: every column, NULLs equal.
func rowsEqual(a, b change.Row) bool { return diff.RowsEqual(a, b) }

// describe names an entity in messages: `node Person "alice"`.
func describe(kind, typeName, id string) string {
	return strings.TrimSpace(fmt.Sprintf("%s %s %q", kind, typeName, id))
}
