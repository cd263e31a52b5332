package server

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/lang/pg"
)

const kindsSchema = `
node Thing {
  slug: String @key
  n32: I32?
  n64: I64?
  u64: U64?
  f: F64?
  on: Bool?
  day: Date?
  at: DateTime?
  tags: [String]?
  emb: Vector(3)?
  color: enum(red, blue)?
}
`

// TestCompileQueriesKindsAndSchemas: every parameter type maps to the
// original's kind and a JSON Schema that says what Bind accepts; the
// catalog carries descriptions and what the query is.
func TestCompileQueriesKindsAndSchemas(t *testing.T) {
	cat, err := pg.Compile(kindsSchema)
	if err != nil {
		t.Fatal(err)
	}
	src := `
query find($s: String, $a: I32, $b: I64, $c: U64?, $d: F64, $e: Bool, $f: Date, $g: DateTime, $h: [String], $v: Vector(3), $col: String)
  @description("find things") @instruction("use slugs") {
  match { $t: Thing { slug: $s } } return { $t.slug }
}
mutation tag($s: String, $tags: [String]) { update Thing set { tags: $tags } where slug = $s }
`
	set, problems := CompileQueries([]QueryFile{{Name: "q.gq", Source: src}}, cat)
	if set == nil {
		t.Fatalf("refused: %v", problems)
	}
	var warnings []string
	for _, p := range problems {
		warnings = append(warnings, p.Code)
	}
	if !slices.Contains(warnings, QueryVector) {
		t.Errorf("no vector warning in %v", problems)
	}
	find, ok := set.Get("find")
	if !ok || find.Mutation || find.Description != "find things" || find.Instruction != "use slugs" || find.ToolName != "find" {
		t.Fatalf("find: %+v", find)
	}
	kinds := map[string]string{}
	for _, p := range find.Params {
		kinds[p.Name] = p.Kind + "/" + p.ItemKind + fmt.Sprint(p.VectorDim)
	}
	want := map[string]string{"s": "string/0", "a": "int/0", "b": "bigint/0", "c": "bigint/0", "d": "float/0", "e": "bool/0", "f": "date/0",
		"g": "datetime/0", "h": "list/string0", "v": "vector/3", "col": "string/0"}
	if fmt.Sprint(kinds) != fmt.Sprint(want) {
		t.Errorf("kinds %v, want %v", kinds, want)
	}
	b, _ := json.Marshal(find.InputSchema)
	var sch struct {
		Required   []string                  `json:"required"`
		Properties map[string]map[string]any `json:"properties"`
		Additional bool                      `json:"additionalProperties"`
	}
	json.Unmarshal(b, &sch)
	if slices.Contains(sch.Required, "c") || !slices.Contains(sch.Required, "s") || sch.Additional {
		t.Errorf("required %v (c is nullable), additionalProperties %v", sch.Required, sch.Additional)
	}
	if sch.Properties["b"]["type"] != "string" || sch.Properties["a"]["type"] != "integer" || sch.Properties["v"]["maxItems"] != 3.0 || sch.Properties["g"]["format"] != "date-time" {
		t.Errorf("schemas: %v", sch.Properties)
	}
	if tag, _ := set.Get("tag"); tag == nil || !tag.Mutation {
		t.Errorf("tag: %+v", tag)
	}
}

