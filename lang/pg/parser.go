package pg

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Parse reads .pg source into its syntax tree. It checks syntax only; names,
// types and constraints are checked by Compile. The error, if any, is an
// *Error with the position of the problem.
func Parse(src string) (*File, error) { return parse(src, false) }

func parse(src string, accepted bool) (*File, error) {
	p := &parser{lx: newLexer(src)}
	p.lx.keepEscapes = accepted
	f, err := p.file()
	if err != nil {
		return nil, err
	}
	return f, nil
}

type parser struct {
	lx  *lexer
	buf []token // lookahead
}

func (p *parser) peekN(n int) (token, error) {
	for len(p.buf) <= n {
		t, err := p.lx.next()
		if err != nil {
			return token{}, err
		}
		p.buf = append(p.buf, t)
		if t.kind == tEOF {
			for len(p.buf) <= n {
				p.buf = append(p.buf, t)
			}
		}
	}
	return p.buf[n], nil
}

func (p *parser) peek() (token, error) { return p.peekN(0) }

func (p *parser) take() (token, error) {
	t, err := p.peek()
	if err != nil {
		return t, err
	}
	p.buf = p.buf[1:]
	return t, nil
}

func isPunct(t token, s string) bool { return t.kind == tPunct && t.text == s }

// accept consumes the punctuation s if it is next.
func (p *parser) accept(s string) (bool, error) {
	t, err := p.peek()
	if err != nil {
		return false, err
	}
	if isPunct(t, s) {
		p.buf = p.buf[1:]
		return true, nil
	}
	return false, nil
}

func errAt(pos Pos, hint, format string, args ...any) *Error {
	return &Error{Line: pos.Line, Col: pos.Col, Msg: fmt.Sprintf(format, args...), Hint: hint}
}

// expect consumes the punctuation s or fails with what was expected there.
func (p *parser) expect(s, what, hint string) (token, error) {
	t, err := p.take()
	if err != nil {
		return t, err
	}
	if !isPunct(t, s) {
		return t, errAt(t.pos, hint, "expected %q %s, found %s", s, what, t.describe())
	}
	return t, nil
}

func (p *parser) file() (*File, error) {
	f := &File{}
	for {
		t, err := p.take()
		if err != nil {
			return nil, err
		}
		if t.kind == tEOF {
			return f, nil
		}
		var d *Decl
		switch {
		case t.kind == tIdent && t.text == "interface":
			d, err = p.interfaceDecl(t)
		case t.kind == tIdent && t.text == "node":
			d, err = p.nodeDecl(t)
		case t.kind == tIdent && t.text == "edge":
			d, err = p.edgeDecl(t)
		default:
			hint := "start each declaration with interface, node or edge"
			if t.kind == tIdent {
				switch strings.ToLower(t.text) {
				case "interface", "node", "edge":
					hint = "keywords are lowercase: write " + strings.ToLower(t.text)
				case "enum", "type", "struct", "class", "table":
					hint = "declare node types with node Name { ... }; enums are property types: status: enum(a, b)"
				}
				if strings.HasPrefix(t.text, "implements") {
					hint = "implements goes after the node name: node Name implements I { ... }"
				}
			}
			if isPunct(t, "}") {
				hint = "remove the extra }"
			}
			return nil, errAt(t.pos, hint, "expected a declaration (interface, node or edge), found %s", t.describe())
		}
		if err != nil {
			return nil, err
		}
		f.Decls = append(f.Decls, d)
	}
}

// typeName reads a type name (node, edge or interface name).
func (p *parser) typeName(what string) (Ident, error) {
	t, err := p.take()
	if err != nil {
		return Ident{}, err
	}
	if t.kind != tIdent {
		return Ident{}, errAt(t.pos, "type names start with an uppercase letter, e.g. Person", "expected %s, found %s", what, t.describe())
	}
	return Ident{Name: t.text, Pos: t.pos}, nil
}

