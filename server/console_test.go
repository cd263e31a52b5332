package server

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/backend/counter"
	"github.com/omnigraph-go/omnigraph/backend/local"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/load"
	"github.com/omnigraph-go/omnigraph/lang/gq"
	"github.com/omnigraph-go/omnigraph/server/ui"
)

const consoleSchema = `
node Person {
  handle: String @key
  name: String @index
  age: I32?
}
node City {
  slug: String @key
}
edge Knows: Person -> Person
edge LivesIn: Person -> City @card(0..1)
`

const consoleSeed = `{"type":"Person","data":{"handle":"ada","name":"Ada Lovelace","age":36}}
{"type":"Person","data":{"handle":"bob","name":"Bob Stone","age":20}}
{"type":"City","data":{"slug":"lis"}}
{"edge":"Knows","from":"ada","to":"bob"}
{"edge":"LivesIn","from":"ada","to":"lis"}
`

// consoleGraph is a loaded graph behind a request counter.
func consoleGraph(t *testing.T) (*graph.Graph, *counter.Counter) {
	t.Helper()
	ctx := context.Background()
	store, err := local.New(filepath.Join(t.TempDir(), "g"))
	if err != nil {
		t.Fatal(err)
	}
	cs := counter.New(store)
	g, err := graph.Init(ctx, cs, consoleSchema, graph.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := load.Run(ctx, g, strings.NewReader(consoleSeed), load.Options{Mode: load.Append}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g, cs
}

func consoleServer(t *testing.T, g *graph.Graph, cfg Config) string {
	t.Helper()
	cfg.Graphs = []Graph{{ID: "default", G: g, StorageKind: "file"}}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		hs.Close()
		s.Close()
	})
	return hs.URL
}

