package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// feedOut is `changes poll --json`.
type feedOut struct {
	Branch string `json:"branch"`
	Blocks []struct {
		Cause struct {
			GraphCommitID string `json:"graph_commit_id"`
		} `json:"cause"`
		Changes []struct {
			Op    string         `json:"op"`
			Type  string         `json:"type_name"`
			ID    string         `json:"id"`
			After map[string]any `json:"after"`
		} `json:"changes"`
	} `json:"blocks"`
	Cursor   string `json:"cursor"`
	CaughtUp bool   `json:"caught_up"`
}

func pollJSON(t *testing.T, args ...string) feedOut {
	t.Helper()
	out := mustCLI(t, append([]string{"changes", "poll", "--json"}, args...)...)
	var f feedOut
	if err := json.Unmarshal([]byte(out), &f); err != nil || strings.Count(out, "\n") != 1 {
		t.Fatalf("changes poll %v: not one JSON object: %v\n%s", args, err, out)
	}
	return f
}

func (f feedOut) changes() []string {
	var out []string
	for _, b := range f.Blocks {
		for _, c := range b.Changes {
			out = append(out, c.Op+" "+c.Type+" "+c.ID)
		}
	}
	return out
}

// jsonErr runs an invocation that must fail with --json and returns its
// exit code and error code.
func jsonErr(t *testing.T, args ...string) (int, string) {
	t.Helper()
	asJSON := []string{"--json"}
	if args[0] == "query" {
		asJSON = []string{"--format", "json"}
	}
	code, out, errs := cli(t, append(args, asJSON...)...)
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if code == exitOK || out != "" || json.Unmarshal([]byte(errs), &e) != nil {
		t.Fatalf("omnigraph %s: exit %d, stdout %q, stderr %q", strings.Join(args, " "), code, out, errs)
	}
	return code, e.Error.Code
}

// sortedLines reads a file's lines, sorted.
func sortedLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	sort.Strings(lines)
	return lines
}

