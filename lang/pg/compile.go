package pg

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Compile parses, resolves and validates src into a Catalog. The first
// problem found (in source order) is returned as an *Error with its position
// and a hint.
func Compile(src string) (*Catalog, error) { return compile(src, false) }

// CompileAccepted is Compile for a schema a graph accepted earlier: the
// rules added later for compatibility with the original (unknown string
// escapes, @index on a Blob, empty @description/@instruction/@rename_from,
// @instruction on a property) do not refuse it, so a graph created before
// them still opens. New schemas go through Compile.
func CompileAccepted(src string) (*Catalog, error) { return compile(src, true) }

func compile(src string, accepted bool) (*Catalog, error) {
	f, err := parse(src, accepted)
	if err != nil {
		return nil, err
	}
	c, err := resolve(f, accepted)
	if err != nil {
		return nil, err
	}
	c.Source = StripBOM(src)
	return c, nil
}

// CompileFile is Compile with the file name set in the returned *Error, so
// messages read "path/to/file.pg:3:14: ...".
func CompileFile(name, src string) (*Catalog, error) {
	c, err := Compile(src)
	var pe *Error
	if errors.As(err, &pe) {
		pe.File = name
	}
	return c, err
}

// Resolve turns a parsed file into a Catalog, checking names, types,
// inheritance and constraints. Catalog.Source is left empty.
func Resolve(f *File) (*Catalog, error) { return resolve(f, false) }

func resolve(f *File, accepted bool) (*Catalog, error) {
	r := &resolver{
		accepted: accepted,
		c: &Catalog{
			ifaces:    map[string]*Interface{},
			nodes:     map[string]*NodeType{},
			edges:     map[string]*EdgeType{},
			edgesFold: map[string]*EdgeType{},
		},
		decls: map[string]*Decl{},
	}
	if err := r.run(f); err != nil {
		return nil, err
	}
	c := r.c
	sort.Slice(c.Interfaces, func(i, j int) bool { return c.Interfaces[i].Name < c.Interfaces[j].Name })
	sort.Slice(c.Nodes, func(i, j int) bool { return c.Nodes[i].Name < c.Nodes[j].Name })
	sort.Slice(c.Edges, func(i, j int) bool { return c.Edges[i].Name < c.Edges[j].Name })
	c.canonical = canonical(c)
	sum := sha256.Sum256([]byte(c.canonical))
	c.Identity = hex.EncodeToString(sum[:])
	return c, nil
}

type resolver struct {
	c *Catalog
	// decls holds every declaration by declKey: node types and interfaces
	// share one namespace, edge types have their own (a node and an edge
	// may share a name, as in the original).
	decls map[string]*Decl
	// accepted relaxes the compatibility rules for a schema accepted
	// before them (CompileAccepted).
	accepted bool
}

// declKey is the key of d in resolver.decls.
func declKey(kind DeclKind, name string) string {
	if kind == DeclEdge {
		return "edge:" + name
	}
	return name
}

// lookup finds the declaration named name, a node type or interface first,
// then an edge type.
func (r *resolver) lookup(name string) (*Decl, bool) {
	if d, ok := r.decls[name]; ok {
		return d, true
	}
	d, ok := r.decls[declKey(DeclEdge, name)]
	return d, ok
}

// Reserved property names: storage system columns and the loader's own
// fields. "id" (and "src"/"dst" on edges) are the physical columns.
var reservedNames = []string{"_rowid", "_rowaddr", "_rowoffset", "_row_created_at_version", "_row_last_updated_at_version", "_tombstone"}

var baseKinds = map[string]Kind{
	"String": KindString, "Bool": KindBool,
	"I32": KindI32, "I64": KindI64, "U32": KindU32, "U64": KindU64,
	"F32": KindF32, "F64": KindF64,
	"Date": KindDate, "DateTime": KindDateTime, "Blob": KindBlob,
}

var typeSpellings = []string{"String", "Bool", "I32", "I64", "U32", "U64", "F32", "F64", "Date", "DateTime", "Blob", "Vector", "enum"}

// typeAliases are spellings from other languages, with the .pg type to use.
var typeAliases = map[string]string{
	"int": "I64", "integer": "I64", "long": "I64", "int32": "I32", "int64": "I64", "Int": "I64", "Integer": "I64",
	"uint32": "U32", "uint64": "U64", "float": "F64", "double": "F64", "Float": "F64", "Double": "F64", "float32": "F32", "float64": "F64",
	"str": "String", "text": "String", "Text": "String", "bool": "Bool", "boolean": "Bool", "Boolean": "Bool",
	"timestamp": "DateTime", "Timestamp": "DateTime", "datetime": "DateTime", "bytes": "Blob", "Bytes": "Blob",
	"Enum": "enum", "List": "[T]", "list": "[T]", "vector": "Vector", "date": "Date",
}

func isUpperStart(s string) bool { return s != "" && s[0] >= 'A' && s[0] <= 'Z' }
func isLowerStart(s string) bool { return s != "" && (s[0] >= 'a' && s[0] <= 'z' || s[0] == '_') }

