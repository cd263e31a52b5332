package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/internal/testenv"
)

// startServe runs 'omnigraph serve' as its own OS process (the test binary
// re-exec'd as the CLI) and returns its base URL once it printed
// OMNIGRAPH_LISTEN_ADDR, and a wait function for its exit code.
func startServe(t *testing.T, args ...string) (string, *exec.Cmd, func() int) {
	t.Helper()
	return startServeEnv(t, nil, args...)
}

// startServeEnv is startServe with extra environment for the child.
func startServeEnv(t *testing.T, env []string, args ...string) (string, *exec.Cmd, func() int) {
	t.Helper()
	base, cmd, wait, code, stderr := tryServe(t, env, args...)
	if base == "" {
		t.Fatalf("serve exited %d before serving; stderr:\n%s", code, stderr)
	}
	return base, cmd, wait
}

// tryServe starts 'omnigraph serve' and returns its base URL once it
// serves, or, when it exits first, an empty URL, its exit code and stderr.
func tryServe(t *testing.T, env []string, args ...string) (base string, cmd *exec.Cmd, wait func() int, code int, stderr string) {
	t.Helper()
	cmd = exec.Command(os.Args[0], append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(append(os.Environ(), cliChildEnv+"=1"), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan int, 1)
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "OMNIGRAPH_LISTEN_ADDR="); ok {
				addr <- a
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	go func() {
		err := cmd.Wait()
		var ee *exec.ExitError
		switch {
		case err == nil:
			exited <- 0
		case errors.As(err, &ee):
			exited <- ee.ExitCode()
		default:
			exited <- -1
		}
	}()
	wait = func() int {
		select {
		case code := <-exited:
			return code
		case <-time.After(time.Minute):
			cmd.Process.Kill()
			t.Fatalf("the server did not exit; stderr:\n%s", errb.String())
			return -1
		}
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	select {
	case a := <-addr:
		return "http://" + a, cmd, wait, 0, ""
	case code := <-exited:
		return "", cmd, nil, code, errb.String()
	case <-time.After(time.Minute):
		t.Fatalf("serve did not start; stderr:\n%s", errb.String())
	}
	return "", nil, nil, 0, ""
}

func httpJSON(t *testing.T, method, url, token, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return resp.StatusCode, m
}

// TestServeProcess runs the real binary: token add writes only a hash;
// serve needs the token (401 without it), holds the cluster lock while it
// serves, writes with the token's actor, and on SIGTERM drains, releases
// the lock and exits 0.
func TestServeProcess(t *testing.T) {
	runServeProcess(t, filepath.Join(t.TempDir(), "graph"))
}

// TestServeProcessCloud is TestServeProcess on the S3 emulator, where the
// server holds a leased lock.
func TestServeProcessCloud(t *testing.T) {
	t.Run("s3", func(t *testing.T) { runServeProcess(t, testenv.S3(t)) })
}

func runServeProcess(t *testing.T, url string) {
	mustCLI(t, "init", "--schema", writeSchema(t), url)
	tokens := filepath.Join(t.TempDir(), "tokens.json")
	secret := strings.TrimSpace(mustCLI(t, "token", "add", "alice", "--tokens", tokens))
	raw, err := os.ReadFile(tokens)
	if err != nil {
		t.Fatal(err)
	}
	if len(secret) < 40 || strings.Contains(string(raw), secret) || !strings.Contains(string(raw), `"alice"`) {
		t.Fatalf("tokens file must hold the actor and a hash, never the secret %q:\n%s", secret, raw)
	}
	base, cmd, wait := startServe(t, "--store", url, "--tokens", tokens)
	if st := lockStatus(t, url); !st.Held || st.Operation != "serve" {
		t.Fatalf("a serving server holds the lock: %+v", st)
	}
	if st, m := httpJSON(t, "GET", base+"/graphs/default/branches", "", ""); st != 401 {
		t.Fatalf("no token: %d %v", st, m)
	}
	if st, m := httpJSON(t, "GET", base+"/graphs/default/branches", "wrong", ""); st != 401 {
		t.Fatalf("wrong token: %d %v", st, m)
	}
	st, m := httpJSON(t, "POST", base+"/graphs/default/mutate", secret, `{"query":"mutation m() { insert Person { name: \"ada\" } }"}`)
	if st != 200 || m["actor_id"] != "alice" {
		t.Fatalf("mutate: %d %v", st, m)
	}
	// A CLI writer is refused while the server holds the lock.
	if code, _, _ := cli(t, "mutate", "-e", `insert Person { name: "bo" }`, "--store", url); code != exitLockHeld {
		t.Fatalf("CLI write while serving: exit %d, want %d", code, exitLockHeld)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := wait(); code != 0 {
		t.Fatalf("SIGTERM: exit %d, want 0", code)
	}
	if st := lockStatus(t, url); st.Held {
		t.Fatalf("the lock must be released after SIGTERM: %+v", st)
	}
	if got := personNames(t, url); got["ada"] != 1 || len(got) != 1 {
		t.Fatalf("rows after the server stopped: %v", got)
	}
}

// TestServeOpenModeLoopbackOnly: without a tokens file serve refuses a
// non-loopback address (usage, exit 2) before touching the store.
func TestServeOpenModeLoopbackOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "graph")
	mustCLI(t, "init", "--schema", writeSchema(t), dir)
	code, _, errs := cli(t, "serve", "--store", dir, "--listen", "0.0.0.0:0")
	if code != exitUsage || !strings.Contains(errs, "loopback") {
		t.Fatalf("open mode on 0.0.0.0: exit %d, %s", code, errs)
	}
	if st := lockStatus(t, dir); st.Held {
		t.Fatalf("a refused serve must not take the lock: %+v", st)
	}
}

// TestServePolicyProcess: serve --policy evaluates the Cedar file on
// every route: a denied write is 403 and writes nothing, an allowed one
// lands; a policy that does not parse refuses the start (usage) before
// the lock is taken.
func TestServePolicyProcess(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "graph")
	mustCLI(t, "init", "--schema", writeSchema(t), dir)
	tokens := filepath.Join(t.TempDir(), "tokens.json")
	alice := strings.TrimSpace(mustCLI(t, "token", "add", "alice", "--tokens", tokens))
	rita := strings.TrimSpace(mustCLI(t, "token", "add", "rita", "--tokens", tokens))
	policy := filepath.Join(t.TempDir(), "policy.cedar")
	if err := os.WriteFile(policy, []byte(`
permit (principal, action == Omnigraph::Action::"read", resource);
permit (principal == Omnigraph::Actor::"alice", action, resource);
`), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad.cedar")
	if err := os.WriteFile(bad, []byte(`permit (principal, action, resource`), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := cli(t, "serve", "--store", dir, "--listen", "127.0.0.1:0", "--tokens", tokens, "--policy", bad); code != exitUsage || !strings.Contains(errs, "bad.cedar") {
		t.Fatalf("a bad policy: exit %d, %s", code, errs)
	}
	if st := lockStatus(t, dir); st.Held {
		t.Fatalf("a refused serve must not take the lock: %+v", st)
	}
	base, cmd, wait := startServe(t, "--store", dir, "--tokens", tokens, "--policy", policy)
	mut := `{"query":"mutation m() { insert Person { name: \"ada\" } }"}`
	if st, m := httpJSON(t, "POST", base+"/graphs/default/mutate", rita, mut); st != 403 || m["code"] != "forbidden" {
		t.Fatalf("rita mutate: %d %v", st, m)
	}
	if st, m := httpJSON(t, "GET", base+"/graphs/default/branches", rita, ""); st != 200 {
		t.Fatalf("rita branches: %d %v", st, m)
	}
	if st, m := httpJSON(t, "POST", base+"/graphs/default/mutate", alice, mut); st != 200 || m["actor_id"] != "alice" {
		t.Fatalf("alice mutate: %d %v", st, m)
	}
	// The MCP endpoint of the real binary meets the same policy.
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"graph_mutate","arguments":{"query":"mutation m() { insert Person { name: \"bo\" } }"}}}`
	if res := mcpCall(t, base+"/graphs/default/mcp", rita, call); res["isError"] != true || res["structuredContent"].(map[string]any)["status"] != 403.0 {
		t.Fatalf("rita graph_mutate over MCP: %v", res)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := wait(); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}
	if got := personNames(t, dir); got["ada"] != 1 || len(got) != 1 {
		t.Fatalf("rows: %v", got)
	}
}

// TestServeConfigProcess: serve --config serves several graphs from one
// process: each under its id, each with its own writer lock, writes
// landing only in their graph; tokens, policy and groups come from the
// file (paths relative to it), a flag beside it wins; SIGTERM releases
// every lock. A config the server cannot use refuses the start.
func TestServeConfigProcess(t *testing.T) {
	root := t.TempDir()
	dirA, dirB := filepath.Join(root, "a"), filepath.Join(root, "b")
	schema := writeSchema(t)
	mustCLI(t, "init", "--schema", schema, dirA)
	mustCLI(t, "init", "--schema", schema, dirB)
	tokens := filepath.Join(root, "tokens.json")
	alice := strings.TrimSpace(mustCLI(t, "token", "add", "alice", "--tokens", tokens))
	rita := strings.TrimSpace(mustCLI(t, "token", "add", "rita", "--tokens", tokens))
	if err := os.WriteFile(filepath.Join(root, "policy.cedar"), []byte(`
permit (principal, action == Omnigraph::Action::"read", resource);
permit (principal in Omnigraph::Group::"writers", action, resource);
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(root, "serve.json")
	if err := os.WriteFile(cfg, []byte(`{
  "version": 1,
  "listen": "127.0.0.1:1",
  "tokens": "tokens.json",
  "policy": "policy.cedar",
  "groups": {"writers": ["alice"]},
  "drain_timeout": "5s",
  "limits": {"max_writes_per_actor": 4},
  "graphs": {"people-a": "a", "people-b": "`+dirB+`"}
}`), 0o600); err != nil {
		t.Fatal(err)
	}
	// --listen (startServe's 127.0.0.1:0) wins over the file's.
	base, cmd, wait := startServe(t, "--config", cfg)
	for _, dir := range []string{dirA, dirB} {
		if st := lockStatus(t, dir); !st.Held || st.Operation != "serve" {
			t.Fatalf("%s: the server holds its lock: %+v", dir, st)
		}
	}
	if st, m := httpJSON(t, "GET", base+"/graphs", alice, ""); st != 200 || fmt.Sprint(m["graphs"]) != "[map[graph_id:people-a] map[graph_id:people-b]]" {
		t.Fatalf("graphs: %d %v", st, m)
	}
	mut := func(name string) string {
		return `{"query":"mutation m() { insert Person { name: \"` + name + `\" } }"}`
	}
	if st, m := httpJSON(t, "POST", base+"/graphs/people-a/mutate", alice, mut("ada")); st != 200 || m["actor_id"] != "alice" {
		t.Fatalf("mutate a: %d %v", st, m)
	}
	if st, m := httpJSON(t, "POST", base+"/graphs/people-b/mutate", alice, mut("bo")); st != 200 {
		t.Fatalf("mutate b: %d %v", st, m)
	}
	if st, m := httpJSON(t, "POST", base+"/graphs/people-b/mutate", rita, mut("cy")); st != 403 {
		t.Fatalf("rita mutate b: %d %v", st, m)
	}
	if st, m := httpJSON(t, "GET", base+"/graphs/default/branches", alice, ""); st != 404 {
		t.Fatalf("no default graph: %d %v", st, m)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := wait(); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}
	for _, dir := range []string{dirA, dirB} {
		if st := lockStatus(t, dir); st.Held {
			t.Fatalf("%s: the lock must be released: %+v", dir, st)
		}
	}
	if a, b := personNames(t, dirA), personNames(t, dirB); fmt.Sprint(a) != "map[ada:1]" || fmt.Sprint(b) != "map[bo:1]" {
		t.Fatalf("rows: a %v, b %v", a, b)
	}

	for _, tc := range []struct{ name, body, want string }{
		{"unknown field", `{"version":1,"graphs":{"a":"a"},"bogus":1}`, "bogus"},
		{"no graphs", `{"version":1,"graphs":{}}`, "no graphs"},
		{"bad id", `{"version":1,"graphs":{"bad_id":"a"}}`, "bad_id"},
		{"version", `{"version":2,"graphs":{"a":"a"}}`, "version 2"},
	} {
		p := filepath.Join(root, "bad.json")
		if err := os.WriteFile(p, []byte(tc.body), 0o600); err != nil {
			t.Fatal(err)
		}
		if code, _, errs := cli(t, "serve", "--config", p); code != exitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("%s: exit %d, %s", tc.name, code, errs)
		}
	}
	if code, _, errs := cli(t, "serve", "--config", cfg, "--store", dirA); code != exitUsage || !strings.Contains(errs, "--config") {
		t.Errorf("--config with --store: exit %d, %s", code, errs)
	}
}

// mcpCall posts one JSON-RPC message to an MCP endpoint and returns its
// result.
func mcpCall(t *testing.T, url, token, body string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m struct {
		Result map[string]any `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || resp.StatusCode != 200 {
		t.Fatalf("MCP %s: %d %v", url, resp.StatusCode, err)
	}
	return m.Result
}
