package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/graph/merge"
)

// MCP is served at POST /graphs/{graph_id}/mcp: the Streamable HTTP
// transport of the official SDK, stateless (no session id, every POST
// stands alone) with JSON responses (no SSE). The route runs behind the
// same wrap as every other route (401 before MCP, graph resolution, body
// limit, request log); each tool runs the same operation as its HTTP
// route, so the policy (403), admission (429) and MapError apply
// unchanged, and an error result carries the HTTP envelope plus its
// status.

// Inputs of the tools that have no HTTP body.
type (
	// BranchInput names a branch (default main).
	BranchInput struct {
		Branch string `json:"branch,omitempty" jsonschema:"the branch (default main)"`
	}
	// NoInput is a tool without arguments.
	NoInput struct{}
	// BranchNameInput names one branch.
	BranchNameInput struct {
		Name string `json:"name" jsonschema:"the branch"`
	}
	// CommitsInput lists commits.
	CommitsInput struct {
		Branch string `json:"branch,omitempty" jsonschema:"the branch (default main)"`
		Limit  int    `json:"limit,omitempty" jsonschema:"at most this many commits, newest first (0: all)"`
		// FirstParent lists the branch's own line only.
		FirstParent bool `json:"first_parent,omitempty" jsonschema:"follow first parents only: the branch's own commits, not those merges brought in"`
	}
	// CommitInput names one commit.
	CommitInput struct {
		CommitID string `json:"commit_id" jsonschema:"the graph commit id"`
	}
	// ChangesInput asks for a commit's changes.
	ChangesInput struct {
		CommitID string `json:"commit_id" jsonschema:"the graph commit id"`
		Type     string `json:"type,omitempty" jsonschema:"only changes of this node or edge type"`
		Op       string `json:"op,omitempty" jsonschema:"only insert, update or delete"`
		Limit    int    `json:"limit,omitempty" jsonschema:"at most this many changes (0: all)"`
	}
	// MutateInput is MutateRequest plus the optional head precondition of
	// mutate/if-graph-commit.
	MutateInput struct {
		api.MutateRequest
		IfGraphCommit string `json:"if_graph_commit,omitempty" jsonschema:"write only while the branch head is this commit id (as the Omnigraph-If-Graph-Commit header); a stale head fails with status 412"`
	}
)

// ToolError is the structured content of an error result: the HTTP
// status the same failure gets on its route and the error envelope.
type ToolError struct {
	Status int `json:"status"`
	api.ErrorOutput
	RetryAfter int `json:"retry_after_seconds,omitempty"`
}

type requestKey struct{}

// MCPTools lists the tools' names in name order, as tools/list shows
// them.
func MCPTools() []string {
	var names []string
	for _, t := range mcpTools() {
		names = append(names, t.tool.Name)
	}
	slices.Sort(names)
	return names
}

type mcpTool struct {
	tool *mcp.Tool
	// class is what the dispatcher applies to every call of the tool, as
	// wrap applies a route's table entry: the same as the tool's route.
	class toolClass
	// action is the policy action of the tool's operation: tools/list
	// shows the tool to an actor only when the policy permits it on the
	// graph (see listFilter).
	action Action
	// in is the Go type of the tool's arguments (its input schema).
	in reflect.Type
	// example is one valid arguments object (JSON), shown at the end of
	// the description (toolExamples).
	example string
	add     func(*Server, *mcp.Server, *mcp.Tool)
}

// toolClass is the admission and budget of a tool (its answer is capped
// by Limits.AnswerBytes, as a JSON route's).
type toolClass struct {
	admission api.Admission
	budget    bool
}

var (
	readSlot     = toolClass{admission: api.AdmitRead}
	budgetedRead = toolClass{admission: api.AdmitRead, budget: true}
	writeSlot    = toolClass{admission: api.AdmitWrite}
	// perCall: the operation takes what it runs needs (a stored query).
	perCall = toolClass{admission: api.AdmitPerCall}
)

func readOnly() *mcp.ToolAnnotations { return &mcp.ToolAnnotations{ReadOnlyHint: true} }

