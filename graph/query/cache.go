package query

import (
	"container/list"
	"context"
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/lang/pg"
	"github.com/omnigraph-go/omnigraph/manifest"
	"github.com/omnigraph-go/omnigraph/table"
)

// The read cache. Table versions are immutable and a (path, table branch,
// version) triple names one forever within a store (table branches of a
// recreated graph branch carry the new incarnation, see tableBranch), so
// what a query derives from a pinned table version — the opened dataset,
// its rows, the traversal index of an edge table — can be kept and reused
// by any later snapshot that pins the same version. That is what lets a
// repeated query on an unchanged branch cost only the branch freshness
// probe. Each handle holds its own bounded LRU (by estimated bytes).

// DefaultCacheBytes bounds a handle's read cache unless
// SetCacheLimit says otherwise.
const DefaultCacheBytes = 512 << 20

// tableID names one immutable table version.
type tableID struct {
	path, branch string
	version      uint64
}

func pinID(p manifest.TablePin) tableID { return tableID{p.Path, p.Branch, p.Version} }

// queryCache is one handle's LRU of table versions.
type queryCache struct {
	mu      sync.Mutex
	limit   int64
	used    int64
	lru     *list.List // of *cacheEntry, most recent first
	entries map[tableID]*list.Element
	// stats for tests and explain
	hits, misses, evictions int
}

// cacheEntry is one table version: its dataset handle and what queries
// loaded from it so far. A node table loads rows lazily (all of them for a
// scan, single keys through the key index for point lookups); an edge table
// loads everything once and builds its edgeIndex.
type cacheEntry struct {
	id tableID

	mu    sync.Mutex // serialises loading; readers of loaded data do not take it
	ds    *table.Dataset
	nodes *nodeRows
	edges *edgeIndex
	size  int64
	// search holds the index searchers opened on this version
	// (searchindex.go), by index; searchBytes their estimated size.
	search      map[string]any
	searchBytes int64
}

// cacheKey names the read cache among the handle's attachments.
type cacheKey struct{}

// cacheOf returns the handle's cache, creating it on first use. It lives
// on the handle (graph.Graph.Attachment) and goes away with it.
func cacheOf(g *graph.Graph) *queryCache {
	return g.Attachment(cacheKey{}, func() any {
		return &queryCache{limit: DefaultCacheBytes, lru: list.New(), entries: map[tableID]*list.Element{}}
	}).(*queryCache)
}

// SetCacheLimit bounds the memory (estimated bytes) handle g keeps
// of loaded table versions and traversal indexes, and (separately, with the
// same limit) of decoded table files; least recently used entries are
// dropped first. A limit <= 0 restores the defaults.
func SetCacheLimit(g *graph.Graph, bytes int64) {
	if bytes <= 0 {
		bytes = DefaultCacheBytes
	}
	g.ObjectCache().SetLimit(bytes)
	c := cacheOf(g)
	c.mu.Lock()
	c.limit = bytes
	c.evictLocked(nil)
	c.mu.Unlock()
}

// CacheStats reports a handle's cache use: entries and estimated
// bytes held, and lookups that hit or missed since the handle was opened.
type CacheStats struct {
	Entries, Hits, Misses, Evictions int
	Bytes, Limit                     int64
}

// CacheStatsOf returns the current cache statistics of handle g.
func CacheStatsOf(g *graph.Graph) CacheStats {
	c := cacheOf(g)
	c.mu.Lock()
	defer c.mu.Unlock()
	return CacheStats{Entries: c.lru.Len(), Hits: c.hits, Misses: c.misses, Evictions: c.evictions, Bytes: c.used, Limit: c.limit}
}

// entry returns the cache entry of a table version, creating an empty one.
func (c *queryCache) entry(id tableID) *cacheEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[id]; ok {
		c.hits++
		c.lru.MoveToFront(el)
		return el.Value.(*cacheEntry)
	}
	c.misses++
	e := &cacheEntry{id: id}
	c.entries[id] = c.lru.PushFront(e)
	return e
}

// account records that e grew to size bytes and evicts others to fit.
func (c *queryCache) account(e *cacheEntry, size int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[e.id]; !ok {
		return // evicted while loading; its data lives on with the query
	}
	c.used += size - e.size
	e.size = size
	c.evictLocked(e)
}

