// Package pg holds the .pg schema language: the lexer and parser (source to
// AST), the compiler that resolves and validates an AST into a Catalog, the
// mapping of every property type to its Arrow column type, and the value rules
// (coercion, validation and entity identity) shared by load and mutations.
//
// The language reference for users is docs/schema.md.
package pg

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// ErrInvalidSchema classifies every schema error: errors.Is(err,
// ErrInvalidSchema) holds for each *Error returned by Parse and Compile.
var ErrInvalidSchema = errors.New("invalid schema")

// ErrInvalidValue classifies every value error: errors.Is(err,
// ErrInvalidValue) holds for each error returned by Coerce, Validate,
// CoerceRow and IDFor.
var ErrInvalidValue = errors.New("invalid value")

// Error is a schema error at a position of the source. Line and Col are
// 1-based; Col counts bytes. Hint says what to write instead and may be empty
// only when there is nothing better to say.
type Error struct {
	File string // file name used in Error(); "schema.pg" when empty
	Line int
	Col  int
	Msg  string
	Hint string
}

// Error renders "file:line:col: msg; hint".
func (e *Error) Error() string {
	file := e.File
	if file == "" {
		file = "schema.pg"
	}
	s := fmt.Sprintf("%s:%d:%d: %s", file, e.Line, e.Col, e.Msg)
	if e.Hint != "" {
		s += "; " + e.Hint
	}
	return s
}

// Unwrap makes errors.Is(err, ErrInvalidSchema) true.
func (e *Error) Unwrap() error { return ErrInvalidSchema }

// ValueError is a value that does not fit a property (or a row that does not
// fit a type). Entity and Property name where the value was going.
type ValueError struct {
	Entity   string // node or edge type name
	Property string // property name; empty for row-level errors
	Msg      string // what is wrong and what is expected
}

// Error renders "Type.prop: msg".
func (e *ValueError) Error() string {
	if e.Property == "" {
		return e.Entity + ": " + e.Msg
	}
	return e.Entity + "." + e.Property + ": " + e.Msg
}

// Unwrap makes errors.Is(err, ErrInvalidValue) true.
func (e *ValueError) Unwrap() error { return ErrInvalidValue }

// Pos is a 1-based source position.
type Pos struct {
	Line int `json:"line"`
	Col  int `json:"col"`
}

// Kind is the base kind of a property type.
type Kind uint8

// The property kinds. Their .pg spelling is Kind.String().
const (
	KindInvalid Kind = iota
	KindString
	KindBool
	KindI32
	KindI64
	KindU32
	KindU64
	KindF32
	KindF64
	KindDate     // days since 1970-01-01
	KindDateTime // instant, UTC: stored in microseconds, written in whole milliseconds (DateTimeMicros)
	KindVector   // fixed-length float32 vector, Type.Dim elements
	KindBlob     // bytes
	KindList     // list of Type.Elem (a base scalar)
	KindEnum     // string limited to Type.Values
)

var kindNames = [...]string{
	KindInvalid:  "invalid",
	KindString:   "String",
	KindBool:     "Bool",
	KindI32:      "I32",
	KindI64:      "I64",
	KindU32:      "U32",
	KindU64:      "U64",
	KindF32:      "F32",
	KindF64:      "F64",
	KindDate:     "Date",
	KindDateTime: "DateTime",
	KindVector:   "Vector",
	KindBlob:     "Blob",
	KindList:     "List",
	KindEnum:     "enum",
}

// MarshalText renders the kind by its .pg spelling, so JSON shows "I32".
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// String returns the .pg spelling of the kind ("List" and "enum" for the
// composite kinds).
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// Integer reports whether the kind is I32, I64, U32 or U64.
func (k Kind) Integer() bool { return k >= KindI32 && k <= KindU64 }

// Float reports whether the kind is F32 or F64.
func (k Kind) Float() bool { return k == KindF32 || k == KindF64 }

// Numeric reports whether the kind is an integer or a float (the kinds
// @range accepts).
func (k Kind) Numeric() bool { return k.Integer() || k.Float() }

// Type is a property type without its nullability (see Property.Nullable).
type Type struct {
	Kind   Kind     `json:"kind"`
	Dim    int      `json:"dim,omitempty"`    // KindVector: number of elements, >= 1
	Elem   *Type    `json:"elem,omitempty"`   // KindList: element type, always a base scalar
	Values []string `json:"values,omitempty"` // KindEnum: allowed values, sorted, no duplicates
}

// String returns the canonical .pg spelling: "I32", "Vector(8)",
// "[String]", "enum(a, b)".
func (t Type) String() string {
	switch t.Kind {
	case KindVector:
		return fmt.Sprintf("Vector(%d)", t.Dim)
	case KindList:
		if t.Elem == nil {
			return "[?]"
		}
		return "[" + t.Elem.String() + "]"
	case KindEnum:
		return "enum(" + strings.Join(t.Values, ", ") + ")"
	}
	return t.Kind.String()
}