// TestConsoleRoutes drives the console's read routes over HTTP: what each
// answers on a graph with two branches, and that they match the engine.
func TestConsoleRoutes(t *testing.T) {
	g, _ := consoleGraph(t)
	tokens, secrets := tokensFor(t, "alice")
	base := consoleServer(t, g, Config{Tokens: tokens, Version: "v-test", AutoOptimize: true})
	c := &client{t: t, base: base, token: secrets["alice"]}
	g0 := "/graphs/default"
	first := g0 + "/commits?branch=main"
	_, m := c.json("GET", first, "")
	seedCommit := m["commits"].([]any)[0].(map[string]any)["graph_commit_id"].(string)

	// status
	st, m := c.json("GET", g0+"/status", "")
	mustStatus(t, "status", st, 200, m)
	if m["server_version"] != "v-test" || m["storage_kind"] != "file" || m["actor"] != "alice" || m["mode"] != "read-write" ||
		m["auth"] != true || m["branches"] != 1.0 || m["main_head"].(map[string]any)["graph_commit_id"] != seedCommit {
		t.Fatalf("status: %v", m)
	}
	if rc := m["recovery"].(map[string]any); rc["state"] != "clean" || rc["pending"] != 0.0 {
		t.Fatalf("recovery: %v", rc)
	}
	if ao := m["auto_optimize"].(map[string]any); ao["enabled"] != true {
		t.Fatalf("auto_optimize: %v", ao)
	}
	if lk := m["lock"].(map[string]any); lk["held"] != false {
		t.Fatalf("lock (no process took it): %v", lk)
	}
	if fmt.Sprint(m["allowed_actions"]) != "[read change load export branch_create branch_delete branch_merge admin invoke_query]" {
		t.Fatalf("allowed: %v", m["allowed_actions"])
	}

	// Two branches that diverge: feature inserts, main updates.
	c.json("POST", g0+"/branches", `{"name":"feature"}`)
	st, m = c.json("POST", g0+"/mutate", `{"query":"mutation m() { insert Person { handle: \"cy\", name: \"Cy Young\" } }","branch":"feature"}`)
	mustStatus(t, "insert on feature", st, 200, m)
	st, m = c.json("POST", g0+"/mutate", `{"query":"mutation m() { update Person set { age: 21 } where handle = \"bob\" }"}`)
	mustStatus(t, "update on main", st, 200, m)

	// catalog: types, keys, indexes, edges and row counts; at a commit.
	st, m = c.json("GET", g0+"/catalog?branch=feature", "")
	mustStatus(t, "catalog", st, 200, m)
	var types []string
	for _, k := range []string{"nodes", "edges"} {
		for _, x := range m[k].([]any) {
			tt := x.(map[string]any)
			types = append(types, fmt.Sprintf("%s:%v:%v>%v:%v", tt["name"], tt["rows"], tt["from"], tt["to"], tt["key"]))
		}
	}
	if fmt.Sprint(types) != "[City:1:<nil>><nil>:[slug] Person:3:<nil>><nil>:[handle] Knows:1:Person>Person:<nil> LivesIn:1:Person>City:<nil>]" {
		t.Fatalf("catalog types: %v", types)
	}
	person := m["nodes"].([]any)[1].(map[string]any)
	props := person["properties"].([]any)
	if p := props[1].(map[string]any); p["name"] != "name" || p["index"] != true || p["type"] != "String" {
		t.Fatalf("Person.name: %v", p)
	}
	if e := m["edges"].([]any)[1].(map[string]any); e["cardinality"] != "0..1" {
		t.Fatalf("LivesIn: %v", e)
	}
	st, m = c.json("GET", g0+"/catalog?snapshot="+seedCommit, "")
	mustStatus(t, "catalog at a commit", st, 200, m)
	if m["nodes"].([]any)[1].(map[string]any)["rows"] != 2.0 || m["graph_commit_id"] != seedCommit || m["target"].(map[string]any)["snapshot"] != seedCommit {
		t.Fatalf("catalog at the seed commit: %v", m)
	}
	st, m = c.json("GET", g0+"/catalog?branch=main&snapshot="+seedCommit, "")
	mustStatus(t, "catalog of both", st, 400, m)

	// heads: ahead/behind and what the caller may do.
	st, m = c.json("GET", g0+"/branches/heads", "")
	mustStatus(t, "heads", st, 200, m)
	hs := m["branches"].([]any)
	f := hs[0].(map[string]any)
	if len(hs) != 2 || f["name"] != "feature" || f["ahead"] != 1.0 || f["behind"] != 1.0 || f["head"].(map[string]any)["graph_branch"] != "feature" {
		t.Fatalf("heads: %v", m)
	}
	if fmt.Sprint(f["allowed_actions"]) != "[change load branch_delete branch_merge branch_create]" {
		t.Fatalf("feature's actions: %v", f["allowed_actions"])
	}
	if mn := hs[1].(map[string]any); strings.Contains(fmt.Sprint(mn["allowed_actions"]), "branch_delete") || mn["ahead"] != 0.0 {
		t.Fatalf("main: %v (main is never deleted)", mn)
	}
	st, m = c.json("GET", g0+"/branches/heads?max=1&base=feature", "")
	mustStatus(t, "heads capped", st, 200, m)
	if mn := m["branches"].([]any)[1].(map[string]any); mn["counts_capped"] != true || mn["ahead"] != 1.0 {
		t.Fatalf("capped main vs feature: %v", mn)
	}
	for _, bad := range []string{"max=0", "max=x", "max=100001"} {
		st, m = c.json("GET", g0+"/branches/heads?"+bad, "")
		mustStatus(t, "heads "+bad, st, 400, m)
	}

	// preview: the three-way merge's changes, nothing written.
	before, _ := g.Commits(context.Background(), "main", 0)
	st, m = c.json("POST", g0+"/branches/merge/preview", `{"source":"feature"}`)
	mustStatus(t, "preview", st, 200, m)
	ch := m["changes"].([]any)
	if m["outcome"] != "merged" || m["inserted"] != 1.0 || len(ch) != 1 || ch[0].(map[string]any)["id"] != "cy" ||
		ch[0].(map[string]any)["after"].(map[string]any)["name"] != "Cy Young" || len(m["conflicts"].([]any)) != 0 {
		t.Fatalf("preview: %v", m)
	}
	if after, _ := g.Commits(context.Background(), "main", 0); len(after) != len(before) {
		t.Fatal("the preview committed")
	}
	// A conflict: listed by the preview, and the merge refuses the same.
	c.json("POST", g0+"/mutate", `{"query":"mutation m() { update Person set { age: 1 } where handle = \"ada\" }","branch":"feature"}`)
	c.json("POST", g0+"/mutate", `{"query":"mutation m() { update Person set { age: 2 } where handle = \"ada\" }"}`)
	st, m = c.json("POST", g0+"/branches/merge/preview", `{"source":"feature","target":"main","limit":10}`)
	mustStatus(t, "conflicting preview", st, 200, m)
	pc := m["conflicts"].([]any)
	st, mm := c.json("POST", g0+"/branches/merge", `{"source":"feature"}`)
	mustStatus(t, "conflicting merge", st, 409, mm)
	if len(pc) != 1 || pc[0].(map[string]any)["kind"] != "divergent_update" || fmt.Sprint(pc) != fmt.Sprint(mm["merge_conflicts"]) {
		t.Fatalf("preview conflicts %v, merge conflicts %v", pc, mm["merge_conflicts"])
	}
	for _, bad := range []string{`{}`, `{"source":"feature","limit":-1}`, `{"source":"feature","target":"feature"}`} {
		st, m = c.json("POST", g0+"/branches/merge/preview", bad)
		mustStatus(t, "preview "+bad, st, 400, m)
	}
	st, m = c.json("POST", g0+"/branches/merge/preview", `{"source":"nope"}`)
	mustStatus(t, "preview of an unknown branch", st, 404, m)

	// diff: branch to branch, commit to branch.
	st, m = c.json("POST", g0+"/diff", `{"from":"main","to":"feature","type":"Person"}`)
	mustStatus(t, "diff", st, 200, m)
	var ops []string
	for _, x := range m["changes"].([]any) {
		cc := x.(map[string]any)
		ops = append(ops, fmt.Sprintf("%s %s", cc["op"], cc["id"]))
	}
	if fmt.Sprint(ops) != "[update ada update bob insert cy]" {
		t.Fatalf("diff main..feature: %v", ops)
	}
	st, m = c.json("POST", g0+"/diff", `{"from":"`+seedCommit+`","to":"main","op":"update","limit":1}`)
	mustStatus(t, "diff from a commit", st, 200, m)
	if len(m["changes"].([]any)) != 1 || m["from_commit"] != seedCommit {
		t.Fatalf("diff seed..main: %v", m)
	}
	for body, want := range map[string]int{`{"from":"main"}`: 400, `{"from":"main","to":"feature","op":"upsert"}`: 400, `{"from":"main","to":"nope"}`: 404, `{"from":"main","to":"feature","limit":-2}`: 400} {
		st, m = c.json("POST", g0+"/diff", body)
		mustStatus(t, "diff "+body, st, want, m)
	}
}

