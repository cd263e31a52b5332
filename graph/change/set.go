// Package change is the change set a writer builds against one snapshot
// before it commits: the rows and deletions each table will get, and the
// constraint evaluator that checks them (keys, @unique, edge endpoints,
// stranded edges, @card). Load and mutation (and soon merge) build a Set,
// call Validate, then StageInto a graph.Write of the shared pipeline (package
// graph, write.go), which commits and publishes it.
//
// Every statement (or load line) adds rows or deletions to one per-table
// pending set; reads during the write (predicate matching, validation) see
// committed rows at the write's snapshot overlaid with the pending ones
// (read-your-writes, Set.Visible). At the end each touched table is staged
// as exactly one transaction.
package change

import (
	"context"
	"fmt"
	"sort"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/lang/pg"
	"github.com/omnigraph-go/omnigraph/table"
)

// Set is the change one write makes: a pending Table per touched table, over
// the committed rows of the write's snapshot.
type Set struct {
	snap   *graph.Snapshot
	cat    *pg.Catalog
	tables map[string]*Table
	opened map[string]*table.Dataset
}

// Table is one table's pending change.
type Table struct {
	key  string
	node *pg.NodeType
	edge *pg.EdgeType
	// rows are the staged rows by id; order is first-insertion order.
	rows  map[string]Row
	order []string
	// fresh marks ids known not to exist in the committed table (new ULIDs,
	// append-mode rows checked against the branch): they are appended
	// without a key lookup. Other rows replace committed rows by id.
	fresh map[string]bool
	// minted are ids the write minted itself (new ULIDs): they cannot
	// clash with committed rows.
	minted map[string]bool
	// seq is each row's position among every row the write staged.
	seq map[string]int
	// origin says where each row came from ("line 12", "statement 2").
	origin map[string]string
	// deletes are committed ids to delete; delOrigin says which
	// statement deleted each.
	deletes   map[string]bool
	delOrd    []string
	delOrigin map[string]string
	// overwrite replaces the table's whole image with rows.
	overwrite bool
}

// New starts an empty change set over snap, whose accepted schema is cat.
func New(snap *graph.Snapshot, cat *pg.Catalog) *Set {
	return &Set{snap: snap, cat: cat, tables: map[string]*Table{}, opened: map[string]*table.Dataset{}}
}

// Snapshot is the snapshot the change is made against.
func (s *Set) Snapshot() *graph.Snapshot { return s.snap }

// Catalog is the accepted schema of the snapshot.
func (s *Set) Catalog() *pg.Catalog { return s.cat }

// nodeTable returns the pending set of a node type, creating it.
func (s *Set) NodeTable(n *pg.NodeType) *Table {
	k := graph.NodeTableKey(n.Name)
	p := s.tables[k]
	if p == nil {
		p = newTable(k)
		p.node = n
		s.tables[k] = p
	}
	return p
}

// edgeTable returns the pending set of an edge type, creating it.
func (s *Set) EdgeTable(e *pg.EdgeType) *Table {
	k := graph.EdgeTableKey(e.Name)
	p := s.tables[k]
	if p == nil {
		p = newTable(k)
		p.edge = e
		s.tables[k] = p
	}
	return p
}

var stageSeq atomic.Int64

// nextSeq orders staged rows across tables (for reporting the first
// offending row of a write).
func nextSeq() int { return int(stageSeq.Add(1)) }

func newTable(key string) *Table {
	return &Table{key: key, rows: map[string]Row{}, fresh: map[string]bool{}, minted: map[string]bool{}, seq: map[string]int{}, origin: map[string]string{}, deletes: map[string]bool{}, delOrigin: map[string]string{}}
}

// reserve sizes the table's maps for n more rows (bulk loads).
func (p *Table) Reserve(n int) {
	if len(p.rows) > 0 || n < 64 {
		return
	}
	p.rows = make(map[string]Row, n)
	p.fresh = make(map[string]bool, n)
	p.seq = make(map[string]int, n)
	p.origin = make(map[string]string, n)
	p.order = make([]string, 0, n)
}

// put stages r (which holds "id") replacing any pending row with that id.
func (p *Table) Put(r Row, fresh bool, origin string) {
	id := r[pg.ColID].(string)
	if _, ok := p.rows[id]; !ok {
		p.order = append(p.order, id)
		p.seq[id] = nextSeq()
		p.fresh[id] = fresh
		p.origin[id] = origin
	} else if !fresh {
		p.fresh[id] = false
	}
	p.rows[id] = r
}

// del stages the deletion of a committed id; origin is where it was asked.
func (p *Table) Del(id, origin string) bool {
	if p.deletes[id] {
		return false
	}
	p.deletes[id] = true
	p.delOrd = append(p.delOrd, id)
	p.delOrigin[id] = origin
	return true
}

// Key is the table's manifest key (graph.NodeTableKey / EdgeTableKey).
func (p *Table) Key() string { return p.key }

// Mint records that id was minted by this write (a new ULID): it cannot
// clash with a committed row.
func (p *Table) Mint(id string) { p.minted[id] = true }

// Overwrite makes the write replace the table's whole image with its rows.
func (p *Table) Overwrite() { p.overwrite = true }

// Staged returns the pending row with this id.
func (p *Table) Staged(id string) (Row, bool) {
	r, ok := p.rows[id]
	return r, ok
}

// Fresh reports whether id is known not to exist in the committed table.
func (p *Table) Fresh(id string) bool { return p.fresh[id] }

// Origin says where the pending row id came from ("line 12").
func (p *Table) Origin(id string) string { return p.origin[id] }

