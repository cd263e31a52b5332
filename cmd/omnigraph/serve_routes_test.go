package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/omnigraph-go/omnigraph/internal/testenv"
)

// routePolicy lets alice do everything and bob only read.
const routePolicy = `
@id("alice-all") permit (principal == Omnigraph::Actor::"alice", action, resource);
@id("bob-reads") permit (principal == Omnigraph::Actor::"bob", action == Omnigraph::Action::"read", resource);
`

// raw sends one request and returns the status, the body and the headers.
func raw(t *testing.T, method, url, token, ctype, body string, hdr ...string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// TestServeProcessEveryRoute drives every route of the route table through
// the real binary, on a local graph and on the S3 emulator (leased lock):
// shapes, status codes and data content, auth (401 without or with a bad
// token, 403 for a denied action), the body limit (413), a stale
// conditional mutate (412), a merge conflict (409), and the MCP endpoint.
// Admission (429) and injected 500/503 are in the server package's tests.
func TestServeProcessEveryRoute(t *testing.T) {
	t.Run("local", func(t *testing.T) { runEveryRoute(t, filepath.Join(t.TempDir(), "graph")) })
	t.Run("s3", func(t *testing.T) { runEveryRoute(t, testenv.S3(t)) })
}

func runEveryRoute(t *testing.T, url string) {
	mustCLI(t, "init", "--schema", writeSchema(t), url)
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.json")
	alice := strings.TrimSpace(mustCLI(t, "token", "add", "alice", "--tokens", tokens))
	bob := strings.TrimSpace(mustCLI(t, "token", "add", "bob", "--tokens", tokens))
	policy := filepath.Join(dir, "policy.cedar")
	if err := os.WriteFile(policy, []byte(routePolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	base, cmd, wait := startServe(t, "--store", url, "--tokens", tokens, "--policy", policy, "--max-body-bytes", "4096")
	g := base + "/graphs/default"
	js := "application/json"
	must := func(what string, got, want int, body string) {
		t.Helper()
		if got != want {
			t.Fatalf("%s: status %d, want %d: %s", what, got, want, body)
		}
	}
	obj := func(body string) map[string]any {
		t.Helper()
		var m map[string]any
		if err := json.Unmarshal([]byte(body), &m); err != nil {
			t.Fatalf("not a JSON object: %q", body)
		}
		return m
	}

	st, body, _ := raw(t, "GET", base+"/healthz", "", "", "")
	must("healthz", st, 200, body)
	st, body, _ = raw(t, "GET", base+"/openapi.json", "", "", "")
	must("openapi", st, 200, body)
	if paths, _ := obj(body)["paths"].(map[string]any); len(paths) < 15 {
		t.Fatalf("openapi has %d paths", len(paths))
	}
	st, body, _ = raw(t, "GET", base+"/graphs", "", "", "")
	must("graphs without a token", st, 401, body)
	st, body, _ = raw(t, "GET", base+"/graphs", "not-a-token", "", "")
	must("graphs with a bad token", st, 401, body)
	st, body, _ = raw(t, "GET", base+"/graphs", alice, "", "")
	must("graphs", st, 200, body)

	st, body, _ = raw(t, "POST", g+"/load/ndjson?mode=append", alice, "application/x-ndjson",
		`{"type":"Person","data":{"name":"ada","age":36}}`+"\n"+`{"type":"Company","data":{"name":"acme"}}`+"\n")
	must("load/ndjson", st, 200, body)
	st, body, _ = raw(t, "POST", g+"/load", alice, js, `{"mode":"append","data":"{\"type\":\"Person\",\"data\":{\"name\":\"bo\",\"age\":20}}\n"}`)
	must("load", st, 200, body)
	st, body, _ = raw(t, "POST", g+"/mutate", alice, js, `{"query":"mutation m() { insert WorksAt { from: \"ada\", to: \"acme\" } }"}`)
	must("mutate", st, 200, body)
	head := obj(body)["commit"].(map[string]any)["graph_commit_id"].(string)
	st, body, _ = raw(t, "POST", g+"/mutate", bob, js, `{"query":"mutation m() { insert Person { name: \"x\" } }"}`)
	must("mutate denied by the policy", st, 403, body)
	st, body, _ = raw(t, "POST", g+"/mutate", alice, js, `{"query":"`+strings.Repeat("x", 5000)+`"}`)
	must("a body over --max-body-bytes", st, 413, body)

	st, body, _ = raw(t, "POST", g+"/query", bob, js, `{"query":"query q() { match { $p: Person } return { $p.name, $p.age } order { $p.name } }"}`)
	must("query", st, 200, body)
	if rows := fmt.Sprint(obj(body)["rows"]); rows != "[map[p.age:36 p.name:ada] map[p.age:20 p.name:bo]]" {
		t.Fatalf("query rows %s", rows)
	}
	st, body, _ = raw(t, "POST", g+"/mutate/if-graph-commit", alice, js, `{"query":"mutation m() { insert Person { name: \"cy\" } }"}`, "Omnigraph-If-Graph-Commit", head)
	must("conditional mutate on the head", st, 200, body)
	st, body, _ = raw(t, "POST", g+"/mutate/if-graph-commit", alice, js, `{"query":"mutation m() { insert Person { name: \"dee\" } }"}`, "Omnigraph-If-Graph-Commit", head)
	must("conditional mutate on a stale head", st, 412, body)

	for _, p := range []string{"/snapshot", "/schema", "/branches", "/commits?limit=3"} {
		st, body, _ = raw(t, "GET", g+p, bob, "", "")
		must(p, st, 200, body)
	}
	st, body, _ = raw(t, "GET", g+"/schema", bob, "", "")
	if !strings.Contains(obj(body)["schema_source"].(string), "node Person") {
		t.Fatalf("schema: %s", body)
	}
	st, body, _ = raw(t, "GET", g+"/commits/"+head, bob, "", "")
	must("commits/{id}", st, 200, body)
	st, body, _ = raw(t, "GET", g+"/commits/"+head+"/changes", bob, "", "")
	must("commits/{id}/changes", st, 200, body)
	if !strings.Contains(body, "WorksAt") {
		t.Fatalf("changes of the edge insert: %s", body)
	}

	// Branches: create, diverge both sides on one entity, merge (409), delete.
	st, body, _ = raw(t, "POST", g+"/branches", alice, js, `{"name":"topic","from":"main"}`)
	must("branch create", st, 200, body)
	st, body, _ = raw(t, "POST", g+"/branches", bob, js, `{"name":"nope","from":"main"}`)
	must("branch create denied", st, 403, body)
	st, body, _ = raw(t, "POST", g+"/mutate", alice, js, `{"query":"mutation m() { update Person set { age: 40 } where name = \"ada\" }","branch":"topic"}`)
	must("mutate on topic", st, 200, body)
	st, body, _ = raw(t, "POST", g+"/mutate", alice, js, `{"query":"mutation m() { update Person set { age: 50 } where name = \"ada\" }"}`)
	must("mutate on main", st, 200, body)
	st, body, _ = raw(t, "POST", g+"/branches/merge", alice, js, `{"source":"topic","target":"main"}`)
	must("conflicting merge", st, 409, body)
	if !strings.Contains(body, "merge_conflicts") {
		t.Fatalf("409 without merge_conflicts: %s", body)
	}
	st, body, _ = raw(t, "DELETE", g+"/branches/topic", alice, "", "")
	must("branch delete", st, 200, body)

	st, body, hdr := raw(t, "GET", g+"/export", alice, "", "")
	must("export", st, 200, body)
	if lines := strings.Count(body, "\n"); lines != 5 || !strings.Contains(body, `"ada"`) || hdr.Get("Omnigraph-Graph-Commit") == "" {
		t.Fatalf("export (%d lines): %s", lines, body)
	}
	st, body, _ = raw(t, "POST", g+"/mcp", alice, js, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		"Accept", "application/json, text/event-stream")
	must("mcp initialize", st, 200, body)
	if !strings.Contains(body, `"serverInfo"`) {
		t.Fatalf("mcp initialize: %s", body)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := wait(); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}
	got := personNames(t, url)
	if len(got) != 3 || got["ada"] != 1 || got["bo"] != 1 || got["cy"] != 1 {
		t.Fatalf("people after the run: %v", got)
	}
}

// TestServeProcessInjectedFailuresS3 pins the failure statuses through the
// real binary on the S3 emulator, with a fault proxy between the server
// and the store: a commit's publish whose every attempt goes unanswered
// (the connection drops before the request reaches the store) is 500 with
// outcome_unknown after the re-issues; a publish the store refuses after
// the table commits is 503 recovery_required with the operation id; the
// server keeps serving, and once the store behaves a write succeeds and no
// row is stored twice.
func TestServeProcessInjectedFailuresS3(t *testing.T) {
	url := testenv.S3(t)
	endpoint := os.Getenv("AWS_ENDPOINT_URL_S3")
	if endpoint == "" {
		endpoint = os.Getenv("AWS_ENDPOINT_URL")
	}
	mustCLI(t, "init", "--schema", writeSchema(t), url)
	proxy := testenv.NewProxy(t, endpoint)
	base, cmd, wait := startServeEnv(t, []string{"AWS_ENDPOINT_URL_S3=" + proxy.URL}, "--store", url)
	g := base + "/graphs/default"
	publish := func(r testenv.Request) bool {
		return r.Method == http.MethodPut && strings.Contains(r.Path, "/__manifest/branches/main/.v/")
	}
	mutate := func(name string) (int, string) {
		st, body, _ := raw(t, "POST", g+"/mutate", "", "application/json", fmt.Sprintf(`{"query":"mutation m() { insert Person { name: \"%s\" } }"}`, name))
		return st, body
	}
	noKeys := func(what, body string) {
		if strings.Contains(body, "__manifest") || strings.Contains(body, "/.v/") || strings.Contains(body, proxy.HostPort) {
			t.Fatalf("%s names a storage key or endpoint: %s", what, body)
		}
	}

	proxy.Arm(testenv.Rule{Match: publish, Times: 1 << 20, Status: 0})
	st, body := mutate("lost")
	if st != 500 || !strings.Contains(body, `"outcome_unknown"`) || !strings.Contains(body, `"check"`) {
		t.Fatalf("publish without an answer: %d %s, want 500 outcome_unknown", st, body)
	}
	noKeys("the 500", body)
	proxy.Reset()

	proxy.Arm(testenv.Rule{Match: publish, Times: 1 << 20, Status: http.StatusForbidden,
		Header: http.Header{"Content-Type": {"application/xml"}}, Body: `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>`})
	st, body = mutate("refused")
	if st != 503 || !strings.Contains(body, `"recovery_required"`) || !strings.Contains(body, `"operation_id"`) {
		t.Fatalf("publish refused after the table commits: %d %s, want 503 recovery_required", st, body)
	}
	noKeys("the 503", body)
	proxy.Reset()

	st, body, _ = raw(t, "GET", g+"/branches", "", "", "")
	if st != 200 {
		t.Fatalf("the server stopped serving after the failures: %d %s", st, body)
	}
	ok := false
	for i := 0; i < 3 && !ok; i++ { // the first write may heal the failed ones first
		st, body = mutate("after")
		ok = st == 200
	}
	if !ok {
		t.Fatalf("no write succeeded once the store behaved: %d %s", st, body)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := wait(); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}
	got := personNames(t, url)
	if got["after"] != 1 || got["lost"] > 1 || got["refused"] > 1 {
		t.Fatalf("people after the failures: %v", got)
	}
}
