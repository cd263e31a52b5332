package server

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/oklog/ulid/v2"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/graph/merge"
	"github.com/omnigraph-go/omnigraph/graph/mutate"
)

// The policy tests generated from the authorization tables (authz.go):
// under a policy that forbids one branch (secret), every input a route or
// tool declares is sent that branch's name or the id of a commit only it
// published; every listing is searched for it. A control sends the same
// requests without the forbid.

// secretPolicy permits everything but any action on branch secret.
const secretPolicy = `@id("all") permit (principal, action, resource);
@id("no-secret") forbid (principal, action, resource == Omnigraph::Branch::"default/secret");`

// policyFixture is the route fixture plus branch secret (forked from
// main, one commit adding sam: secret) and branch carrier, into which
// secret was merged (its log reaches secret's commit).
type policyFixture struct {
	*fixture
	secret string
}

func newPolicyFixture(t *testing.T) *policyFixture {
	t.Helper()
	ctx := context.Background()
	fx := newFixture(t)
	if _, err := fx.g.CreateBranch(ctx, "secret", "main"); err != nil {
		t.Fatal(err)
	}
	res, err := mutate.Query(ctx, fx.g, `mutation m() { insert Person { name: "sam" } }`, "", mutate.Options{Branch: "secret"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fx.g.CreateBranch(ctx, "carrier", "main"); err != nil {
		t.Fatal(err)
	}
	if _, err := merge.Run(ctx, fx.g, "secret", "carrier", merge.Options{}); err != nil {
		t.Fatal(err)
	}
	return &policyFixture{fixture: fx, secret: res.Commit.ID}
}

// hostile is one request made from an example: input res set to value.
type hostile struct {
	what  string // "route.kind:name=value"
	kind  resKind
	value string
}

// hostileValues are the values each input kind is sent: the forbidden
// branch's name, or (also, for a ref) the commit only it published.
func (fx *policyFixture) hostileValues(res authzRes) []hostile {
	h := func(k resKind, v string) hostile {
		return hostile{what: fmt.Sprintf("%s %s=%s", res.kind, res.name, v), kind: k, value: v}
	}
	switch res.kind {
	case resCommit:
		return []hostile{h(resCommit, fx.secret)}
	case resStartAfter:
		return []hostile{h(resCommit, "after:"+fx.secret)}
	case resRef:
		return []hostile{h(resBranch, "secret"), h(resCommit, fx.secret)}
	}
	return []hostile{h(resBranch, "secret")}
}

// withInput is example ex of route rt with input res set to v: a
// snapshot drops the example's branch (they exclude each other).
func withInput(t *testing.T, rt Route, ex sample, res authzRes, v string) sample {
	t.Helper()
	out := ex
	switch res.in {
	case "query":
		out.query = url.Values{}
		for k, vs := range ex.query {
			out.query[k] = slices.Clone(vs)
		}
		if res.name == "snapshot" {
			out.query.Del("branch")
		}
		out.query.Set(res.name, v)
	case "body":
		var m map[string]any
		if err := json.Unmarshal([]byte(ex.body), &m); err != nil {
			t.Fatalf("%s: example body %s: %v", rt.OperationID, ex.body, err)
		}
		if res.name == "snapshot" {
			delete(m, "branch")
		}
		m[res.name] = v
		out.body = jsonBody(m)
	case "path":
		tmpl := strings.Split(rt.Path, "/")
		segs := strings.Split(ex.path, "/")
		i := slices.Index(tmpl, "{"+res.name+"}")
		if i < 0 || len(segs) < len(tmpl) {
			t.Fatalf("%s: no path parameter %s in %s", rt.OperationID, res.name, rt.Path)
		}
		segs = append(append(segs[:i:i], url.PathEscape(v)), segs[i+1:]...)
		out.path = strings.Join(segs, "/")
	default:
		t.Fatalf("%s: input %s is carried in %q", rt.OperationID, res.name, res.in)
	}
	return out
}

// withArg is the tool arguments args with res set to v.
func withArg(args map[string]any, res authzRes, v string) map[string]any {
	out := map[string]any{}
	for k, x := range args {
		out[k] = x
	}
	if res.name == "snapshot" {
		delete(out, "branch")
	}
	out[res.name] = v
	return out
}

// sameAsUnknown checks that refused answers exactly as the same request
// with an unknown commit id (got from unknown) does: same status and,
// with the ids swapped, the same body.
func sameAsUnknown(t *testing.T, what string, refused, unknown answer, secretID, unknownID string) {
	t.Helper()
	want := strings.ReplaceAll(unknown.raw, unknownID, secretID)
	if refused.status != unknown.status || refused.raw != want {
		t.Errorf("%s: refused as %d %s\nan unknown commit is answered %d %s", what, refused.status, refused.raw, unknown.status, want)
	}
}

// controlWant are the hostile requests that cannot succeed without the
// forbid either, and what they answer then (not the 403 the forbid gives).
var controlWant = map[string]int{
	"createBranch target name=secret":               409, // secret exists
	"mutateIfGraphCommit branch branch=secret":      412, // the header names main's head
	"invokeQueryIfGraphCommit branch branch=secret": 412,
	"branch_create target name=secret":              409,
}

// TestPolicyForbiddenBranchOnEveryRouteAndTool (issue 36 item 5): with
// read on the graph and a forbid on branch secret, every route and tool
// given secret's name is refused 403 before any engine work, every route
// and tool given the id of a commit only secret published (a snapshot, a
// commit, a diff ref, the feed's start) answers exactly as it answers an
// unknown commit id, and no listing names secret or its commit. Nothing
// changes. The control: without the forbid the same requests succeed
// (or answer other than the refusal), every listing names secret, and a
// read by commit id costs the same storage requests under both policies.
func TestPolicyForbiddenBranchOnEveryRouteAndTool(t *testing.T) {
	fx := newPolicyFixture(t)
	tokens, secrets := tokensFor(t, "alice")
	token := secrets["alice"]
	_, forbid := fx.serve(t, Config{Tokens: tokens, Policy: mustPolicy(t, secretPolicy)})
	_, allow := fx.serve(t, Config{Tokens: tokens})
	unknownID := ulid.Make().String()
	before := fx.state(t)
	routes := 0
	for _, rt := range Routes() {
		entry := routeAuthz[rt.OperationID]
		ex, ok := routeExample(t, fx.fixture, rt)
		if !ok {
			t.Fatalf("route %s has no example in routeExample: add one", rt.OperationID)
		}
		for _, res := range entry.res {
			for _, h := range fx.hostileValues(res) {
				routes++
				what := rt.OperationID + " " + h.what
				hx := withInput(t, rt, ex, res, h.value)
				a := send(t, forbid, token, rt.Method, hx, nil)
				if h.kind == resCommit {
					ux := withInput(t, rt, ex, res, strings.ReplaceAll(h.value, fx.secret, unknownID))
					sameAsUnknown(t, what, a, send(t, forbid, token, rt.Method, ux, nil), fx.secret, unknownID)
					if a.status == 200 {
						t.Errorf("%s: answered 200 %s", what, a.raw)
					}
					continue
				}
				if a.status != 403 || rt.Method != "HEAD" && a.body["code"] != "forbidden" {
					t.Errorf("%s: status %d %s, want 403", what, a.status, a.raw)
				}
			}
		}
		if entry.lists == listBranches {
			lx := ex
			if rt.OperationID == "listCommits" {
				lx.query = url.Values{"branch": {"carrier"}}
			}
			fx.checkListing(t, rt.OperationID, send(t, forbid, token, rt.Method, lx, nil), send(t, allow, token, rt.Method, lx, nil))
		}
	}
	tools := 0
	for _, name := range allTools() {
		args, ok := toolExample(fx.fixture, name)
		if !ok {
			t.Fatalf("tool %s has no example in toolExample: add one", name)
		}
		entry := fx.toolEntry(name)
		for _, res := range entry.res {
			for _, h := range fx.hostileValues(res) {
				tools++
				what := name + " " + h.what
				out, isErr, rpcErr, a := mcpCall(t, forbid, token, name, withArg(args, res, h.value), nil)
				if h.kind == resCommit {
					_, _, _, u := mcpCall(t, forbid, token, name, withArg(args, res, strings.ReplaceAll(h.value, fx.secret, unknownID)), nil)
					sameAsUnknown(t, what, a, u, fx.secret, unknownID)
					if !isErr {
						t.Errorf("%s: not an error result: %s", what, a.raw)
					}
					continue
				}
				if rpcErr != nil || !isErr || out["status"] != 403.0 {
					t.Errorf("%s: %s, want an error result with status 403", what, a.raw)
				}
			}
		}
		if entry.lists == listBranches {
			largs := args
			if name == "commit_list" {
				largs = map[string]any{"branch": "carrier"}
			}
			_, _, _, fa := mcpCall(t, forbid, token, name, largs, nil)
			_, _, _, aa := mcpCall(t, allow, token, name, largs, nil)
			fx.checkListing(t, name, fa, aa)
		}
	}
	if routes < 40 || tools < 25 {
		t.Fatalf("only %d route and %d tool requests were generated: the tables lost their inputs", routes, tools)
	}
	if got := fx.state(t); got != before {
		t.Fatalf("refused requests changed the graph: %s, was %s", got, before)
	}
	t.Run("control", func(t *testing.T) { fx.control(t, tokens, token) })
	t.Run("cost", func(t *testing.T) { fx.commitReadCost(t, forbid, allow, token) })
}

// checkListing: the answer under the forbid names neither secret nor its
// commit; the same listing without the forbid does (so the search could
// see it).
func (fx *policyFixture) checkListing(t *testing.T, what string, refused, allowed answer) {
	t.Helper()
	if refused.status != 200 || allowed.status != 200 {
		t.Fatalf("listing %s: status %d %s / %d %s, want 200", what, refused.status, refused.raw, allowed.status, allowed.raw)
	}
	names := func(a answer) bool {
		if strings.Contains(a.raw, `"secret"`) || strings.Contains(a.raw, `\"secret\"`) {
			return true
		}
		// A commit list names the commit by its own entry (a merge's
		// parent ids are ids, not entries to read).
		return strings.Contains(a.raw, `"graph_commit_id":"`+fx.secret+`"`) || strings.Contains(a.raw, `\"graph_commit_id\":\"`+fx.secret+`\"`)
	}
	if names(refused) {
		t.Errorf("listing %s names branch secret or its commit under the forbid: %s", what, refused.raw)
	}
	if what == "getStatus" {
		// Status names no branch; it counts them.
		if refused.body["branches"] != 3.0 || allowed.body["branches"] != 4.0 {
			t.Errorf("status counts %v branches under the forbid and %v without, want 3 and 4", refused.body["branches"], allowed.body["branches"])
		}
		return
	}
	if !names(allowed) {
		t.Errorf("listing %s does not name secret or its commit without the forbid either (the check sees nothing): %s", what, allowed.raw)
	}
}

// toolEntry is the declaration of tool name: a built-in one's, else the
// fixture's stored read (people) or mutation (add).
func (fx *policyFixture) toolEntry(name string) authzEntry {
	if e, ok := toolAuthz[name]; ok {
		return e
	}
	if name == "add" {
		return storedMutationToolAuthz
	}
	return storedReadToolAuthz
}

// control sends every hostile request without the forbid: each succeeds
// (or fails for another reason than the policy), and a commit id is no
// longer answered as an unknown one. A write runs on a fresh fixture.
func (fx *policyFixture) control(t *testing.T, tokens *Tokens, token string) {
	_, shared := fx.serve(t, Config{Tokens: tokens})
	unknownID := ulid.Make().String()
	serverFor := func(write bool) (*policyFixture, string) {
		if !write {
			return fx, shared
		}
		f := newPolicyFixture(t)
		_, base := f.serve(t, Config{Tokens: tokens})
		return f, base
	}
	for _, rt := range Routes() {
		for _, res := range routeAuthz[rt.OperationID].res {
			for _, h := range fx.hostileValues(res) {
				f, base := serverFor(rt.Writes())
				ex, _ := routeExample(t, f.fixture, rt)
				what := rt.OperationID + " " + h.what
				v := strings.ReplaceAll(h.value, fx.secret, f.secret)
				a := send(t, base, token, rt.Method, withInput(t, rt, ex, res, v), nil)
				if h.kind == resCommit {
					u := send(t, base, token, rt.Method, withInput(t, rt, ex, res, strings.ReplaceAll(v, f.secret, unknownID)), nil)
					if a.status == u.status && a.raw == strings.ReplaceAll(u.raw, unknownID, f.secret) {
						t.Errorf("%s without the forbid: answered as an unknown commit: %d %s", what, a.status, a.raw)
					}
					continue
				}
				want := ex.want
				if w, ok := controlWant[what]; ok {
					want = w
				}
				if a.status != want {
					t.Errorf("%s without the forbid: status %d %s, want %d", what, a.status, a.raw, want)
				}
			}
		}
	}
	for _, name := range allTools() {
		for _, res := range fx.toolEntry(name).res {
			for _, h := range fx.hostileValues(res) {
				write := slices.Contains([]string{"graph_mutate", "graph_load", "branch_create", "branch_delete", "branch_merge", "add"}, name)
				f, base := serverFor(write)
				args, _ := toolExample(f.fixture, name)
				what := name + " " + h.what
				v := strings.ReplaceAll(h.value, fx.secret, f.secret)
				out, isErr, _, a := mcpCall(t, base, token, name, withArg(args, res, v), nil)
				if h.kind == resCommit {
					_, _, _, u := mcpCall(t, base, token, name, withArg(args, res, strings.ReplaceAll(v, f.secret, unknownID)), nil)
					if a.raw == strings.ReplaceAll(u.raw, unknownID, f.secret) {
						t.Errorf("%s without the forbid: answered as an unknown commit: %s", what, a.raw)
					}
					continue
				}
				want := 200.0
				switch {
				case name == "blob_read" || name == "blob_stat":
					want = 400 // the example's property is no Blob (after the schema read)
				case controlWant[what] != 0:
					want = float64(controlWant[what])
				}
				got := 200.0
				if isErr {
					got, _ = out["status"].(float64)
				}
				if got != want {
					t.Errorf("%s without the forbid: %s, want status %v", what, a.raw, want)
				}
			}
		}
	}
}

// commitReadCost (issue 36 item 5: the check costs no storage request):
// each route and tool that reads by commit id, given a commit of main,
// makes the same storage requests under the forbid as without it.
func (fx *policyFixture) commitReadCost(t *testing.T, forbid, allow, token string) {
	for _, rt := range Routes() {
		if rt.Writes() {
			continue
		}
		ex, _ := routeExample(t, fx.fixture, rt)
		for _, res := range routeAuthz[rt.OperationID].res {
			if res.kind != resCommit && res.kind != resRef {
				continue
			}
			hx := withInput(t, rt, ex, res, fx.first)
			counts := map[string]int{}
			for _, base := range []string{allow, allow, forbid} { // the first warms the handle's caches
				fx.store.Reset()
				a := send(t, base, token, rt.Method, hx, nil)
				if a.status >= 500 || a.status == 403 || a.status == 404 {
					t.Fatalf("%s %s=%s: status %d %s", rt.OperationID, res.name, fx.first, a.status, a.raw)
				}
				counts[base] = fx.store.Snapshot().Total
			}
			if counts[forbid] != counts[allow] {
				t.Errorf("%s by commit id: %d storage requests under the forbid, %d without: the check costs requests", rt.OperationID, counts[forbid], counts[allow])
			}
		}
	}
}

// TestAuthzTableCoversEveryRouteAndTool: the tables declare every route
// and tool (New refuses to build otherwise), and the check names a route
// or tool left out and an entry for one that does not exist.
func TestAuthzTableCoversEveryRouteAndTool(t *testing.T) {
	if err := checkAuthz(); err != nil {
		t.Fatal(err)
	}
	routes := append(api.Routes(), api.Route{Method: "GET", Path: "/graphs/{graph_id}/new", OperationID: "newRoute"})
	tools := append(MCPTools(), storedListTool, storedRunTool, "new_tool")
	rt := maps.Clone(routeAuthz)
	rt["goneRoute"] = authzEntry{}
	tt := maps.Clone(toolAuthz)
	tt["gone_tool"] = authzEntry{}
	err := checkAuthzOf(routes, tools, rt, tt)
	for _, want := range []string{`route GET /graphs/{graph_id}/new (newRoute) has no entry`, `"goneRoute", which is no route`, "MCP tool new_tool has no entry", `"gone_tool", which is no tool`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("check of a table with gaps: %v, want it to say %s", err, want)
		}
	}
}

// TestPolicyCommitOfDeletedBranchIsHidden (issue 36 item 5): a commit
// published by a branch since deleted is still that branch's: under a
// forbid on the name, a query of it as a snapshot and GET commits/ID
// answer as an unknown commit; without the forbid both read it.
func TestPolicyCommitOfDeletedBranchIsHidden(t *testing.T) {
	ctx := context.Background()
	fx := newFixture(t)
	if _, err := fx.g.CreateBranch(ctx, "gone", "main"); err != nil {
		t.Fatal(err)
	}
	res, err := mutate.Query(ctx, fx.g, `mutation m() { insert Person { name: "gil" } }`, "", mutate.Options{Branch: "gone"})
	if err != nil {
		t.Fatal(err)
	}
	if err := fx.g.DeleteBranch(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	id, unknownID := res.Commit.ID, ulid.Make().String()
	tokens, secrets := tokensFor(t, "alice")
	_, forbid := fx.serve(t, Config{Tokens: tokens, Policy: mustPolicy(t, `@id("all") permit (principal, action, resource);
@id("no-gone") forbid (principal, action, resource == Omnigraph::Branch::"default/gone");`)})
	_, allow := fx.serve(t, Config{Tokens: tokens})
	reads := map[string]func(string) sample{
		"query": func(c string) sample {
			return sample{path: "/graphs/default/query", ctype: "application/json", body: jsonBody(map[string]any{"query": exQuery, "snapshot": c})}
		},
		"getCommit": func(c string) sample { return sample{path: "/graphs/default/commits/" + c} },
	}
	for name, req := range reads {
		sameAsUnknown(t, name, send(t, forbid, secrets["alice"], method(name), req(id), nil),
			send(t, forbid, secrets["alice"], method(name), req(unknownID), nil), id, unknownID)
		// Without the forbid the commit is found: GET commits/ID reads it,
		// and the query is told its data went with the delete (the
		// removed-data refusal, not the unknown-commit answer).
		a := send(t, allow, secrets["alice"], method(name), req(id), nil)
		if name == "getCommit" && a.status != 200 || name == "query" && !strings.Contains(string(a.raw), "which has been deleted, and its data is gone") {
			t.Errorf("%s of the deleted branch's commit without the forbid: %d %s", name, a.status, a.raw)
		}
	}
}

func method(op string) string {
	if op == "query" {
		return "POST"
	}
	return "GET"
}

// TestPolicyBranchOnlyTokenUsesCatalogAndQueries (issue 36 item 6): a
// token that may read one branch only (not main) gets the Iceberg
// config (iceberg-go's client, which asks it first, starts) and the
// namespaces; the table list (main's types) stays main's. GET queries
// lists the stored queries it may invoke, as tools/list does, and it
// runs one on its branch. An actor that may read nothing is refused the
// config. The token endpoint says the catalog takes bearer tokens.
func TestPolicyBranchOnlyTokenUsesCatalogAndQueries(t *testing.T) {
	fx := newFixture(t)
	tokens, secrets := tokensFor(t, "bob", "eve")
	_, base := fx.serve(t, Config{Tokens: tokens, Policy: mustPolicy(t, `@id("feature-only")
permit (principal == Omnigraph::Actor::"bob", action == Omnigraph::Action::"read", resource == Omnigraph::Branch::"default/feature");
@id("people")
permit (principal == Omnigraph::Actor::"bob", action == Omnigraph::Action::"invoke_query", resource) when { context.query == "people" };`)})
	bob, eve := secrets["bob"], secrets["eve"]
	if _, err := rest.NewCatalog(context.Background(), "omnigraph", base+IcebergPrefix, rest.WithOAuthToken(bob), rest.WithWarehouseLocation("default")); err != nil {
		t.Fatalf("iceberg-go's catalog with a branch-only token: %v", err)
	}
	for path, want := range map[string]int{"/v1/config?warehouse=default": 200, "/v1/default/namespaces": 200, "/v1/default/namespaces/nodes": 200, "/v1/default/namespaces/nodes/tables": 403} {
		if code, body := rawIceberg(t, "GET", base+IcebergPrefix+path, bob); code != want {
			t.Errorf("GET %s as a branch-only token: %d %s, want %d", path, code, body, want)
		}
	}
	if code, body := rawIceberg(t, "GET", base+IcebergPrefix+"/v1/config?warehouse=default", eve); code != 403 {
		t.Errorf("config for an actor that may read nothing: %d %s, want 403", code, body)
	}
	a := send(t, base, bob, "GET", sample{path: "/graphs/default/queries"}, nil)
	var listed []string
	for _, q := range a.body["queries"].([]any) {
		listed = append(listed, q.(map[string]any)["name"].(string))
	}
	if a.status != 200 || fmt.Sprint(listed) != "[people]" {
		t.Fatalf("GET queries as a branch-only token: %d %s, want people", a.status, a.raw)
	}
	lr := send(t, base, bob, "POST", sample{path: "/graphs/default/mcp", ctype: "application/json", body: `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		header: http.Header{"Accept": {"application/json, text/event-stream"}}}, nil)
	if !strings.Contains(lr.raw, `"name":"people"`) || strings.Contains(lr.raw, `"name":"add"`) {
		t.Errorf("tools/list and GET queries disagree: %s", lr.raw)
	}
	if a := send(t, base, bob, "POST", sample{path: "/graphs/default/queries/people", ctype: "application/json", body: `{"branch":"feature"}`}, nil); a.status != 200 || !strings.Contains(a.raw, "bob") {
		t.Errorf("people on feature: %d %s", a.status, a.raw)
	}
	code, body := rawIceberg(t, "POST", base+IcebergPrefix+"/v1/oauth/tokens", "")
	if code != 400 || !strings.Contains(body, `"error":"invalid_request"`) || !strings.Contains(body, "bearer token") || strings.Contains(body, "read-only") {
		t.Errorf("POST oauth/tokens: %d %s, want 400 saying the catalog takes bearer tokens", code, body)
	}
}
