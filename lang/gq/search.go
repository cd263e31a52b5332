package gq

import (
	"strconv"

	"github.com/omnigraph-go/omnigraph/lang/pg"
)

// Text-match operators of a Predicate: search($x.f, q), fuzzy($x.f, q[, e])
// and match_text($x.f, q), written alone as a match clause. Left is the
// String node property, Right the query text (a String literal or
// parameter), Edits fuzzy's maximum edits. Each holds when some term of the
// analysed query text (text) is a term of the analysed property value
// (within Edits edits for fuzzy); a NULL value never matches. As in the
// original, match_text matches like search (its phrase form is not
// implemented there either).
const (
	OpSearch    CmpOp = "search"
	OpFuzzy     CmpOp = "fuzzy"
	OpMatchText CmpOp = "match_text"
)

// DefaultFuzzyEdits is fuzzy's maximum edits when none is given (the original's).
const DefaultFuzzyEdits = 2

// TextOp reports whether op is a text-match operator.
func (op CmpOp) TextOp() bool { return op == OpSearch || op == OpFuzzy || op == OpMatchText }

// ScoreFunc is a ranking function.
type ScoreFunc string

// Ranking functions.
const (
	ScoreNearest ScoreFunc = "nearest" // L2 (Euclidean) distance of Var.Prop to Query; smaller is nearer
	ScoreBM25    ScoreFunc = "bm25"    // BM25 of Var.Prop for Query over the snapshot's rows of Var's type
	ScoreRRF     ScoreFunc = "rrf"     // Σ 1/(K + rank) over the rankings A and B
)

// DefaultRRFK is rrf's k when none is given.
const DefaultRRFK = 60

// Score is a ranking function call: nearest($x.v, q), bm25($x.f, q) or
// rrf(a, b[, k]). Its value in a row is an F64 (NULL for nearest over a
// NULL vector).
type Score struct {
	Fn    ScoreFunc
	Var   int          // nearest, bm25
	Prop  *pg.Property // nearest: a Vector property; bm25: a String one
	Query Operand      // nearest: a Vector or String constant; bm25: a String one
	A, B  *Score       // rrf: the two rankings (nearest or bm25) of one variable; Var is theirs
	K     Operand      // rrf: k (Kind 0: DefaultRRFK)
}

// textPred checks a bare search(…), fuzzy(…) or match_text(…) match clause.
func (c *checker) textPred(e *Expr, sc *scope) *pred {
	op := CmpOp(e.Text)
	if !op.TextOp() {
		c.add(errorf(CodeTypeMismatch, e.Pos, "%s() ranks rows and belongs in order or return, as in order { %s(...) } limit 10; filter with search(), fuzzy() or match_text()", e.Text, e.Text))
		return nil
	}
	maxArgs := 2
	if op == OpFuzzy {
		maxArgs = 3
	}
	if len(e.Elems) < 2 || len(e.Elems) > maxArgs {
		c.add(errorf(CodeSyntax, e.Pos, "%s() takes a String property and the query text, as in %s($d.title, $q)%s", e.Text, e.Text, map[bool]string{true: "; fuzzy also takes the maximum edits, as in fuzzy($d.title, $q, 2)"}[op == OpFuzzy]))
		return nil
	}
	field, ok := c.textField(e, e.Elems[0], sc)
	if !ok {
		return nil
	}
	q, ok := c.stringConst(e, e.Elems[1], sc)
	if !ok {
		return nil
	}
	p := &Predicate{Pos: e.Pos, Left: field, Op: op, Right: q}
	if len(e.Elems) == 3 {
		ed, ok := c.intConst(e, e.Elems[2], sc, "the maximum edits")
		if !ok {
			return nil
		}
		p.Edits = &ed
	}
	return &pred{p: p, deps: []int{field.Var}}
}

// textField checks the searched property: a String property of a node variable.
func (c *checker) textField(call, e *Expr, sc *scope) (Operand, bool) {
	if e.Kind != ExprProp {
		c.add(errorf(CodeTypeMismatch, e.Pos, "the first argument of %s() is a String property, as in %s($d.title, $q)", call.Text, call.Text))
		return Operand{}, false
	}
	o, ok := c.operand(e, sc, true)
	if !ok {
		return Operand{}, false
	}
	if c.rp.Vars[o.Var].Kind == VarEdge {
		c.add(errorf(CodeEdgeBinding, e.Pos, "%s() searches node properties; $%s is an edge", call.Text, e.Var))
		return Operand{}, false
	}
	if o.Type.Kind != pg.KindString {
		c.add(errorf(CodeTypeMismatch, e.Pos, "%s() needs a String property but $%s.%s is %s", call.Text, e.Var, e.Prop, o.Type))
		return Operand{}, false
	}
	return o, true
}