func destructive(d bool) *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{DestructiveHint: &d}
}

func mcpTools() []mcpTool {
	ts := builtinTools()
	ex := toolExamples()
	for i := range ts {
		ts[i].example = ex[ts[i].tool.Name]
		ts[i].tool.Description += "\n\nExample arguments: " + ts[i].example
	}
	return ts
}

// toolExamples is one arguments object per built-in tool; the .gq of the
// query tools is generic here (the initialize instructions and the guide
// resource carry examples for the graph's own types).
func toolExamples() map[string]string {
	return map[string]string{
		"graph_query":    `{"query":"query q($k: String) { match { $n: Person { name: $k } } return { $n } }","params":{"k":"ada"},"branch":"main"}`,
		"graph_mutate":   `{"query":"mutation m($k: String) { insert Person { name: $k } }","params":{"k":"ada"}}`,
		"graph_load":     `{"data":"{\"type\":\"Person\",\"data\":{\"name\":\"ada\"}}\n","mode":"merge"}`,
		"graph_snapshot": `{"branch":"main"}`,
		"schema_get":     `{"branch":"main"}`,
		"branch_list":    `{}`,
		"branch_create":  `{"name":"topic","from":"main"}`,
		"branch_delete":  `{"name":"topic"}`,
		"branch_merge":   `{"source":"topic","target":"main"}`,
		"commit_list":    `{"branch":"main","limit":10}`,
		"commit_get":     `{"commit_id":"01J0000000000000000000000A"}`,
		"blob_stat":      `{"entity":"node","type":"Doc","id":"readme","property":"body"}`,
		"blob_read":      `{"entity":"node","type":"Doc","id":"readme","property":"body","offset":0,"length":65536}`,
		"commit_changes": `{"commit_id":"01J0000000000000000000000A","op":"update","limit":100}`,
		"changes_poll":   `{"branch":"main","start":"beginning","limit":100}`,
		"query_lint":     `{"query":"query q() { match { $n: Person } return { $n } }"}`,
	}
}

