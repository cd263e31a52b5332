package gq

import (
	"github.com/omnigraph-go/omnigraph/lang/pg"
)

// Program is every query of a file, checked against one catalog.
type Program struct {
	Plans []*Plan // in file order
}

// Plan picks one checked query by name; with name == "" the file must hold
// exactly one query. Errors carry CodeQueryName.
func (p *Program) Plan(name string) (*Plan, error) {
	f := &File{}
	for _, pl := range p.Plans {
		f.Queries = append(f.Queries, &QueryDecl{Name: pl.Name})
	}
	d, err := f.Query(name)
	if err != nil {
		return nil, err
	}
	for _, pl := range p.Plans {
		if pl.Name == d.Name {
			return pl, nil
		}
	}
	return nil, errorf(CodeQueryName, Pos{}, "no query named %q", name)
}

// Plan is one checked query. Exactly one of Read and Mutation is set.
type Plan struct {
	Name        string
	Pos         Pos
	Description string // @description("...") on the declaration
	Instruction string // @instruction("...") on the declaration
	Params      []*Param
	Read        *ReadPlan
	Mutation    *MutationPlan
}

// Param is a declared parameter with its resolved type.
type Param struct {
	Name     string
	Type     pg.Type
	Nullable bool

	// uses are the slot types the parameter is converted to (see
	// Operand.As); Bind checks the bound value against each.
	uses []paramUse
}

// Param returns the declared parameter with the given name.
func (p *Plan) Param(name string) (*Param, bool) {
	for _, pr := range p.Params {
		if pr.Name == name {
			return pr, true
		}
	}
	return nil, false
}

// ReadPlan is a read query: run Steps to produce rows of variable bindings,
// then project Columns (grouping when Grouped), sort by Order, cut at Limit.
type ReadPlan struct {
	// Vars lists every variable; a row binds Vars[i] at slot i. Vars local
	// to an AntiJoinStep are listed too (Local is true) but only ever bound
	// while that subplan runs.
	Vars  []*Var
	Steps []Step
	// Columns are the output columns in return order.
	Columns []*Column
	// Grouped is true when some column is an aggregate: rows are grouped by
	// the values of the columns whose Group is true (one global group when
	// there are none) and each group yields one output row.
	Grouped bool
	// Order is a total order: the user's keys followed by tie-breakers (see
	// SortKey). It is never empty unless the output has at most one row.
	Order []SortKey
	// Limit is nil when absent; otherwise an OperandLiteral (int64 >= 0) or
	// an OperandParam of an integer type whose bound value must be >= 0
	// (Bind checks it).
	Limit *Operand
	// Rank is the first order key when it is a ranking function (nearest,
	// bm25, rrf): the query then returns ranked rows only. nearest keeps
	// rows whose vector is not NULL; bm25 keeps rows scoring above 0 (some
	// query term occurs); rrf keeps the rows of the limit best entities of
	// its fusion (see Score). Nil otherwise.
	Rank *Score
}

// VarKind says whether a variable binds nodes or edges.
type VarKind uint8

// Variable kinds.
const (
	VarNode VarKind = iota + 1
	VarEdge
)

// Var is a match variable. A node variable's value in a row is a node id of
// Node's table; an edge variable's is an edge id of Edge's table.
type Var struct {
	Slot  int
	Name  string // without '$'; "_" for each anonymous $_ (each is its own variable)
	Kind  VarKind
	Node  *pg.NodeType // VarNode
	Edge  *pg.EdgeType // VarEdge
	Local bool         // bound only inside an anti-join subplan
}

// Step is one operation of a match pipeline: *ScanStep, *ExpandStep,
// *FilterStep or *AntiJoinStep. Steps run in order; each maps the current
// set of rows to a new set. The pipeline starts from one empty row.
type Step interface{ isStep() }

// ScanStep binds the unbound node variable Var to every node of Node that
// satisfies all of Where, for each input row (a cross product when rows
// already have other bindings; the planner only does that when the match is
// disconnected).
type ScanStep struct {
	Var  int
	Node *pg.NodeType
	// Key is non-nil when Where pins every @key property with "=" to a
	// constant: Key[i] is the value for Node.Key[i]. The executor may then
	// do a point lookup of the id derived from the key (pg key identity)
	// instead of a scan. The key predicates stay in Where.
	Key []Operand
	// Where holds predicates whose left side is a property of Var and whose
	// right side is a constant (literal, parameter or now()); they may be
	// pushed into the table scan.
	Where []*Predicate
}

