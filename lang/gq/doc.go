// Package gq holds the .gq query language: lexer and parser (text to AST),
// the type checker that resolves an AST against a *pg.Catalog, and the
// logical plans an executor walks. The user reference is docs/queries.md.
//
// # Pipeline
//
//	f, err := gq.Parse(src)            // syntax only; D₂ is enforced here
//	prog, err := gq.Check(f, catalog)  // or gq.Compile(src, catalog)
//	plan, err := prog.Plan(name)       // "" when the file holds one query
//	args, err := gq.Bind(plan, params) // JSON params -> canonical values
//
// Every error is an *Error (or an ErrorList of them from Check) with a
// stable Code, a 1-based line:column (columns count characters) and a
// message that says what to write instead; errors.Is(err, ErrInvalidQuery)
// holds for all of them. Plan.String renders a plan as text (explain).
//
// A Plan points into the *pg.Catalog it was checked against (node, edge and
// property pointers), so it is valid only with that catalog: cache plans by
// (catalog Identity, query text). Plans are never modified after Check and
// are safe for concurrent use; Bind returns fresh Args per execution.
//
// # Values
//
// Constant values in plans (Operand.Value of literals) and in Args are pg's
// canonical values (pg.Property.Coerce): String and enum → string; Bool →
// bool; I32, I64, U32, U64 → int32, int64, uint32, uint64; F32, F64 →
// float32, float64; Date → int32 days since 1970-01-01; DateTime → int64
// microseconds since the epoch (UTC); Vector → []float32; Blob → []byte;
// lists → []any; NULL → nil. Args.Value resolves any constant operand
// (literal, parameter, now()). Literals assigned by mutations have already
// passed the property's Coerce (@range, @check, enum); parameter values
// have only been coerced to the declared parameter type, so the executor
// must pass assigned parameter values through the target property's Coerce
// (this also turns a String parameter into an enum or Blob value).
//
// # Read plans
//
// A ReadPlan is executed in four phases.
//
// 1. Match. Rows are bindings of variable slots (ReadPlan.Vars; a node
// variable holds a node id, an edge variable an edge id). Start from one
// empty row and apply Steps in order:
//   - ScanStep: for each row, bind Var to each node of Node satisfying all
//     of Where (a cross product with existing bindings). When Key is set the
//     node is a point lookup of the key id (pg key identity of Key values).
//   - ExpandStep: for each row, follow Edge from the node at From in Dir
//     for MinHops..MaxHops hops (breadth-first: the source is never its
//     own destination except through a self-loop, and each destination
//     appears at most once per row, see ExpandStep); bind To (or check it
//     when ToBound) and
//     EdgeVar (one row per edge) when EdgeVar >= 0.
//   - FilterStep: keep rows where Pred holds (see Predicate for NULL and
//     comparison rules).
//   - AntiJoinStep: keep a row iff running its Steps from that row yields
//     no row. Subplan steps may bind variables marked Local.
//
// No two match rows bind every slot to the same entities, but rows that
// differ only in variables that are not returned still give separate,
// equal-looking output rows (there is no implicit DISTINCT).
//
// 2. Project. Ungrouped plans (Grouped false) evaluate each Column per row:
// ColumnProp reads Var's property (NULL when absent), ColumnNode yields the
// whole node (id plus every property; blobs excluded), ColumnValue yields
// the constant. Grouped plans form groups by the tuple of Group columns
// (a node column groups by id; NULL equals NULL for grouping) — one global
// group when there are no Group columns, which exists even over zero rows —
// and evaluate each ColumnAggregate over the group's rows (see AggFunc).
//
// 3. Order. Sort by Order, which is total: compare keys in sequence; a key
// compares numbers by value, strings by UTF-8 bytes, false < true, dates
// and date-times chronologically, nodes by id; NULL is smallest (first when
// ascending, last with Desc). SortProp and SortID read the match row, so
// ungrouped execution sorts rows before projecting (or carries the keys).
//
// 4. Limit. Keep the first Args.Limit(rp) rows when a limit is present.
//
// # Mutation plans
//
// A MutationPlan's Statements run in order against one staged view of the
// branch; each later statement sees earlier inserts and updates
// (read-your-writes), and everything commits together or not at all. By
// the D₂ rule Destructive plans hold only deletes and the others only
// inserts and updates. Statement semantics:
//   - insert into a node type: a row of Values (omitted properties NULL);
//     Upsert replaces an existing node with the same key; unkeyed nodes get
//     a new ULID.
//   - insert into an edge type: a new edge (new ULID) from the From node to
//     the To node; From and To are node ids (key values; see MutationStmt).
//   - update: every node matching Where gets Values assigned.
//   - delete: every row matching Where is removed; deleting a node also
//     removes its edges of every edge type.
package gq
