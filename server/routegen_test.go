package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/backend/counter"
	"github.com/omnigraph-go/omnigraph/backend/local"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/mutate"
)

// The tests in this file are generated from the route table (Routes) and
// the MCP tool list (mcpTools): each route and each tool has one valid
// example request below, and every test sends every example with one
// thing made hostile. A route or tool without an example fails them, so a
// new one cannot skip the checks.

// fixture is a served graph over a request-counting local store: main
// holds ann (commit first) and branch feature adds bob.
type fixture struct {
	g     *graph.Graph
	store *counter.Counter
	first string // a commit on main with a parent
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	base, err := local.New(filepath.Join(t.TempDir(), "g"))
	if err != nil {
		t.Fatal(err)
	}
	store := counter.New(base)
	g := testGraphOn(t, store)
	res, err := mutate.Query(ctx, g, `mutation m() { insert Person { name: "ann" } }`, "", mutate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.CreateBranch(ctx, "feature", "main"); err != nil {
		t.Fatal(err)
	}
	if _, err := mutate.Query(ctx, g, `mutation m() { insert Person { name: "bob" } }`, "", mutate.Options{Branch: "feature"}); err != nil {
		t.Fatal(err)
	}
	return &fixture{g: g, store: store, first: res.Commit.ID}
}

// exStored is the fixture's stored queries: a read and a mutation, so
// the stored-query routes and tools have examples of both.
const exStored = `query people() { match { $p: Person } return { $p.name } }
mutation add() { insert Person { name: "eve" } }`

// serve serves fx's graph as "default" with its stored queries.
func (fx *fixture) serve(t *testing.T, cfg Config) (*Server, string) {
	t.Helper()
	cat, err := fx.g.Schema(context.Background(), "main")
	if err != nil {
		t.Fatal(err)
	}
	set, problems := CompileQueries([]QueryFile{{Name: "stored.gq", Source: exStored}}, cat)
	if set == nil {
		t.Fatal(problems)
	}
	cfg.Graphs = []Graph{{ID: "default", G: fx.g, Queries: set}}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return s, hs.URL
}

// storedTools are the fixture's stored queries as MCP tools.
var storedTools = []string{"add", "people"}

// allTools is every MCP tool of the fixture: the built-in ones and the
// stored queries.
func allTools() []string { return append(MCPTools(), storedTools...) }

// state is what a refused request must leave as it was: every live
// branch and its head commit.
func (fx *fixture) state(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	bs, err := fx.g.Branches(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, b := range bs {
		s, err := fx.g.Snapshot(ctx, b.Name)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b.Name+"@"+s.CommitID())
	}
	return strings.Join(out, " ")
}

func (fx *fixture) head(t *testing.T, branch string) string {
	t.Helper()
	s, err := fx.g.Snapshot(context.Background(), branch)
	if err != nil {
		t.Fatal(err)
	}
	return s.CommitID()
}

// example is one valid request of a route.
type sample struct {
	path   string // with the path parameters filled in
	query  url.Values
	ctype  string
	body   string
	header http.Header
	// want is the status of the valid request.
	want int
}

const (
	exQuery  = `query q() { match { $p: Person } return { $p.name } }`
	exMutate = `mutation m() { insert Person { name: "cy" } }`
	exLine   = `{"type":"Person","data":{"name":"dee"}}`
)

func jsonBody(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// routeExample is the valid request of route rt on fx; ok is false for a
// route without one (a test failure).
func routeExample(t *testing.T, fx *fixture, rt Route) (sample, bool) {
	g := "/graphs/default"
	js := "application/json"
	switch rt.OperationID {
	case "health":
		return sample{path: "/healthz", want: 200}, true
	case "openapi":
		return sample{path: "/openapi.json", want: 200}, true
	case "listGraphs":
		return sample{path: "/graphs", want: 200}, true
	case "query":
		return sample{path: g + "/query", ctype: js, body: jsonBody(map[string]any{"query": exQuery, "branch": "main"}), want: 200}, true
	case "mutate":
		return sample{path: g + "/mutate", ctype: js, body: jsonBody(map[string]any{"query": exMutate, "branch": "main"}), want: 200}, true
	case "mutateIfGraphCommit":
		return sample{path: g + "/mutate/if-graph-commit", ctype: js, body: jsonBody(map[string]any{"query": exMutate, "branch": "main"}),
			header: http.Header{api.HeaderIfGraphCommit: {fx.head(t, "main")}}, want: 200}, true
	case "load":
		return sample{path: g + "/load", ctype: js, body: jsonBody(map[string]any{"data": exLine + "\n", "branch": "main", "mode": "merge"}), want: 200}, true
	case "export":
		return sample{path: g + "/export", query: url.Values{"branch": {"main"}, "type": {"Person"}}, want: 200}, true
	case "loadNdjson":
		return sample{path: g + "/load/ndjson", query: url.Values{"branch": {"main"}, "mode": {"merge"}}, ctype: "application/x-ndjson", body: exLine + "\n", want: 200}, true
	case "mcp":
		return sample{path: g + "/mcp", ctype: js, body: `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
			header: http.Header{"Accept": {"application/json, text/event-stream"}}, want: 200}, true
	case "getSnapshot":
		return sample{path: g + "/snapshot", query: url.Values{"branch": {"main"}}, want: 200}, true
	case "getSchema":
		return sample{path: g + "/schema", query: url.Values{"branch": {"main"}}, want: 200}, true
	case "listBranches":
		return sample{path: g + "/branches", want: 200}, true
	case "createBranch":
		return sample{path: g + "/branches", ctype: js, body: jsonBody(map[string]any{"name": "made", "from": "main"}), want: 200}, true
	case "mergeBranch":
		return sample{path: g + "/branches/merge", ctype: js, body: jsonBody(map[string]any{"source": "feature", "target": "main"}), want: 200}, true
	case "deleteBranch":
		return sample{path: g + "/branches/feature", want: 200}, true
	case "listCommits":
		return sample{path: g + "/commits", query: url.Values{"branch": {"main"}, "limit": {"5"}}, want: 200}, true
	case "getCommit":
		return sample{path: g + "/commits/" + fx.first, want: 200}, true
	case "getCommitChanges":
		return sample{path: g + "/commits/" + fx.first + "/changes", query: url.Values{"type": {"Person"}, "op": {"insert"}, "limit": {"5"}}, want: 200}, true
	case "getBlob", "headBlob":
		// Person.name is no Blob: the refusal still reads the schema.
		return sample{path: g + "/blob", query: url.Values{"entity": {"node"}, "type": {"Person"}, "property": {"name"}, "id": {"ann"}}, want: 400}, true
	case "getStatus":
		return sample{path: g + "/status", want: 200}, true
	case "getCatalog":
		return sample{path: g + "/catalog", query: url.Values{"branch": {"main"}}, want: 200}, true
	case "checkQuery":
		return sample{path: g + "/query/check", ctype: js, body: jsonBody(map[string]any{"query": exQuery, "branch": "main"}), want: 200}, true
	case "listBranchHeads":
		return sample{path: g + "/branches/heads", query: url.Values{"base": {"main"}, "max": {"10"}}, want: 200}, true
	case "previewMerge":
		return sample{path: g + "/branches/merge/preview", ctype: js, body: jsonBody(map[string]any{"source": "feature", "target": "main"}), want: 200}, true
	case "diffRefs":
		return sample{path: g + "/diff", ctype: js, body: jsonBody(map[string]any{"from": "main", "to": "feature"}), want: 200}, true
	case "pollChanges":
		return sample{path: g + "/changes", query: url.Values{"branch": {"main"}, "start": {"beginning"}, "limit": {"5"}}, want: 200}, true
	case "captureChangeBaseline":
		return sample{path: g + "/changes/baseline", ctype: js, body: jsonBody(map[string]any{"branch": "main", "types": []string{"Person"}}), want: 200}, true
	case "listQueries":
		return sample{path: g + "/queries", want: 200}, true
	case "invokeQuery":
		return sample{path: g + "/queries/people", ctype: js, body: jsonBody(map[string]any{"params": map[string]any{}, "branch": "main"}), want: 200}, true
	case "invokeQueryIfGraphCommit":
		return sample{path: g + "/queries/add/if-graph-commit", ctype: js, body: jsonBody(map[string]any{"params": map[string]any{}, "branch": "main"}),
			header: http.Header{api.HeaderIfGraphCommit: {fx.head(t, "main")}}, want: 200}, true
	}
	return sample{}, false
}

// toolExample is the valid arguments of an MCP tool on fx.
func toolExample(fx *fixture, name string) (map[string]any, bool) {
	switch name {
	case "graph_query":
		return map[string]any{"query": exQuery, "branch": "main"}, true
	case "graph_mutate":
		return map[string]any{"query": exMutate, "branch": "main"}, true
	case "graph_load":
		return map[string]any{"data": exLine + "\n", "branch": "main", "mode": "merge"}, true
	case "graph_snapshot", "schema_get":
		return map[string]any{"branch": "main"}, true
	case "branch_list":
		return map[string]any{}, true
	case "branch_create":
		return map[string]any{"name": "made", "from": "main"}, true
	case "branch_delete":
		return map[string]any{"name": "feature"}, true
	case "branch_merge":
		return map[string]any{"source": "feature", "target": "main"}, true
	case "commit_list":
		return map[string]any{"branch": "main", "limit": 5}, true
	case "commit_get":
		return map[string]any{"commit_id": fx.first}, true
	case "commit_changes":
		return map[string]any{"commit_id": fx.first, "type": "Person", "limit": 5}, true
	case "blob_read", "blob_stat":
		return map[string]any{"entity": "node", "type": "Person", "property": "name", "id": "ann"}, true
	case "query_lint":
		return map[string]any{"query": exQuery, "branch": "main"}, true
	case "changes_poll":
		return map[string]any{"branch": "main", "start": "beginning", "limit": 5}, true
	case "people":
		return map[string]any{"params": map[string]any{}, "branch": "main"}, true
	case "add":
		return map[string]any{"params": map[string]any{}, "branch": "main"}, true
	}
	return nil, false
}

// answer is one HTTP answer.
type answer struct {
	status int
	body   map[string]any
	raw    string
	header http.Header
}

// send sends ex (as changed by edit) to base with the client's token.
func send(t *testing.T, base, token, method string, ex sample, edit func(*http.Request)) answer {
	t.Helper()
	u := base + ex.path
	if len(ex.query) > 0 {
		u += "?" + ex.query.Encode()
	}
	req, err := http.NewRequest(method, u, strings.NewReader(ex.body))
	if err != nil {
		t.Fatal(err)
	}
	if ex.ctype != "" {
		req.Header.Set("Content-Type", ex.ctype)
	}
	for k, vs := range ex.header {
		req.Header[k] = slices.Clone(vs)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if edit != nil {
		edit(req)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, raw: string(b), header: resp.Header}
	_ = json.Unmarshal(b, &a.body)
	return a
}

// mcpCall is one raw tools/call; it returns the tool's structured result
// (or error envelope), whether it is an error, and the JSON-RPC error if
// the call failed at the protocol level.
func mcpCall(t *testing.T, base, token, name string, args any, edit func(*http.Request)) (res map[string]any, isError bool, rpcErr map[string]any, a answer) {
	t.Helper()
	body := jsonBody(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{"name": name, "arguments": args}})
	a = send(t, base, token, "POST", sample{path: "/graphs/default/mcp", ctype: "application/json", body: body,
		header: http.Header{"Accept": {"application/json, text/event-stream"}}}, edit)
	if e, ok := a.body["error"].(map[string]any); ok {
		return nil, false, e, a
	}
	r, _ := a.body["result"].(map[string]any)
	sc, _ := r["structuredContent"].(map[string]any)
	return sc, r["isError"] == true, nil, a
}

// misspell drops the last letter of a name ("branch" -> "branc").
func misspell(name string) string { return name[:len(name)-1] }

// withMember adds member name=v to the JSON object body.
func withMember(t *testing.T, body, name string, v any) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("example body %s: %v", body, err)
	}
	m[name] = v
	return jsonBody(m)
}

// TestEveryRouteRefusesUnknownMembers (issue 26 item 3): every route with
// a JSON body answers 400 naming the member when its valid example gains
// a misspelled member ("brnach"), a member in the wrong case, or a member
// given twice; every route answers 400 naming it to an unknown query
// parameter (each listed one misspelled, and "brnch"); every MCP tool
// refuses a misspelled argument. Nothing is changed and the store sees no
// request. Then each valid example itself succeeds, on a fresh graph, so
// the refusals were the member's doing.
func TestEveryRouteRefusesUnknownMembers(t *testing.T) {
	for _, rt := range Routes() {
		t.Run(rt.OperationID, func(t *testing.T) {
			fx := newFixture(t)
			_, base := fx.serve(t, Config{})
			ex, ok := routeExample(t, fx, rt)
			if !ok {
				t.Fatalf("route %s %s has no example in routeExample: add one", rt.Method, rt.Path)
			}
			before := fx.state(t)
			fx.store.Reset()
			refused := func(what string, member string, a answer) {
				t.Helper()
				if rt.Method == "HEAD" { // no body to name the member in
					if a.status != 400 {
						t.Errorf("%s: status %d, want 400", what, a.status)
					}
					return
				}
				if a.status != 400 || a.body["code"] != "bad_request" || !strings.Contains(fmt.Sprint(a.body["error"]), `"`+member+`"`) {
					t.Errorf("%s: status %d %s, want 400 naming %q", what, a.status, a.raw, member)
				}
			}
			if schema, ok := schemaTypes[rt.Request]; ok && rt.Request != "JSONRPC" {
				bad := ex
				bad.body = withMember(t, ex.body, "brnach", "scratch")
				a := send(t, base, "", rt.Method, bad, nil)
				refused("misspelled member", "brnach", a)
				if !strings.Contains(fmt.Sprint(a.body["error"]), "nothing was changed") {
					t.Errorf("misspelled member: %q does not say nothing changed", a.body["error"])
				}
				first := memberNames(schema)[0]
				upper := strings.ToUpper(first[:1]) + first[1:]
				bad.body = withMember(t, ex.body, upper, "x")
				refused("member in the wrong case", upper, send(t, base, "", rt.Method, bad, nil))
				bad.body = strings.TrimSuffix(ex.body, "}") + `,"` + first + `":"again"}`
				refused("member given twice", first, send(t, base, "", rt.Method, bad, nil))
			}
			for _, q := range append(slices.Clone(rt.Query), api.Param{Name: "brnchx"}) {
				bad := ex
				bad.query = url.Values{}
				for k, v := range ex.query {
					bad.query[k] = v
				}
				name := misspell(q.Name)
				bad.query.Set(name, "scratch")
				refused("query parameter "+name, name, send(t, base, "", rt.Method, bad, nil))
			}
			for _, q := range rt.Query {
				if q.Repeat {
					continue
				}
				bad := ex
				bad.query = url.Values{}
				for k, v := range ex.query {
					bad.query[k] = v
				}
				bad.query[q.Name] = []string{"main", "scratch"}
				refused("query parameter given twice", q.Name, send(t, base, "", rt.Method, bad, nil))
			}
			if rt.OperationID == "mcp" {
				for _, tool := range allTools() {
					args, ok := toolExample(fx, tool)
					if !ok {
						t.Fatalf("tool %s has no example in toolExample: add one", tool)
					}
					bad := map[string]any{"brnach": "scratch"}
					for k, v := range args {
						bad[k] = v
					}
					res, isErr, rpcErr, a := mcpCall(t, base, "", tool, bad, nil)
					msg := fmt.Sprint(res["error"], rpcErr)
					if rpcErr == nil && (!isErr || res["status"] != 400.0) || !strings.Contains(msg, "brnach") {
						t.Errorf("tool %s with a misspelled argument: %s, want a refusal naming it", tool, a.raw)
					}
				}
			}
			if c := fx.store.Snapshot(); c.Total != 0 {
				t.Errorf("refused requests reached the store: %v", c)
			}
			if got := fx.state(t); got != before {
				t.Fatalf("refused requests changed the graph: %s, was %s", got, before)
			}
			// The valid example succeeds (example headers that name the
			// head are taken now).
			ex, _ = routeExample(t, fx, rt)
			if a := send(t, base, "", rt.Method, ex, nil); a.status != ex.want {
				t.Fatalf("the valid example: status %d %s, want %d", a.status, a.raw, ex.want)
			}
		})
	}
}

// TestOpenModeRefusesForeignHostsAndSites (issue 26 item 4): in open mode
// every route (and an unknown path, and the MCP endpoint's GET) answers
// 403 to a request addressed to a name that is not loopback (DNS
// rebinding: Host attacker.example), to an Origin of another site or
// "null", and to Sec-Fetch-Site cross-site, with nothing changed and no
// storage request. The loopback names (localhost, 127.0.0.1, [::1], any
// port) and a loopback Origin are served; with tokens the Host is not
// checked (a reverse proxy may use any name).
func TestOpenModeRefusesForeignHostsAndSites(t *testing.T) {
	fx := newFixture(t)
	_, base := fx.serve(t, Config{})
	port := base[strings.LastIndex(base, ":")+1:]
	before := fx.state(t)
	hostile := map[string]func(*http.Request){
		"host attacker.example":      func(r *http.Request) { r.Host = "attacker.example:" + port },
		"host attacker.example bare": func(r *http.Request) { r.Host = "attacker.example" },
		"host localhost.attacker":    func(r *http.Request) { r.Host = "localhost.attacker.example:" + port },
		"host 127.0.0.1.nip.io":      func(r *http.Request) { r.Host = "127.0.0.1.nip.io:" + port },
		"host 0.0.0.0":               func(r *http.Request) { r.Host = "0.0.0.0:" + port },
		"origin attacker":            func(r *http.Request) { r.Header.Set("Origin", "https://attacker.example") },
		"origin null":                func(r *http.Request) { r.Header.Set("Origin", "null") },
		"origin loopback-looking":    func(r *http.Request) { r.Header.Set("Origin", "http://127.0.0.1.attacker.example") },
		"sec-fetch-site cross-site":  func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "cross-site") },
	}
	routes := Routes()
	routes = append(routes, Route{Route: api.Route{Method: "GET", Path: "/nope", OperationID: "unknown path"}}, Route{Route: api.Route{Method: "GET", Path: "/graphs/{graph_id}/mcp", OperationID: "mcp GET"}})
	for _, ir := range IcebergRoutes() { // the catalog's own table, behind the same guard
		p := strings.NewReplacer("{prefix}", "default", "{namespace}", "nodes", "{table}", "Person").Replace(ir.Path)
		routes = append(routes, Route{Route: api.Route{Method: ir.Method, Path: p, OperationID: "iceberg." + ir.OperationID}})
	}
	samples := map[string]sample{}
	for _, rt := range routes {
		ex, ok := routeExample(t, fx, rt)
		if !ok && rt.handle != nil {
			t.Fatalf("route %s %s has no example in routeExample: add one", rt.Method, rt.Path)
		}
		if !ok {
			ex = sample{path: strings.Replace(rt.Path, "{graph_id}", "default", 1)}
		}
		if strings.HasPrefix(rt.OperationID, "iceberg.") {
			ex.query = url.Values{"warehouse": {"default"}}
		}
		samples[rt.OperationID] = ex
	}
	fx.store.Reset()
	for _, rt := range routes {
		ex := samples[rt.OperationID]
		for what, edit := range hostile {
			a := send(t, base, "", rt.Method, ex, edit)
			headOK := rt.Method == "HEAD" && a.status == 403 // no body
			if !headOK && (a.status != 403 || a.body["code"] != "forbidden" || !strings.Contains(fmt.Sprint(a.body["error"]), "open mode")) {
				t.Errorf("%s %s with %s: status %d %s, want 403", rt.Method, rt.Path, what, a.status, a.raw)
			}
		}
	}
	if c := fx.store.Snapshot(); c.Total != 0 {
		t.Errorf("refused requests reached the store: %v", c)
	}
	if got := fx.state(t); got != before {
		t.Fatalf("refused requests changed the graph: %s, was %s", got, before)
	}
	// Every read route is served under each loopback name and from a
	// loopback page.
	friendly := map[string]func(*http.Request){
		"host localhost":      func(r *http.Request) { r.Host = "localhost:" + port },
		"host LOCALHOST bare": func(r *http.Request) { r.Host = "LOCALHOST" },
		"host [::1]":          func(r *http.Request) { r.Host = "[::1]:" + port },
		"host 127.0.0.2":      func(r *http.Request) { r.Host = "127.0.0.2:" + port },
		"origin localhost":    func(r *http.Request) { r.Header.Set("Origin", "http://localhost:5173") },
		"same-origin fetch":   func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "same-origin") },
	}
	for _, rt := range Routes() {
		if rt.Write {
			continue
		}
		ex, _ := routeExample(t, fx, rt)
		for what, edit := range friendly {
			if a := send(t, base, "", rt.Method, ex, edit); a.status != ex.want {
				t.Errorf("%s %s with %s: status %d %s, want %d", rt.Method, rt.Path, what, a.status, a.raw, ex.want)
			}
		}
	}
	// With tokens the Host is the proxy's business.
	tokens, secrets := tokensFor(t, "alice")
	_, tbase := fx.serve(t, Config{Tokens: tokens})
	rt := Routes()[0]
	for _, r := range Routes() {
		if r.OperationID == "listBranches" {
			rt = r
		}
	}
	ex, _ := routeExample(t, fx, rt)
	if a := send(t, tbase, secrets["alice"], rt.Method, ex, hostile["host attacker.example"]); a.status != 200 {
		t.Errorf("with tokens, a proxied Host: status %d %s, want 200", a.status, a.raw)
	}
}

func mustPolicy(t *testing.T, src string) *Policy {
	t.Helper()
	p, err := ParsePolicy("test.cedar", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDenyAllRefusesEveryRouteAndTool (issue 26 item 5): under a policy
// that forbids everything, every graph route and every MCP tool answers
// 403 forbidden to its valid example before any engine work: the store
// sees no request at all. GET /graphs lists nothing and tools/list shows
// no tool; the unauthenticated routes (healthz, openapi) still answer.
// The same examples under the default policy do reach the store, so the
// count would see engine work done before authorize.
func TestDenyAllRefusesEveryRouteAndTool(t *testing.T) {
	fx := newFixture(t)
	tokens, secrets := tokensFor(t, "alice")
	_, base := fx.serve(t, Config{Tokens: tokens, Policy: mustPolicy(t, `@id("deny-all") forbid (principal, action, resource);`)})
	token := secrets["alice"]
	samples := map[string]sample{}
	for _, rt := range Routes() {
		ex, ok := routeExample(t, fx, rt)
		if !ok {
			t.Fatalf("route %s %s has no example in routeExample: add one", rt.Method, rt.Path)
		}
		samples[rt.OperationID] = ex
	}
	tools := map[string]map[string]any{}
	for _, name := range allTools() {
		args, ok := toolExample(fx, name)
		if !ok {
			t.Fatalf("tool %s has no example in toolExample: add one", name)
		}
		tools[name] = args
	}
	before := fx.state(t)
	fx.store.Reset()
	for _, rt := range Routes() {
		a := send(t, base, token, rt.Method, samples[rt.OperationID], nil)
		switch {
		case !rt.Auth:
			if a.status != 200 {
				t.Errorf("%s: status %d %s, want 200 (no auth)", rt.OperationID, a.status, a.raw)
			}
		case rt.OperationID == "listGraphs":
			if a.status != 200 || fmt.Sprint(a.body["graphs"]) != "[]" {
				t.Errorf("%s: status %d %s, want 200 and no graph", rt.OperationID, a.status, a.raw)
			}
		case rt.OperationID == "listQueries":
			// The stored queries the caller may invoke: none (as
			// tools/list shows none).
			if a.status != 200 || fmt.Sprint(a.body["queries"]) != "[]" {
				t.Errorf("%s: status %d %s, want 200 and no query", rt.OperationID, a.status, a.raw)
			}
		case rt.OperationID == "mcp":
			r, _ := a.body["result"].(map[string]any)
			if a.status != 200 || fmt.Sprint(r["tools"]) != "[]" {
				t.Errorf("tools/list under deny-all: status %d %s, want no tool", a.status, a.raw)
			}
			for name, args := range tools {
				res, isErr, rpcErr, a := mcpCall(t, base, token, name, args, nil)
				if slices.Contains(storedTools, name) {
					// A stored query the caller may not invoke is
					// answered as a missing one (docs/server.md).
					if rpcErr != nil || !isErr || res["status"] != 404.0 || res["code"] != "not_found" {
						t.Errorf("stored tool %s under deny-all: %s, want status 404", name, a.raw)
					}
					continue
				}
				if rpcErr != nil || !isErr || res["status"] != 403.0 || res["code"] != "forbidden" {
					t.Errorf("tool %s under deny-all: %s, want status 403", name, a.raw)
				}
			}
		case rt.OperationID == "invokeQuery" || rt.OperationID == "invokeQueryIfGraphCommit":
			if a.status != 404 || a.body["code"] != "not_found" {
				t.Errorf("%s %s under deny-all: status %d %s, want 404 (a stored query the caller may not invoke is hidden)", rt.Method, rt.Path, a.status, a.raw)
			}
		default:
			headOK := rt.Method == "HEAD" && a.status == 403 // no body
			if !headOK && (a.status != 403 || a.body["code"] != "forbidden" || !strings.Contains(fmt.Sprint(a.body["error"]), "policy")) {
				t.Errorf("%s %s under deny-all: status %d %s, want 403", rt.Method, rt.Path, a.status, a.raw)
			}
		}
	}
	if c := fx.store.Snapshot(); c.Total != 0 {
		t.Errorf("requests refused by the policy reached the store: %v", c)
	}
	if got := fx.state(t); got != before {
		t.Fatalf("refused requests changed the graph: %s, was %s", got, before)
	}

	// The control: allowed, each graph route and tool does engine work the
	// counter sees.
	_, open := fx.serve(t, Config{Tokens: tokens})
	routes := slices.DeleteFunc(Routes(), func(rt Route) bool { return rt.OperationID == "deleteBranch" })
	for _, rt := range Routes() {
		if rt.OperationID == "deleteBranch" {
			routes = append(routes, rt) // last: merge, preview and diff read feature
		}
	}
	for _, rt := range routes {
		if !rt.Graph || rt.OperationID == "mcp" {
			continue
		}
		ex, _ := routeExample(t, fx, rt)
		fx.store.Reset()
		if a := send(t, open, token, rt.Method, ex, nil); a.status != ex.want {
			t.Fatalf("%s allowed: status %d %s", rt.OperationID, a.status, a.raw)
		}
		// The stored-query catalog is in memory: its empty list above is the proof.
		if fx.store.Snapshot().Total == 0 && rt.OperationID != "listQueries" {
			t.Errorf("%s allowed made no storage request: the deny-all count proves nothing for it", rt.OperationID)
		}
	}
	fx2 := newFixture(t)
	_, open2 := fx2.serve(t, Config{Tokens: tokens})
	order := slices.DeleteFunc(allTools(), func(n string) bool { return n == "branch_delete" })
	for _, name := range append(order, "branch_delete") { // the delete last: merge reads feature
		args, _ := toolExample(fx2, name)
		fx2.store.Reset()
		// The blob tools' example is refused after the schema read (the
		// fixture has no Blob): engine work all the same.
		blob := name == "blob_read" || name == "blob_stat"
		if res, isErr, _, a := mcpCall(t, open2, token, name, args, nil); isErr && (!blob || res["status"] != 400.0) || res == nil {
			t.Fatalf("tool %s allowed: %s", name, a.raw)
		}
		if fx2.store.Snapshot().Total == 0 {
			t.Errorf("tool %s allowed made no storage request", name)
		}
	}
}

// TestSourcesNeedRead (issue 26 item 5): an actor denied read on branch
// secret (and allowed everything else) cannot copy it out: a branch
// create from it, a merge of it and a load with from=secret, over HTTP
// and MCP, answer 403 naming read on secret, and create no branch.
func TestSourcesNeedRead(t *testing.T) {
	fx := newFixture(t)
	if _, err := fx.g.CreateBranch(context.Background(), "secret", "feature"); err != nil {
		t.Fatal(err)
	}
	tokens, secrets := tokensFor(t, "rita")
	pol := mustPolicy(t, `
@id("all") permit (principal, action, resource);
@id("no-secret") forbid (principal, action == Omnigraph::Action::"read", resource == Omnigraph::Branch::"default/secret");
`)
	_, base := fx.serve(t, Config{Tokens: tokens, Policy: pol})
	token := secrets["rita"]
	before := fx.state(t)
	js := "application/json"
	g := "/graphs/default"
	for _, c := range []struct {
		op string
		ex sample
	}{
		{"createBranch", sample{path: g + "/branches", ctype: js, body: `{"name":"mine","from":"secret"}`}},
		{"mergeBranch", sample{path: g + "/branches/merge", ctype: js, body: `{"source":"secret","target":"feature"}`}},
		{"load", sample{path: g + "/load", ctype: js, body: jsonBody(map[string]any{"data": exLine + "\n", "branch": "mine", "from": "secret"})}},
		{"loadNdjson", sample{path: g + "/load/ndjson", query: url.Values{"branch": {"mine"}, "from": {"secret"}}, ctype: "application/x-ndjson", body: exLine + "\n"}},
	} {
		a := send(t, base, token, "POST", c.ex, nil)
		if msg := fmt.Sprint(a.body["error"]); a.status != 403 || !strings.Contains(msg, "to read on branch \"secret\"") {
			t.Errorf("%s from secret: status %d %s, want 403 for read on secret", c.op, a.status, a.raw)
		}
	}
	for name, args := range map[string]map[string]any{
		"branch_create": {"name": "mine", "from": "secret"},
		"branch_merge":  {"source": "secret", "target": "feature"},
		"graph_load":    {"data": exLine + "\n", "branch": "mine", "from": "secret"},
	} {
		res, isErr, _, a := mcpCall(t, base, token, name, args, nil)
		if !isErr || res["status"] != 403.0 || !strings.Contains(fmt.Sprint(res["error"]), "to read on branch \"secret\"") {
			t.Errorf("tool %s from secret: %s, want 403 for read on secret", name, a.raw)
		}
	}
	if got := fx.state(t); got != before {
		t.Fatalf("refused copies changed the graph: %s, was %s", got, before)
	}
	// The same actor may still fork what it can read.
	a := send(t, base, token, "POST", sample{path: g + "/branches", ctype: js, body: `{"name":"mine","from":"feature"}`}, nil)
	if a.status != 200 {
		t.Fatalf("create from a readable branch: %d %s", a.status, a.raw)
	}
}

// TestMalformedCommitIDIs400 (issue 26 item 7): a commit id that cannot be
// one is bad input (400, saying what a commit id looks like) wherever a
// client sends one: the If-Graph-Commit header, the if_graph_commit
// argument, a snapshot to read or export, a commit path. A well-formed id
// that is not the head is still 412, one that does not exist 404.
func TestMalformedCommitIDIs400(t *testing.T) {
	fx := newFixture(t)
	_, base := fx.serve(t, Config{})
	before := fx.state(t)
	js := "application/json"
	g := "/graphs/default"
	mut := jsonBody(map[string]any{"query": exMutate})
	const wellFormed = "01KA3Q8J5YV9H0M3WQ8X2C4T7B"
	for _, bad := range []string{"garbage", "01KA3Q8J5YV9H0M3WQ8X2C4T7", "01KA3Q8J5YV9H0M3WQ8X2C4T7BB", "ZZKA3Q8J5YV9H0M3WQ8X2C4T7B", "01KA3Q8J5YV9H0M3WQ8X2C4T7é"} {
		for what, ex := range map[string]sample{
			"header":          {path: g + "/mutate/if-graph-commit", ctype: js, body: mut, header: http.Header{api.HeaderIfGraphCommit: {bad}}},
			"query snapshot":  {path: g + "/query", ctype: js, body: jsonBody(map[string]any{"query": exQuery, "snapshot": bad})},
			"export snapshot": {path: g + "/export", query: url.Values{"snapshot": {bad}}},
			"commit":          {path: g + "/commits/" + url.PathEscape(bad)},
			"changes":         {path: g + "/commits/" + url.PathEscape(bad) + "/changes"},
		} {
			method := "GET"
			if ex.body != "" {
				method = "POST"
			}
			a := send(t, base, "", method, ex, nil)
			if a.status != 400 || !strings.Contains(fmt.Sprint(a.body["error"]), "26-character") {
				t.Errorf("%s %q: status %d %s, want 400 explaining a commit id", what, bad, a.status, a.raw)
			}
		}
		res, isErr, _, a := mcpCall(t, base, "", "graph_mutate", map[string]any{"query": exMutate, "if_graph_commit": bad}, nil)
		if !isErr || res["status"] != 400.0 {
			t.Errorf("if_graph_commit %q: %s, want status 400", bad, a.raw)
		}
	}
	if got := fx.state(t); got != before {
		t.Fatalf("malformed ids changed the graph: %s, was %s", got, before)
	}
	a := send(t, base, "", "POST", sample{path: g + "/mutate/if-graph-commit", ctype: js, body: mut, header: http.Header{api.HeaderIfGraphCommit: {wellFormed}}}, nil)
	if a.status != 412 {
		t.Errorf("a stale well-formed head: status %d %s, want 412", a.status, a.raw)
	}
	a = send(t, base, "", "GET", sample{path: g + "/commits/" + wellFormed}, nil)
	if a.status != 404 {
		t.Errorf("an unknown well-formed commit: status %d %s, want 404", a.status, a.raw)
	}
}

// goInternals are what a user message must never show: the decoder's Go
// words, Go type names, package paths and the request types' names.
func goInternals() []string {
	out := []string{"Go value", "Go struct", "Go type", "a Go ", "interface {}", "interface{}", "map[string]", "[]interface", "[]map", "json:", "unmarshal",
		"github.com/", "server.", "main.", "reflect", "json.Number", "float64", "int64", "int32", "uint64", "[]any", "*errors", "%!"}
	for name := range schemaTypes {
		if len(name) > 6 { // "Health", "Change" are words
			out = append(out, name)
		}
	}
	return out
}

func checkNoGoInternals(t *testing.T, what, msg string) {
	t.Helper()
	for _, bad := range goInternals() {
		if strings.Contains(msg, bad) {
			t.Errorf("%s: the message shows %q: %s", what, bad, msg)
		}
	}
}

// malformedJSON is the generated set of bodies that are not a JSON object
// of the request type: other JSON types, broken syntax (multibyte
// characters, a byte order mark, trailing data), and for each member of t
// each JSON type it is not (plus an out-of-range number for integers).
func malformedJSON(t reflect.Type) map[string]string {
	out := map[string]string{
		"array": `[1,2]`, "string": `"x"`, "number": `5`, "boolean": `true`, "null": `null`, "empty array": `[]`,
		"open brace": `{`, "cut member": `{"query":`, "bad literal": `{"query":tru}`, "multibyte": `{é}`,
		"multibyte value": `{"a":é}`, "two objects": `{}{}`, "trailing": `{} x`, "bom": "\ufeff{}", "nbsp": "{\u00a0}",
		"not utf-8": "{\"a\":\"\xff\"}", "deep": strings.Repeat("[", 10000),
	}
	kinds := map[string]string{"number": `5`, "fraction": `1.5`, "string": `"s"`, "boolean": `true`, "array": `[1]`, "object": `{"a":1}`,
		"array of numbers": `[1,2]`, "array of arrays": `[[1]]`, "array of strings": `["x"]`}
	fields := jsonFields(t)
	for _, name := range memberNames(t) {
		ft := fields[name]
		for kind, v := range kinds {
			if err := checkValue(json.RawMessage(v), ft, name, "x"); err == nil {
				continue // a value of the right type
			}
			out[name+" as "+kind] = `{"` + name + `":` + v + `}`
		}
		if k := ft.Kind(); k >= reflect.Int && k <= reflect.Int64 {
			out[name+" too large"] = `{"` + name + `":99999999999999999999}`
		}
	}
	return out
}

// TestMalformedInputSpeaksJSON (issue 26 item 11): every route with a JSON
// body, every MCP tool and the NDJSON load answer a generated set of
// malformed inputs with 400 in the client's terms: no message names a Go
// type, Go's decoder words, a package path or a request type; a member's
// mistake names the member; a syntax error quotes the character, not a
// byte of it.
func TestMalformedInputSpeaksJSON(t *testing.T) {
	fx := newFixture(t)
	_, base := fx.serve(t, Config{})
	before := fx.state(t)
	for _, rt := range Routes() {
		st, ok := schemaTypes[rt.Request]
		if !ok || rt.Request == "JSONRPC" {
			continue
		}
		ex, _ := routeExample(t, fx, rt)
		for what, body := range malformedJSON(st) {
			bad := ex
			bad.body = body
			a := send(t, base, "", rt.Method, bad, nil)
			msg := fmt.Sprint(a.body["error"])
			if a.status != 400 {
				t.Errorf("%s %s: status %d %s, want 400", rt.OperationID, what, a.status, a.raw)
			}
			checkNoGoInternals(t, rt.OperationID+" "+what, msg)
			if member, _, ok := strings.Cut(what, " as "); ok && !strings.Contains(msg, `"`+member) {
				t.Errorf("%s %s: %q does not name the member", rt.OperationID, what, msg)
			}
			if strings.HasPrefix(what, "multibyte") && !strings.Contains(msg, "'é'") {
				t.Errorf("%s %s: %q does not quote the character", rt.OperationID, what, msg)
			}
		}
	}
	// The tools, argument by argument.
	for _, tl := range mcpTools() {
		inType := tl.in
		for what, body := range malformedJSON(inType) {
			var args any = json.RawMessage(body)
			if !json.Valid([]byte(body)) || body == "null" {
				continue // a JSON-RPC message cannot carry it; null is no arguments
			}
			res, isErr, rpcErr, a := mcpCall(t, base, "", tl.tool.Name, args, nil)
			msg := fmt.Sprint(res["error"], rpcErr)
			if rpcErr == nil && (!isErr || res["status"] != 400.0) {
				t.Errorf("tool %s %s: %s, want status 400", tl.tool.Name, what, a.raw)
			}
			checkNoGoInternals(t, "tool "+tl.tool.Name+" "+what, msg)
		}
	}
	// Parameters of the wrong type, and malformed graph-batch lines.
	params := map[string]string{"array": `[1]`, "object": `{"a":1}`, "number": `5`, "boolean": `true`, "huge": `1e400`}
	for kind, v := range params {
		for _, path := range []string{"/query", "/mutate"} {
			src := `query q($n: String) { match { $p: Person { name: $n } } return { $p.name } }`
			if path == "/mutate" {
				src = `mutation m($n: String) { insert Person { name: $n } }`
			}
			a := send(t, base, "", "POST", sample{path: "/graphs/default" + path, ctype: "application/json",
				body: `{"query":` + jsonBody(src) + `,"params":{"n":` + v + `}}`}, nil)
			if a.status != 400 {
				t.Errorf("%s with a String parameter as %s: status %d %s", path, kind, a.status, a.raw)
			}
			checkNoGoInternals(t, path+" param as "+kind, fmt.Sprint(a.body["error"]))
			if got := fx.state(t); got != before {
				t.Fatalf("%s with a String parameter as %s changed the graph: %s", path, kind, a.raw)
			}
		}
	}
	lines := map[string]string{
		"array": `[1]`, "number": `5`, "type as number": `{"type":5,"data":{}}`, "data as array": `{"type":"Person","data":[1]}`,
		"name as number": `{"type":"Person","data":{"name":5}}`, "age as string": `{"type":"Person","data":{"name":"x","age":"old"}}`,
		"age fraction": `{"type":"Person","data":{"name":"x","age":1.5}}`, "age too large": `{"type":"Person","data":{"name":"x","age":99999999999}}`,
		"extra member": `{"type":"Person","data":{"name":"x"},"extra":1}`, "multibyte": `{"type":"Person","data":{"name":é}}`,
		"bom mid-file": exLine + "\n\ufeff" + exLine, "edge from number": `{"edge":"Knows","from":1,"to":"x"}`,
		"not utf-8": "{\"type\":\"Person\",\"data\":{\"name\":\"\xff\"}}",
	}
	// refused checks a 400 in the client's terms that says want.
	refused := func(what string, a answer, want string) {
		t.Helper()
		msg := fmt.Sprint(a.body["error"])
		if a.status != 400 {
			t.Errorf("%s: status %d %s, want 400", what, a.status, a.raw)
		}
		checkNoGoInternals(t, what, msg)
		if !strings.Contains(msg, want) {
			t.Errorf("%s: %q does not say %q", what, msg, want)
		}
	}
	says := map[string]string{"multibyte": "'é'", "bom mid-file": "byte order mark", "branch multibyte": "'é'"}
	for what, body := range lines {
		refused("load/ndjson "+what, send(t, base, "", "POST", sample{path: "/graphs/default/load/ndjson", query: url.Values{"mode": {"merge"}},
			ctype: "application/x-ndjson", body: body + "\n"}, nil), says[what])
		if what != "not utf-8" { // JSON text cannot carry the byte (encoding/json sends U+FFFD)
			refused("load data "+what, send(t, base, "", "POST", sample{path: "/graphs/default/load", ctype: "application/json",
				body: jsonBody(map[string]any{"data": body + "\n", "mode": "merge"})}, nil), says[what])
		}
	}
	for what, q := range map[string]url.Values{
		"limit word": {"limit": {"abc"}}, "limit negative": {"limit": {"-1"}}, "limit exponent": {"limit": {"1e3"}},
		"branch multibyte": {"branch": {"fé"}},
	} {
		refused("commits "+what, send(t, base, "", "GET", sample{path: "/graphs/default/commits", query: q}, nil), says[what])
	}
	if got := fx.state(t); got != before {
		t.Fatalf("malformed input changed the graph: %s, was %s", got, before)
	}
}

// TestTokensFileSpeaksJSON: the tokens file goes through the same decoder
// (DecodeJSON): a mistyped or unknown member is named in JSON's terms.
func TestTokensFileSpeaksJSON(t *testing.T) {
	for body, want := range map[string]string{
		`[1]`: "must be a JSON object",
		`{"version":1,"tokens":[{"actor":"a","sha256":"x","created_at":5}]}`:           `"tokens[0].created_at" must be an RFC 3339 date-time string`,
		`{"version":1,"tokens":[{"actor":"a","sha256":"x","created_at":"yesterday"}]}`: `not "yesterday"`,
		`{"version":"1","tokens":[]}`:           `"version" must be a whole number, not a string`,
		`{"version":1,"tokens":[],"tokenz":[]}`: `unknown member "tokenz" (did you mean "tokens"?)`,
	} {
		_, err := ParseTokens([]byte(body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", body, err, want)
			continue
		}
		checkNoGoInternals(t, "tokens file "+body, err.Error())
	}
}
