package query

import (
	"context"
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/omnigraph-go/omnigraph/lang/pg"
	"github.com/omnigraph-go/omnigraph/manifest"
	"github.com/omnigraph-go/omnigraph/table"
)

// edgeIndex is the traversal index of one edge table version: the node ids
// the edges touch interned to dense numbers, a CSR (edges by source) and a
// CSC (edges by destination), and, loaded when an edge binding first needs
// them, the edge rows themselves. The traversal part comes from the
// table's adjacency (table.Dataset.Adjacency: its persisted index file when
// it covers the version). It is immutable once built (the rows are set
// once) and shared by concurrent queries.
type edgeIndex struct {
	nodes []string // dense number → node id
	adj   *table.Adjacency
	dense map[string]int32 // node id → dense number, when adj is nil
	src   []int32          // edge row → dense source
	dst   []int32          // edge row → dense destination
	// outOff[n]..outOff[n+1] indexes outEdges: the edge rows whose source
	// is n, in row order; inOff/inEdges likewise by destination.
	outOff, outEdges []int32
	inOff, inEdges   []int32
	bytes            int64

	// rows holds every column of the table (edge row r is global row r),
	// nil until loadRows; loader reads them.
	rowsMu sync.Mutex
	rows   *rowStore
	loader func(ctx context.Context) (*rowStore, error)

	// rowOf caches, for the fully loaded node table versions this index
	// was last used with, each dense node's row there (-1: no such node).
	mu    sync.Mutex
	rowOf map[*nodeRows][]int32

	// deg is the degree data of the planner's estimate (budget.go),
	// computed once.
	degOnce sync.Once
	deg     degreeStats
}

// newEdgeIndex wraps a table adjacency; loader reads the edge rows.
func newEdgeIndex(a *table.Adjacency, loader func(ctx context.Context) (*rowStore, error)) *edgeIndex {
	return &edgeIndex{
		nodes: a.Nodes, adj: a, src: a.Src, dst: a.Dst,
		outOff: a.OutOff, outEdges: a.OutEdges, inOff: a.InOff, inEdges: a.InEdges,
		bytes: a.Bytes(), loader: loader,
	}
}

// lookup returns the dense number of a node id (false: no edge touches it).
func (ix *edgeIndex) lookup(id string) (int32, bool) {
	if ix.adj != nil {
		return ix.adj.Lookup(id)
	}
	d, ok := ix.dense[id]
	return d, ok
}

// loadRows makes sure the edge rows are loaded (once per index).
func (ix *edgeIndex) loadRows(ctx context.Context) error {
	ix.rowsMu.Lock()
	defer ix.rowsMu.Unlock()
	if ix.rows != nil {
		return nil
	}
	rs, err := ix.loader(ctx)
	if err != nil {
		return err
	}
	if rs.len() != len(ix.src) {
		return fmt.Errorf("%w: edge table holds %d rows, its adjacency %d", manifest.ErrCorrupt, rs.len(), len(ix.src))
	}
	ix.rows = rs
	return nil
}

// nodeRowsOf maps dense node numbers to rows of nr (a fully loaded node
// table), built once per (edge version, node version) pair. At most two
// pairs are kept: the tables an index meets are its endpoint types.
func (ix *edgeIndex) nodeRowsOf(nr *nodeRows) []int32 {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if m, ok := ix.rowOf[nr]; ok {
		return m
	}
	m := make([]int32, len(ix.nodes))
	for d := range m {
		m[d] = -1
	}
	if ix.adj != nil && nr.lazy {
		// Look each node row up in the adjacency's dictionary rather than
		// build the table's id map.
		for row, id := range nr.ids {
			if d, ok := ix.adj.Lookup(id); ok {
				m[d] = int32(row)
			}
		}
	} else {
		byID := nr.index()
		for d, id := range ix.nodes {
			if r, ok := byID[id]; ok {
				m[d] = int32(r)
			}
		}
	}
	if ix.rowOf == nil || len(ix.rowOf) >= 2 {
		ix.rowOf = map[*nodeRows][]int32{}
	}
	ix.rowOf[nr] = m
	return m
}

