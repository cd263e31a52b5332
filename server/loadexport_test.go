package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/api"
)

// TestServerLoadJSON: POST load takes the batch inline, as NDJSON text in
// data or as line objects in records, as one commit per request; exactly
// one of them; from creates a missing branch; the load limit applies.
func TestServerLoadJSON(t *testing.T) {
	g := testGraph(t)
	tokens, secrets := tokensFor(t, "alice")
	_, base := newTestServer(t, g, Config{Tokens: tokens, Limits: Limits{LoadBytes: 4096}})
	c := &client{t: t, base: base, token: secrets["alice"]}
	g0 := "/graphs/default"

	st, m := c.json("POST", g0+"/load", `{"data":"{\"type\":\"Person\",\"data\":{\"name\":\"ada\",\"age\":36}}\n{\"type\":\"Person\",\"data\":{\"name\":\"bo\"}}\n","mode":"append"}`)
	mustStatus(t, "load data", st, 200, m)
	if m["nodes"] != 2.0 || m["mode"] != "append" || m["branch"] != "main" || m["actor_id"] != "alice" || m["commit"] == nil {
		t.Fatalf("load data: %v", m)
	}
	st, m = c.json("POST", g0+"/load", `{"records":[{"type":"Person","data":{"name":"cy","age":9007199254740993}}],"branch":"topic","from":"main"}`)
	// age is an I32: out of range. The refused load leaves no branch: the
	// next load creates it again (branch_created).
	mustStatus(t, "load records into a new branch", st, 400, m)
	st, m = c.json("POST", g0+"/load", `{"records":[{"type":"Person","data":{"name":"cy","age":7}},{"type":"Person","data":{"name":"ada","age":37}}],"branch":"topic","from":"main"}`)
	mustStatus(t, "load records into a new branch", st, 200, m)
	if m["branch_created"] != true || m["base_branch"] != "main" || m["mode"] != "merge" || m["nodes"] != 2.0 {
		t.Fatalf("load records: %v", m)
	}
	st, m = c.json("POST", g0+"/query", `{"query":"query q() { match { $p: Person } return { $p.name, $p.age } order { $p.name asc } }","branch":"topic"}`)
	mustStatus(t, "query topic", st, 200, m)
	if fmt.Sprint(m["rows"]) != "[map[p.age:37 p.name:ada] map[p.age:<nil> p.name:bo] map[p.age:7 p.name:cy]]" {
		t.Fatalf("rows on topic: %v", m["rows"])
	}
	for _, bad := range []string{`{}`, `{"data":"x","records":[{}]}`, `{"data":"{\"type\":\"Nope\",\"data\":{}}\n"}`, `{"data":"x","mode":"sideways"}`} {
		st, m = c.json("POST", g0+"/load", bad)
		mustStatus(t, "bad load "+bad, st, 400, m)
	}
	st, m = c.json("POST", g0+"/load", `{"data":"x","branch":"nope"}`)
	mustStatus(t, "load into a missing branch without from", st, 404, m)
	st, m, _ = c.do("POST", g0+"/load", "application/x-ndjson", `{"type":"Person","data":{"name":"x"}}`)
	mustStatus(t, "load as NDJSON", st, 415, m)
	st, m = c.json("POST", g0+"/load", `{"data":"`+strings.Repeat(`{\"type\":\"Person\",\"data\":{\"name\":\"x\"}}\n`, 200)+`"}`)
	mustStatus(t, "load over the limit", st, 413, m)
	if rl := m["resource_limit"].(map[string]any); rl["resource"] != "graph_batch_request_bytes" || rl["limit"] != 4096.0 {
		t.Fatalf("413: %v", m)
	}
	cs, err := g.Commits(t.Context(), "main", 0)
	if err != nil || len(cs) != 2 {
		t.Fatalf("main commits: %d, %v (init + one load; refused loads write nothing)", len(cs), err)
	}
}

