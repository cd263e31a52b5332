// Package mutate runs a checked .gq mutation plan (lang/gq) as one write
// attempt of the shared pipeline (graph.Write). Statements run in order
// against the write's snapshot overlaid with the rows earlier statements
// staged (read-your-writes, graph/change); at the end the write is validated
// once and every touched table is staged as one transaction, then committed
// and published as one graph commit.
package mutate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/change"
	"github.com/omnigraph-go/omnigraph/lang/gq"
	"github.com/omnigraph-go/omnigraph/lang/pg"
	"github.com/omnigraph-go/omnigraph/manifest"
	"github.com/omnigraph-go/omnigraph/table"
)

// Options shape one mutation.
type Options struct {
	// Branch to write (default: the handle's current branch).
	Branch string
	// Params are the query's parameters (JSON-decoded values or canonical
	// Go values).
	Params map[string]any
	// IfCommit, when set, makes the write conditional: it runs only while
	// the branch holds this commit's rows: the head is the commit, or
	// follows it by maintenance commits only (a compaction changes no
	// row). It is retried only over maintenance commits.
	IfCommit string
	// Now fixes now() (zero: the time of the call).
	Now time.Time
	// Retries bounds re-preparing an insert-only mutation that lost a
	// race, or any mutation that only maintenance commits moved (default
	// graph.DefaultWriteRetries).
	Retries int
	// Actor overrides the handle's actor for this commit.
	Actor string
	// Budget bounds the read phase: the rows update, delete and a node
	// delete's edge cascade read, the bytes they materialise, the storage
	// bytes they read and its wall time. Going over it answers a
	// *graph.BudgetExceeded before anything is staged or written; the
	// commit itself is never cut short. The zero Budget is unlimited.
	Budget graph.Budget
}

// Result is what a mutation did.
type Result struct {
	AffectedNodes int `json:"affected_nodes"`
	AffectedEdges int `json:"affected_edges"`
	// Commit is the published commit; nil when nothing matched, so nothing
	// was published.
	Commit *graph.CommitInfo `json:"commit"`
	// Warnings are non-fatal problems after the publish.
	Warnings []string `json:"warnings,omitempty"`
	// ReadUsage is what the read phase used of its budget (of the attempt
	// that committed).
	ReadUsage graph.Usage `json:"-"`
}

// Query runs the mutation query name of src (see Run). It is parsed once,
// before any I/O (syntax and the D₂ rule), and checked against the
// accepted schema of the head each attempt writes to. A read query is
// refused.
func Query(ctx context.Context, g *graph.Graph, src, name string, opts Options) (*Result, error) {
	q, strict, err := parseMutation(src, name)
	if err != nil {
		return nil, err
	}
	return run(ctx, g, strict, func(cat *pg.Catalog) (*gq.Plan, error) { return gq.CheckQuery(q, cat) }, opts)
}

