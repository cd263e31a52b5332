// Package query executes read queries (.gq, compiled by lang/gq) on one
// graph.Snapshot: scans, key lookups, traversals over a CSR index of each
// edge table (csr.go), filters, projection and aggregation (exec.go), with a
// per-handle cache of loaded table versions (cache.go). It reads pinned
// table versions only and never writes.
package query

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/lang/gq"
	"github.com/omnigraph-go/omnigraph/lang/pg"
)

// Reads. A query runs on one Snapshot: one manifest version (the pinned
// version of every table) bound to the one accepted catalog that version
// names. The pair is captured once, before execution, and every table read
// of the query goes to the pinned versions, so commits that land while the
// query runs are invisible to it. The catalog is content-addressed by the
// manifest version's schema identity, so no schema gate is needed to keep
// the two consistent: a schema apply publishes a new manifest version with
// a new identity, which only later captures see.

// Result is the outcome of one read query.
type Result struct {
	// QueryName is the query that ran.
	QueryName string
	// Columns are the output columns in return order.
	Columns []Column
	// Rows hold one value per column: pg canonical values (see
	// lang/gq/doc.go); a whole-node column holds a map with "id" and every
	// non-Blob property; NULL is nil.
	Rows [][]any
	// CommitID is the graph commit the snapshot shows: the id to pass to a
	// conditional write (--if-commit) or to --snapshot for time travel.
	CommitID string
	// Branch and Version name the manifest version that was read.
	Branch  string
	Version uint64
	// Usage is what the query used of its budget.
	Usage graph.Usage
}

// Options shape one read.
type Options struct {
	// Budget bounds the read (graph.Budget; the zero Budget is unlimited).
	// Going over it answers a *graph.BudgetExceeded.
	Budget graph.Budget
}

// Column describes one output column.
type Column struct {
	Name string
	Type pg.Type // a whole-node column's Type is String (its id)
	Node *pg.NodeType
}

// Head captures the head of branch ("" is the handle's branch) of g and runs the
// read query name of src (name may be "" when src holds one query) with
// params (JSON-decoded values or canonical Go values).
func Head(ctx context.Context, g *graph.Graph, branch, src, name string, params map[string]any) (*Result, error) {
	s, err := g.Snapshot(ctx, branch)
	if err != nil {
		return nil, err
	}
	res, err := Run(ctx, s, src, name, params)
	if err != nil {
		return nil, g.IfBranchDeleted(ctx, "query target", branch, err)
	}
	return res, nil
}

// Run compiles the query name of src (name may be "" when src holds one
// query) against the snapshot's catalog, binds params and runs it on this
// snapshot. Only that query is type-checked (the file's other queries need
// only parse), and every error names it. Syntax, D₂, selection and
// parameter errors are found before any table is read.
func Run(ctx context.Context, s *graph.Snapshot, src, name string, params map[string]any) (*Result, error) {
	return RunWith(ctx, s, src, name, params, Options{})
}

// RunWith is Run under opts (a budget).
func RunWith(ctx context.Context, s *graph.Snapshot, src, name string, params map[string]any, opts Options) (*Result, error) {
	plan, err := compile(ctx, s, src, name)
	if err != nil {
		return nil, s.Explain(ctx, err)
	}
	args, err := gq.Bind(plan, params)
	if err != nil {
		return nil, err
	}
	return ExecuteWith(ctx, s, plan, args, opts)
}

// compile parses and checks the query name of src for snapshot s.
func compile(ctx context.Context, s *graph.Snapshot, src, name string) (*gq.Plan, error) {
	f, err := gq.Parse(src)
	if err != nil {
		return nil, err
	}
	q, err := f.Query(name)
	if err != nil {
		return nil, err
	}
	if q.Mutation != nil {
		return nil, fmt.Errorf("%w: query %q changes data; run it with 'omnigraph mutate'", graph.ErrNotARead, q.Name)
	}
	opened := openNamedTables(ctx, s, q.Read)
	cat, err := s.Catalog(ctx)
	opened()
	if err != nil {
		return nil, err
	}
	return gq.CheckQuery(q, cat)
}

// Explanation is a read's plan and the planner's estimate of it on one
// snapshot (query --explain): nothing is run.
type Explanation struct {
	Plan     *gq.Plan
	Estimate *gq.Estimate
}

// String renders the plan with the estimate of each step.
func (e *Explanation) String() string { return e.Plan.Explain(e.Estimate) }

// Explain compiles the query name of src against snapshot s and estimates
// it; it reads the schema and the tables' row counts, never their rows,
// and needs no parameters (the estimate does not depend on them).
func Explain(ctx context.Context, s *graph.Snapshot, src, name string) (*Explanation, error) {
	plan, err := compile(ctx, s, src, name)
	if err != nil {
		return nil, err
	}
	return &Explanation{Plan: plan, Estimate: estimate(ctx, s, plan.Read)}, nil
}

// Execute runs a checked read plan with bound arguments on snapshot s.
// The plan must have been checked against this snapshot's catalog.
func Execute(ctx context.Context, s *graph.Snapshot, plan *gq.Plan, args *gq.Args) (*Result, error) {
	return ExecuteWith(ctx, s, plan, args, Options{})
}

// ExecuteWith is Execute under opts: the plan's estimate is checked
// against the budget first, then every operator charges it as it runs.
// When the budget stops the query the error is its *graph.BudgetExceeded,
// and nothing the query started outlives it (its background loads are
// cancelled and waited for).
func ExecuteWith(ctx context.Context, s *graph.Snapshot, plan *gq.Plan, args *gq.Args, opts Options) (*Result, error) {
	if plan.Read == nil {
		return nil, fmt.Errorf("%w: %s changes data; run it with 'omnigraph mutate'", graph.ErrNotARead, plan.Name)
	}
	ctx, m := graph.StartBudget(ctx, opts.Budget)
	defer m.Stop()
	res, err := execute(ctx, s, plan, args, m)
	if err != nil {
		return nil, s.Explain(ctx, m.Err(err))
	}
	res.Usage = m.Usage()
	return res, nil
}

