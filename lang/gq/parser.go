package gq

import (
	"strconv"
)

// maxDepth bounds nesting (not { .. } and lists) so hostile input cannot
// exhaust the stack.
const maxDepth = 64

// Parse parses the text of a .gq file. It returns the first syntax error as an
// *Error with CodeSyntax (or CodeDuplicateQuery), naming the query it is in
// once its name has been read. Parse needs no schema; Check resolves names.
// The D₂ rule is a property of one query: Parse records a violation and
// CheckShape (also run by CheckQuery) reports it, so one mixed mutation does
// not stop the file's other queries from running.
func Parse(src string) (*File, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, inQuery(err, enclosingQuery(toks))
	}
	p := &parser{toks: toks}
	f, err := p.file()
	if err != nil {
		return nil, err
	}
	return f, nil
}

// enclosingQuery names the declaration the end of toks is inside: the last
// top-level `query name` or `mutation name` whose body is not closed yet.
func enclosingQuery(toks []token) string {
	name, depth := "", 0
	for i, t := range toks {
		switch t.kind {
		case tLBrace:
			depth++
		case tRBrace:
			depth--
			if depth <= 0 {
				depth, name = 0, ""
			}
		case tIdent:
			if depth == 0 && (t.text == "query" || t.text == "mutation") && i+1 < len(toks) && toks[i+1].kind == tIdent {
				name = toks[i+1].text
			}
		}
	}
	return name
}

type parser struct {
	toks  []token
	i     int
	depth int
	query string // the name of the declaration being parsed, once known
}

func (p *parser) peek() token       { return p.toks[p.i] }
func (p *parser) peekN(n int) token { return p.toks[min(p.i+n, len(p.toks)-1)] }
func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) isWord(w string) bool {
	t := p.peek()
	return t.kind == tIdent && t.text == w
}

func (p *parser) accept(k tokKind) bool {
	if p.peek().kind == k {
		p.next()
		return true
	}
	return false
}

func (p *parser) expect(k tokKind, hint string) (token, error) {
	t := p.peek()
	if t.kind != k {
		return t, p.unexpected(t, hint)
	}
	return p.next(), nil
}

func (p *parser) expectWord(w, hint string) error {
	if !p.isWord(w) {
		return p.unexpected(p.peek(), hint)
	}
	p.next()
	return nil
}

func (p *parser) unexpected(t token, hint string) *Error {
	return errorf(CodeSyntax, t.pos, "unexpected %s; %s", t.describe(), hint)
}

func (p *parser) file() (*File, error) {
	f := &File{}
	seen := map[string]Pos{}
	for p.peek().kind != tEOF {
		p.query = ""
		q, err := p.queryDecl()
		if err != nil {
			return nil, inQuery(err, p.query)
		}
		if prev, dup := seen[q.Name]; dup {
			return nil, inQuery(errorf(CodeDuplicateQuery, q.Pos, "query %q is already declared at %s; give each query its own name", q.Name, prev), q.Name)
		}
		seen[q.Name] = q.Pos
		f.Queries = append(f.Queries, q)
	}
	if len(f.Queries) == 0 {
		return nil, errorf(CodeSyntax, p.peek().pos, "empty file; write a query such as: query q() { match { $p: Person } return { $p } }")
	}
	return f, nil
}

