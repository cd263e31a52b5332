package server

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/api"
)

// testPolicy: everyone reads; the writers group does every other graph
// action except on main, which only ops may change, load, merge into or
// delete; export only for ops; nobody is admin.
const testPolicy = `
@id("readers")
permit (principal, action == Omnigraph::Action::"read", resource in Omnigraph::Graph::"default");

@id("writers")
permit (
  principal in Omnigraph::Group::"writers",
  action in [Omnigraph::Action::"change", Omnigraph::Action::"load", Omnigraph::Action::"branch_create",
             Omnigraph::Action::"branch_delete", Omnigraph::Action::"branch_merge"],
  resource in Omnigraph::Graph::"default"
);

@id("protect-main")
forbid (
  principal,
  action in [Omnigraph::Action::"change", Omnigraph::Action::"load", Omnigraph::Action::"branch_merge", Omnigraph::Action::"branch_delete"],
  resource == Omnigraph::Branch::"default/main"
) unless { principal == Omnigraph::Actor::"ops" };

@id("ops-export")
permit (principal == Omnigraph::Actor::"ops", action == Omnigraph::Action::"export", resource);

@id("no-create-from-scratch")
forbid (principal, action == Omnigraph::Action::"branch_create", resource)
  when { context.branch == "scratch" };
`

func parseTestPolicy(t *testing.T) *Policy {
	t.Helper()
	p, err := ParsePolicy("test.cedar", []byte(testPolicy))
	if err != nil {
		t.Fatal(err)
	}
	return p.WithGroups(map[string][]string{"writers": {"alice", "ops"}})
}

// TestPolicyDecisions pins the model: principal, action, branch resource
// under its graph, the context, groups, forbid over permit, default deny
// and the default policy, for every action.
func TestPolicyDecisions(t *testing.T) {
	p := parseTestPolicy(t)
	cases := []struct {
		actor  string
		act    Action
		branch string
		target string
		allow  bool
		by     string
	}{
		{"rita", ActionRead, "main", "", true, "readers"},
		{"rita", ActionRead, "", "", true, "readers"}, // graph-wide read
		{"rita", ActionChange, "topic", "", false, ""},
		{"alice", ActionChange, "topic", "", true, "writers"},
		{"alice", ActionChange, "main", "", false, "protect-main"},
		{"ops", ActionChange, "main", "", true, "writers"},
		{"alice", ActionLoad, "topic", "", true, "writers"},
		{"alice", ActionLoad, "main", "", false, "protect-main"},
		{"rita", ActionLoad, "topic", "", false, ""},
		{"alice", ActionExport, "main", "", false, ""},
		{"ops", ActionExport, "main", "", true, "ops-export"},
		{"alice", ActionBranchCreate, "main", "topic", true, "writers"},
		{"alice", ActionBranchCreate, "scratch", "t2", false, "no-create-from-scratch"},
		{"rita", ActionBranchCreate, "main", "topic", false, ""},
		{"alice", ActionBranchDelete, "", "topic", true, "writers"},
		{"alice", ActionBranchDelete, "", "main", false, "protect-main"},
		{"alice", ActionBranchMerge, "topic", "main", false, "protect-main"},
		{"alice", ActionBranchMerge, "main", "topic", true, "writers"},
		{"ops", ActionBranchMerge, "topic", "main", true, "writers"},
		{"ops", ActionAdmin, "", "", false, ""},
		{"mallory", ActionRead, "main", "", true, "readers"},
	}
	for _, c := range cases {
		d := p.Authorize(AuthzRequest{Actor: c.actor, Graph: "default", Action: c.act, Branch: c.branch, TargetBranch: c.target})
		if d.Allowed != c.allow || c.by != "" && (len(d.Policies) != 1 || d.Policies[0] != c.by) || c.by == "" && len(d.Policies) != 0 || len(d.Errors) != 0 {
			t.Errorf("%s %s %q->%q: %+v, want allowed=%v by %q", c.actor, c.act, c.branch, c.target, d, c.allow, c.by)
		}
		// Another graph is outside every permit of the policy.
		if d := p.Authorize(AuthzRequest{Actor: c.actor, Graph: "other", Action: c.act, Branch: c.branch, TargetBranch: c.target}); d.Allowed && c.act != ActionExport {
			t.Errorf("%s %s on graph other: allowed by %v", c.actor, c.act, d.Policies)
		}
	}
	def := DefaultPolicy()
	for _, a := range Actions() {
		if d := def.Authorize(AuthzRequest{Actor: "anyone", Graph: "g", Action: a, Branch: "main"}); !d.Allowed || d.Policies[0] != "default-allow" {
			t.Errorf("default policy, %s: %+v", a, d)
		}
	}
	for _, bad := range []string{"", "permit (principal, action, resource", `@id("a") permit (principal, action, resource); @id("a") forbid (principal, action, resource);`} {
		if _, err := ParsePolicy("bad.cedar", []byte(bad)); err == nil {
			t.Errorf("ParsePolicy(%q) accepted", bad)
		}
	}
}

