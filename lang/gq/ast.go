package gq

import "fmt"

// File is a parsed .gq file: one or more query declarations.
type File struct {
	Queries []*QueryDecl
}

// Query picks one declaration by name. With name == "" the file must hold
// exactly one query. Errors carry CodeQueryName and list the names present.
func (f *File) Query(name string) (*QueryDecl, error) {
	if name == "" {
		if len(f.Queries) == 1 {
			return f.Queries[0], nil
		}
		return nil, errorf(CodeQueryName, Pos{}, "the file holds %d queries (%s); name the one to run", len(f.Queries), f.names())
	}
	for _, q := range f.Queries {
		if q.Name == name {
			return q, nil
		}
	}
	return nil, errorf(CodeQueryName, Pos{}, "no query named %q; the file holds: %s", name, f.names())
}

func (f *File) names() string {
	s := ""
	for i, q := range f.Queries {
		if i > 0 {
			s += ", "
		}
		s += q.Name
	}
	return s
}

// QueryDecl is one `query name(params) { body }` declaration. Exactly one of
// Read and Mutation is set.
type QueryDecl struct {
	Pos         Pos
	Name        string
	Keyword     string // "query" or "mutation"
	Params      []*ParamDecl
	Annotations []*Annotation
	Read        *ReadBody
	Mutation    []Statement

	// mixed is the D₂ violation of a mutation body, reported when this
	// query is checked (not when the file is parsed, so the file's other
	// queries still run).
	mixed *Error
}

// CheckShape reports the rules a declaration must satisfy whatever the
// schema: the D₂ rule (a mutation either inserts/updates or deletes, never
// both). The error is an *Error with CodeMixedMutation that names the query;
// it needs no I/O, so a caller can refuse the query before any.
func (q *QueryDecl) CheckShape() error {
	if q.mixed == nil {
		return nil
	}
	e := *q.mixed
	e.Query = q.Name
	return &e
}

// Annotation is `@name("text")` on a query declaration (description, instruction).
type Annotation struct {
	Pos  Pos
	Name string
	Arg  string
}

// ParamDecl is `$name: Type` in a query's parameter list.
type ParamDecl struct {
	Pos  Pos
	Name string
	Type *TypeRef
}

// TypeRef is a parameter type as written: Name (String, I32, ...), a list
// `[Elem]`, or `Vector(Dim)`; Nullable for a trailing `?`.
type TypeRef struct {
	Pos      Pos
	Name     string // scalar name, or "Vector"; empty for a list
	Elem     *TypeRef
	Dim      int
	Nullable bool
}

func (t *TypeRef) String() string {
	s := t.Name
	switch {
	case t.Elem != nil:
		s = "[" + t.Elem.String() + "]"
	case t.Name == "Vector":
		s = fmt.Sprintf("Vector(%d)", t.Dim)
	}
	if t.Nullable {
		s += "?"
	}
	return s
}

// ReadBody is `match {..} return {..} [order {..}] [limit N]`.
type ReadBody struct {
	Match  []Clause
	Return []*ReturnItem
	Order  []*OrderItem
	Limit  *Expr // integer literal or parameter; nil when absent
}

// Clause is one match clause: *BindingClause, *TraversalClause, *FilterClause
// or *NotClause.
type Clause interface{ clausePos() Pos }

// BindingClause is `$x: Type { prop: value, ... }`.
type BindingClause struct {
	Pos   Pos
	Var   string
	Type  string
	TPos  Pos
	Props []*PropValue
}

// PropValue is `prop: value` in a binding or a mutation.
type PropValue struct {
	Pos   Pos
	Name  string
	Value *Expr
}

