// Package logtest captures the structured logs of a test and, when the test
// ends, scans every line for what a storage-failure log must never carry:
// storage keys and paths, credentials, and injected error text (which stands
// for an error's message).
package logtest

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// Forbidden is what no log line may contain: internal key prefixes, URL
// schemes and credential names, and the fault injector's error text.
var Forbidden = []string{
	"__manifest", "__cluster", "__recovery", "_schema/", ".v/", "lock.json",
	"s3://", "gs://", "az://", "file://", "/tmp/",
	"secret", "AKIA", "AccountKey", "sig=", "X-Amz-", "password",
	"fault: injected", "answer was lost", "connection reset",
}

// Capture is a concurrency-safe sink of JSON log lines.
type Capture struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (c *Capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.Write(p)
}

// Lines returns every captured line, decoded.
func (c *Capture) Lines(t testing.TB) []map[string]any {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(c.buf.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line is not JSON: %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// Messages returns the msg of every line, in order.
func (c *Capture) Messages(t testing.TB) []string {
	var out []string
	for _, l := range c.Lines(t) {
		s, _ := l["msg"].(string)
		out = append(out, s)
	}
	return out
}

// Count returns how many lines have msg.
func (c *Capture) Count(t testing.TB, msg string) int {
	n := 0
	for _, m := range c.Messages(t) {
		if m == msg {
			n++
		}
	}
	return n
}

// String returns the raw output.
func (c *Capture) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// New returns a debug-level JSON logger writing to a Capture. When the test
// ends every line is checked against Forbidden and extra (a temp dir, a
// key); a match fails the test.
func New(t testing.TB, extra ...string) (*slog.Logger, *Capture) {
	t.Helper()
	c := &Capture{}
	t.Cleanup(func() { Check(t, c.String(), extra...) })
	return slog.New(slog.NewJSONHandler(c, &slog.HandlerOptions{Level: slog.LevelDebug})), c
}

// Check fails t when out carries a forbidden string.
func Check(t testing.TB, out string, extra ...string) {
	t.Helper()
	low := strings.ToLower(out)
	for _, bad := range append(append([]string(nil), Forbidden...), extra...) {
		if bad != "" && strings.Contains(low, strings.ToLower(bad)) {
			t.Errorf("log output carries %q (a key, path, credential or error text):\n%s", bad, out)
		}
	}
}