func builtinTools() []mcpTool {
	return []mcpTool{
		tool("graph_query", ActionRead, budgetedRead, "Run a read query (.gq source) on one snapshot of a branch or on a commit (snapshot); rows come back as JSON objects, with graph_commit_id (the head read)", readOnly(),
			func(r *request, in api.QueryRequest) (any, error) { return r.opQuery(in) }),
		tool("graph_mutate", ActionChange, writeSlot, "Run a mutation (.gq source) as one commit on a branch; with if_graph_commit it writes only while the branch head is that commit", destructive(true),
			func(r *request, in MutateInput) (any, error) {
				return r.opMutate(in.MutateRequest, strings.TrimSpace(in.IfGraphCommit))
			}),
		tool("graph_load", ActionLoad, writeSlot, "Load a graph batch as one commit: NDJSON text in data (lines {\"type\":T,\"data\":{...}} or {\"edge\":E,\"from\":src,\"to\":dst,\"data\":{...}}) or the same objects in records; mode merge (upsert, default), append (strict insert) or overwrite", destructive(true),
			func(r *request, in api.LoadRequest) (any, error) { return r.opLoadJSON(in) }),
		tool("graph_snapshot", ActionRead, readSlot, "A branch head: manifest version, commit and per-type table versions and row counts", readOnly(),
			func(r *request, in BranchInput) (any, error) { return r.opSnapshot(in.Branch) }),
		tool("schema_get", ActionRead, readSlot, "The accepted .pg schema source of a branch", readOnly(),
			func(r *request, in BranchInput) (any, error) { return r.opSchema(in.Branch, "") }),
		tool("branch_list", ActionRead, readSlot, "List the live branches", readOnly(),
			func(r *request, _ NoInput) (any, error) { return r.opBranches() }),
		tool("branch_create", ActionBranchCreate, writeSlot, "Create a branch from the head of another (default main)", destructive(false),
			func(r *request, in api.BranchCreateRequest) (any, error) { return r.opBranchCreate(in) }),
		tool("branch_delete", ActionBranchDelete, writeSlot, "Delete a branch", destructive(true),
			func(r *request, in BranchNameInput) (any, error) { return r.opBranchDelete(in.Name) }),
		tool("branch_merge", ActionBranchMerge, writeSlot, "Merge a branch into another (default main); conflicts fail with status 409 and merge_conflicts", destructive(true),
			func(r *request, in api.MergeRequest) (any, error) { return r.opMerge(in) }),
		tool("commit_list", ActionRead, readSlot, "The commits reachable from a branch head, newest first", readOnly(),
			func(r *request, in CommitsInput) (any, error) {
				return r.opCommits(in.Branch, in.Limit, in.FirstParent)
			}),
		tool("commit_get", ActionRead, readSlot, "One commit", readOnly(),
			func(r *request, in CommitInput) (any, error) { return r.opCommit(in.CommitID) }),
		tool("blob_stat", ActionRead, readSlot, "Describe one Blob value (entity node or edge, type, id, property) at a branch head or a commit: managed (size, sha256, etag) or external (uri)", readOnly(),
			func(r *request, in BlobStatInput) (any, error) { return r.opBlobStat(in) }),
		tool("blob_read", ActionRead, readSlot, "Read a byte range (at most 1 MiB per call, default from 0) of one Blob value, base64-encoded in data_base64; an external value returns its uri and no data", readOnly(),
			func(r *request, in BlobReadInput) (any, error) { return r.opBlobRead(in) }),
		tool("commit_changes", ActionRead, budgetedRead, "The entity changes of a commit against its first parent (inserted, updated, deleted rows with before and after)", readOnly(),
			func(r *request, in ChangesInput) (any, error) {
				if in.Limit < 0 {
					return nil, badRequest("limit must be 0 (all) or a positive whole number")
				}
				return r.opChanges(in.CommitID, merge.Filter{Type: in.Type, Op: merge.Op(in.Op), Limit: in.Limit})
			}),
		tool("changes_poll", ActionRead, readSlot, "Poll the change feed of a branch: the entity changes of each commit after the cursor, in first-parent order. Start without a cursor (start now, beginning or after:COMMIT_ID), store the cursor of each terminal page and pass it next time; a page with next_page_token continues with page_token. Status 410 (change_feed_gap): history was cleaned up, take a baseline", readOnly(),
			func(r *request, in api.PollRequest) (any, error) { return r.opPollChanges(in) }),
		tool("query_lint", ActionRead, budgetedRead, "Lint .gq source against the schema of a branch (or a commit) without running it: ok is false only on errors; errors and warnings carry the lint code (Q000, T2, L201, ...) `omnigraph lint` prints, line and column, and each declared query its parameters and plan", readOnly(),
			func(r *request, in api.CheckRequest) (any, error) { return r.opCheck(in) }),
	}
}

// tool binds an operation to a tool with the input schema inferred from
// In (what tools/list shows). The arguments are decoded by the one
// decoding layer of every route (decodeStrict, with json.Number, so
// integer parameters keep their precision): an unknown member or a value
// of the wrong JSON type is an error result with status 400 and the
// envelope, as on the tool's route, never the SDK's own validation text.
func tool[In any](name string, act Action, class toolClass, desc string, ann *mcp.ToolAnnotations, op func(*request, In) (any, error)) mcpTool {
	t := &mcp.Tool{Name: name, Description: desc, Annotations: ann, InputSchema: inputSchema[In]()}
	return mcpTool{tool: t, action: act, class: class, in: reflect.TypeFor[In](), add: func(s *Server, ms *mcp.Server, t *mcp.Tool) {
		ms.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			hr, _ := ctx.Value(requestKey{}).(*request)
			if hr == nil {
				return nil, errors.New("the tool call reached the server outside an HTTP request")
			}
			r := *hr
			r.Request = hr.Request.WithContext(ctx)
			start := time.Now()
			syntax := false
			out, f := s.runTool(&r, name, class, func() (any, error) {
				var in In
				args := req.Params.Arguments
				if len(args) == 0 || string(args) == "null" {
					args = json.RawMessage("{}")
				}
				if err := decodeStrict(args, &in, "the arguments of "+name); err != nil {
					return nil, err
				}
				out, err := op(&r, in)
				syntax = isSyntaxError(err)
				return out, err
			})
			if syntax {
				f = withGuideHint(f, r.graphID)
			}
			status := http.StatusOK
			if f != nil {
				status = f.Status
			}
			attrs := []any{"tool", name, "graph", r.graphID, "status", status, "actor", actorOrAnon(r.actor),
				"duration_ms", float64(time.Since(start).Microseconds()) / 1000}
			if f != nil && f.Body.Class != "" {
				attrs = append(attrs, "failure_class", f.Body.Class)
			}
			s.log.Info("mcp tool call", attrs...)
			// The SDK writes the answer once this returns: bound it as any
			// non-streaming answer.
			s.answering(hr.w)
			return s.toolResult(&r, name, out, f)
		})
	}}
}

