package gq

import (
	"slices"
	"strconv"
	"strings"

	"github.com/omnigraph-go/omnigraph/lang/pg"
)

// scope maps variable names to slots; a not { } block opens a child scope.
type scope struct {
	parent *scope
	names  map[string]int
	slots  []int // slots declared in this scope, in order of first appearance
}

func (s *scope) lookup(name string) (int, bool) {
	for sc := s; sc != nil; sc = sc.parent {
		if slot, ok := sc.names[name]; ok {
			return slot, true
		}
	}
	return 0, false
}

// travInfo is a checked traversal.
type travInfo struct {
	tc       *TraversalClause
	from, to int // slots of the written left and right variables
	ev       int // edge variable slot or -1
	edge     *pg.EdgeType
	dir      Direction // relative to from -> to; 0 while unresolved
	min, max int
}

// pred is a checked predicate with the slots it reads.
type pred struct {
	p    *Predicate
	deps []int
	done bool
}

func (c *checker) newVar(name string, kind VarKind, local bool) int {
	v := &Var{Slot: len(c.rp.Vars), Name: name, Kind: kind, Local: local}
	c.rp.Vars = append(c.rp.Vars, v)
	return v.Slot
}

func (c *checker) read(rb *ReadBody) *ReadPlan {
	c.rp = &ReadPlan{}
	root := &scope{names: map[string]int{}}
	steps, ok := c.block(rb.Match, root, nil, false)
	if !ok {
		// The match failed: return, order and limit are still checked, for
		// their own errors.
		c.salvage(func() {
			c.namedInMatch(rb.Match)
			c.returnClause(rb, root)
			c.orderClause(rb, root)
			if rb.Limit != nil {
				c.limitClause(rb.Limit)
			}
		})
		return nil
	}
	c.rp.Steps = steps
	c.returnClause(rb, root)
	c.orderClause(rb, root)
	if rb.Limit != nil {
		c.limitClause(rb.Limit)
	}
	c.checkRanked(rb)
	return c.rp
}

func firstOr(ss []string, def string) string {
	if len(ss) > 0 {
		return ss[0]
	}
	return def
}

func typeName(n *pg.NodeType) string {
	if n == nil {
		return "unbound"
	}
	return "a " + n.Name
}

func (c *checker) checkHops(cl *TraversalClause, e *pg.EdgeType) bool {
	switch {
	case !cl.HasMax:
		c.add(errorf(CodeHops, cl.HopPos, "unbounded traversal %s{%d,} is not allowed; give a maximum, as in %s{%d,%d}", cl.Edge, cl.Min, cl.Edge, max(cl.Min, 1), max(cl.Min, 1)+2))
	case cl.Min < 1:
		c.add(errorf(CodeHops, cl.HopPos, "the minimum hop count is 1; write %s{1,%d}", cl.Edge, max(cl.Max, 1)))
	case cl.Max < cl.Min:
		c.add(errorf(CodeHops, cl.HopPos, "the maximum (%d) is below the minimum (%d); write %s{%d,%d}", cl.Max, cl.Min, cl.Edge, cl.Max, cl.Min))
	case cl.Max > MaxHops:
		c.add(errorf(CodeHops, cl.HopPos, "at most %d hops are allowed; write %s{%d,%d}", MaxHops, cl.Edge, cl.Min, MaxHops))
	default:
		return true
	}
	return false
}

// pickScan chooses the next unbound node variable of sc to scan: one whose
// key is pinned first, then one with pushed-down predicates, then the first
// declared. It returns -1 when every variable is bound.
func (c *checker) pickScan(sc *scope, isBound map[int]bool, preds []*pred) int {
	best, bestScore := -1, -1
	for _, slot := range sc.slots {
		v := c.rp.Vars[slot]
		if isBound[slot] || v.Kind != VarNode {
			continue
		}
		score := 0
		pushed := pushable(slot, preds)
		if len(pushed) > 0 {
			score = 1
		}
		if keyOperands(v.Node, pushed) != nil {
			score = 2
		}
		if score > bestScore {
			best, bestScore = slot, score
		}
	}
	return best
}

func isConst(o Operand) bool {
	return o.Kind == OperandLiteral || o.Kind == OperandParam || o.Kind == OperandNow
}

