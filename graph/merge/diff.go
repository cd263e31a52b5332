package merge

// The exact entity diff between two snapshots: per table, by entity id,
// whole-row comparison. A table pinned at the same version on both sides
// has no diff and is not read. Otherwise only the fragments the two
// versions do not share (a different file, or the same file with another
// deletion vector) are read: a row of a shared fragment is live, and the
// same, on both sides, and an id is live at most once per version, so an
// id read on one side only was inserted or deleted, and an id read on both
// sides was updated when its rows differ.

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/change"
	"github.com/omnigraph-go/omnigraph/lang/pg"
	"github.com/omnigraph-go/omnigraph/manifest"
	"github.com/omnigraph-go/omnigraph/table"
)

// Op is what a change did to one entity.
type Op string

// The change ops.
const (
	OpInsert Op = "insert"
	OpUpdate Op = "update"
	OpDelete Op = "delete"
)

// Change is one entity's change between two snapshots. Insert has only
// After, delete only Before, update both. Edge changes carry From and To
// (the endpoints after the change; before it for a delete).
type Change struct {
	EntityKind string     `json:"entity_kind"` // "node" or "edge"
	TypeName   string     `json:"type_name"`
	ID         string     `json:"id"`
	Op         Op         `json:"op"`
	Before     change.Row `json:"before,omitempty"`
	After      change.Row `json:"after,omitempty"`
	From       string     `json:"from,omitempty"`
	To         string     `json:"to,omitempty"`
}

// Filter selects changes; a zero field selects everything.
type Filter struct {
	Type string
	Op   Op
	// Limit caps how many changes are returned (0: all).
	Limit int
}

func (f Filter) keep(c *Change) bool {
	return (f.Type == "" || f.Type == c.TypeName) && (f.Op == "" || f.Op == c.Op)
}

// Errors of the diff, classified with errors.Is.
var (
	// ErrParentlessCommit: the genesis commit has no parent to diff against.
	ErrParentlessCommit = errors.New("parentless_commit")
	// ErrSchemaBoundary: the two sides have different accepted schemas.
	ErrSchemaBoundary = errors.New("schema_boundary")
)

// Diff returns the changes that turn snapshot a into snapshot b: nodes
// before edges, then by type name, then by id. Both must have the same
// accepted schema (ErrSchemaBoundary otherwise).
func Diff(ctx context.Context, a, b *graph.Snapshot, f Filter) ([]Change, error) {
	if a.SchemaIdentity() != b.SchemaIdentity() {
		return nil, fmt.Errorf("%w: the two sides have different schemas (a schema apply lies between them); diff each side of the schema change separately", ErrSchemaBoundary)
	}
	cat, err := b.Catalog(ctx)
	if err != nil {
		return nil, err
	}
	var out []Change
	for _, t := range tablesOf(cat) {
		if f.Type != "" && f.Type != t.name {
			continue
		}
		d, err := diffTable(ctx, a, b, t)
		if err != nil {
			return nil, err
		}
		for _, id := range sortedIDs(d) {
			if c := d[id]; f.keep(c) {
				out = append(out, *c)
				if f.Limit > 0 && len(out) >= f.Limit {
					return out, nil
				}
			}
		}
	}
	return out, nil
}