// stringConst checks a query text: a String literal or parameter.
func (c *checker) stringConst(call, e *Expr, sc *scope) (Operand, bool) {
	if e.Kind == ExprString {
		return Operand{Kind: OperandLiteral, Value: e.Text, Type: pg.Type{Kind: pg.KindString}}, true
	}
	if e.Kind == ExprVar {
		if _, bound := sc.lookup(e.Var); !bound {
			if p, ok := c.params[e.Var]; ok {
				if p.Type.Kind != pg.KindString {
					c.add(errorf(CodeTypeMismatch, e.Pos, "the query text of %s() is a String but $%s is %s; declare $%s: String", call.Text, e.Var, p.Type, e.Var))
					return Operand{}, false
				}
				return Operand{Kind: OperandParam, Param: e.Var, Type: p.Type, Nullable: p.Nullable}, true
			}
		}
	}
	c.add(errorf(CodeTypeMismatch, e.Pos, "the query text of %s() is a String literal or parameter, as in %s($d.title, $q)", call.Text, call.Text))
	return Operand{}, false
}

// intConst checks an integer literal or parameter (fuzzy's edits, rrf's k).
func (c *checker) intConst(call, e *Expr, sc *scope, what string) (Operand, bool) {
	if e.Kind == ExprInt {
		v, err := strconv.ParseInt(e.Text, 10, 64)
		if err == nil && v >= 0 {
			return Operand{Kind: OperandLiteral, Value: v, Type: pg.Type{Kind: pg.KindI64}}, true
		}
	}
	if e.Kind == ExprVar {
		if p, ok := c.params[e.Var]; ok && p.Type.Kind.Integer() {
			return Operand{Kind: OperandParam, Param: e.Var, Type: p.Type, Nullable: p.Nullable}, true
		}
	}
	c.add(errorf(CodeTypeMismatch, e.Pos, "%s of %s() is a non-negative integer literal or an integer parameter", what, call.Text))
	return Operand{}, false
}

// score checks nearest(…), bm25(…) or rrf(…) in order or return.
func (c *checker) score(e *Expr, sc *scope) *Score {
	switch ScoreFunc(e.Text) {
	case ScoreNearest:
		if len(e.Elems) != 2 {
			c.add(errorf(CodeSyntax, e.Pos, "nearest() takes a Vector property and the query, as in nearest($d.embedding, $q)"))
			return nil
		}
		f := e.Elems[0]
		if f.Kind != ExprProp {
			c.add(errorf(CodeHops, f.Pos, "the first argument of nearest() is a Vector property, as in nearest($d.embedding, $q)"))
			return nil
		}
		o, ok := c.operand(f, sc, true)
		if !ok {
			return nil
		}
		if c.rp.Vars[o.Var].Kind == VarEdge {
			c.add(errorf(CodeEdgeBinding, f.Pos, "nearest() ranks node properties; $%s is an edge", f.Var))
			return nil
		}
		if o.Type.Kind != pg.KindVector {
			c.add(errorf(CodeHops, f.Pos, "nearest() needs a Vector property but $%s.%s is %s", f.Var, f.Prop, o.Type))
			return nil
		}
		s := &Score{Fn: ScoreNearest, Var: o.Var, Prop: o.Prop}
		q := e.Elems[1]
		switch {
		case q.Kind == ExprString:
			s.Query = Operand{Kind: OperandLiteral, Value: q.Text, Type: pg.Type{Kind: pg.KindString}}
		case q.Kind == ExprVar && c.params[q.Var] != nil:
			p := c.params[q.Var]
			switch {
			case p.Type.Kind == pg.KindString:
			case p.Type.Kind == pg.KindVector && p.Type.Dim == o.Type.Dim:
			default:
				c.add(errorf(CodeHops, q.Pos, "nearest() on $%s.%s (%s) takes a %s or a String to embed, but $%s is %s", f.Var, f.Prop, o.Type, o.Type, q.Var, p.Type))
				return nil
			}
			s.Query = Operand{Kind: OperandParam, Param: q.Var, Type: p.Type, Nullable: p.Nullable}
		case q.Kind == ExprList:
			v := make([]float32, 0, len(q.Elems))
			for _, el := range q.Elems {
				x, err := strconv.ParseFloat(el.Text, 64)
				if (el.Kind != ExprInt && el.Kind != ExprFloat) || err != nil {
					c.add(errorf(CodeHops, el.Pos, "a vector literal holds numbers"))
					return nil
				}
				v = append(v, float32(x))
			}
			if len(v) != o.Type.Dim {
				c.add(errorf(CodeHops, q.Pos, "$%s.%s is %s but the vector has %d numbers", f.Var, f.Prop, o.Type, len(v)))
				return nil
			}
			s.Query = Operand{Kind: OperandLiteral, Value: v, Type: o.Type}
		default:
			c.add(errorf(CodeHops, q.Pos, "the query of nearest() is a %s parameter, a vector literal or a String (literal or parameter) to embed", o.Type))
			return nil
		}
		if s.Query.Type.Kind == pg.KindString && o.Prop.Embed == nil {
			c.add(errorf(CodeHops, q.Pos, "nearest() with a text query embeds it through @embed, but $%s.%s has no @embed(\"source\"); pass a %s", f.Var, f.Prop, o.Type))
			return nil
		}
		return s
	case ScoreBM25:
		if len(e.Elems) != 2 {
			c.add(errorf(CodeSyntax, e.Pos, "bm25() takes a String property and the query text, as in bm25($d.title, $q)"))
			return nil
		}
		o, ok := c.textField(e, e.Elems[0], sc)
		if !ok {
			return nil
		}
		q, ok := c.stringConst(e, e.Elems[1], sc)
		if !ok {
			return nil
		}
		return &Score{Fn: ScoreBM25, Var: o.Var, Prop: o.Prop, Query: q}
	case ScoreRRF:
		if len(e.Elems) < 2 || len(e.Elems) > 3 {
			c.add(errorf(CodeRRF, e.Pos, "rrf() fuses two rankings, as in rrf(nearest($d.v, $q), bm25($d.title, $t)[, 60])"))
			return nil
		}
		s := &Score{Fn: ScoreRRF}
		for i, arg := range e.Elems[:2] {
			if arg.Kind != ExprSearch || (arg.Text != string(ScoreNearest) && arg.Text != string(ScoreBM25)) {
				c.add(errorf(CodeRRF, arg.Pos, "each ranking of rrf() is nearest(...) or bm25(...)"))
				return nil
			}
			r := c.score(arg, sc)
			if r == nil {
				return nil
			}
			if i == 0 {
				s.A = r
			} else {
				s.B = r
			}
		}
		if s.A.Var != s.B.Var {
			c.add(errorf(CodeRRF, e.Pos, "both rankings of rrf() rank the same variable; $%s and $%s differ", c.rp.Vars[s.A.Var].Name, c.rp.Vars[s.B.Var].Name))
			return nil
		}
		s.Var = s.A.Var
		if len(e.Elems) == 3 {
			k, ok := c.intConst(e, e.Elems[2], sc, "k")
			if !ok {
				return nil
			}
			if k.Kind == OperandLiteral && k.Value.(int64) <= 0 {
				c.add(errorf(CodeRRF, e.Elems[2].Pos, "rrf()'s k must be greater than 0"))
				return nil
			}
			s.K = k
		}
		return s
	}
	c.add(errorf(CodeTypeMismatch, e.Pos, "%s() is a match filter; write it alone as a match clause, as in match { $d: Doc  %s($d.title, $q) }", e.Text, e.Text))
	return nil
}

