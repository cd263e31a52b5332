package server

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/lang/gq"
	"github.com/omnigraph-go/omnigraph/lang/pg"
)

// Stored queries: a graph's named .gq queries and mutations, registered
// with the server (serve --queries DIR, or "queries" per graph in
// --config). Each is listed in GET queries with its parameters as JSON
// Schema, runs by name (POST queries/NAME), and is an MCP tool of the
// graph. CompileQueries is the one verdict on a set of files: serve
// refuses to start with a set it refuses, and `omnigraph queries
// validate` prints its problems.

// QueryFile is one .gq file of stored queries.
type QueryFile struct {
	// Name is where the file came from (for messages): its path.
	Name   string
	Source string
}

// StoredQuery is one compiled stored query: its catalog entry, the file
// that declares it and that file's source (what runs).
type StoredQuery struct {
	api.StoredQuery
	// File is the file that declares it.
	File   string `json:"file,omitempty"`
	source string
}

// QueryProblem is one reason a set of stored queries is refused (or, as
// a warning, something to look at).
type QueryProblem struct {
	File     string `json:"file"`
	Query    string `json:"query,omitempty"`
	Line     int    `json:"line,omitempty"`
	Column   int    `json:"column,omitempty"`
	Severity string `json:"severity"` // "error" or "warning"
	Code     string `json:"code"`
	Message  string `json:"message"`
}

func (p QueryProblem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", p.Line, p.Column)
	}
	fmt.Fprintf(&b, ": %s %s", p.Severity, p.Code)
	if p.Query != "" {
		fmt.Fprintf(&b, " (query %s)", p.Query)
	}
	return b.String() + ": " + p.Message
}

// StoredQueries is a checked set of stored queries, by name.
type StoredQueries struct {
	list []*StoredQuery // by name
}

// List returns the queries by name.
func (s *StoredQueries) List() []*StoredQuery {
	if s == nil {
		return nil
	}
	return slices.Clone(s.list)
}

// Get returns the query named name.
func (s *StoredQueries) Get(name string) (*StoredQuery, bool) {
	if s == nil {
		return nil, false
	}
	i, ok := slices.BinarySearchFunc(s.list, name, func(q *StoredQuery, n string) int { return strings.Compare(q.Name, n) })
	if !ok {
		return nil, false
	}
	return s.list[i], true
}

// Len is the number of queries.
func (s *StoredQueries) Len() int {
	if s == nil {
		return 0
	}
	return len(s.list)
}

// Codes of the problems CompileQueries finds itself (the others are
// gq.Lint's: Q000, T-codes, L201, L202).
const (
	QueryDuplicate = "SQ001" // a name declared twice
	QueryToolName  = "SQ002" // a name that cannot be a tool name, or is a built-in tool's
	QueryVector    = "SQ003" // a Vector parameter (a warning: agents cannot fill it)
	QueryNoFile    = "SQ004" // no query at all
)

// toolNameRE is what MCP clients accept as a tool name.
var toolNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// reservedTools are the names stored queries cannot take: the built-in
// tools, and the pair that replaces per-query tools for large sets.
func reservedTools() []string {
	return append(MCPTools(), storedListTool, storedRunTool)
}

// CompileQueries checks the queries of files against cat: each parses and
// type-checks (gq.Lint, the verdict of `omnigraph lint`), no name is
// declared twice (in one file or across files), every name can be an MCP
// tool's and is no built-in tool's. Warnings (lint's, and Vector
// parameters an agent cannot fill) do not refuse the set. The set is nil
// when any problem is an error.
func CompileQueries(files []QueryFile, cat *pg.Catalog) (*StoredQueries, []QueryProblem) {
	var problems []QueryProblem
	errorf := func(file, query, code string, pos gq.Pos, format string, args ...any) {
		problems = append(problems, QueryProblem{File: file, Query: query, Line: pos.Line, Column: pos.Col, Severity: gq.SeverityError, Code: code, Message: fmt.Sprintf(format, args...)})
	}
	declared := map[string]string{} // name -> file
	set := &StoredQueries{}
	for _, f := range files {
		rep := gq.Lint(f.Source, cat)
		for _, fd := range rep.Findings {
			q := ""
			if len(fd.Queries) == 1 {
				q = fd.Queries[0]
			}
			problems = append(problems, QueryProblem{File: f.Name, Query: q, Line: fd.Line, Column: fd.Column, Severity: fd.Severity, Code: fd.Code, Message: fd.Message})
		}
		parsed, err := gq.Parse(f.Source)
		if err != nil {
			continue // Lint reported it
		}
		if len(parsed.Queries) == 0 {
			errorf(f.Name, "", QueryNoFile, gq.Pos{}, "the file declares no query")
		}
		for _, decl := range parsed.Queries {
			if prev, dup := declared[decl.Name]; dup {
				where := "earlier in this file"
				if prev != f.Name {
					where = "in " + prev
				}
				errorf(f.Name, decl.Name, QueryDuplicate, decl.Pos, "query %s is declared twice (also %s); stored queries are called by name, so each name is declared once", decl.Name, where)
				continue
			}
			declared[decl.Name] = f.Name
			switch {
			case !toolNameRE.MatchString(decl.Name):
				errorf(f.Name, decl.Name, QueryToolName, decl.Pos, "query name %q is not a tool name (1 to 64 letters, digits, '_' or '-')", decl.Name)
				continue
			case slices.Contains(reservedTools(), decl.Name):
				errorf(f.Name, decl.Name, QueryToolName, decl.Pos, "query %s has the name of a built-in MCP tool; rename it", decl.Name)
				continue
			}
			pl, err := gq.CheckQuery(decl, cat)
			if err != nil {
				continue // Lint reported it
			}
			desc := pl.Description
			if desc == "" {
				// No @description: the doc comment above the query says
				// what it does (the tool's description an agent reads).
				desc = docComment(f.Source, decl.Pos.Line)
			}
			sq := &StoredQuery{StoredQuery: api.StoredQuery{Name: decl.Name, ToolName: decl.Name, Description: desc, Instruction: pl.Instruction,
				Mutation: pl.Mutation != nil, Params: []api.QueryParam{}}, File: f.Name, source: f.Source}
			for _, p := range pl.Params {
				qp := paramOf(p)
				if p.Type.Kind == pg.KindVector {
					problems = append(problems, QueryProblem{File: f.Name, Query: decl.Name, Line: decl.Pos.Line, Column: decl.Pos.Col, Severity: gq.SeverityWarning, Code: QueryVector,
						Message: fmt.Sprintf("parameter $%s is a %s: an agent calling the tool must send %d numbers", p.Name, p.Type, p.Type.Dim)})
				}
				sq.Params = append(sq.Params, qp)
			}
			sq.InputSchema = paramsSchema(sq.Params)
			set.list = append(set.list, sq)
		}
	}
	sort.Slice(set.list, func(i, j int) bool { return set.list[i].Name < set.list[j].Name })
	sort.SliceStable(problems, func(i, j int) bool {
		a, b := problems[i], problems[j]
		if a.File != b.File {
			return a.File < b.File
		}
		return a.Line < b.Line
	})
	for _, p := range problems {
		if p.Severity == gq.SeverityError {
			return nil, problems
		}
	}
	return set, problems
}