func (p *parser) interfaceDecl(kw token) (*Decl, error) {
	d := &Decl{Kind: DeclInterface, Pos: kw.pos, HasBody: true}
	var err error
	if d.Name, err = p.typeName("an interface name"); err != nil {
		return nil, err
	}
	t, err := p.peek()
	if err != nil {
		return nil, err
	}
	if isPunct(t, "@") {
		return nil, errAt(t.pos, "put annotations on the properties or on the node types that implement it", "interfaces take no annotations")
	}
	if _, err := p.expect("{", "to open the interface body", "write interface "+d.Name.Name+" { name: Type ... }"); err != nil {
		return nil, err
	}
	if err := p.body(d); err != nil {
		return nil, err
	}
	return d, nil
}

func (p *parser) nodeDecl(kw token) (*Decl, error) {
	d := &Decl{Kind: DeclNode, Pos: kw.pos, HasBody: true}
	var err error
	if d.Name, err = p.typeName("a node type name"); err != nil {
		return nil, err
	}
	if err := p.headerAnnotations(d); err != nil {
		return nil, err
	}
	t, err := p.peek()
	if err != nil {
		return nil, err
	}
	if t.kind == tIdent && t.text == "implements" {
		p.take()
		for {
			id, err := p.typeName("an interface name after implements")
			if err != nil {
				return nil, err
			}
			d.Implements = append(d.Implements, id)
			more, err := p.accept(",")
			if err != nil {
				return nil, err
			}
			if !more {
				break
			}
		}
		if err := p.headerAnnotations(d); err != nil {
			return nil, err
		}
	}
	hint := "write node " + d.Name.Name + " { name: Type ... }"
	if t, err := p.peek(); err == nil && t.kind == tIdent && t.text != "implements" {
		hint = "separate interfaces with commas: implements A, B"
		if len(d.Implements) == 0 {
			hint = "write node " + d.Name.Name + " implements Interface { ... } or open the body with {"
		}
	}
	if _, err := p.expect("{", "to open the node body", hint); err != nil {
		return nil, err
	}
	if err := p.body(d); err != nil {
		return nil, err
	}
	return d, nil
}

func (p *parser) edgeDecl(kw token) (*Decl, error) {
	d := &Decl{Kind: DeclEdge, Pos: kw.pos}
	var err error
	if d.Name, err = p.typeName("an edge type name"); err != nil {
		return nil, err
	}
	form := "write edge " + d.Name.Name + ": From -> To"
	if _, err := p.expect(":", "after the edge name", form); err != nil {
		return nil, err
	}
	if d.From, err = p.typeName("the source node type"); err != nil {
		return nil, err
	}
	if _, err := p.expect("->", "between the edge endpoints", form); err != nil {
		return nil, err
	}
	if d.To, err = p.typeName("the target node type"); err != nil {
		return nil, err
	}
	if err := p.headerAnnotations(d); err != nil {
		return nil, err
	}
	open, err := p.accept("{")
	if err != nil {
		return nil, err
	}
	if open {
		d.HasBody = true
		if err := p.body(d); err != nil {
			return nil, err
		}
	}
	return d, nil
}

func (p *parser) headerAnnotations(d *Decl) error {
	for {
		t, err := p.peek()
		if err != nil {
			return err
		}
		if !isPunct(t, "@") {
			return nil
		}
		a, err := p.annotation()
		if err != nil {
			return err
		}
		d.Annotations = append(d.Annotations, a)
	}
}

// body reads properties and body constraints up to and including "}".
func (p *parser) body(d *Decl) error {
	for {
		t, err := p.peek()
		if err != nil {
			return err
		}
		switch {
		case isPunct(t, "}"):
			p.take()
			return nil
		case t.kind == tEOF:
			return errAt(t.pos, "close the "+d.Kind.String()+" "+d.Name.Name+" body with }", "unexpected end of file inside %s %s", d.Kind, d.Name.Name)
		case isPunct(t, "@"):
			a, err := p.annotation()
			if err != nil {
				return err
			}
			d.Constraints = append(d.Constraints, a)
		case t.kind == tIdent:
			pd, err := p.property()
			if err != nil {
				return err
			}
			d.Props = append(d.Props, pd)
		default:
			hint := "write a property (name: Type) or a constraint (@key(name)), or close the body with }"
			if isPunct(t, ",") {
				hint = "properties need no separator; remove the ,"
			}
			return errAt(t.pos, hint, "expected a property or a constraint, found %s", t.describe())
		}
	}
}