func pushable(slot int, preds []*pred) []*pred {
	var out []*pred
	for _, p := range preds {
		if p.done || len(p.deps) != 1 || p.deps[0] != slot {
			continue
		}
		if p.p.Left.Kind == OperandProp && isConst(p.p.Right) {
			out = append(out, p)
		}
	}
	return out
}

func keyOperands(n *pg.NodeType, pushed []*pred) []Operand {
	if len(n.Key) == 0 {
		return nil
	}
	out := make([]Operand, len(n.Key))
	for i, k := range n.Key {
		found := false
		for _, p := range pushed {
			if p.p.Op == OpEq && p.p.Left.Prop.Name == k {
				out[i] = p.p.Right
				found = true
				break
			}
		}
		if !found {
			return nil
		}
	}
	return out
}

func (c *checker) scanStep(slot int, preds []*pred) *ScanStep {
	v := c.rp.Vars[slot]
	st := &ScanStep{Var: slot, Node: v.Node}
	pushed := pushable(slot, preds)
	st.Key = keyOperands(v.Node, pushed)
	for _, p := range pushed {
		p.done = true
		st.Where = append(st.Where, p.p)
	}
	return st
}

// usedOuter lists the outer slots a subplan reads.
func usedOuter(steps []Step, outer map[int]bool) []int {
	set := map[int]bool{}
	var walkOp func(o Operand)
	walkOp = func(o Operand) {
		if (o.Kind == OperandProp || o.Kind == OperandVar) && outer[o.Var] {
			set[o.Var] = true
		}
	}
	var walk func([]Step)
	walk = func(ss []Step) {
		for _, s := range ss {
			switch s := s.(type) {
			case *ExpandStep:
				for _, x := range []int{s.From, s.To} {
					if outer[x] {
						set[x] = true
					}
				}
			case *FilterStep:
				walkOp(s.Pred.Left)
				walkOp(s.Pred.Right)
			case *AntiJoinStep:
				for _, x := range s.Outer {
					if outer[x] {
						set[x] = true
					}
				}
			case *ScanStep:
				for _, p := range s.Where {
					walkOp(p.Right)
				}
			}
		}
	}
	walk(steps)
	out := make([]int, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// operand resolves a variable, property or parameter expression in a read.
// Literals are returned with ok and Kind 0 so the caller can coerce them.
func (c *checker) operand(e *Expr, sc *scope, forRead bool) (Operand, bool) {
	switch e.Kind {
	case ExprProp:
		slot, ok := sc.lookup(e.Var)
		if !ok && c.unresolved(e.Var) {
			return Operand{}, false
		}
		if ok && untyped(c.rp.Vars[slot]) {
			// Its binding failed and said why (only while salvaging).
			return Operand{}, false
		}
		if !ok {
			if _, isParam := c.params[e.Var]; isParam {
				c.add(errorf(CodeUnbound, e.Pos, "$%s is a parameter and has no properties; compare a match variable's property with it", e.Var))
				return Operand{}, false
			}
			c.add(errorf(CodeUnbound, e.Pos, "$%s is not bound in match; bind it first, as in $%s: %s", e.Var, e.Var, firstOr(c.nodeNames(), "Person")))
			return Operand{}, false
		}
		v := c.rp.Vars[slot]
		var prop *pg.Property
		var owner string
		var props []*pg.Property
		if v.Kind == VarNode {
			owner, props = v.Node.Name, v.Node.Properties
			prop, ok = v.Node.Property(e.Prop)
		} else {
			owner, props = v.Edge.Name, v.Edge.Properties
			prop, ok = v.Edge.Property(e.Prop)
		}
		if !ok {
			hint := suggest(e.Prop, propNames(props))
			if e.Prop == "id" || e.Prop == "src" || e.Prop == "dst" {
				hint = "physical id columns are not queryable; use a declared property (" + hint + ")"
			}
			c.add(errorf(CodeUnknownProperty, e.Pos, "%s has no property %q ($%s is a %s); %s", owner, e.Prop, e.Var, owner, hint))
			return Operand{}, false
		}
		if prop.Type.Kind == pg.KindBlob && forRead {
			c.add(errorf(CodeBlob, e.Pos, "%s.%s is a Blob; Blob bytes are read with the blob API, not in queries; use another property", owner, e.Prop))
			return Operand{}, false
		}
		return Operand{Kind: OperandProp, Var: slot, Prop: prop, Type: prop.Type, Nullable: prop.Nullable}, true
	case ExprVar:
		if slot, ok := sc.lookup(e.Var); ok {
			if untyped(c.rp.Vars[slot]) {
				return Operand{}, false
			}
			return Operand{Kind: OperandVar, Var: slot, Type: pg.Type{Kind: pg.KindString}}, true
		}
		if p, ok := c.params[e.Var]; ok {
			return Operand{Kind: OperandParam, Param: e.Var, Type: p.Type, Nullable: p.Nullable}, true
		}
		if c.unresolved(e.Var) {
			return Operand{}, false
		}
		c.add(errorf(CodeUnbound, e.Pos, "$%s is neither bound in match nor a declared parameter; bind it in match or declare it in the parameter list", e.Var))
		return Operand{}, false
	case ExprNow:
		return Operand{Kind: OperandNow, Type: pg.Type{Kind: pg.KindDateTime}}, true
	case ExprIdent:
		c.add(errorf(CodeUnbound, e.Pos, "%q is a bare name; refer to a property through its variable, as in $p.%s", e.Text, e.Text))
		return Operand{}, false
	case ExprAggregate:
		c.add(errorf(CodeAggregateMix, e.Pos, "%s() is an aggregate and only allowed in return and order", e.Text))
		return Operand{}, false
	case ExprSearch:
		c.add(errorf(CodeTypeMismatch, e.Pos, "%s() cannot be compared; write a text filter alone as a match clause (search($d.title, $q)) and rank with order { bm25(...) }", e.Text))
		return Operand{}, false
	}
	return Operand{}, true // a literal: the caller coerces it
}

// untyped reports a variable whose type is not known: a binding or
// traversal that failed (the checker reported it there).
func untyped(v *Var) bool {
	return (v.Kind == VarNode && v.Node == nil) || (v.Kind == VarEdge && v.Edge == nil)
}

func describeOperand(c *checker, o Operand, e *Expr) string {
	switch o.Kind {
	case OperandProp:
		return "$" + e.Var + "." + e.Prop
	case OperandVar, OperandParam:
		return "$" + e.Var
	case OperandNow:
		return "now()"
	}
	return "the value"
}

// filter checks `left op right` in a match block.
func (c *checker) filter(fc *FilterClause, sc *scope) *pred {
	if fc.Right == nil { // a bare search function call
		return c.textPred(fc.Left, sc)
	}
	l, okL := c.operand(fc.Left, sc, true)
	r, okR := c.operand(fc.Right, sc, true)
	if !okL || !okR {
		return nil
	}
	left, right := fc.Left, fc.Right
	op := fc.Op
	// Keep a property (or typed operand) on the left when the other side is a constant.
	if l.Kind == 0 && r.Kind == 0 {
		c.add(errorf(CodeTypeMismatch, fc.Pos, "this filter compares two literals; compare a property with a value, as in $p.age >= 30"))
		return nil
	}
	if l.Kind == 0 && op == OpContains && left.Kind == ExprString && r.Kind == OperandProp && (r.Type.Kind == pg.KindString || r.Type.Kind == pg.KindEnum) {
		// `"the alps are tall" contains $m.label`: the literal holds the
		// property's value as a substring, as in the original (X contains Y
		// whichever side each is on).
		return &pred{p: &Predicate{Pos: fc.Pos, Left: Operand{Kind: OperandLiteral, Value: left.Text, Type: pg.Type{Kind: pg.KindString}}, Op: op, Right: r}, deps: []int{r.Var}}
	}
	if l.Kind == 0 || (isConst(l) && r.Kind == OperandProp) {
		if op == OpContains || op == OpStartsWith {
			if l.Kind == 0 {
				c.add(errorf(CodeTypeMismatch, fc.Pos, "%s needs the property on the left, as in $p.name %s \"x\"", op, op))
				return nil
			}
		} else {
			l, r = r, l
			left, right = right, left
			op = flip(op)
		}
	}
	lname := describeOperand(c, l, left)
	if l.Kind == OperandVar || r.Kind == OperandVar {
		if l.Kind != OperandVar || r.Kind != OperandVar || (op != OpEq && op != OpNe) {
			c.add(errorf(CodeTypeMismatch, fc.OpPos, "a whole variable can only be compared with another variable using = or !=, as in $a != $b; compare a property instead, as in $%s.name", firstVarName(left, right)))
			return nil
		}
		lv, rv := c.rp.Vars[l.Var], c.rp.Vars[r.Var]
		if lv.Kind != rv.Kind || lv.Node != rv.Node || lv.Edge != rv.Edge {
			c.add(errorf(CodeTypeMismatch, fc.OpPos, "$%s and $%s have different types and are never equal; compare variables of one type", left.Var, right.Var))
			return nil
		}
		return &pred{p: &Predicate{Pos: fc.Pos, Left: l, Op: op, Right: r}, deps: uniq(l.Var, r.Var)}
	}
	rt, ok := c.rightType(op, l.Type, fc.OpPos, lname)
	if !ok {
		return nil
	}
	if r.Kind == 0 {
		if right.Kind == ExprNull {
			c.add(errorf(CodeNull, right.Pos, "comparing with null never matches (NULL matches nothing); compare with a value"))
			return nil
		}
		right, rt = numberLiteral(right, rt)
		v, err := coerceLiteral(right, rt, false, lname)
		if err != nil {
			c.add(err)
			return nil
		}
		r = Operand{Kind: OperandLiteral, Value: v, Type: rt}
	} else {
		if r.Kind == OperandProp && r.Type.Kind == pg.KindBlob {
			c.add(errorf(CodeBlob, right.Pos, "a Blob cannot be compared; use another property"))
			return nil
		}
		if !sameClass(r.Type, rt) {
			hint := "compare with a " + rt.String() + " value, as in " + example(rt)
			if r.Kind == OperandParam {
				hint = "declare " + paramDecl(right.Var, rt)
			}
			c.add(errorf(CodeTypeMismatch, fc.OpPos, "%s is %s but %s is %s; %s", lname, l.Type, describeOperand(c, r, right), r.Type, hint))
			return nil
		}
		// A parameter compared with a property takes the property's type,
		// as a literal would (F32 width, enum membership).
		c.useParam(&r, rt, lname, right.Pos)
		if l.Kind == OperandParam && r.Kind == OperandProp && op == OpContains && l.Type.Kind == pg.KindList {
			// `$list contains $p.status`: each element takes the property's type.
			et := r.Type
			c.useParam(&l, pg.Type{Kind: pg.KindList, Elem: &et}, describeOperand(c, r, right), left.Pos)
		}
	}
	var deps []int
	for _, o := range []Operand{l, r} {
		if o.Kind == OperandProp || o.Kind == OperandVar {
			deps = append(deps, o.Var)
		}
	}
	return &pred{p: &Predicate{Pos: fc.Pos, Left: l, Op: op, Right: r}, deps: uniq(deps...)}
}

func firstVarName(a, b *Expr) string {
	if a.Kind == ExprVar {
		return a.Var
	}
	return b.Var
}

func uniq(xs ...int) []int {
	out := []int{}
	for _, x := range xs {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// sameOperand reports whether two operands read the same thing.
func sameOperand(a, b Operand) bool {
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case OperandProp:
		return a.Var == b.Var && a.Prop == b.Prop
	case OperandVar:
		return a.Var == b.Var
	case OperandParam:
		return a.Param == b.Param
	}
	return false
}

func (c *checker) returnClause(rb *ReadBody, sc *scope) {
	names := map[string]Pos{}
	hasAgg := false
	for _, it := range rb.Return {
		if it.Expr.Kind == ExprAggregate {
			hasAgg = true
		}
	}
	for _, it := range rb.Return {
		col := c.column(it.Expr, sc)
		if col == nil {
			continue
		}
		if it.Alias != "" {
			col.Name = it.Alias
		}
		if prev, dup := names[col.Name]; dup {
			c.add(errorf(CodeColumn, it.Pos, "column %q is already returned at %s; name this one with `as`, as in %s as %s_2", col.Name, prev, exprText(it.Expr), strings.ReplaceAll(col.Name, ".", "_")))
			continue
		}
		names[col.Name] = it.Pos
		if hasAgg && col.Kind != ColumnAggregate {
			if col.Kind == ColumnValue {
				c.add(errorf(CodeAggregateMix, it.Pos, "with an aggregate in return, the other items are the grouping keys and must be properties or variables; drop %s", exprText(it.Expr)))
				continue
			}
			col.Group = true
		}
		c.rp.Columns = append(c.rp.Columns, col)
	}
	c.rp.Grouped = hasAgg
}

func exprText(e *Expr) string {
	switch e.Kind {
	case ExprVar:
		return "$" + e.Var
	case ExprProp:
		return "$" + e.Var + "." + e.Prop
	case ExprAggregate:
		return e.Text + "(" + exprText(e.Arg) + ")"
	case ExprSearch:
		args := make([]string, len(e.Elems))
		for i, a := range e.Elems {
			args[i] = exprText(a)
		}
		return e.Text + "(" + strings.Join(args, ", ") + ")"
	case ExprString:
		return strconv.Quote(e.Text)
	case ExprNow:
		return "now()"
	case ExprIdent, ExprInt, ExprFloat:
		return e.Text
	case ExprBool:
		return strconv.FormatBool(e.Bool)
	}
	return "the value"
}

// column checks one return expression.
func (c *checker) column(e *Expr, sc *scope) *Column {
	switch e.Kind {
	case ExprAggregate:
		return c.aggregate(e, sc)
	case ExprIdent:
		c.add(errorf(CodeUnbound, e.Pos, "%q is a bare name; return a property through its variable, as in $p.%s", e.Text, e.Text))
		return nil
	case ExprNull:
		c.add(errorf(CodeNull, e.Pos, "returning null has no type; return a property or a value"))
		return nil
	case ExprSearch:
		s := c.score(e, sc)
		if s == nil {
			return nil
		}
		return &Column{Name: e.Text, Kind: ColumnScore, Score: s, Type: pg.Type{Kind: pg.KindF64}, Nullable: s.Fn == ScoreNearest}
	}
	o, ok := c.operand(e, sc, true)
	if !ok {
		return nil
	}
	switch o.Kind {
	case OperandProp:
		return &Column{Name: e.Var + "." + e.Prop, Kind: ColumnProp, Expr: o, Type: o.Type, Nullable: o.Nullable}
	case OperandVar:
		v := c.rp.Vars[o.Var]
		if v.Kind == VarEdge {
			c.add(errorf(CodeEdgeBinding, e.Pos, "edge variable $%s cannot be returned whole; return its properties, as in $%s.%s", e.Var, e.Var, firstOr(propNames(v.Edge.Properties), "prop")))
			return nil
		}
		return &Column{Name: e.Var, Kind: ColumnNode, Expr: o, Type: o.Type}
	case OperandParam:
		if o.Type.Kind == pg.KindBlob {
			c.add(errorf(CodeBlob, e.Pos, "$%s is a Blob and cannot be returned (as in the original); return another value", e.Var))
			return nil
		}
		return &Column{Name: e.Var, Kind: ColumnValue, Expr: o, Type: o.Type, Nullable: o.Nullable}
	case OperandNow:
		return &Column{Name: "now", Kind: ColumnValue, Expr: o, Type: o.Type}
	}
	t, ok := literalType(e)
	if !ok {
		c.add(errorf(CodeTypeMismatch, e.Pos, "cannot tell the type of this literal; return a non-empty list of one kind, or a scalar"))
		return nil
	}
	v, err := coerceLiteral(e, t, false, "the returned literal")
	if err != nil {
		c.add(err)
		return nil
	}
	return &Column{Name: "literal", Kind: ColumnValue, Expr: Operand{Kind: OperandLiteral, Value: v, Type: t}, Type: t}
}

func (c *checker) aggregate(e *Expr, sc *scope) *Column {
	fn := AggFunc(e.Text)
	arg := e.Arg
	if arg.Kind == ExprAggregate {
		c.add(errorf(CodeAggregateMix, arg.Pos, "aggregates cannot be nested; aggregate a property, as in %s($p.age)", fn))
		return nil
	}
	if arg.Kind != ExprVar && arg.Kind != ExprProp {
		c.add(errorf(CodeAggregateArg, arg.Pos, "%s() takes a variable or a property, as in %s($p) or %s($p.age)", fn, fn, fn))
		return nil
	}
	o, ok := c.operand(arg, sc, true)
	if !ok {
		return nil
	}
	if o.Kind == OperandParam {
		c.add(errorf(CodeAggregateArg, arg.Pos, "%s() takes a match variable or its property, not the parameter $%s", fn, arg.Var))
		return nil
	}
	col := &Column{Name: string(fn), Kind: ColumnAggregate, Agg: fn, Expr: o, Nullable: true}
	t := o.Type
	switch fn {
	case AggCount:
		col.Type, col.Nullable = pg.Type{Kind: pg.KindI64}, false
		return col
	case AggSum, AggAvg:
		if o.Kind != OperandProp || !t.Kind.Numeric() {
			c.add(errorf(CodeAggregateArg, arg.Pos, "%s() needs a numeric property but %s is %s; use count(%s), or %s a number property", fn, exprText(arg), aggArgType(o), exprText(arg), fn))
			return nil
		}
		switch {
		case fn == AggAvg || t.Kind.Float():
			col.Type = pg.Type{Kind: pg.KindF64}
		case t.Kind == pg.KindU32 || t.Kind == pg.KindU64:
			col.Type = pg.Type{Kind: pg.KindU64}
		default:
			col.Type = pg.Type{Kind: pg.KindI64}
		}
	case AggMin, AggMax:
		if o.Kind != OperandProp || !(t.Kind.Numeric() || t.Kind == pg.KindString || t.Kind == pg.KindEnum || t.Kind == pg.KindDate || t.Kind == pg.KindDateTime) {
			c.add(errorf(CodeAggregateArg, arg.Pos, "%s() needs a number, string or date property but %s is %s; use count(%s) instead", fn, exprText(arg), aggArgType(o), exprText(arg)))
			return nil
		}
		col.Type = t
	}
	return col
}

func aggArgType(o Operand) string {
	if o.Kind == OperandVar {
		return "a whole variable"
	}
	return o.Type.String()
}

func (c *checker) orderClause(rb *ReadBody, sc *scope) {
	rp := c.rp
	if rp.Columns == nil && len(c.errs) > 0 {
		return
	}
	aliases := map[string]int{}
	for i, col := range rp.Columns {
		aliases[col.Name] = i
	}
	for _, it := range rb.Order {
		key, ok := c.sortKey(it, sc, aliases)
		if ok {
			rp.Order = append(rp.Order, key)
			if key.Kind == SortScore && key.Score.Fn != ScoreRRF {
				// Equal relevance: the greater id first, which gives the
				// original's answers (its index returns ties that way).
				rp.Order = append(rp.Order, SortKey{Kind: SortID, Var: key.Score.Var, Desc: true})
			}
		}
	}
	// Tie-breakers make the order total.
	if rp.Grouped {
		for i, col := range rp.Columns {
			if col.Group && !hasKey(rp.Order, SortKey{Kind: SortColumn, Column: i}) {
				rp.Order = append(rp.Order, SortKey{Kind: SortColumn, Column: i})
			}
		}
		return
	}
	for _, v := range rp.Vars {
		if !v.Local {
			rp.Order = append(rp.Order, SortKey{Kind: SortID, Var: v.Slot})
		}
	}
}

func hasKey(keys []SortKey, k SortKey) bool {
	for _, x := range keys {
		if x.Kind == k.Kind && x.Column == k.Column {
			return true
		}
	}
	return false
}

func (c *checker) sortKey(it *OrderItem, sc *scope, aliases map[string]int) (SortKey, bool) {
	rp := c.rp
	e := it.Expr
	if e.Kind == ExprIdent {
		i, ok := aliases[e.Text]
		if !ok {
			names := make([]string, 0, len(rp.Columns))
			for _, col := range rp.Columns {
				names = append(names, col.Name)
			}
			c.add(errorf(CodeColumn, e.Pos, "order by %q: no such returned column; %s", e.Text, suggest(e.Text, names)))
			return SortKey{}, false
		}
		return c.columnKey(i, it)
	}
	var target Operand
	var agg AggFunc
	if e.Kind == ExprAggregate {
		agg = AggFunc(e.Text)
		if e.Arg.Kind != ExprVar && e.Arg.Kind != ExprProp {
			c.add(errorf(CodeAggregateArg, e.Arg.Pos, "%s() takes a variable or a property", e.Text))
			return SortKey{}, false
		}
		o, ok := c.operand(e.Arg, sc, true)
		if !ok {
			return SortKey{}, false
		}
		target = o
	} else if e.Kind == ExprSearch {
		s := c.score(e, sc)
		if s == nil {
			return SortKey{}, false
		}
		if rp.Grouped {
			c.add(errorf(CodeAggregateMix, e.Pos, "%s() ranks rows; it cannot order an aggregated result", e.Text))
			return SortKey{}, false
		}
		if len(rp.Order) == 0 && rp.Rank == nil {
			rp.Rank = s
		}
		return SortKey{Kind: SortScore, Score: s, Desc: s.Fn != ScoreNearest}, true
	} else if e.Kind == ExprProp || e.Kind == ExprVar {
		o, ok := c.operand(e, sc, true)
		if !ok {
			return SortKey{}, false
		}
		target = o
	} else {
		c.add(errorf(CodeColumn, e.Pos, "order by a property ($p.age), a variable or a returned column name"))
		return SortKey{}, false
	}
	for i, col := range rp.Columns {
		if col.Agg == agg && sameOperand(col.Expr, target) {
			return c.columnKey(i, it)
		}
	}
	if rp.Grouped || agg != "" {
		c.add(errorf(CodeAggregateMix, e.Pos, "with aggregates, order by a returned column; add %s to return (with `as name`) and order by that name", exprText(e)))
		return SortKey{}, false
	}
	switch target.Kind {
	case OperandProp:
		if !orderable(target.Type) {
			c.add(errorf(CodeTypeMismatch, e.Pos, "%s is %s and has no order; order by a number, string, bool or date property", exprText(e), target.Type))
			return SortKey{}, false
		}
		return SortKey{Kind: SortProp, Var: target.Var, Prop: target.Prop, Desc: it.Desc}, true
	case OperandVar:
		return SortKey{Kind: SortID, Var: target.Var, Desc: it.Desc}, true
	}
	c.add(errorf(CodeColumn, e.Pos, "ordering by the parameter $%s does not change the order; order by a property", e.Var))
	return SortKey{}, false
}

func orderable(t pg.Type) bool {
	switch t.Kind {
	case pg.KindList, pg.KindVector, pg.KindBlob:
		return false
	}
	return true
}

func (c *checker) columnKey(i int, it *OrderItem) (SortKey, bool) {
	col := c.rp.Columns[i]
	if !orderable(col.Type) {
		c.add(errorf(CodeTypeMismatch, it.Pos, "column %q is %s and has no order; order by a scalar column", col.Name, col.Type))
		return SortKey{}, false
	}
	return SortKey{Kind: SortColumn, Column: i, Desc: it.Desc}, true
}

func (c *checker) limitClause(e *Expr) {
	switch e.Kind {
	case ExprInt:
		v, err := strconv.ParseInt(e.Text, 10, 64)
		if err != nil || v < 0 {
			c.add(errorf(CodeLimit, e.Pos, "limit %s is out of range; use a non-negative integer, as in limit 10", e.Text))
			return
		}
		c.rp.Limit = &Operand{Kind: OperandLiteral, Value: v, Type: pg.Type{Kind: pg.KindI64}}
	case ExprVar:
		p, ok := c.params[e.Var]
		if !ok {
			c.add(errorf(CodeUnbound, e.Pos, "$%s is not a declared parameter; declare it, as in ($%s: I64), or write limit 10", e.Var, e.Var))
			return
		}
		if !p.Type.Kind.Integer() || p.Nullable {
			c.add(errorf(CodeLimit, e.Pos, "limit takes an integer but $%s is %s; declare $%s: I64", e.Var, paramTypeString(p), e.Var))
			return
		}
		c.rp.Limit = &Operand{Kind: OperandParam, Param: e.Var, Type: p.Type}
	}
}

func paramTypeString(p *Param) string {
	s := p.Type.String()
	if p.Nullable {
		s += "?"
	}
	return s
}