// Check parses the mutation query name of src, type-checks it against
// the accepted schema of branch opts.Branch and binds opts.Params, with no
// write: what a caller runs before it takes a writer lock or an admission
// slot, so a mutation that could never run holds neither (a concurrent
// writer would otherwise be refused for a query that was never going to
// write). g may be read-only. The write checks again against the schema
// it prepares against; Check's answer is the same unless a schema apply
// lands in between.
func Check(ctx context.Context, g *graph.Graph, src, name string, opts Options) error {
	q, _, err := parseMutation(src, name)
	if err != nil {
		return err
	}
	snap, err := g.Snapshot(ctx, opts.Branch)
	if err != nil {
		return err
	}
	cat, err := snap.Catalog(ctx)
	if err != nil {
		return err
	}
	plan, err := gq.CheckQuery(q, cat)
	if err != nil {
		return err
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	_, err = gq.BindAt(plan, opts.Params, now)
	return err
}

// parseMutation parses src and returns its mutation query name (syntax,
// a read refused, the D₂ rule), and whether it is strict (an update or a
// delete: it reads what it changes).
func parseMutation(src, name string) (*gq.QueryDecl, bool, error) {
	f, err := gq.Parse(src)
	if err != nil {
		return nil, false, err
	}
	q, err := f.Query(name)
	if err != nil {
		return nil, false, err
	}
	if q.Mutation == nil {
		return nil, false, fmt.Errorf("%w: query %s is a read; run it with 'omnigraph query'", graph.ErrInvalidInput, q.Name)
	}
	// D₂ belongs to this query alone: another query of the file that mixes
	// inserts and deletes does not stop this one.
	if err := q.CheckShape(); err != nil {
		return nil, false, err
	}
	strict := false
	for _, st := range q.Mutation {
		if st.Kind != gq.StmtInsert {
			strict = true
		}
	}
	return q, strict, nil
}

// Run runs a checked mutation plan as one graph commit. Insert-only
// plans re-prepare when their branch moved before any effect (bounded by
// opts.Retries); plans with updates or deletes, and conditional writes,
// return the *ReadSetChanged or *PreconditionFailed instead, unless only
// maintenance commits moved it (then they re-prepare too: what they read
// is unchanged). Bad input
// (a parameter, a constraint, a missing endpoint) is an error matching
// ErrInvalidInput or gq.ErrInvalidQuery, and writes nothing. The plan must
// have been checked against the branch's accepted schema.
func Run(ctx context.Context, g *graph.Graph, plan *gq.Plan, opts Options) (*Result, error) {
	if plan == nil || plan.Mutation == nil {
		return nil, fmt.Errorf("%w: query %s is a read; run it with 'omnigraph query'", graph.ErrInvalidInput, planName(plan))
	}
	return run(ctx, g, strictPlan(plan), func(*pg.Catalog) (*gq.Plan, error) { return plan, nil }, opts)
}

func run(ctx context.Context, g *graph.Graph, strict bool, planFor func(*pg.Catalog) (*gq.Plan, error), opts Options) (*Result, error) {
	res, err := runOnce(ctx, g, strict, planFor, opts)
	if err != nil {
		return res, g.IfBranchDeleted(ctx, "mutation target", opts.Branch, err)
	}
	return res, nil
}

func runOnce(ctx context.Context, g *graph.Graph, strict bool, planFor func(*pg.Catalog) (*gq.Plan, error), opts Options) (*Result, error) {
	if opts.IfCommit != "" {
		// A malformed expected head is bad input, not a stale one (412).
		if err := manifest.ValidateCommitID(opts.IfCommit); err != nil {
			return nil, err
		}
	}
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	n := opts.Retries
	if n <= 0 {
		n = graph.DefaultWriteRetries
	}
	// The branch's turn in the process's write queue: a write of this
	// process published before it prepares, so it never invalidates ours.
	ctx, leave, err := g.EnterWriteQueue(ctx, opts.Branch)
	if err != nil {
		return nil, err
	}
	defer leave()
	var out *Result
	_, err = graph.Retry(ctx, n, func(ctx context.Context) (*graph.Result, error) {
		pm, err := prepare(ctx, g, strict, planFor, opts)
		if err != nil {
			return nil, err
		}
		res, err := pm.Commit(ctx)
		out = res
		return nil, err
	})
	var rs *graph.ReadSetChanged
	if opts.IfCommit != "" && errors.As(err, &rs) {
		// The head moved between the check and the commit: the condition
		// failed all the same.
		return nil, &graph.PreconditionFailed{Branch: rs.Branch, Expected: opts.IfCommit, Actual: "a newer commit"}
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

func planName(p *gq.Plan) string {
	if p == nil {
		return "(none)"
	}
	return p.Name
}

// strictPlan: updates and deletes read what they change, so a moved branch
// invalidates them (ReadSetChanged) instead of re-preparing.
func strictPlan(p *gq.Plan) bool {
	for _, st := range p.Mutation.Statements {
		if st.Kind != gq.StmtInsert {
			return true
		}
	}
	return false
}

// Prepared is a mutation staged against one branch-authority
// token, ready to commit. Tests use it to line up racing writers.
type Prepared struct {
	w      *graph.Write
	st     *change.Set
	query  string // the plan's name, for error messages
	result Result
}

// Prepare stages plan against the current head of opts.Branch
// without committing: the prepare half of Run, with no retry.
func Prepare(ctx context.Context, g *graph.Graph, plan *gq.Plan, opts Options) (*Prepared, error) {
	if plan == nil || plan.Mutation == nil {
		return nil, fmt.Errorf("%w: query %s is a read; run it with 'omnigraph query'", graph.ErrInvalidInput, planName(plan))
	}
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	return prepare(ctx, g, strictPlan(plan), func(*pg.Catalog) (*gq.Plan, error) { return plan, nil }, opts)
}

func prepare(ctx context.Context, g *graph.Graph, strict bool, planFor func(*pg.Catalog) (*gq.Plan, error), opts Options) (*Prepared, error) {
	w, err := g.BeginWrite(ctx, opts.Branch, graph.WriteOptions{Kind: graph.KindMutation, Strict: strict || opts.IfCommit != "", Actor: opts.Actor})
	if err != nil {
		return nil, err
	}
	snap := w.Snapshot()
	if opts.IfCommit != "" && snap.CommitID() != opts.IfCommit {
		same, err := snap.SameRowsAs(ctx, opts.IfCommit)
		if err != nil {
			return nil, err
		}
		if !same {
			return nil, &graph.PreconditionFailed{Branch: snap.Branch(), Expected: opts.IfCommit, Actual: snap.CommitID()}
		}
	}
	cat, err := snap.Catalog(ctx)
	if err != nil {
		return nil, err
	}
	plan, err := planFor(cat)
	if err != nil {
		return nil, err
	}
	if plan.Mutation == nil {
		return nil, fmt.Errorf("%w: query %s is a read; run it with 'omnigraph query'", graph.ErrInvalidInput, plan.Name)
	}
	args, err := gq.BindAt(plan, opts.Params, opts.Now)
	if err != nil {
		return nil, err
	}
	st := change.New(snap, cat)
	pm := &Prepared{w: w, st: st, query: plan.Name}
	if err := pm.read(ctx, plan, args, opts.Budget); err != nil {
		return nil, err
	}
	if err := st.Validate(ctx); err != nil {
		return nil, err
	}
	if err := st.StageInto(ctx, w); err != nil {
		return nil, err
	}
	return pm, nil
}

// read runs the statements (the read phase: matching, read-your-writes)
// under the budget.
func (pm *Prepared) read(ctx context.Context, plan *gq.Plan, args *gq.Args, b graph.Budget) error {
	rctx, m := graph.StartBudget(ctx, b)
	defer m.Stop()
	for i, stmt := range plan.Mutation.Statements {
		if err := pm.run(rctx, i, stmt, args); err != nil {
			return m.Err(err)
		}
	}
	pm.result.ReadUsage = m.Usage()
	return nil
}

// Commit publishes the prepared mutation (see Write.Commit). Nothing
// staged: no commit, Commit nil.
func (pm *Prepared) Commit(ctx context.Context) (*Result, error) {
	res, err := pm.w.Commit(ctx)
	if err != nil {
		return nil, err
	}
	out := pm.result
	if !res.NoOp {
		c := res.Commit
		out.Commit = &c
	}
	out.Warnings = res.Warnings
	return &out, nil
}

// stmtWhere locates statement i of query name for error messages, in the
// shape of query errors: in query "x" at 6:3 (statement 2).
func stmtWhere(name string, i int, s *gq.MutationStmt) string {
	return fmt.Sprintf("in query %q at %d:%d (statement %d)", name, s.Pos.Line, s.Pos.Col, i+1)
}

func (pm *Prepared) run(ctx context.Context, i int, s *gq.MutationStmt, args *gq.Args) error {
	st := pm.st
	where := stmtWhere(pm.query, i, s)
	// The plan must have been checked against this snapshot's schema.
	if s.Node != nil {
		if n, ok := st.Catalog().Node(s.Node.Name); !ok || n != s.Node {
			return fmt.Errorf("%w: the schema of branch %q changed since the query was compiled; compile it again", graph.ErrInvalidInput, st.Snapshot().Branch())
		}
	}
	if s.Edge != nil {
		if e, ok := st.Catalog().Edge(s.Edge.Name); !ok || e != s.Edge {
			return fmt.Errorf("%w: the schema of branch %q changed since the query was compiled; compile it again", graph.ErrInvalidInput, st.Snapshot().Branch())
		}
	}
	switch s.Kind {
	case gq.StmtInsert:
		if s.Node != nil {
			return pm.insertNode(where, s, args)
		}
		return pm.insertEdge(where, s, args)
	case gq.StmtUpdate:
		return pm.update(ctx, where, s, args)
	case gq.StmtDelete:
		return pm.delete(ctx, where, s, args)
	}
	return fmt.Errorf("statement %d: unknown kind %v", i+1, s.Kind)
}

// assigned coerces each assignment's value into its property. A new
// external Blob reference must pass the handle's policy.
func (pm *Prepared) assigned(where string, vals []*gq.Assignment, args *gq.Args) (map[string]any, error) {
	out := make(map[string]any, len(vals))
	for _, a := range vals {
		v, err := a.Prop.Coerce(args.Value(a.Value))
		if err != nil {
			return nil, &graph.InputError{Where: where, Msg: err.Error()}
		}
		if b, ok := v.(table.Blob); ok && b.External() {
			if err := pm.st.Snapshot().Graph().ExternalBlobs().Check(b.URI); err != nil {
				return nil, fmt.Errorf("%s: %s.%s: %w", where, a.Prop.Owner, a.Prop.Name, err)
			}
		}
		out[a.Prop.Name] = v
	}
	return out, nil
}

func (pm *Prepared) insertNode(where string, s *gq.MutationStmt, args *gq.Args) error {
	n := s.Node
	r, err := pm.assigned(where, s.Values, args)
	if err != nil {
		return err
	}
	for _, p := range n.Properties {
		if _, ok := r[p.Name]; ok {
			continue
		}
		if !p.Nullable {
			return graph.InputErrorf(where, "insert %s: required property %s has no value; assign it (embeddings are not computed on write: pass the vector)", n.Name, p.Name)
		}
		r[p.Name] = nil
	}
	id, err := n.IDFor(r)
	if err != nil {
		return &graph.InputError{Where: where, Msg: err.Error()}
	}
	r[pg.ColID] = id
	pm.st.NodeTable(n).Put(r, len(n.Key) == 0, where)
	pm.result.AffectedNodes++
	return nil
}

// endpointID turns an edge endpoint value into the node id it names.
func endpointID(n *pg.NodeType, v any) (string, error) {
	if len(n.Key) == 1 {
		return n.IDFor(map[string]any{n.Key[0]: v})
	}
	s, ok := v.(string)
	if !ok || s == "" {
		return "", fmt.Errorf("%s id must be a non-empty string, got %v", n.Name, v)
	}
	return s, nil
}

func (pm *Prepared) insertEdge(where string, s *gq.MutationStmt, args *gq.Args) error {
	e := s.Edge
	r, err := pm.assigned(where, s.Values, args)
	if err != nil {
		return err
	}
	for _, p := range e.Properties {
		if _, ok := r[p.Name]; !ok {
			if !p.Nullable {
				return graph.InputErrorf(where, "insert %s: required property %s has no value; assign it", e.Name, p.Name)
			}
			r[p.Name] = nil
		}
	}
	for _, end := range []struct {
		col  string
		op   *gq.Operand
		node string
	}{{pg.ColSrc, s.From, e.From}, {pg.ColDst, s.To, e.To}} {
		n, ok := pm.st.Catalog().Node(end.node)
		if !ok || end.op == nil {
			return graph.InputErrorf(where, "insert %s: missing %s endpoint", e.Name, end.col)
		}
		id, err := endpointID(n, args.Value(*end.op))
		if err != nil {
			return graph.InputErrorf(where, "insert %s: %v", e.Name, err)
		}
		r[end.col] = id
	}
	r[pg.ColID] = pg.NewID()
	pm.st.EdgeTable(e).Put(r, true, where)
	pm.result.AffectedEdges++
	return nil
}

// whereValue resolves the predicate's right-hand side; for an edge's
// src/dst it is the endpoint node id.
func whereValue(st *change.Set, s *gq.MutationStmt, args *gq.Args) (any, error) {
	v := args.Value(s.Where.Value)
	if s.Edge != nil && s.Where.Prop == nil {
		node := s.Edge.From
		if s.Where.Column == pg.ColDst {
			node = s.Edge.To
		}
		n, ok := st.Catalog().Node(node)
		if !ok {
			return nil, fmt.Errorf("unknown node type %s", node)
		}
		return endpointID(n, v)
	}
	return v, nil
}

// matching returns the rows of s's table that s.Where selects, as this
// write sees them: pending rows, then committed rows not replaced or
// deleted by the write.
func matching(ctx context.Context, st *change.Set, p *change.Table, s *gq.MutationStmt, args *gq.Args, cols []string) ([]change.Row, error) {
	v, err := whereValue(st, s, args)
	if err != nil {
		return nil, err
	}
	col := s.Where.Column
	kind := pg.KindString
	if s.Where.Prop != nil {
		kind = s.Where.Prop.Type.Kind
	}
	filter, _ := change.PushdownCmp(col, kind, string(s.Where.Op), v)
	if s.Where.Op == gq.OpStartsWith {
		if sv, ok := v.(string); ok && (kind == pg.KindString || kind == pg.KindEnum) {
			filter = table.Ge(col, sv)
		}
	}
	return st.Visible(ctx, p, cols, filter, func(r change.Row) bool { return mutationMatch(s.Where.Op, r[col], v) })
}

func (pm *Prepared) update(ctx context.Context, where string, s *gq.MutationStmt, args *gq.Args) error {
	st := pm.st
	p := st.NodeTable(s.Node)
	set, err := pm.assigned(where, s.Values, args)
	if err != nil {
		return err
	}
	rows, err := matching(ctx, st, p, s, args, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	for _, r := range rows {
		nr := make(change.Row, len(r)+len(set))
		for k, v := range r {
			nr[k] = v
		}
		for k, v := range set {
			nr[k] = v
		}
		id := nr[pg.ColID].(string)
		_, pending := p.Staged(id)
		p.Put(nr, pending && p.Fresh(id), where)
	}
	pm.result.AffectedNodes += len(rows)
	return nil
}

func (pm *Prepared) delete(ctx context.Context, where string, s *gq.MutationStmt, args *gq.Args) error {
	st := pm.st
	if s.Edge != nil {
		p := st.EdgeTable(s.Edge)
		rows, err := matching(ctx, st, p, s, args, []string{pg.ColID, s.Where.Column})
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		for _, r := range rows {
			if p.Del(r[pg.ColID].(string), where) {
				pm.result.AffectedEdges++
			}
		}
		return nil
	}
	p := st.NodeTable(s.Node)
	rows, err := matching(ctx, st, p, s, args, []string{pg.ColID, s.Where.Column})
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	var ids []string
	for _, r := range rows {
		id := r[pg.ColID].(string)
		if p.Del(id, where) {
			ids = append(ids, id)
			pm.result.AffectedNodes++
		}
	}
	if len(ids) == 0 {
		return nil
	}
	// Deleting a node deletes its edges, of every edge type, either side.
	for _, e := range st.Catalog().Edges {
		var preds []table.Predicate
		if e.From == s.Node.Name {
			preds = append(preds, table.In(pg.ColSrc, ids...))
		}
		if e.To == s.Node.Name {
			preds = append(preds, table.In(pg.ColDst, ids...))
		}
		if len(preds) == 0 {
			continue
		}
		ep := st.EdgeTable(e)
		edges, err := st.ScanRows(ctx, ep.Key(), []string{pg.ColID}, table.Or(preds...))
		if err != nil {
			return fmt.Errorf("%s: find the edges of the deleted %s nodes: %w", where, s.Node.Name, err)
		}
		for _, r := range edges {
			if ep.Del(r[pg.ColID].(string), where) {
				pm.result.AffectedEdges++
			}
		}
	}
	return nil
}

// mutationMatch evaluates `left op right` with the predicate rules of the
// query language: NULL never matches; numbers compare by value across
// kinds; strings by bytes; Bool only = and !=; contains is list membership
// or substring; starts_with a prefix test.
func mutationMatch(op gq.CmpOp, left, right any) bool {
	if left == nil || right == nil {
		return false
	}
	switch op {
	case gq.OpContains:
		if l, ok := left.([]any); ok {
			for _, e := range l {
				if c, ok := compareCanonical(e, right); ok && c == 0 {
					return true
				}
			}
			return false
		}
		l, ok1 := left.(string)
		r, ok2 := right.(string)
		return ok1 && ok2 && strings.Contains(l, r)
	case gq.OpStartsWith:
		l, ok1 := left.(string)
		r, ok2 := right.(string)
		return ok1 && ok2 && strings.HasPrefix(l, r)
	}
	c, ok := compareCanonical(left, right)
	if !ok {
		return false
	}
	if _, isBool := left.(bool); isBool && op != gq.OpEq && op != gq.OpNe {
		return false
	}
	return op.Holds(c)
}

// compareCanonical orders two canonical scalars; ok is false when they are
// not comparable.
func compareCanonical(a, b any) (int, bool) {
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return strings.Compare(x, y), ok
	case bool:
		y, ok := b.(bool)
		if !ok {
			return 0, false
		}
		switch {
		case x == y:
			return 0, true
		case !x:
			return -1, true
		}
		return 1, true
	case []byte:
		y, ok := b.([]byte)
		return bytes.Compare(x, y), ok
	}
	ai, au, af, ak, ok1 := numberParts(a)
	bi, bu, bf, bk, ok2 := numberParts(b)
	if !ok1 || !ok2 {
		return 0, false
	}
	switch {
	case ak == 'f' || bk == 'f':
		fa, fb := af, bf
		return cmpOrdered(fa, fb), true
	case ak == 'i' && bk == 'i':
		return cmpOrdered(ai, bi), true
	case ak == 'u' && bk == 'u':
		return cmpOrdered(au, bu), true
	case ak == 'i': // signed vs unsigned
		if ai < 0 {
			return -1, true
		}
		return cmpOrdered(uint64(ai), bu), true
	default:
		if bi < 0 {
			return 1, true
		}
		return cmpOrdered(au, uint64(bi)), true
	}
}

func cmpOrdered[T int64 | uint64 | float64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// numberParts splits a canonical number into its signed, unsigned and
// float views and a kind byte ('i', 'u', 'f').
func numberParts(v any) (int64, uint64, float64, byte, bool) {
	switch x := v.(type) {
	case int32:
		return int64(x), 0, float64(x), 'i', true
	case int64:
		return x, 0, float64(x), 'i', true
	case uint32:
		return 0, uint64(x), float64(x), 'u', true
	case uint64:
		return 0, x, float64(x), 'u', true
	case float32:
		return 0, 0, float64(x), 'f', true
	case float64:
		return 0, 0, x, 'f', true
	}
	return 0, 0, 0, 0, false
}
