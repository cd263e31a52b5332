package gq

import (
	"fmt"
	"slices"

	"github.com/omnigraph-go/omnigraph/lang/pg"
)

// blockPlan checks and plans the clauses of one match or not { } block, in
// five stages: declare the variables, infer traversal directions and
// endpoint types, check the predicates, order the steps, then plan the
// anti-joins. Each stage stops the block when it added errors.
type blockPlan struct {
	c       *checker
	sc      *scope
	local   bool
	declPos map[int]Pos

	binds   []bindInfo
	travs   []*travInfo
	filters []*FilterClause
	nots    []*NotClause
	preds   []*pred

	isBound map[int]bool
	steps   []Step
}

type bindInfo struct {
	slot int
	bc   *BindingClause
}

// block checks and plans the clauses of one match or not { } block. bound
// lists the slots bound before the block runs (the outer scope's).
func (c *checker) block(clauses []Clause, sc *scope, bound []int, local bool) ([]Step, bool) {
	nerr := len(c.errs)
	b := &blockPlan{c: c, sc: sc, local: local, declPos: map[int]Pos{}}
	ok := func() bool { return len(c.errs) == nerr }
	// After a failed stage the filters are still checked, for their own
	// errors (salvage keeps consequences of the failure out).
	salvageFilters := func() {
		c.salvage(func() {
			c.namedInMatch(clauses)
			b.predicates()
		})
	}
	b.declareAll(clauses)
	if !ok() {
		salvageFilters()
		return nil, false
	}
	b.inferDirections()
	if !ok() {
		salvageFilters()
		return nil, false
	}
	b.predicates()
	if !ok() {
		return nil, false
	}
	b.order(bound)
	b.antiJoins()
	return b.steps, ok()
}

// declare introduces name (or finds it in an enclosing scope) as a variable
// of kind, reporting rebinding mistakes.
func (b *blockPlan) declare(name string, pos Pos, kind VarKind) (int, bool) {
	c, sc := b.c, b.sc
	if _, isParam := c.params[name]; isParam && name != "_" {
		c.add(errorf(CodeRebind, pos, "$%s is a parameter of this query; a match variable needs another name, as in $%s_node", name, name))
		return 0, false
	}
	if name != "_" {
		if slot, ok := sc.lookup(name); ok {
			if c.rp.Vars[slot].Kind != kind {
				if kind == VarEdge {
					c.add(errorf(CodeEdgeBinding, pos, "$%s is already a node variable; give the edge its own name, as in $%s_edge", name, name))
				} else {
					c.add(errorf(CodeEdgeBinding, pos, "$%s is an edge variable and cannot be a node or a traversal endpoint; use its properties, as in $%s.since", name, name))
				}
				return 0, false
			}
			if kind == VarEdge {
				c.add(errorf(CodeEdgeBinding, pos, "edge variable $%s is bound twice; give each bound edge its own name", name))
				return 0, false
			}
			return slot, true
		}
	}
	slot := c.newVar(name, kind, b.local)
	b.declPos[slot] = pos
	if name != "_" {
		sc.names[name] = slot
	}
	sc.slots = append(sc.slots, slot)
	return slot, true
}

// declareAll is stage 1: variables and their node types from bindings and
// traversals; filters and not-blocks are kept for later stages.
func (b *blockPlan) declareAll(clauses []Clause) {
	for _, cl := range clauses {
		switch cl := cl.(type) {
		case *BindingClause:
			b.binding(cl)
		case *TraversalClause:
			if ti := b.traversal(cl); ti != nil {
				b.travs = append(b.travs, ti)
			}
		case *FilterClause:
			b.filters = append(b.filters, cl)
		case *NotClause:
			b.nots = append(b.nots, cl)
		}
	}
}