// TestServerPolicy: the policy is evaluated on every route and MCP tool
// before any engine work: a denial is 403 forbidden with the envelope,
// writes nothing, and is answered even where the engine would answer
// 404; allowed requests run.
func TestServerPolicy(t *testing.T) {
	g := testGraph(t)
	tokens, secrets := tokensFor(t, "alice", "rita", "ops")
	_, base := newTestServer(t, g, Config{Tokens: tokens, Policy: parseTestPolicy(t)})
	as := func(actor string) *client { return &client{t: t, base: base, token: secrets[actor]} }
	g0 := "/graphs/default"
	commits := func() int {
		t.Helper()
		cs, err := g.Commits(context.Background(), "main", 0)
		if err != nil {
			t.Fatal(err)
		}
		return len(cs)
	}
	ins := func(name, branch string) string {
		return fmt.Sprintf(`{"query":"mutation m() { insert Person { name: \"%s\" } }","branch":"%s"}`, name, branch)
	}

	// Setup as ops (may do everything on main).
	st, m := as("ops").json("POST", g0+"/mutate", ins("ada", "main"))
	mustStatus(t, "ops mutate main", st, 200, m)
	st, m = as("alice").json("POST", g0+"/branches", `{"name":"topic"}`)
	mustStatus(t, "alice branch create", st, 200, m)

	steps := []struct {
		actor, method, path, ctype, body string
		status                           int
		hdr                              []string
	}{
		{"rita", "POST", g0 + "/query", "application/json", `{"query":"query q() { match { $p: Person } return { $p.name } }"}`, 200, nil},
		{"rita", "GET", g0 + "/branches", "", "", 200, nil},
		{"rita", "GET", g0 + "/snapshot?branch=topic", "", "", 200, nil},
		{"rita", "POST", g0 + "/mutate", "application/json", ins("x", "topic"), 403, nil},
		{"alice", "POST", g0 + "/mutate", "application/json", ins("x", "main"), 403, nil},
		{"alice", "POST", g0 + "/mutate/if-graph-commit", "application/json", ins("x", "main"), 403, []string{api.HeaderIfGraphCommit, "01KA3Q8J5YV9H0M3WQ8X2C4T7B"}},
		// Denied before the engine: the branch does not exist, yet 403.
		{"rita", "POST", g0 + "/mutate", "application/json", ins("x", "nope"), 403, nil},
		{"alice", "POST", g0 + "/mutate", "application/json", ins("bo", "topic"), 200, nil},
		{"alice", "POST", g0 + "/load/ndjson?branch=main", "application/x-ndjson", `{"type":"Person","data":{"name":"cy"}}` + "\n", 403, nil},
		{"rita", "POST", g0 + "/load/ndjson?branch=topic", "application/x-ndjson", `{"type":"Person","data":{"name":"cy"}}` + "\n", 403, nil},
		{"alice", "POST", g0 + "/load/ndjson?branch=topic", "application/x-ndjson", `{"type":"Person","data":{"name":"cy"}}` + "\n", 200, nil},
		{"alice", "POST", g0 + "/load/ndjson?branch=t3&from=scratch", "application/x-ndjson", `{"type":"Person","data":{"name":"cy"}}` + "\n", 403, nil},
		{"rita", "POST", g0 + "/branches", "application/json", `{"name":"t2"}`, 403, nil},
		{"alice", "POST", g0 + "/branches/merge", "application/json", `{"source":"topic"}`, 403, nil},
		{"alice", "DELETE", g0 + "/branches/main", "", "", 403, nil},
		{"rita", "DELETE", g0 + "/branches/topic", "", "", 403, nil},
		// The delete of the merged branch is checked before the merge.
		{"ops", "POST", g0 + "/branches", "application/json", `{"name":"t4","from":"topic"}`, 200, nil},
		{"rita", "POST", g0 + "/branches/merge", "application/json", `{"source":"t4","target":"topic"}`, 403, nil},
	}
	for _, s := range steps {
		before := commits()
		st, m, _ := as(s.actor).do(s.method, s.path, s.ctype, s.body, s.hdr...)
		mustStatus(t, s.actor+" "+s.method+" "+s.path, st, s.status, m)
		if st == 403 {
			if m["code"] != "forbidden" || !strings.Contains(m["error"].(string), "policy") || !strings.Contains(m["error"].(string), s.actor) {
				t.Fatalf("%s %s: 403 body %v", s.actor, s.path, m)
			}
			if commits() != before {
				t.Fatalf("%s %s: a denied request wrote a commit", s.actor, s.path)
			}
		}
	}
	// ops may merge into main; the data landed only where allowed.
	st, m = as("ops").json("POST", g0+"/branches/merge", `{"source":"topic"}`)
	mustStatus(t, "ops merge", st, 200, m)
	st, m = as("rita").json("POST", g0+"/query", `{"query":"query q() { match { $p: Person } return { $p.name } order { $p.name asc } }"}`)
	mustStatus(t, "rita reads main", st, 200, m)
	if fmt.Sprint(m["rows"]) != "[map[p.name:ada] map[p.name:bo] map[p.name:cy]]" {
		t.Fatalf("rows after the policy run: %v (no denied x)", m["rows"])
	}

	// MCP tool calls meet the same policy.
	cs, err := mcpConnect(t, base, secrets["alice"])
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tool   string
		args   map[string]any
		status float64
	}{
		{"graph_mutate", map[string]any{"query": `mutation m() { insert Person { name: "z" } }`}, 403},
		{"graph_load", map[string]any{"data": `{"type":"Person","data":{"name":"z"}}` + "\n"}, 403},
		{"branch_delete", map[string]any{"name": "main"}, 403},
		{"branch_merge", map[string]any{"source": "topic"}, 403},
		{"graph_mutate", map[string]any{"query": `mutation m() { insert Person { name: "z" } }`, "branch": "topic"}, 0},
		{"graph_query", map[string]any{"query": `query q() { match { $p: Person } return { $p.name } }`}, 0},
	} {
		res := callTool(t, cs, c.tool, c.args)
		if c.status == 0 {
			if res.IsError {
				t.Fatalf("alice %s: %v", c.tool, structured(t, res))
			}
			continue
		}
		te := structured(t, res)
		if !res.IsError || te["status"] != c.status || te["code"] != "forbidden" {
			t.Fatalf("alice %s: %v, want status %v", c.tool, te, c.status)
		}
	}
	csr, err := mcpConnect(t, base, secrets["rita"])
	if err != nil {
		t.Fatal(err)
	}
	if res := callTool(t, csr, "branch_create", map[string]any{"name": "r1"}); !res.IsError || structured(t, res)["status"] != 403.0 {
		t.Fatalf("rita branch_create: %+v", res)
	}
}