// Equal reports whether two types are the same type.
func (t Type) Equal(u Type) bool { return t.String() == u.String() }

// Range is a numeric bound from @range. A nil bound is open. Bounds are
// inclusive.
type Range struct {
	Min *float64 `json:"min"`
	Max *float64 `json:"max"`
}

// String renders the range as written in .pg: "1..10", "0..", "..5".
func (r Range) String() string {
	var b strings.Builder
	if r.Min != nil {
		b.WriteString(formatNumber(*r.Min))
	}
	b.WriteString("..")
	if r.Max != nil {
		b.WriteString(formatNumber(*r.Max))
	}
	return b.String()
}

// Check is a regular expression from @check. Values of the property must
// match it (RE2 syntax, unanchored unless the pattern anchors itself).
type Check struct {
	Pattern string `json:"pattern"`
	re      *regexp.Regexp
}

// Match reports whether s satisfies the check.
func (c *Check) Match(s string) bool { return c.re.MatchString(s) }

// Card is an edge multiplicity, counted per source node. Max -1 means
// unbounded. The default is 0..* (Min 0, Max -1).
type Card struct {
	Min int `json:"min"`
	Max int `json:"max"`
}

// String renders "min..max" or "min..*".
func (c Card) String() string {
	if c.Max < 0 {
		return fmt.Sprintf("%d..*", c.Min)
	}
	return fmt.Sprintf("%d..%d", c.Min, c.Max)
}

// ArgKind says how an annotation argument was written.
type ArgKind uint8

// The annotation argument kinds.
const (
	ArgString ArgKind = iota + 1 // "text" (Value holds the unquoted text)
	ArgNumber                    // 12, -1.5
	ArgIdent                     // name, true, false
	ArgRange                     // lo..hi; Value holds the text, either side may be empty
	ArgStar                      // *
)

// MarshalText renders the argument kind as a word.
func (k ArgKind) MarshalText() ([]byte, error) {
	names := map[ArgKind]string{ArgString: "string", ArgNumber: "number", ArgIdent: "ident", ArgRange: "range", ArgStar: "star"}
	if n, ok := names[k]; ok {
		return []byte(n), nil
	}
	return []byte("unknown"), nil
}

// Arg is one annotation argument: positional when Key is empty, otherwise
// key="value".
type Arg struct {
	Key   string  `json:"key,omitempty"`
	Kind  ArgKind `json:"kind"`
	Value string  `json:"value"`
	Pos   Pos     `json:"pos"`
}

// Annotation is an @name or @name(args) as written. Unknown annotations are
// kept verbatim in the catalog; known ones are also decoded into fields
// (Property.Embed, NodeType.Key, ...).
type Annotation struct {
	Name string `json:"name"` // without the "@"
	Args []Arg  `json:"args,omitempty"`
	Pos  Pos    `json:"pos"`
}

// String renders the annotation in canonical .pg form.
func (a Annotation) String() string {
	if a.Args == nil {
		return "@" + a.Name
	}
	parts := make([]string, len(a.Args))
	for i, arg := range a.Args {
		v := arg.Value
		if arg.Kind == ArgString {
			v = quote(v)
		}
		if arg.Key != "" {
			v = arg.Key + "=" + v
		}
		parts[i] = v
	}
	return "@" + a.Name + "(" + strings.Join(parts, ", ") + ")"
}

// Annotations is an ordered list of annotations.
type Annotations []Annotation

// Get returns the first annotation with the given name (without "@").
func (as Annotations) Get(name string) (Annotation, bool) {
	for _, a := range as {
		if a.Name == name {
			return a, true
		}
	}
	return Annotation{}, false
}

// Text returns the first positional string argument of the named annotation,
// e.g. Text("description"); "" when absent.
func (as Annotations) Text(name string) string {
	a, ok := as.Get(name)
	if !ok {
		return ""
	}
	for _, arg := range a.Args {
		if arg.Key == "" && arg.Kind == ArgString {
			return arg.Value
		}
	}
	return ""
}

// Embed is a decoded @embed("source"[, model="provider/model"]): the Vector
// property holds embeddings of the String property Source.
type Embed struct {
	Source string `json:"source"`
	Model  string `json:"model,omitempty"`
}

// Property is one declared (or inherited) property of an interface, node or
// edge type.
type Property struct {
	Name     string `json:"name"`
	Type     Type   `json:"type"`
	Nullable bool   `json:"nullable"` // written T?; otherwise the property is required
	Owner    string `json:"owner"`    // name of the interface, node or edge type that holds it
	// Inherited names the interface the property came from, "" when the type
	// declares it itself.
	Inherited string `json:"inherited,omitempty"`

	Key    bool   `json:"key,omitempty"`    // part of the owner's @key
	Unique bool   `json:"unique,omitempty"` // in a single-property @unique (or the key is just this property)
	Index  bool   `json:"index,omitempty"`  // in some @index group, or part of the key (keys imply an index)
	Range  *Range `json:"range,omitempty"`  // from @range; numeric kinds only
	Check  *Check `json:"check,omitempty"`  // from @check; String only
	Embed  *Embed `json:"embed,omitempty"`  // from @embed; Vector only

	Annotations Annotations `json:"annotations,omitempty"` // as written on the property, constraints included
	Pos         Pos         `json:"pos"`
}