func (p *parser) queryDecl() (*QueryDecl, error) {
	t := p.peek()
	if !(p.isWord("query") || p.isWord("mutation")) {
		return nil, p.unexpected(t, "a file holds declarations that start with `query` or `mutation`")
	}
	p.next()
	q := &QueryDecl{Pos: t.pos, Keyword: t.text}
	nameTok, err := p.expect(tIdent, "write the query's name after `"+t.text+"`, as in: query adults() { ... }")
	if err != nil {
		return nil, err
	}
	q.Name = nameTok.text
	p.query = q.Name
	if _, err := p.expect(tLParen, "write the parameter list after the name: "+q.Name+"() or "+q.Name+"($name: String)"); err != nil {
		return nil, err
	}
	for !p.accept(tRParen) {
		if len(q.Params) > 0 {
			if _, err := p.expect(tComma, "separate parameters with ',' and close the list with ')'"); err != nil {
				return nil, err
			}
		}
		vt, err := p.expect(tVar, "a parameter is written $name: Type")
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(tColon, "give the parameter a type: $"+vt.text+": String"); err != nil {
			return nil, err
		}
		tr, err := p.typeRef()
		if err != nil {
			return nil, err
		}
		q.Params = append(q.Params, &ParamDecl{Pos: vt.pos, Name: vt.text, Type: tr})
	}
	for p.peek().kind == tAt {
		at := p.next()
		nt, err := p.expect(tIdent, "an annotation is written @description(\"text\")")
		if err != nil {
			return nil, err
		}
		a := &Annotation{Pos: at.pos, Name: nt.text}
		if p.accept(tLParen) {
			st, err := p.expect(tString, "an annotation takes one string: @"+nt.text+"(\"text\")")
			if err != nil {
				return nil, err
			}
			a.Arg = st.text
			if _, err := p.expect(tRParen, "close the annotation with ')'"); err != nil {
				return nil, err
			}
		}
		q.Annotations = append(q.Annotations, a)
	}
	if _, err := p.expect(tLBrace, "open the query body with '{'"); err != nil {
		return nil, err
	}
	if p.isWord("match") {
		rb, err := p.readBody()
		if err != nil {
			return nil, err
		}
		q.Read = rb
		if q.Keyword == "mutation" {
			return nil, errorf(CodeSyntax, q.Pos, "a `mutation` holds insert/update/delete statements; declare a read with `query %s(...) { match ... }`", q.Name)
		}
	} else if p.isWord("insert") || p.isWord("update") || p.isWord("delete") {
		stmts, mixed, err := p.mutationBody()
		if err != nil {
			return nil, err
		}
		q.Mutation, q.mixed = stmts, mixed
	} else {
		return nil, p.unexpected(p.peek(), "a query body starts with `match` (a read) or with insert/update/delete (a mutation)")
	}
	if _, err := p.expect(tRBrace, "close the query body with '}'"); err != nil {
		return nil, err
	}
	return q, nil
}

func (p *parser) typeRef() (*TypeRef, error) {
	t := p.peek()
	tr := &TypeRef{Pos: t.pos}
	switch {
	case t.kind == tLBrack:
		p.next()
		el, err := p.typeRef()
		if err != nil {
			return nil, err
		}
		tr.Elem = el
		if _, err := p.expect(tRBrack, "close the list type with ']', as in [String]"); err != nil {
			return nil, err
		}
	case t.kind == tIdent:
		p.next()
		tr.Name = t.text
		if t.text == "Vector" {
			if _, err := p.expect(tLParen, "a vector type gives its dimension: Vector(8)"); err != nil {
				return nil, err
			}
			n, err := p.expect(tInt, "a vector type gives its dimension: Vector(8)")
			if err != nil {
				return nil, err
			}
			d, convErr := strconv.Atoi(n.text)
			if convErr != nil || d < 1 {
				return nil, errorf(CodeSyntax, n.pos, "vector dimension must be a positive integer, as in Vector(8)")
			}
			tr.Dim = d
			if _, err := p.expect(tRParen, "close the dimension with ')'"); err != nil {
				return nil, err
			}
		}
	default:
		return nil, p.unexpected(t, "write a type such as String, I64, [String] or Vector(8)")
	}
	if p.accept(tQuestion) {
		tr.Nullable = true
	}
	return tr, nil
}