// TestServerPolicyGraphList: GET /graphs lists only the graphs the actor
// may read graph-wide; an actor no policy permits gets 403 on a graph
// route.
func TestServerPolicyGraphList(t *testing.T) {
	g := testGraph(t)
	tokens, secrets := tokensFor(t, "alice", "bob")
	p, err := ParsePolicy("p.cedar", []byte(`permit (principal == Omnigraph::Actor::"alice", action, resource in Omnigraph::Graph::"default");`))
	if err != nil {
		t.Fatal(err)
	}
	_, base := newTestServer(t, g, Config{Tokens: tokens, Policy: p})
	st, m := (&client{t: t, base: base, token: secrets["alice"]}).json("GET", "/graphs", "")
	mustStatus(t, "alice graphs", st, 200, m)
	if fmt.Sprint(m["graphs"]) != "[map[graph_id:default]]" {
		t.Fatalf("alice graphs: %v", m)
	}
	bob := &client{t: t, base: base, token: secrets["bob"]}
	st, m = bob.json("GET", "/graphs", "")
	mustStatus(t, "bob graphs", st, 200, m)
	if fmt.Sprint(m["graphs"]) != "[]" {
		t.Fatalf("bob graphs: %v", m)
	}
	st, m = bob.json("GET", "/graphs/default/commits", "")
	mustStatus(t, "bob commits", st, 403, m)
}