// docComment is the block of // lines right above line (1-based) of
// src, without the slashes, joined by spaces: a query's doc comment.
func docComment(src string, line int) string {
	lines := strings.Split(src, "\n")
	var doc []string
	for i := line - 2; i >= 0 && i < len(lines); i-- {
		l := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(l, "//") {
			break
		}
		doc = append(doc, strings.TrimSpace(strings.TrimPrefix(l, "//")))
	}
	slices.Reverse(doc)
	return strings.TrimSpace(strings.Join(doc, " "))
}

// paramOf describes one declared parameter.
func paramOf(p *gq.Param) api.QueryParam {
	qp := api.QueryParam{Name: p.Name, Type: p.Type.String(), Nullable: p.Nullable}
	qp.Kind, qp.Schema = kindOf(p.Type)
	switch p.Type.Kind {
	case pg.KindList:
		if p.Type.Elem != nil {
			qp.ItemKind, _ = kindOf(*p.Type.Elem)
		}
	case pg.KindVector:
		qp.VectorDim = p.Type.Dim
	}
	return qp
}

// kindOf is the original's kind of a type and the JSON Schema of its
// values, as Bind accepts them (lang/pg's coercion).
func kindOf(t pg.Type) (string, map[string]any) {
	intRange := func(lo, hi float64) map[string]any {
		return map[string]any{"type": "integer", "minimum": lo, "maximum": hi}
	}
	switch t.Kind {
	case pg.KindString:
		return "string", map[string]any{"type": "string"}
	case pg.KindEnum:
		vals := make([]any, len(t.Values))
		for i, v := range t.Values {
			vals[i] = v
		}
		return "string", map[string]any{"type": "string", "enum": vals}
	case pg.KindBool:
		return "bool", map[string]any{"type": "boolean"}
	case pg.KindI32:
		return "int", intRange(math.MinInt32, math.MaxInt32)
	case pg.KindU32:
		return "int", intRange(0, math.MaxUint32)
	case pg.KindI64:
		return "bigint", map[string]any{"type": "string", "pattern": `^-?[0-9]{1,19}$`, "description": "a whole number written as a string of digits (64 bits)"}
	case pg.KindU64:
		return "bigint", map[string]any{"type": "string", "pattern": `^[0-9]{1,20}$`, "description": "a whole number written as a string of digits (64 bits, unsigned)"}
	case pg.KindF32, pg.KindF64:
		return "float", map[string]any{"type": "number"}
	case pg.KindDate:
		return "date", map[string]any{"type": "string", "format": "date"}
	case pg.KindDateTime:
		return "datetime", map[string]any{"type": "string", "format": "date-time"}
	case pg.KindBlob:
		return "blob", map[string]any{"type": "string", "contentEncoding": "base64", "description": "base64 bytes, optionally prefixed base64:"}
	case pg.KindVector:
		return "vector", map[string]any{"type": "array", "items": map[string]any{"type": "number"}, "minItems": t.Dim, "maxItems": t.Dim}
	case pg.KindList:
		item := map[string]any{}
		if t.Elem != nil {
			_, item = kindOf(*t.Elem)
		}
		return "list", map[string]any{"type": "array", "items": item}
	}
	return "string", map[string]any{}
}

// paramsSchema is the JSON Schema of a params object: every parameter
// typed, the non-nullable ones required, nothing else.
func paramsSchema(ps []api.QueryParam) map[string]any {
	props := map[string]any{}
	required := []string{}
	for _, p := range ps {
		props[p.Name] = p.Schema
		if !p.Nullable {
			required = append(required, p.Name)
		}
	}
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}