// buildEdgeIndex builds the index from the table's records (full schema)
// in memory, rows included.
func buildEdgeIndex(schema *arrow.Schema, recs []arrow.Record) *edgeIndex {
	rs := newRowStore(schema, recs)
	n := rs.len()
	ix := &edgeIndex{
		dense: make(map[string]int32, n/4+1),
		src:   make([]int32, n),
		dst:   make([]int32, n),
		rows:  rs,
	}
	intern := func(id string) int32 {
		if d, ok := ix.dense[id]; ok {
			return d
		}
		d := int32(len(ix.nodes))
		ix.nodes = append(ix.nodes, id)
		ix.dense[id] = d
		return d
	}
	r := 0
	for _, rec := range recs {
		sc := rec.Column(rec.Schema().FieldIndices(pg.ColSrc)[0]).(*array.String)
		dc := rec.Column(rec.Schema().FieldIndices(pg.ColDst)[0]).(*array.String)
		for i := 0; i < int(rec.NumRows()); i++ {
			ix.src[r] = intern(sc.Value(i))
			ix.dst[r] = intern(dc.Value(i))
			r++
		}
	}
	ix.outOff, ix.outEdges = csr(len(ix.nodes), ix.src)
	ix.inOff, ix.inEdges = csr(len(ix.nodes), ix.dst)
	ix.bytes = rs.bytes + int64(len(ix.nodes))*48 + int64(n)*16 + int64(len(ix.nodes))*8
	return ix
}

// csr groups edge rows by key with a counting sort: off has one entry per
// node plus one; edges[off[k]:off[k+1]] are the rows with key k, ascending.
func csr(nodes int, key []int32) (off, edges []int32) {
	off = make([]int32, nodes+1)
	for _, k := range key {
		off[k+1]++
	}
	for i := 1; i <= nodes; i++ {
		off[i] += off[i-1]
	}
	next := append([]int32(nil), off[:nodes]...)
	edges = make([]int32, len(key))
	for r, k := range key {
		edges[next[k]] = int32(r)
		next[k]++
	}
	return off, edges
}

// out returns the edge rows leaving dense node n.
func (ix *edgeIndex) out(n int32) []int32 { return ix.outEdges[ix.outOff[n]:ix.outOff[n+1]] }

// in returns the edge rows entering dense node n.
func (ix *edgeIndex) in(n int32) []int32 { return ix.inEdges[ix.inOff[n]:ix.inOff[n+1]] }

// step is one adjacent edge: the edge row and the node at its other end.
type step struct {
	edge  int32
	other int32
}

// dir selects the adjacency of an expansion.
type dir uint8

const (
	dirOut dir = iota + 1
	dirIn
	dirBoth
)

// neighbours calls fn for every edge adjacent to n in direction d. With
// dirBoth a self-loop is reported once.
func (ix *edgeIndex) neighbours(n int32, d dir, fn func(step)) {
	if d == dirOut || d == dirBoth {
		for _, e := range ix.out(n) {
			fn(step{e, ix.dst[e]})
		}
	}
	if d == dirIn || d == dirBoth {
		for _, e := range ix.in(n) {
			if d == dirBoth && ix.src[e] == ix.dst[e] {
				continue // already seen as an out edge
			}
			fn(step{e, ix.src[e]})
		}
	}
}

// reach returns the dense nodes a variable-length traversal from s reports,
// each once, in first-reached order. It follows the original system's
// breadth-first search: s is visited before the first hop, so no cycle ever
// brings it back; hop k expands only the nodes first reached at hop k-1 and
// reports the nodes it reaches first, when minHops <= k; a self-loop edge
// of a node n expanded at hop k reports n (also s) when minHops <= k, and
// reaches nothing new. So a node is reported when its shortest distance
// from s lies in [minHops, maxHops], or when it carries a self-loop and one
// more than that distance does. sc holds generation-stamped marks reused
// across calls.
func (ix *edgeIndex) reach(s int32, d dir, minHops, maxHops int, sc *reachScratch) []int32 {
	call := sc.begin(len(ix.nodes))
	var answer []int32
	report := func(o int32) {
		if sc.reported[o] != call {
			sc.reported[o] = call
			answer = append(answer, o)
		}
	}
	sc.visited[s] = call
	frontier := []int32{s}
	for k := 1; k <= maxHops && len(frontier) > 0; k++ {
		var next []int32
		for _, n := range frontier {
			ix.neighbours(n, d, func(st step) {
				o := st.other
				if o == n { // a self-loop: one hop that reaches nothing new
					if k >= minHops {
						report(o)
					}
					return
				}
				if sc.visited[o] == call {
					return // reached at this or an earlier hop, or the source
				}
				sc.visited[o] = call
				next = append(next, o)
				if k >= minHops {
					report(o)
				}
			})
		}
		frontier = next
	}
	return answer
}

// reachScratch holds generation-stamped marks so a query reuses them across
// sources without clearing.
type reachScratch struct {
	visited  []uint32
	reported []uint32
	call     uint32
}

// begin sizes the marks for n nodes and returns the stamp of a new call.
func (sc *reachScratch) begin(n int) uint32 {
	if len(sc.visited) < n {
		sc.visited = make([]uint32, n)
		sc.reported = make([]uint32, n)
		sc.call = 0
	}
	sc.call++
	if sc.call == 0 { // wrapped: old stamps could collide, so clear them
		clear(sc.visited)
		clear(sc.reported)
		sc.call = 1
	}
	return sc.call
}
