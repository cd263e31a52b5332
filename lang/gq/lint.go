package gq

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/omnigraph-go/omnigraph/lang/pg"
)

// Lint codes of the original system that are not type-check codes.
const (
	// LintParse is the original's code for a file that does not parse.
	LintParse = "Q000"
	// LintUnsetNullable flags a nullable property of a node type that some
	// update query changes but none sets (a warning).
	LintUnsetNullable = "L201"
	// LintHardcodedMutation flags a mutation with no parameters (a warning:
	// the original gives it no code; this one is ours).
	LintHardcodedMutation = "L202"
)

// Severities of a lint finding.
const (
	SeverityError   = "error"
	SeverityWarning = "warning"
)

// LintReport is what Lint found in one .gq file. Status is "error" when
// any query failed to check or a finding is an error, else "ok": warnings
// never fail a lint.
type LintReport struct {
	Status           string        `json:"status"`
	QueriesProcessed int           `json:"queries_processed"`
	Errors           int           `json:"errors"`
	Warnings         int           `json:"warnings"`
	Results          []LintResult  `json:"results"`
	Findings         []LintFinding `json:"findings"`
}

// LintResult is one query declaration's outcome.
type LintResult struct {
	Name      string         `json:"name"`
	Kind      string         `json:"kind"` // "read" or "mutation"
	Status    string         `json:"status"`
	Warnings  []string       `json:"warnings,omitempty"`
	Error     string         `json:"error,omitempty"`
	Operation *LintOperation `json:"operation,omitempty"`
}

// LintFinding is one diagnostic with a stable code: the original system's
// where it has one (Q000, T7, L201), else ours (GQ003...). A check error
// also carries our own code in GQCode, the code the query routes answer.
type LintFinding struct {
	Severity string   `json:"severity"`
	Code     string   `json:"code"`
	GQCode   string   `json:"gq_code,omitempty"`
	Message  string   `json:"message"`
	Line     int      `json:"line,omitempty"`
	Column   int      `json:"column,omitempty"`
	Type     string   `json:"type,omitempty"`
	Property string   `json:"property,omitempty"`
	Queries  []string `json:"queries,omitempty"`
}

// LintOperation describes what a query that checks reads, writes and
// returns, so a caller can tell without running it.
type LintOperation struct {
	Result []LintField   `json:"result"`
	Reads  []LintTypeRef `json:"reads"`
	Writes []LintTypeRef `json:"writes"`
}

// LintField is one output column.
type LintField struct {
	Name     string `json:"name"`
	Type     string `json:"type"` // the .pg spelling
	Nullable bool   `json:"nullable"`
}

// LintTypeRef names a node or edge type.
type LintTypeRef struct {
	Kind string `json:"kind"` // "node" or "edge"
	Type string `json:"type"`
}

// originalCodes maps our codes to the original system's, where one exists
// (the bracketed codes of the Code constants).
var originalCodes = map[Code]string{
	CodeSyntax:          LintParse,
	CodeUnknownType:     "T1",
	CodeUnknownProperty: "T2",
	CodeUnbound:         "T6",
	CodeBlob:            "T3",
	CodeUnknownEdge:     "T4",
	CodeEndpoint:        "T5",
	CodeTypeMismatch:    "T7",
	CodeAggregateArg:    "T8",
	CodeAggregateMix:    "T9",
	CodeHops:            "T15",
	CodeUndirected:      "T22",
	CodeEdgeBinding:     "T23",
	CodeMissingRequired: "T12",
	CodeDuplicateAssign: "T13",
	CodeUpdateEdge:      "T16",
	CodeRRF:             "T21",
}

// OriginalCode is the original system's code for c, or "" when it has none.
func OriginalCode(c Code) string { return originalCodes[c] }

// Lint parses src, checks every query in it against cat, and adds the
// file-wide findings: L201 (a nullable property that update queries of its
// type never set) and a warning for each mutation with no parameters. It
// never fails: every problem is in the report.
func Lint(src string, cat *pg.Catalog) *LintReport {
	r := &LintReport{Results: []LintResult{}, Findings: []LintFinding{}}
	f, err := Parse(src)
	if err != nil {
		for _, e := range asErrors(err) {
			r.Findings = append(r.Findings, finding(SeverityError, e))
		}
		r.finish()
		return r
	}
	r.QueriesProcessed = len(f.Queries)
	updated := map[string]*coverage{} // node type -> what its updates set
	for _, q := range f.Queries {
		res := LintResult{Name: q.Name, Kind: "read", Status: "ok"}
		if q.Read == nil {
			res.Kind = "mutation"
			if len(q.Params) == 0 {
				res.Warnings = append(res.Warnings, "mutation declares no parameters; a hard-coded mutation is easy to miss")
				r.Findings = append(r.Findings, LintFinding{Severity: SeverityWarning, Code: LintHardcodedMutation,
					Message: fmt.Sprintf("mutation %s declares no parameters; a hard-coded mutation is easy to miss", q.Name),
					Line:    q.Pos.Line, Column: q.Pos.Col, Queries: []string{q.Name}})
			}
		}
		pl, err := CheckQuery(q, cat)
		if err != nil {
			res.Status = "error"
			var msgs []string
			for _, e := range asErrors(err) {
				msgs = append(msgs, e.Error())
				r.Findings = append(r.Findings, finding(SeverityError, e))
			}
			res.Error = strings.Join(msgs, "; ")
		} else {
			res.Operation = operation(pl)
			cover(pl, updated)
		}
		r.Results = append(r.Results, res)
	}
	r.Findings = append(r.Findings, unsetNullables(cat, updated)...)
	r.finish()
	return r
}