func (b *blockPlan) binding(cl *BindingClause) {
	c := b.c
	if cl.Var == "_" {
		c.add(errorf(CodeRebind, cl.Pos, "$_ is anonymous and cannot be bound to a type; name the variable, as in $x: %s", cl.Type))
		return
	}
	slot, ok := b.declare(cl.Var, cl.Pos, VarNode)
	if !ok {
		return
	}
	n := c.lookupNode(cl.Type, cl.TPos)
	if n == nil {
		return
	}
	v := c.rp.Vars[slot]
	if v.Node != nil && v.Node != n {
		c.add(errorf(CodeRebind, cl.TPos, "$%s is already a %s; a variable has one type, so use a new name for the %s", cl.Var, v.Node.Name, n.Name))
		return
	}
	v.Node = n
	b.binds = append(b.binds, bindInfo{slot, cl})
}

// traversal declares a traversal's endpoints (and edge variable) and checks
// its hop range and direction rules; nil when it has an error.
func (b *blockPlan) traversal(cl *TraversalClause) *travInfo {
	c := b.c
	ti := &travInfo{tc: cl, ev: -1}
	e, ok := c.cat.Edge(cl.Edge)
	if !ok {
		msg := fmt.Sprintf("unknown edge %q; %s", cl.Edge, suggest(cl.Edge, c.edgeNames()))
		if n, isNode := c.cat.Node(upperFirst(cl.Edge)); isNode {
			msg = fmt.Sprintf("%s is a node type, not an edge; bind it with $x: %s", n.Name, n.Name)
		}
		c.add(errorf(CodeUnknownEdge, cl.EdgePos, "%s", msg))
		return nil
	}
	ti.edge = e
	var ok1, ok2 bool
	ti.from, ok1 = b.declare(cl.From, cl.FromPos, VarNode)
	ti.to, ok2 = b.declare(cl.To, cl.ToPos, VarNode)
	if !ok1 || !ok2 {
		return nil
	}
	if cl.EdgeVar != "" {
		if cl.EdgeVar == "_" {
			c.add(errorf(CodeEdgeBinding, cl.Pos, "an edge binding needs a name, as in $a $e:%s $b; drop the binding if you do not use it", cl.Edge))
			return nil
		}
		slot, ok := b.declare(cl.EdgeVar, cl.Pos, VarEdge)
		if !ok {
			return nil
		}
		c.rp.Vars[slot].Edge = e
		ti.ev = slot
	}
	ti.min, ti.max = 1, 1
	if cl.HasHops {
		if !c.checkHops(cl, e) {
			return nil
		}
		ti.min, ti.max = cl.Min, cl.Max
		if ti.ev >= 0 && !(cl.Min == 1 && cl.Max == 1) {
			c.add(errorf(CodeEdgeBinding, cl.HopPos, "an edge binding follows exactly one edge; drop {%d,%d} or drop $%s:", cl.Min, cl.Max, cl.EdgeVar))
			return nil
		}
	}
	if cl.Undirected && e.From != e.To {
		c.add(errorf(CodeUndirected, cl.EdgePos, "<%s> is undirected, but %s goes %s -> %s; only edges between one node type can be undirected, so write $a %s $b", cl.Edge, e.Name, e.From, e.To, cl.Edge))
		return nil
	}
	return ti
}

// inferDirections is stage 2: a fixpoint that resolves each traversal whose
// endpoint types are known, then forces one default at a time; every node
// variable must end with a type.
func (b *blockPlan) inferDirections() {
	resolved := make([]bool, len(b.travs))
	for {
		progress := false
		for i := range b.travs {
			if !resolved[i] && b.resolve(b.travs[i], false) {
				resolved[i], progress = true, true
			}
		}
		if progress {
			continue
		}
		forced := false
		for i := range b.travs {
			if !resolved[i] {
				resolved[i] = b.resolve(b.travs[i], true)
				forced = true
				break
			}
		}
		if !forced {
			break
		}
	}
	for _, slot := range b.sc.slots {
		v := b.c.rp.Vars[slot]
		if v.Kind == VarNode && v.Node == nil {
			b.c.add(errorf(CodeUnbound, b.declPos[slot], "the type of $%s is unknown; bind it, as in $%s: %s", v.Name, v.Name, firstOr(b.c.nodeNames(), "Person")))
		}
	}
}

