package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestServeConsole: the real binary serves the web console at /ui/ by
// default and not with --no-ui (nor with "no_ui": true in --config); the
// console's status route reports the storage kind and the serve process
// itself as the writer lock's holder.
func TestServeConsole(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "graph")
	mustCLI(t, "init", "--schema", writeSchema(t), dir)
	get := func(url string) (int, string, string) {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
	}

	base, cmd, wait := startServe(t, "--store", dir)
	if st, ct, body := get(base + "/ui/default/query"); st != 200 || !strings.HasPrefix(ct, "text/html") || !strings.Contains(body, "js/main.js") {
		t.Fatalf("/ui/ on a default serve: %d %s", st, ct)
	}
	st, m := httpJSON(t, "GET", base+"/graphs/default/status", "", "")
	lock, _ := m["lock"].(map[string]any)
	if st != 200 || m["storage_kind"] != "file" || lock["held"] != true || lock["operation"] != "serve" || lock["pid"] != float64(cmd.Process.Pid) {
		t.Fatalf("status: %d %v", st, m)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if code := wait(); code != 0 {
		t.Fatalf("serve exited %d", code)
	}

	base, cmd, wait = startServe(t, "--store", dir, "--no-ui")
	if st, ct, _ := get(base + "/ui/"); st != 404 || ct != "application/json" {
		t.Fatalf("/ui/ with --no-ui: %d %s", st, ct)
	}
	if st, _ := httpJSON(t, "GET", base+"/graphs/default/status", "", ""); st != 200 {
		t.Fatalf("the console's routes are API routes, served with --no-ui too: %d", st)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	wait()

	cfg := filepath.Join(t.TempDir(), "serve.json")
	if err := os.WriteFile(cfg, []byte(`{"version":1,"no_ui":true,"graphs":{"g1":"`+dir+`"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	base, cmd, wait = startServe(t, "--config", cfg)
	if st, _, _ := get(base + "/ui/"); st != 404 {
		t.Fatalf(`/ui/ with "no_ui": true: %d`, st)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	wait()
}
