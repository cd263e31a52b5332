package query

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/index/fulltext"
	"github.com/omnigraph-go/omnigraph/index/vector"
	"github.com/omnigraph-go/omnigraph/lang/gq"
	"github.com/omnigraph-go/omnigraph/lang/pg"
	"github.com/omnigraph-go/omnigraph/manifest"
	"github.com/omnigraph-go/omnigraph/table"
	"github.com/omnigraph-go/omnigraph/text"
)

// Search through persisted indexes. When the scanned node type's table
// version has a full-text index on a property (index/fulltext) or a
// vector index (index/vector), the scan of a search query binds only the
// rows the index names instead of every row:
//
//   - a text filter (search, fuzzy, match_text) on an indexed property
//     restricts the candidates to the rows it matches (exactly the rows the
//     filter keeps; every other filter still runs on them);
//   - a query of one scan and no filter ranked by bm25, nearest or rrf
//     with a limit k binds the k best rows of each ranking (bm25: exact;
//     nearest: the vector index's approximate k best, exact over the
//     fragments it does not cover), fetched by their recorded places
//     (table.Dataset.RowsAt);
//   - bm25's corpus statistics come from the full-text index.
//
// The bound rows are then filtered, scored and ordered by the same code as
// a scan, in scan order, so the text answers are a scan's; what an index
// does not cover is read by the index searchers, and a table without a
// usable index is scanned as before. docs/dev/search-indexes.md has the
// formats and the rules.

// useSearchIndexes, when false, makes every search a scan (tests compare
// the two paths).
var useSearchIndexes = true

// indexScans counts the scan steps an index narrowed (tests).
var indexScans atomic.Int64

// searcherOf returns the searcher open(ds) makes for a node type's pinned
// table version, kept in the read cache with the version (nil: no usable
// index).
func (ex *executor) searcherOf(ctx context.Context, typ, name string, open func(*table.Dataset) (any, int64, error)) (any, error) {
	pin, ok := ex.s.Pin(graph.NodeTableKey(typ))
	if !ok || !useSearchIndexes {
		return nil, nil
	}
	c := cacheOf(ex.s.Graph())
	e := c.entry(pinID(pin))
	e.mu.Lock()
	defer e.mu.Unlock()
	if v, ok := e.search[name]; ok {
		return v, nil
	}
	ds, err := e.dataset(ctx, ex.s, pin)
	if err != nil {
		return nil, err
	}
	v, size, err := open(ds)
	if err != nil {
		return nil, err
	}
	if e.search == nil {
		e.search = map[string]any{}
	}
	e.search[name] = v
	e.searchBytes += size
	c.grow(e, size)
	return v, nil
}

// textIndex is the full-text searcher of typ.prop (nil: none).
func (ex *executor) textIndex(ctx context.Context, typ string, prop *pg.Property) (*fulltext.Searcher, error) {
	if prop == nil || prop.Type.Kind != pg.KindString {
		return nil, nil
	}
	v, err := ex.searcherOf(ctx, typ, "fulltext:"+prop.Name, func(ds *table.Dataset) (any, int64, error) {
		s, err := fulltext.Open(ctx, ds, prop.Name)
		if err != nil || s == nil {
			return (*fulltext.Searcher)(nil), 0, err
		}
		return s, s.Bytes(), nil
	})
	if err != nil {
		return nil, fmt.Errorf("full-text index of %s.%s: %w", typ, prop.Name, err)
	}
	s, _ := v.(*fulltext.Searcher)
	return s, nil
}

// vectorIndex is the vector searcher of typ.prop (nil: none).
func (ex *executor) vectorIndex(ctx context.Context, typ string, prop *pg.Property) (*vector.Searcher, error) {
	if prop == nil || prop.Type.Kind != pg.KindVector {
		return nil, nil
	}
	v, err := ex.searcherOf(ctx, typ, "vector:"+prop.Name, func(ds *table.Dataset) (any, int64, error) {
		s, err := vector.Open(ctx, ds, prop.Name)
		if err != nil || s == nil {
			return (*vector.Searcher)(nil), 0, err
		}
		return s, s.Bytes(), nil
	})
	if err != nil {
		return nil, fmt.Errorf("vector index of %s.%s: %w", typ, prop.Name, err)
	}
	s, _ := v.(*vector.Searcher)
	return s, nil
}

