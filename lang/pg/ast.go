package pg

// DeclKind says which declaration a Decl is.
type DeclKind uint8

// The declaration kinds.
const (
	DeclInterface DeclKind = iota + 1
	DeclNode
	DeclEdge
)

func (k DeclKind) String() string {
	switch k {
	case DeclInterface:
		return "interface"
	case DeclNode:
		return "node"
	case DeclEdge:
		return "edge"
	}
	return "declaration"
}

// File is a parsed .pg file: its declarations in source order.
type File struct {
	Decls []*Decl
}

// Ident is a name with its position.
type Ident struct {
	Name string
	Pos  Pos
}

// Decl is one top-level declaration as written.
type Decl struct {
	Kind        DeclKind
	Pos         Pos // of the keyword
	Name        Ident
	Implements  []Ident      // node only
	From, To    Ident        // edge only
	Annotations []Annotation // header annotations (an edge's @card included)
	Props       []*PropDecl  // body properties in order
	Constraints []Annotation // body-level @key(...), @unique(...), ...
	HasBody     bool         // an edge may omit its body
}

// PropDecl is one property line as written.
type PropDecl struct {
	Name        Ident
	Type        *TypeExpr
	Nullable    bool
	Annotations []Annotation
}

// TypeExpr is a property type as written, before resolution.
type TypeExpr struct {
	Pos    Pos
	Name   string    // "String", "Vector", "enum", "[]" for [T], or whatever was written
	Dim    int64     // Vector(N)
	Elem   *TypeExpr // [T]
	Values []Ident   // enum(a, b)
}

// listTypeName is TypeExpr.Name for a list type; no identifier can spell it.
const listTypeName = "[]"