func (p *parser) property() (*PropDecl, error) {
	name, err := p.take()
	if err != nil {
		return nil, err
	}
	pd := &PropDecl{Name: Ident{Name: name.text, Pos: name.pos}}
	t, err := p.take()
	if err != nil {
		return nil, err
	}
	if !isPunct(t, ":") {
		return nil, errAt(t.pos, "write "+name.text+": Type, e.g. "+name.text+": String", "expected \":\" after property name %q, found %s", name.text, t.describe())
	}
	if pd.Type, err = p.typeExpr(); err != nil {
		return nil, err
	}
	if pd.Nullable, err = p.accept("?"); err != nil {
		return nil, err
	}
	for {
		t, err := p.peek()
		if err != nil {
			return nil, err
		}
		if isPunct(t, "?") {
			return nil, errAt(t.pos, "write a single ? after the type", "duplicate ?")
		}
		if !isPunct(t, "@") {
			return pd, nil
		}
		if body, err := p.atBodyConstraint(); err != nil || body {
			return pd, err
		}
		a, err := p.annotation()
		if err != nil {
			return nil, err
		}
		pd.Annotations = append(pd.Annotations, a)
	}
}

// atBodyConstraint reports whether the "@" ahead starts a body constraint
// (@key(p...), @unique(p...), @index(p...), @range(p, ...), @check(p, ...))
// rather than an annotation of the property before it. Whitespace does not
// matter in .pg, so the form decides: a constraint names a property as its
// first argument, while the short forms on a property take no property name.
func (p *parser) atBodyConstraint() (bool, error) {
	var ts [5]token
	for i := range ts {
		t, err := p.peekN(i)
		if err != nil {
			return false, err
		}
		ts[i] = t
	}
	if ts[1].kind != tIdent || !isPunct(ts[2], "(") || ts[3].kind != tIdent || isPunct(ts[4], "=") {
		return false, nil
	}
	// A misspelt constraint (@uniqe(email)) is read as a constraint too, so
	// it is reported instead of kept as an unknown annotation of the
	// property before it.
	return slices.Contains(constraintNames, ts[1].text) || suggest(ts[1].text, constraintNames) != "" && len(ts[1].text) > 3, nil
}

var constraintNames = []string{"key", "unique", "index", "range", "check"}

func (p *parser) typeExpr() (*TypeExpr, error) {
	t, err := p.take()
	if err != nil {
		return nil, err
	}
	te := &TypeExpr{Pos: t.pos}
	switch {
	case isPunct(t, "["):
		te.Name = listTypeName
		if te.Elem, err = p.typeExpr(); err != nil {
			return nil, err
		}
		nt, err := p.take()
		if err != nil {
			return nil, err
		}
		if isPunct(nt, "?") {
			return nil, errAt(nt.pos, "list elements cannot be null; to make the list optional write [T]?", "unexpected ? inside a list type")
		}
		if !isPunct(nt, "]") {
			return nil, errAt(nt.pos, "close the list type with ], e.g. [String]", "expected \"]\", found %s", nt.describe())
		}
		return te, nil
	case t.kind != tIdent:
		return nil, errAt(t.pos, "write a type such as String, I64, [String], Vector(8) or enum(a, b)", "expected a property type, found %s", t.describe())
	}
	te.Name = t.text
	switch t.text {
	case "Vector":
		if _, err := p.expect("(", "after Vector", "write Vector(N) with N the number of dimensions, e.g. Vector(384)"); err != nil {
			return nil, err
		}
		n, err := p.take()
		if err != nil {
			return nil, err
		}
		if n.kind != tNumber {
			return nil, errAt(n.pos, "write Vector(N) with N the number of dimensions, e.g. Vector(384)", "expected the vector dimension, found %s", n.describe())
		}
		dim, perr := strconv.ParseInt(n.text, 10, 64)
		if perr != nil || dim < 1 || dim > 1<<31-1 {
			return nil, errAt(n.pos, "the dimension is a whole number from 1 to 2147483647", "invalid vector dimension %s", n.text)
		}
		te.Dim = dim
		if _, err := p.expect(")", "after the vector dimension", "write Vector(N), e.g. Vector(384)"); err != nil {
			return nil, err
		}
	case "enum":
		if _, err := p.expect("(", "after enum", "write enum(a, b, c)"); err != nil {
			return nil, err
		}
		if len(p.buf) != 0 { // cannot happen: expect consumed the only lookahead
			return nil, errAt(t.pos, "", "internal parser state error")
		}
		for {
			v, err := p.lx.scanEnumValue()
			if err != nil {
				return nil, err
			}
			if v.text == "" {
				nt, err := p.peek()
				if err != nil {
					return nil, err
				}
				return nil, errAt(nt.pos, "enum values use letters, digits, _ and -, e.g. enum(draft, in-review)", "expected an enum value, found %s", nt.describe())
			}
			te.Values = append(te.Values, Ident{Name: v.text, Pos: v.pos})
			sep, err := p.take()
			if err != nil {
				return nil, err
			}
			if isPunct(sep, ")") {
				break
			}
			if !isPunct(sep, ",") {
				return nil, errAt(sep.pos, "separate enum values with commas and close with ), e.g. enum(a, b)", "expected \",\" or \")\" in enum, found %s", sep.describe())
			}
		}
	}
	return te, nil
}

