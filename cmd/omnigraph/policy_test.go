package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/server"
)

const testPolicy = `
@id("readers")
permit (principal, action == Omnigraph::Action::"read", resource in Omnigraph::Graph::"people");

@id("writers")
permit (principal in Omnigraph::Group::"writers", action in [Omnigraph::Action::"change", Omnigraph::Action::"branch_create"],
        resource in Omnigraph::Graph::"people");

@id("protect-main")
forbid (principal, action == Omnigraph::Action::"change", resource == Omnigraph::Branch::"people/main")
unless { principal == Omnigraph::Actor::"release" };
`

// TestPolicyValidate: a good file is valid; each kind of mistake (parse
// error, unknown action, unknown entity type, a context member the model
// lacks, an attribute read off a resource that may be the graph) is named
// with its policy and exits 1; and serve refuses to start with exactly the
// files validate refuses (one verdict).
func TestPolicyValidate(t *testing.T) {
	good := writeFile(t, "good.cedar", testPolicy)
	out := mustCLI(t, "policy", "validate", "--policy", good, "--json")
	var v struct {
		Valid    bool                   `json:"valid"`
		Policies int                    `json:"policies"`
		Problems []server.PolicyProblem `json:"problems"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || !v.Valid || v.Policies != 3 || len(v.Problems) != 0 {
		t.Fatalf("good policy: %s", out)
	}
	bad := []struct{ name, src, want string }{
		{"parse", `permit (principal, action, resource`, "parse error"},
		{"action", `@id("typo") permit (principal, action == Omnigraph::Action::"reed", resource);`, "reed"},
		{"entity", `permit (principal, action, resource in Omnigraph::Grph::"people");`, "Omnigraph::Grph"},
		{"context", `@id("ctx") permit (principal, action, resource) when { context.brnach == "x" };`, "brnach"},
		{"unguarded", `permit (principal, action, resource) when { resource.name like "feat/*" };`, "name"},
		{"empty", "// nothing\n", "no policy"},
	}
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.json")
	mustCLI(t, "token", "add", "alice", "--tokens", tokens)
	graphDir := filepath.Join(dir, "g")
	mustCLI(t, "init", "--schema", writeSchema(t), graphDir)
	for _, b := range bad {
		f := writeFile(t, b.name+".cedar", b.src)
		code, out, errs := cli(t, "policy", "validate", "--policy", f)
		if code != exitError || !strings.Contains(out, b.want) || !strings.Contains(errs, "serve refuses") {
			t.Errorf("%s: exit %d\nstdout: %s\nstderr: %s", b.name, code, out, errs)
		}
		if code, _, errs := cli(t, "serve", "--store", graphDir, "--listen", "127.0.0.1:0", "--tokens", tokens, "--policy", f); code != exitUsage || !strings.Contains(errs, b.want) {
			t.Errorf("%s: serve started or said something else: exit %d, %s", b.name, code, errs)
		}
	}
	if code, _, _ := cli(t, "policy", "validate"); code != exitUsage {
		t.Errorf("validate without a policy: exit %d", code)
	}
}

// TestPolicyTestAndExplain: the cases pass and fail as the policy decides,
// with the deciding policy named; groups come from the tests file and from
// a serve --config; a malformed tests file is a usage error naming what is
// wrong (in JSON terms, never Go's).
func TestPolicyTestAndExplain(t *testing.T) {
	pol := writeFile(t, "p.cedar", testPolicy)
	tests := writeFile(t, "t.json", `{"version": 1, "groups": {"writers": ["alice"]}, "cases": [
  {"name": "anyone reads", "actor": "rita", "action": "read", "graph": "people", "branch": "main", "expect": "allow"},
  {"name": "alice writes a branch", "actor": "alice", "action": "change", "graph": "people", "branch": "dev", "expect": "allow"},
  {"name": "main is protected", "actor": "alice", "action": "change", "graph": "people", "branch": "main", "expect": "deny"},
  {"name": "rita cannot fork", "actor": "rita", "action": "branch_create", "graph": "people", "branch": "main", "target_branch": "mine", "expect": "deny"},
  {"name": "other graph", "actor": "rita", "action": "read", "graph": "orders", "expect": "deny"}
]}`)
	out := mustCLI(t, "policy", "test", "--policy", pol, "--tests", tests)
	if !strings.Contains(out, "5 cases, 5 passed, 0 failed") || !strings.Contains(out, "forbidden by protect-main") {
		t.Fatalf("passing cases:\n%s", out)
	}
	wrong := writeFile(t, "w.json", `{"version": 1, "cases": [
  {"name": "alice writes a branch", "actor": "alice", "action": "change", "graph": "people", "branch": "dev", "expect": "allow"}]}`)
	code, out, errs := cli(t, "policy", "test", "--policy", pol, "--tests", wrong, "--json")
	var r struct {
		Failed  int                `json:"failed"`
		Results []policyCaseResult `json:"results"`
	}
	if code != exitError || json.Unmarshal([]byte(out), &r) != nil || r.Failed != 1 || r.Results[0].Got != "deny" ||
		!strings.Contains(r.Results[0].Reason, "no policy permits") || !strings.Contains(errs, "policy_test_failed") {
		t.Fatalf("a case without its group: exit %d\n%s\n%s", code, out, errs)
	}
	// The same case passes with the groups of a serve --config.
	cfg := writeFile(t, "serve.json", `{"version": 1, "policy": "`+pol+`", "groups": {"writers": ["alice"]}, "graphs": {"people": "/tmp/x"}}`)
	if out := mustCLI(t, "policy", "test", "--config", cfg, "--tests", wrong); !strings.Contains(out, "1 passed") {
		t.Fatalf("with --config groups:\n%s", out)
	}

	out = mustCLI(t, "policy", "explain", "--policy", pol, "--actor", "alice", "--action", "change", "--graph", "people", "--branch", "main", "--json")
	var e server.Explanation
	if err := json.Unmarshal([]byte(out), &e); err != nil || e.Allowed || len(e.Policies) != 1 || e.Policies[0].ID != "protect-main" ||
		e.Policies[0].Effect != "forbid" || !strings.Contains(e.Policies[0].Text, "forbid") || e.Policies[0].Line == 0 {
		t.Fatalf("explain: %s", out)
	}
	out = mustCLI(t, "policy", "explain", "--policy", pol, "--actor", "x", "--action", "read", "--graph", "people")
	if !strings.HasPrefix(out, "ALLOW") || !strings.Contains(out, "readers") {
		t.Fatalf("explain text: %s", out)
	}

	for _, c := range []struct{ body, want string }{
		{`{"version": 1, "cases": [{"actor": "a", "action": "read", "graph": "g", "expect": "allow", "brnach": "x"}]}`, `unknown member "brnach"`},
		{`{"version": 1, "cases": [{"actor": "a", "action": "reed", "graph": "g", "expect": "allow"}]}`, `unknown action "reed"`},
		{`{"version": 1, "cases": [{"actor": "a", "action": "read", "graph": "g", "expect": "yes"}]}`, `"allow" or "deny"`},
		{`{"version": 1, "cases": [{"actor": 5, "action": "read", "graph": "g", "expect": "allow"}]}`, `"cases.actor" has a JSON number where a string is expected`},
		{`[1, 2]`, "JSON array where an object is expected"},
		{`{"version": 2, "cases": []}`, `"version": 1`},
		{`{"version": 1, "cases": []}`, "no cases"},
	} {
		f := writeFile(t, "bad.json", c.body)
		code, _, errs := cli(t, "policy", "test", "--policy", pol, "--tests", f)
		if code != exitUsage || !strings.Contains(errs, c.want) || strings.Contains(errs, "Go ") || strings.Contains(errs, "main.") {
			t.Errorf("%s: exit %d, %s", c.body, code, errs)
		}
	}
	if code, _, errs := cli(t, "policy", "explain", "--policy", pol, "--actor", "a", "--action", "fly", "--graph", "g"); code != exitUsage || !strings.Contains(errs, "unknown action") {
		t.Errorf("explain with an unknown action: exit %d %s", code, errs)
	}
}

// TestPolicyExplainIsTheServersDecision: Explain's verdict is Authorize's
// for every action, actor and branch combination of a policy with permits,
// forbids and groups (the CLI and the server cannot differ).
func TestPolicyExplainIsTheServersDecision(t *testing.T) {
	p, err := server.ParsePolicy("p", []byte(testPolicy))
	if err != nil {
		t.Fatal(err)
	}
	p = p.WithGroups(map[string][]string{"writers": {"alice"}})
	for _, act := range server.Actions() {
		for _, actor := range []string{"alice", "rita", "release", "anonymous"} {
			for _, br := range [][2]string{{"", ""}, {"main", ""}, {"dev", ""}, {"main", "new"}, {"", "main"}} {
				for _, g := range []string{"people", "orders"} {
					q := server.AuthzRequest{Actor: actor, Graph: g, Action: act, Branch: br[0], TargetBranch: br[1]}
					if e, d := p.Explain(q), p.Authorize(q); e.Allowed != d.Allowed || len(e.Policies) != len(d.Policies) {
						t.Errorf("%+v: explain %v (%v), authorize %v (%v)", q, e.Allowed, e.Policies, d.Allowed, d.Policies)
					}
				}
			}
		}
	}
	if out := mustCLI(t, "policy", "schema"); !strings.Contains(out, `"branch_merge"`) || !strings.Contains(out, "entity Branch in [Graph]") {
		t.Errorf("schema: %s", out)
	}
}
