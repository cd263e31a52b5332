package main

import (
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// freeAddr is a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func getText(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestServeMetricsProcess: the real binary serves GET /metrics on its
// main listener behind the token, and without one on --metrics-listen,
// which serves nothing else; the numbers include the storage wrapper's,
// the writer lock's and the process collectors.
func TestServeMetricsProcess(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "graph")
	mustCLI(t, "init", "--schema", writeSchema(t), dir)
	tokens := filepath.Join(t.TempDir(), "tokens.json")
	secret := strings.TrimSpace(mustCLI(t, "token", "add", "alice", "--tokens", tokens))
	maddr := freeAddr(t)
	base, cmd, wait := startServe(t, "--store", dir, "--tokens", tokens, "--metrics-listen", maddr)
	if st, m := httpJSON(t, "POST", base+"/graphs/default/mutate", secret, `{"query":"mutation m() { insert Person { name: \"ada\" } }"}`); st != 200 {
		t.Fatalf("mutate: %d %v", st, m)
	}
	if st, _ := getText(t, base+"/metrics", ""); st != 401 {
		t.Fatalf("main listener /metrics without a token: %d, want 401", st)
	}
	st, body := getText(t, base+"/metrics", secret)
	if st != 200 {
		t.Fatalf("main listener /metrics: %d", st)
	}
	for _, want := range []string{
		`omnigraph_http_requests_total{code="200",method="POST",route="mutate"} 1`,
		`omnigraph_commits_published_total 1`,
		`omnigraph_storage_requests_total{op="put_if_absent",outcome="ok"}`,
		`omnigraph_storage_request_duration_seconds_bucket{op="get",outcome="ok"`,
		`omnigraph_cluster_lock_held{graph="default"} 1`,
		`process_resident_memory_bytes`,
		`go_goroutines`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(body, dir) {
		t.Errorf("/metrics names the storage path")
	}
	if st, body := getText(t, "http://"+maddr+"/metrics", ""); st != 200 || !strings.Contains(body, "omnigraph_http_requests_total") {
		t.Fatalf("--metrics-listen /metrics: %d", st)
	}
	if st, _ := getText(t, "http://"+maddr+"/graphs/default/branches", secret); st != 404 {
		t.Fatalf("--metrics-listen serves a graph route: %d, want 404", st)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := wait(); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}
}

// TestServeMetricsListenOpenModeLoopback: open mode's loopback rule holds
// for the metrics listener too (usage, before the lock is taken).
func TestServeMetricsListenOpenModeLoopback(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "graph")
	mustCLI(t, "init", "--schema", writeSchema(t), dir)
	code, _, errs := cli(t, "serve", "--store", dir, "--metrics-listen", "0.0.0.0:0")
	if code != exitUsage || !strings.Contains(errs, "loopback") {
		t.Fatalf("open mode metrics on 0.0.0.0: exit %d, %s", code, errs)
	}
	if st := lockStatus(t, dir); st.Held {
		t.Fatalf("a refused serve must not take the lock: %+v", st)
	}
}
