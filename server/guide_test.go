package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/omnigraph-go/omnigraph/backend/local"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/lang/pg"
)

// TestMCPAgentLearnsGQFromServer: a client that knows nothing of .gq
// reads only what the server offers (initialize instructions, resources,
// tool descriptions), runs the example the instructions give and a query
// it builds from the guide's first node type and key, and gets rows; a
// Cypher-like first try is an error that points to the guide.
func TestMCPAgentLearnsGQFromServer(t *testing.T) {
	g := testGraph(t)
	tokens, secrets := tokensFor(t, "alice")
	_, base := newTestServer(t, g, Config{Tokens: tokens, Version: "test"})
	cs, err := mcpConnect(t, base, secrets["alice"])
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if res := callTool(t, cs, "graph_load", map[string]any{"data": `{"type":"Person","data":{"name":"ada","age":36}}` + "\n"}); res.IsError {
		t.Fatalf("graph_load: %v", structured(t, res))
	}

	// A Cypher-like first try: the error says where the syntax is.
	guideURI := "omnigraph://graphs/default/guide"
	res := callTool(t, cs, "graph_query", map[string]any{"query": "MATCH (p:Person) RETURN p.name"})
	te := structured(t, res)
	if !res.IsError || te["status"] != 400.0 || !strings.Contains(te["error"].(string), "GQ001") || !strings.Contains(te["error"].(string), guideURI) {
		t.Fatalf("a Cypher query: %v, want a 400 GQ001 that names %s", te, guideURI)
	}
	// A type error is not a syntax error: no pointer to the guide there.
	res = callTool(t, cs, "graph_query", map[string]any{"query": "query q() { match { $p: Persn } return { $p } }"})
	if te := structured(t, res); !res.IsError || strings.Contains(te["error"].(string), guideURI) {
		t.Fatalf("an unknown type: %v, want an error without the syntax pointer", te)
	}

	// The instructions: the types, the key, one runnable example.
	ins := cs.InitializeResult().Instructions
	for _, want := range []string{"node Person (key name): name String, age I32?", guideURI, "omnigraph://graphs/default/schema"} {
		if !strings.Contains(ins, want) {
			t.Fatalf("instructions lack %q:\n%s", want, ins)
		}
	}
	_, raw, ok := strings.Cut(ins, "graph_query arguments: ")
	if !ok {
		t.Fatalf("instructions give no example arguments:\n%s", ins)
	}
	raw, _, _ = strings.Cut(raw, "\n")
	var args map[string]any
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		t.Fatalf("the example arguments %s: %v", raw, err)
	}
	res = callTool(t, cs, "graph_query", args)
	if out := structured(t, res); res.IsError || out["row_count"] != 1.0 {
		t.Fatalf("the instructions' example %v: %v, want 1 row", args, out)
	}

	// The resources: the schema source, and the guide, whose types an
	// agent builds its own query from.
	lr, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range lr.Resources {
		uris = append(uris, r.URI)
	}
	if strings.Join(uris, " ") != "omnigraph://graphs/default/guide omnigraph://graphs/default/schema" {
		t.Fatalf("resources/list: %v", uris)
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "omnigraph://graphs/default/schema"})
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != testSchema {
		t.Fatalf("the schema resource: %+v %v", rr, err)
	}
	rr, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: guideURI})
	if err != nil || len(rr.Contents) != 1 {
		t.Fatalf("the guide resource: %+v %v", rr, err)
	}
	guide := rr.Contents[0].Text
	m := regexp.MustCompile(`(?m)^- node (\w+) \(key (\w+)\)`).FindStringSubmatch(guide)
	if m == nil {
		t.Fatalf("the guide names no keyed node type:\n%s", guide)
	}
	q := "query mine($v: String) { match { $x: " + m[1] + " { " + m[2] + ": $v } } return { $x." + m[2] + " } }"
	res = callTool(t, cs, "graph_query", map[string]any{"query": q, "params": map[string]any{"v": "ada"}})
	if out := structured(t, res); res.IsError || out["row_count"] != 1.0 {
		t.Fatalf("a query built from the guide %q: %v", q, out)
	}
	// Each gq block of the guide runs (reads) or checks (mutations).
	blocks := regexp.MustCompile("(?s)```gq\n(.*?)\n```").FindAllStringSubmatch(guide, -1)
	if len(blocks) != 4 {
		t.Fatalf("%d examples in the guide, want 4 (all, by key, count, insert):\n%s", len(blocks), guide)
	}
	for _, b := range blocks {
		res := callTool(t, cs, "query_lint", map[string]any{"query": b[1]})
		if out := structured(t, res); res.IsError || out["ok"] != true {
			t.Errorf("guide example %q: %v", b[1], out)
		}
	}

	// Every tool's description carries one example of its arguments.
	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range lt.Tools {
		if !strings.Contains(tl.Description, "\n\nExample arguments: {") {
			t.Errorf("tool %s: no example in %q", tl.Name, tl.Description)
		}
	}
}

// TestMCPToolExamplesDecode: each built-in tool's example is arguments
// the tool's strict decoding accepts.
func TestMCPToolExamplesDecode(t *testing.T) {
	for _, tl := range mcpTools() {
		if tl.example == "" {
			t.Errorf("tool %s has no example", tl.tool.Name)
			continue
		}
		in := reflect.New(tl.in).Interface()
		if err := decodeStrict(json.RawMessage(tl.example), in, "the example of "+tl.tool.Name); err != nil {
			t.Errorf("tool %s: its example %s: %v", tl.tool.Name, tl.example, err)
		}
		if !strings.HasSuffix(tl.tool.Description, tl.example) {
			t.Errorf("tool %s: the description does not end with its example", tl.tool.Name)
		}
	}
}

