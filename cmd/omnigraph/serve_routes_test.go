package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

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
// conditional mutate (412), a merge conflict (409), the MCP endpoint,
// and admission (429 with Retry-After, see admission429). Injected
// 500/503 are in TestServeProcessInjectedFailuresS3 and
// TestServeProcessStopCauses.
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
	base, cmd, wait := startServe(t, "--store", url, "--tokens", tokens, "--policy", policy, "--max-body-bytes", "4096", "--max-writes-per-actor", "2")
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
	admission429(t, g, alice)

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
// outcome_unknown after the re-issues, and the server keeps serving (a
// write succeeds once the store behaves); a publish the store refuses
// after the table commits is 503 recovery_required with the operation id,
// and the server stops (exit 2, seed 001: RecoveryRequired). The
// restarted server's read-write open resolves the intent (its leased lock
// was released, so it starts at once), a write lands, and no row is
// stored twice.
func TestServeProcessInjectedFailuresS3(t *testing.T) {
	url := testenv.S3(t)
	endpoint := os.Getenv("AWS_ENDPOINT_URL_S3")
	if endpoint == "" {
		endpoint = os.Getenv("AWS_ENDPOINT_URL")
	}
	mustCLI(t, "init", "--schema", writeSchema(t), url)
	proxy := testenv.NewProxy(t, endpoint)
	env := []string{"AWS_ENDPOINT_URL_S3=" + proxy.URL}
	base, _, wait := startServeEnv(t, env, "--store", url)
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
	st, body, _ = raw(t, "GET", g+"/branches", "", "", "")
	if st != 200 {
		t.Fatalf("the server stopped serving after an unknown outcome: %d %s", st, body)
	}
	// The first write heals the lost one first (rolls it forward); a 409
	// (the head moved under it) is retried, anything else fails.
	for i := 0; i < 3; i++ {
		if st, body = mutate("after"); st != http.StatusConflict {
			break
		}
	}
	if st != 200 {
		t.Fatalf("a write once the store behaved: %d %s", st, body)
	}

	proxy.Arm(testenv.Rule{Match: publish, Times: 1 << 20, Status: http.StatusForbidden,
		Header: http.Header{"Content-Type": {"application/xml"}}, Body: `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>`})
	st, body = mutate("refused")
	if st != 503 || !strings.Contains(body, `"recovery_required"`) || !strings.Contains(body, `"operation_id"`) {
		t.Fatalf("publish refused after the table commits: %d %s, want 503 recovery_required", st, body)
	}
	noKeys("the 503", body)
	if code := wait(); code != exitServerStopped {
		t.Fatalf("after recovery_required the server exited %d, want %d", code, exitServerStopped)
	}
	proxy.Reset()

	base, cmd, wait := startServeEnv(t, env, "--store", url)
	g = base + "/graphs/default"
	if st, body = mutate("restarted"); st != 200 {
		t.Fatalf("a write after the restart: %d %s", st, body)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := wait(); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}
	got := personNames(t, url)
	if got["after"] != 1 || got["restarted"] != 1 || got["lost"] > 1 || got["refused"] > 1 {
		t.Fatalf("people after the failures: %v", got)
	}
	if n := pendingRecoveries(t, url); n != 0 {
		t.Fatalf("%d recovery intents pending after the restart", n)
	}
}

// heldLoad is a load/ndjson in flight whose body the server is still
// reading.
type heldLoad struct {
	pw   *io.PipeWriter
	rest string
	done chan heldAnswer
}

type heldAnswer struct {
	status int
	body   string
	err    error
}

// holdLoad starts a load/ndjson of body and returns once the server holds
// it in flight, with no sleep: the request says Expect: 100-continue and
// its body is a pipe the test has not written yet. net/http answers 100
// Continue on the handler's first read of the body, and the load reads it
// only after the policy check and its admission slot, so once the client
// saw the 100 the write holds its slot until finish sends the body. A
// write refused before the engine (429, 403) answers without a 100.
func holdLoad(t *testing.T, url, token, body string) *heldLoad {
	t.Helper()
	pr, pw := io.Pipe()
	got100 := make(chan struct{})
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{Got100Continue: func() { close(got100) }})
	req, _ := http.NewRequestWithContext(ctx, "POST", url, pr)
	req.Header.Set("Content-Type", "application/x-ndjson")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Expect", "100-continue")
	// A transport of its own: it waits for the 100 before it sends the
	// body (the default transport would send it after one second).
	tr := &http.Transport{ExpectContinueTimeout: time.Hour}
	t.Cleanup(tr.CloseIdleConnections)
	h := &heldLoad{pw: pw, rest: body, done: make(chan heldAnswer, 1)}
	go func() {
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			h.done <- heldAnswer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		h.done <- heldAnswer{status: resp.StatusCode, body: string(b), err: err}
	}()
	select {
	case <-got100:
		return h
	case a := <-h.done:
		t.Fatalf("the held load was answered before the server read its body: %d %s %v", a.status, a.body, a.err)
	case <-time.After(time.Minute):
		t.Fatal("the server never read the held load's body")
	}
	return nil
}

