// Package diff is the exact entity diff between two snapshots of a graph:
// per table, by entity id, whole-row comparison. Merge classifies its
// three-way changes with it, `commit changes` and `diff` print it, and the
// change feed (graph/changes) pages it commit by commit.
//
// A table pinned at the same version on both sides has no diff and is not
// read. Otherwise only the fragments the two versions do not share (a
// different file, or the same file with another deletion vector) are read:
// a row of a shared fragment is live, and the same, on both sides, and an
// id is live at most once per version, so an id read on one side only was
// inserted or deleted, and an id read on both sides was updated when its
// rows differ.
package diff

import (
	"context"
	"encoding/json"
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

// Rank orders the ops of one entity: insert < update < delete.
func (o Op) Rank() int {
	switch o {
	case OpInsert:
		return 0
	case OpUpdate:
		return 1
	}
	return 2
}

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

	// props are the type's properties, to render Before and After the
	// way every other output does (Rendered, MarshalJSON).
	props []*pg.Property
}

// Rendered returns Before and After with each value as JSON output prints
// it everywhere else (pg.Property.JSONValue: a Date as "YYYY-MM-DD", a
// DateTime as RFC 3339, a Blob as "base64:..." or its URI), not the stored
// form (a Date's day number). Every output of a change (the CLI, the HTTP
// routes, the feed, MCP) renders through it, so none can print 20513 where
// a query prints "2026-03-01".
func (c Change) Rendered() (before, after map[string]any) {
	return c.render(c.Before), c.render(c.After)
}

func (c Change) render(row change.Row) map[string]any {
	if row == nil {
		return nil
	}
	out := make(map[string]any, len(row))
	for k, v := range row {
		if p := propNamed(c.props, k); p != nil && v != nil {
			v = p.JSONValue(v)
		}
		out[k] = v
	}
	return out
}

func propNamed(props []*pg.Property, name string) *pg.Property {
	for _, p := range props {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// MarshalJSON writes the change with its values Rendered.
func (c Change) MarshalJSON() ([]byte, error) {
	type plain Change // no MarshalJSON: the fields as tagged
	p := plain(c)
	p.Before, p.After = c.Rendered()
	return json.Marshal(p)
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
	if f.Type != "" {
		_, isNode := cat.Node(f.Type)
		_, isEdge := cat.Edge(f.Type)
		if !isNode && !isEdge {
			var names []string
			for _, t := range Tables(cat) {
				names = append(names, t.Name)
			}
			return nil, fmt.Errorf("%w: unknown type %q: the schema's node and edge types are %s", graph.ErrInvalidInput, f.Type, strings.Join(names, ", "))
		}
	}
	var out []Change
	for _, t := range Tables(cat) {
		if f.Type != "" && f.Type != t.Name {
			continue
		}
		d, err := TableChanges(ctx, a, b, t)
		if err != nil {
			return nil, err
		}
		for _, id := range SortedIDs(d) {
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

// Table names one table of the catalog.
type Table struct {
	// Key is the manifest key ("node:Person"), Name the type name, Kind
	// "node" or "edge".
	Key, Name, Kind string
	// Node or Edge is the type (the other is nil).
	Node *pg.NodeType
	Edge *pg.EdgeType
}

// Tables lists the catalog's tables in diff order: nodes before edges, by
// type name.
func Tables(cat *pg.Catalog) []Table {
	var out []Table
	nodes := append([]*pg.NodeType(nil), cat.Nodes...)
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	for _, n := range nodes {
		out = append(out, Table{Key: graph.NodeTableKey(n.Name), Name: n.Name, Kind: "node", Node: n})
	}
	edges := append([]*pg.EdgeType(nil), cat.Edges...)
	sort.Slice(edges, func(i, j int) bool { return edges[i].Name < edges[j].Name })
	for _, e := range edges {
		out = append(out, Table{Key: graph.EdgeTableKey(e.Name), Name: e.Name, Kind: "edge", Edge: e})
	}
	return out
}

// SortedIDs returns the keys of m in order.
func SortedIDs[V any](m map[string]V) []string {
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

// Unchanged reports whether table t is pinned at the same version in both
// snapshots, so TableChanges would read nothing and find nothing.
func Unchanged(a, b *graph.Snapshot, t Table) bool {
	pa, oka := a.Pin(t.Key)
	pb, okb := b.Pin(t.Key)
	return oka && okb && samePin(pa, pb)
}

// TableChanges is one table's diff from a to b, by id (nil when the pins
// are equal: nothing is read).
func TableChanges(ctx context.Context, a, b *graph.Snapshot, t Table) (map[string]*Change, error) {
	pa, oka := a.Pin(t.Key)
	pb, okb := b.Pin(t.Key)
	if !oka || !okb {
		return nil, fmt.Errorf("%w: table %s is not in both snapshots", ErrSchemaBoundary, t.Key)
	}
	if samePin(pa, pb) {
		return nil, nil
	}
	// The two sides are read side by side: one round trip for the two
	// versions, one for the fragments they do not share.
	var da, db *table.Dataset
	if err := both(
		func() (err error) { da, err = a.OpenTable(ctx, t.Key); return err },
		func() (err error) { db, err = b.OpenTable(ctx, t.Key); return err },
	); err != nil {
		return nil, err
	}
	onlyA, onlyB := unshared(da.Manifest(), db.Manifest())
	var ra, rb map[string]change.Row
	if err := both(
		func() (err error) { ra, err = readRows(ctx, da, onlyA); return err },
		func() (err error) { rb, err = readRows(ctx, db, onlyB); return err },
	); err != nil {
		return nil, fmt.Errorf("diff %s: %w", t.Key, err)
	}
	out := map[string]*Change{}
	for id, before := range ra {
		after, ok := rb[id]
		switch {
		case !ok:
			out[id] = newChange(t, id, OpDelete, before, nil)
		case !RowsEqual(before, after):
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

func newChange(t Table, id string, op Op, before, after change.Row) *Change {
	c := &Change{EntityKind: t.Kind, TypeName: t.Name, ID: id, Op: op, Before: before, After: after}
	switch {
	case t.Node != nil:
		c.props = t.Node.Properties
	case t.Edge != nil:
		c.props = t.Edge.Properties
	}
	if t.Edge != nil {
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

// both runs f and g concurrently and returns the first error.
func both(f, g func() error) error {
	errc := make(chan error, 1)
	go func() { errc <- g() }()
	err := f()
	if gerr := <-errc; err == nil {
		err = gerr
	}
	return err
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

// RowsEqual is the whole-row comparison: every column, NULLs equal. Two
// Blob values are equal when they hold the same bytes (or URI), wherever
// each is stored: branches that loaded the same bytes apart agree.
func RowsEqual(a, b change.Row) bool {
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