// CommitChanges is the diff of commit id against its first parent.
func CommitChanges(ctx context.Context, g *graph.Graph, id string, f Filter) ([]Change, error) {
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

// tablesOf lists the catalog's tables: nodes before edges, by type name.
func tablesOf(cat *pg.Catalog) []tableRef {
	var out []tableRef
	nodes := append([]*pg.NodeType(nil), cat.Nodes...)
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	for _, n := range nodes {
		out = append(out, tableRef{key: graph.NodeTableKey(n.Name), name: n.Name, kind: "node", node: n})
	}
	edges := append([]*pg.EdgeType(nil), cat.Edges...)
	sort.Slice(edges, func(i, j int) bool { return edges[i].Name < edges[j].Name })
	for _, e := range edges {
		out = append(out, tableRef{key: graph.EdgeTableKey(e.Name), name: e.Name, kind: "edge", edge: e})
	}
	return out
}

func sortedIDs[V any](m map[string]V) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func samePin(a, b manifest.TablePin) bool {
	return a.Path == b.Path && a.Branch == b.Branch && a.Version == b.Version
}

// diffTable is one table's diff from a to b, by id (nil when the pins are
// equal: nothing is read).
func diffTable(ctx context.Context, a, b *graph.Snapshot, t tableRef) (map[string]*Change, error) {
	pa, oka := a.Pin(t.key)
	pb, okb := b.Pin(t.key)
	if !oka || !okb {
		return nil, fmt.Errorf("%w: table %s is not in both snapshots", ErrSchemaBoundary, t.key)
	}
	if samePin(pa, pb) {
		return nil, nil
	}
	da, err := a.OpenTable(ctx, t.key)
	if err != nil {
		return nil, err
	}
	db, err := b.OpenTable(ctx, t.key)
	if err != nil {
		return nil, err
	}
	onlyA, onlyB := unshared(da.Manifest(), db.Manifest())
	ra, err := readRows(ctx, da, onlyA)
	if err != nil {
		return nil, fmt.Errorf("diff %s: %w", t.key, err)
	}
	rb, err := readRows(ctx, db, onlyB)
	if err != nil {
		return nil, fmt.Errorf("diff %s: %w", t.key, err)
	}
	out := map[string]*Change{}
	for id, before := range ra {
		after, ok := rb[id]
		switch {
		case !ok:
			out[id] = newChange(t, id, OpDelete, before, nil)
		case !rowsEqual(before, after):
			out[id] = newChange(t, id, OpUpdate, before, after)
		}
	}
	for id, after := range rb {
		if _, ok := ra[id]; !ok {
			out[id] = newChange(t, id, OpInsert, nil, after)
		}
	}
	return out, nil
}

func newChange(t tableRef, id string, op Op, before, after change.Row) *Change {
	c := &Change{EntityKind: t.kind, TypeName: t.name, ID: id, Op: op, Before: before, After: after}
	if t.edge != nil {
		r := after
		if r == nil {
			r = before
		}
		c.From, _ = r[pg.ColSrc].(string)
		c.To, _ = r[pg.ColDst].(string)
	}
	return c
}

// unshared returns the ids of the fragments of a that b does not hold
// identically, and those of b that a does not.
func unshared(a, b *table.Manifest) (onlyA, onlyB []string) {
	sig := func(f table.Fragment) string {
		if f.Deletion == nil {
			return f.ID
		}
		return f.ID + "\x00" + f.Deletion.Path
	}
	inA := map[string]bool{}
	for _, f := range a.Fragments {
		inA[sig(f)] = true
	}
	inB := map[string]bool{}
	for _, f := range b.Fragments {
		inB[sig(f)] = true
		if !inA[sig(f)] {
			onlyB = append(onlyB, f.ID)
		}
	}
	for _, f := range a.Fragments {
		if !inB[sig(f)] {
			onlyA = append(onlyA, f.ID)
		}
	}
	return onlyA, onlyB
}

// readRows reads the live rows of the given fragments, by id.
func readRows(ctx context.Context, ds *table.Dataset, frags []string) (map[string]change.Row, error) {
	out := map[string]change.Row{}
	if len(frags) == 0 {
		return out, nil
	}
	recs, err := ds.Scan(ctx, table.ScanOptions{Fragments: frags})
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		for _, row := range change.RecordRows(r) {
			id, _ := row[pg.ColID].(string)
			out[id] = row
		}
		r.Release()
	}
	return out, nil
}

// rowsEqual is the whole-row comparison: every column, NULLs equal. Two
// Blob values are equal when they hold the same bytes (or URI), wherever
// each is stored: branches that loaded the same bytes apart agree.
func rowsEqual(a, b change.Row) bool {
	if len(a) != len(b) {
		return false
	}
	for k, va := range a {
		vb, ok := b[k]
		if !ok {
			return false
		}
		if x, isBlob := va.(table.Blob); isBlob {
			if y, ok := vb.(table.Blob); !ok || !x.Same(y) {
				return false
			}
			continue
		}
		if !reflect.DeepEqual(va, vb) {
			return false
		}
	}
	return true
}

// describe names an entity in messages: `node Person "alice"`.
func describe(kind, typeName, id string) string {
	return strings.TrimSpace(fmt.Sprintf("%s %s %q", kind, typeName, id))
}