// resolve fixes one traversal's direction and endpoint types; false while
// neither endpoint's type is known (unless force).
func (b *blockPlan) resolve(ti *travInfo, force bool) bool {
	c := b.c
	e := ti.edge
	from, _ := c.cat.Node(e.From)
	to, _ := c.cat.Node(e.To)
	typeOf := func(slot int) *pg.NodeType { return c.rp.Vars[slot].Node }
	a, bt := typeOf(ti.from), typeOf(ti.to)
	if a == nil && bt == nil && !force {
		return false
	}
	var dir Direction
	switch {
	case ti.tc.Undirected:
		dir = Both
	case a != nil && a.Name == e.From && (bt == nil || bt.Name == e.To):
		dir = Out
	case a != nil && a.Name == e.To && (bt == nil || bt.Name == e.From):
		dir = In
	case a == nil && bt != nil && bt.Name == e.To:
		dir = Out
	case a == nil && bt != nil && bt.Name == e.From:
		dir = In
	case a == nil && bt == nil:
		dir = Out
	}
	if ti.tc.Undirected && ((a != nil && a.Name != e.From) || (bt != nil && bt.Name != e.From)) {
		dir = 0
	}
	if dir == 0 {
		c.add(errorf(CodeEndpoint, ti.tc.EdgePos, "%s connects %s -> %s, but $%s is %s and $%s is %s; bind the endpoints to %s and %s",
			e.Name, e.From, e.To, ti.tc.From, typeName(a), ti.tc.To, typeName(bt), e.From, e.To))
		return true
	}
	if ti.max > 1 && e.From != e.To {
		// An edge between two node types cannot chain: the node a hop
		// reaches is no source of the edge. As in the original, the range
		// is capped at one hop, so {1,n} is the one-hop result and a range
		// from 2 (MinHops > MaxHops) matches nothing. Capping also keeps a
		// To node from being read as the From node of the same id.
		ti.max = 1
	}
	ti.dir = dir
	if dir == In {
		c.rp.Vars[ti.from].Node, c.rp.Vars[ti.to].Node = to, from
	} else {
		c.rp.Vars[ti.from].Node, c.rp.Vars[ti.to].Node = from, to
	}
	return true
}

// predicates is stage 3: inline property values, then filters.
func (b *blockPlan) predicates() {
	for _, bi := range b.binds {
		b.inlineValues(bi)
	}
	for _, fc := range b.filters {
		if p := b.c.filter(fc, b.sc); p != nil {
			b.preds = append(b.preds, p)
		}
	}
}

// inlineValues checks the { prop: value } of one binding as equality
// predicates.
func (b *blockPlan) inlineValues(bi bindInfo) {
	c := b.c
	n := c.rp.Vars[bi.slot].Node
	seen := map[string]bool{}
	for _, pv := range bi.bc.Props {
		prop, ok := n.Property(pv.Name)
		if !ok {
			c.add(errorf(CodeUnknownProperty, pv.Pos, "%s has no property %q; %s", n.Name, pv.Name, suggest(pv.Name, propNames(n.Properties))))
			continue
		}
		if seen[pv.Name] {
			c.add(errorf(CodeDuplicateAssign, pv.Pos, "%s is given twice; keep one value", pv.Name))
			continue
		}
		seen[pv.Name] = true
		if prop.Type.Kind == pg.KindBlob {
			c.add(errorf(CodeBlob, pv.Pos, "%s.%s is a Blob and cannot be matched on; match on another property", n.Name, pv.Name))
			continue
		}
		what := fmt.Sprintf("%s.%s", n.Name, pv.Name)
		op := OpEq
		if prop.Type.Kind == pg.KindList && !c.isListValue(pv.Value) {
			// { tags: "x" } on a list property is membership, as in the
			// original: the same as $v.tags contains "x".
			op = OpContains
		}
		rt, ok := c.rightType(op, prop.Type, pv.Pos, what)
		if !ok {
			continue
		}
		if pv.Value.Kind == ExprNull {
			c.add(errorf(CodeNull, pv.Value.Pos, "a match value cannot be null (NULL never matches); give a value, as in %s: %s", pv.Name, example(prop.Type)))
			continue
		}
		val, rt := numberLiteral(pv.Value, rt)
		right, ok := c.valueOperand(val, rt, false, what, false)
		if !ok {
			continue
		}
		left := Operand{Kind: OperandProp, Var: bi.slot, Prop: prop, Type: prop.Type, Nullable: prop.Nullable}
		b.preds = append(b.preds, &pred{p: &Predicate{Pos: pv.Pos, Left: left, Op: op, Right: right}, deps: []int{bi.slot}})
	}
}

