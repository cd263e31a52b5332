package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/local"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/internal/buildinfo"
)

const testSchema = `
node Person {
  name: String @key
  age: I32?
}
`

// testGraph is a fresh read-write graph on a local directory.
func testGraph(t testing.TB) *graph.Graph {
	t.Helper()
	store, err := local.New(filepath.Join(t.TempDir(), "g"))
	if err != nil {
		t.Fatal(err)
	}
	return testGraphOn(t, store)
}

// testGraphOn is a fresh read-write graph of testSchema on store.
func testGraphOn(t testing.TB, store backend.StorageAdapter) *graph.Graph {
	t.Helper()
	ctx := context.Background()
	g, err := graph.Init(ctx, store, testSchema, graph.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g.Close()
	g, err = graph.Open(ctx, store, graph.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

type client struct {
	t     *testing.T
	base  string
	token string
}

// do sends one request and decodes the JSON answer into a map.
func (c *client) do(method, path, ctype string, body string, hdr ...string) (int, map[string]any, http.Header) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		c.t.Fatalf("%s %s: status %d, body is not a JSON object: %q", method, path, resp.StatusCode, b)
	}
	return resp.StatusCode, m, resp.Header
}

func (c *client) json(method, path, body string, hdr ...string) (int, map[string]any) {
	c.t.Helper()
	st, m, _ := c.do(method, path, "application/json", body, hdr...)
	return st, m
}

func newTestServer(t testing.TB, g *graph.Graph, cfg Config) (*Server, string) {
	t.Helper()
	cfg.Graphs = []Graph{{ID: "default", G: g}}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return s, hs.URL
}

func tokensFor(t *testing.T, actors ...string) (*Tokens, map[string]string) {
	t.Helper()
	f := &TokensFile{Version: TokensFormat}
	secrets := map[string]string{}
	for _, a := range actors {
		s, err := f.Add(a, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		secrets[a] = s
	}
	pf, err := ParseTokens(f.Encode())
	if err != nil {
		t.Fatal(err)
	}
	return NewTokens(pf), secrets
}

func mustStatus(t *testing.T, what string, got, want int, body map[string]any) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: status %d, want %d; body %v", what, got, want, body)
	}
}

