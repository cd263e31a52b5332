package gq

import (
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/omnigraph-go/omnigraph/lang/pg"
	"github.com/omnigraph-go/omnigraph/text"
)

// MaxHops bounds the max of a multi-hop traversal.
const MaxHops = 32

// reservedParam is injected for now() by the original system; we keep the
// name reserved so files stay portable.
const reservedParam = "__nanograph_now"

// Compile parses src and checks every query in it against cat.
func Compile(src string, cat *pg.Catalog) (*Program, error) {
	f, err := Parse(src)
	if err != nil {
		return nil, err
	}
	return Check(f, cat)
}

// CompileQuery parses src, picks the query name (name may be "" when src
// holds one query) and checks only that query against cat. The file's other
// queries must parse but are not type-checked, so an error in one of them
// does not stop this one from running.
func CompileQuery(src, name string, cat *pg.Catalog) (*Plan, error) {
	f, err := Parse(src)
	if err != nil {
		return nil, err
	}
	q, err := f.Query(name)
	if err != nil {
		return nil, err
	}
	return CheckQuery(q, cat)
}

// Check type-checks every query of f against cat and plans it. All errors
// found are returned together as an ErrorList, in source order.
func Check(f *File, cat *pg.Catalog) (*Program, error) {
	prog := &Program{}
	var errs ErrorList
	for _, q := range f.Queries {
		pl, err := CheckQuery(q, cat)
		if err != nil {
			if l, ok := err.(ErrorList); ok {
				errs = append(errs, l...)
			} else {
				return nil, err
			}
			continue
		}
		prog.Plans = append(prog.Plans, pl)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return prog, nil
}

// CheckQuery type-checks one declaration and plans it. The error, if any, is
// an ErrorList.
//
// Only q is checked: the other queries of its file may hold errors of their
// own. Every error names q.
func CheckQuery(q *QueryDecl, cat *pg.Catalog) (*Plan, error) {
	if err := q.CheckShape(); err != nil {
		return nil, ErrorList{err.(*Error)}
	}
	c := &checker{cat: cat, params: map[string]*Param{}}
	pl := &Plan{Name: q.Name, Pos: q.Pos}
	seen := map[string]bool{}
	for _, a := range q.Annotations {
		switch a.Name {
		case "description", "instruction":
			if seen[a.Name] {
				// The original refuses this when it parses the file; here it
				// is reported for this query only.
				c.add(errorf(CodeSyntax, a.Pos, "query %s declares @%s twice; keep one", q.Name, a.Name))
			}
			seen[a.Name] = true
			if a.Name == "description" {
				pl.Description = a.Arg
			} else {
				pl.Instruction = a.Arg
			}
		}
	}
	for _, pd := range q.Params {
		if pd.Name == reservedParam || pd.Name == "_" {
			c.add(errorf(CodeParam, pd.Pos, "$%s is reserved; choose another parameter name", pd.Name))
			continue
		}
		if _, dup := c.params[pd.Name]; dup {
			c.add(errorf(CodeParam, pd.Pos, "parameter $%s is declared twice; remove one or rename it", pd.Name))
			continue
		}
		t, ok := c.paramType(pd.Type)
		if !ok {
			continue
		}
		p := &Param{Name: pd.Name, Type: t, Nullable: pd.Type.Nullable}
		c.params[pd.Name] = p
		pl.Params = append(pl.Params, p)
	}
	if q.Read != nil {
		pl.Read = c.read(q.Read)
	} else {
		pl.Mutation = c.mutation(q.Mutation)
	}
	if len(c.errs) > 0 {
		sort.SliceStable(c.errs, func(i, j int) bool {
			a, b := c.errs[i].Pos, c.errs[j].Pos
			return a.Line < b.Line || (a.Line == b.Line && a.Col < b.Col)
		})
		return nil, inQuery(c.errs, q.Name)
	}
	return pl, nil
}

type checker struct {
	cat    *pg.Catalog
	params map[string]*Param
	errs   ErrorList
	rp     *ReadPlan
	// named holds every variable the match names (bindings, traversal
	// endpoints, edge variables, nested not blocks included) while the
	// checker salvages: see salvage.
	named map[string]bool
}

func (c *checker) add(e *Error) { c.errs = append(c.errs, e) }

// salvage runs fn, a check of clauses that follow one that failed, so one
// check reports every error it can (the editor lists them all) instead of
// the first stage's. While it runs, a use of a variable the match names
// but could not bind adds nothing: its own error is already reported, and
// "not bound" would be a consequence, not a second mistake. The plan fn
// builds is dropped (the query has errors); a panic on the half-built
// plan drops fn's errors and keeps the ones found before.
func (c *checker) salvage(fn func()) {
	if c.named != nil {
		fn() // already salvaging
		return
	}
	n := len(c.errs)
	c.named = map[string]bool{}
	defer func() {
		c.named = nil
		if recover() != nil {
			c.errs = c.errs[:n]
		}
	}()
	fn()
}

// namedInMatch records the variables clauses name, for salvage.
func (c *checker) namedInMatch(clauses []Clause) {
	for _, cl := range clauses {
		switch cl := cl.(type) {
		case *BindingClause:
			c.named[cl.Var] = true
		case *TraversalClause:
			c.named[cl.From], c.named[cl.To] = true, true
			if cl.EdgeVar != "" {
				c.named[cl.EdgeVar] = true
			}
		case *NotClause:
			c.namedInMatch(cl.Clauses)
		}
	}
}

// unresolved reports whether a use of $name adds no error of its own: the
// checker salvages and the match names it (it failed to bind).
func (c *checker) unresolved(name string) bool { return c.named != nil && c.named[name] }

var scalarKinds = map[string]pg.Kind{
	"String": pg.KindString, "Bool": pg.KindBool, "I32": pg.KindI32, "I64": pg.KindI64,
	"U32": pg.KindU32, "U64": pg.KindU64, "F32": pg.KindF32, "F64": pg.KindF64,
	"Date": pg.KindDate, "DateTime": pg.KindDateTime, "Blob": pg.KindBlob,
}

func (c *checker) paramType(tr *TypeRef) (pg.Type, bool) {
	switch {
	case tr.Elem != nil:
		if tr.Elem.Elem != nil || tr.Elem.Name == "Vector" || tr.Elem.Name == "Blob" || tr.Elem.Nullable {
			c.add(errorf(CodeParam, tr.Elem.Pos, "a list parameter holds a non-null base scalar, as in [String] or [I64]"))
			return pg.Type{}, false
		}
		el, ok := c.paramType(tr.Elem)
		if !ok {
			return pg.Type{}, false
		}
		return pg.Type{Kind: pg.KindList, Elem: &el}, true
	case tr.Name == "Vector":
		return pg.Type{Kind: pg.KindVector, Dim: tr.Dim}, true
	}
	if k, ok := scalarKinds[tr.Name]; ok {
		return pg.Type{Kind: k}, true
	}
	hint := "use String, Bool, I32, I64, U32, U64, F32, F64, Date, DateTime, Blob, [T] or Vector(N)"
	if tr.Name == "enum" || strings.HasPrefix(tr.Name, "enum") {
		hint = "there is no enum parameter type; declare it String and it is checked against the enum"
	}
	c.add(errorf(CodeParam, tr.Pos, "unknown parameter type %q; %s", tr.Name, hint))
	return pg.Type{}, false
}

// suggest renders a "did you mean" list of candidates.
func suggest(want string, cands []string) string {
	best := ""
	bestD := 1 << 30
	for _, c := range cands {
		d := text.Levenshtein(strings.ToLower(want), strings.ToLower(c))
		if d < bestD {
			best, bestD = c, d
		}
	}
	if best != "" && bestD <= max(2, len(want)/3) {
		return "did you mean " + best + "?"
	}
	if len(cands) == 0 {
		return "none are declared"
	}
	if len(cands) > 12 {
		cands = append(cands[:12:12], "...")
	}
	return "known: " + strings.Join(cands, ", ")
}

func (c *checker) nodeNames() []string {
	var out []string
	for _, n := range c.cat.Nodes {
		out = append(out, n.Name)
	}
	return out
}

func (c *checker) edgeNames() []string {
	var out []string
	for _, e := range c.cat.Edges {
		out = append(out, e.Name)
	}
	return out
}

func propNames(ps []*pg.Property) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Name
	}
	return out
}