func (p *parser) readBody() (*ReadBody, error) {
	p.next() // match
	rb := &ReadBody{}
	if _, err := p.expect(tLBrace, "open the match block with '{'"); err != nil {
		return nil, err
	}
	clauses, err := p.clauses()
	if err != nil {
		return nil, err
	}
	rb.Match = clauses
	if err := p.expectWord("return", "after match { ... } write return { ... }"); err != nil {
		return nil, err
	}
	if _, err := p.expect(tLBrace, "open the return block with '{'"); err != nil {
		return nil, err
	}
	for !p.accept(tRBrace) {
		if len(rb.Return) > 0 {
			p.accept(tComma)
			if p.accept(tRBrace) {
				break
			}
		}
		start := p.peek().pos
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		it := &ReturnItem{Pos: start, Expr: e}
		if p.isWord("as") {
			p.next()
			at, err := p.expect(tIdent, "write a column name after `as`, as in: $p.name as person")
			if err != nil {
				return nil, err
			}
			it.Alias = at.text
		}
		rb.Return = append(rb.Return, it)
	}
	if len(rb.Return) == 0 {
		return nil, errorf(CodeSyntax, p.toks[p.i-1].pos, "return { } is empty; list at least one value, as in return { $p.name }")
	}
	if p.isWord("order") {
		p.next()
		if _, err := p.expect(tLBrace, "open the order block with '{'"); err != nil {
			return nil, err
		}
		for !p.accept(tRBrace) {
			if len(rb.Order) > 0 {
				p.accept(tComma)
				if p.accept(tRBrace) {
					break
				}
			}
			start := p.peek().pos
			e, err := p.expr()
			if err != nil {
				return nil, err
			}
			it := &OrderItem{Pos: start, Expr: e}
			if p.isWord("asc") {
				p.next()
			} else if p.isWord("desc") {
				p.next()
				it.Desc = true
			}
			rb.Order = append(rb.Order, it)
		}
		if len(rb.Order) == 0 {
			return nil, errorf(CodeSyntax, p.toks[p.i-1].pos, "order { } is empty; list a sort key, as in order { $p.name }, or drop the clause")
		}
	}
	if p.isWord("limit") {
		p.next()
		t := p.peek()
		switch t.kind {
		case tInt:
			p.next()
			rb.Limit = &Expr{Pos: t.pos, Kind: ExprInt, Text: t.text}
		case tVar:
			p.next()
			rb.Limit = &Expr{Pos: t.pos, Kind: ExprVar, Var: t.text}
		case tMinus:
			return nil, errorf(CodeLimit, t.pos, "limit must be a non-negative integer, as in limit 10")
		default:
			return nil, errorf(CodeLimit, t.pos, "limit takes a non-negative integer or an integer parameter, as in limit 10; got %s", t.describe())
		}
	}
	return rb, nil
}

// clauses parses clause* '}'.
func (p *parser) clauses() ([]Clause, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxDepth {
		return nil, errorf(CodeSyntax, p.peek().pos, "nesting is too deep (more than %d levels)", maxDepth)
	}
	var out []Clause
	for !p.accept(tRBrace) {
		p.accept(tComma)
		if p.accept(tRBrace) {
			break
		}
		c, err := p.clause()
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errorf(CodeSyntax, p.toks[p.i-1].pos, "the block is empty; write at least one clause, as in { $p: Person }")
	}
	return out, nil
}

func (p *parser) clause() (Clause, error) {
	t := p.peek()
	if p.isWord("not") && p.peekN(1).kind == tLBrace {
		p.next()
		p.next()
		cs, err := p.clauses()
		if err != nil {
			return nil, err
		}
		return &NotClause{Pos: t.pos, Clauses: cs}, nil
	}
	if t.kind == tVar {
		n1 := p.peekN(1)
		switch {
		case n1.kind == tColon:
			return p.binding()
		case n1.kind == tIdent && !isKeywordOp(n1.text):
			return p.traversal()
		case n1.kind == tVar && p.peekN(2).kind == tColon:
			return p.traversal()
		case n1.kind == tLt && p.peekN(2).kind == tIdent && !isLiteralWord(p.peekN(2).text):
			return p.traversal()
		}
	}
	return p.filter()
}

// isKeywordOp reports names that are comparison operators, which make
// `$x contains "a"` a filter rather than a traversal over an edge.
func isKeywordOp(s string) bool { return s == "contains" || s == "starts_with" }

func (p *parser) binding() (Clause, error) {
	vt := p.next()
	p.next() // ':'
	tt, err := p.expect(tIdent, "write a node type after ':', as in $"+vt.text+": Person")
	if err != nil {
		return nil, err
	}
	b := &BindingClause{Pos: vt.pos, Var: vt.text, Type: tt.text, TPos: tt.pos}
	if p.peek().kind == tLBrace {
		p.next()
		props, err := p.propValues("inline match values are written { name: \"Ada\", age: $age }")
		if err != nil {
			return nil, err
		}
		b.Props = props
	}
	return b, nil
}

// propValues parses (name: expr ,?)* '}' after an opening brace.
func (p *parser) propValues(hint string) ([]*PropValue, error) {
	var out []*PropValue
	for !p.accept(tRBrace) {
		if len(out) > 0 {
			p.accept(tComma)
			if p.accept(tRBrace) {
				break
			}
		}
		nt, err := p.expect(tIdent, hint)
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(tColon, "write ':' between a property and its value: "+nt.text+": value"); err != nil {
			return nil, err
		}
		e, err := p.valueExpr()
		if err != nil {
			return nil, err
		}
		out = append(out, &PropValue{Pos: nt.pos, Name: nt.text, Value: e})
	}
	return out, nil
}