// Direction of an expansion relative to ExpandStep.From.
type Direction uint8

// Directions.
const (
	// Out follows edges whose src is the From node, yielding their dst.
	Out Direction = iota + 1
	// In follows edges whose dst is the From node, yielding their src.
	In
	// Both follows edges either way (undirected, same-type endpoints only).
	Both
)

func (d Direction) String() string {
	switch d {
	case Out:
		return "out"
	case In:
		return "in"
	case Both:
		return "both"
	}
	return "?"
}

// ExpandStep follows Edge from the bound node variable From.
//
// Hops: the destinations of a source s are those of the original system's
// breadth-first search over Edge (each edge followed in Dir). s is visited
// before the first hop, so a cycle back to s never makes it a destination;
// hop k expands the nodes first reached at hop k-1 and yields the nodes it
// reaches for the first time, which are destinations when MinHops <= k. A
// self-loop is one hop that reaches nothing new: the self-loop of a node
// expanded at hop k (s included) makes that node a destination when
// MinHops <= k. Put shortly: v != s is a destination when its shortest
// distance from s lies in [MinHops, MaxHops], and a node with a self-loop
// also when that distance plus one does. Each destination is produced at
// most once per input row (set semantics), also for MinHops = MaxHops = 1,
// so parallel edges do not duplicate rows. MinHops >= 1; MaxHops >= MinHops,
// except over an edge between two node types, whose MaxHops is capped at 1
// (a range from 2 there has MinHops > MaxHops and matches nothing).
//
// EdgeVar >= 0 (only with MinHops = MaxHops = 1) binds each matching edge:
// one output row per edge, parallel edges included.
//
// ToBound: To is already bound in the input row, so the step is a check:
// keep the row (once; or once per matching edge with EdgeVar) when To's node
// is among the destinations. Otherwise To is bound to each destination.
type ExpandStep struct {
	From             int
	To               int
	ToBound          bool
	EdgeVar          int // -1 when the edge is not bound
	Edge             *pg.EdgeType
	Dir              Direction
	MinHops, MaxHops int
	ToNode           *pg.NodeType // the destination node type
}

// FilterStep keeps the rows for which Pred holds.
type FilterStep struct {
	Pred *Predicate
}

// AntiJoinStep keeps an input row only when running Steps, starting from
// that row alone, yields no row. Steps may bind Local variables; Outer lists
// the outer slots the subplan reads (at least one).
type AntiJoinStep struct {
	Steps []Step
	Outer []int
}

func (*ScanStep) isStep()     {}
func (*ExpandStep) isStep()   {}
func (*FilterStep) isStep()   {}
func (*AntiJoinStep) isStep() {}

// Predicate is `Left Op Right` over one row. Semantics:
//   - a NULL on either side makes it false (for every operator, != too);
//   - numbers compare by value across all numeric kinds; strings and enums
//     by UTF-8 bytes; Bool only with = and !=; Date and DateTime
//     chronologically; a list property only with contains;
//   - contains: list membership when Left is a list, otherwise an exact,
//     case-sensitive substring test; starts_with: exact prefix test.
//
// The checker puts a property operand on the left whenever one side is a
// property and the other a constant (flipping < and > as needed).
type Predicate struct {
	Pos   Pos
	Left  Operand
	Op    CmpOp
	Right Operand
	Edits *Operand // OpFuzzy: the maximum edits; nil is DefaultFuzzyEdits
}

// OperandKind says which fields of an Operand are set.
type OperandKind uint8

// Operand kinds.
const (
	OperandLiteral OperandKind = iota + 1 // Value, already coerced to Type
	OperandParam                          // Param: the bound parameter's value
	OperandNow                            // the query's now() instant (DateTime), one per execution
	OperandProp                           // Var's property Prop
	OperandVar                            // the whole entity bound at Var (its id when compared)
)

