package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/lang/gq"
	"github.com/omnigraph-go/omnigraph/lang/pg"
)

// What an agent learns about .gq from the MCP endpoint itself: the
// initialize instructions carry a short guide written from the served
// schema (main's), and two resources hold the schema source and the
// full guide with worked examples. Every example is generated from the
// catalog and kept only when gq.Lint (the checker of POST query/check)
// accepts it, so what the guide shows runs on this graph.

// guideExample is one generated .gq example.
type guideExample struct {
	what   string // one line: what it shows
	source string
	// args are graph_query's or graph_mutate's arguments for it.
	args map[string]any
}

// mcpResource is one resource of a graph's MCP server: read on the graph,
// a read slot, as a reading tool (see mcpResources).
type mcpResource struct {
	name, suffix, desc, mime string
	class                    toolClass
	action                   Action
	read                     func(r *request) (string, error)
}

// mcpResources are the resources of every graph: omnigraph://graphs/ID/
// plus the suffix.
func mcpResources() []mcpResource {
	return []mcpResource{
		{name: "schema", suffix: "schema", mime: "text/plain", class: readSlot, action: ActionRead,
			desc: "The .pg schema source of branch main: the node and edge types a .gq query names",
			read: func(r *request) (string, error) {
				out, err := r.opSchema("", "")
				return out.SchemaSource, err
			}},
		{name: "guide", suffix: "guide", mime: "text/markdown", class: readSlot, action: ActionRead,
			desc: "How to write .gq (the query language of graph_query and graph_mutate) for this graph: its types, keys and worked examples that type-check against its schema",
			read: func(r *request) (string, error) {
				cat, err := r.mainCatalog()
				if err != nil {
					return "", err
				}
				return fullGuide(r.graphID, cat), nil
			}},
	}
}

func resourceURI(graphID, suffix string) string {
	return "omnigraph://graphs/" + graphID + "/" + suffix
}

// mainCatalog is the schema of branch main, read as GET schema reads it
// (the policy's read on main).
func (r *request) mainCatalog() (*pg.Catalog, error) {
	snap, _, err := r.readSnapshot("", "", nil)
	if err != nil {
		return nil, err
	}
	return snap.Catalog(r.Context())
}

// addResources adds the graph's resources to ms; each read runs as a
// tool call does (runTool: the read slot, panic containment) and a
// refusal is a JSON-RPC error whose data is the tool error envelope.
func (s *Server) addResources(ms *mcp.Server, graphID string) map[string]Action {
	actions := map[string]Action{}
	for _, res := range mcpResources() {
		uri := resourceURI(graphID, res.suffix)
		actions[uri] = res.action
		ms.AddResource(&mcp.Resource{URI: uri, Name: res.name, Description: res.desc, MIMEType: res.mime},
			func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				hr, _ := ctx.Value(requestKey{}).(*request)
				if hr == nil {
					return nil, errors.New("the resource read reached the server outside an HTTP request")
				}
				r := *hr
				r.Request = hr.Request.WithContext(ctx)
				start := time.Now()
				out, f := s.runTool(&r, "resource "+res.name, res.class, func() (any, error) { return res.read(&r) })
				status := 200
				if f != nil {
					status = f.Status
				}
				s.log.Info("mcp resource read", "resource", res.name, "graph", r.graphID, "status", status, "actor", actorOrAnon(r.actor),
					"duration_ms", float64(time.Since(start).Microseconds())/1000)
				if f != nil {
					data, _ := json.Marshal(ToolError{Status: f.Status, ErrorOutput: f.Body, RetryAfter: f.RetryAfter})
					return nil, &jsonrpc.Error{Code: rpcServerError, Message: f.Body.Error, Data: data}
				}
				s.answering(hr.w)
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: res.mime, Text: out.(string)}}}, nil
			})
	}
	return actions
}

// rpcServerError is the JSON-RPC code of a refused resource read (the
// implementation-defined range); its data carries the HTTP status and
// envelope, as a tool error result's structured content.
const rpcServerError = -32000

// baseInstructions are the initialize instructions without the schema.
const baseInstructions = "Tools over one OmniGraph graph: graph_query reads, graph_mutate and graph_load write one commit each. " +
	"Queries are .gq (not Cypher or SQL). An error result's structured content is the HTTP error envelope with its status; " +
	"status 500 with outcome_unknown means a write may have landed: check commit_list before sending it again."

// instructions is what initialize tells an agent: the base text and,
// when main's schema can be read, the short guide to .gq over it.
func instructions(graphID string, cat *pg.Catalog) string {
	if cat == nil {
		return baseInstructions + " Read the resource " + resourceURI(graphID, "guide") + " for .gq syntax."
	}
	var b strings.Builder
	b.WriteString(baseInstructions)
	b.WriteString("\n\n")
	b.WriteString(shortGuide(graphID, cat))
	return b.String()
}

