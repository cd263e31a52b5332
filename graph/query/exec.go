package query

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/lang/gq"
	"github.com/omnigraph-go/omnigraph/lang/pg"
)

// ref is one variable's binding in a match row: a node id, or for an edge
// variable the edge's row in its table's edgeIndex (id is then unused).
type ref struct {
	id   string
	nr   *nodeRows // where row is valid (nil: look id up)
	row  int32
	edge int32
	set  bool
}

// rowArena hands out match rows from large chunks, so producing a row is
// not one allocation each.
type rowArena struct {
	width int
	buf   []ref
}

func (a *rowArena) clone(r []ref) []ref {
	if len(a.buf) < a.width {
		a.buf = make([]ref, a.width*1024)
	}
	out := a.buf[:a.width:a.width]
	a.buf = a.buf[a.width:]
	copy(out, r)
	return out
}

// executor runs one read plan on one snapshot. nodes and edges hold the
// table data this execution has resolved so far (by type name); they only
// ever grow, and all of it comes from the snapshot's pinned versions.
type executor struct {
	s     *graph.Snapshot
	rp    *gq.ReadPlan
	args  *gq.Args
	nodes map[string]*nodeRows
	edges map[string]*edgeIndex
	sc    reachScratch
	arena rowArena
	cols  map[string][]string // neededColumns, computed on first load

	prefetched bool           // prefetchEdges ran (prefetch.go)
	prefetch   sync.WaitGroup // its background loads

	scores map[*gq.Score]*scoreState // search.go
	tok    map[string][]string       // analysed text values
	qterms map[string][]string       // analysed query texts
	qvec   map[*gq.Score][]float32   // nearest's query vectors

	// The budget (budget.go): the meter every operator charges, the row
	// sizes it charges, the table data charged so far, and the anti-join
	// depth (a probe's steps keep the anti-join's label).
	m       *graph.Meter
	sizes   gq.Sizes
	held    map[any]int64
	inner   int
	pending int64 // work done per row since the last count (text matching)
}