// Interface is a reusable set of properties.
type Interface struct {
	Name        string      `json:"name"`
	Properties  []*Property `json:"properties"`
	Annotations Annotations `json:"annotations,omitempty"`
	Pos         Pos         `json:"pos"`
}

// NodeType is a node type: one table with an "id" column and one column per
// property.
type NodeType struct {
	Name       string   `json:"name"`
	Implements []string `json:"implements,omitempty"` // interface names, as written
	// Properties in column order: inherited interface properties first (in
	// implements order), then the node's own, in declaration order.
	Properties []*Property `json:"properties"`
	// Key is the @key property list in key order; nil for an unkeyed node
	// (whose ids are ULIDs). KeyName() gives the single-key name.
	Key []string `json:"key,omitempty"`
	// Unique holds every @unique group (single-property ones included).
	Unique [][]string `json:"unique,omitempty"`
	// Index holds every @index group.
	Index       [][]string  `json:"index,omitempty"`
	Annotations Annotations `json:"annotations,omitempty"` // type-level annotations
	Pos         Pos         `json:"pos"`
}

// EdgeType is an edge type: one table with "id", "src", "dst" columns and one
// column per property. src holds From node ids, dst holds To node ids.
type EdgeType struct {
	Name        string      `json:"name"`
	From        string      `json:"from"`
	To          string      `json:"to"`
	Card        Card        `json:"card"`
	Properties  []*Property `json:"properties"`
	Unique      [][]string  `json:"unique,omitempty"`
	Index       [][]string  `json:"index,omitempty"`
	Annotations Annotations `json:"annotations,omitempty"` // type-level annotations (@card excluded)
	Pos         Pos         `json:"pos"`
}

// Catalog is a compiled schema. It is immutable once returned by Compile.
type Catalog struct {
	Source     string       `json:"source"`   // the .pg text as given
	Identity   string       `json:"identity"` // sha256 hex of Canonical(); whitespace and comments do not change it
	Interfaces []*Interface `json:"interfaces"`
	Nodes      []*NodeType  `json:"nodes"` // sorted by name
	Edges      []*EdgeType  `json:"edges"` // sorted by name

	ifaces    map[string]*Interface
	nodes     map[string]*NodeType
	edges     map[string]*EdgeType // by exact name
	edgesFold map[string]*EdgeType // by strings.ToLower(name)
	canonical string
}

// Node returns the node type with the given name (exact match).
func (c *Catalog) Node(name string) (*NodeType, bool) {
	n, ok := c.nodes[name]
	return n, ok
}

// Edge returns the edge type with the given name. The lookup is exact first,
// then case-insensitive, so the query language may write "knows" for Knows.
func (c *Catalog) Edge(name string) (*EdgeType, bool) {
	if e, ok := c.edges[name]; ok {
		return e, true
	}
	e, ok := c.edgesFold[strings.ToLower(name)]
	return e, ok
}

// Interface returns the interface with the given name.
func (c *Catalog) Interface(name string) (*Interface, bool) {
	i, ok := c.ifaces[name]
	return i, ok
}

// Canonical returns the normalised .pg text the Identity hashes: types sorted
// by name, one property per line, constraints in body form, no comments. It
// compiles to a catalog with the same Identity.
func (c *Catalog) Canonical() string { return c.canonical }

// Property returns the node type's property with the given name.
func (n *NodeType) Property(name string) (*Property, bool) { return findProp(n.Properties, name) }

// KeyName returns the key property for a single-property key, "" otherwise.
func (n *NodeType) KeyName() string {
	if len(n.Key) == 1 {
		return n.Key[0]
	}
	return ""
}

// Description returns the @description text of the node type.
func (n *NodeType) Description() string { return n.Annotations.Text("description") }

// Property returns the edge type's property with the given name.
func (e *EdgeType) Property(name string) (*Property, bool) { return findProp(e.Properties, name) }

// Description returns the @description text of the edge type.
func (e *EdgeType) Description() string { return e.Annotations.Text("description") }

// Property returns the interface's property with the given name.
func (i *Interface) Property(name string) (*Property, bool) { return findProp(i.Properties, name) }

func findProp(ps []*Property, name string) (*Property, bool) {
	for _, p := range ps {
		if p.Name == name {
			return p, true
		}
	}
	return nil, false
}

var (
	_ error = (*Error)(nil)
	_ error = (*ValueError)(nil)
)
