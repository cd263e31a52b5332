package graph

// The write accumulator shared by mutations and load: every statement (or
// load line) adds rows or deletions to one per-table pending set; reads
// during the write (predicate matching, validation) see committed rows at
// the write's snapshot overlaid with the pending ones (read-your-writes). At
// the end each touched table is staged as exactly one transaction.

import (
	"context"
	"fmt"
	"sort"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/omnigraph-go/omnigraph/graph/pg"
	"github.com/omnigraph-go/omnigraph/table"
)

type writeStaging struct {
	snap   *Snapshot
	cat    *pg.Catalog
	tables map[string]*pendingTable
	opened map[string]*table.Dataset
}

// pendingTable is one table's pending change.
type pendingTable struct {
	key  string
	node *pg.NodeType
	edge *pg.EdgeType
	// rows are the staged rows by id; order is first-insertion order.
	rows  map[string]entityRow
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

func newWriteStaging(snap *Snapshot, cat *pg.Catalog) *writeStaging {
	return &writeStaging{snap: snap, cat: cat, tables: map[string]*pendingTable{}, opened: map[string]*table.Dataset{}}
}

// nodeTable returns the pending set of a node type, creating it.
func (s *writeStaging) nodeTable(n *pg.NodeType) *pendingTable {
	k := NodeTableKey(n.Name)
	p := s.tables[k]
	if p == nil {
		p = newPendingTable(k)
		p.node = n
		s.tables[k] = p
	}
	return p
}

// edgeTable returns the pending set of an edge type, creating it.
func (s *writeStaging) edgeTable(e *pg.EdgeType) *pendingTable {
	k := EdgeTableKey(e.Name)
	p := s.tables[k]
	if p == nil {
		p = newPendingTable(k)
		p.edge = e
		s.tables[k] = p
	}
	return p
}

var stageSeq atomic.Int64

// nextSeq orders staged rows across tables (for reporting the first
// offending row of a write).
func nextSeq() int { return int(stageSeq.Add(1)) }

func newPendingTable(key string) *pendingTable {
	return &pendingTable{key: key, rows: map[string]entityRow{}, fresh: map[string]bool{}, minted: map[string]bool{}, seq: map[string]int{}, origin: map[string]string{}, deletes: map[string]bool{}, delOrigin: map[string]string{}}
}

// reserve sizes the table's maps for n more rows (bulk loads).
func (p *pendingTable) reserve(n int) {
	if len(p.rows) > 0 || n < 64 {
		return
	}
	p.rows = make(map[string]entityRow, n)
	p.fresh = make(map[string]bool, n)
	p.seq = make(map[string]int, n)
	p.origin = make(map[string]string, n)
	p.order = make([]string, 0, n)
}

// put stages r (which holds "id") replacing any pending row with that id.
func (p *pendingTable) put(r entityRow, fresh bool, origin string) {
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
func (p *pendingTable) del(id, origin string) bool {
	if p.deletes[id] {
		return false
	}
	p.deletes[id] = true
	p.delOrd = append(p.delOrd, id)
	p.delOrigin[id] = origin
	return true
}

func (p *pendingTable) empty() bool {
	return len(p.rows) == 0 && len(p.deletes) == 0 && !p.overwrite
}

func (p *pendingTable) typeName() string {
	if p.node != nil {
		return p.node.Name
	}
	return p.edge.Name
}

// committed opens a table at the write's snapshot (at most one GET; the
// handle caches table versions).
func (s *writeStaging) committed(ctx context.Context, key string) (*table.Dataset, error) {
	if ds := s.opened[key]; ds != nil {
		return ds, nil
	}
	pin, ok := s.snap.Pin(key)
	if !ok {
		return nil, fmt.Errorf("no table %q in this snapshot", key)
	}
	ds, err := s.snap.g.openTable(ctx, pin.Path, pin.Branch, pin.Version)
	if err != nil {
		return nil, err
	}
	s.opened[key] = ds
	return ds, nil
}

// scanRows reads the committed rows of a table matching filter.
func (s *writeStaging) scanRows(ctx context.Context, key string, cols []string, filter table.Predicate) ([]entityRow, error) {
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
	var out []entityRow
	for _, r := range recs {
		out = append(out, recordEntityRows(r)...)
		r.Release()
	}
	return out, nil
}

// lookupIDs returns which of ids exist in the committed table.
func (s *writeStaging) lookupIDs(ctx context.Context, key string, ids []string) (map[string]bool, error) {
	found := map[string]bool{}
	if len(ids) == 0 {
		return found, nil
	}
	ds, err := s.committed(ctx, key)
	if err != nil {
		return nil, err
	}
	if ds.RowCount() == 0 {
		return found, nil
	}
	rec, err := ds.Lookup(ctx, ids...)
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	idx := rec.Schema().FieldIndices(pg.ColID)
	if len(idx) == 0 {
		return nil, fmt.Errorf("table %s has no id column", key)
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
func (s *writeStaging) touched() bool {
	for _, p := range s.tables {
		if !p.empty() {
			return true
		}
	}
	return false
}

// stageInto registers one staged transaction per touched table with w.
func (s *writeStaging) stageInto(ctx context.Context, w *Write) error {
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

func (p *pendingTable) stageFunc() StageFunc {
	return func(ctx context.Context, base *table.Dataset) (*table.Staged, error) {
		var up, add []entityRow
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
		build := func(rows []entityRow) ([]arrow.Record, error) {
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