// TestCompileQueriesRefuses: duplicates (in a file and across files), a
// built-in tool's name, type errors with lint's codes, and a file without
// a query refuse the set, every problem named with its file.
func TestCompileQueriesRefuses(t *testing.T) {
	cat, err := pg.Compile(testSchema)
	if err != nil {
		t.Fatal(err)
	}
	ok := `query people() { match { $p: Person } return { $p.name } }`
	cases := []struct {
		name  string
		files []QueryFile
		code  string
		text  string
	}{
		{"duplicate in a file", []QueryFile{{"a.gq", ok + "\n" + ok}}, "GQ004", "already declared"},
		{"duplicate across files", []QueryFile{{"a.gq", ok}, {"b.gq", ok}}, QueryDuplicate, "in a.gq"},
		{"built-in tool name", []QueryFile{{"a.gq", `query graph_query() { match { $p: Person } return { $p.name } }`}}, QueryToolName, "built-in"},
		{"run pair name", []QueryFile{{"a.gq", `query stored_query_run() { match { $p: Person } return { $p.name } }`}}, QueryToolName, "built-in"},
		{"unknown type", []QueryFile{{"a.gq", `query q() { match { $p: Nope } return { $p.name } }`}}, "T1", "Nope"},
		{"syntax", []QueryFile{{"a.gq", `query q( {`}}, "Q000", ""},
		{"no query", []QueryFile{{"a.gq", "// nothing\n"}}, "", ""},
	}
	for _, c := range cases {
		set, problems := CompileQueries(c.files, cat)
		if set != nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		found := false
		for _, p := range problems {
			if p.Severity == "error" && (c.code == "" || p.Code == c.code) && strings.Contains(p.Message, c.text) && p.File != "" {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: problems %v, want code %s with %q", c.name, problems, c.code, c.text)
		}
	}
}

const queriesPolicy = `
@id("read") permit (principal, action == Omnigraph::Action::"read", resource in Omnigraph::Graph::"default");
@id("change") permit (principal == Omnigraph::Actor::"alice", action == Omnigraph::Action::"change", resource in Omnigraph::Graph::"default");
@id("alice-invokes") permit (principal == Omnigraph::Actor::"alice", action == Omnigraph::Action::"invoke_query", resource);
@id("rita-people-only") permit (principal == Omnigraph::Actor::"rita", action == Omnigraph::Action::"invoke_query", resource)
  when { context.query == "people" };
`

const storedSrc = `
query people($min: I32?) @description("people at least min years old") {
  match {
    $p: Person
    $p.age >= $min
  }
  return { $p.name, $p.age } order { $p.name asc }
}
query person($name: String) { match { $p: Person { name: $name } } return { $p.name, $p.age } }
mutation add_person($name: String, $age: I32) @description("add a person") { insert Person { name: $name, age: $age } }
`

func storedServer(t *testing.T, files []QueryFile) (string, map[string]string, *StoredQueries) {
	t.Helper()
	g := testGraph(t)
	cat, err := g.Schema(context.Background(), "main")
	if err != nil {
		t.Fatal(err)
	}
	set, problems := CompileQueries(files, cat)
	if set == nil {
		t.Fatal(problems)
	}
	pol, err := ParsePolicy("q.cedar", []byte(queriesPolicy))
	if err != nil {
		t.Fatal(err)
	}
	tokens, secrets := tokensFor(t, "alice", "rita")
	s, err := New(Config{Tokens: tokens, Policy: pol, Graphs: []Graph{{ID: "default", G: g, Queries: set}}})
	if err != nil {
		t.Fatal(err)
	}
	return newHTTPServer(t, s), secrets, set
}

// TestStoredQueryRoutes: the catalog lists what the actor may invoke;
// invoke runs reads and mutations by name with typed params; the
// conditional route writes only at the expected head; a query the actor
// may not invoke answers as a missing one; bad params and misuse are 400.
func TestStoredQueryRoutes(t *testing.T) {
	base, secrets, _ := storedServer(t, []QueryFile{{Name: "people.gq", Source: storedSrc}})
	alice := &client{t: t, base: base, token: secrets["alice"]}
	rita := &client{t: t, base: base, token: secrets["rita"]}
	g0 := "/graphs/default"

	st, m := alice.json("GET", g0+"/queries", "")
	mustStatus(t, "catalog", st, 200, m)
	var names []string
	for _, q := range m["queries"].([]any) {
		names = append(names, q.(map[string]any)["name"].(string))
	}
	if fmt.Sprint(names) != "[add_person people person]" {
		t.Fatalf("alice's catalog: %v", names)
	}
	add := m["queries"].([]any)[0].(map[string]any)
	if add["mutation"] != true || add["tool_name"] != "add_person" || add["description"] != "add a person" || len(add["params"].([]any)) != 2 {
		t.Fatalf("add_person: %v", add)
	}
	st, m = rita.json("GET", g0+"/queries", "")
	mustStatus(t, "rita's catalog", st, 200, m)
	if qs := m["queries"].([]any); len(qs) != 1 || qs[0].(map[string]any)["name"] != "people" {
		t.Fatalf("rita's catalog: %v", qs)
	}

	st, m = alice.json("POST", g0+"/queries/add_person", `{"params":{"name":"ada","age":36}}`)
	mustStatus(t, "add_person", st, 200, m)
	commit := m["commit"].(map[string]any)["graph_commit_id"].(string)
	if m["affected_nodes"] != 1.0 || m["query_name"] != "add_person" {
		t.Fatalf("add_person: %v", m)
	}
	st, m = alice.json("POST", g0+"/queries/add_person/if-graph-commit", `{"params":{"name":"bo","age":20}}`, api.HeaderIfGraphCommit, commit)
	mustStatus(t, "conditional add at the head", st, 200, m)
	st, m = alice.json("POST", g0+"/queries/add_person/if-graph-commit", `{"params":{"name":"cy","age":1}}`, api.HeaderIfGraphCommit, commit)
	mustStatus(t, "conditional add at a stale head", st, 412, m)
	if m["precondition_failure"] == nil {
		t.Fatalf("412 body: %v", m)
	}
	st, m = rita.json("POST", g0+"/queries/people", `{"params":{"min":21}}`)
	mustStatus(t, "people", st, 200, m)
	if fmt.Sprint(m["rows"]) != "[map[p.age:36 p.name:ada]]" || m["graph_commit_id"] == "" {
		t.Fatalf("people: %v", m)
	}
	// No body: the body is optional; $min is nullable, so it is null (and
	// nothing compares >= null).
	st, m, _ = rita.do("POST", g0+"/queries/people", "", "")
	mustStatus(t, "people without a body", st, 200, m)
	if m["row_count"] != 0.0 || m["query_name"] != "people" {
		t.Fatalf("people without a body: %v", m)
	}

	missing := func(c *client, path, body string) {
		t.Helper()
		st, m := c.json("POST", g0+path, body)
		mustStatus(t, path, st, 404, m)
		if !strings.Contains(m["error"].(string), "has no stored query") {
			t.Fatalf("%s: %v", path, m)
		}
	}
	missing(rita, "/queries/add_person", `{"params":{"name":"x","age":1}}`) // denied = missing
	missing(rita, "/queries/person", `{"params":{"name":"ada"}}`)
	missing(alice, "/queries/nope", `{}`)
	// The denied and the missing answers are the same bytes, bar the name.
	_, d := rita.json("POST", g0+"/queries/person", `{}`)
	_, u := rita.json("POST", g0+"/queries/zzzzzz", `{}`)
	if strings.ReplaceAll(d["error"].(string), "person", "X") != strings.ReplaceAll(u["error"].(string), "zzzzzz", "X") {
		t.Fatalf("denied %q vs missing %q", d["error"], u["error"])
	}

	bad := []struct {
		path, body string
		hdr        []string
		status     int
		want       string
	}{
		{"/queries/people", `{"params":{"min":"old"}}`, nil, 400, "$min"},
		{"/queries/people", `{"params":{"nope":1}}`, nil, 400, "no parameter nope"},
		{"/queries/add_person", `{"params":{"name":"x"}}`, nil, 400, "$age"},
		{"/queries/add_person", `{"params":{"name":"x","age":1},"snapshot":"` + commit + `"}`, nil, 400, "drop snapshot"},
		{"/queries/people", `{"expect_mutation":true}`, nil, 400, "expect_mutation"},
		{"/queries/people/if-graph-commit", `{}`, []string{api.HeaderIfGraphCommit, commit}, 400, "is a read"},
		{"/queries/add_person", `{"params":{"name":"x","age":1}}`, []string{api.HeaderIfGraphCommit, commit}, 400, "if-graph-commit"},
		{"/queries/add_person/if-graph-commit", `{"params":{"name":"x","age":1}}`, nil, 400, "exactly once"},
		{"/queries/people", `{"branch":"nope"}`, nil, 404, ""},
	}
	for _, b := range bad {
		st, m := alice.json("POST", g0+b.path, b.body, b.hdr...)
		mustStatus(t, b.path+" "+b.body, st, b.status, m)
		if !strings.Contains(m["error"].(string), b.want) {
			t.Errorf("%s %s: %q, want %q", b.path, b.body, m["error"], b.want)
		}
	}
	// rita may invoke people but a mutation needs change: a stored
	// mutation rita could invoke would still be 403. Check with the
	// policy directly.
	pol, _ := ParsePolicy("q.cedar", []byte(queriesPolicy))
	if pol.Authorize(AuthzRequest{Actor: "rita", Graph: "default", Action: ActionChange, Branch: "main"}).Allowed {
		t.Fatal("rita may change")
	}
	st, m = alice.json("POST", g0+"/query", `{"query":"query q() { match { $p: Person } return { $p.name } order { $p.name asc } }"}`)
	mustStatus(t, "read back", st, 200, m)
	if fmt.Sprint(m["rows"]) != "[map[p.name:ada] map[p.name:bo]]" {
		t.Fatalf("rows: %v (a refused call wrote)", m["rows"])
	}
}

// TestStoredQueriesAsMCPTools: each stored query is a tool with its typed
// input schema, listed only to actors who may invoke it; calls run it;
// with 24 or more queries the graph has the list and run pair instead.
func TestStoredQueriesAsMCPTools(t *testing.T) {
	base, secrets, _ := storedServer(t, []QueryFile{{Name: "people.gq", Source: storedSrc}})
	list := func(actor string) (map[string]*mcp.Tool, *mcp.ClientSession) {
		t.Helper()
		cs, err := mcpConnect(t, base, secrets[actor])
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]*mcp.Tool{}
		for _, tl := range res.Tools {
			out[tl.Name] = tl
		}
		return out, cs
	}
	tools, alice := list("alice")
	for _, n := range []string{"people", "person", "add_person", "graph_query"} {
		if tools[n] == nil {
			t.Fatalf("alice's tools lack %s: %v", n, tools)
		}
	}
	b, _ := json.Marshal(tools["add_person"].InputSchema)
	var sch map[string]any
	json.Unmarshal(b, &sch)
	params := sch["properties"].(map[string]any)["params"].(map[string]any)
	age := params["properties"].(map[string]any)["age"].(map[string]any)
	if age["type"] != "integer" || fmt.Sprint(params["required"]) != "[name age]" || fmt.Sprint(sch["required"]) != "[params]" {
		t.Fatalf("add_person schema: %s", b)
	}
	if tools["add_person"].Annotations.ReadOnlyHint || !tools["people"].Annotations.ReadOnlyHint {
		t.Fatalf("annotations: %+v %+v", tools["add_person"].Annotations, tools["people"].Annotations)
	}
	ritaTools, rita := list("rita")
	if ritaTools["people"] == nil || ritaTools["person"] != nil || ritaTools["add_person"] != nil {
		t.Fatalf("rita's tools: %v", ritaTools)
	}

	res := callTool(t, alice, "add_person", map[string]any{"params": map[string]any{"name": "ada", "age": 36}})
	if res.IsError {
		t.Fatalf("add_person: %v", structured(t, res))
	}
	res = callTool(t, rita, "people", map[string]any{"params": map[string]any{"min": 30}})
	if out := structured(t, res); res.IsError || fmt.Sprint(out["rows"]) != "[map[p.age:36 p.name:ada]]" {
		t.Fatalf("people: %v", out)
	}
	for _, c := range []struct {
		cs     *mcp.ClientSession
		tool   string
		args   map[string]any
		status float64
	}{
		{rita, "add_person", map[string]any{"params": map[string]any{"name": "x", "age": 1}}, 404}, // denied = missing
		{alice, "people", map[string]any{"params": map[string]any{"min": "old"}}, 400},
		{alice, "people", map[string]any{"bogus": 1}, 400},
		{alice, "people", map[string]any{"if_graph_commit": "x"}, 400},
		{alice, "add_person", map[string]any{"params": map[string]any{"name": "bo", "age": 2}, "if_graph_commit": "01HZZZZZZZZZZZZZZZZZZZZZZZ"}, 412},
	} {
		res := callTool(t, c.cs, c.tool, c.args)
		if te := structured(t, res); !res.IsError || te["status"] != c.status {
			t.Errorf("%s %v: %v, want status %v", c.tool, c.args, te, c.status)
		}
	}

	// 24 queries: the pair.
	var many strings.Builder
	for i := 0; i < perQueryTools; i++ {
		fmt.Fprintf(&many, "query q%02d() { match { $p: Person } return { $p.name } }\n", i)
	}
	base2, secrets2, _ := storedServer(t, []QueryFile{{Name: "many.gq", Source: many.String()}})
	cs, err := mcpConnect(t, base2, secrets2["alice"])
	if err != nil {
		t.Fatal(err)
	}
	lt, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tl := range lt.Tools {
		if n, ok := strings.CutPrefix(tl.Name, "q"); ok && len(n) == 2 || strings.HasPrefix(tl.Name, "stored_") {
			got = append(got, tl.Name)
		}
	}
	if fmt.Sprint(got) != "[stored_query_list stored_query_run]" {
		t.Fatalf("24 queries: tools %v", got)
	}
	if res := callTool(t, cs, storedListTool, map[string]any{}); res.IsError || len(structured(t, res)["queries"].([]any)) != perQueryTools {
		t.Fatalf("stored_query_list: %v", structured(t, res))
	}
	if res := callTool(t, cs, storedRunTool, map[string]any{"name": "q07"}); res.IsError || structured(t, res)["query_name"] != "q07" {
		t.Fatalf("stored_query_run: %v", structured(t, res))
	}
}

// TestStoredQueryDescriptionFromDocComment: without @description, a
// stored query's description (its MCP tool's) is the // comment right
// above it; @description wins; a comment cut off by a blank line or
// code is not the query's.
func TestStoredQueryDescriptionFromDocComment(t *testing.T) {
	cat, err := pg.Compile(testSchema)
	if err != nil {
		t.Fatal(err)
	}
	src := `// a file comment

// people older than min,
// by name
query older($min: I32) { match { $p: Person  $p.age > $min } return { $p.name } }
// not the doc of named
query named() @description("every name") { match { $p: Person } return { $p.name } }

query bare() { match { $p: Person } return { $p.name } }
`
	set, problems := CompileQueries([]QueryFile{{Name: "q.gq", Source: src}}, cat)
	if set == nil {
		t.Fatalf("refused: %v", problems)
	}
	for name, want := range map[string]string{"older": "people older than min, by name", "named": "every name", "bare": ""} {
		q, ok := set.Get(name)
		if !ok || q.Description != want {
			t.Errorf("%s: description %q, want %q", name, q.Description, want)
		}
	}
}