func (r *resolver) run(f *File) error {
	// Pass 1: names, so references may point forward.
	for _, d := range f.Decls {
		n := d.Name
		if !isUpperStart(n.Name) {
			return errAt(n.Pos, "write "+upperFirst(n.Name), "%s name %q must start with an uppercase letter", d.Kind, n.Name)
		}
		if prev, ok := r.decls[declKey(d.Kind, n.Name)]; ok {
			return errAt(n.Pos, fmt.Sprintf("%s %s is already declared at %d:%d; rename one of them", prev.Kind, n.Name, prev.Name.Pos.Line, prev.Name.Pos.Col), "duplicate name %q", n.Name)
		}
		if d.Kind == DeclEdge {
			for _, prev := range r.decls {
				if prev.Kind == DeclEdge && strings.EqualFold(prev.Name.Name, n.Name) {
					return errAt(n.Pos, "edge names are matched case-insensitively in queries; rename one of them", "edge %q differs from edge %q only in case", n.Name, prev.Name.Name)
				}
			}
		}
		r.decls[declKey(d.Kind, n.Name)] = d
	}
	// Pass 2: interfaces first (nodes copy their properties), then the rest in
	// source order.
	for _, d := range f.Decls {
		if d.Kind == DeclInterface {
			if err := r.iface(d); err != nil {
				return err
			}
		}
	}
	for _, d := range f.Decls {
		var err error
		switch d.Kind {
		case DeclNode:
			err = r.node(d)
		case DeclEdge:
			err = r.edge(d)
		}
		if err != nil {
			return err
		}
	}
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

// constraintSet collects an owner's constraints before they are applied.
type constraintSet struct {
	key    []string
	keyPos Pos
	hasKey bool
	// Properties whose @range/@check the declaration itself set (as opposed
	// to inheriting it), so a second one is a duplicate, not an override.
	ownRange map[string]bool
	ownCheck map[string]bool
	unique   [][]string
	index    [][]string
}

func (cs *constraintSet) own(m *map[string]bool, name string) {
	if *m == nil {
		*m = map[string]bool{}
	}
	(*m)[name] = true
}

func (r *resolver) iface(d *Decl) error {
	in := &Interface{Name: d.Name.Name, Pos: d.Name.Pos}
	cs := &constraintSet{}
	props, err := r.props(d, in.Name, cs)
	if err != nil {
		return err
	}
	if len(d.Constraints) > 0 {
		a := d.Constraints[0]
		return errAt(a.Pos, "write it on the property (name: String @key) or in the body of the node types that implement "+in.Name, "interfaces take no body constraints, found @%s", a.Name)
	}
	in.Properties = props
	if err := r.applyConstraints(in.Name, props, cs); err != nil {
		return err
	}
	if err := checkEmbeds(props); err != nil {
		return err
	}
	r.c.Interfaces = append(r.c.Interfaces, in)
	r.c.ifaces[in.Name] = in
	return nil
}

func (r *resolver) node(d *Decl) error {
	n := &NodeType{Name: d.Name.Name, Pos: d.Name.Pos}
	if err := r.typeAnnotations(d, &n.Annotations); err != nil {
		return err
	}
	cs := &constraintSet{}
	own, err := r.props(d, n.Name, cs)
	if err != nil {
		return err
	}
	// Inherited properties first, in implements order.
	var props []*Property
	from := map[string]string{} // property -> interface it came from
	for _, id := range d.Implements {
		in, ok := r.c.ifaces[id.Name]
		if !ok {
			hint := "declare interface " + id.Name + " { ... } or remove it from implements"
			if other, ok := r.lookup(id.Name); ok {
				hint = id.Name + " is a " + other.Kind.String() + "; only interfaces can be implemented"
			} else if s := suggest(id.Name, r.names(DeclInterface)); s != "" {
				hint = "did you mean " + s + "?"
			}
			return errAt(id.Pos, hint, "unknown interface %q", id.Name)
		}
		if slices.Contains(n.Implements, id.Name) {
			return errAt(id.Pos, "list each interface once", "%s implements %s twice", n.Name, id.Name)
		}
		n.Implements = append(n.Implements, id.Name)
		for _, ip := range in.Properties {
			if prev, ok := findProp(props, ip.Name); ok {
				if prev.Type.Equal(ip.Type) && prev.Nullable == ip.Nullable {
					continue // same property from two interfaces
				}
				return errAt(id.Pos, "make the two declarations agree or rename one", "interface %s declares %s: %s, which conflicts with %s: %s from interface %s", in.Name, ip.Name, typeText(ip), ip.Name, typeText(prev), from[ip.Name])
			}
			cp := *ip
			cp.Owner, cp.Inherited = n.Name, in.Name
			cp.Annotations = slices.Clone(ip.Annotations)
			if mine, ok := findProp(own, ip.Name); ok {
				if !mine.Type.Equal(ip.Type) || mine.Nullable != ip.Nullable {
					return errAt(mine.Pos, "write "+ip.Name+": "+typeText(ip)+" or remove the line (it is inherited)", "property %s: %s conflicts with interface %s, which declares %s: %s", mine.Name, typeText(mine), in.Name, ip.Name, typeText(ip))
				}
				mergeProp(&cp, mine)
				if mine.Range != nil {
					cs.own(&cs.ownRange, ip.Name)
				}
				if mine.Check != nil {
					cs.own(&cs.ownCheck, ip.Name)
				}
			}
			from[ip.Name] = in.Name
			props = append(props, &cp)
		}
	}
	for _, p := range own {
		if _, ok := from[p.Name]; !ok {
			props = append(props, p)
		}
	}
	// Interface short-form constraints carry over.
	for _, p := range props {
		if p.Inherited == "" {
			continue
		}
		in := r.c.ifaces[p.Inherited]
		ip, _ := in.Property(p.Name)
		if _, ok := ip.Annotations.Get("key"); ok {
			if !cs.hasKey {
				cs.hasKey, cs.key, cs.keyPos = true, []string{p.Name}, p.Pos
			} else if !slices.Equal(cs.key, []string{p.Name}) {
				return errAt(cs.keyPos, "a node has at most one @key; for a composite key write @key(a, b) in the body", "%s has more than one @key (interface %s marks %s as @key)", n.Name, in.Name, p.Name)
			}
		}
		if _, ok := ip.Annotations.Get("unique"); ok {
			cs.unique = append(cs.unique, []string{p.Name})
		}
		if _, ok := ip.Annotations.Get("index"); ok {
			cs.index = append(cs.index, []string{p.Name})
		}
	}
	if err := r.bodyConstraints(d, props, cs); err != nil {
		return err
	}
	if err := r.applyConstraints(n.Name, props, cs); err != nil {
		return err
	}
	if err := checkEmbeds(props); err != nil {
		return err
	}
	n.Properties = props
	if cs.hasKey {
		n.Key = cs.key
	}
	n.Unique, n.Index = cs.unique, cs.index
	r.c.Nodes = append(r.c.Nodes, n)
	r.c.nodes[n.Name] = n
	return nil
}

func mergeProp(dst, mine *Property) {
	dst.Pos = mine.Pos
	dst.Key = dst.Key || mine.Key
	dst.Unique = dst.Unique || mine.Unique
	dst.Index = dst.Index || mine.Index
	if mine.Range != nil {
		dst.Range = mine.Range
	}
	if mine.Check != nil {
		dst.Check = mine.Check
	}
	if mine.Embed != nil {
		dst.Embed = mine.Embed
	}
	for _, a := range mine.Annotations {
		switch a.Name {
		case "description", "instruction", "rename_from", "embed", "range", "check":
			// Single-valued: the node's own replaces the interface's.
			dst.Annotations = slices.DeleteFunc(dst.Annotations, func(b Annotation) bool { return b.Name == a.Name })
		}
		if !slices.ContainsFunc(dst.Annotations, func(b Annotation) bool { return b.String() == a.String() }) {
			dst.Annotations = append(dst.Annotations, a)
		}
	}
}

func typeText(p *Property) string {
	if p.Nullable {
		return p.Type.String() + "?"
	}
	return p.Type.String()
}

func (r *resolver) names(kind DeclKind) []string {
	var out []string
	for _, d := range r.decls {
		if d.Kind == kind {
			out = append(out, d.Name.Name)
		}
	}
	sort.Strings(out)
	return out
}

func (r *resolver) edge(d *Decl) error {
	e := &EdgeType{Name: d.Name.Name, Pos: d.Name.Pos, Card: Card{Min: 0, Max: -1}}
	for _, end := range []struct {
		id  Ident
		dst *string
	}{{d.From, &e.From}, {d.To, &e.To}} {
		if d, ok := r.decls[end.id.Name]; !ok || d.Kind != DeclNode {
			hint := "declare node " + end.id.Name + " { ... } or name an existing node type"
			if other, ok := r.lookup(end.id.Name); ok {
				hint = end.id.Name + " is " + article(other.Kind) + "; edges connect node types"
			} else if s := suggest(end.id.Name, r.names(DeclNode)); s != "" {
				hint = "did you mean " + s + "?"
			}
			return errAt(end.id.Pos, hint, "edge %s: unknown node type %q", e.Name, end.id.Name)
		}
		*end.dst = end.id.Name
	}
	cardSeen := false
	for _, a := range d.Annotations {
		if a.Name != "card" {
			continue
		}
		if cardSeen {
			return errAt(a.Pos, "give @card once", "duplicate @card on edge %s", e.Name)
		}
		cardSeen = true
		card, err := parseCard(a)
		if err != nil {
			return err
		}
		e.Card = card
	}
	if err := r.typeAnnotations(d, &e.Annotations); err != nil {
		return err
	}
	cs := &constraintSet{}
	props, err := r.props(d, e.Name, cs)
	if err != nil {
		return err
	}
	if err := r.bodyConstraints(d, props, cs); err != nil {
		return err
	}
	if err := r.applyConstraints(e.Name, props, cs); err != nil {
		return err
	}
	if err := checkEmbeds(props); err != nil {
		return err
	}
	e.Properties = props
	e.Unique, e.Index = cs.unique, cs.index
	r.c.Edges = append(r.c.Edges, e)
	r.c.edges[e.Name] = e
	r.c.edgesFold[strings.ToLower(e.Name)] = e
	return nil
}

func article(k DeclKind) string {
	switch k {
	case DeclInterface:
		return "an interface"
	case DeclEdge:
		return "an edge type"
	}
	return "a " + k.String() + " type"
}

func parseCard(a Annotation) (Card, error) {
	const hint = "write @card(min..max), e.g. @card(0..1), @card(1..) or @card(0..*)"
	if len(a.Args) != 1 || a.Args[0].Kind != ArgRange || a.Args[0].Key != "" {
		return Card{}, errAt(a.Pos, hint, "@card takes one range")
	}
	arg := a.Args[0]
	lo, hi, _ := strings.Cut(arg.Value, "..")
	card := Card{Max: -1}
	var err error
	if lo == "" {
		return Card{}, errAt(arg.Pos, hint, "@card needs a minimum")
	}
	if card.Min, err = strconv.Atoi(lo); err != nil || card.Min < 0 || card.Min > 1<<31-1 {
		return Card{}, errAt(arg.Pos, hint, "@card minimum %s is not a whole number from 0", lo)
	}
	if hi != "" && hi != "*" {
		if card.Max, err = strconv.Atoi(hi); err != nil || card.Max < 1 || card.Max > 1<<31-1 {
			return Card{}, errAt(arg.Pos, hint, "@card maximum %s is not a whole number from 1", hi)
		}
		if card.Min > card.Max {
			return Card{}, errAt(arg.Pos, fmt.Sprintf("write @card(%d..%d)", card.Max, card.Min), "@card minimum %d is greater than maximum %d", card.Min, card.Max)
		}
	}
	return card, nil
}

// typeAnnotations checks a node's or edge's header annotations and keeps them
// (all but @card, which EdgeType.Card holds).
func (r *resolver) typeAnnotations(d *Decl, out *Annotations) error {
	seen := map[string]bool{}
	for _, a := range d.Annotations {
		switch a.Name {
		case "card":
			if d.Kind != DeclEdge {
				return errAt(a.Pos, "@card belongs on an edge: edge E: From -> To @card(0..1)", "@card on %s %s", d.Kind, d.Name.Name)
			}
			continue
		case "key", "unique", "index", "range", "check":
			return errAt(a.Pos, "write it on a property (name: String @"+a.Name+") or in the body (@"+a.Name+"(name))", "@%s is a constraint and goes in the body, not on the %s header", a.Name, d.Kind)
		case "embed":
			return errAt(a.Pos, "write it on a Vector property: v: Vector(N) @embed(\"text_prop\")", "@embed goes on a Vector property, not on a %s", d.Kind)
		}
		if err := r.checkKnownAnnotation(a, seen); err != nil {
			return err
		}
		*out = append(*out, a)
	}
	return nil
}

// checkKnownAnnotation validates the arguments of the metadata annotations
// the catalog interprets; unknown annotations pass unchecked.
func (r *resolver) checkKnownAnnotation(a Annotation, seen map[string]bool) error {
	switch a.Name {
	case "description", "instruction", "rename_from":
		if seen[a.Name] {
			return errAt(a.Pos, "give @"+a.Name+" once", "duplicate @%s", a.Name)
		}
		seen[a.Name] = true
		if len(a.Args) != 1 || a.Args[0].Kind != ArgString || a.Args[0].Key != "" {
			ex := `@description("what this is")`
			switch a.Name {
			case "instruction":
				ex = `@instruction("how to use it")`
			case "rename_from":
				ex = `@rename_from("OldName")`
			}
			return errAt(a.Pos, "write "+ex, "@%s takes one string", a.Name)
		}
		if strings.TrimSpace(a.Args[0].Value) == "" && !r.accepted {
			return errAt(a.Args[0].Pos, "give the text, or remove the annotation", "@%s needs a non-empty string", a.Name)
		}
	}
	return nil
}

// resolveType turns a written type into a Type.
func (r *resolver) resolveType(te *TypeExpr, inList bool) (Type, error) {
	switch te.Name {
	case listTypeName:
		if inList {
			return Type{}, errAt(te.Pos, "lists hold base scalars: String, Bool, I32, I64, U32, U64, F32, F64, Date, DateTime", "nested lists are not supported")
		}
		elem, err := r.resolveType(te.Elem, true)
		if err != nil {
			return Type{}, err
		}
		if elem.Kind == KindBlob || elem.Kind == KindVector || elem.Kind == KindEnum {
			return Type{}, errAt(te.Elem.Pos, "lists hold base scalars: String, Bool, I32, I64, U32, U64, F32, F64, Date, DateTime", "lists of %s are not supported", elem.Kind)
		}
		return Type{Kind: KindList, Elem: &elem}, nil
	case "Vector":
		return Type{Kind: KindVector, Dim: int(te.Dim)}, nil
	case "enum":
		vals := make([]string, 0, len(te.Values))
		for _, v := range te.Values {
			if slices.Contains(vals, v.Name) {
				return Type{}, errAt(v.Pos, "list each enum value once", "duplicate enum value %q", v.Name)
			}
			vals = append(vals, v.Name)
		}
		sort.Strings(vals)
		return Type{Kind: KindEnum, Values: vals}, nil
	}
	if k, ok := baseKinds[te.Name]; ok {
		return Type{Kind: k}, nil
	}
	hint := ""
	if d, ok := r.lookup(te.Name); ok {
		if d.Kind == DeclNode {
			hint = te.Name + " is a node type; properties hold values, so link nodes with an edge: edge E: From -> " + te.Name
		} else {
			hint = te.Name + " is " + article(d.Kind) + ", not a property type"
		}
	} else if alias, ok := typeAliases[te.Name]; ok {
		hint = "did you mean " + alias + "?"
	} else if h := didYouMean(te.Name, typeSpellings); h != "" {
		hint = h
	} else {
		hint = "property types are String, Bool, I32, I64, U32, U64, F32, F64, Date, DateTime, Blob, Vector(N), [T], enum(a, b)"
	}
	return Type{}, errAt(te.Pos, hint, "unknown type %q", te.Name)
}

// props resolves the property lines of a declaration, with their
// property-level annotations. Short-form @key/@unique/@index are recorded in
// cs.
func (r *resolver) props(d *Decl, owner string, cs *constraintSet) ([]*Property, error) {
	var out []*Property
	for _, pd := range d.Props {
		name := pd.Name
		if !isLowerStart(name.Name) {
			return nil, errAt(name.Pos, "write "+lowerFirst(name.Name), "property name %q must start with a lowercase letter or _", name.Name)
		}
		if name.Name == ColID || d.Kind == DeclEdge && (name.Name == ColSrc || name.Name == ColDst) {
			hint := "rename it; every row already has an id column (keyed nodes derive it from @key)"
			if name.Name != ColID {
				hint = "rename it; every edge row already has src and dst columns holding the endpoint ids"
			}
			return nil, errAt(name.Pos, hint, "property name %q is reserved", name.Name)
		}
		if slices.Contains(reservedNames, name.Name) {
			return nil, errAt(name.Pos, "rename it; names "+strings.Join(reservedNames, ", ")+" are used by the storage layer", "property name %q is reserved", name.Name)
		}
		if prev, ok := findProp(out, name.Name); ok {
			return nil, errAt(name.Pos, fmt.Sprintf("it is already declared at %d:%d; remove one", prev.Pos.Line, prev.Pos.Col), "duplicate property %q in %s", name.Name, owner)
		}
		t, err := r.resolveType(pd.Type, false)
		if err != nil {
			return nil, err
		}
		p := &Property{Name: name.Name, Type: t, Nullable: pd.Nullable, Owner: owner, Pos: name.Pos}
		seen := map[string]bool{}
		for _, a := range pd.Annotations {
			if err := r.propAnnotation(d, p, a, seen, cs); err != nil {
				return nil, err
			}
			p.Annotations = append(p.Annotations, a)
		}
		out = append(out, p)
	}
	return out, nil
}

func (r *resolver) propAnnotation(d *Decl, p *Property, a Annotation, seen map[string]bool, cs *constraintSet) error {
	switch a.Name {
	case "key", "unique", "index":
		if a.Args != nil {
			return errAt(a.Pos, "on a property write @"+a.Name+" with no arguments; for several properties write @"+a.Name+"(a, b) in the body", "@%s on property %s takes no arguments", a.Name, p.Name)
		}
		if seen[a.Name] {
			return errAt(a.Pos, "give @"+a.Name+" once", "duplicate @%s on property %s", a.Name, p.Name)
		}
		seen[a.Name] = true
		switch a.Name {
		case "key":
			if d.Kind == DeclEdge {
				return errAt(a.Pos, "edges have no @key: their id is generated; use @unique("+p.Name+") to forbid duplicates", "@key on edge property %s", p.Name)
			}
			if cs.hasKey {
				return errAt(a.Pos, fmt.Sprintf("a node has at most one @key; for a composite key write @key(%s, %s) in the body", strings.Join(cs.key, ", "), p.Name), "%s has more than one @key", p.Owner)
			}
			cs.hasKey, cs.key, cs.keyPos = true, []string{p.Name}, a.Pos
			p.Key = true
		case "unique":
			cs.unique = append(cs.unique, []string{p.Name})
		case "index":
			cs.index = append(cs.index, []string{p.Name})
		}
		return nil
	case "range":
		if seen[a.Name] {
			return errAt(a.Pos, "give @range once", "duplicate @range on property %s", p.Name)
		}
		seen[a.Name] = true
		if len(a.Args) != 1 || a.Args[0].Kind != ArgRange {
			return errAt(a.Pos, "write @range(lo..hi) on the property, e.g. @range(0..150), @range(1..) or @range(..100)", "@range on property %s takes one range", p.Name)
		}
		return setRange(p, a.Args[0])
	case "check":
		if seen[a.Name] {
			return errAt(a.Pos, "give @check once", "duplicate @check on property %s", p.Name)
		}
		seen[a.Name] = true
		if len(a.Args) != 1 || a.Args[0].Kind != ArgString {
			return errAt(a.Pos, `write @check("regex") on the property, e.g. @check("^[a-z]+$")`, "@check on property %s takes one string", p.Name)
		}
		return setCheck(p, a.Args[0])
	case "embed":
		if seen[a.Name] {
			return errAt(a.Pos, "give @embed once", "duplicate @embed on property %s", p.Name)
		}
		seen[a.Name] = true
		if p.Type.Kind != KindVector {
			return errAt(a.Pos, "put @embed on a Vector(N) property that holds embeddings of a String property", "@embed on %s property %s; it is only allowed on Vector properties", p.Type, p.Name)
		}
		em := &Embed{}
		for i, arg := range a.Args {
			switch {
			case i == 0 && arg.Key == "" && (arg.Kind == ArgString || arg.Kind == ArgIdent):
				// @embed(body) and @embed("body") are the same, as in the original.
				em.Source = arg.Value
			case arg.Key == "model" && arg.Kind == ArgString && em.Model == "":
				em.Model = arg.Value
			default:
				return errAt(arg.Pos, `write @embed("source_prop") or @embed("source_prop", model="provider/model")`, "unexpected @embed argument")
			}
		}
		if em.Source == "" {
			return errAt(a.Pos, `write @embed("source_prop") naming the String property to embed`, "@embed needs the source property")
		}
		p.Embed = em
		return nil
	case "card":
		return errAt(a.Pos, "@card belongs on the edge declaration: edge E: From -> To @card(0..1)", "@card on property %s", p.Name)
	case "instruction":
		if !r.accepted {
			return errAt(a.Pos, "put @instruction on the node or edge type, or use @description on the property", "@instruction on property %s; it is only allowed on node and edge types", p.Name)
		}
	}
	return r.checkKnownAnnotation(a, seen)
}

func setRange(p *Property, arg Arg) error {
	if !p.Type.Kind.Numeric() {
		return errAt(arg.Pos, "use @range on I32, I64, U32, U64, F32 or F64 properties; for strings use @check(\"regex\")", "@range on %s property %s; it needs a numeric property", p.Type, p.Name)
	}
	lo, hi, _ := strings.Cut(arg.Value, "..")
	if lo == "" && hi == "" {
		return errAt(arg.Pos, "give at least one bound, e.g. 0.. or ..100", "@range on %s has no bounds", p.Name)
	}
	if hi == "*" {
		return errAt(arg.Pos, "leave the upper bound empty for an open range, e.g. 0..", "@range takes numbers, found *")
	}
	rg := &Range{}
	for _, b := range []struct {
		text string
		dst  **float64
	}{{lo, &rg.Min}, {hi, &rg.Max}} {
		if b.text == "" {
			continue
		}
		f, err := strconv.ParseFloat(b.text, 64)
		if err != nil {
			return errAt(arg.Pos, "bounds are numbers such as 0, -5 or 2.5", "invalid @range bound %s", b.text)
		}
		*b.dst = &f
	}
	if rg.Min != nil && rg.Max != nil && *rg.Min > *rg.Max {
		return errAt(arg.Pos, fmt.Sprintf("write @range(%s..%s)", hi, lo), "@range on %s: lower bound %s is greater than upper bound %s", p.Name, lo, hi)
	}
	p.Range = rg
	return nil
}

func setCheck(p *Property, arg Arg) error {
	if p.Type.Kind != KindString {
		hint := "use @check on String properties"
		if p.Type.Kind.Numeric() {
			hint = "for numbers use @range(lo..hi)"
		}
		return errAt(arg.Pos, hint, "@check on %s property %s; it needs a String property", p.Type, p.Name)
	}
	re, err := regexp.Compile(arg.Value)
	if err != nil {
		return errAt(arg.Pos, "write an RE2 regular expression (Go regexp syntax)", "invalid @check pattern: %v", err)
	}
	p.Check = &Check{Pattern: arg.Value, re: re}
	return nil
}

// bodyConstraints applies @key(...), @unique(...), @index(...), @range(...)
// and @check(...) written in a node or edge body.
func (r *resolver) bodyConstraints(d *Decl, props []*Property, cs *constraintSet) error {
	known := make([]string, len(props))
	for i, p := range props {
		known[i] = p.Name
	}
	propArg := func(a Annotation, arg Arg) (*Property, error) {
		if arg.Kind != ArgIdent || arg.Key != "" {
			return nil, errAt(arg.Pos, "name a property of "+d.Name.Name+", e.g. @"+a.Name+"("+firstOr(known, "name")+")", "@%s expects a property name, found %s", a.Name, argText(arg))
		}
		p, ok := findProp(props, arg.Value)
		if !ok {
			hint := didYouMean(arg.Value, known)
			if hint == "" {
				hint = d.Name.Name + " has " + listOrNone(known)
			}
			return nil, errAt(arg.Pos, hint, "@%s: %s has no property %q", a.Name, d.Name.Name, arg.Value)
		}
		return p, nil
	}
	group := func(a Annotation) ([]string, error) {
		if len(a.Args) == 0 {
			return nil, errAt(a.Pos, "name the properties in the body form, e.g. @"+a.Name+"("+firstOr(known, "name")+"), or write @"+a.Name+" after a property", "@%s in a body needs property names", a.Name)
		}
		var names []string
		for _, arg := range a.Args {
			name := arg.Value
			// An edge's @unique and @index may name its endpoint columns:
			// @unique(src, dst) allows one edge per pair of nodes.
			endpoint := d.Kind == DeclEdge && a.Name != "key" && arg.Kind == ArgIdent && arg.Key == "" && (name == ColSrc || name == ColDst)
			if !endpoint {
				p, err := propArg(a, arg)
				if err != nil {
					return nil, err
				}
				name = p.Name
			}
			if slices.Contains(names, name) {
				return nil, errAt(arg.Pos, "name each property once", "@%s names %s twice", a.Name, name)
			}
			names = append(names, name)
		}
		return names, nil
	}
	for _, a := range d.Constraints {
		switch a.Name {
		case "key":
			if d.Kind == DeclEdge {
				return errAt(a.Pos, "edges have no @key: their id is generated; use @unique(...) to forbid duplicates", "@key on edge %s", d.Name.Name)
			}
			names, err := group(a)
			if err != nil {
				return err
			}
			if cs.hasKey && slices.Equal(cs.key, names) {
				continue // the same key written twice (e.g. also inherited) is one key
			}
			if cs.hasKey {
				return errAt(a.Pos, fmt.Sprintf("a node has at most one @key (%s is already the key); for a composite key write one @key(a, b)", strings.Join(cs.key, ", ")), "%s has more than one @key", d.Name.Name)
			}
			cs.hasKey, cs.key, cs.keyPos = true, names, a.Pos
		case "unique":
			names, err := group(a)
			if err != nil {
				return err
			}
			cs.unique = append(cs.unique, names)
		case "index":
			names, err := group(a)
			if err != nil {
				return err
			}
			cs.index = append(cs.index, names)
		case "range", "check":
			form := "@range(prop, lo..hi)"
			if a.Name == "check" {
				form = `@check(prop, "regex")`
			}
			if len(a.Args) != 2 {
				return errAt(a.Pos, "write "+form+" in the body, or @"+a.Name+"(...) after the property", "@%s in a body takes a property and a %s", a.Name, map[string]string{"range": "range", "check": "pattern"}[a.Name])
			}
			p, err := propArg(a, a.Args[0])
			if err != nil {
				return err
			}
			if a.Name == "range" {
				if a.Args[1].Kind != ArgRange {
					return errAt(a.Args[1].Pos, "write "+form+", e.g. @range("+p.Name+", 0..100)", "@range expects a range lo..hi, found %s", argText(a.Args[1]))
				}
				prev := p.Range
				if err := setRange(p, a.Args[1]); err != nil {
					return err
				}
				// A node may override an inherited range; a second one of its own is a duplicate.
				if prev != nil && (p.Inherited == "" || cs.ownRange[p.Name]) {
					return errAt(a.Pos, "give one @range per property", "duplicate @range on %s", p.Name)
				}
				cs.own(&cs.ownRange, p.Name)
			} else {
				if a.Args[1].Kind != ArgString {
					return errAt(a.Args[1].Pos, "write "+form+`, e.g. @check(`+p.Name+`, "^[a-z]+$")`, "@check expects a \"pattern\" string, found %s", argText(a.Args[1]))
				}
				prev := p.Check
				if err := setCheck(p, a.Args[1]); err != nil {
					return err
				}
				if prev != nil && (p.Inherited == "" || cs.ownCheck[p.Name]) {
					return errAt(a.Pos, "give one @check per property; combine patterns with |", "duplicate @check on %s", p.Name)
				}
				cs.own(&cs.ownCheck, p.Name)
			}
			// Keep the body form with the property, so Annotations show it.
			p.Annotations = append(p.Annotations, Annotation{Name: a.Name, Args: a.Args[1:], Pos: a.Pos})
		default:
			hint := "body constraints are @key, @unique, @index, @range and @check; put metadata on the " + d.Kind.String() + " header or on a property"
			if h := didYouMean(a.Name, []string{"key", "unique", "index", "range", "check"}); h != "" {
				hint = h
			}
			return errAt(a.Pos, hint, "unknown constraint @%s in %s body", a.Name, d.Name.Name)
		}
	}
	return nil
}

func firstOr(names []string, def string) string {
	if len(names) > 0 {
		return names[0]
	}
	return def
}

func argText(a Arg) string {
	switch a.Kind {
	case ArgString:
		return "string " + quote(a.Value)
	case ArgRange:
		return "range " + a.Value
	case ArgNumber:
		return "number " + a.Value
	}
	return a.Value
}

// applyConstraints checks the collected key/unique/index groups against the
// property types and sets the per-property flags.
func (r *resolver) applyConstraints(owner string, props []*Property, cs *constraintSet) error {
	if cs.hasKey {
		for _, k := range cs.key {
			p, _ := findProp(props, k)
			if p.Nullable {
				return errAt(cs.keyPos, "write "+p.Name+": "+p.Type.String()+" (without ?) or key on another property", "@key property %s of %s is nullable; keys must be required", p.Name, owner)
			}
			switch p.Type.Kind {
			case KindBlob, KindList, KindVector:
				return errAt(cs.keyPos, "key on a String, integer, Bool, Date, DateTime or enum property", "@key property %s is %s, which cannot be a key", p.Name, p.Type)
			}
			p.Key, p.Index = true, true
		}
		if len(cs.key) == 1 {
			p, _ := findProp(props, cs.key[0])
			p.Unique = true
		}
	}
	cs.unique = dedupeGroups(cs.unique)
	cs.index = dedupeGroups(cs.index)
	// A group may name an edge's src or dst column, which is no property.
	for _, g := range cs.unique {
		for _, name := range g {
			p, ok := findProp(props, name)
			if ok && p.Type.Kind == KindBlob {
				return errAt(p.Pos, "remove @unique from the Blob property", "@unique on Blob property %s of %s is not supported", name, owner)
			}
		}
		if p, ok := findProp(props, g[0]); ok && len(g) == 1 {
			p.Unique = true
		}
	}
	for _, g := range cs.index {
		for _, name := range g {
			p, ok := findProp(props, name)
			if !ok {
				continue
			}
			if p.Type.Kind == KindBlob && !r.accepted {
				return errAt(p.Pos, "remove @index from the Blob property; Blob values are not indexed", "@index on Blob property %s of %s is not supported", name, owner)
			}
			p.Index = true
		}
	}
	return nil
}

// dedupeGroups drops repeated groups and sorts the rest, since the order of
// @unique and @index groups carries no meaning.
func dedupeGroups(gs [][]string) [][]string {
	var out [][]string
	for _, g := range gs {
		if !slices.ContainsFunc(out, func(o []string) bool { return slices.Equal(o, g) }) {
			out = append(out, g)
		}
	}
	slices.SortFunc(out, func(a, b []string) int { return slices.Compare(a, b) })
	return out
}

func checkEmbeds(props []*Property) error {
	for _, p := range props {
		if p.Embed == nil {
			continue
		}
		src, ok := findProp(props, p.Embed.Source)
		if !ok {
			names := []string{}
			for _, q := range props {
				if q.Type.Kind == KindString {
					names = append(names, q.Name)
				}
			}
			hint := didYouMean(p.Embed.Source, names)
			if hint == "" {
				hint = "name a String property of " + p.Owner
			}
			return errAt(p.Pos, hint, "@embed on %s: %s has no property %q", p.Name, p.Owner, p.Embed.Source)
		}
		if src.Type.Kind != KindString {
			return errAt(p.Pos, "embed a String property", "@embed on %s: source %s is %s, not String", p.Name, src.Name, src.Type)
		}
	}
	return nil
}

// canonical renders the catalog as normalised .pg text.
func canonical(c *Catalog) string {
	var b strings.Builder
	prop := func(p *Property) {
		fmt.Fprintf(&b, "  %s: %s", p.Name, typeText(p))
		for _, a := range p.Annotations {
			switch a.Name {
			case "key", "unique", "index", "range", "check":
				continue // rendered in body form below
			}
			b.WriteString(" " + a.String())
		}
		b.WriteString("\n")
	}
	constraints := func(props []*Property, key []string, unique, index [][]string) {
		if len(key) > 0 {
			fmt.Fprintf(&b, "  @key(%s)\n", strings.Join(key, ", "))
		}
		for _, g := range unique {
			fmt.Fprintf(&b, "  @unique(%s)\n", strings.Join(g, ", "))
		}
		for _, g := range index {
			fmt.Fprintf(&b, "  @index(%s)\n", strings.Join(g, ", "))
		}
		for _, p := range props {
			if p.Range != nil {
				fmt.Fprintf(&b, "  @range(%s, %s)\n", p.Name, p.Range)
			}
			if p.Check != nil {
				fmt.Fprintf(&b, "  @check(%s, %s)\n", p.Name, quote(p.Check.Pattern))
			}
		}
	}
	for _, in := range c.Interfaces {
		fmt.Fprintf(&b, "interface %s {\n", in.Name)
		for _, p := range in.Properties {
			// Interfaces have no body constraints: every annotation stays on
			// its line, as written.
			fmt.Fprintf(&b, "  %s: %s", p.Name, typeText(p))
			for _, a := range p.Annotations {
				b.WriteString(" " + a.String())
			}
			b.WriteString("\n")
		}
		b.WriteString("}\n\n")
	}
	for _, n := range c.Nodes {
		fmt.Fprintf(&b, "node %s", n.Name)
		for _, a := range n.Annotations {
			b.WriteString(" " + a.String())
		}
		if len(n.Implements) > 0 {
			b.WriteString(" implements " + strings.Join(n.Implements, ", "))
		}
		b.WriteString(" {\n")
		for _, p := range n.Properties {
			prop(p)
		}
		constraints(n.Properties, n.Key, n.Unique, n.Index)
		b.WriteString("}\n\n")
	}
	for _, e := range c.Edges {
		fmt.Fprintf(&b, "edge %s: %s -> %s @card(%s)", e.Name, e.From, e.To, e.Card)
		for _, a := range e.Annotations {
			b.WriteString(" " + a.String())
		}
		if len(e.Properties) == 0 && len(e.Unique) == 0 && len(e.Index) == 0 {
			b.WriteString("\n\n")
			continue
		}
		b.WriteString(" {\n")
		for _, p := range e.Properties {
			prop(p)
		}
		constraints(e.Properties, nil, e.Unique, e.Index)
		b.WriteString("}\n\n")
	}
	return b.String()
}