func (ex *executor) match(ctx context.Context, rows [][]ref, steps []gq.Step) ([][]ref, error) {
	var err error
	for _, st := range steps {
		if ex.inner == 0 {
			ex.m.Step(stepLabel{ex.rp, st})
			if err := ex.m.Poll(); err != nil {
				return nil, cancelled(err)
			}
		} else if err := ex.work(1); err != nil {
			return nil, err
		}
		if len(rows) == 0 {
			return rows, nil
		}
		switch st := st.(type) {
		case *gq.ScanStep:
			rows, err = ex.scan(ctx, rows, st)
		case *gq.ExpandStep:
			rows, err = ex.expand(ctx, rows, st)
		case *gq.FilterStep:
			out := rows[:0:0]
			for i, r := range rows {
				if i%4096 == 0 {
					if err := ex.work(4096); err != nil {
						return nil, err
					}
				}
				if ex.pred(st.Pred, r) {
					out = append(out, r)
				}
			}
			rows = out
		case *gq.AntiJoinStep:
			out := rows[:0:0]
			ex.inner++
			for _, r := range rows {
				inner, err := ex.match(ctx, [][]ref{ex.arena.clone(r)}, st.Steps)
				if err != nil {
					ex.inner--
					return nil, err
				}
				if len(inner) == 0 {
					out = append(out, r)
				}
			}
			ex.inner--
			rows = out
		default:
			return nil, fmt.Errorf("graph: unknown plan step %T", st)
		}
		if err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// loadNodes makes sure the rows of ids (every row when ids is nil) of a
// node type are resolved for this execution.
func (ex *executor) loadNodes(ctx context.Context, typ string, ids []string) (*nodeRows, error) {
	if nr := ex.nodes[typ]; nr != nil && nr.full {
		return nr, nil
	}
	if ex.cols == nil {
		ex.cols = neededColumns(ex.rp)
	}
	cols, ok := ex.cols[typ]
	if !ok {
		cols = nil // a type the plan's variables do not name: every column
	}
	nr, err := nodeTable(ctx, ex.s, typ, ids, cols)
	if err != nil {
		return nil, err
	}
	ex.nodes[typ] = nr
	return nr, ex.hold(typ, nr.size())
}

func (ex *executor) edgeIndex(ctx context.Context, typ string) (*edgeIndex, error) {
	if ix := ex.edges[typ]; ix != nil {
		return ix, nil
	}
	ix, err := edgeTable(ctx, ex.s, typ)
	if err != nil {
		return nil, err
	}
	ex.edges[typ] = ix
	return ix, ex.hold(ix, ix.bytes)
}

// scan binds st.Var to each node of st.Node passing st.Where: one point
// lookup through the key index when st.Key pins the whole key, a scan of
// the table otherwise.
func (ex *executor) scan(ctx context.Context, rows [][]ref, st *gq.ScanStep) ([][]ref, error) {
	ex.prefetchEdges(ctx)
	var nr *nodeRows
	var cands []int32
	var scanOrder map[int32]int // an index's rows: row → place in scan order
	if st.Key != nil {
		id, ok := ex.keyID(st)
		if !ok {
			return nil, nil
		}
		var err error
		if nr, err = ex.loadNodes(ctx, st.Node.Name, []string{id}); err != nil {
			return nil, err
		}
		if r, ok := nr.row(id); ok {
			cands = []int32{int32(r)}
		}
	} else if hits, ok, err := ex.indexCandidates(ctx, st); err != nil {
		return nil, err
	} else if ok {
		// An index names the rows (searchindex.go), in scan order.
		if len(hits) > 0 {
			if nr, err = ex.nodeRowsAt(ctx, st.Node.Name, hits); err != nil {
				return nil, err
			}
		}
		scanOrder = make(map[int32]int, len(hits))
		for _, h := range hits {
			if r, ok := nr.row(h.ID); ok {
				scanOrder[int32(r)] = len(cands)
				cands = append(cands, int32(r))
			}
		}
		if len(cands) == 0 {
			return nil, nil
		}
		// The filters walk rows in load order; the output keeps scan order.
		slices.Sort(cands)
	} else {
		var err error
		if nr, err = ex.loadNodes(ctx, st.Node.Name, nil); err != nil {
			return nil, err
		}
		cands = make([]int32, nr.rows.len())
		for i := range cands {
			cands[i] = int32(i)
		}
	}
	if err := ex.work(len(cands)); err != nil {
		return nil, err
	}
	var slow []*gq.Predicate
	for _, p := range st.Where {
		if kept, ok := ex.filterRows(nr, p, cands); ok {
			cands = kept
		} else {
			slow = append(slow, p)
		}
	}
	if len(slow) > 0 {
		scratch := make([]ref, len(ex.rp.Vars))
		kept := cands[:0]
		for i, row := range cands {
			if i%4096 == 0 {
				if err := ex.work(4096); err != nil {
					return nil, err
				}
			}
			scratch[st.Var] = ref{id: nr.id(row), nr: nr, row: row, set: true}
			ok := true
			for _, p := range slow {
				if !ex.pred(p, scratch) {
					ok = false
					break
				}
			}
			if ok {
				kept = append(kept, row)
			}
		}
		cands = kept
	}
	if scanOrder != nil {
		slices.SortFunc(cands, func(a, b int32) int { return scanOrder[a] - scanOrder[b] })
	}
	// The rows are known before they exist: a cross product over the
	// budget is refused here, exactly.
	if err := ex.produce(mulSat(int64(len(rows)), int64(len(cands))), ex.sizes.Match); err != nil {
		return nil, err
	}
	out := make([][]ref, 0, len(rows)*len(cands))
	for _, r := range rows {
		for _, row := range cands {
			o := ex.arena.clone(r)
			o[st.Var] = ref{id: nr.id(row), nr: nr, row: row, set: true}
			out = append(out, o)
		}
	}
	return out, nil
}

// keyID derives the node id the key predicates pin (pg key identity).
func (ex *executor) keyID(st *gq.ScanStep) (string, bool) {
	props := make(map[string]any, len(st.Key))
	for i, k := range st.Node.Key {
		v := ex.args.Value(st.Key[i])
		if v == nil {
			return "", false // NULL never matches
		}
		props[k] = v
	}
	id, err := st.Node.IDFor(props)
	if err != nil {
		return "", false // a value no key can have matches nothing
	}
	return id, true
}

func toDir(d gq.Direction) dir {
	switch d {
	case gq.In:
		return dirIn
	case gq.Both:
		return dirBoth
	}
	return dirOut
}

// expand follows st.Edge from each row's From node through the edge
// table's CSR (out) or CSC (in) index.
func (ex *executor) expand(ctx context.Context, rows [][]ref, st *gq.ExpandStep) ([][]ref, error) {
	ix, err := ex.edgeIndex(ctx, st.Edge.Name)
	if err != nil {
		return nil, err
	}
	if st.EdgeVar >= 0 {
		if err := ix.loadRows(ctx); err != nil {
			return nil, err
		}
		if err := ex.hold(ix.rows, ix.rows.bytes); err != nil {
			return nil, err
		}
	}
	d := toDir(st.Dir)
	var out [][]ref
	charged := 0 // rows of out charged to the budget
	for _, r := range rows {
		// Each input row's rows are charged before the next one runs.
		if err := ex.charge(len(out) - charged); err != nil {
			return nil, err
		}
		charged = len(out)
		n, ok := ix.lookup(r[st.From].id)
		if !ok {
			continue // no edge touches this node
		}
		if st.EdgeVar >= 0 {
			ix.neighbours(n, d, func(s step) {
				dest := ix.nodes[s.other]
				if st.ToBound && r[st.To].id != dest {
					return
				}
				o := ex.arena.clone(r)
				o[st.To] = ref{id: dest, set: true}
				o[st.EdgeVar] = ref{edge: s.edge, set: true}
				out = append(out, o)
			})
			continue
		}
		dests := ix.reach(n, d, st.MinHops, st.MaxHops, &ex.sc)
		if st.ToBound {
			if err := ex.work(len(dests)); err != nil {
				return nil, err
			}
			want, ok := ix.lookup(r[st.To].id)
			if ok && slices.Contains(dests, want) {
				out = append(out, r)
			}
			continue
		}
		for _, o := range dests {
			c := ex.arena.clone(r)
			c[st.To] = ref{id: ix.nodes[o], row: o, set: true}
			out = append(out, c)
		}
	}
	if err := ex.charge(len(out) - charged); err != nil {
		return nil, err
	}
	if st.ToBound || len(out) == 0 {
		return out, nil
	}
	// An edge whose endpoint no longer exists binds nothing: keep only rows
	// whose destination is a live node of the snapshot, and remember where
	// each destination's row is.
	ids := make([]string, 0, len(out))
	for _, r := range out {
		ids = append(ids, r[st.To].id)
	}
	nr, err := ex.loadNodes(ctx, st.ToNode.Name, ids)
	if err != nil {
		return nil, err
	}
	var rowOf []int32
	if nr.full {
		rowOf = ix.nodeRowsOf(nr)
	}
	kept := out[:0]
	for _, r := range out {
		b := &r[st.To]
		row := int32(-1)
		if rowOf != nil && st.EdgeVar < 0 {
			row = rowOf[b.row] // b.row holds the dense number here
		} else if x, ok := nr.row(b.id); ok {
			row = int32(x)
		}
		if row < 0 {
			continue
		}
		b.nr, b.row = nr, row
		kept = append(kept, r)
	}
	return kept, nil
}

// pred evaluates a predicate on a row (see gq.Predicate for NULL rules).
func (ex *executor) pred(p *gq.Predicate, r []ref) bool {
	if p.Op.TextOp() {
		return ex.textMatch(p, r)
	}
	if p.Left.Kind == gq.OperandVar && p.Right.Kind == gq.OperandVar {
		a, b := r[p.Left.Var], r[p.Right.Var]
		eq := a.id == b.id && a.edge == b.edge
		if p.Op == gq.OpNe {
			return !eq
		}
		return eq
	}
	return evalCmp(p.Op, ex.operand(p.Left, r), ex.operand(p.Right, r))
}

// operand resolves an operand on a row to a canonical value.
func (ex *executor) operand(o gq.Operand, r []ref) any {
	switch o.Kind {
	case gq.OperandProp:
		return ex.prop(o.Var, o.Prop.Name, r)
	case gq.OperandVar:
		return ex.entityID(o.Var, r)
	}
	return ex.args.Value(o)
}

// prop reads property name of the entity bound at slot.
func (ex *executor) prop(slot int, name string, r []ref) any {
	b := r[slot]
	if !b.set {
		return nil
	}
	v := ex.rp.Vars[slot]
	if v.Kind == gq.VarEdge {
		ix := ex.edges[v.Edge.Name]
		if ix == nil {
			return nil
		}
		return ix.rows.value(int(b.edge), name)
	}
	if b.nr != nil {
		return b.nr.rows.value(int(b.row), name)
	}
	nr := ex.nodes[v.Node.Name]
	if nr == nil {
		return nil
	}
	row, ok := nr.row(b.id)
	if !ok {
		return nil
	}
	return nr.rows.value(row, name)
}

// entityID is the id of the node or edge bound at slot.
func (ex *executor) entityID(slot int, r []ref) any {
	b := r[slot]
	if !b.set {
		return nil
	}
	v := ex.rp.Vars[slot]
	if v.Kind == gq.VarEdge {
		if ix := ex.edges[v.Edge.Name]; ix != nil {
			return ix.rows.value(int(b.edge), pg.ColID)
		}
		return nil
	}
	return b.id
}

// node renders the whole node bound at slot: its id and every non-Blob
// property.
func (ex *executor) node(slot int, r []ref) any {
	b := r[slot]
	if !b.set {
		return nil
	}
	v := ex.rp.Vars[slot]
	m := map[string]any{pg.ColID: b.id}
	for _, p := range v.Node.Properties {
		if p.Type.Kind == pg.KindBlob {
			continue
		}
		m[p.Name] = ex.prop(slot, p.Name, r)
	}
	return m
}

// column evaluates a non-aggregate column on a match row.
func (ex *executor) column(c *gq.Column, r []ref) any {
	switch c.Kind {
	case gq.ColumnProp:
		return ex.prop(c.Expr.Var, c.Expr.Prop.Name, r)
	case gq.ColumnNode:
		return ex.node(c.Expr.Var, r)
	case gq.ColumnValue:
		return ex.args.Value(c.Expr)
	case gq.ColumnScore:
		return ex.scoreValue(c.Score, r)
	}
	return nil
}

// sortValue is a column value as a sort key: a whole node sorts by id.
func sortValue(c *gq.Column, v any) any {
	if c.Kind == gq.ColumnNode {
		if m, ok := v.(map[string]any); ok {
			return m[pg.ColID]
		}
	}
	return v
}

type outRow struct {
	vals []any
	keys []any
}

// project turns match rows into output rows: grouping and aggregation when
// the plan is grouped, then the total order, then the limit.
func (ex *executor) project(ctx context.Context, rows [][]ref) ([][]any, error) {
	rp := ex.rp
	var out []outRow
	if rp.Grouped {
		var err error
		if out, err = ex.group(rows); err != nil {
			return nil, err
		}
		for i := range out {
			keys := make([]any, len(rp.Order))
			for k, sk := range rp.Order {
				keys[k] = sortValue(rp.Columns[sk.Column], out[i].vals[sk.Column])
			}
			out[i].keys = keys
		}
	} else {
		if err := ex.produce(int64(len(rows)), ex.sizes.Out); err != nil {
			return nil, err
		}
		out = make([]outRow, len(rows))
		var text int64 // the output's string bytes, charged as it goes
		for i, r := range rows {
			if i%4096 == 0 {
				if err := ex.hold(&out, text); err != nil {
					return nil, err
				}
				if err := ex.work(4096); err != nil {
					return nil, err
				}
			}
			vals := make([]any, len(rp.Columns))
			for j, c := range rp.Columns {
				vals[j] = ex.column(c, r)
				if s, ok := vals[j].(string); ok {
					text += int64(len(s))
				}
			}
			keys := make([]any, len(rp.Order))
			for k, sk := range rp.Order {
				switch sk.Kind {
				case gq.SortColumn:
					keys[k] = sortValue(rp.Columns[sk.Column], vals[sk.Column])
				case gq.SortProp:
					keys[k] = ex.prop(sk.Var, sk.Prop.Name, r)
				case gq.SortID:
					keys[k] = ex.entityID(sk.Var, r)
				case gq.SortScore:
					keys[k] = ex.sortScore(sk.Score, r)
				}
			}
			out[i] = outRow{vals: vals, keys: keys}
		}
		if err := ex.hold(&out, text); err != nil {
			return nil, err
		}
	}
	slices.SortStableFunc(out, func(a, b outRow) int {
		for k, sk := range rp.Order {
			c := sortCompare(a.keys[k], b.keys[k])
			if sk.Desc {
				c = -c
			}
			if c != 0 {
				return c
			}
		}
		return 0
	})
	if n, ok := ex.args.Limit(rp); ok && int64(len(out)) > n {
		out = out[:n]
	}
	res := make([][]any, len(out))
	for i, o := range out {
		res[i] = o.vals
	}
	return res, nil
}

// group forms the groups of a grouped plan and evaluates its aggregates.
func (ex *executor) group(rows [][]ref) ([]outRow, error) {
	rp := ex.rp
	type groupState struct {
		vals []any
		aggs []*aggState
	}
	var order []string
	groups := map[string]*groupState{}
	newGroup := func(vals []any) *groupState {
		g := &groupState{vals: vals, aggs: make([]*aggState, len(rp.Columns))}
		for j, c := range rp.Columns {
			if c.Kind == gq.ColumnAggregate {
				g.aggs[j] = &aggState{fn: c.Agg, typ: c.Type}
			}
		}
		return g
	}
	var kb []byte
	for i, r := range rows {
		if i%4096 == 0 {
			if err := ex.work(4096); err != nil {
				return nil, err
			}
		}
		kb = kb[:0]
		for _, c := range rp.Columns {
			if c.Group {
				kb = ex.appendGroupKey(kb, c, r)
			}
		}
		g := groups[string(kb)] // no copy of the key for a lookup
		if g == nil {
			if err := ex.produce(1, ex.sizes.Out+int64(len(kb))+int64(len(rp.Columns))*64); err != nil {
				return nil, err
			}
			k := string(kb)
			vals := make([]any, len(rp.Columns))
			for j, c := range rp.Columns {
				if c.Group {
					vals[j] = ex.column(c, r)
				}
			}
			g = newGroup(vals)
			groups[k] = g
			order = append(order, k)
		}
		for j, c := range rp.Columns {
			if c.Kind != gq.ColumnAggregate {
				continue
			}
			var v any = true // count($x) counts rows
			if c.Expr.Kind == gq.OperandProp {
				v = ex.prop(c.Expr.Var, c.Expr.Prop.Name, r)
			}
			g.aggs[j].add(v)
		}
	}
	noGroupCols := true
	for _, c := range rp.Columns {
		if c.Group {
			noGroupCols = false
		}
	}
	if len(groups) == 0 && noGroupCols {
		k := ""
		groups[k] = newGroup(make([]any, len(rp.Columns)))
		order = append(order, k)
	}
	out := make([]outRow, 0, len(order))
	for _, k := range order {
		g := groups[k]
		vals := g.vals
		for j, a := range g.aggs {
			if a != nil {
				vals[j] = a.result()
			}
		}
		out = append(out, outRow{vals: vals})
	}
	return out, nil
}

// aggState accumulates one aggregate over a group (NULL values skipped,
// except that count of a variable counts rows).
type aggState struct {
	fn   gq.AggFunc
	typ  pg.Type
	n    int64
	isum int64
	usum uint64
	fsum float64
	best any
}

func (a *aggState) add(v any) {
	if v == nil {
		return
	}
	a.n++
	switch a.fn {
	case gq.AggSum, gq.AggAvg:
		i, u, f, k, _ := numeric(v)
		switch k {
		case 'i':
			a.isum += i
			a.fsum += float64(i)
		case 'u':
			a.usum += u
			a.fsum += float64(u)
		case 'f':
			a.fsum += f
		}
	case gq.AggMin:
		if a.best == nil || sortCompare(v, a.best) < 0 {
			a.best = v
		}
	case gq.AggMax:
		if a.best == nil || sortCompare(v, a.best) > 0 {
			a.best = v
		}
	}
}

func (a *aggState) result() any {
	switch a.fn {
	case gq.AggCount:
		return a.n
	case gq.AggAvg:
		if a.n == 0 {
			return nil
		}
		return a.fsum / float64(a.n)
	case gq.AggSum:
		if a.n == 0 {
			return nil
		}
		switch a.typ.Kind {
		case pg.KindU64:
			return a.usum
		case pg.KindF64:
			return a.fsum
		}
		return a.isum
	}
	return a.best
}
