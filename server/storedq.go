package server

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/omnigraph-go/omnigraph/api"
)

// The routes and MCP tools of stored queries (queries.go holds the
// catalog). Running one needs invoke_query on the graph for that query
// (context.query), then read or change as the query does; a query the
// actor may not invoke answers exactly as one that does not exist (404),
// so the catalog does not leak through the invoke route.

const (
	storedListTool = "stored_query_list"
	storedRunTool  = "stored_query_run"
	// perQueryTools: a graph with fewer stored queries than this has one
	// MCP tool per query; with more, the pair stored_query_list and
	// stored_query_run (a long tool list crowds an agent's context).
	perQueryTools = 24
)

// ifGraphCommit reads the Omnigraph-If-Graph-Commit header of a
// conditional route: exactly once, one raw commit id.
func (r *request) ifGraphCommit() (string, error) {
	vs := r.Header.Values(api.HeaderIfGraphCommit)
	if len(vs) != 1 {
		return "", badRequest("send the %s header exactly once, with the raw commit id the branch head must be", api.HeaderIfGraphCommit)
	}
	v := strings.TrimSpace(vs[0])
	if v == "" || v == "*" || strings.ContainsAny(v, `",`) || strings.HasPrefix(v, "W/") {
		return "", badRequest("%s takes one raw commit id (no '*', quotes, W/ or lists)", api.HeaderIfGraphCommit)
	}
	return v, nil
}

// mayInvoke is the policy's invoke_query for one query, without a 403.
func (s *Server) mayInvoke(actor, graphID, query string) bool {
	return s.policy.Authorize(AuthzRequest{Actor: actorOrAnon(actor), Graph: graphID, Action: ActionInvokeQuery, Query: query}).Allowed
}

// storedQuery finds a query the actor may invoke; a missing one and a
// denied one get the same 404.
func (r *request) storedQuery(name string) (*StoredQuery, error) {
	q, ok := r.s.queries[r.graphID].Get(name)
	if !ok || !r.s.mayInvoke(r.actor, r.graphID, name) {
		if ok {
			r.s.log.Info("policy denied", "actor", actorOrAnon(r.actor), "action", string(ActionInvokeQuery), "graph", r.graphID, "query", name)
		}
		return nil, fail(http.StatusNotFound, api.CodeNotFound, "graph %q has no stored query %q (GET /graphs/%s/queries lists them)", r.graphID, name, r.graphID)
	}
	return q, nil
}

// opListQueries lists the stored queries the actor may invoke: what
// tools/list shows it. It reveals no branch, so it asks no read (running
// one asks read or change as the query does).
func (r *request) opListQueries() (api.QueryCatalog, error) {
	out := api.QueryCatalog{Queries: []api.StoredQuery{}}
	for _, q := range r.s.queries[r.graphID].List() {
		if r.s.mayInvoke(r.actor, r.graphID, q.Name) {
			out.Queries = append(out.Queries, q.StoredQuery)
		}
	}
	return out, nil
}

// opInvoke runs stored query name. conditional: the if-graph-commit
// route or argument, with the head it must find (ifCommit).
func (r *request) opInvoke(name string, in api.InvokeRequest, conditional bool, ifCommit string) (any, error) {
	q, err := r.storedQuery(name)
	if err != nil {
		return nil, err
	}
	kind := "read"
	if q.Mutation {
		kind = "mutation"
	}
	if in.ExpectMutation != nil && *in.ExpectMutation != q.Mutation {
		return nil, badRequest("stored query %s is a %s, not what expect_mutation says; nothing was run", name, kind)
	}
	start := time.Now()
	defer func() {
		r.s.log.Info("stored query invoked", "graph", r.graphID, "actor", actorOrAnon(r.actor), "query", name, "kind", kind,
			"duration_ms", float64(time.Since(start).Microseconds())/1000)
	}()
	if !q.Mutation {
		if conditional {
			return nil, badRequest("stored query %s is a read; only a mutation runs conditionally", name)
		}
		return r.opQuery(api.QueryRequest{Query: q.source, Name: q.Name, Params: in.Params, Branch: in.Branch, Snapshot: in.Snapshot})
	}
	if in.Snapshot != "" {
		return nil, badRequest("stored query %s is a mutation: it writes a branch head, not a snapshot; drop snapshot", name)
	}
	return r.opMutate(api.MutateRequest{Query: q.source, Name: q.Name, Params: in.Params, Branch: in.Branch}, ifCommit)
}

func handleListQueries(r *request) (int, any, error) {
	out, err := r.opListQueries()
	return 200, out, err
}