// finish sends the held load's body and returns its answer.
func (h *heldLoad) finish(t *testing.T) (int, string) {
	t.Helper()
	if _, err := io.WriteString(h.pw, h.rest); err != nil {
		t.Fatal(err)
	}
	h.pw.Close()
	a := <-h.done
	if a.err != nil {
		t.Fatal(a.err)
	}
	return a.status, a.body
}

// admission429 pins per-actor admission through the real binary
// (--max-writes-per-actor 2): with two of alice's loads held in flight, her
// third write is 429 too_many_requests with Retry-After and the error
// envelope, on a route and as an MCP error result, and writes nothing;
// the held loads then land, each exactly once (one commit each, its rows
// once), and alice is admitted again.
func admission429(t *testing.T, g, alice string) {
	t.Helper()
	before := commitIDs(t, g, alice)
	h1 := holdLoad(t, g+"/load/ndjson?mode=append", alice, `{"type":"Company","data":{"name":"held1"}}`+"\n")
	h2 := holdLoad(t, g+"/load/ndjson?mode=append", alice, `{"type":"Company","data":{"name":"held2"}}`+"\n")
	st, body, hdr := raw(t, "POST", g+"/mutate", alice, "application/json", `{"query":"mutation m() { insert Company { name: \"refused\" } }"}`)
	if st != 429 || hdr.Get("Retry-After") != "1" {
		t.Fatalf("alice's third write: %d, Retry-After %q: %s", st, hdr.Get("Retry-After"), body)
	}
	var env map[string]any
	if err := json.Unmarshal([]byte(body), &env); err != nil || env["code"] != "too_many_requests" || !strings.Contains(fmt.Sprint(env["error"]), `"alice"`) {
		t.Fatalf("429 envelope: %s", body)
	}
	st, body, _ = raw(t, "POST", g+"/load/ndjson?mode=append", alice, "application/x-ndjson", `{"type":"Company","data":{"name":"refused"}}`+"\n")
	if st != 429 {
		t.Fatalf("alice's third write as a load: %d %s", st, body)
	}
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"graph_mutate","arguments":{"query":"mutation m() { insert Company { name: \"refused\" } }"}}}`
	res := mcpCall(t, g+"/mcp", alice, call)
	if te, _ := res["structuredContent"].(map[string]any); res["isError"] != true || te["status"] != 429.0 || te["code"] != "too_many_requests" || te["retry_after_seconds"] != 1.0 {
		t.Fatalf("alice's third write over MCP: %v", res)
	}
	var landed []string
	for i, h := range []*heldLoad{h1, h2} {
		st, body := h.finish(t)
		var out struct {
			Commit struct {
				ID string `json:"graph_commit_id"`
			} `json:"commit"`
			Types map[string]int `json:"types"`
		}
		if err := json.Unmarshal([]byte(body), &out); st != 200 || err != nil || out.Commit.ID == "" || out.Types["Company"] != 1 {
			t.Fatalf("held load %d: %d %s", i+1, st, body)
		}
		landed = append(landed, out.Commit.ID)
	}
	after := commitIDs(t, g, alice)
	if len(after) != len(before)+2 {
		t.Fatalf("commits: %d before the held loads, %d after; want 2 more (the 429s wrote nothing)", len(before), len(after))
	}
	for _, id := range landed {
		if n := slices.Index(after, id); n < 0 || slices.Index(after[n+1:], id) >= 0 {
			t.Fatalf("held load commit %s appears %d times in %v", id, strings.Count(strings.Join(after, " "), id), after)
		}
	}
	st, body, _ = raw(t, "POST", g+"/query", alice, "application/json", `{"query":"query q() { match { $c: Company } return { $c.name } order { $c.name } }"}`)
	if st != 200 || !strings.Contains(body, `"rows":[{"c.name":"acme"},{"c.name":"held1"},{"c.name":"held2"}]`) {
		t.Fatalf("companies after the held loads: %d %s", st, body)
	}
	// Both slots are free again.
	st, body, _ = raw(t, "POST", g+"/mutate", alice, "application/json", `{"query":"mutation m() { delete Company where name = \"held2\" }"}`)
	if st != 200 {
		t.Fatalf("alice after her writes finished: %d %s", st, body)
	}
}

// commitIDs lists main's commit ids, newest first.
func commitIDs(t *testing.T, g, token string) []string {
	t.Helper()
	st, body, _ := raw(t, "GET", g+"/commits", token, "", "")
	var out struct {
		Commits []struct {
			ID string `json:"graph_commit_id"`
		} `json:"commits"`
	}
	if err := json.Unmarshal([]byte(body), &out); st != 200 || err != nil {
		t.Fatalf("commits: %d %s", st, body)
	}
	ids := make([]string, len(out.Commits))
	for i, c := range out.Commits {
		ids[i] = c.ID
	}
	return ids
}
