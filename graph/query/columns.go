package query

import (
	"slices"

	"github.com/omnigraph-go/omnigraph/lang/gq"
	"github.com/omnigraph-go/omnigraph/lang/pg"
)

// neededColumns lists, per node type a plan reads, the columns it can
// touch: the id, and every property a predicate, output column, aggregate
// or sort key reads. A whole-node output column needs every column: its
// type maps to nil, as does any type the walk is unsure of. A full load
// of a node table reads only these columns (table column projection);
// rowStore.value of a column that was not loaded would read NULL, so the
// walk must see every property read of execute and project.
func neededColumns(rp *gq.ReadPlan) map[string][]string {
	sets := map[string]map[string]bool{}
	all := map[string]bool{}
	for _, v := range rp.Vars {
		if v.Kind == gq.VarNode && v.Node != nil {
			sets[v.Node.Name] = map[string]bool{pg.ColID: true}
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
	out := make(map[string][]string, len(sets))
	for t, set := range sets {
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