// TestConsoleCheck: the type check's answer: every declaration with its
// parameters, columns, links and plan; every error at its line and
// column; errors in the text are a 200 answer, never a failure.
func TestConsoleCheck(t *testing.T) {
	g, _ := consoleGraph(t)
	base := consoleServer(t, g, Config{})
	c := &client{t: t, base: base}
	check := func(src string) map[string]any {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"query": src})
		st, m := c.json("POST", "/graphs/default/query/check", string(b))
		mustStatus(t, "check", st, 200, m)
		sameAsLint(t, g, src, m)
		return m
	}
	m := check("query friends($h: String, $min: I32?) {\n  match {\n    $a: Person { handle: $h }\n    $a knows $b\n    $b.age >= $min\n  }\n  return { $a, $b, $b.name }\n}\n" +
		"query broken() {\n  match { $p: Persn }\n  return { $p.name }\n}\n" +
		"mutation add($h: String) {\n  insert Person { handle: $h, name: $h }\n}\n")
	qs := m["queries"].([]any)
	if m["ok"] != false || len(qs) != 3 {
		t.Fatalf("check: %v", m)
	}
	fr := qs[0].(map[string]any)
	if fr["ok"] != true || fr["kind"] != "read" || fmt.Sprint(fr["params"]) != "[map[name:h nullable:false type:String] map[name:min nullable:true type:I32]]" ||
		fmt.Sprint(fr["links"]) != "[map[edge:Knows from:a max_hops:1 min_hops:1 to:b]]" || !strings.HasPrefix(fr["plan"].(string), "query friends($h: String, $min: I32?)") {
		t.Fatalf("friends: %v", fr)
	}
	if cols := fmt.Sprint(fr["columns"]); cols != "[map[name:a node_type:Person type:node] map[name:b node_type:Person type:node] map[name:b.name type:String]]" {
		t.Fatalf("columns: %s", cols)
	}
	if br := qs[1].(map[string]any); br["ok"] != false || br["plan"] != nil || br["line"] != 9.0 {
		t.Fatalf("broken: %v", br)
	}
	if mu := qs[2].(map[string]any); mu["kind"] != "mutation" || mu["ok"] != true {
		t.Fatalf("add: %v", mu)
	}
	errs := m["errors"].([]any)
	if len(errs) != 1 || fmt.Sprint(errs[0]) != `map[code:GQ010 column:15 line:10 lint_code:T1 message:unknown node type "Persn"; did you mean Person? query:broken]` {
		t.Fatalf("errors: %v", errs)
	}
	// A syntax error: one error at its position, no declaration.
	m = check("query q() {\n  match { $p: Person\n")
	if errs := m["errors"].([]any); len(errs) != 1 || errs[0].(map[string]any)["code"] != "GQ001" || errs[0].(map[string]any)["line"] == 0.0 {
		t.Fatalf("syntax error: %v", m)
	}
	// No query: an error that says what to write.
	if m = check("// nothing\n"); m["ok"] != false || len(m["errors"].([]any)) != 1 || len(m["queries"].([]any)) != 0 {
		t.Fatalf("no query: %v", m)
	}
	// Warnings (lint's L201 and L202) are listed and never fail the check.
	m = check("mutation rename($h: String, $n: String) {\n  update Person set { name: $n } where handle = $h\n}\nmutation wipe() {\n  delete Person where handle = \"ada\"\n}\n")
	if w := fmt.Sprint(m["warnings"]); m["ok"] != true || len(m["errors"].([]any)) != 0 ||
		w != `[map[code:L201 column:0 line:0 lint_code:L201 message:Person.age exists in the schema but no update query sets it property:age query:rename type:Person] map[code:L202 column:1 line:4 lint_code:L202 message:mutation wipe declares no parameters; a hard-coded mutation is easy to miss query:wipe]]` {
		t.Fatalf("warnings: %v", m)
	}
	// Hostile text: every answer is a 200 with errors, or a 400 for a
	// body that is not a check request; never a 5xx.
	rng := rand.New(rand.NewPCG(29, 1))
	words := []string{"query", "mutation", "match", "return", "{", "}", "(", ")", "$p", ":", "Person", "knows", "\"", "\\", "é", "\x00", "𝔊", "@", "limit", "-", "9999999999999999999999", ".", "rrf(", "nearest(", "/*", "\n", "\ufeff", "not", "order"}
	for i := range 300 {
		var b strings.Builder
		for range rng.IntN(40) {
			b.WriteString(words[rng.IntN(len(words))])
			b.WriteByte(' ')
		}
		body, _ := json.Marshal(map[string]any{"query": b.String()})
		st, mm := c.json("POST", "/graphs/default/query/check", string(body))
		if st != 200 {
			t.Fatalf("hostile source %d %q: status %d %v", i, b.String(), st, mm)
		}
		for _, e := range mm["errors"].([]any) {
			if e.(map[string]any)["line"].(float64) < 0 {
				t.Fatalf("negative position: %v", e)
			}
		}
		sameAsLint(t, g, b.String(), mm)
	}
	for _, body := range []string{`{"query":5}`, `[1]`, `{"query":"q","snapshot":"x","branch":"main"}`} {
		st, mm := c.json("POST", "/graphs/default/query/check", body)
		mustStatus(t, "bad check body "+body, st, 400, mm)
	}
}