// getExport fetches an export and returns status, headers, trailer and
// lines.
func getExport(t *testing.T, base, path, token string) (int, http.Header, http.Header, []string) {
	t.Helper()
	req, _ := http.NewRequest("GET", base+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var lines []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header, resp.Trailer, lines
}

// TestServerExport: GET export streams the branch as the load envelope
// (NDJSON, nodes then edges, rows in id order) with the commit read in a
// header and the line count in a trailer; type filters, snapshots,
// unknown types and branches; and the export loads back into an empty
// graph as the same rows.
func TestServerExport(t *testing.T) {
	g := testGraph(t)
	_, base := newTestServer(t, g, Config{})
	c := &client{t: t, base: base}
	g0 := "/graphs/default"
	st, m, _ := c.do("POST", g0+"/load/ndjson?mode=append", "application/x-ndjson",
		`{"type":"Person","data":{"name":"bo","age":20}}`+"\n"+`{"type":"Person","data":{"name":"ada","age":36}}`+"\n")
	mustStatus(t, "load", st, 200, m)
	first := m["commit"].(map[string]any)["graph_commit_id"].(string)
	st, m = c.json("POST", g0+"/mutate", `{"query":"mutation m() { insert Person { name: \"cy\" } }"}`)
	mustStatus(t, "mutate", st, 200, m)
	head := m["commit"].(map[string]any)["graph_commit_id"].(string)

	st, h, tr, lines := getExport(t, base, g0+"/export", "")
	if st != 200 || h.Get("Content-Type") != "application/x-ndjson" || h.Get(api.HeaderGraphCommit) != head {
		t.Fatalf("export: %d %v", st, h)
	}
	want := []string{
		`{"type":"Person","data":{"age":36,"id":"ada","name":"ada"}}`,
		`{"type":"Person","data":{"age":20,"id":"bo","name":"bo"}}`,
		`{"type":"Person","data":{"age":null,"id":"cy","name":"cy"}}`,
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") || tr.Get(api.TrailerExportEntities) != "3" {
		t.Fatalf("export lines:\n%s\ntrailer %v", strings.Join(lines, "\n"), tr)
	}
	st, h, tr, lines = getExport(t, base, g0+"/export?snapshot="+first+"&type=Person", "")
	if st != 200 || h.Get(api.HeaderGraphCommit) != first || len(lines) != 2 || tr.Get(api.TrailerExportEntities) != "2" {
		t.Fatalf("snapshot export: %d %v %v", st, lines, tr)
	}
	for _, tc := range []struct {
		path   string
		status int
	}{
		{g0 + "/export?type=Nope", 400},
		{g0 + "/export?branch=nope", 404},
		{g0 + "/export?branch=main&snapshot=" + first, 400},
	} {
		st, m := c.json("GET", tc.path, "")
		mustStatus(t, tc.path, st, tc.status, m)
	}

	// The export is the input of load: into an empty graph it gives the
	// same rows.
	g2 := testGraph(t)
	_, base2 := newTestServer(t, g2, Config{})
	c2 := &client{t: t, base: base2}
	_, _, _, lines = getExport(t, base, g0+"/export", "")
	body, _ := json.Marshal(map[string]any{"data": strings.Join(lines, "\n") + "\n", "mode": "append"})
	st, m = c2.json("POST", g0+"/load", string(body))
	mustStatus(t, "load the export", st, 200, m)
	_, _, _, again := getExport(t, base2, g0+"/export", "")
	if strings.Join(again, "\n") != strings.Join(want, "\n") {
		t.Fatalf("round trip:\n%s", strings.Join(again, "\n"))
	}
}

// TestServerExportPolicy: export is its own action: a reader without it
// gets 403 before any byte.
func TestServerExportPolicy(t *testing.T) {
	g := testGraph(t)
	tokens, secrets := tokensFor(t, "alice", "ops")
	_, base := newTestServer(t, g, Config{Tokens: tokens, Policy: parseTestPolicy(t)})
	st, h, _, lines := getExport(t, base, "/graphs/default/export", secrets["alice"])
	if st != 403 || h.Get("Content-Type") != "application/json" || len(lines) != 1 || !strings.Contains(lines[0], `"forbidden"`) {
		t.Fatalf("alice export: %d %v", st, lines)
	}
	if st, _, tr, _ := getExport(t, base, "/graphs/default/export", secrets["ops"]); st != 200 || tr.Get(api.TrailerExportEntities) != "0" {
		t.Fatalf("ops export: %d %v", st, tr)
	}
}