// evictLocked drops least recently used entries, never keep, until the
// cache fits its limit.
func (c *queryCache) evictLocked(keep *cacheEntry) {
	for el := c.lru.Back(); el != nil && c.used > c.limit; {
		prev := el.Prev()
		e := el.Value.(*cacheEntry)
		if e != keep {
			c.lru.Remove(el)
			delete(c.entries, e.id)
			c.used -= e.size
			c.evictions++
		}
		el = prev
	}
}

// dataset opens the pinned version once (one GET).
func (e *cacheEntry) dataset(ctx context.Context, s *graph.Snapshot, pin manifest.TablePin) (*table.Dataset, error) {
	if e.ds != nil {
		return e.ds, nil
	}
	// Through the handle: its table-version cache, and its cache of
	// immutable table files shared by every version it opens.
	ds, err := s.OpenTable(ctx, pin.Key)
	if err != nil {
		return nil, fmt.Errorf("open table %s at version %d: %w", pin.Key, pin.Version, err)
	}
	e.ds = ds
	return ds, nil
}

// rowStore is a set of records with the same schema, addressed by a global
// row number. Appending never changes rows already visible to a holder of
// an earlier copy of the struct.
type rowStore struct {
	recs   []arrow.Record
	starts []int // starts[i] is the global number of recs[i]'s first row
	total  int
	cols   map[string]int // read-only once built
	bytes  int64
}

func newRowStore(schema *arrow.Schema, recs []arrow.Record) *rowStore {
	rs := &rowStore{cols: map[string]int{}}
	if schema == nil && len(recs) > 0 {
		schema = recs[0].Schema()
	}
	if schema != nil {
		for i, f := range schema.Fields() {
			rs.cols[f.Name] = i
		}
	}
	rs.add(recs...)
	return rs
}

func (rs *rowStore) add(recs ...arrow.Record) {
	for _, r := range recs {
		rs.recs = append(rs.recs, r)
		rs.starts = append(rs.starts, rs.total)
		rs.total += int(r.NumRows())
		for _, col := range r.Columns() {
			rs.bytes += dataBytes(col.Data())
		}
	}
}

func dataBytes(d arrow.ArrayData) int64 {
	var n int64
	for _, b := range d.Buffers() {
		if b != nil {
			n += int64(b.Len())
		}
	}
	for _, ch := range d.Children() {
		n += dataBytes(ch)
	}
	return n
}

func (rs *rowStore) len() int { return rs.total }