// TestServerRoutesEndToEnd drives every route of the table over real HTTP
// on a local graph: shapes, status codes and data content.
func TestServerRoutesEndToEnd(t *testing.T) {
	g := testGraph(t)
	tokens, secrets := tokensFor(t, "alice", "bob")
	_, base := newTestServer(t, g, Config{Tokens: tokens, Version: "test"})
	c := &client{t: t, base: base, token: secrets["alice"]}
	g0 := "/graphs/default"

	st, m := c.json("GET", "/healthz", "")
	mustStatus(t, "healthz", st, 200, m)
	if m["status"] != "ok" || m["mode"] != "read-write" {
		t.Fatalf("healthz: %v", m)
	}
	st, m = c.json("GET", "/graphs", "")
	mustStatus(t, "graphs", st, 200, m)
	if fmt.Sprint(m["graphs"]) != "[map[graph_id:default]]" {
		t.Fatalf("graphs: %v", m)
	}

	// Load two people (one commit).
	st, m, _ = c.do("POST", g0+"/load/ndjson?mode=append", "application/x-ndjson",
		`{"type":"Person","data":{"name":"ada","age":36}}`+"\n"+`{"type":"Person","data":{"name":"bo","age":20}}`+"\n")
	mustStatus(t, "load", st, 200, m)
	if m["nodes"] != 2.0 || m["total_entities"] != 2.0 || m["actor_id"] != "alice" || m["commit"] == nil {
		t.Fatalf("load: %v", m)
	}
	loadCommit := m["commit"].(map[string]any)["graph_commit_id"].(string)

	// Query reads them back; graph_commit_id is the load's commit.
	st, m = c.json("POST", g0+"/query", `{"query":"query q() { match { $p: Person } return { $p.name, $p.age } order { $p.name asc } }"}`)
	mustStatus(t, "query", st, 200, m)
	if m["row_count"] != 2.0 || m["graph_commit_id"] != loadCommit || fmt.Sprint(m["rows"]) != "[map[p.age:36 p.name:ada] map[p.age:20 p.name:bo]]" {
		t.Fatalf("query: %v", m)
	}
	if fmt.Sprint(m["target"]) != "map[branch:main]" {
		t.Fatalf("query target: %v", m["target"])
	}

	// Mutate as bob: the commit records bob.
	cb := &client{t: t, base: base, token: secrets["bob"]}
	st, m = cb.json("POST", g0+"/mutate", `{"query":"mutation m($n: String) { insert Person { name: $n, age: 50 } }","params":{"n":"cy"}}`)
	mustStatus(t, "mutate", st, 200, m)
	commit := m["commit"].(map[string]any)
	if m["affected_nodes"] != 1.0 || commit["actor_id"] != "bob" || commit["parent_commit_id"] != loadCommit {
		t.Fatalf("mutate: %v", m)
	}
	head := commit["graph_commit_id"].(string)

	// Conditional mutate: a stale head is 412 and writes nothing; the
	// fresh head lands.
	st, m = c.json("POST", g0+"/mutate/if-graph-commit", `{"query":"mutation m() { insert Person { name: \"dee\" } }"}`, api.HeaderIfGraphCommit, loadCommit)
	mustStatus(t, "stale conditional mutate", st, 412, m)
	pf := m["precondition_failure"].(map[string]any)
	if pf["expected"] != loadCommit || pf["actual"] != head || m["code"] != nil {
		t.Fatalf("412 body: %v", m)
	}
	st, m = c.json("POST", g0+"/mutate/if-graph-commit", `{"query":"mutation m() { insert Person { name: \"dee\" } }"}`, api.HeaderIfGraphCommit, head)
	mustStatus(t, "fresh conditional mutate", st, 200, m)
	st, m = c.json("POST", g0+"/mutate/if-graph-commit", `{"query":"mutation m() { insert Person { name: \"eve\" } }"}`)
	mustStatus(t, "conditional mutate without header", st, 400, m)
	st, m = c.json("POST", g0+"/mutate/if-graph-commit", `{"query":"mutation m() { insert Person { name: \"eve\" } }"}`, api.HeaderIfGraphCommit, "*")
	mustStatus(t, "conditional mutate with *", st, 400, m)
	st, m = c.json("POST", g0+"/mutate", `{"query":"mutation m() { insert Person { name: \"eve\" } }"}`, api.HeaderIfGraphCommit, head)
	mustStatus(t, "plain mutate with the header", st, 400, m)

	// A strict insert of an existing id: 409 key_conflict.
	st, m, _ = c.do("POST", g0+"/load/ndjson?mode=append", "application/x-ndjson", `{"type":"Person","data":{"name":"ada"}}`+"\n")
	mustStatus(t, "append an existing id", st, 409, m)
	if kc := m["key_conflict"].(map[string]any); kc["type_name"] != "Person" || kc["entity_id"] != "ada" {
		t.Fatalf("key_conflict: %v", m)
	}

	// Snapshot and schema.
	st, m = c.json("GET", g0+"/snapshot", "")
	mustStatus(t, "snapshot", st, 200, m)
	ds := m["datasets"].([]any)[0].(map[string]any)
	if m["graph_branch"] != "main" || ds["type_name"] != "Person" || ds["entity_count"] != 4.0 {
		t.Fatalf("snapshot: %v", m)
	}
	if b, _ := json.Marshal(m); bytes.Contains(b, []byte("nodes/")) {
		t.Fatalf("snapshot names a storage path: %s", b)
	}
	st, m = c.json("GET", g0+"/schema", "")
	mustStatus(t, "schema", st, 200, m)
	if !strings.Contains(m["schema_source"].(string), "node Person") {
		t.Fatalf("schema: %v", m)
	}

	// Branches: create, write on both sides, merge conflict 409, list,
	// merge clean, delete.
	st, m = c.json("POST", g0+"/branches", `{"name":"feature"}`)
	mustStatus(t, "branch create", st, 200, m)
	if m["name"] != "feature" || m["from"] != "main" {
		t.Fatalf("branch create: %v", m)
	}
	st, m = c.json("POST", g0+"/mutate", `{"query":"mutation m() { update Person set { age: 1 } where name = \"ada\" }","branch":"feature"}`)
	mustStatus(t, "update on feature", st, 200, m)
	st, m = c.json("POST", g0+"/mutate", `{"query":"mutation m() { update Person set { age: 2 } where name = \"ada\" }"}`)
	mustStatus(t, "update on main", st, 200, m)
	st, m = c.json("POST", g0+"/branches/merge", `{"source":"feature"}`)
	mustStatus(t, "conflicting merge", st, 409, m)
	mcs := m["merge_conflicts"].([]any)
	if len(mcs) != 1 || mcs[0].(map[string]any)["kind"] != "divergent_update" || mcs[0].(map[string]any)["entity_id"] != "ada" {
		t.Fatalf("merge conflicts: %v", m)
	}
	st, m = c.json("POST", g0+"/branches", `{"name":"topic"}`)
	mustStatus(t, "branch create topic", st, 200, m)
	st, m = c.json("POST", g0+"/mutate", `{"query":"mutation m() { insert Person { name: \"fay\" } }","branch":"topic"}`)
	mustStatus(t, "insert on topic", st, 200, m)
	st, m = c.json("GET", g0+"/branches", "")
	mustStatus(t, "branches", st, 200, m)
	if fmt.Sprint(m["branches"]) != "[feature main topic]" {
		t.Fatalf("branches: %v", m)
	}
	st, m = c.json("POST", g0+"/branches/merge", `{"source":"topic","delete_branch":true}`)
	mustStatus(t, "merge", st, 200, m)
	if m["outcome"] != "fast_forward" && m["outcome"] != "merged" || m["branch_deleted"] != true {
		t.Fatalf("merge: %v", m)
	}
	st, m = c.json("DELETE", g0+"/branches/feature", "")
	mustStatus(t, "branch delete", st, 200, m)
	st, m = c.json("DELETE", g0+"/branches/feature", "")
	mustStatus(t, "delete a deleted branch", st, 404, m)

	// Commits, one commit, its changes.
	st, m = c.json("GET", g0+"/commits?branch=main&limit=2", "")
	mustStatus(t, "commits", st, 200, m)
	cs := m["commits"].([]any)
	if len(cs) != 2 {
		t.Fatalf("commits: %v", m)
	}
	st, m = c.json("GET", g0+"/commits/"+head, "")
	mustStatus(t, "commit", st, 200, m)
	if m["graph_commit_id"] != head || m["actor_id"] != "bob" {
		t.Fatalf("commit: %v", m)
	}
	st, m = c.json("GET", g0+"/commits/"+head+"/changes", "")
	mustStatus(t, "changes", st, 200, m)
	ch := m["changes"].([]any)
	if len(ch) != 1 || ch[0].(map[string]any)["id"] != "cy" || ch[0].(map[string]any)["op"] != "insert" || m["cause"].(map[string]any)["graph_commit_id"] != head {
		t.Fatalf("changes: %v", m)
	}
	st, m = c.json("GET", g0+"/commits/01KA3Q8J5YV9H0M3WQ8X2C4T7B", "")
	mustStatus(t, "unknown commit", st, 404, m)
	// A malformed id is bad input, never a lookup (issue 26 item 7).
	st, m = c.json("GET", g0+"/commits/NOSUCHCOMMIT", "")
	mustStatus(t, "malformed commit id", st, 400, m)
	if !strings.Contains(fmt.Sprint(m["error"]), "26-character") {
		t.Fatalf("malformed commit id: %v", m)
	}

	// Input errors: 400; unknown graph and branch: 404; wrong media: 415.
	st, m = c.json("POST", g0+"/query", `{"query":"query q( {"}`)
	mustStatus(t, "bad query", st, 400, m)
	st, m = c.json("POST", g0+"/query", `{"query":"mutation m() { insert Person { name: \"x\" } }"}`)
	mustStatus(t, "a mutation on query", st, 400, m)
	st, m = c.json("POST", g0+"/query", `{"query":"query q() { match { $p: Person } return { $p.name } }","branch":"nope"}`)
	mustStatus(t, "unknown branch", st, 404, m)
	st, m = c.json("GET", "/graphs/other/branches", "")
	mustStatus(t, "unknown graph", st, 404, m)
	st, m = c.json("GET", "/graphs/bad_id/branches", "")
	mustStatus(t, "invalid graph id", st, 400, m)
	st, m, _ = c.do("POST", g0+"/query", "text/plain", `{}`)
	mustStatus(t, "query as text/plain", st, 415, m)
	st, m, _ = c.do("POST", g0+"/load/ndjson", "application/json", `{}`)
	mustStatus(t, "load as JSON", st, 415, m)

	// openapi.json is served and lists every route.
	st, m = c.json("GET", "/openapi.json", "")
	mustStatus(t, "openapi", st, 200, m)
	if m["openapi"] != "3.1.0" || len(m["paths"].(map[string]any)) == 0 {
		t.Fatalf("openapi: %v", m["openapi"])
	}
}