// queryTerms analyses a query text once per execution.
func (ex *executor) queryTerms(q string) []string {
	terms, ok := ex.qterms[q]
	if !ok {
		if ex.qterms == nil {
			ex.qterms = map[string][]string{}
		}
		terms = text.Terms(q)
		ex.qterms[q] = terms
	}
	return terms
}

// fuzzyEdits is a text predicate's edit allowance.
func (ex *executor) fuzzyEdits(p *gq.Predicate) int {
	if p.Op != gq.OpFuzzy {
		return 0
	}
	edits := gq.DefaultFuzzyEdits
	if p.Edits != nil {
		if n, ok := gq.IntValue(ex.args.Value(*p.Edits)); ok {
			edits = int(max(n, 0))
		}
	}
	return edits
}

// indexCandidates returns the ids (in scan order) an index restricts a
// scan step to, and false when no index applies (scan every row).
func (ex *executor) indexCandidates(ctx context.Context, st *gq.ScanStep) ([]fulltext.Hit, bool, error) {
	typ := st.Node.Name
	var hits []fulltext.Hit
	restricted := false
	intersect := func(hs []fulltext.Hit) {
		if !restricted {
			hits, restricted = hs, true
			return
		}
		keep := make(map[string]bool, len(hs))
		for _, h := range hs {
			keep[h.ID] = true
		}
		out := hits[:0]
		for _, h := range hits {
			if keep[h.ID] {
				out = append(out, h)
			}
		}
		hits = out
	}
	for _, p := range st.Where {
		if !p.Op.TextOp() || p.Left.Kind != gq.OperandProp || p.Left.Var != st.Var {
			continue
		}
		q, ok := ex.args.Value(p.Right).(string)
		if !ok {
			continue
		}
		s, err := ex.textIndex(ctx, typ, p.Left.Prop)
		if err != nil {
			return nil, false, err
		}
		if s == nil {
			continue
		}
		intersect(s.Match(ex.queryTerms(q), ex.fuzzyEdits(p)))
	}
	if !restricted {
		hs, ok, err := ex.rankCandidates(ctx, st)
		if err != nil || !ok {
			return nil, false, err
		}
		hits, restricted = hs, true
	}
	indexScans.Add(1)
	return hits, true, nil
}

// rankCandidates: a plan of this one scan step, with no filter, ranked by
// bm25, nearest or rrf of its variable with a limit k, binds the k best
// rows of each ranking by its index, under the query's order (score, then
// the greater id, which the planner adds after every bm25 and nearest key
// and rrf's arms rank by): bm25's index scores are the scan's to the bit,
// so the rows are the ones the scan ranks first; nearest's are the index's
// approximate k best.
func (ex *executor) rankCandidates(ctx context.Context, st *gq.ScanStep) ([]fulltext.Hit, bool, error) {
	rp := ex.rp
	r := rp.Rank
	if r == nil || r.Var != st.Var || len(rp.Steps) != 1 || rp.Steps[0] != gq.Step(st) || len(st.Where) > 0 || rp.Grouped {
		return nil, false, nil
	}
	n, ok := ex.args.Limit(rp)
	if !ok {
		return nil, false, nil
	}
	k := int(min(n, 1<<20))
	arm := func(s *gq.Score) ([]fulltext.Hit, bool, error) {
		switch s.Fn {
		case gq.ScoreBM25:
			ti, err := ex.textIndex(ctx, st.Node.Name, s.Prop)
			if err != nil || ti == nil {
				return nil, false, err
			}
			q, _ := ex.args.Value(s.Query).(string)
			terms := ex.queryTerms(q)
			return ti.Top(terms, ti.Corpus(terms), k), true, nil
		case gq.ScoreNearest:
			vi, err := ex.vectorIndex(ctx, st.Node.Name, s.Prop)
			if err != nil || vi == nil {
				return nil, false, err
			}
			q, err := ex.queryVector(ctx, st.Node.Name, s)
			if err != nil {
				return nil, false, err
			}
			hs, err := vi.Nearest(ctx, q, k)
			if errors.Is(err, table.ErrCorrupt) || errors.Is(err, table.ErrNotFound) {
				return nil, false, nil // a damaged or vanished list: scan
			}
			return hs, err == nil, err
		}
		return nil, false, nil
	}
	if r.Fn != gq.ScoreRRF {
		return arm(r)
	}
	a, ok, err := arm(r.A)
	if err != nil || !ok {
		return nil, false, err
	}
	b, ok, err := arm(r.B)
	if err != nil || !ok {
		return nil, false, err
	}
	return fulltext.SortHits(append(a, b...)), true, nil
}