// sameAsLint fails unless the check's answer m is what gq.Lint (omnigraph
// lint) finds in src against main's schema: the same verdict, and the
// same findings (code, lint code, position, message) in the same order,
// errors then warnings.
func sameAsLint(t *testing.T, g *graph.Graph, src string, m map[string]any) {
	t.Helper()
	snap, err := g.Snapshot(context.Background(), "main")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := snap.Catalog(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rep := gq.Lint(src, cat)
	var want, got []string
	for _, f := range rep.Findings {
		code := f.GQCode
		if code == "" {
			code = f.Code
		}
		want = append(want, fmt.Sprintf("%s %s %s %d:%d", f.Severity, code, f.Code, f.Line, f.Column))
	}
	for _, list := range []struct{ sev, key string }{{gq.SeverityError, "errors"}, {gq.SeverityWarning, "warnings"}} {
		for _, e := range m[list.key].([]any) {
			e := e.(map[string]any)
			got = append(got, fmt.Sprintf("%s %s %s %v:%v", list.sev, e["code"], e["lint_code"], e["line"], e["column"]))
			if i := len(got) - 1; i < len(rep.Findings) && !strings.HasSuffix(rep.Findings[i].Message, e["message"].(string)) {
				t.Fatalf("check message %q, lint %q", e["message"], rep.Findings[i].Message)
			}
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || m["ok"] != (rep.Errors == 0) {
		t.Fatalf("source %q: check ok=%v %v, lint %s %v", src, m["ok"], got, rep.Status, want)
	}
}

// TestConsoleRoutesRefusedBeforeWork: under a policy that allows nothing,
// every console route is 403 before any storage request; a grant of read
// on main only reads main and is refused the rest.
func TestConsoleRoutesRefusedBeforeWork(t *testing.T) {
	g, cs := consoleGraph(t)
	if _, err := g.CreateBranch(context.Background(), "secret", "main"); err != nil {
		t.Fatal(err)
	}
	cms, _ := g.Commits(context.Background(), "main", 1)
	pol, err := ParsePolicy("p", []byte(`@id("main-only") permit (principal == Omnigraph::Actor::"mo", action == Omnigraph::Action::"read", resource == Omnigraph::Branch::"default/main");`))
	if err != nil {
		t.Fatal(err)
	}
	tokens, secrets := tokensFor(t, "nobody", "mo")
	base := consoleServer(t, g, Config{Tokens: tokens, Policy: pol})
	g0 := "/graphs/default"
	calls := []struct{ method, path, body string }{
		{"GET", g0 + "/status", ""},
		{"GET", g0 + "/catalog", ""},
		{"GET", g0 + "/catalog?snapshot=" + cms[0].ID, ""},
		{"POST", g0 + "/query/check", `{"query":"query q() { match { $p: Person } return { $p.name } }"}`},
		{"GET", g0 + "/branches/heads", ""},
		{"POST", g0 + "/branches/merge/preview", `{"source":"secret"}`},
		{"POST", g0 + "/diff", `{"from":"main","to":"secret"}`},
		{"POST", g0 + "/diff", `{"from":"main","to":"` + cms[0].ID + `"}`},
	}
	// Every console route is in the list (a new one must join it).
	n := 0
	for _, rt := range api.ConsoleRoutes("/graphs/{graph_id}") {
		for _, cl := range calls {
			if cl.method == rt.Method && strings.HasPrefix(cl.path, strings.Replace(rt.Path, "/graphs/{graph_id}", g0, 1)) &&
				(len(cl.path) == len(strings.Replace(rt.Path, "/graphs/{graph_id}", g0, 1)) || cl.path[len(strings.Replace(rt.Path, "/graphs/{graph_id}", g0, 1))] == '?') {
				n++
				break
			}
		}
	}
	if n != len(api.ConsoleRoutes("/graphs/{graph_id}")) {
		t.Fatalf("the calls cover %d of %d console routes", n, len(api.ConsoleRoutes("/graphs/{graph_id}")))
	}
	nobody := &client{t: t, base: base, token: secrets["nobody"]}
	for _, cl := range calls {
		cs.Reset()
		st, m := nobody.json(cl.method, cl.path, cl.body)
		mustStatus(t, "deny-all "+cl.path, st, 403, m)
		if n := cs.Snapshot().Total; n != 0 {
			t.Fatalf("%s %s: %d storage requests before the 403", cl.method, cl.path, n)
		}
	}
	mo := &client{t: t, base: base, token: secrets["mo"]}
	for i, want := range []int{403, 200, 403, 200, 403, 403, 403, 403} {
		cl := calls[i]
		st, m := mo.json(cl.method, cl.path, cl.body)
		mustStatus(t, "main-only "+cl.method+" "+cl.path, st, want, m)
	}
	st, m := mo.json("POST", g0+"/diff", `{"from":"main","to":"main"}`)
	mustStatus(t, "main-only diff of main", st, 200, m)
}

// TestConsoleFiles: /ui/ serves the embedded app (public, with its
// security headers, gzip and revalidation), every page path gets
// index.html, a missing file is 404, / and /ui lead there, and without
// UI the paths are the API's 404. The app's own files name no outside
// address and every file they load is embedded.
func TestConsoleFiles(t *testing.T) {
	g, _ := consoleGraph(t)
	tokens, _ := tokensFor(t, "alice")
	base := consoleServer(t, g, Config{Tokens: tokens, UI: true})
	get := func(path string, hdr ...string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest("GET", base+path, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		tr := &http.Transport{DisableCompression: true}
		cl := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	resp, index := get("/ui/")
	if resp.StatusCode != 200 || !bytes.Contains(index, []byte(`<script type="module" src="js/main.js">`)) ||
		resp.Header.Get("Content-Security-Policy") != ui.ContentSecurityPolicy || resp.Header.Get("X-Frame-Options") != "DENY" {
		t.Fatalf("/ui/: %d %v %.200s", resp.StatusCode, resp.Header, index)
	}
	for _, p := range []string{"/ui/default/", "/ui/default/query", "/ui/default/commits/01ABC", "/ui/x/diff"} {
		if resp, b := get(p); resp.StatusCode != 200 || !bytes.Equal(b, index) {
			t.Fatalf("%s: %d, not index.html", p, resp.StatusCode)
		}
	}
	for _, p := range []string{"/ui/js/nope.js", "/ui/vendor/x.css", "/ui/favicon.ico"} {
		if resp, _ := get(p); resp.StatusCode != 404 {
			t.Fatalf("%s: %d, want 404", p, resp.StatusCode)
		}
	}
	resp, js := get("/ui/js/main.js")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/javascript; charset=utf-8" || resp.Header.Get("Content-Encoding") != "" {
		t.Fatalf("main.js: %v", resp.Header)
	}
	resp, gz := get("/ui/js/main.js", "Accept-Encoding", "br, gzip")
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil || resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("gzip: %v %v", resp.Header, err)
	}
	unz, _ := io.ReadAll(zr)
	if !bytes.Equal(unz, js) || len(gz) >= len(js) {
		t.Fatal("the gzipped file differs from the file, or is not smaller")
	}
	if resp, _ := get("/ui/js/main.js", "If-None-Match", resp.Header.Get("ETag")); resp.StatusCode != 304 {
		t.Fatalf("revalidation: %d", resp.StatusCode)
	}
	for _, p := range []string{"/", "/ui"} {
		if resp, _ := get(p); resp.StatusCode != 302 || resp.Header.Get("Location") != "/ui/" {
			t.Fatalf("%s: %d %s", p, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	// The files are public; the data is not.
	if resp, _ := get("/graphs/default/status"); resp.StatusCode != 401 {
		t.Fatalf("status without a token: %d", resp.StatusCode)
	}
	// Only GET and HEAD reach the files; a POST is an unknown API route.
	req, _ := http.NewRequest("POST", base+"/ui/", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 404 {
		t.Fatalf("POST /ui/: %v %v", resp.StatusCode, err)
	}

	// The app's own files: no outside address, and every file index.html
	// and the modules load is embedded.
	h, err := ui.New()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, f := range h.Files() {
		have[f.Path] = true
	}
	ref := regexp.MustCompile(`(?:src|href)="([^"#:]+)"|from '(\.{1,2}/[^']+)'|'(vendor/[^']+)'`)
	external := regexp.MustCompile(`(?i)\b(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	checked := 0
	err = fs.WalkDir(ui.Assets(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(p, "vendor/") {
			return err
		}
		b, err := fs.ReadFile(ui.Assets(), p)
		if err != nil {
			return err
		}
		// An XML namespace names, it never loads.
		b = bytes.ReplaceAll(b, []byte(`xmlns="http://www.w3.org/2000/svg"`), nil)
		if m := external.Find(b); m != nil {
			t.Errorf("%s names an outside address: %s", p, m)
		}
		for _, m := range ref.FindAllStringSubmatch(string(b), -1) {
			target := m[1] + m[3]
			if m[2] != "" {
				target = filepath.ToSlash(filepath.Join(filepath.Dir(p), m[2]))
			}
			if target == "/ui/" { // <base href>
				continue
			}
			checked++
			if !have[target] {
				t.Errorf("%s loads %q, which is not embedded", p, target)
			}
		}
		return nil
	})
	if err != nil || checked < 20 {
		t.Fatalf("walked the assets: %v, %d references checked", err, checked)
	}

	// Without the console the paths are unknown routes of the API.
	off := consoleServer(t, g, Config{Tokens: tokens})
	resp2, err := http.Get(off + "/ui/")
	if err != nil || resp2.StatusCode != 404 || resp2.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("/ui/ with the console off: %v %v", resp2.StatusCode, err)
	}
}

// TestConsoleStatusShowsPendingRecovery: a write stopped after its table
// commits leaves an intent; a read-only replica's status route shows it
// pending (kind, branch, actor, what recovery would find), without a key
// or path of the store.
func TestConsoleStatusShowsPendingRecovery(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "g")
	store, err := local.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	g, err := graph.Init(ctx, store, consoleSchema, graph.InitOptions{Actor: "writer"})
	if err != nil {
		t.Fatal(err)
	}
	clear := graph.Failpoints.Set(g.ID(), graph.FailpointPostPhaseB, func() error { return fmt.Errorf("injected: stopped after the table commits") })
	_, err = load.Run(ctx, g, strings.NewReader(consoleSeed), load.Options{Mode: load.Append})
	clear()
	if err == nil {
		t.Fatal("the failpoint did not stop the load")
	}
	g.Close()
	ro, err := graph.Open(ctx, store, graph.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	base := consoleServer(t, ro, Config{ReadOnly: true})
	req, _ := http.NewRequest("GET", base+"/graphs/default/status", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || resp.StatusCode != 200 {
		t.Fatalf("status: %d %s", resp.StatusCode, raw)
	}
	rc := m["recovery"].(map[string]any)
	in := rc["intents"].([]any)
	if rc["state"] != "pending" || rc["pending"] != 1.0 || len(in) != 1 || m["mode"] != "read-only" {
		t.Fatalf("recovery: %v", m)
	}
	if it := in[0].(map[string]any); it["kind"] != "load" || it["branch"] != "main" || it["actor"] != "writer" || it["classification"] == "" {
		t.Fatalf("intent: %v", it)
	}
	for _, leak := range []string{"__recovery", "nodes/", "__manifest", dir} {
		if bytes.Contains(raw, []byte(leak)) {
			t.Fatalf("the status names %q: %s", leak, raw)
		}
	}
	// A replica refuses every write, whatever the policy grants.
	if fmt.Sprint(m["allowed_actions"]) != "[read export]" || m["auto_optimize"].(map[string]any)["enabled"] != false {
		t.Fatalf("replica status: %v", m)
	}
}