// TestServerAuth: graph routes and /graphs need a valid bearer token
// (401 otherwise, before any engine work); /healthz and /openapi.json do
// not.
func TestServerAuth(t *testing.T) {
	g := testGraph(t)
	tokens, secrets := tokensFor(t, "alice")
	_, base := newTestServer(t, g, Config{Tokens: tokens})
	for _, tc := range []struct {
		name, token, want string
		status            int
	}{
		{"missing", "", "missing bearer token", 401},
		{"invalid", secrets["alice"] + "x", "invalid bearer token", 401},
		{"valid", secrets["alice"], "", 200},
	} {
		c := &client{t: t, base: base, token: tc.token}
		for _, path := range []string{"/graphs", "/graphs/default/branches"} {
			st, m := c.json("GET", path, "")
			mustStatus(t, tc.name+" "+path, st, tc.status, m)
			if tc.status == 401 && (m["error"] != tc.want || m["code"] != "unauthorized") {
				t.Fatalf("%s: %v", tc.name, m)
			}
		}
	}
	c := &client{t: t, base: base}
	st, m := c.json("GET", "/healthz", "")
	mustStatus(t, "healthz without a token", st, 200, m)
	// A 401 on a write changes nothing.
	st, m = c.json("POST", "/graphs/default/mutate", `{"query":"mutation m() { insert Person { name: \"x\" } }"}`)
	mustStatus(t, "unauthenticated mutate", st, 401, m)
	cs, err := g.Commits(context.Background(), "main", 0)
	if err != nil || len(cs) != 1 {
		t.Fatalf("commits after a 401 write: %d, %v", len(cs), err)
	}
}

