package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/query"
	"github.com/omnigraph-go/omnigraph/lang/gq"
)

// bearer adds a bearer token to every request of the MCP client and
// counts the requests.
type bearer struct {
	token string
	n     int
}

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	b.n++
	return http.DefaultTransport.RoundTrip(r)
}

func mcpConnect(t *testing.T, base, token string) (*mcp.ClientSession, error) {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil)
	tr := &mcp.StreamableClientTransport{
		Endpoint:             base + "/graphs/default/mcp",
		HTTPClient:           &http.Client{Transport: &bearer{token: token}},
		DisableStandaloneSSE: true,
		MaxRetries:           -1,
	}
	cs, err := client.Connect(context.Background(), tr, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// structured decodes a tool result's structured content.
func structured(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	return m
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

// TestMCPEndToEnd drives the MCP endpoint with the SDK's own client over
// real HTTP: initialize, list tools (with typed input schemas), query and
// mutate with their data, a conflict and an outcome-unknown error result
// carrying the HTTP codes, and 401 without a token.
func TestMCPEndToEnd(t *testing.T) {
	g := testGraph(t)
	tokens, secrets := tokensFor(t, "alice")
	_, base := newTestServer(t, g, Config{Tokens: tokens, Version: "test"})

	// No token: the endpoint answers 401 before MCP, so initialize fails.
	if _, err := mcpConnect(t, base, ""); err == nil || !strings.Contains(err.Error(), "401") && !strings.Contains(err.Error(), "Unauthorized") {
		t.Fatalf("connect without a token: %v, want a 401", err)
	}
	st, m := (&client{t: t, base: base}).json("POST", "/graphs/default/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	mustStatus(t, "mcp without a token", st, 401, m)
	if m["code"] != "unauthorized" {
		t.Fatalf("401 body: %v", m)
	}

	cs, err := mcpConnect(t, base, secrets["alice"])
	if err != nil {
		t.Fatal(err)
	}
	if ir := cs.InitializeResult(); ir.ServerInfo.Name != "omnigraph" || ir.Capabilities.Tools == nil {
		t.Fatalf("initialize: %+v", ir)
	}
	lt, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var querySchema map[string]any
	for _, tl := range lt.Tools {
		names = append(names, tl.Name)
		if tl.Name == "graph_query" {
			b, _ := json.Marshal(tl.InputSchema)
			json.Unmarshal(b, &querySchema)
		}
	}
	if !slices.Equal(names, MCPTools()) || len(names) != 16 {
		t.Fatalf("tools/list: %v, want %v", names, MCPTools())
	}
	props, _ := querySchema["properties"].(map[string]any)
	if props["query"] == nil || props["branch"] == nil || fmt.Sprint(querySchema["required"]) != "[query]" {
		t.Fatalf("graph_query input schema: %v", querySchema)
	}

	// Load, mutate and query: the data round-trips; the commits record
	// alice.
	res := callTool(t, cs, "graph_load", map[string]any{"data": `{"type":"Person","data":{"name":"ada","age":36}}` + "\n", "mode": "append"})
	if res.IsError {
		t.Fatalf("graph_load: %v", structured(t, res))
	}
	if lo := structured(t, res); lo["nodes"] != 1.0 || lo["actor_id"] != "alice" {
		t.Fatalf("graph_load: %v", lo)
	}
	res = callTool(t, cs, "graph_mutate", map[string]any{"query": `mutation m($n: String, $a: I32) { insert Person { name: $n, age: $a } }`, "params": map[string]any{"n": "bo", "a": 20}})
	if res.IsError {
		t.Fatalf("graph_mutate: %v", structured(t, res))
	}
	mo := structured(t, res)
	commit, _ := mo["commit"].(map[string]any)
	if mo["affected_nodes"] != 1.0 || commit["actor_id"] != "alice" {
		t.Fatalf("graph_mutate: %v", mo)
	}
	head := commit["graph_commit_id"].(string)
	res = callTool(t, cs, "graph_query", map[string]any{"query": `query q() { match { $p: Person } return { $p.name, $p.age } order { $p.name asc } }`})
	if res.IsError {
		t.Fatalf("graph_query: %v", structured(t, res))
	}
	qo := structured(t, res)
	if qo["row_count"] != 2.0 || fmt.Sprint(qo["rows"]) != "[map[p.age:36 p.name:ada] map[p.age:20 p.name:bo]]" || qo["graph_commit_id"] != head {
		t.Fatalf("graph_query: %v", qo)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || !strings.Contains(tc.Text, `"ada"`) {
		t.Fatalf("graph_query text content: %v", res.Content)
	}
	// The engine sees exactly the committed rows.
	if cs, err := g.Commits(context.Background(), "main", 0); err != nil || len(cs) != 3 || cs[0].ID != head {
		t.Fatalf("commits: %v, %v", cs, err)
	}

	// Error results carry the HTTP status and envelope: a strict insert
	// of an existing id is 409 key_conflict; a stale head 412; a bad
	// query 400; an unknown branch 404.
	res = callTool(t, cs, "graph_load", map[string]any{"records": []any{map[string]any{"type": "Person", "data": map[string]any{"name": "ada"}}}, "mode": "append"})
	te := structured(t, res)
	if !res.IsError || te["status"] != 409.0 || te["code"] != "conflict" || te["key_conflict"].(map[string]any)["entity_id"] != "ada" {
		t.Fatalf("key conflict result: %v", te)
	}
	res = callTool(t, cs, "graph_mutate", map[string]any{"query": `mutation m() { insert Person { name: "cy" } }`, "if_graph_commit": "01KA3Q8J5YV9H0M3WQ8X2C4T7B"})
	if te := structured(t, res); !res.IsError || te["status"] != 412.0 || te["precondition_failure"].(map[string]any)["actual"] != head {
		t.Fatalf("stale head result: %v", te)
	}
	res = callTool(t, cs, "graph_query", map[string]any{"query": `query q( {`})
	if te := structured(t, res); !res.IsError || te["status"] != 400.0 || te["code"] != "bad_request" {
		t.Fatalf("bad query result: %v", te)
	}
	res = callTool(t, cs, "schema_get", map[string]any{"branch": "nope"})
	if te := structured(t, res); !res.IsError || te["status"] != 404.0 {
		t.Fatalf("unknown branch result: %v", te)
	}

	// Branches, merge, commits, snapshot and schema through their tools.
	if res = callTool(t, cs, "branch_create", map[string]any{"name": "topic"}); res.IsError {
		t.Fatalf("branch_create: %v", structured(t, res))
	}
	if res = callTool(t, cs, "graph_mutate", map[string]any{"query": `mutation m() { insert Person { name: "dee" } }`, "branch": "topic"}); res.IsError {
		t.Fatalf("mutate topic: %v", structured(t, res))
	}
	if bl := structured(t, callTool(t, cs, "branch_list", nil)); fmt.Sprint(bl["branches"]) != "[main topic]" {
		t.Fatalf("branch_list: %v", bl)
	}
	if mg := structured(t, callTool(t, cs, "branch_merge", map[string]any{"source": "topic"})); mg["outcome"] != "fast_forward" && mg["outcome"] != "merged" {
		t.Fatalf("branch_merge: %v", mg)
	}
	if res = callTool(t, cs, "branch_delete", map[string]any{"name": "topic"}); res.IsError {
		t.Fatalf("branch_delete: %v", structured(t, res))
	}
	cl := structured(t, callTool(t, cs, "commit_list", map[string]any{"limit": 1}))
	last := cl["commits"].([]any)[0].(map[string]any)["graph_commit_id"].(string)
	if cg := structured(t, callTool(t, cs, "commit_get", map[string]any{"commit_id": last})); cg["graph_commit_id"] != last {
		t.Fatalf("commit_get: %v", cg)
	}
	ch := structured(t, callTool(t, cs, "commit_changes", map[string]any{"commit_id": head}))
	if chs, _ := ch["changes"].([]any); len(chs) != 1 || chs[0].(map[string]any)["id"] != "bo" || chs[0].(map[string]any)["op"] != "insert" {
		t.Fatalf("commit_changes: %v", ch)
	}
	sn := structured(t, callTool(t, cs, "graph_snapshot", nil))
	if sn["graph_commit_id"] != last || sn["datasets"].([]any)[0].(map[string]any)["entity_count"] != 3.0 {
		t.Fatalf("graph_snapshot: %v", sn)
	}
	if sc := structured(t, callTool(t, cs, "schema_get", nil)); !strings.Contains(fmt.Sprint(sc["schema_source"]), "node Person") {
		t.Fatalf("schema_get: %v", sc)
	}

	// query_lint answers gq.Lint's verdict (what `omnigraph lint` prints):
	// an error fails ok, a warning alone does not; nothing runs.
	cat, err := g.Schema(context.Background(), "main")
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{
		`query q() { match { $p: Person } return { $p.name } }`,
		`query q() { match { $p: Person } return { $p.nope } }`,
		`query q( {`,
		`mutation m() { insert Person { name: "zed" } }`,
	} {
		rep := gq.Lint(src, cat)
		lo := structured(t, callTool(t, cs, "query_lint", map[string]any{"query": src}))
		errs, _ := lo["errors"].([]any)
		if lo["ok"] != (rep.Errors == 0) || len(errs) != rep.Errors {
			t.Fatalf("query_lint %q: %v; gq.Lint found %d errors: %+v", src, lo, rep.Errors, rep.Findings)
		}
		for i, e := range errs {
			var want []string
			for _, f := range rep.Findings {
				if f.Severity == gq.SeverityError {
					want = append(want, f.Code)
				}
			}
			if e.(map[string]any)["lint_code"] != want[i] {
				t.Fatalf("query_lint %q: error %d has lint code %v, gq.Lint %v", src, i, e, want)
			}
		}
	}
	if cs, err := g.Commits(context.Background(), "main", 0); err != nil || cs[0].ID != last {
		t.Fatalf("query_lint ran a mutation: head %v, %v", cs, err)
	}

	// Typed input: a missing required argument is refused by the schema.
	res = callTool(t, cs, "graph_query", map[string]any{"branch": "main"})
	if !res.IsError {
		t.Fatalf("graph_query without query: %+v", res)
	}
}

// TestMCPOutcomeUnknown: a write whose publication answer is lost is an
// error result with status 500 and outcome_unknown, exactly as on HTTP.
func TestMCPOutcomeUnknown(t *testing.T) {
	g := testGraph(t)
	_, base := newTestServer(t, g, Config{})
	clear := graph.Failpoints.Set(g.ID(), graph.FailpointPostPhaseA, func() error {
		return fmt.Errorf("publish: %w", backend.ErrUnknown)
	})
	defer clear()
	cs, err := mcpConnect(t, base, "")
	if err != nil {
		t.Fatal(err)
	}
	res := callTool(t, cs, "graph_mutate", map[string]any{"query": `mutation m() { insert Person { name: "x" } }`})
	te := structured(t, res)
	want := MapError(fmt.Errorf("publish: %w", backend.ErrUnknown), "default")
	if !res.IsError || te["status"] != 500.0 || te["code"] != "internal" || te["outcome_unknown"] == nil || te["failure_class"] != want.Body.Class {
		t.Fatalf("outcome unknown result: %v", te)
	}
}

// TestMCPReadOnly: on a replica the write tools fail with 403 and the
// read tools serve.
func TestMCPReadOnly(t *testing.T) {
	g := testGraph(t)
	_, base := newTestServer(t, g, Config{ReadOnly: true})
	cs, err := mcpConnect(t, base, "")
	if err != nil {
		t.Fatal(err)
	}
	res := callTool(t, cs, "branch_create", map[string]any{"name": "b"})
	if te := structured(t, res); !res.IsError || te["status"] != 403.0 || te["code"] != "forbidden" {
		t.Fatalf("replica branch_create: %v", te)
	}
	if res := callTool(t, cs, "branch_list", nil); res.IsError {
		t.Fatalf("replica branch_list: %v", structured(t, res))
	}
	st, m := (&client{t: t, base: base}).json("GET", "/graphs/default/mcp", "")
	mustStatus(t, "GET mcp", st, 405, m)
}

// TestMCPToolPanic: a panic inside a tool's operation is contained as on
// a route: the failure is status 500 outcome_unknown (class panic),
// admission closes and OnFatal is told, so the process stops (exit 2)
// instead of dying in the SDK's goroutine.
func TestMCPToolPanic(t *testing.T) {
	g := testGraph(t)
	var reasons []string
	s, base := newTestServer(t, g, Config{OnFatal: func(r string) { reasons = append(reasons, r) }})
	out, f := s.runTool(&request{s: s, graphID: "default"}, "graph_mutate", writeSlot, func() (any, error) { panic("boom") })
	if out != nil || f == nil || f.Status != 500 || f.Body.Class != "panic" || f.Body.OutcomeUnknown == nil {
		t.Fatalf("panicking tool: %v %+v", out, f)
	}
	if te := structured(t, toolErrorResult(f)); te["status"] != 500.0 || te["code"] != "internal" {
		t.Fatalf("its result: %v", te)
	}
	if !s.adm.isClosed() || fmt.Sprint(reasons) != "[panic]" {
		t.Fatalf("after a tool panic: closed %v, fatal %v", s.adm.isClosed(), reasons)
	}
	st, m := (&client{t: t, base: base}).json("GET", "/graphs/default/branches", "")
	mustStatus(t, "after the panic", st, 503, m)
}

// TestMCPRawJSONRPC: the endpoint answers a bare JSON-RPC tools/call
// (no initialize, no session: stateless) with one JSON body, as the
// curl example of docs/server.md sends it.
func TestMCPRawJSONRPC(t *testing.T) {
	g := testGraph(t)
	tokens, secrets := tokensFor(t, "alice")
	_, base := newTestServer(t, g, Config{Tokens: tokens})
	c := &client{t: t, base: base, token: secrets["alice"]}
	st, m, h := c.do("POST", "/graphs/default/mcp", "application/json",
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"branch_list","arguments":{}}}`,
		"Accept", "application/json, text/event-stream")
	mustStatus(t, "raw tools/call", st, 200, m)
	res, _ := m["result"].(map[string]any)
	if h.Get("Content-Type") != "application/json" || h.Get("Mcp-Session-Id") != "" || res == nil ||
		fmt.Sprint(res["structuredContent"]) != "map[branches:[main] heads:[map[graph_manifest_version:1 incarnation:1 name:main]]]" || res["isError"] == true {
		t.Fatalf("raw tools/call: %v %v", h, m)
	}
}

// TestMCPToolsListByPolicy: tools/list shows each actor only the tools
// whose action the policy permits it on the graph (the resource of the
// listing decision), with the SDK's own client and two actors: alice,
// allowed everything, sees every tool; rita, allowed read only, sees the
// read tools and none that writes. A grant on one branch only does not
// list the tool, but the call is still decided per call as on its route:
// bob, who may change branch topic and read, does not see graph_mutate,
// calls it on topic (it lands) and is refused (403) on main.
func TestMCPToolsListByPolicy(t *testing.T) {
	g := testGraph(t)
	if _, err := g.CreateBranch(context.Background(), "topic", "main"); err != nil {
		t.Fatal(err)
	}
	tokens, secrets := tokensFor(t, "alice", "rita", "bob")
	pol, err := ParsePolicy("test", []byte(`
@id("alice-all") permit (principal == Omnigraph::Actor::"alice", action, resource);
@id("readers") permit (principal, action == Omnigraph::Action::"read", resource in Omnigraph::Graph::"default");
@id("bob-topic") permit (principal == Omnigraph::Actor::"bob", action == Omnigraph::Action::"change", resource == Omnigraph::Branch::"default/topic");
`))
	if err != nil {
		t.Fatal(err)
	}
	_, base := newTestServer(t, g, Config{Tokens: tokens, Policy: pol})
	list := func(actor string) ([]string, *mcp.ClientSession) {
		t.Helper()
		cs, err := mcpConnect(t, base, secrets[actor])
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatalf("%s tools/list: %v", actor, err)
		}
		var names []string
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
			if tl.InputSchema == nil {
				t.Errorf("%s: tool %s listed without its input schema", actor, tl.Name)
			}
		}
		slices.Sort(names)
		return names, cs
	}
	reads := []string{"blob_read", "blob_stat", "branch_list", "changes_poll", "commit_changes", "commit_get", "commit_list", "graph_query", "graph_snapshot", "query_lint", "schema_get"}
	if got, _ := list("alice"); !slices.Equal(got, MCPTools()) {
		t.Fatalf("alice sees %v, want every tool %v", got, MCPTools())
	}
	if got, _ := list("rita"); !slices.Equal(got, reads) {
		t.Fatalf("rita sees %v, want the read tools %v", got, reads)
	}
	got, bob := list("bob")
	if !slices.Equal(got, reads) {
		t.Fatalf("bob sees %v, want the read tools %v (a branch-only grant lists nothing more)", got, reads)
	}
	res := callTool(t, bob, "graph_mutate", map[string]any{"query": `mutation m() { insert Person { name: "bo" } }`, "branch": "topic"})
	if res.IsError {
		t.Fatalf("bob's graph_mutate on topic: %v", structured(t, res))
	}
	res = callTool(t, bob, "graph_mutate", map[string]any{"query": `mutation m() { insert Person { name: "bo" } }`})
	if te := structured(t, res); !res.IsError || te["status"] != 403.0 || te["code"] != "forbidden" {
		t.Fatalf("bob's graph_mutate on main: %v", te)
	}
	for branch, want := range map[string]string{"topic": "[[bo]]", "main": "[]"} {
		r, err := query.Head(context.Background(), g, branch, `query q() { match { $p: Person } return { $p.name } }`, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(r.Rows); got != want {
			t.Fatalf("people on %s: %s, want %s", branch, got, want)
		}
	}
}