// shortGuide is the .gq primer of the instructions: the types, their
// keys and one read that type-checks on this schema.
func shortGuide(graphID string, cat *pg.Catalog) string {
	var b strings.Builder
	b.WriteString("# .gq on this graph\n")
	b.WriteString(typeLines(cat, shortGuideTypes))
	b.WriteString("A read is `query NAME($param: Type) { match { clauses } return { items } [order { keys }] [limit N] }`: " +
		"`$x: Type { prop: value }` binds nodes (equality on the key is a point lookup), `$a edge $b` follows an edge, `$x.prop > 3` filters. " +
		"A mutation is `mutation NAME($param: Type) { insert T { prop: $param } }` (or update / delete). Pass values in params, not in the text.\n")
	if ex := guideExamples(cat); len(ex) > 0 {
		args, _ := json.Marshal(ex[0].args)
		fmt.Fprintf(&b, "Example (%s), graph_query arguments: %s\n", ex[0].what, args)
	}
	fmt.Fprintf(&b, "Resources: %s (the .pg source) and %s (syntax and worked examples for these types); query_lint checks a query without running it.",
		resourceURI(graphID, "schema"), resourceURI(graphID, "guide"))
	return b.String()
}

// shortGuideTypes bounds the types the instructions list: a large schema
// must not crowd an agent's context (the guide resource lists them all).
const shortGuideTypes = 24