// TestServerAdmission: with one write slot per actor, a second write of
// the same actor while the first is in flight is 429 with Retry-After and
// writes nothing; another actor is admitted; once the first finishes the
// actor is admitted again.
func TestServerAdmission(t *testing.T) {
	g := testGraph(t)
	tokens, secrets := tokensFor(t, "alice", "bob")
	_, base := newTestServer(t, g, Config{Tokens: tokens, Limits: Limits{WritesPerActor: 1, RetryAfter: 7}})
	alice := &client{t: t, base: base, token: secrets["alice"]}
	unblock, done := writeInFlight(t, g, alice, `{"query":"mutation m() { insert Person { name: \"a1\" } }"}`)
	st, m, h := alice.do("POST", "/graphs/default/mutate", "application/json", `{"query":"mutation m() { insert Person { name: \"a2\" } }"}`)
	mustStatus(t, "second write of alice", st, 429, m)
	if h.Get("Retry-After") != "7" || m["code"] != "too_many_requests" {
		t.Fatalf("429: Retry-After %q, body %v", h.Get("Retry-After"), m)
	}
	unblock()
	if st := <-done; st != 200 {
		t.Fatalf("first write: %d", st)
	}
	st, m = (&client{t: t, base: base, token: secrets["bob"]}).json("POST", "/graphs/default/mutate", `{"query":"mutation m() { insert Person { name: \"b1\" } }"}`)
	mustStatus(t, "bob's write", st, 200, m)
	st, m = alice.json("POST", "/graphs/default/mutate", `{"query":"mutation m() { insert Person { name: \"a3\" } }"}`)
	mustStatus(t, "alice again", st, 200, m)
	st, m = alice.json("POST", "/graphs/default/query", `{"query":"query q() { match { $p: Person } return { $p.name } order { $p.name asc } }"}`)
	mustStatus(t, "query", st, 200, m)
	if fmt.Sprint(m["rows"]) != "[map[p.name:a1] map[p.name:a3] map[p.name:b1]]" {
		t.Fatalf("rows: %v (the refused a2 must be absent)", m["rows"])
	}
}