func (p *parser) traversal() (Clause, error) {
	ft := p.next()
	tc := &TraversalClause{Pos: ft.pos, From: ft.text, FromPos: ft.pos}
	if p.peek().kind == tVar {
		ev := p.next()
		tc.EdgeVar = ev.text
		p.next() // ':'
	}
	if p.peek().kind == tLt {
		p.next()
		tc.Undirected = true
	}
	et, err := p.expect(tIdent, "write an edge name, as in $a knows $b")
	if err != nil {
		return nil, err
	}
	tc.Edge, tc.EdgePos = et.text, et.pos
	if tc.Undirected {
		if _, err := p.expect(tGt, "close an undirected edge with '>', as in $a <knows> $b"); err != nil {
			return nil, err
		}
	}
	if p.peek().kind == tLBrace {
		hb := p.next()
		tc.HasHops, tc.HopPos = true, hb.pos
		mt, err := p.expect(tInt, "hop bounds are written {min,max}, as in knows{1,3}")
		if err != nil {
			return nil, err
		}
		tc.Min, err = atoiHop(mt)
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(tComma, "hop bounds are written {min,max}, as in knows{1,3}"); err != nil {
			return nil, err
		}
		if p.peek().kind == tInt {
			xt := p.next()
			tc.Max, err = atoiHop(xt)
			if err != nil {
				return nil, err
			}
			tc.HasMax = true
		}
		if _, err := p.expect(tRBrace, "close the hop bounds with '}', as in knows{1,3}"); err != nil {
			return nil, err
		}
	}
	tt, err := p.expect(tVar, "a traversal ends with the target variable, as in $a "+tc.Edge+" $b")
	if err != nil {
		return nil, err
	}
	tc.To, tc.ToPos = tt.text, tt.pos
	return tc, nil
}

func atoiHop(t token) (int, error) {
	n, err := strconv.Atoi(t.text)
	if err != nil || n > 1<<20 {
		return 0, errorf(CodeHops, t.pos, "hop bound %s is too large; use at most a few hops, as in {1,3}", t.text)
	}
	return n, nil
}

func (p *parser) filter() (Clause, error) {
	start := p.peek().pos
	left, err := p.expr()
	if err != nil {
		return nil, err
	}
	ot := p.peek()
	op, ok := cmpOp(ot)
	if !ok && left.Kind == ExprSearch {
		// search($d.title, $q) alone is a filter of the original system.
		return &FilterClause{Pos: start, Left: left}, nil
	}
	if !ok {
		return nil, p.unexpected(ot, "a match clause is a binding ($p: Person), a traversal ($a knows $b), a filter ($p.age >= 30) or not { ... }; filters use = != < <= > >= contains starts_with")
	}
	p.next()
	right, err := p.expr()
	if err != nil {
		return nil, err
	}
	return &FilterClause{Pos: start, Left: left, Op: op, OpPos: ot.pos, Right: right}, nil
}

func cmpOp(t token) (CmpOp, bool) {
	switch t.kind {
	case tEq:
		return OpEq, true
	case tNe:
		return OpNe, true
	case tLt:
		return OpLt, true
	case tLe:
		return OpLe, true
	case tGt:
		return OpGt, true
	case tGe:
		return OpGe, true
	case tIdent:
		if t.text == "contains" {
			return OpContains, true
		}
		if t.text == "starts_with" {
			return OpStartsWith, true
		}
	}
	return "", false
}

var aggregateNames = map[string]bool{"count": true, "sum": true, "avg": true, "min": true, "max": true}

// searchNames are the original system's search functions. Their calls are
// parsed (so a file that uses them still yields its other queries) and
// refused when the query that holds them is checked.
var searchNames = map[string]bool{"search": true, "fuzzy": true, "match_text": true, "bm25": true, "nearest": true, "rrf": true}