// Operand is a typed value source.
type Operand struct {
	Kind     OperandKind
	Value    any          // OperandLiteral: see doc.go for the Go type per kind; nil is NULL
	Param    string       // OperandParam
	Var      int          // OperandProp, OperandVar: variable slot
	Prop     *pg.Property // OperandProp
	Type     pg.Type      // static type (for OperandVar: String, the id)
	Nullable bool
	// As is set on an OperandParam compared with (or stored into) a slot of
	// another type, such as an F32 property compared with an F64 or integer
	// parameter, or an enum property with a String one: the operand's value
	// is the bound value converted to As exactly as a literal would be
	// (Args.Value does it; Bind refuses values As cannot hold, such as an
	// unknown enum value). Nil when the parameter's own value is used.
	As *pg.Type
}

// ColumnKind says what an output column holds.
type ColumnKind uint8

// Column kinds.
const (
	ColumnProp      ColumnKind = iota + 1 // Expr is an OperandProp
	ColumnNode                            // Expr is an OperandVar of a node variable: the whole node
	ColumnValue                           // Expr is a literal, parameter or now()
	ColumnAggregate                       // Agg over Expr (an OperandProp, or OperandVar for count)
	ColumnScore                           // Score's value (F64)
)

// AggFunc is an aggregate function.
type AggFunc string

// Aggregates.
const (
	AggCount AggFunc = "count" // count($x): rows; count($x.p): rows where p is not NULL. I64, never NULL
	AggSum   AggFunc = "sum"   // numbers; I64 for signed ints, U64 for unsigned, F64 for floats; NULL over no values
	AggAvg   AggFunc = "avg"   // numbers; F64; NULL over no values
	AggMin   AggFunc = "min"   // numbers, strings, enums, dates; the argument's type; NULL over no values
	AggMax   AggFunc = "max"   // as min
)

// Column is one output column.
type Column struct {
	Name     string // alias, or the default name (property, variable, function, parameter, "literal", "now")
	Kind     ColumnKind
	Expr     Operand
	Agg      AggFunc // ColumnAggregate
	Type     pg.Type // result type; a node column's Type is String (its id)
	Nullable bool
	Group    bool   // a group key (Grouped plans: every non-aggregate column)
	Score    *Score // ColumnScore
}

// SortKind says what a sort key reads.
type SortKind uint8

// Sort key kinds.
const (
	SortColumn SortKind = iota + 1 // output column Column (a node column sorts by id)
	SortProp                       // property Prop of variable Var (ungrouped plans only)
	SortID                         // id of the entity bound at Var (ungrouped plans only)
	SortScore                      // Score (nearest ascending, bm25 and rrf descending, whatever Desc says)
)

// SortKey is one key of the total order. Ascending puts NULL first,
// descending puts NULL last. Ungrouped plans end with SortID keys for every
// non-local variable in slot order, so rows never tie unless they bind the
// same entities; grouped plans end with every group column ascending.
type SortKey struct {
	Kind   SortKind
	Column int
	Var    int
	Prop   *pg.Property
	Desc   bool
	Score  *Score // SortScore
}

// MutationPlan is an ordered list of statements that commit together. By
// the D₂ rule a plan is either constructive (inserts and updates only) or
// destructive (deletes only).
type MutationPlan struct {
	Destructive bool
	Statements  []*MutationStmt
}

// MutationStmt is one checked insert, update or delete. Exactly one of Node
// and Edge is set. Later statements must see the effects of earlier ones
// (read-your-writes).
type MutationStmt struct {
	Pos  Pos
	Kind StmtKind
	Node *pg.NodeType
	Edge *pg.EdgeType
	// Upsert is true for an insert into a keyed node type: an existing node
	// with the same key is replaced.
	Upsert bool
	// Values: insert: the given properties (omitted nullable ones are NULL);
	// update: the assignments. Never a key property for updates.
	Values []*Assignment
	// From and To are the endpoints of an edge insert: node ids. Their Type
	// is the endpoint node's key property type for a single-property key,
	// otherwise String (the id itself).
	From, To *Operand
	// Where selects the rows of update and delete.
	Where *MutationWhere
}

// Assignment sets a property to a constant operand.
type Assignment struct {
	Prop  *pg.Property
	Value Operand
}

// MutationWhere is `column op value` over the target type's rows. Column is a
// property name, or pg.ColSrc / pg.ColDst for an edge delete written with
// from / to (Prop is then nil and Value is a node id as for
// MutationStmt.From). Predicate semantics are those of Predicate.
type MutationWhere struct {
	Column string
	Prop   *pg.Property
	Op     CmpOp
	Value  Operand
}