// inputSchema is the tool's input schema inferred from In, with every
// type list of a nullable member (["null","array"] for a slice, the same
// for a map) narrowed to its one non-null type: portable MCP clients warn
// on type lists, and no tool argument means anything by null.
func inputSchema[In any]() *jsonschema.Schema {
	s, err := jsonschema.For[In](nil)
	if err != nil {
		panic(fmt.Sprintf("server: the input schema of %T: %v", *new(In), err))
	}
	var narrow func(*jsonschema.Schema)
	narrow = func(s *jsonschema.Schema) {
		if s == nil {
			return
		}
		if len(s.Types) == 2 && slices.Contains(s.Types, "null") {
			for _, t := range s.Types {
				if t != "null" {
					s.Type, s.Types = t, nil
				}
			}
		}
		for _, p := range s.Properties {
			narrow(p)
		}
		narrow(s.Items)
		narrow(s.AdditionalProperties)
	}
	narrow(s)
	return s
}

// runTool runs one tool's operation with the same panic containment as
// an HTTP route: a panic closes admission, stops the server and answers
// outcome unknown.
//
// It applies the tool's class first, as wrap applies a route's table
// entry: the read slot (held until the answer is sent) and the time
// budget.
func (s *Server) runTool(r *request, name string, class toolClass, run func() (any, error)) (out any, f *Failure) {
	defer func() {
		if p := recover(); p != nil {
			f = s.panicked(name, r.graphID)
		}
	}()
	if class.admission == api.AdmitRead {
		if err := r.admitRead(); err != nil {
			return nil, MapError(err, r.graphID)
		}
	}
	var budget *routeBudget
	if class.budget {
		budget = s.routeBudget(r)
		defer budget.cancel()
	}
	out, err := run()
	if err != nil && budget != nil {
		err = budget.exceeded(err)
	}
	if err != nil {
		return nil, s.stopOn(r, err, MapError(err, r.graphID))
	}
	return out, nil
}

// toolResult is a tool call's answer: the error result of f, or out as
// structured content and the same JSON as text (for clients that read
// only content, as the SDK's typed tools do), within the answer cap.
func (s *Server) toolResult(r *request, name string, out any, f *Failure) (*mcp.CallToolResult, error) {
	if f != nil {
		return toolErrorResult(f), nil
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("encode the result of %s: %w", name, err)
	}
	if limit := s.cfg.Limits.AnswerBytes; !r.admitted && int64(len(b)) > limit {
		return toolErrorResult(answerTooLarge(limit, int64(len(b)))), nil
	}
	return &mcp.CallToolResult{StructuredContent: json.RawMessage(b), Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
}

func toolErrorResult(f *Failure) *mcp.CallToolResult {
	te := ToolError{Status: f.Status, ErrorOutput: f.Body, RetryAfter: f.RetryAfter}
	b, _ := json.Marshal(te)
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}
}