// expr parses a value, a variable, a property access, an aggregate call or a
// bare identifier.
func (p *parser) expr() (*Expr, error) {
	t := p.peek()
	if t.kind == tVar {
		p.next()
		if p.peek().kind == tDot {
			p.next()
			pt, err := p.expect(tIdent, "write a property name after '.', as in $"+t.text+".name")
			if err != nil {
				return nil, err
			}
			return &Expr{Pos: t.pos, Kind: ExprProp, Var: t.text, Prop: pt.text}, nil
		}
		return &Expr{Pos: t.pos, Kind: ExprVar, Var: t.text}, nil
	}
	if t.kind == tIdent && aggregateNames[t.text] && p.peekN(1).kind == tLParen {
		p.next()
		p.next()
		arg, err := p.expr()
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(tRParen, "close the call with ')', as in "+t.text+"($p)"); err != nil {
			return nil, err
		}
		return &Expr{Pos: t.pos, Kind: ExprAggregate, Text: t.text, Arg: arg}, nil
	}
	if t.kind == tIdent && searchNames[t.text] && p.peekN(1).kind == tLParen {
		p.next()
		p.next()
		p.depth++
		defer func() { p.depth-- }()
		if p.depth > maxDepth {
			return nil, errorf(CodeSyntax, t.pos, "nesting is too deep (more than %d levels)", maxDepth)
		}
		e := &Expr{Pos: t.pos, Kind: ExprSearch, Text: t.text}
		for !p.accept(tRParen) {
			if len(e.Elems) > 0 {
				if _, err := p.expect(tComma, "separate the arguments with ',' and close the call with ')'"); err != nil {
					return nil, err
				}
			}
			if p.peek().kind == tIdent && p.peekN(1).kind == tEq {
				p.next() // a named argument (k=60): the name
				p.next()
			}
			arg, err := p.expr()
			if err != nil {
				return nil, err
			}
			e.Elems = append(e.Elems, arg)
		}
		return e, nil
	}
	if t.kind == tIdent && !isLiteralWord(t.text) {
		p.next()
		return &Expr{Pos: t.pos, Kind: ExprIdent, Text: t.text}, nil
	}
	return p.valueExpr()
}

func isLiteralWord(s string) bool {
	switch s {
	case "true", "false", "null", "now", "date", "datetime":
		return true
	}
	return false
}

// valueExpr parses a literal, a parameter reference or now().
func (p *parser) valueExpr() (*Expr, error) {
	t := p.peek()
	switch t.kind {
	case tVar:
		p.next()
		if p.peek().kind == tDot {
			return nil, errorf(CodeSyntax, p.peek().pos, "a value here is a literal, a $parameter or now(); property access is not allowed")
		}
		return &Expr{Pos: t.pos, Kind: ExprVar, Var: t.text}, nil
	case tString:
		p.next()
		return &Expr{Pos: t.pos, Kind: ExprString, Text: t.text}, nil
	case tInt:
		p.next()
		return &Expr{Pos: t.pos, Kind: ExprInt, Text: t.text}, nil
	case tFloat:
		p.next()
		return &Expr{Pos: t.pos, Kind: ExprFloat, Text: t.text}, nil
	case tMinus:
		p.next()
		n := p.peek()
		if n.kind != tInt && n.kind != tFloat {
			return nil, p.unexpected(n, "'-' must be followed by a number, as in -5")
		}
		p.next()
		k := ExprInt
		if n.kind == tFloat {
			k = ExprFloat
		}
		return &Expr{Pos: t.pos, Kind: k, Text: "-" + n.text}, nil
	case tLBrack:
		p.next()
		p.depth++
		defer func() { p.depth-- }()
		if p.depth > maxDepth {
			return nil, errorf(CodeSyntax, t.pos, "nesting is too deep (more than %d levels)", maxDepth)
		}
		e := &Expr{Pos: t.pos, Kind: ExprList}
		for !p.accept(tRBrack) {
			if len(e.Elems) > 0 {
				if _, err := p.expect(tComma, "separate list items with ',' and close the list with ']'"); err != nil {
					return nil, err
				}
			}
			el, err := p.valueExpr()
			if err != nil {
				return nil, err
			}
			e.Elems = append(e.Elems, el)
		}
		return e, nil
	case tIdent:
		switch t.text {
		case "true", "false":
			p.next()
			return &Expr{Pos: t.pos, Kind: ExprBool, Bool: t.text == "true"}, nil
		case "null":
			p.next()
			return &Expr{Pos: t.pos, Kind: ExprNull}, nil
		case "now":
			p.next()
			if _, err := p.expect(tLParen, "now takes no arguments: now()"); err != nil {
				return nil, err
			}
			if _, err := p.expect(tRParen, "now takes no arguments: now()"); err != nil {
				return nil, err
			}
			return &Expr{Pos: t.pos, Kind: ExprNow}, nil
		case "date", "datetime":
			p.next()
			hint := t.text + " takes one string, as in date(\"2024-01-31\") or datetime(\"2024-01-31T12:00:00Z\")"
			if _, err := p.expect(tLParen, hint); err != nil {
				return nil, err
			}
			st, err := p.expect(tString, hint)
			if err != nil {
				return nil, err
			}
			if _, err := p.expect(tRParen, hint); err != nil {
				return nil, err
			}
			k := ExprDate
			if t.text == "datetime" {
				k = ExprDateTime
			}
			return &Expr{Pos: t.pos, Kind: k, Text: st.text}, nil
		}
	}
	return nil, p.unexpected(t, "expected a value: a string, a number, true/false, a $parameter, date(\"...\"), datetime(\"...\"), now() or a list [..]")
}