// queryVector is nearest()'s query vector (a text query embedded once per
// execution).
func (ex *executor) queryVector(ctx context.Context, typ string, s *gq.Score) ([]float32, error) {
	if v, ok := ex.qvec[s]; ok {
		return v, nil
	}
	var vec []float32
	switch q := ex.args.Value(s.Query).(type) {
	case []float32:
		vec = q
	case string:
		var err error
		if vec, err = embedQuery(ctx, s, q); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%w: nearest() on %s.%s needs a query vector or text", gq.ErrInvalidQuery, typ, s.Prop.Name)
	}
	if len(vec) != s.Prop.Type.Dim {
		return nil, fmt.Errorf("%w: nearest() on %s.%s (%s) got a vector of %d numbers", gq.ErrInvalidQuery, typ, s.Prop.Name, s.Prop.Type, len(vec))
	}
	if ex.qvec == nil {
		ex.qvec = map[*gq.Score][]float32{}
	}
	ex.qvec[s] = vec
	return vec, nil
}

// nodeRowsAt makes sure the rows hits name are loaded for this execution:
// through their places (table.Dataset.RowsAt: the index records them, so
// no key index page is read), or as a whole-table load when they are a
// large share of it (nodeTable's rule).
func (ex *executor) nodeRowsAt(ctx context.Context, typ string, hits []fulltext.Hit) (*nodeRows, error) {
	if nr := ex.nodes[typ]; nr != nil && nr.full {
		return nr, nil
	}
	pin, ok := ex.s.Pin(graph.NodeTableKey(typ))
	if !ok {
		return nil, fmt.Errorf("%w: node type %s has no table in this snapshot", manifest.ErrCorrupt, typ)
	}
	c := cacheOf(ex.s.Graph())
	e := c.entry(pinID(pin))
	e.mu.Lock()
	nr := e.nodes
	ds, err := e.dataset(ctx, ex.s, pin)
	e.mu.Unlock()
	if err != nil {
		return nil, err
	}
	var missing []fulltext.Hit
	if nr == nil || !nr.full {
		for _, h := range hits {
			if nr == nil || (!nr.absent[h.ID] && !hasID(nr, h.ID)) {
				missing = append(missing, h)
			}
		}
	}
	if nr != nil && !nr.full && len(missing) == 0 {
		ex.nodes[typ] = nr // a partial load holds every column
		return nr, ex.hold(typ, nr.size())
	}
	if nr != nil && nr.full || len(missing) > lookupMaxKeys && int64(len(missing))*lookupFullRatio > ds.RowCount() {
		// A full load (of the columns the plan reads: it may hold
		// fewer, then it is extended).
		return ex.loadNodes(ctx, typ, nil)
	}
	at := make([]table.RowAt, len(missing))
	ids := make([]string, len(missing))
	for i, h := range missing {
		at[i] = table.RowAt{Fragment: int(h.Pos >> 32), Row: uint32(h.Pos)}
		ids[i] = h.ID
	}
	rec, err := ds.RowsAt(ctx, at)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", pin.Key, err)
	}
	e.mu.Lock()
	cur := e.nodes
	if cur != nil && cur.full {
		// Another query loaded the whole table meanwhile (maybe fewer
		// columns): use that load, extended as this plan needs.
		e.mu.Unlock()
		rec.Release()
		return ex.loadNodes(ctx, typ, nil)
	}
	defer e.mu.Unlock()
	if cur == nil {
		cur = &nodeRows{rows: *newRowStore(ds.Schema(), nil), byID: map[string]int{}, absent: map[string]bool{}}
	}
	cur = cur.with([]arrow.Record{rec}, ids)
	e.nodes = cur
	c.account(e, cur.size()+edgeBytes(e.edges)+e.searchBytes)
	ex.nodes[typ] = cur
	return cur, ex.hold(typ, cur.size())
}

// grow records that e holds delta more bytes and evicts others to fit.
func (c *queryCache) grow(e *cacheEntry, delta int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[e.id]; !ok {
		return
	}
	c.used += delta
	e.size += delta
	c.evictLocked(e)
}

func hasID(nr *nodeRows, id string) bool {
	_, ok := nr.byID[id]
	return ok
}