// decodeInvoke reads an invoke body: optional (no body is {}).
func (r *request) decodeInvoke() (api.InvokeRequest, error) {
	var in api.InvokeRequest
	if r.ContentLength == 0 {
		return in, nil
	}
	// An empty body is allowed however it is sent (chunked, without a
	// Content-Length, too).
	b, err := readBody(r.Body)
	if err != nil || len(b) == 0 {
		return in, err
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	err = r.decode(&in)
	return in, err
}

func handleInvokeQuery(r *request) (int, any, error) {
	if len(r.Header.Values(api.HeaderIfGraphCommit)) > 0 {
		return 0, nil, badRequest("%s goes with POST /graphs/%s/queries/NAME/if-graph-commit; this route never writes conditionally", api.HeaderIfGraphCommit, r.graphID)
	}
	in, err := r.decodeInvoke()
	if err != nil {
		return 0, nil, err
	}
	out, err := r.opInvoke(r.PathValue("name"), in, false, "")
	return 200, out, err
}

func handleInvokeQueryIf(r *request) (int, any, error) {
	ifCommit, err := r.ifGraphCommit()
	if err != nil {
		return 0, nil, err
	}
	in, err := r.decodeInvoke()
	if err != nil {
		return 0, nil, err
	}
	out, err := r.opInvoke(r.PathValue("name"), in, true, ifCommit)
	return 200, out, err
}

// storedTools adds a graph's stored queries to its MCP server: one tool
// per query (fewer than perQueryTools), else stored_query_list and
// stored_query_run. It returns the query each tool runs ("" for the
// list), for tools/list's filter.
func (s *Server) storedTools(ms *mcp.Server, graphID string) map[string]string {
	qs := s.queries[graphID]
	tools := map[string]string{}
	if qs.Len() == 0 {
		return tools
	}
	if qs.Len() >= perQueryTools {
		list := tool(storedListTool, ActionRead, readSlot, "List the stored queries of this graph you may run: name, description, parameters (with their JSON Schema)", readOnly(),
			func(r *request, _ NoInput) (any, error) { return r.opListQueries() })
		list.add(s, ms, list.tool)
		run := tool(storedRunTool, ActionRead, perCall, "Run a stored query by name (see stored_query_list) with its params; reads answer rows, mutations a commit", destructive(true),
			func(r *request, in api.StoredRunInput) (any, error) {
				return r.opInvoke(in.Name, api.InvokeRequest{Params: in.Params, Branch: in.Branch, Snapshot: in.Snapshot}, in.IfGraphCommit != "", strings.TrimSpace(in.IfGraphCommit))
			})
		run.add(s, ms, run.tool)
		tools[storedListTool], tools[storedRunTool] = "", ""
		return tools
	}
	for _, q := range qs.List() {
		s.addStoredTool(ms, q)
		tools[q.ToolName] = q.Name
	}
	return tools
}

// storedToolSchema is a stored query's tool input: its params (typed),
// the branch, and a snapshot (reads) or if_graph_commit (mutations).
func storedToolSchema(q *StoredQuery) map[string]any {
	props := map[string]any{
		"params": q.InputSchema,
		"branch": map[string]any{"type": "string", "description": "the branch (default main)"},
	}
	if q.Mutation {
		props["if_graph_commit"] = map[string]any{"type": "string", "description": "write only while the branch head is this commit id; a stale head fails with status 412"}
	} else {
		props["snapshot"] = map[string]any{"type": "string", "description": "a graph commit id to read instead of the branch head"}
	}
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if req, _ := q.InputSchema["required"].([]string); len(req) > 0 {
		s["required"] = []string{"params"}
	}
	return s
}

// storedArgs is a stored query tool's arguments.
type storedArgs struct {
	Params        map[string]any `json:"params"`
	Branch        string         `json:"branch"`
	Snapshot      string         `json:"snapshot"`
	IfGraphCommit string         `json:"if_graph_commit"`
}

func (s *Server) addStoredTool(ms *mcp.Server, q *StoredQuery) {
	desc := q.Description
	if desc == "" {
		desc = "Stored " + map[bool]string{false: "query", true: "mutation"}[q.Mutation] + " " + q.Name
	}
	if q.Instruction != "" {
		desc += "\n\n" + q.Instruction
	}
	ann := readOnly()
	if q.Mutation {
		ann = destructive(true)
	}
	t := &mcp.Tool{Name: q.ToolName, Description: desc, Annotations: ann, InputSchema: storedToolSchema(q)}
	name := q.Name
	ms.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		hr, _ := ctx.Value(requestKey{}).(*request)
		if hr == nil {
			return nil, errors.New("the tool call reached the server outside an HTTP request")
		}
		r := *hr
		r.Request = hr.Request.WithContext(ctx)
		out, f := s.runTool(&r, name, perCall, func() (any, error) {
			var in storedArgs
			if len(req.Params.Arguments) > 0 {
				// The routes' strict decoding: unknown, repeated or
				// mistyped members are refused in the user's terms.
				if err := decodeStrict(req.Params.Arguments, &in, "the arguments of "+name); err != nil {
					return nil, err
				}
			}
			if in.Snapshot != "" && q.Mutation || in.IfGraphCommit != "" && !q.Mutation {
				return nil, badRequest("the arguments of %s: a read takes snapshot, a mutation if_graph_commit", name)
			}
			return r.opInvoke(name, api.InvokeRequest{Params: in.Params, Branch: in.Branch, Snapshot: in.Snapshot}, in.IfGraphCommit != "", strings.TrimSpace(in.IfGraphCommit))
		})
		status := http.StatusOK
		if f != nil {
			status = f.Status
		}
		s.log.Info("mcp tool call", "tool", q.ToolName, "graph", r.graphID, "status", status, "actor", actorOrAnon(r.actor))
		return s.toolResult(&r, name, out, f)
	})
}

// toolVisible says whether tools/list shows a tool to the request's
// actor: a built-in tool when its action is permitted on the graph, a
// stored query's when the actor may invoke it (the list and run pair:
// when it may invoke any).
func (s *Server) toolVisible(hr *request, name string, actions map[string]Action, stored map[string]string) bool {
	if act, ok := actions[name]; ok {
		return s.allowed(hr.actor, hr.graphID, act)
	}
	q, ok := stored[name]
	if !ok {
		return false
	}
	if q != "" {
		return s.mayInvoke(hr.actor, hr.graphID, q)
	}
	return slices.ContainsFunc(s.queries[hr.graphID].List(), func(sq *StoredQuery) bool { return s.mayInvoke(hr.actor, hr.graphID, sq.Name) })
}