// TestMCPGuideExamplesCheckOnASchema: on a schema with edges and several
// node types (examples/social.pg) every generated example passes POST
// query/check, and none was dropped.
func TestMCPGuideExamplesCheckOnASchema(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "examples", "social.pg"))
	if err != nil {
		t.Fatal(err)
	}
	cat, err := pg.Compile(string(src))
	if err != nil {
		t.Fatal(err)
	}
	store, err := local.New(filepath.Join(t.TempDir(), "g"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := graph.Init(context.Background(), store, string(src), graph.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	_, base := newTestServer(t, g, Config{})
	c := &client{t: t, base: base}
	exs := guideExamples(cat)
	var whats []string
	for _, ex := range exs {
		whats = append(whats, ex.what)
		body, _ := json.Marshal(map[string]any{"query": ex.source})
		st, m := c.json("POST", "/graphs/default/query/check", string(body))
		if st != 200 || m["ok"] != true {
			t.Errorf("example %q: %d %v", ex.source, st, m)
		}
	}
	if len(exs) != 5 {
		t.Fatalf("examples %q, want 5: all, by key, count, an edge, insert", whats)
	}
	if !strings.Contains(fullGuide("default", cat), "### pairs joined by edge") {
		t.Errorf("the guide has no edge example")
	}
}

// TestMCPResourcesPolicyAndAdmission: a resource read is a read: listed
// and read only with read on the graph (a JSON-RPC error with status 403
// otherwise), and refused with 429 while the actor's read slots are held.
func TestMCPResourcesPolicyAndAdmission(t *testing.T) {
	g := testGraph(t)
	tokens, secrets := tokensFor(t, "alice", "bob")
	pol, err := ParsePolicy("test", []byte(`@id("alice-all") permit (principal == Omnigraph::Actor::"alice", action, resource);`))
	if err != nil {
		t.Fatal(err)
	}
	s, base := newTestServer(t, g, Config{Tokens: tokens, Policy: pol, Limits: Limits{ReadsPerActor: 1}})
	ctx := context.Background()
	status := func(err error) float64 {
		t.Helper()
		var we *jsonrpc.Error
		if !errors.As(err, &we) {
			t.Fatalf("resources/read: %v, want a JSON-RPC error", err)
		}
		var te map[string]any
		if err := json.Unmarshal(we.Data, &te); err != nil {
			t.Fatalf("error data %s: %v", we.Data, err)
		}
		return te["status"].(float64)
	}
	bob, err := mcpConnect(t, base, secrets["bob"])
	if err != nil {
		t.Fatal(err)
	}
	if lr, err := bob.ListResources(ctx, nil); err != nil || len(lr.Resources) != 0 {
		t.Fatalf("bob's resources/list: %+v %v, want none", lr, err)
	}
	for _, suffix := range []string{"schema", "guide"} {
		_, err := bob.ReadResource(ctx, &mcp.ReadResourceParams{URI: "omnigraph://graphs/default/" + suffix})
		if got := status(err); got != 403 {
			t.Fatalf("bob reads %s: status %v, want 403", suffix, got)
		}
	}
	if ins := bob.InitializeResult().Instructions; strings.Contains(ins, "node Person") {
		t.Fatalf("bob, who may not read, is shown the schema: %s", ins)
	}

	alice, err := mcpConnect(t, base, secrets["alice"])
	if err != nil {
		t.Fatal(err)
	}
	release, f := s.adm.admitRead("alice")
	if f != nil {
		t.Fatal(f.Body.Error)
	}
	for _, suffix := range []string{"schema", "guide"} {
		_, err := alice.ReadResource(ctx, &mcp.ReadResourceParams{URI: "omnigraph://graphs/default/" + suffix})
		if got := status(err); got != 429 {
			t.Fatalf("alice reads %s with her slot held: status %v, want 429", suffix, got)
		}
	}
	release()
	if _, err := alice.ReadResource(ctx, &mcp.ReadResourceParams{URI: "omnigraph://graphs/default/schema"}); err != nil {
		t.Fatalf("alice reads the schema: %v", err)
	}
	if got := s.adm.inFlightReads(); got != 0 {
		t.Errorf("%d read slots held after every answer, want 0", got)
	}
}

// TestMCPInstructionsBoundTheTypes: a schema of many types lists at most
// shortGuideTypes of them in the instructions and says how many more the
// guide has; the guide lists every one.
func TestMCPInstructionsBoundTheTypes(t *testing.T) {
	var src strings.Builder
	for i := range 30 {
		fmt.Fprintf(&src, "node T%02d {\n  k: String @key\n}\n", i)
	}
	cat, err := pg.Compile(src.String())
	if err != nil {
		t.Fatal(err)
	}
	ins := instructions("g", cat)
	if got := strings.Count(ins, "\n- node "); got != shortGuideTypes || !strings.Contains(ins, "- ... and 6 more types") {
		t.Fatalf("%d node lines in the instructions, want %d and a line for 6 more:\n%s", got, shortGuideTypes, ins)
	}
	if got := strings.Count(fullGuide("g", cat), "\n- node "); got != 30 {
		t.Fatalf("%d node lines in the guide, want 30", got)
	}
}