// Visible returns the rows of p's table that keep selects, as this write
// sees them: pending rows (in staging order), then committed rows that
// match filter (a pushdown that only prunes what is read; nil reads all)
// and that the write neither replaced nor deleted. An overwritten table
// shows only its pending rows.
func (s *Set) Visible(ctx context.Context, p *Table, cols []string, filter table.Predicate, keep func(Row) bool) ([]Row, error) {
	var out []Row
	for _, id := range p.order {
		if r := p.rows[id]; keep(r) {
			out = append(out, r)
		}
	}
	if p.overwrite {
		return out, nil
	}
	committed, err := s.ScanRows(ctx, p.key, cols, filter)
	if err != nil {
		return nil, err
	}
	for _, r := range committed {
		id, _ := r[pg.ColID].(string)
		if _, replaced := p.rows[id]; replaced || p.deletes[id] {
			continue
		}
		if keep(r) {
			out = append(out, r)
		}
	}
	return out, nil
}

func (p *Table) empty() bool {
	return len(p.rows) == 0 && len(p.deletes) == 0 && !p.overwrite
}

func (p *Table) TypeName() string {
	if p.node != nil {
		return p.node.Name
	}
	return p.edge.Name
}

// committed opens a table at the write's snapshot (at most one GET; the
// handle caches table versions).
func (s *Set) committed(ctx context.Context, key string) (*table.Dataset, error) {
	if ds := s.opened[key]; ds != nil {
		return ds, nil
	}
	ds, err := s.snap.OpenTable(ctx, key)
	if err != nil {
		return nil, err
	}
	s.opened[key] = ds
	return ds, nil
}

// scanRows reads the committed rows of a table matching filter.
func (s *Set) ScanRows(ctx context.Context, key string, cols []string, filter table.Predicate) ([]Row, error) {
	ds, err := s.committed(ctx, key)
	if err != nil {
		return nil, err
	}
	if ds.RowCount() == 0 {
		return nil, nil
	}
	recs, err := ds.Scan(ctx, table.ScanOptions{Columns: cols, Filter: filter})
	if err != nil {
		return nil, err
	}
	// A mutation's read phase runs under a budget (graph.Budget): each
	// record's rows are charged before they become maps.
	m := graph.MeterOf(ctx)
	var out []Row
	for i, r := range recs {
		n := r.NumRows()
		if err := m.Charge(n, n*(64+48*r.NumCols())); err != nil {
			for _, rest := range recs[i:] {
				rest.Release()
			}
			return nil, err
		}
		out = append(out, recordEntityRows(r)...)
		r.Release()
	}
	return out, nil
}

// lookupIDs returns which of ids exist in the committed table.
func (s *Set) lookupIDs(ctx context.Context, key string, ids []string) (map[string]bool, error) {
	if len(ids) == 0 {
		return map[string]bool{}, nil
	}
	ds, err := s.committed(ctx, key)
	if err != nil {
		return nil, err
	}
	return HasIDs(ctx, ds, ids)
}

// HasIDs reports which of ids the table version holds (one key-index or
// fragment lookup).
func HasIDs(ctx context.Context, ds *table.Dataset, ids []string) (map[string]bool, error) {
	found := map[string]bool{}
	if len(ids) == 0 || ds.RowCount() == 0 {
		return found, nil
	}
	rec, err := ds.Lookup(ctx, ids...)
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	idx := rec.Schema().FieldIndices(pg.ColID)
	if len(idx) == 0 {
		return nil, fmt.Errorf("table %s has no id column", ds.Path())
	}
	col := rec.Column(idx[0])
	for i := 0; i < col.Len(); i++ {
		if v, ok := canonicalAt(col, i).(string); ok {
			found[v] = true
		}
	}
	return found, nil
}

// touched reports whether anything is staged.
func (s *Set) touched() bool {
	for _, p := range s.tables {
		if !p.empty() {
			return true
		}
	}
	return false
}

// stageInto registers one staged transaction per touched table with w.
func (s *Set) StageInto(ctx context.Context, w *graph.Write) error {
	keys := make([]string, 0, len(s.tables))
	for k, p := range s.tables {
		if !p.empty() {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := s.tables[k]
		if err := w.Stage(ctx, k, p.stageFunc()); err != nil {
			return fmt.Errorf("stage %s: %w", k, err)
		}
	}
	return nil
}

func (p *Table) stageFunc() graph.StageFunc {
	return func(ctx context.Context, base *table.Dataset) (*table.Staged, error) {
		var up, add []Row
		for _, id := range p.order {
			r := p.rows[id]
			if p.overwrite || p.fresh[id] {
				add = append(add, r)
			} else {
				up = append(up, r)
			}
		}
		var recs []arrow.Record
		defer func() {
			for _, r := range recs {
				r.Release()
			}
		}()
		build := func(rows []Row) ([]arrow.Record, error) {
			if len(rows) == 0 {
				return nil, nil
			}
			rec, err := rowsRecord(base.Schema(), rows)
			if err != nil {
				return nil, fmt.Errorf("build rows of %s: %w", p.key, err)
			}
			recs = append(recs, rec)
			return []arrow.Record{rec}, nil
		}
		addRecs, err := build(add)
		if err != nil {
			return nil, err
		}
		if p.overwrite {
			return base.StageOverwrite(ctx, addRecs...)
		}
		upRecs, err := build(up)
		if err != nil {
			return nil, err
		}
		return base.StageChanges(ctx, table.Changes{DeleteKeys: p.delOrd, Upsert: upRecs, Append: addRecs})
	}
}