// TestServerBodyLimits: a JSON body or a load over its limit is 413
// resource_limit and writes nothing, whether Content-Length announces it
// or the body is streamed without one.
func TestServerBodyLimits(t *testing.T) {
	g := testGraph(t)
	_, base := newTestServer(t, g, Config{Limits: Limits{BodyBytes: 200, LoadBytes: 300}})
	c := &client{t: t, base: base}
	big := `{"query":"mutation m() { insert Person { name: \"` + strings.Repeat("x", 300) + `\" } }"}`
	st, m := c.json("POST", "/graphs/default/mutate", big)
	mustStatus(t, "big mutate", st, 413, m)
	if rl := m["resource_limit"].(map[string]any); rl["resource"] != "request_body_bytes" || rl["limit"] != 200.0 {
		t.Fatalf("413: %v", m)
	}
	var lines strings.Builder
	for i := range 20 {
		fmt.Fprintf(&lines, `{"type":"Person","data":{"name":"p%d"}}`+"\n", i)
	}
	// Streamed (chunked, no Content-Length): the limit is met while the
	// engine reads.
	req, _ := http.NewRequest("POST", base+"/graphs/default/load/ndjson?mode=merge", io.MultiReader(strings.NewReader(lines.String())))
	req.Header.Set("Content-Type", "application/x-ndjson")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 413 || !strings.Contains(string(b), "graph_batch_request_bytes") {
		t.Fatalf("streamed load over the limit: %d %s", resp.StatusCode, b)
	}
	cs, err := g.Commits(context.Background(), "main", 0)
	if err != nil || len(cs) != 1 {
		t.Fatalf("commits after refused bodies: %d, %v", len(cs), err)
	}
}

// TestServerReadOnly: a replica refuses every write route with 403 before
// the engine and serves reads.
func TestServerReadOnly(t *testing.T) {
	g := testGraph(t)
	_, base := newTestServer(t, g, Config{ReadOnly: true})
	c := &client{t: t, base: base}
	st, m := c.json("POST", "/graphs/default/mutate", `{"query":"mutation m() { insert Person { name: \"x\" } }"}`)
	mustStatus(t, "replica mutate", st, 403, m)
	st, m = c.json("POST", "/graphs/default/branches", `{"name":"b"}`)
	mustStatus(t, "replica branch create", st, 403, m)
	st, m = c.json("GET", "/graphs/default/branches", "")
	mustStatus(t, "replica read", st, 200, m)
}

// TestServerClosedAdmission: once admission is closed (the server is
// stopping), every graph request is 503 server_stopping, and so is
// /healthz (issue 26 item 6), with the reason, so a load balancer takes
// the server out of rotation.
func TestServerClosedAdmission(t *testing.T) {
	g := testGraph(t)
	s, base := newTestServer(t, g, Config{})
	c := &client{t: t, base: base}
	st, m := c.json("GET", "/healthz", "")
	mustStatus(t, "healthz before", st, 200, m)
	if m["status"] != "ok" {
		t.Fatalf("healthz before: %v", m)
	}
	s.CloseAdmission(StopShutdown)
	s.CloseAdmission(StopLeaseLost) // the first reason stays
	for _, p := range []string{"/graphs/default/branches", "/healthz"} {
		st, m = c.json("GET", p, "")
		mustStatus(t, p+" after close", st, 503, m)
		if m["failure_class"] != "server_stopping" || m["stop_reason"] != StopShutdown || !strings.Contains(fmt.Sprint(m["error"]), "told to shut down") {
			t.Fatalf("%s 503: %v", p, m)
		}
	}
}