// isListValue reports whether e is a list: a list literal or a parameter
// declared as a list.
func (c *checker) isListValue(e *Expr) bool {
	if e.Kind == ExprList {
		return true
	}
	if e.Kind == ExprVar {
		if p, ok := c.params[e.Var]; ok {
			return p.Type.Kind == pg.KindList
		}
	}
	return false
}

// order is stage 4, a greedy plan: follow an edge from a bound variable
// while one exists, else scan the best unbound variable; each filter runs as
// soon as every variable it reads is bound.
func (b *blockPlan) order(bound []int) {
	b.isBound = map[int]bool{}
	for _, s := range bound {
		b.isBound[s] = true
	}
	b.emitFilters()
	tdone := make([]bool, len(b.travs))
	for {
		if b.expandOne(tdone) {
			b.emitFilters()
			continue
		}
		slot := b.c.pickScan(b.sc, b.isBound, b.preds)
		if slot < 0 {
			break
		}
		b.steps = append(b.steps, b.c.scanStep(slot, b.preds))
		b.isBound[slot] = true
		b.emitFilters()
	}
	for _, p := range b.preds {
		if !p.done { // cannot happen: every variable is bound by now
			b.c.add(errorf(CodeUnbound, p.p.Pos, "this filter reads a variable that is never bound"))
		}
	}
}

// expandOne plans the first traversal not yet done that starts at a bound
// variable; false when there is none.
func (b *blockPlan) expandOne(tdone []bool) bool {
	for i, ti := range b.travs {
		if tdone[i] || !(b.isBound[ti.from] || b.isBound[ti.to]) {
			continue
		}
		st := &ExpandStep{From: ti.from, To: ti.to, EdgeVar: ti.ev, Edge: ti.edge, Dir: ti.dir, MinHops: ti.min, MaxHops: ti.max}
		if !b.isBound[ti.from] {
			st.From, st.To = ti.to, ti.from
			switch ti.dir {
			case Out:
				st.Dir = In
			case In:
				st.Dir = Out
			}
		}
		st.ToBound = b.isBound[st.To]
		st.ToNode = b.c.rp.Vars[st.To].Node
		b.steps = append(b.steps, st)
		b.isBound[st.To] = true
		if ti.ev >= 0 {
			b.isBound[ti.ev] = true
		}
		tdone[i] = true
		return true
	}
	return false
}

func (b *blockPlan) emitFilters() {
	for _, p := range b.preds {
		if p.done {
			continue
		}
		ready := true
		for _, d := range p.deps {
			if !b.isBound[d] {
				ready = false
			}
		}
		if ready {
			p.done = true
			b.steps = append(b.steps, &FilterStep{Pred: p.p})
		}
	}
}

// antiJoins is stage 5: each not { } block, planned with everything in this
// block bound, must read a variable bound outside it.
func (b *blockPlan) antiJoins() {
	for _, nc := range b.nots {
		child := &scope{parent: b.sc, names: map[string]int{}}
		var allBound []int
		for s := range b.isBound {
			allBound = append(allBound, s)
		}
		slices.Sort(allBound)
		sub, ok := b.c.block(nc.Clauses, child, allBound, true)
		if !ok {
			continue
		}
		outer := usedOuter(sub, b.isBound)
		if len(outer) == 0 {
			b.c.add(errorf(CodeNegation, nc.Pos, "not { ... } must use a variable bound outside it, as in not { $p worksAt $_ }; otherwise it does not depend on the row"))
			continue
		}
		b.steps = append(b.steps, &AntiJoinStep{Steps: sub, Outer: outer})
	}
}
