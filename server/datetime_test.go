package server

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend/local"
	"github.com/omnigraph-go/omnigraph/graph"
)

// millis is a DateTime as every output prints it: three fraction digits.
var millis = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

// TestDateTimeOutputIsMilliseconds (issue 26 item 13): one DateTime column
// holding a literal, now() and a loaded value with microseconds answers
// every row with exactly three fraction digits, in a query over HTTP and
// in the export, and the export loads back to the same rows.
func TestDateTimeOutputIsMilliseconds(t *testing.T) {
	ctx := context.Background()
	store, err := local.New(filepath.Join(t.TempDir(), "g"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := graph.Init(ctx, store, "node Event {\n  name: String @key\n  at: DateTime?\n}\n", graph.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	_, base := newTestServer(t, g, Config{})
	c := &client{t: t, base: base}
	for _, q := range []string{
		`mutation m() { insert Event { name: "literal", at: datetime("2025-01-10T08:30:00Z") } }`,
		`mutation m() { insert Event { name: "now", at: now() } }`,
	} {
		st, m := c.json("POST", "/graphs/default/mutate", jsonBody(map[string]any{"query": q}))
		mustStatus(t, q, st, 200, m)
	}
	st, m, _ := c.do("POST", "/graphs/default/load/ndjson?mode=merge", "application/x-ndjson",
		`{"type":"Event","data":{"name":"micros","at":"2025-01-10T08:30:00.123456Z"}}`+"\n"+`{"type":"Event","data":{"name":"millis","at":1736497800999}}`+"\n")
	mustStatus(t, "load", st, 200, m)
	st, m = c.json("POST", "/graphs/default/query", jsonBody(map[string]any{"query": `query q() { match { $e: Event } return { $e.name, $e.at } order { $e.name asc } }`}))
	mustStatus(t, "query", st, 200, m)
	rows, _ := m["rows"].([]any)
	if len(rows) != 4 {
		t.Fatalf("rows: %v", m)
	}
	for _, r := range rows {
		at, _ := r.(map[string]any)["e.at"].(string)
		if !millis.MatchString(at) {
			t.Errorf("row %v: DateTime %q does not have three fraction digits", r, at)
		}
	}
	if got := rows[0].(map[string]any)["e.at"]; got != "2025-01-10T08:30:00.000Z" {
		t.Errorf("literal: %v", got)
	}
	if got := rows[1].(map[string]any)["e.at"]; got != "2025-01-10T08:30:00.123Z" {
		t.Errorf("microseconds loaded: %v, want truncated to .123", got)
	}
	if got := rows[2].(map[string]any)["e.at"]; got != "2025-01-10T08:30:00.999Z" {
		t.Errorf("epoch milliseconds loaded: %v", got)
	}
	resp := send(t, base, "", "GET", sample{path: "/graphs/default/export"}, nil)
	if resp.status != 200 {
		t.Fatalf("export: %d %s", resp.status, resp.raw)
	}
	ats := regexp.MustCompile(`"at":"([^"]*)"`).FindAllStringSubmatch(resp.raw, -1)
	if len(ats) != 4 {
		t.Fatalf("export: %s", resp.raw)
	}
	for _, a := range ats {
		if !millis.MatchString(a[1]) {
			t.Errorf("export: DateTime %q does not have three fraction digits", a[1])
		}
	}
	// The export is the rebuild path: loaded back, every value is the same.
	st, m, _ = c.do("POST", "/graphs/default/load/ndjson?mode=merge", "application/x-ndjson", resp.raw)
	mustStatus(t, "load the export back", st, 200, m)
	again := send(t, base, "", "GET", sample{path: "/graphs/default/export"}, nil)
	if strings.TrimSpace(again.raw) != strings.TrimSpace(resp.raw) {
		t.Fatalf("the export changed after loading it back:\n%s\n%s", resp.raw, again.raw)
	}
}