// TestOpenAPIMatchesMux: every route of the table is mounted at its
// pattern, and the OpenAPI document has exactly the table's operations.
func TestOpenAPIMatchesMux(t *testing.T) {
	s, err := New(Config{Graphs: []Graph{{ID: "default"}}})
	if err != nil {
		t.Fatal(err)
	}
	doc := OpenAPI(true)
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	var parsed struct {
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(b, &parsed); err != nil {
		t.Fatal(err)
	}
	ops := 0
	for path, item := range parsed.Paths {
		for method, op := range item {
			ops++
			concrete := strings.NewReplacer("{graph_id}", "default", "{branch}", "a/b", "{commit_id}", "C1", "{name}", "find_person").Replace(path)
			req := httptest.NewRequest(strings.ToUpper(method), concrete, nil)
			_, pattern := s.mux.Handler(req)
			found := false
			for _, rt := range Routes() {
				if rt.OperationID == op.OperationID {
					found = true
					if pattern != rt.Pattern() {
						t.Errorf("%s %s: the mux routes it to %q, the table says %q", method, path, pattern, rt.Pattern())
					}
				}
			}
			if !found {
				t.Errorf("OpenAPI operation %s is not in the route table", op.OperationID)
			}
		}
	}
	if ops != len(Routes()) {
		t.Fatalf("OpenAPI has %d operations, the table %d routes", ops, len(Routes()))
	}
	for _, rt := range Routes() {
		for _, name := range []string{rt.Request, rt.Response} {
			if _, ok := schemaTypes[name]; !ok && name != "" && name != "NDJSON" && name != "OpenAPI" && name != "StoredQueryOutput" && name != "BaselineNDJSON" && name != "Blob" {
				t.Errorf("route %s names schema %q, which the document lacks", rt.OperationID, name)
			}
		}
	}
}

// TestDocsShowEveryRoute: docs/server.md has a curl example for every
// route of the table (the paths as the examples spell them: $B the
// server, $G a graph, $ID a commit, feature a branch), so a route added
// to the table without its example fails here.
func TestDocsShowEveryRoute(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docs", "server.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, rt := range Routes() {
		p := strings.NewReplacer("/graphs/{graph_id}", "$G", "{commit_id}", "$ID", "{branch}", "feature", "{name}", "city_adults").Replace(rt.Path)
		if !strings.HasPrefix(p, "$G") {
			p = "$B" + p
		}
		want := "curl"
		switch {
		case rt.Method == "DELETE":
			want = "curl -X DELETE"
		case rt.Method == "POST" && rt.Path != "/graphs/{graph_id}/load/ndjson":
			want = "curl $H"
		}
		found := false
		for _, line := range strings.Split(doc, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), want) && (strings.Contains(line, p+" ") || strings.Contains(line, p+"?") || strings.Contains(line, p+`"`) || strings.HasSuffix(line, p) || strings.Contains(line, p+" \\")) {
				found = true
			}
		}
		if !found && rt.Path == "/graphs/{graph_id}/load/ndjson" {
			found = strings.Contains(doc, `"`+p+"?")
		}
		if !found {
			t.Errorf("docs/server.md has no %q example of %s %s (as %s)", want, rt.Method, rt.Path, p)
		}
	}
}

// TestHealthzShowsBuild (issue 26 item 18): /healthz reports the build
// serving (buildinfo.Read when the config names none): the module
// version, revision, dates and Go version, not just "(devel)".
func TestHealthzShowsBuild(t *testing.T) {
	g := testGraph(t)
	want := buildinfo.Read()
	_, base := newTestServer(t, g, Config{})
	st, m := (&client{t: t, base: base}).json("GET", "/healthz", "")
	mustStatus(t, "healthz", st, 200, m)
	b, _ := m["build"].(map[string]any)
	if m["version"] != want.Version || b["version"] != want.Version || b["go_version"] != want.GoVersion || b["revision"] != nilIfEmpty(want.Revision) {
		t.Fatalf("healthz: %v, want build %+v", m, want)
	}
	stamped := buildinfo.Info{Version: "v1.2.3", Revision: "0123456789abcdef", BuildDate: "2026-12-01T00:00:00Z", GoVersion: "go1.26.8"}
	_, base = newTestServer(t, g, Config{Build: stamped})
	st, m = (&client{t: t, base: base}).json("GET", "/healthz", "")
	mustStatus(t, "healthz", st, 200, m)
	if b, _ := m["build"].(map[string]any); m["version"] != "v1.2.3" || b["revision"] != "0123456789abcdef" || b["build_date"] != "2026-12-01T00:00:00Z" {
		t.Fatalf("healthz with a stamped build: %v", m)
	}
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