// mutationBody parses the statements of a mutation. A D₂ violation is not
// a syntax error: it comes back as mixed, so that only running this query
// fails, not every query of the file.
func (p *parser) mutationBody() (stmts []Statement, mixed *Error, err error) {
	firstWrite, firstDelete := -1, -1
	for p.isWord("insert") || p.isWord("update") || p.isWord("delete") {
		kt := p.next()
		s := Statement{Pos: kt.pos, Kind: StmtKind(kt.text)}
		tt, err := p.expect(tIdent, "write the type name after `"+kt.text+"`, as in "+kt.text+" Person ...")
		if err != nil {
			return nil, nil, err
		}
		s.Type, s.TPos = tt.text, tt.pos
		switch s.Kind {
		case StmtInsert:
			if _, err := p.expect(tLBrace, "insert takes a block of values: insert "+s.Type+" { prop: value }"); err != nil {
				return nil, nil, err
			}
			s.Set, err = p.propValues("insert values are written { name: \"Ada\", age: $age }")
			if err != nil {
				return nil, nil, err
			}
		case StmtUpdate:
			if err := p.expectWord("set", "write update "+s.Type+" set { prop: value } where prop = value"); err != nil {
				return nil, nil, err
			}
			if _, err := p.expect(tLBrace, "write update "+s.Type+" set { prop: value } where prop = value"); err != nil {
				return nil, nil, err
			}
			s.Set, err = p.propValues("assignments are written { age: 31 }")
			if err != nil {
				return nil, nil, err
			}
			if s.Where, err = p.where(s); err != nil {
				return nil, nil, err
			}
		case StmtDelete:
			if s.Where, err = p.where(s); err != nil {
				return nil, nil, err
			}
		}
		stmts = append(stmts, s)
		cur := len(stmts) - 1
		if s.Kind == StmtDelete {
			if firstDelete < 0 {
				firstDelete = cur
			}
		} else if firstWrite < 0 {
			firstWrite = cur
		}
		if firstWrite >= 0 && firstDelete >= 0 && mixed == nil {
			other := stmts[firstWrite]
			if cur == firstWrite {
				other = stmts[firstDelete]
			}
			mixed = errorf(CodeMixedMutation, s.Pos,
				"this %s is in the same query as the %s at %s; one mutation query may either insert/update or delete, not both. Split it into two queries and run the inserts/updates first, then the deletes (or do both on a branch and merge it for a single commit)",
				s.Kind, other.Kind, other.Pos)
		}
	}
	if p.peek().kind != tRBrace {
		return nil, nil, p.unexpected(p.peek(), "a mutation body holds only insert, update and delete statements")
	}
	return stmts, mixed, nil
}

func (p *parser) where(s Statement) (*FilterClause, error) {
	hint := "write " + string(s.Kind) + " " + s.Type + " ... where prop = value"
	if err := p.expectWord("where", hint); err != nil {
		return nil, err
	}
	nt, err := p.expect(tIdent, "the where clause compares one property with a value, as in where name = \"Ada\"")
	if err != nil {
		return nil, err
	}
	ot := p.peek()
	op, ok := cmpOp(ot)
	if !ok {
		return nil, p.unexpected(ot, "compare with = != < <= > >= contains or starts_with, as in where "+nt.text+" = \"x\"")
	}
	p.next()
	v, err := p.valueExpr()
	if err != nil {
		return nil, err
	}
	return &FilterClause{Pos: nt.pos, Left: &Expr{Pos: nt.pos, Kind: ExprIdent, Text: nt.text}, Op: op, OpPos: ot.pos, Right: v}, nil
}
