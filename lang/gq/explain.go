package gq

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"github.com/omnigraph-go/omnigraph/lang/pg"
)

// String renders the plan as indented text, one step per line (the format
// of `explain`). The rendering is stable and tests compare it verbatim.
func (p *Plan) String() string {
	var b strings.Builder
	params := make([]string, len(p.Params))
	for i, pr := range p.Params {
		params[i] = "$" + pr.Name + ": " + paramTypeString(pr)
	}
	fmt.Fprintf(&b, "query %s(%s)\n", p.Name, strings.Join(params, ", "))
	if p.Read != nil {
		p.Read.write(&b, nil)
	}
	if p.Mutation != nil {
		p.Mutation.write(&b)
	}
	return b.String()
}

func (rp *ReadPlan) varName(slot int) string {
	if slot < 0 || slot >= len(rp.Vars) {
		return "$?"
	}
	v := rp.Vars[slot]
	if v.Name == "_" {
		return "$_" + strconv.Itoa(slot)
	}
	return "$" + v.Name
}

// Explain renders the plan as String does, with the estimate of each step
// at the end of its line and a summary line (the format of `query
// --explain`). e must be EstimateRead's estimate of this plan.
func (p *Plan) Explain(e *Estimate) string {
	if p.Read == nil || e == nil {
		return p.String()
	}
	var b strings.Builder
	params := make([]string, len(p.Params))
	for i, pr := range p.Params {
		params[i] = "$" + pr.Name + ": " + paramTypeString(pr)
	}
	fmt.Fprintf(&b, "query %s(%s)\n", p.Name, strings.Join(params, ", "))
	notes := map[Step]string{}
	for _, se := range e.Steps {
		notes[se.Step] = stepNote(se)
	}
	p.Read.write(&b, notes)
	fmt.Fprintf(&b, "estimate: %d output rows, %d rows produced in all, about %d bytes materialised\n", e.Output, e.Rows, e.Bytes)
	return b.String()
}

// stepNote is the estimate of one step as explain prints it.
func stepNote(se StepEstimate) string {
	note := fmt.Sprintf("  -- est. %d rows", se.Rows)
	switch se.Step.(type) {
	case *ScanStep:
		if se.PerInput > 0 && se.Rows > sat(se.PerInput) {
			note += fmt.Sprintf(" (%s per input row: a cross product)", factorText(se.PerInput))
		}
	case *ExpandStep:
		note += fmt.Sprintf(" (%s per input row", factorText(se.PerInput))
		if se.MaxDegree > 0 {
			note += fmt.Sprintf(", max degree %d", se.MaxDegree)
		}
		note += ")"
	case *FilterStep:
		note += fmt.Sprintf(" (keeps %s)", factorText(se.PerInput))
	}
	return note
}