// annotation reads @name or @name(args).
func (p *parser) annotation() (Annotation, error) {
	at, err := p.take()
	if err != nil {
		return Annotation{}, err
	}
	name, err := p.take()
	if err != nil {
		return Annotation{}, err
	}
	if name.kind != tIdent || name.pos != (Pos{Line: at.pos.Line, Col: at.pos.Col + 1}) {
		return Annotation{}, errAt(name.pos, "write the annotation name right after @, e.g. @key", "expected an annotation name after @, found %s", name.describe())
	}
	a := Annotation{Name: name.text, Pos: at.pos}
	open, err := p.accept("(")
	if err != nil || !open {
		return a, err
	}
	a.Args = []Arg{}
	if closed, err := p.accept(")"); err != nil || closed {
		return a, err
	}
	for {
		arg, err := p.arg()
		if err != nil {
			return a, err
		}
		a.Args = append(a.Args, arg)
		sep, err := p.take()
		if err != nil {
			return a, err
		}
		if isPunct(sep, ")") {
			return a, nil
		}
		if !isPunct(sep, ",") {
			return a, errAt(sep.pos, "separate arguments with commas and close with )", "expected \",\" or \")\" in @%s(...), found %s", a.Name, sep.describe())
		}
	}
}

// arg reads one annotation argument: [key=]value where value is a string,
// a number, a name, *, or a range lo..hi with either side optional.
func (p *parser) arg() (Arg, error) {
	t, err := p.peek()
	if err != nil {
		return Arg{}, err
	}
	arg := Arg{Pos: t.pos}
	if t.kind == tIdent {
		if eq, err := p.peekN(1); err != nil {
			return arg, err
		} else if isPunct(eq, "=") {
			arg.Key = t.text
			p.take()
			p.take()
			if t, err = p.peek(); err != nil {
				return arg, err
			}
		}
	}
	switch {
	case t.kind == tString:
		p.take()
		arg.Kind, arg.Value = ArgString, t.text
		return arg, nil
	case t.kind == tIdent:
		p.take()
		arg.Kind, arg.Value = ArgIdent, t.text
		return arg, nil
	case isPunct(t, "*"):
		p.take()
		arg.Kind, arg.Value = ArgStar, "*"
		return arg, nil
	case t.kind == tNumber || isPunct(t, ".."):
		lo := ""
		if t.kind == tNumber {
			p.take()
			lo = t.text
			if dots, err := p.accept(".."); err != nil || !dots {
				arg.Kind, arg.Value = ArgNumber, lo
				return arg, err
			}
		} else {
			p.take()
		}
		hi := ""
		nt, err := p.peek()
		if err != nil {
			return arg, err
		}
		if nt.kind == tNumber || isPunct(nt, "*") {
			p.take()
			hi = nt.text
		}
		arg.Kind, arg.Value = ArgRange, lo+".."+hi
		return arg, nil
	}
	return arg, errAt(t.pos, "arguments are names, \"strings\", numbers or ranges like 1..10", "expected an annotation argument, found %s", t.describe())
}
