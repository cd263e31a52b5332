package query

import (
	"context"
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/lang/gq"
)

// Budgets inside execution (graph.Budget, graph.Meter). Every operator
// that produces rows charges them, with the bytes they take, before or as
// it allocates them: a scan (a cross product is refused before its rows
// exist, its size known exactly), an expansion (per input row), an
// anti-join's probes (through the sub-plan's own steps), the projection
// and the groups. The table data a query holds (loaded or found in the
// cache) counts towards its memory, and loops that produce nothing (a
// filter, a traversal's search, scoring) count work, so the context (a
// disconnected client, the time budget) is looked at every few thousand
// rows wherever the query spends its time. Before any of it the planner's
// estimate (gq.EstimateRead over the snapshot's row counts and the
// traversal index's degrees) refuses a query that cannot fit.

// refBytes is the size of one binding in a match row.
const refBytes = int64(unsafe.Sizeof(ref{}))

// sizesOf is the bytes per match row and per output row of rp.
func sizesOf(rp *gq.ReadPlan) gq.Sizes {
	return gq.Sizes{
		Match: int64(len(rp.Vars))*refBytes + 24, // the row and its slice header
		Out:   48 + 24 + 16*int64(len(rp.Columns)+len(rp.Order)),
	}
}

// cancelled is a loop's answer to a stop: the budget's refusal as it is,
// the caller's cancellation wrapped.
func cancelled(err error) error {
	if errors.Is(err, graph.ErrBudgetExceeded) {
		return err
	}
	return fmt.Errorf("query cancelled: %w", err)
}

// produce charges n rows of size bytes each before they are allocated: a
// step that would go over is refused with the total it would have
// reached.
func (ex *executor) produce(n, size int64) error {
	if n <= 0 {
		return nil
	}
	bytes := mulSat(n, size)
	if r, reached, ok := ex.m.Fits(n, bytes); !ok {
		return ex.m.Refuse(r, reached)
	}
	if err := ex.m.Charge(n, bytes); err != nil {
		return cancelled(err)
	}
	return nil
}

// charge records n match rows a step has produced already (an expansion
// charges each input row's rows before it runs the next).
func (ex *executor) charge(n int) error {
	if n <= 0 {
		return nil
	}
	if err := ex.m.Charge(int64(n), int64(n)*ex.sizes.Match); err != nil {
		return cancelled(err)
	}
	return nil
}

// work counts n units of work that produce no row (and the work rows have
// cost since the last count, ex.pending) and polls the context.
func (ex *executor) work(n int) error {
	w := int64(n) + ex.pending
	ex.pending = 0
	if err := ex.m.Work(w); err != nil {
		return cancelled(err)
	}
	return nil
}

// hold charges the table data obj takes (size bytes) once per execution;
// a later, larger load of the same object charges the difference.
func (ex *executor) hold(obj any, size int64) error {
	if ex.held == nil {
		ex.held = map[any]int64{}
	}
	if d := size - ex.held[obj]; d > 0 {
		ex.held[obj] = size
		if err := ex.m.Charge(0, d); err != nil {
			return cancelled(err)
		}
	}
	return nil
}

func mulSat(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}

// stepLabel renders a plan step for a refusal's message, only when one is
// written.
type stepLabel struct {
	rp *gq.ReadPlan
	s  gq.Step
}

func (l stepLabel) String() string { return l.rp.StepString(l.s) }

// snapStats are the cardinalities of one snapshot for the planner: row
// counts from the pinned tables (the opened version's manifest, no scan),
// degrees from a traversal index already in the handle's cache (never
// loaded for the estimate).
type snapStats struct {
	ctx context.Context
	s   *graph.Snapshot
}

func (st snapStats) NodeRows(typ string) int64 {
	ds, err := st.s.OpenTable(st.ctx, graph.NodeTableKey(typ))
	if err != nil {
		return 0 // the executor meets and reports it
	}
	return ds.RowCount()
}

func (st snapStats) Edge(typ string) gq.EdgeStats {
	key := graph.EdgeTableKey(typ)
	ds, err := st.s.OpenTable(st.ctx, key)
	if err != nil {
		return gq.EdgeStats{}
	}
	es := gq.EdgeStats{Rows: ds.RowCount()}
	pin, ok := st.s.Pin(key)
	if !ok {
		return es
	}
	if ix := cacheOf(st.s.Graph()).cachedEdges(pinID(pin)); ix != nil {
		d := ix.degrees()
		es.MaxOut, es.MaxIn, es.Sources, es.Targets = d.maxOut, d.maxIn, d.sources, d.targets
	}
	return es
}

// estimate is the planner's estimate of rp on snapshot s.
func estimate(ctx context.Context, s *graph.Snapshot, rp *gq.ReadPlan) *gq.Estimate {
	return gq.EstimateRead(rp, snapStats{ctx, s}, sizesOf(rp))
}

// checkEstimate refuses, before anything runs, a plan whose estimate is
// over the budget, naming the first step where the running total passes
// it; a plan estimated heavy waits for the budget's lane.
func (ex *executor) checkEstimate(ctx context.Context) error {
	b := ex.m.Budget()
	if b.Rows <= 0 && b.Memory <= 0 && b.Lane == nil {
		return nil
	}
	e := estimate(ctx, ex.s, ex.rp)
	var at fmt.Stringer
	for _, se := range e.Steps {
		if b.Rows > 0 && se.Total > b.Rows {
			at = stepLabel{ex.rp, se.Step}
			break
		}
	}
	if at == nil && len(e.Steps) > 0 {
		at = stepLabel{ex.rp, e.Steps[len(e.Steps)-1].Step}
	}
	if err := ex.m.Estimate(e.Rows, e.Bytes, at); err != nil {
		return cancelled(err)
	}
	return nil
}

// degreeStats are an edge index's degree data, computed once per index.
type degreeStats struct {
	maxOut, maxIn, sources, targets int64
}

func (ix *edgeIndex) degrees() degreeStats {
	ix.degOnce.Do(func() {
		d := &ix.deg
		for n := 0; n+1 < len(ix.outOff); n++ {
			if k := int64(ix.outOff[n+1] - ix.outOff[n]); k > 0 {
				d.sources++
				d.maxOut = max(d.maxOut, k)
			}
		}
		for n := 0; n+1 < len(ix.inOff); n++ {
			if k := int64(ix.inOff[n+1] - ix.inOff[n]); k > 0 {
				d.targets++
				d.maxIn = max(d.maxIn, k)
			}
		}
	})
	return ix.deg
}

// cachedEdges is the traversal index of a table version when the cache
// holds it (nil otherwise), without counting a lookup or waiting for a
// load in progress.
func (c *queryCache) cachedEdges(id tableID) *edgeIndex {
	c.mu.Lock()
	el, ok := c.entries[id]
	c.mu.Unlock()
	if !ok {
		return nil
	}
	e := el.Value.(*cacheEntry)
	if !e.mu.TryLock() {
		return nil
	}
	defer e.mu.Unlock()
	return e.edges
}