// TraversalClause is `$a edge $b`, `$a edge{min,max} $b`, `$a <edge> $b` or
// `$a $e:edge $b`. HasHops is false when no {min,max} was written.
type TraversalClause struct {
	Pos        Pos
	From       string
	FromPos    Pos
	Edge       string
	EdgePos    Pos
	EdgeVar    string // "" unless `$e:edge`
	Undirected bool
	HasHops    bool
	Min, Max   int
	HasMax     bool
	HopPos     Pos
	To         string
	ToPos      Pos
}

// FilterClause is `left op right`.
type FilterClause struct {
	Pos   Pos
	Left  *Expr
	Op    CmpOp
	OpPos Pos
	Right *Expr
}

// NotClause is `not { clause+ }`.
type NotClause struct {
	Pos     Pos
	Clauses []Clause
}

func (c *BindingClause) clausePos() Pos   { return c.Pos }
func (c *TraversalClause) clausePos() Pos { return c.Pos }
func (c *FilterClause) clausePos() Pos    { return c.Pos }
func (c *NotClause) clausePos() Pos       { return c.Pos }

// CmpOp is a comparison operator.
type CmpOp string

// Comparison operators.
const (
	OpEq         CmpOp = "="
	OpNe         CmpOp = "!="
	OpLt         CmpOp = "<"
	OpLe         CmpOp = "<="
	OpGt         CmpOp = ">"
	OpGe         CmpOp = ">="
	OpContains   CmpOp = "contains"
	OpStartsWith CmpOp = "starts_with"
)

// Holds applies an ordering operator (=, !=, <, <=, >, >=) to a three-way
// comparison c; it is false for contains and starts_with, which are not
// orderings. Reads and mutation matching share it.
func (op CmpOp) Holds(c int) bool {
	switch op {
	case OpEq:
		return c == 0
	case OpNe:
		return c != 0
	case OpLt:
		return c < 0
	case OpLe:
		return c <= 0
	case OpGt:
		return c > 0
	case OpGe:
		return c >= 0
	}
	return false
}

// ExprKind says which fields of an Expr are set.
type ExprKind int

// Expression kinds.
const (
	ExprVar       ExprKind = iota + 1 // $x (a variable or a parameter)
	ExprProp                          // $x.prop
	ExprString                        // "text"
	ExprInt                           // 42 or -42 (Text holds the digits with sign)
	ExprFloat                         // 1.5
	ExprBool                          // true / false
	ExprNull                          // null
	ExprDate                          // date("2024-01-31")
	ExprDateTime                      // datetime("2024-01-31T12:00:00Z")
	ExprNow                           // now()
	ExprList                          // [a, b]
	ExprAggregate                     // count|sum|avg|min|max(arg)
	ExprIdent                         // a bare name (an alias in order, a column in update/delete where)
	ExprSearch                        // search|fuzzy|match_text|bm25|nearest|rrf(args): Text the name, Elems the arguments (see search.go)
)

// Expr is a value expression as written.
type Expr struct {
	Pos   Pos
	Kind  ExprKind
	Var   string // ExprVar, ExprProp
	Prop  string // ExprProp
	Text  string // literal text (decoded for strings), function name, identifier
	Bool  bool
	Elems []*Expr // ExprList
	Arg   *Expr   // ExprAggregate
}

// ReturnItem is `expr [as alias]`.
type ReturnItem struct {
	Pos   Pos
	Expr  *Expr
	Alias string
}

// OrderItem is `expr [asc|desc]`.
type OrderItem struct {
	Pos  Pos
	Expr *Expr
	Desc bool
}

// StmtKind is the kind of a mutation statement.
type StmtKind string

// Mutation statement kinds.
const (
	StmtInsert StmtKind = "insert"
	StmtUpdate StmtKind = "update"
	StmtDelete StmtKind = "delete"
)

// Statement is one mutation statement: `insert T {..}`, `update T set {..}
// where p op v`, or `delete T where p op v`.
type Statement struct {
	Pos   Pos
	Kind  StmtKind
	Type  string
	TPos  Pos
	Set   []*PropValue // insert values or update assignments
	Where *FilterClause
}