// coverage is what the update statements of one node type assign, and in
// which queries.
type coverage struct {
	queries map[string]bool
	set     map[string]bool
}

func cover(pl *Plan, updated map[string]*coverage) {
	if pl.Mutation == nil {
		return
	}
	for _, st := range pl.Mutation.Statements {
		if st.Kind != StmtUpdate || st.Node == nil {
			continue
		}
		c := updated[st.Node.Name]
		if c == nil {
			c = &coverage{queries: map[string]bool{}, set: map[string]bool{}}
			updated[st.Node.Name] = c
		}
		c.queries[pl.Name] = true
		for _, a := range st.Values {
			c.set[a.Prop.Name] = true
		}
	}
}

// unsetNullables is L201: for each node type some query updates, every
// nullable property (not a key, not filled by @embed) that no update sets.
func unsetNullables(cat *pg.Catalog, updated map[string]*coverage) []LintFinding {
	var out []LintFinding
	for _, n := range cat.Nodes {
		c := updated[n.Name]
		if c == nil {
			continue
		}
		queries := make([]string, 0, len(c.queries))
		for q := range c.queries {
			queries = append(queries, q)
		}
		sort.Strings(queries)
		for _, p := range n.Properties {
			if !p.Nullable || p.Key || p.Embed != nil || c.set[p.Name] {
				continue
			}
			out = append(out, LintFinding{Severity: SeverityWarning, Code: LintUnsetNullable,
				Message: fmt.Sprintf("%s.%s exists in the schema but no update query sets it", n.Name, p.Name),
				Type:    n.Name, Property: p.Name, Queries: queries})
		}
	}
	return out
}

func operation(pl *Plan) *LintOperation {
	op := &LintOperation{Result: []LintField{}, Reads: []LintTypeRef{}, Writes: []LintTypeRef{}}
	seen := map[LintTypeRef]bool{}
	add := func(list *[]LintTypeRef, r LintTypeRef) {
		if !seen[r] {
			seen[r] = true
			*list = append(*list, r)
		}
	}
	if pl.Read != nil {
		for _, v := range pl.Read.Vars {
			switch {
			case v.Node != nil:
				add(&op.Reads, LintTypeRef{Kind: "node", Type: v.Node.Name})
			case v.Edge != nil:
				add(&op.Reads, LintTypeRef{Kind: "edge", Type: v.Edge.Name})
			}
		}
		for _, s := range pl.Read.Steps {
			if e, ok := s.(*ExpandStep); ok && e.Edge != nil {
				add(&op.Reads, LintTypeRef{Kind: "edge", Type: e.Edge.Name})
			}
		}
		for _, c := range pl.Read.Columns {
			op.Result = append(op.Result, LintField{Name: c.Name, Type: c.Type.String(), Nullable: c.Nullable})
		}
	}
	if pl.Mutation != nil {
		for _, st := range pl.Mutation.Statements {
			switch {
			case st.Node != nil:
				add(&op.Writes, LintTypeRef{Kind: "node", Type: st.Node.Name})
			case st.Edge != nil:
				add(&op.Writes, LintTypeRef{Kind: "edge", Type: st.Edge.Name})
			}
		}
	}
	byName := func(l []LintTypeRef) {
		sort.Slice(l, func(i, j int) bool {
			if l[i].Kind != l[j].Kind {
				return l[i].Kind < l[j].Kind
			}
			return l[i].Type < l[j].Type
		})
	}
	byName(op.Reads)
	byName(op.Writes)
	return op
}

// asErrors flattens err into its diagnostics (one *Error or an ErrorList);
// anything else becomes one syntax-class error.
func asErrors(err error) []*Error {
	var l ErrorList
	if errors.As(err, &l) {
		return l
	}
	var e *Error
	if errors.As(err, &e) {
		return []*Error{e}
	}
	return []*Error{{Code: CodeSyntax, Msg: err.Error()}}
}

func finding(sev string, e *Error) LintFinding {
	code := OriginalCode(e.Code)
	if code == "" {
		code = string(e.Code)
	}
	f := LintFinding{Severity: sev, Code: code, GQCode: string(e.Code), Message: e.Error(),
		Line: e.Pos.Line, Column: e.Pos.Col}
	if e.Query != "" {
		f.Queries = []string{e.Query}
	}
	return f
}

// finish counts and orders the findings (errors first, then by position,
// type and property) and sets the status.
func (r *LintReport) finish() {
	rank := map[string]int{SeverityError: 0, SeverityWarning: 1}
	sort.SliceStable(r.Findings, func(i, j int) bool {
		a, b := r.Findings[i], r.Findings[j]
		if rank[a.Severity] != rank[b.Severity] {
			return rank[a.Severity] < rank[b.Severity]
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Type != b.Type {
			return a.Type < b.Type
		}
		return a.Property < b.Property
	})
	r.Errors, r.Warnings = 0, 0
	for _, f := range r.Findings {
		if f.Severity == SeverityError {
			r.Errors++
		} else {
			r.Warnings++
		}
	}
	r.Status = "ok"
	if r.Errors > 0 {
		r.Status = "error"
	}
}