func execute(ctx context.Context, s *graph.Snapshot, plan *gq.Plan, args *gq.Args, m *graph.Meter) (*Result, error) {
	ex := &executor{s: s, rp: plan.Read, args: args, nodes: map[string]*nodeRows{}, edges: map[string]*edgeIndex{}, arena: rowArena{width: len(plan.Read.Vars)},
		m: m, sizes: sizesOf(plan.Read)}
	defer ex.waitPrefetch()
	if err := ex.checkEstimate(ctx); err != nil {
		return nil, err
	}
	rows, err := ex.match(ctx, [][]ref{make([]ref, len(plan.Read.Vars))}, plan.Read.Steps)
	if err != nil {
		return nil, err
	}
	if err := ex.prepareScores(ctx, rows); err != nil {
		return nil, err
	}
	if rows, err = ex.ranked(rows); err != nil {
		return nil, err
	}
	out, err := ex.project(ctx, rows)
	if err != nil {
		return nil, err
	}
	res := &Result{QueryName: plan.Name, Rows: out, CommitID: s.CommitID(), Branch: s.Branch(), Version: s.Version()}
	for _, c := range plan.Read.Columns {
		rc := Column{Name: c.Name, Type: c.Type}
		if c.Kind == gq.ColumnNode {
			rc.Node = plan.Read.Vars[c.Expr.Var].Node
		}
		res.Columns = append(res.Columns, rc)
	}
	return res, nil
}

// ColumnNames lists the output column names.
func (r *Result) ColumnNames() []string {
	out := make([]string, len(r.Columns))
	for i, c := range r.Columns {
		out[i] = c.Name
	}
	return out
}

// JSONRow renders row i for JSON output: an object whose keys follow column
// order, dates as "YYYY-MM-DD", date-times as RFC 3339, whole nodes as
// objects of their id and properties.
func (r *Result) JSONRow(i int) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for j, c := range r.Columns {
		if j > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(c.Name)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(r.JSONValue(i, j))
		if err != nil {
			v, _ = json.Marshal(fmt.Sprint(r.Rows[i][j]))
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// JSONValue renders the value at row i, column j for JSON output.
func (r *Result) JSONValue(i, j int) any {
	c := r.Columns[j]
	v := r.Rows[i][j]
	if c.Node != nil {
		m, ok := v.(map[string]any)
		if !ok {
			return v
		}
		var b bytes.Buffer
		b.WriteByte('{')
		id, _ := json.Marshal(m[pg.ColID])
		b.WriteString(`"id":`)
		b.Write(id)
		for _, p := range c.Node.Properties {
			if p.Type.Kind == pg.KindBlob {
				continue
			}
			k, _ := json.Marshal(p.Name)
			pv, err := json.Marshal(jsonValueOf(p.Type, m[p.Name]))
			if err != nil {
				pv = []byte("null")
			}
			b.WriteByte(',')
			b.Write(k)
			b.WriteByte(':')
			b.Write(pv)
		}
		b.WriteByte('}')
		return json.RawMessage(b.Bytes())
	}
	return jsonValueOf(c.Type, v)
}

// MarshalJSON renders {query_name, row_count, columns, rows,
// graph_commit_id}; rows are objects keyed by column name.
func (r *Result) MarshalJSON() ([]byte, error) {
	rows := make([]json.RawMessage, len(r.Rows))
	for i := range r.Rows {
		rows[i] = r.JSONRow(i)
	}
	return json.Marshal(struct {
		QueryName     string            `json:"query_name"`
		RowCount      int               `json:"row_count"`
		Columns       []string          `json:"columns"`
		Rows          []json.RawMessage `json:"rows"`
		GraphCommitID string            `json:"graph_commit_id"`
	}{r.QueryName, len(r.Rows), r.ColumnNames(), rows, r.CommitID})
}

// openNamedTables opens, in the background, the table of every node type
// the read's match clauses bind and every edge type they traverse, so that
// on a cold handle the GETs of their version manifests overlap the GET of
// the accepted schema instead of following it (the executor, and the
// planner's estimate before it, then find them in the handle's table
// cache). A name that is not a table is skipped and an error is left for
// the executor to meet and report. The returned function waits for them.
func openNamedTables(ctx context.Context, s *graph.Snapshot, rb *gq.ReadBody) func() {
	if rb == nil {
		return func() {}
	}
	seen := map[string]bool{}
	var keys []string
	var walk func([]gq.Clause)
	walk = func(cs []gq.Clause) {
		for _, c := range cs {
			switch c := c.(type) {
			case *gq.BindingClause:
				k := graph.NodeTableKey(c.Type)
				if _, ok := s.Pin(k); ok && !seen[k] {
					seen[k] = true
					keys = append(keys, k)
				}
			case *gq.TraversalClause:
				// Edge names match their type case-insensitively.
				want := strings.ToLower(graph.EdgeTableKey(c.Edge))
				for _, p := range s.Tables() {
					if strings.ToLower(p.Key) == want && !seen[p.Key] {
						seen[p.Key] = true
						keys = append(keys, p.Key)
					}
				}
			case *gq.NotClause:
				walk(c.Clauses)
			}
		}
	}
	walk(rb.Match)
	var wg sync.WaitGroup
	for _, k := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = s.OpenTable(ctx, k)
		}()
	}
	return wg.Wait
}