// lookupNode resolves a node type name, reporting CodeUnknownType.
func (c *checker) lookupNode(name string, pos Pos) *pg.NodeType {
	if n, ok := c.cat.Node(name); ok {
		return n
	}
	if e, ok := c.cat.Edge(name); ok {
		c.add(errorf(CodeUnknownType, pos, "%s is an edge type, not a node type; traverse it instead, as in $a %s $b", e.Name, lowerFirst(e.Name)))
		return nil
	}
	c.add(errorf(CodeUnknownType, pos, "unknown node type %q; %s", name, suggest(name, c.nodeNames())))
	return nil
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// compatible reports whether values of types a and b may be compared with =.
func sameClass(a, b pg.Type) bool { return typeClass(a) == typeClass(b) }

func typeClass(t pg.Type) string {
	switch {
	case t.Kind.Numeric():
		return "number"
	case t.Kind == pg.KindString || t.Kind == pg.KindEnum:
		return "string"
	case t.Kind == pg.KindList:
		if t.Elem != nil {
			return "list of " + typeClass(*t.Elem)
		}
	}
	return t.Kind.String()
}

// assignable reports whether a parameter of type p may be stored in a
// property of type t (exact kind, or String into enum or Blob).
func assignable(p, t pg.Type) bool {
	if p.Equal(t) {
		return true
	}
	if p.Kind == pg.KindString && (t.Kind == pg.KindEnum || t.Kind == pg.KindBlob) {
		return true
	}
	if p.Kind == pg.KindList && t.Kind == pg.KindList && p.Elem != nil && t.Elem != nil {
		return assignable(*p.Elem, *t.Elem)
	}
	return false
}

func paramDecl(name string, t pg.Type) string {
	s := t.String()
	if t.Kind == pg.KindEnum {
		s = "String"
	}
	if t.Kind == pg.KindList && t.Elem != nil && t.Elem.Kind == pg.KindEnum {
		s = "[String]"
	}
	return "$" + name + ": " + s
}

// valueOperand checks a value expression (literal, parameter or now()) that
// is stored into or compared with a slot of type t.
func (c *checker) valueOperand(e *Expr, t pg.Type, nullable bool, what string, assign bool) (Operand, bool) {
	switch e.Kind {
	case ExprVar:
		p, ok := c.params[e.Var]
		if !ok {
			c.add(errorf(CodeUnbound, e.Pos, "$%s is not a declared parameter; add it to the query's parameter list, as in (%s)", e.Var, paramDecl(e.Var, t)))
			return Operand{}, false
		}
		if assign {
			if !assignable(p.Type, t) {
				c.add(errorf(CodeTypeMismatch, e.Pos, "%s is %s but $%s is %s; declare %s", what, t, e.Var, p.Type, paramDecl(e.Var, t)))
				return Operand{}, false
			}
			if p.Nullable && !nullable {
				c.add(errorf(CodeNull, e.Pos, "%s is required but $%s is nullable; declare %s without '?'", what, e.Var, paramDecl(e.Var, t)))
				return Operand{}, false
			}
		} else if !sameClass(p.Type, t) {
			c.add(errorf(CodeTypeMismatch, e.Pos, "%s is %s but $%s is %s; declare %s", what, t, e.Var, p.Type, paramDecl(e.Var, t)))
			return Operand{}, false
		}
		op := Operand{Kind: OperandParam, Param: e.Var, Type: p.Type, Nullable: p.Nullable}
		c.useParam(&op, t, what, e.Pos)
		return op, true
	case ExprNow:
		if t.Kind != pg.KindDateTime {
			c.add(errorf(CodeTypeMismatch, e.Pos, "%s is %s but now() is a DateTime; use a %s value, as in %s", what, t, t, example(t)))
			return Operand{}, false
		}
		return Operand{Kind: OperandNow, Type: pg.Type{Kind: pg.KindDateTime}}, true
	}
	if !isLiteralExpr(e) {
		c.add(errorf(CodeTypeMismatch, e.Pos, "%s needs a value: a literal, a $parameter or now()", what))
		return Operand{}, false
	}
	v, err := coerceLiteral(e, t, nullable, what)
	if err != nil {
		c.add(err)
		return Operand{}, false
	}
	return Operand{Kind: OperandLiteral, Value: v, Type: t, Nullable: v == nil}, true
}

// checkOp verifies that op applies to a left operand of type lt; rt is the
// type the right side must have (possibly the list element type).
func (c *checker) rightType(op CmpOp, lt pg.Type, pos Pos, what string) (pg.Type, bool) {
	switch op {
	case OpEq, OpNe:
		switch lt.Kind {
		case pg.KindList, pg.KindVector, pg.KindBlob:
			hint := "compare a scalar property"
			if lt.Kind == pg.KindList {
				hint = "test membership with contains, as in " + what + " contains " + example(*lt.Elem)
			}
			c.add(errorf(CodeTypeMismatch, pos, "%s is %s, which cannot be compared with %s; %s", what, lt, op, hint))
			return pg.Type{}, false
		}
		return lt, true
	case OpLt, OpLe, OpGt, OpGe:
		switch {
		case lt.Kind.Numeric(), lt.Kind == pg.KindString, lt.Kind == pg.KindEnum, lt.Kind == pg.KindDate, lt.Kind == pg.KindDateTime:
			return lt, true
		}
		c.add(errorf(CodeTypeMismatch, pos, "%s is %s, which has no order; %s works on numbers, strings and dates (use = or != for %s)", what, lt, op, lt))
		return pg.Type{}, false
	case OpContains:
		if lt.Kind == pg.KindList && lt.Elem != nil {
			return *lt.Elem, true
		}
		if lt.Kind == pg.KindString || lt.Kind == pg.KindEnum {
			return pg.Type{Kind: pg.KindString}, true
		}
		c.add(errorf(CodeTypeMismatch, pos, "contains needs a String or list on the left but %s is %s; use = instead", what, lt))
		return pg.Type{}, false
	case OpStartsWith:
		if lt.Kind == pg.KindString || lt.Kind == pg.KindEnum {
			return pg.Type{Kind: pg.KindString}, true
		}
		c.add(errorf(CodeTypeMismatch, pos, "starts_with needs a String on the left but %s is %s; use = or < instead", what, lt))
		return pg.Type{}, false
	}
	return pg.Type{}, false
}

// numberLiteral adapts a float literal compared with an integer property, as
// the original does: an integral value (3.0) is that integer, so key lookups
// and scans stay exact; any other value compares as an F64 and so never
// equals an integer (count = 2.7 matches nothing, count < 2.7 matches 2).
func numberLiteral(e *Expr, t pg.Type) (*Expr, pg.Type) {
	if e.Kind != ExprFloat || !t.Kind.Integer() {
		return e, t
	}
	f, err := strconv.ParseFloat(e.Text, 64)
	if err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		text := strconv.FormatFloat(f, 'f', -1, 64)
		if _, err := parseIntText(text, t.Kind); err == nil {
			return &Expr{Pos: e.Pos, Kind: ExprInt, Text: text}, t
		}
	}
	return e, pg.Type{Kind: pg.KindF64}
}

func flip(op CmpOp) CmpOp {
	switch op {
	case OpLt:
		return OpGt
	case OpLe:
		return OpGe
	case OpGt:
		return OpLt
	case OpGe:
		return OpLe
	}
	return op
}