// typeLines lists the node types (with their key and properties) and
// the edge types, at most max of them (0: all).
func typeLines(cat *pg.Catalog, max int) string {
	var b strings.Builder
	n := 0
	more := func() bool {
		n++
		if max > 0 && n > max {
			if n == max+1 {
				fmt.Fprintf(&b, "- ... and %d more types (the guide resource lists them all)\n", len(cat.Nodes)+len(cat.Edges)-max)
			}
			return false
		}
		return true
	}
	for _, n := range cat.Nodes {
		if !more() {
			continue
		}
		fmt.Fprintf(&b, "- node %s", n.Name)
		if len(n.Key) > 0 {
			fmt.Fprintf(&b, " (key %s)", strings.Join(n.Key, ", "))
		}
		b.WriteString(": ")
		b.WriteString(propList(n.Properties))
		b.WriteString("\n")
	}
	for _, e := range cat.Edges {
		if !more() {
			continue
		}
		fmt.Fprintf(&b, "- edge %s: %s -> %s", e.Name, e.From, e.To)
		if len(e.Properties) > 0 {
			b.WriteString(": " + propList(e.Properties))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func propList(ps []*pg.Property) string {
	var out []string
	for _, p := range ps {
		s := p.Name + " " + p.Type.String()
		if p.Nullable {
			s += "?"
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

// fullGuide is the guide resource: the types, the syntax in brief and
// every generated example with its arguments.
func fullGuide(graphID string, cat *pg.Catalog) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Writing .gq for graph %s\n\n", graphID)
	b.WriteString(".gq is OmniGraph's query language (not Cypher, not SQL). Run a read with graph_query, a mutation with graph_mutate; " +
		"check one without running it with query_lint. Every example below type-checks against this graph's schema (" +
		resourceURI(graphID, "schema") + ").\n\n## Types\n\n")
	b.WriteString(typeLines(cat, 0))
	b.WriteString("\n## Syntax\n\n" +
		"- `query name($p: Type, ...) { ... }`; parameter types: String Bool I32 I64 U32 U64 F32 F64 Date DateTime, lists `[String]`; `?` makes one optional. Values go in `params`.\n" +
		"- Read: `match { clauses } return { items } [order { $x.prop desc }] [limit N]`. All clauses must hold.\n" +
		"- `$x: Type` binds every node of a type; `$x: Type { prop: value }` tests equality (on the key: a point lookup).\n" +
		"- `$a edge $b` follows an edge (direction inferred from the types; an edge may be written lowercase-first); `$a edge{1,3} $b` is 1 to 3 hops.\n" +
		"- Filters: `$x.prop = v`, `!=`, `<`, `<=`, `>`, `>=`, `contains`, `starts_with`; `not { clauses }`.\n" +
		"- Return `$x` (the whole node), `$x.prop`, or aggregates `count($x)`; literals: \"text\", 42, 1.5, true, date(\"2024-01-31\").\n" +
		"- Mutation: `mutation name(...) { statements }` with `insert T { prop: $v, ... }`, `update T set { prop: v } where key = $k`, `delete T where key = $k`; " +
		"an edge: `insert Edge { from: $a, to: $b }` with the endpoint keys.\n\n## Examples\n")
	for _, ex := range guideExamples(cat) {
		args, _ := json.Marshal(ex.args)
		tool := "graph_query"
		if strings.Contains(ex.what, "mutation") {
			tool = "graph_mutate"
		}
		fmt.Fprintf(&b, "\n### %s\n\n```gq\n%s\n```\n\n%s arguments: `%s`\n", ex.what, ex.source, tool, args)
	}
	return b.String()
}

// guideExamples are the examples generated from cat, in the order the
// guide shows them, each kept only when gq.Lint finds no error in it.
func guideExamples(cat *pg.Catalog) []guideExample {
	var cands []guideExample
	node := firstNode(cat)
	if node != nil {
		v := "$" + strings.ToLower(node.Name[:1])
		show := showProp(node)
		ret := v
		if show != "" {
			ret = v + "." + show
		}
		cands = append(cands, guideExample{
			what:   "every " + node.Name + ", at most 10",
			source: fmt.Sprintf("query all_%s() {\n  match { %s: %s }\n  return { %s }\n  limit 10\n}", lowerName(node.Name), v, node.Name, ret),
		})
		if k := node.KeyName(); k != "" {
			if p, ok := node.Property(k); ok && scalarParam(p.Type) {
				cands = append(cands, guideExample{
					what:   "one " + node.Name + " by its key " + k,
					source: fmt.Sprintf("query %s_by_%s($k: %s) {\n  match { %s: %s { %s: $k } }\n  return { %s }\n}", lowerName(node.Name), k, p.Type, v, node.Name, k, v),
					args:   map[string]any{"params": map[string]any{"k": sampleValue(p.Type)}},
				})
			}
		}
		cands = append(cands, guideExample{
			what:   "how many " + node.Name + " nodes",
			source: fmt.Sprintf("query count_%s() {\n  match { %s: %s }\n  return { count(%s) as n }\n}", lowerName(node.Name), v, node.Name, v),
		})
	}
	for _, e := range cat.Edges {
		from, ok1 := cat.Node(e.From)
		to, ok2 := cat.Node(e.To)
		if !ok1 || !ok2 {
			continue
		}
		a, b := "$a", "$b"
		ra, rb := a, b
		if p := showProp(from); p != "" {
			ra = a + "." + p
		}
		if p := showProp(to); p != "" {
			rb = b + "." + p
		}
		cands = append(cands, guideExample{
			what:   "pairs joined by edge " + e.Name,
			source: fmt.Sprintf("query %s_pairs() {\n  match {\n    %s: %s\n    %s %s %s\n  }\n  return { %s, %s }\n  limit 10\n}", lowerName(e.Name), a, e.From, a, e.Name, b, ra, rb),
		})
		break
	}
	if node != nil {
		var decl, fields []string
		params := map[string]any{}
		ok := true
		for _, p := range node.Properties {
			if p.Nullable {
				continue
			}
			if !scalarParam(p.Type) {
				ok = false
				break
			}
			decl = append(decl, fmt.Sprintf("$%s: %s", p.Name, p.Type))
			fields = append(fields, fmt.Sprintf("%s: $%s", p.Name, p.Name))
			params[p.Name] = sampleValue(p.Type)
		}
		if ok && len(fields) > 0 {
			cands = append(cands, guideExample{
				what:   "a mutation: insert one " + node.Name,
				source: fmt.Sprintf("mutation add_%s(%s) {\n  insert %s { %s }\n}", lowerName(node.Name), strings.Join(decl, ", "), node.Name, strings.Join(fields, ", ")),
				args:   map[string]any{"params": params},
			})
		}
	}
	var out []guideExample
	for _, ex := range cands {
		if rep := gq.Lint(ex.source, cat); rep.Errors != 0 {
			continue
		}
		args := map[string]any{"query": ex.source}
		for k, v := range ex.args {
			args[k] = v
		}
		ex.args = args
		out = append(out, ex)
	}
	return out
}

// firstNode is the first keyed node type (else the first node type).
func firstNode(cat *pg.Catalog) *pg.NodeType {
	for _, n := range cat.Nodes {
		if n.KeyName() != "" {
			return n
		}
	}
	if len(cat.Nodes) > 0 {
		return cat.Nodes[0]
	}
	return nil
}

// showProp is the property an example returns for a node: its key, else
// its first readable scalar, else "" (return the node).
func showProp(n *pg.NodeType) string {
	if k := n.KeyName(); k != "" {
		return k
	}
	for _, p := range n.Properties {
		if scalarParam(p.Type) {
			return p.Name
		}
	}
	return ""
}

func lowerName(s string) string {
	return strings.ToLower(s[:1]) + s[1:]
}

// scalarParam says whether a parameter of type t is easy to write.
func scalarParam(t pg.Type) bool {
	switch t.Kind {
	case pg.KindString, pg.KindBool, pg.KindI32, pg.KindI64, pg.KindU32, pg.KindU64, pg.KindF32, pg.KindF64:
		return true
	}
	return false
}

// sampleValue is a JSON value of a parameter of type t.
func sampleValue(t pg.Type) any {
	switch t.Kind {
	case pg.KindString:
		return "example"
	case pg.KindBool:
		return true
	case pg.KindF32, pg.KindF64:
		return 1.5
	}
	return 1
}

// withGuideHint adds to a .gq syntax error of a tool the pointer to the
// guide: a Cypher-like first try learns where the syntax is.
func withGuideHint(f *Failure, graphID string) *Failure {
	if f == nil || f.Body.Code != api.CodeBadRequest {
		return f
	}
	g := *f
	g.Body.Error += " (.gq is not Cypher or SQL: read the MCP resource " + resourceURI(graphID, "guide") + " for its syntax and examples that run on this graph)"
	return &g
}

// isSyntaxError says whether err is a .gq parse error (GQ001).
func isSyntaxError(err error) bool {
	var qe *gq.Error
	return errors.As(err, &qe) && qe.Code == gq.CodeSyntax
}