// checkRanked enforces the limit rule: ordering by nearest() or rrf()
// needs a limit (T17, T21), also through the name of a returned rrf()
// column (T21, as the original's type check); and, as in the original, an
// order by nearest() cannot also order by a returned column's name (T18).
func (c *checker) checkRanked(rb *ReadBody) {
	if c.rp == nil {
		return
	}
	if rb.Limit == nil {
		for _, it := range rb.Order {
			if it.Expr.Kind != ExprIdent {
				continue
			}
			for _, col := range c.rp.Columns {
				if col.Name == it.Expr.Text && col.Score != nil && col.Score.Fn == ScoreRRF {
					c.add(errorf(CodeRRF, it.Pos, "ordering by %q, an rrf() column, needs a limit: rrf() fuses the best rows of two rankings, so say how many, as in limit 10", col.Name))
					return
				}
			}
		}
	}
	hasNearest := false
	for _, it := range rb.Order {
		if it.Expr.Kind == ExprSearch && it.Expr.Text == string(ScoreNearest) {
			hasNearest = true
		}
	}
	for _, it := range rb.Order {
		if hasNearest && it.Expr.Kind == ExprIdent {
			c.add(errorf(CodeColumn, it.Pos, "an order by nearest() cannot also order by the column name %q; order by the property itself, as in $x.prop", it.Expr.Text))
			return
		}
	}
	if c.rp.Rank == nil || rb.Limit != nil {
		return
	}
	switch c.rp.Rank.Fn {
	case ScoreNearest:
		c.add(errorf(CodeLimit, rb.Order[0].Pos, "ordering by nearest() needs a limit, as in limit 10"))
	case ScoreRRF:
		c.add(errorf(CodeRRF, rb.Order[0].Pos, "ordering by rrf() needs a limit, as in limit 10"))
	}
}

// IntValue reads an integer constant's value (fuzzy's edits, rrf's k).
func IntValue(v any) (int64, bool) { return limitValue(v) }
