package query

import (
	"slices"

	"github.com/omnigraph-go/omnigraph/lang/gq"
	"github.com/omnigraph-go/omnigraph/lang/pg"
)

// neededColumns lists, per node type a plan reads, the columns it can
// touch: every property a predicate, output column, aggregate or sort key
// reads, and the id unless the plan never needs a node's identity (needsID). A whole-node output column needs every column: its
// type maps to nil, as does any type the walk is unsure of. A full load
// of a node table reads only these columns (table column projection);
// rowStore.value of a column that was not loaded would read NULL, so the
// walk must see every property read of execute and project.
func neededColumns(rp *gq.ReadPlan) map[string][]string {
	sets := map[string]map[string]bool{}
	all := map[string]bool{}
	for _, v := range rp.Vars {
		if v.Kind == gq.VarNode && v.Node != nil {
			sets[v.Node.Name] = map[string]bool{}
		}
	}
	prop := func(slot int, p *pg.Property) {
		if slot < 0 || slot >= len(rp.Vars) || p == nil {
			return
		}
		if v := rp.Vars[slot]; v.Kind == gq.VarNode && v.Node != nil {
			sets[v.Node.Name][p.Name] = true
		}
	}
	whole := func(slot int) {
		if slot >= 0 && slot < len(rp.Vars) && rp.Vars[slot].Kind == gq.VarNode && rp.Vars[slot].Node != nil {
			all[rp.Vars[slot].Node.Name] = true
		}
	}
	unsure := false // a plan shape this walk does not know: load everything
	operand := func(o gq.Operand) {
		switch o.Kind {
		case gq.OperandProp:
			prop(o.Var, o.Prop)
		case gq.OperandLiteral, gq.OperandParam, gq.OperandNow, gq.OperandVar, 0:
		default:
			unsure = true
		}
	}
	pred := func(p *gq.Predicate) {
		if p != nil {
			operand(p.Left)
			operand(p.Right)
		}
	}
	var steps func([]gq.Step)
	steps = func(ss []gq.Step) {
		for _, st := range ss {
			switch st := st.(type) {
			case *gq.ScanStep:
				for _, p := range st.Where {
					pred(p)
				}
			case *gq.FilterStep:
				pred(st.Pred)
			case *gq.AntiJoinStep:
				steps(st.Steps)
			case *gq.ExpandStep:
			default:
				unsure = true
			}
		}
	}
	steps(rp.Steps)
	for _, c := range rp.Columns {
		switch c.Kind {
		case gq.ColumnNode:
			whole(c.Expr.Var)
		case gq.ColumnProp, gq.ColumnValue, gq.ColumnAggregate:
			operand(c.Expr)
		default:
			unsure = true
		}
	}
	for _, k := range rp.Order {
		switch k.Kind {
		case gq.SortProp:
			prop(k.Var, k.Prop)
		case gq.SortColumn, gq.SortID:
		default:
			unsure = true
		}
	}
	if unsure {
		for t := range sets {
			all[t] = true
		}
	}
	id := needsID(rp)
	out := make(map[string][]string, len(sets))
	for t, set := range sets {
		if id {
			set[pg.ColID] = true
		}
		if all[t] {
			out[t] = nil
			continue
		}
		cols := make([]string, 0, len(set))
		for c := range set {
			cols = append(cols, c)
		}
		slices.Sort(cols)
		out[t] = cols
	}
	return out
}

// needsID reports whether executing rp can read a node's id: a traversal,
// an anti-join, a key lookup, a text predicate (index hits are ids), a
// variable compared or returned as a value, a whole node, a sort by id or
// a plan shape this walk does not know. A plan that only scans, filters on
// properties, and returns, groups, counts or sorts by properties does not:
// its node tables load without the id column (for the first filtered
// aggregate in a process, a third of the decoding), and its rows are
// counted by their binding, not their id. One rule for every type keeps it
// simple; a plan reading ids reads them for every type.
func needsID(rp *gq.ReadPlan) bool {
	operand := func(o gq.Operand) bool {
		switch o.Kind {
		case gq.OperandProp, gq.OperandLiteral, gq.OperandParam, gq.OperandNow, 0:
			return false
		}
		return true // a variable (its id) or an operand kind unknown here
	}
	pred := func(p *gq.Predicate) bool {
		return p != nil && (p.Op.TextOp() || operand(p.Left) || operand(p.Right))
	}
	for _, st := range rp.Steps {
		switch st := st.(type) {
		case *gq.ScanStep:
			if st.Key != nil {
				return true
			}
			for _, p := range st.Where {
				if pred(p) {
					return true
				}
			}
		case *gq.FilterStep:
			if pred(st.Pred) {
				return true
			}
		default: // expansions, anti-joins, anything new
			return true
		}
	}
	for _, c := range rp.Columns {
		switch {
		case c.Kind == gq.ColumnAggregate && c.Agg == gq.AggCount && c.Expr.Kind == gq.OperandVar:
			// count($x) counts bindings (exec.go group)
		case c.Kind == gq.ColumnProp || c.Kind == gq.ColumnValue || c.Kind == gq.ColumnAggregate:
			if operand(c.Expr) {
				return true
			}
		default:
			return true
		}
	}
	for _, k := range rp.Order {
		if k.Kind != gq.SortProp && k.Kind != gq.SortColumn {
			return true
		}
	}
	return false
}