// newMCP builds the MCP handler of one graph: the built-in tools and the
// graph's stored queries (a tool finds its actor in the request it runs
// under).
func (s *Server) newMCP(graphID string) http.Handler {
	// The instructions are written per initialize, from main's schema
	// then (listFilter): a schema change shows in the next session.
	ms := mcp.NewServer(&mcp.Implementation{Name: "omnigraph", Version: s.cfg.Version}, &mcp.ServerOptions{
		Instructions: instructions(graphID, nil),
	})
	actions := map[string]Action{}
	for _, t := range mcpTools() {
		t.add(s, ms, t.tool)
		actions[t.tool.Name] = t.action
	}
	stored := s.storedTools(ms, graphID)
	for uri, act := range s.addResources(ms, graphID) {
		actions[uri] = act
	}
	ms.AddReceivingMiddleware(s.listFilter(actions, stored))
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ms }, &mcp.StreamableHTTPOptions{
		Stateless:    true,
		JSONResponse: true,
		Logger:       s.log,
		// The SDK's DNS-rebinding guard is off: the open-mode guard
		// (origin.go) decides for every route, this one included, so
		// one function gives the one verdict.
		DisableLocalhostProtection: true,
		// wrap already bounds the body.
		MaxRequestBodyBytes: -1,
	})
}

// listFilter writes the initialize instructions from main's schema
// (instructionsFor) and filters resources/list (read on the graph) and
// tools/list by the policy: an actor sees a tool only
// when the policy permits the tool's action with the graph itself as the
// resource (Omnigraph::Graph::"<id>", as for listing branches), so a grant
// on the whole graph lists the tool and a grant on some branches only does
// not. Listing is a view, not the gate: tools/call is decided per call as
// on the tool's route (a branch-only grant still calls the tool on its
// branches; a denied call is an error result with status 403).
func (s *Server) listFilter(actions map[string]Action, stored map[string]string) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if err != nil {
				return res, err
			}
			hr, _ := ctx.Value(requestKey{}).(*request)
			switch out := res.(type) {
			case *mcp.ListToolsResult:
				if hr == nil {
					return nil, errors.New("tools/list reached the server outside an HTTP request")
				}
				shown := make([]*mcp.Tool, 0, len(out.Tools))
				for _, t := range out.Tools {
					if s.toolVisible(hr, t.Name, actions, stored) {
						shown = append(shown, t)
					}
				}
				lr := *out
				lr.Tools = shown
				return &lr, nil
			case *mcp.ListResourcesResult:
				// A resource read is a read: listed as a reading tool is.
				if hr == nil {
					return nil, errors.New("resources/list reached the server outside an HTTP request")
				}
				shown := make([]*mcp.Resource, 0, len(out.Resources))
				for _, rs := range out.Resources {
					if act, ok := actions[rs.URI]; ok && s.allowed(hr.actor, hr.graphID, act) {
						shown = append(shown, rs)
					}
				}
				lr := *out
				lr.Resources = shown
				return &lr, nil
			case *mcp.InitializeResult:
				if hr == nil {
					return out, nil
				}
				ir := *out
				ir.Instructions = s.instructionsFor(hr)
				return &ir, nil
			}
			return res, err
		}
	}
}

// instructionsFor writes the initialize instructions from main's schema
// when the actor may read it (else the base text, which names the guide).
func (s *Server) instructionsFor(hr *request) string {
	r := *hr
	cat, err := r.mainCatalog()
	if err != nil {
		return instructions(r.graphID, nil)
	}
	return instructions(r.graphID, cat)
}

// handleMCP checks the message (one JSON-RPC 2.0 request or
// notification of a method the server answers: mcprpc.go) and hands it
// to the SDK; every refusal is a JSON-RPC error.
func handleMCP(r *request) (int, any, error) {
	body, id, refusal, err := readRPC(r.Body)
	if err != nil {
		return 0, nil, err
	}
	r.s.answering(r.w)
	if refusal != nil {
		writeRPCError(r.w, refusal)
		return 0, nil, nil
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	ctx := context.WithValue(r.Context(), requestKey{}, r)
	w := &rpcErrorWriter{ResponseWriter: r.w, id: id}
	r.s.mcp[r.graphID].ServeHTTP(w, r.Request.WithContext(ctx))
	w.finish()
	return 0, nil, nil
}

func actorOrAnon(a string) string {
	if a == "" {
		return "anonymous"
	}
	return a
}