// TestCLIChangesPollAndBaseline: changes poll from the beginning and from
// its cursor (the blocks and their changes, text and JSON, a block split
// over pages still printed whole before the cursor), usage and rejected
// cursors, the gap after cleanup, and a baseline that rebuilds the graph
// and resumes the feed.
func TestCLIChangesPollAndBaseline(t *testing.T) {
	dir := t.TempDir()
	g := filepath.Join(dir, "g")
	mustCLI(t, "init", "--schema", "../../examples/social.pg", g)
	mustCLI(t, "load", "--data", "../../examples/social.jsonl", "--mode", "append", g)
	mustCLI(t, "mutate", "-e", `update Person set { age: 23 } where handle = "alice"`, "--no-auto-optimize", g)

	all := pollJSON(t, "--start", "beginning", g)
	if len(all.Blocks) != 2 || !all.CaughtUp || all.Cursor == "" || all.Branch != "main" {
		t.Fatalf("from the beginning: %d blocks, caught_up %v", len(all.Blocks), all.CaughtUp)
	}
	loaded := len(all.Blocks[0].Changes)
	if loaded < 20 || strings.Join(all.changes()[loaded:], ";") != "update Person alice" || all.Blocks[1].Changes[0].After["age"] != 23.0 {
		t.Fatalf("changes: %d loaded, then %v", loaded, all.changes()[loaded:])
	}
	text := mustCLI(t, "changes", "poll", "--start", "beginning", "--type", "Company", "--store", g)
	if !strings.Contains(text, `insert node Company "acme"`) || !strings.Contains(text, "2 blocks") || !strings.Contains(text, "cursor: ogc1.") || !strings.Contains(text, "caught up with") {
		t.Fatalf("text poll:\n%s", text)
	}
	if f := pollJSON(t, "--cursor", all.Cursor, g); len(f.Blocks) != 0 || !f.CaughtUp {
		t.Fatalf("at the head: %+v", f)
	}
	// A block split over pages: the CLI follows the page tokens and
	// prints the cursor after the last one.
	paged := pollJSON(t, "--start", "beginning", "--limit", "7", g)
	if strings.Join(paged.changes(), ";") != strings.Join(all.changes(), ";") || paged.Cursor != all.Cursor {
		t.Fatalf("7 changes a page: %d changes, cursor %v", len(paged.changes()), paged.Cursor == all.Cursor)
	}
	mustCLI(t, "mutate", "-e", `insert Person { handle: "zed", name: "Zed" }`, "--no-auto-optimize", g)
	if f := pollJSON(t, "--cursor", all.Cursor, g); strings.Join(f.changes(), ";") != "insert Person zed" || f.Cursor == all.Cursor {
		t.Fatalf("the next commit: %v", f.changes())
	}

	for _, args := range [][]string{
		{"changes", "poll", "--cursor", all.Cursor, "--start", "now", g},
		{"changes", "poll", "--start", "yesterday", g},
		{"changes", "poll", "--limit", "-1", g},
		{"changes", "baseline", g},
		{"changes", "baseline", "--out", filepath.Join(dir, "nope", "b.jsonl"), g},
		{"changes", "baseline", "--out", dir, g},
	} {
		if code, ec := jsonErr(t, args...); code != exitUsage || ec != "usage" {
			t.Errorf("omnigraph %s: exit %d %s, want usage", strings.Join(args, " "), code, ec)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "nope")); !os.IsNotExist(err) {
		t.Fatal("a refused baseline created a directory")
	}
	for _, args := range [][]string{
		{"changes", "poll", "--cursor", "ogc1.AAAA", g},
		{"changes", "poll", "--cursor", all.Cursor, "--type", "Person", g},
		{"changes", "poll", "--page-token", all.Cursor, g},
		{"changes", "poll", "--page-token", "ogp1.garbage", g},
	} {
		if code, ec := jsonErr(t, args...); code != exitError || ec != "change_cursor_rejected" {
			t.Errorf("omnigraph %s: exit %d %s, want change_cursor_rejected", strings.Join(args, " "), code, ec)
		}
	}
	if code, ec := jsonErr(t, "changes", "poll", "--type", "Nope", g); code != exitError || ec != "invalid_input" {
		t.Errorf("an unknown type: exit %d %s", code, ec)
	}

	// Cleanup removes what the old cursor needs: the gap.
	old := all.Cursor
	for i := 0; i < 3; i++ {
		mustCLI(t, "mutate", "-e", fmt.Sprintf(`update Person set { age: %d } where handle = "bob"`, 40+i), "--no-auto-optimize", g)
	}
	mustCLI(t, "cleanup", "--keep", "1", "--confirm", "--store", g)
	if code, ec := jsonErr(t, "changes", "poll", "--cursor", old, g); code != exitError || ec != "change_feed_gap" {
		t.Fatalf("poll past cleanup: exit %d %s", code, ec)
	}

	// The baseline: the head's entities, loadable, and the cursor after it.
	out := filepath.Join(dir, "baseline.jsonl")
	var res struct {
		Baseline struct {
			SnapshotCommitID string `json:"snapshot_commit_id"`
			ResumeCursor     string `json:"resume_cursor"`
		} `json:"baseline"`
		Entities int    `json:"entities"`
		Out      string `json:"out"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, "changes", "baseline", "--out", out, "--json", g)), &res); err != nil || res.Baseline.ResumeCursor == "" || res.Out != out {
		t.Fatalf("baseline: %+v %v", res, err)
	}
	export := filepath.Join(dir, "export.jsonl")
	mustCLI(t, "export", "--out", export, "--store", g)
	if a, b := sortedLines(t, out), sortedLines(t, export); strings.Join(a, "\n") != strings.Join(b, "\n") || len(a) != res.Entities {
		t.Fatalf("the baseline (%d lines, %d entities) is not the head's export (%d lines)", len(a), res.Entities, len(b))
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Fatalf("a temporary file was left: %s", e.Name())
		}
	}
	// Rebuilt from the baseline, a replica follows the feed from its cursor.
	replica := filepath.Join(dir, "replica")
	mustCLI(t, "init", "--schema", "../../examples/social.pg", replica)
	mustCLI(t, "load", "--data", out, "--mode", "overwrite", replica)
	mustCLI(t, "mutate", "-e", `update Person set { city: "Porto" } where handle = "carol"`, "--no-auto-optimize", g)
	f := pollJSON(t, "--cursor", res.Baseline.ResumeCursor, g)
	if len(f.Blocks) != 1 || strings.Join(f.changes(), ";") != "update Person carol" {
		t.Fatalf("after the baseline: %v", f.changes())
	}
	mustCLI(t, "mutate", "-e", `update Person set { city: "Porto" } where handle = "carol"`, "--no-auto-optimize", replica)
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	mustCLI(t, "export", "--out", a, "--store", g)
	mustCLI(t, "export", "--out", b, "--store", replica)
	if strings.Join(sortedLines(t, a), "\n") != strings.Join(sortedLines(t, b), "\n") {
		t.Fatal("the replica built from the baseline and the feed differs from the graph")
	}
}

// TestCLIFeedAndStoredQueriesThroughAServer: a real 'omnigraph serve'
// with --queries: changes poll and baseline print through --server what
// they print on the store; queries list, query NAME and mutate NAME run
// the stored queries; graphs list; a server whose stored queries do not
// check refuses to start, naming the problem.
func TestCLIFeedAndStoredQueriesThroughAServer(t *testing.T) {
	dir := t.TempDir()
	g := filepath.Join(dir, "g")
	mustCLI(t, "init", "--schema", "../../examples/social.pg", g)
	mustCLI(t, "load", "--data", "../../examples/social.jsonl", "--mode", "append", g)
	tokens := filepath.Join(dir, "tokens.json")
	token := strings.TrimSpace(mustCLI(t, "token", "add", "alice", "--tokens", tokens))
	t.Setenv(envToken, token)

	bad := filepath.Join(dir, "bad.gq")
	os.WriteFile(bad, []byte("query people() { match { $p: Nobody } return { $p.name } }\nquery graph_query() { match { $p: Person } return { $p.name } }\n"), 0o644)
	if base, _, _, code, stderr := tryServe(t, nil, "--store", g, "--tokens", tokens, "--queries", bad); base != "" || code != exitError ||
		!strings.Contains(stderr, "T1") || !strings.Contains(stderr, "SQ002") || !strings.Contains(stderr, "bad.gq") {
		t.Fatalf("serve with bad stored queries: exit %d, stderr:\n%s", code, stderr)
	}

	base, _, _ := startServe(t, "--store", g, "--tokens", tokens, "--queries", "../../examples/social.gq")
	if out := mustCLI(t, "graphs", "list", "--server", base); out != "default\n1 graphs\n" {
		t.Fatalf("graphs list: %q", out)
	}
	list := mustCLI(t, "queries", "list", "--server", base)
	if !strings.Contains(list, "query city_adults($city: String, $min: I32)") || !strings.Contains(list, "mutation hire(") || !strings.Contains(list, fmt.Sprintf("%d stored queries", socialDecls(t))) {
		t.Fatalf("queries list --server:\n%s", list)
	}
	offline := mustCLI(t, "queries", "list", "--queries", "../../examples/social.gq", "--schema", "../../examples/social.pg")
	if offline != list {
		t.Fatalf("the catalog offline:\n%s\nthrough the server:\n%s", offline, list)
	}
	stored := mustCLI(t, "query", "city_adults", "--params", `{"city":"Berlin","min":30}`, "--format", "json", "--server", base)
	direct := mustCLI(t, "query", "--query", "../../examples/social.gq", "city_adults", "--params", `{"city":"Berlin","min":30}`, "--format", "json", "--server", base)
	if stored != direct || !strings.Contains(stored, `"carol"`) {
		t.Fatalf("query NAME --server:\n%s\nvs --query:\n%s", stored, direct)
	}
	hire := `{"h":"quinn","name":"Quinn Park","age":34,"city":"Lisbon","company":"acme","title":"engineer","since":"2026-01-05"}`
	if out := mustCLI(t, "mutate", "hire", "--params", hire, "--server", base); !strings.Contains(out, "1 nodes and 1 edges affected") {
		t.Fatalf("mutate NAME --server: %s", out)
	}
	for _, c := range []struct {
		args []string
		exit int
		code string
	}{
		{[]string{"query", "hire", "--params", hire, "--server", base}, exitError, "bad_request"}, // a mutation through query
		{[]string{"mutate", "city_adults", "--server", base}, exitError, "bad_request"},
		{[]string{"query", "nope", "--server", base}, exitError, "not_found"},
		{[]string{"query", "city_adults", "--store", g}, exitUsage, "usage"},
		{[]string{"graphs", "list"}, exitUsage, "usage"},
	} {
		if code, ec := jsonErr(t, c.args...); code != c.exit || ec != c.code {
			t.Errorf("omnigraph %s: exit %d %s, want %d %s", strings.Join(c.args, " "), code, ec, c.exit, c.code)
		}
	}

	// The feed: the same output through the server as on the store.
	for _, args := range [][]string{
		{"--start", "beginning", "--json"},
		{"--start", "beginning", "--type", "Person", "--limit", "3"},
		{"--start", "beginning", "--op", "insert", "--kind", "edge", "--json", "--limit", "5"},
	} {
		local := mustCLI(t, append(append([]string{"changes", "poll"}, args...), "--store", g)...)
		remote := mustCLI(t, append(append([]string{"changes", "poll"}, args...), "--server", base)...)
		if local != remote {
			t.Fatalf("changes poll %v: --store and --server differ:\n%s\n---\n%s", args, local, remote)
		}
	}
	cur := pollJSON(t, "--start", "beginning", "--server", base).Cursor
	if code, ec := jsonErr(t, "changes", "poll", "--cursor", "ogc1.AAAA", "--server", base); code != exitError || ec != "change_cursor_rejected" {
		t.Fatalf("a bad cursor through the server: exit %d %s", code, ec)
	}
	lb, rb := filepath.Join(dir, "local.jsonl"), filepath.Join(dir, "remote.jsonl")
	lo := mustCLI(t, "changes", "baseline", "--out", lb, "--store", g)
	ro := mustCLI(t, "changes", "baseline", "--out", rb, "--server", base)
	if strings.Replace(lo, lb, rb, 1) != ro || !strings.Contains(lo, "cursor: ") {
		t.Fatalf("baseline --store:\n%s--server:\n%s", lo, ro)
	}
	la, _ := os.ReadFile(lb)
	ra, _ := os.ReadFile(rb)
	if string(la) != string(ra) || len(la) == 0 {
		t.Fatal("the baseline files differ")
	}
	sc := bufio.NewScanner(strings.NewReader(lo))
	sc.Scan()
	sc.Scan()
	resume := strings.TrimPrefix(sc.Text(), "cursor: ")
	if resume != cur {
		// No commit since the poll caught up: the same position.
		t.Fatalf("the baseline's cursor %s is not the caught-up poll's %s", resume, cur)
	}
	mustCLI(t, "mutate", "hire", "--params", strings.Replace(hire, "quinn", "remy", 1), "--server", base)
	if f := pollJSON(t, "--cursor", resume, "--server", base); strings.Join(f.changes(), ";") != "insert Person remy;insert WorksAt "+f.Blocks[0].Changes[1].ID {
		t.Fatalf("after the baseline: %v", f.changes())
	}
}

// socialDecls counts the queries and mutations examples/social.gq
// declares (the stored queries a server given it registers).
func socialDecls(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("../../examples/social.gq")
	if err != nil {
		t.Fatal(err)
	}
	return len(regexp.MustCompile(`(?m)^(query|mutation) `).FindAll(b, -1))
}

// TestServeConfigStoredQueries: "queries" per graph in --config (paths
// relative to the file) registers each graph's own stored queries; a
// graph entry without a store, an unknown member of it, or --queries
// beside --config is refused before anything starts.
func TestServeConfigStoredQueries(t *testing.T) {
	root := t.TempDir()
	for _, name := range []string{"a", "b"} {
		mustCLI(t, "init", "--schema", "../../examples/social.pg", filepath.Join(root, name))
	}
	q, err := os.ReadFile("../../examples/social.gq")
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(root, "queries"), 0o755)
	os.WriteFile(filepath.Join(root, "queries", "social.gq"), q, 0o644)
	os.WriteFile(filepath.Join(root, "queries", "README.txt"), []byte("not a query"), 0o644)
	cfg := filepath.Join(root, "serve.json")
	os.WriteFile(cfg, []byte(`{"version":1,"graphs":{"people":{"store":"a","queries":"queries"},"plain":"b"}}`), 0o600)
	base, _, _ := startServe(t, "--config", cfg)
	if out := mustCLI(t, "queries", "list", "--server", base, "--graph", "people", "--json"); strings.Count(out, `"tool_name"`) != socialDecls(t) {
		t.Fatalf("people's stored queries: %s", out)
	}
	if out := mustCLI(t, "queries", "list", "--server", base, "--graph", "plain"); out != "0 stored queries\n" {
		t.Fatalf("plain's stored queries: %q", out)
	}
	if out := mustCLI(t, "graphs", "list", "--server", base, "--json"); !strings.Contains(out, `"people"`) || !strings.Contains(out, `"plain"`) {
		t.Fatalf("graphs list: %s", out)
	}
	for _, tc := range []struct{ name, body, want string }{
		{"no store", `{"version":1,"graphs":{"a":{"queries":"q"}}}`, "no store"},
		{"unknown member", `{"version":1,"graphs":{"a":{"store":"a","query":"q"}}}`, "query"},
		{"missing queries", `{"version":1,"graphs":{"a":{"store":"a","queries":"nowhere"}}}`, "nowhere"},
	} {
		p := filepath.Join(root, "bad.json")
		os.WriteFile(p, []byte(tc.body), 0o600)
		if code, _, errs := cli(t, "serve", "--config", p); code != exitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("%s: exit %d, %s", tc.name, code, errs)
		}
	}
	if code, _, errs := cli(t, "serve", "--config", cfg, "--queries", "x.gq"); code != exitUsage || !strings.Contains(errs, "--queries") {
		t.Errorf("--queries with --config: exit %d, %s", code, errs)
	}
}