func factorText(f float64) string {
	if f == float64(int64(f)) && f < 1e15 {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', 3, 64)
}

func (rp *ReadPlan) write(b *strings.Builder, notes map[Step]string) {
	b.WriteString("read\n")
	rp.writeSteps(b, rp.Steps, "  ", notes)
	for _, col := range rp.Columns {
		tag := ""
		if col.Group {
			tag = " group"
		}
		val := rp.operandText(col.Expr)
		if col.Kind == ColumnAggregate {
			val = string(col.Agg) + "(" + val + ")"
		}
		if col.Kind == ColumnScore {
			val = rp.scoreText(col.Score)
		}
		typ := col.Type.String() + nullMark(col.Nullable)
		if col.Kind == ColumnNode {
			typ = "node " + rp.Vars[col.Expr.Var].Node.Name
		}
		fmt.Fprintf(b, "  column %s %s = %s%s\n", col.Name, typ, val, tag)
	}
	var keys []string
	for _, k := range rp.Order {
		var s string
		switch k.Kind {
		case SortColumn:
			s = rp.Columns[k.Column].Name
		case SortProp:
			s = rp.varName(k.Var) + "." + k.Prop.Name
		case SortID:
			s = "id(" + rp.varName(k.Var) + ")"
		case SortScore:
			s = rp.scoreText(k.Score)
		}
		if k.Desc {
			s += " desc"
		}
		keys = append(keys, s)
	}
	if len(keys) > 0 {
		fmt.Fprintf(b, "  order %s\n", strings.Join(keys, ", "))
	}
	if rp.Limit != nil {
		fmt.Fprintf(b, "  limit %s\n", rp.operandText(*rp.Limit))
	}
}

func nullMark(n bool) string {
	if n {
		return "?"
	}
	return ""
}

func (rp *ReadPlan) writeSteps(b *strings.Builder, steps []Step, ind string, notes map[Step]string) {
	for _, s := range steps {
		b.WriteString(ind + rp.StepString(s) + notes[s] + "\n")
		if aj, ok := s.(*AntiJoinStep); ok {
			rp.writeSteps(b, aj.Steps, ind+"  ", notes)
		}
	}
}

// StepString renders one step as its line of String (an anti-join's line
// only, without its sub-plan).
func (rp *ReadPlan) StepString(s Step) string {
	var b strings.Builder
	switch s := s.(type) {
	case *ScanStep:
		fmt.Fprintf(&b, "scan %s %s", rp.varName(s.Var), s.Node.Name)
		if s.Key != nil {
			ks := make([]string, len(s.Key))
			for i, k := range s.Key {
				ks[i] = rp.operandText(k)
			}
			fmt.Fprintf(&b, " key(%s)", strings.Join(ks, ", "))
		}
		for i, p := range s.Where {
			sep := " where "
			if i > 0 {
				sep = " and "
			}
			b.WriteString(sep + rp.predText(p))
		}
	case *ExpandStep:
		edge := s.Edge.Name
		if s.EdgeVar >= 0 {
			edge = rp.varName(s.EdgeVar) + ":" + edge
		}
		if s.MinHops != 1 || s.MaxHops != 1 {
			edge += fmt.Sprintf("{%d,%d}", s.MinHops, s.MaxHops)
		}
		bound := ""
		if s.ToBound {
			bound = " (bound)"
		}
		fmt.Fprintf(&b, "expand %s %s %s -> %s %s%s", rp.varName(s.From), s.Dir, edge, rp.varName(s.To), s.ToNode.Name, bound)
	case *FilterStep:
		fmt.Fprintf(&b, "filter %s", rp.predText(s.Pred))
	case *AntiJoinStep:
		outer := make([]string, len(s.Outer))
		for i, o := range s.Outer {
			outer[i] = rp.varName(o)
		}
		fmt.Fprintf(&b, "antijoin on %s", strings.Join(outer, ", "))
	}
	return b.String()
}

func (rp *ReadPlan) predText(p *Predicate) string {
	if p.Op.TextOp() {
		args := rp.operandText(p.Left) + ", " + rp.operandText(p.Right)
		if p.Edits != nil {
			args += ", " + rp.operandText(*p.Edits)
		}
		return string(p.Op) + "(" + args + ")"
	}
	return rp.operandText(p.Left) + " " + string(p.Op) + " " + rp.operandText(p.Right)
}

func (rp *ReadPlan) operandText(o Operand) string {
	switch o.Kind {
	case OperandProp:
		return rp.varName(o.Var) + "." + o.Prop.Name
	case OperandVar:
		return rp.varName(o.Var)
	}
	return constText(o)
}

func constText(o Operand) string {
	switch o.Kind {
	case OperandParam:
		return "$" + o.Param
	case OperandNow:
		return "now()"
	case OperandLiteral:
		return literalText(o.Type, o.Value)
	}
	return "?"
}

func literalText(t pg.Type, v any) string {
	if v == nil {
		return "null"
	}
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case []byte:
		return strconv.Quote("base64:" + base64.StdEncoding.EncodeToString(x))
	case int32:
		if t.Kind == pg.KindDate {
			return "date(" + strconv.Quote(pg.FormatDate(x)) + ")"
		}
	case int64:
		if t.Kind == pg.KindDateTime {
			return "datetime(" + strconv.Quote(pg.FormatDateTime(x)) + ")"
		}
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			var et pg.Type
			if t.Elem != nil {
				et = *t.Elem
			}
			parts[i] = literalText(et, e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return fmt.Sprint(v)
}

func (mp *MutationPlan) write(b *strings.Builder) {
	if mp.Destructive {
		b.WriteString("mutation destructive\n")
	} else {
		b.WriteString("mutation constructive\n")
	}
	for _, s := range mp.Statements {
		target := ""
		if s.Node != nil {
			target = s.Node.Name
		} else {
			target = s.Edge.Name
		}
		fmt.Fprintf(b, "  %s %s", s.Kind, target)
		if s.Upsert {
			b.WriteString(" upsert")
		}
		var parts []string
		if s.From != nil {
			parts = append(parts, "from: "+constText(*s.From))
		}
		if s.To != nil {
			parts = append(parts, "to: "+constText(*s.To))
		}
		for _, a := range s.Values {
			parts = append(parts, a.Prop.Name+": "+constText(a.Value))
		}
		if len(parts) > 0 {
			b.WriteString(" {" + strings.Join(parts, ", ") + "}")
		}
		if s.Where != nil {
			fmt.Fprintf(b, " where %s %s %s", s.Where.Column, s.Where.Op, constText(s.Where.Value))
		}
		b.WriteString("\n")
	}
}

// scoreText renders a ranking function call.
func (rp *ReadPlan) scoreText(s *Score) string {
	if s.Fn == ScoreRRF {
		k := strconv.Itoa(DefaultRRFK)
		if s.K.Kind != 0 {
			k = rp.operandText(s.K)
		}
		return "rrf(" + rp.scoreText(s.A) + ", " + rp.scoreText(s.B) + ", " + k + ")"
	}
	q := rp.operandText(s.Query)
	if v, ok := s.Query.Value.([]float32); ok && s.Query.Kind == OperandLiteral {
		q = fmt.Sprint(v)
	}
	return string(s.Fn) + "(" + rp.varName(s.Var) + "." + s.Prop.Name + ", " + q + ")"
}