// locate maps a global row number to (record, offset).
func (rs *rowStore) locate(row int) (arrow.Record, int) {
	lo, hi := 0, len(rs.starts)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if rs.starts[mid] <= row {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return rs.recs[lo], row - rs.starts[lo]
}

// value reads column name at a global row; NULL when the column is absent.
func (rs *rowStore) value(row int, name string) any {
	ci, ok := rs.cols[name]
	if !ok {
		return nil
	}
	rec, off := rs.locate(row)
	return arrowValue(rec.Column(ci), off)
}

// nodeRows is what has been loaded of one node table version: every row
// (full) or the rows found by key lookups so far, plus ids known absent. A
// nodeRows is immutable once published; loading more makes a new one.
type nodeRows struct {
	full bool
	// colSet, on a full load of some columns only, names them (nil: every
	// column was loaded).
	colSet map[string]bool

	rows   rowStore
	byID   map[string]int // of a partial load; a full load builds it on first use (index)
	ids    []string       // global row → id
	absent map[string]bool

	lazy     bool // byID is built by index on first use
	lazyOnce sync.Once
}

// index returns the id → global row map (built once for a full load: a
// scan that only filters and aggregates never needs it).
func (nr *nodeRows) index() map[string]int {
	if nr.lazy {
		nr.lazyOnce.Do(func() {
			m := make(map[string]int, len(nr.ids))
			for i, id := range nr.ids {
				m[id] = i
			}
			nr.byID = m
		})
	}
	return nr.byID
}

// with returns a copy of nr extended by recs; looked-up ids that did not
// turn up are recorded as absent.
func (nr *nodeRows) with(recs []arrow.Record, lookedUp []string) *nodeRows {
	out := &nodeRows{full: nr.full, rows: nr.rows, ids: nr.ids, byID: make(map[string]int, len(nr.byID)), absent: make(map[string]bool, len(nr.absent))}
	for k, v := range nr.byID {
		out.byID[k] = v
	}
	for k := range nr.absent {
		out.absent[k] = true
	}
	for _, r := range recs {
		idc := r.Column(r.Schema().FieldIndices(pg.ColID)[0]).(*array.String)
		base := out.rows.len()
		out.rows.add(r)
		for i := 0; i < int(r.NumRows()); i++ {
			id := idc.Value(i)
			out.byID[id] = base + i
			out.ids = append(out.ids, id)
		}
	}
	for _, id := range lookedUp {
		if _, ok := out.byID[id]; !ok {
			out.absent[id] = true
		}
	}
	return out
}

// fullRows is a full load of recs: rows and ids now, the id map later.
// Without an id column (a plan that reads no ids) there are no ids.
func fullRows(schema *arrow.Schema, recs []arrow.Record) *nodeRows {
	nr := &nodeRows{full: true, lazy: true, rows: *newRowStore(schema, recs), absent: map[string]bool{}}
	if _, ok := nr.rows.cols[pg.ColID]; !ok {
		return nr
	}
	nr.ids = make([]string, 0, nr.rows.len())
	for _, r := range recs {
		idc := r.Column(r.Schema().FieldIndices(pg.ColID)[0]).(*array.String)
		for i := 0; i < int(r.NumRows()); i++ {
			nr.ids = append(nr.ids, idc.Value(i))
		}
	}
	return nr
}

// hasCols reports whether nr holds every column of cols (nil: all).
func (nr *nodeRows) hasCols(cols []string) bool {
	if nr.colSet == nil {
		return true
	}
	if cols == nil {
		return false
	}
	for _, c := range cols {
		if !nr.colSet[c] {
			return false
		}
	}
	return true
}

func (nr *nodeRows) size() int64 {
	n := len(nr.byID)
	if nr.lazy {
		n = len(nr.ids) // counted as if built
	}
	return nr.rows.bytes + int64(n)*80 + int64(len(nr.absent))*48
}

// id is the id of a global row; "" when nr was loaded without ids.
func (nr *nodeRows) id(row int32) string {
	if int(row) < len(nr.ids) {
		return nr.ids[row]
	}
	return ""
}

// row returns the global row of a node id, and false when the node does not
// exist (or, for a partly loaded table, was not loaded).
func (nr *nodeRows) row(id string) (int, bool) {
	r, ok := nr.index()[id]
	return r, ok
}

// A batch of more than lookupMaxKeys ids that is also more than
// 1/lookupFullRatio of a table's rows loads the whole table instead of
// probing the key index (one scan beats many probes).
const (
	lookupMaxKeys   = 64
	lookupFullRatio = 8
)

// nodeTable returns the loaded rows of a node type's table. With ids nil
// the whole table is loaded; otherwise at least those ids are resolved
// (through the key index when the table is not fully loaded). cols lists
// the columns the caller reads (nil: all): a whole-table load reads only
// those (and those an earlier load of the version read), so an aggregate
// over two properties decodes two columns and the id.
func nodeTable(ctx context.Context, s *graph.Snapshot, typ string, ids, cols []string) (*nodeRows, error) {
	pin, ok := s.Pin(graph.NodeTableKey(typ))
	if !ok {
		return nil, fmt.Errorf("%w: node type %s has no table in this snapshot", manifest.ErrCorrupt, typ)
	}
	c := cacheOf(s.Graph())
	e := c.entry(pinID(pin))
	e.mu.Lock()
	defer e.mu.Unlock()
	nr := e.nodes
	if nr != nil && nr.full && nr.hasCols(cols) {
		return nr, nil
	}
	var missing []string
	if ids != nil && nr != nil && !nr.full {
		seen := map[string]bool{}
		for _, id := range ids {
			if _, ok := nr.byID[id]; !ok && !nr.absent[id] && !seen[id] {
				seen[id] = true
				missing = append(missing, id)
			}
		}
		if len(missing) == 0 {
			return nr, nil
		}
	} else if ids != nil {
		missing = dedupStrings(ids)
	}
	ds, err := e.dataset(ctx, s, pin)
	if err != nil {
		return nil, err
	}
	if nr == nil {
		nr = &nodeRows{rows: *newRowStore(ds.Schema(), nil), byID: map[string]int{}, absent: map[string]bool{}}
	}
	if ids == nil || nr.full || (len(missing) > lookupMaxKeys && int64(len(missing))*lookupFullRatio > ds.RowCount()) {
		want := loadColumns(ds.Schema(), cols, nr)
		recs, err := ds.Scan(ctx, table.ScanOptions{Columns: want})
		if err != nil {
			return nil, fmt.Errorf("scan %s: %w", pin.Key, err)
		}
		schema := ds.Schema()
		if want != nil {
			schema = schemaOf(ds.Schema(), want)
		}
		nr = fullRows(schema, recs)
		if want != nil {
			nr.colSet = make(map[string]bool, len(want))
			for _, c := range want {
				nr.colSet[c] = true
			}
		}
	} else {
		rec, err := ds.Lookup(ctx, missing...)
		if err != nil {
			return nil, fmt.Errorf("look up %s: %w", pin.Key, err)
		}
		nr = nr.with([]arrow.Record{rec}, missing)
	}
	e.nodes = nr
	c.account(e, nr.size()+edgeBytes(e.edges)+e.searchBytes)
	return nr, nil
}

// loadColumns is the column list of a full load: cols (the id among them
// when the plan reads ids) and what nr (a full load with fewer columns)
// holds already, in schema order; nil (every column) when cols is nil.
func loadColumns(s *arrow.Schema, cols []string, nr *nodeRows) []string {
	if cols == nil {
		return nil
	}
	want := map[string]bool{}
	for _, c := range cols {
		want[c] = true
	}
	if nr != nil && nr.full {
		for c := range nr.colSet {
			want[c] = true
		}
	}
	if len(want) == 0 {
		want[pg.ColID] = true // a load of no column still needs its rows
	}
	var out []string
	for _, f := range s.Fields() {
		if want[f.Name] {
			out = append(out, f.Name)
		}
	}
	if len(out) == s.NumFields() {
		return nil
	}
	return out
}

func schemaOf(s *arrow.Schema, cols []string) *arrow.Schema {
	fs := make([]arrow.Field, 0, len(cols))
	for _, c := range cols {
		fs = append(fs, s.Field(s.FieldIndices(c)[0]))
	}
	return arrow.NewSchema(fs, nil)
}

func edgeBytes(ix *edgeIndex) int64 {
	if ix == nil {
		return 0
	}
	return ix.bytes
}

func dedupStrings(xs []string) []string {
	seen := make(map[string]bool, len(xs))
	out := make([]string, 0, len(xs))
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// edgeTable returns the traversal index of an edge type's table, building
// it on first use of this table version.
func edgeTable(ctx context.Context, s *graph.Snapshot, typ string) (*edgeIndex, error) {
	pin, ok := s.Pin(graph.EdgeTableKey(typ))
	if !ok {
		return nil, fmt.Errorf("%w: edge type %s has no table in this snapshot", manifest.ErrCorrupt, typ)
	}
	c := cacheOf(s.Graph())
	e := c.entry(pinID(pin))
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.edges != nil {
		return e.edges, nil
	}
	ds, err := e.dataset(ctx, s, pin)
	if err != nil {
		return nil, err
	}
	adj, err := ds.Adjacency(ctx, pg.ColSrc, pg.ColDst)
	if err != nil {
		return nil, fmt.Errorf("traversal index of %s: %w", pin.Key, err)
	}
	var ix *edgeIndex
	ix = newEdgeIndex(adj, func(ctx context.Context) (*rowStore, error) {
		recs, err := ds.Scan(ctx, table.ScanOptions{})
		if err != nil {
			return nil, fmt.Errorf("scan %s: %w", pin.Key, err)
		}
		rs := newRowStore(ds.Schema(), recs)
		c.account(e, ix.bytes+rs.bytes)
		return rs, nil
	})
	e.edges = ix
	c.account(e, ix.bytes)
	return ix, nil
}
