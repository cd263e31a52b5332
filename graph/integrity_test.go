package graph_test

// Data-integrity rules of every writer (issue 11, items 1, 2 and 7):
//   - @card(min..max) holds on the result for every source a write touches
//     (load in every mode, mutation insert/update/delete);
//   - load --mode overwrite of a node type never leaves an edge whose
//     endpoint is gone;
//   - load --mode merge identifies an edge without data.id by its endpoint
//     pair, so loading one file twice does not grow the graph.
// Every refusal leaves the graph exactly as it was: same head commit, same
// table versions, same rows.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend/counter"
	"github.com/omnigraph-go/omnigraph/backend/fault"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/load"
	"github.com/omnigraph-go/omnigraph/graph/mutate"
)

const integritySchema = `
node Engineer {
  email: String @key
  name: String?
}
node Team {
  slug: String @key
}
node Project {
  code: String @key
}
edge MemberOf: Engineer -> Team @card(1..1)
edge WorksOn: Engineer -> Project @card(1..) {
  hours: I32?
}
edge Knows: Engineer -> Engineer {
  since: I32?
}
`

// integrityBase is a consistent graph: every engineer in exactly one team
// and on at least one project. Edges of the @card types carry ids.
const integrityBase = `{"type":"Team","data":{"slug":"core"}}
{"type":"Team","data":{"slug":"web"}}
{"type":"Project","data":{"code":"p1"}}
{"type":"Project","data":{"code":"p2"}}
{"type":"Engineer","data":{"email":"ann","name":"Ann"}}
{"type":"Engineer","data":{"email":"bob","name":"Bob"}}
{"edge":"MemberOf","from":"ann","to":"core","data":{"id":"m-ann"}}
{"edge":"MemberOf","from":"bob","to":"web","data":{"id":"m-bob"}}
{"edge":"WorksOn","from":"ann","to":"p1","data":{"id":"w-ann"}}
{"edge":"WorksOn","from":"bob","to":"p2","data":{"id":"w-bob"}}
`

var integrityTables = []struct {
	key  string
	cols []string
}{
	{"node:Engineer", []string{"name"}},
	{"node:Team", nil},
	{"node:Project", nil},
	{"edge:MemberOf", []string{"src", "dst"}},
	{"edge:WorksOn", []string{"src", "dst", "hours"}},
	{"edge:Knows", []string{"src", "dst", "since"}},
}

func newIntegrityRig(t testing.TB) *wrig {
	t.Helper()
	r := &wrig{mem: mem.New()}
	r.fault = fault.New(r.mem)
	r.count = counter.New(r.fault)
	g, err := graph.Init(context.Background(), r.count, integritySchema, graph.InitOptions{Actor: "tester"})
	if err != nil {
		t.Fatalf("Init: %v", err)
	}
	r.g = g
	r.load(t, load.Append, integrityBase)
	return r
}

// image is everything a refused write must leave alone: the head commit,
// every table version, and every row.
func (r *wrig) image(t testing.TB) string {
	t.Helper()
	return r.state(t, "main") + r.imageRows(t)
}

// imageRows renders every row of every table.
func (r *wrig) imageRows(t testing.TB) string {
	t.Helper()
	var b strings.Builder
	for _, tb := range integrityTables {
		fmt.Fprintf(&b, "%s: %s\n", tb.key, strings.Join(r.rows(t, "main", tb.key, tb.cols...), " "))
	}
	return b.String()
}

// refused runs write, which must fail with an error matching every target
// and containing every want, and checks that the graph did not change.
func refused(t *testing.T, r *wrig, write func() error, targets []error, want ...string) {
	t.Helper()
	before := r.image(t)
	err := write()
	if err == nil {
		t.Fatalf("write accepted, want a refusal containing %q", want)
	}
	for _, target := range targets {
		if !errors.Is(err, target) {
			t.Errorf("error %v does not match %v", err, target)
		}
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
	if after := r.image(t); after != before {
		t.Errorf("a refused write changed the graph:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

func (r *wrig) tryLoad(mode load.Mode, data string, replace ...string) func() error {
	return func() error {
		_, err := load.Run(context.Background(), r.g, strings.NewReader(data), load.Options{Mode: mode, Replace: replace})
		return err
	}
}

func (r *wrig) tryMutate(src string, params map[string]any) func() error {
	return func() error {
		_, err := mutate.Query(context.Background(), r.g, wrapMutation(src), "", mutate.Options{Params: params})
		return err
	}
}

var invalid = []error{graph.ErrInvalidInput}

// TestCardMinLoadRefusesASourceWithoutEdges pins the @card minimum for a
// loaded source node: an Engineer loaded without its MemberOf (1..1) or
// WorksOn (1..) edge is refused in every mode, naming the line of the node.
func TestCardMinLoadRefusesASourceWithoutEdges(t *testing.T) {
	r := newIntegrityRig(t)
	lonely := `{"type":"Engineer","data":{"email":"cy","name":"Cy"}}` + "\n"
	withTeam := lonely + `{"edge":"MemberOf","from":"cy","to":"core"}` + "\n"
	for _, mode := range []load.Mode{load.Append, load.Merge} {
		refused(t, r, r.tryLoad(mode, lonely), invalid, "line 1", "@card violation on edge MemberOf", `source "cy" has 0 edges (min 1, @card(1..1))`)
		refused(t, r, r.tryLoad(mode, withTeam), invalid, "line 1", "@card violation on edge WorksOn", `source "cy" has 0 edges (min 1, @card(1..*))`)
	}
	// An overwrite of Engineer keeping ann and bob but adding a lonely cy.
	keep := `{"type":"Engineer","data":{"email":"ann","name":"Ann"}}` + "\n" + `{"type":"Engineer","data":{"email":"bob","name":"Bob"}}` + "\n"
	refused(t, r, r.tryLoad(load.Overwrite, keep+lonely), invalid, "line 3", `source "cy" has 0 edges (min 1`)

	// With its edges in the same file the node loads, in every mode.
	full := withTeam + `{"edge":"WorksOn","from":"cy","to":"p1"}` + "\n"
	r.load(t, load.Append, full)
	if got := strings.Join(r.rows(t, "main", "node:Engineer", "name"), " "); got != "ann|name=Ann bob|name=Bob cy|name=Cy" {
		t.Errorf("engineers: %s", got)
	}
	// A merge that re-loads existing sources alone counts their committed
	// edges: nothing is missing.
	r.load(t, load.Merge, `{"type":"Engineer","data":{"email":"ann","name":"Ann2"}}`)
	r.load(t, load.Overwrite, keep+`{"type":"Engineer","data":{"email":"cy","name":"Cy"}}`)
	if got := strings.Join(r.rows(t, "main", "edge:MemberOf", "src"), " "); !strings.Contains(got, "src=cy") {
		t.Errorf("cy lost its team: %s", got)
	}
}

// TestCardLoadMovedAndOverwrittenEdges pins the @card check on the former
// source of an edge: a merge that moves an edge (same id, another source)
// away from its only source, and an edge overwrite that leaves a source
// without edges, are refused; the maximum still holds on the new source.
func TestCardLoadMovedAndOverwrittenEdges(t *testing.T) {
	r := newIntegrityRig(t)
	// w-ann moves from ann to bob: bob has 2 WorksOn (allowed), ann 0.
	refused(t, r, r.tryLoad(load.Merge, `{"edge":"WorksOn","from":"bob","to":"p1","data":{"id":"w-ann"}}`), invalid,
		"line 1", "@card violation on edge WorksOn", `source "ann" has 0 edges (min 1`)
	// m-ann moves to bob: bob would have 2 (max 1).
	refused(t, r, r.tryLoad(load.Merge, `{"edge":"MemberOf","from":"bob","to":"core","data":{"id":"m-ann"}}`), invalid,
		"line 1", `source "bob" has 2 edges (max 1`)
	// An overwrite of MemberOf without ann's edge leaves ann with none.
	refused(t, r, r.tryLoad(load.Overwrite, `{"edge":"MemberOf","from":"bob","to":"web"}`), invalid,
		"@card violation on edge MemberOf", `source "ann" has 0 edges (min 1`)
	refused(t, r, r.tryLoad(load.Overwrite, "", "WorksOn"), invalid, "@card violation on edge WorksOn", "has 0 edges (min 1")
	refused(t, r, r.tryLoad(load.Overwrite, `{"edge":"MemberOf","from":"ann","to":"core"}`+"\n"+`{"edge":"MemberOf","from":"ann","to":"web"}`+"\n"+`{"edge":"MemberOf","from":"bob","to":"web"}`), invalid,
		"line 1", `source "ann" has 2 edges (max 1`)

	// Moving an engineer to another team in place (same id, same source,
	// another team) keeps one edge each: accepted.
	r.load(t, load.Merge, `{"edge":"MemberOf","from":"ann","to":"web","data":{"id":"m-ann"}}`)
	// A complete overwrite of an edge type is accepted.
	r.load(t, load.Overwrite, `{"edge":"WorksOn","from":"ann","to":"p2"}`+"\n"+`{"edge":"WorksOn","from":"bob","to":"p2"}`)
	if got := strings.Join(r.rows(t, "main", "edge:MemberOf", "src", "dst"), " "); got != "m-ann|src=ann|dst=web m-bob|src=bob|dst=web" {
		t.Errorf("MemberOf: %s", got)
	}
	if got := r.rows(t, "main", "edge:WorksOn", "dst"); len(got) != 2 || !strings.HasSuffix(got[0], "dst=p2") || !strings.HasSuffix(got[1], "dst=p2") {
		t.Errorf("WorksOn: %v", got)
	}
}

// TestCardMutationInsertUpdateDelete pins @card for mutations: an inserted
// source needs its edges in the same query, a source's last edge cannot be
// deleted (directly or by deleting its destination), the maximum holds, and
// deleting the source itself is fine (its edges go with it).
func TestCardMutationInsertUpdateDelete(t *testing.T) {
	r := newIntegrityRig(t)
	refused(t, r, r.tryMutate(`insert Engineer { email: "cy" }`, nil), invalid,
		"statement 1", "@card violation on edge MemberOf", `source "cy" has 0 edges (min 1`)
	refused(t, r, r.tryMutate(`insert Engineer { email: "cy" }
insert MemberOf { from: "cy", to: "core" }`, nil), invalid, "statement 1", "@card violation on edge WorksOn", `source "cy" has 0 edges (min 1`)
	refused(t, r, r.tryMutate(`insert MemberOf { from: "ann", to: "web" }`, nil), invalid,
		"statement 1", `source "ann" has 2 edges (max 1`)
	refused(t, r, r.tryMutate(`delete MemberOf where from = "ann"`, nil), invalid,
		"statement 1", "@card violation on edge MemberOf", `source "ann" has 0 edges (min 1`)
	refused(t, r, r.tryMutate(`delete WorksOn where to = "p2"`, nil), invalid,
		"statement 1", `source "bob" has 0 edges (min 1`)
	// Deleting a team deletes ann's MemberOf with it: ann would have none.
	refused(t, r, r.tryMutate(`delete Team where slug = "core"`, nil), invalid,
		"statement 1", `source "ann" has 0 edges (min 1`)

	// Insert with every required edge in one query.
	r.mutate(t, wrapMutation(`insert Engineer { email: "cy", name: "Cy" }
insert MemberOf { from: "cy", to: "web" }
insert WorksOn { from: "cy", to: "p1", hours: 1 }
insert WorksOn { from: "cy", to: "p2", hours: 2 }`), nil)
	// An update of a consistent source is accepted.
	r.mutate(t, wrapMutation(`update Engineer set { name: "Ann B" } where email = "ann"`), nil)
	// Deleting one of two WorksOn edges leaves one: accepted.
	r.mutate(t, wrapMutation(`delete WorksOn where hours = 2`), nil)
	// Deleting a source deletes its edges; it needs no check.
	res := r.mutate(t, wrapMutation(`delete Engineer where email = "bob"`), nil)
	if res.AffectedNodes != 1 || res.AffectedEdges != 2 {
		t.Errorf("delete bob: %+v", res)
	}
	if got := strings.Join(r.rows(t, "main", "node:Engineer", "name"), " "); got != "ann|name=Ann B cy|name=Cy" {
		t.Errorf("engineers: %s", got)
	}
	for _, key := range []string{"edge:MemberOf", "edge:WorksOn"} {
		for _, row := range r.rows(t, "main", key, "src", "dst") {
			if strings.Contains(row, "src=bob") {
				t.Errorf("%s kept an edge of the deleted bob: %s", key, row)
			}
		}
	}
	if got := len(r.rows(t, "main", "edge:WorksOn")); got != 2 {
		t.Errorf("%d WorksOn edges, want 2 (ann p1, cy p1)", got)
	}
}

// TestOverwriteRefusesStrandedEdges pins referential integrity for load
// --mode overwrite: replacing a node type's image without a node that
// committed edges still point at (either end) is refused with an error
// naming the edge type and an example edge; overwriting the edges too, or
// keeping the node, is accepted.
func TestOverwriteRefusesStrandedEdges(t *testing.T) {
	r := newIntegrityRig(t)
	r.load(t, load.Append, `{"edge":"Knows","from":"bob","to":"ann","data":{"id":"k1"}}`)
	ri := []error{graph.ErrReferentialIntegrity, graph.ErrInvalidInput}
	onlyBob := `{"type":"Engineer","data":{"email":"bob","name":"Bob"}}`
	refused(t, r, r.tryLoad(load.Overwrite, onlyBob), ri,
		"referential integrity", "overwriting Engineer", "edge Knows", `"k1"`, `(src "bob" -> dst "ann")`, `dst "ann" not found in Engineer`)
	// With Knows replaced as well, MemberOf still points at ann.
	refused(t, r, r.tryLoad(load.Overwrite, onlyBob, "Knows"), ri,
		"edge MemberOf", `"m-ann"`, `src "ann" not found in Engineer`)
	// The destination side: a Team overwrite without core.
	refused(t, r, r.tryLoad(load.Overwrite, `{"type":"Team","data":{"slug":"web"}}`), ri,
		"overwriting Team", "edge MemberOf", `"m-ann"`, `dst "core" not found in Team`)
	refused(t, r, r.tryLoad(load.Overwrite, "", "Project"), ri,
		"overwriting Project", "edge WorksOn", "and 1 more WorksOn edges")

	// An overwrite that keeps every referenced node is accepted and keeps
	// the edges.
	r.load(t, load.Overwrite, `{"type":"Team","data":{"slug":"core"}}`+"\n"+`{"type":"Team","data":{"slug":"web"}}`+"\n"+`{"type":"Team","data":{"slug":"ops"}}`)
	if got := strings.Join(r.rows(t, "main", "edge:MemberOf", "dst"), " "); got != "m-ann|dst=core m-bob|dst=web" {
		t.Errorf("MemberOf after Team overwrite: %s", got)
	}
	// Replacing the nodes and every edge type that points at them at once
	// is accepted.
	if err := r.tryLoad(load.Overwrite, onlyBob+"\n"+
		`{"edge":"MemberOf","from":"bob","to":"ops"}`+"\n"+
		`{"edge":"WorksOn","from":"bob","to":"p1"}`, "Knows")(); err != nil {
		t.Fatalf("overwrite of Engineer, MemberOf, WorksOn and Knows: %v", err)
	}
	if got := strings.Join(r.rows(t, "main", "node:Engineer"), " "); got != "bob" {
		t.Errorf("engineers: %s", got)
	}
	for _, key := range []string{"edge:MemberOf", "edge:WorksOn", "edge:Knows"} {
		for _, row := range r.rows(t, "main", key, "src", "dst") {
			if strings.Contains(row, "ann") {
				t.Errorf("%s kept an edge of ann: %s", key, row)
			}
		}
	}
	// A node that returns under an old key does not bring back old edges.
	r.load(t, load.Append, `{"type":"Engineer","data":{"email":"ann"}}`+"\n"+
		`{"edge":"MemberOf","from":"ann","to":"web"}`+"\n"+`{"edge":"WorksOn","from":"ann","to":"p2"}`)
	if got := len(r.rows(t, "main", "edge:Knows")); got != 0 {
		t.Errorf("%d Knows edges reappeared", got)
	}
}

// TestEdgeEndpointsEveryWriter: an edge to a node that does not exist is
// refused by every writer (append, merge and overwrite loads; mutation
// insert), and leaves the graph unchanged.
func TestEdgeEndpointsEveryWriter(t *testing.T) {
	r := newIntegrityRig(t)
	for _, mode := range []load.Mode{load.Append, load.Merge, load.Overwrite} {
		refused(t, r, r.tryLoad(mode, `{"edge":"Knows","from":"ann","to":"zed"}`), invalid, "line 1", `dst "zed" not found in Engineer`)
	}
	refused(t, r, r.tryMutate(`insert Knows { from: "zed", to: "ann" }`, nil), invalid, "statement 1", `src "zed" not found in Engineer`)
}

// TestMergeEdgeWithoutIDIsIdempotent pins --mode merge for edges without
// data.id: the endpoint pair is the edge's identity, so loading one file
// again replaces the same edges (same ids, new properties) instead of
// adding new ones; @card(1..1) edges can be merged again.
func TestMergeEdgeWithoutIDIsIdempotent(t *testing.T) {
	r := newIntegrityRig(t)
	file := `{"type":"Engineer","data":{"email":"cy","name":"Cy"}}
{"edge":"MemberOf","from":"cy","to":"web"}
{"edge":"WorksOn","from":"cy","to":"p1"}
{"edge":"Knows","from":"cy","to":"ann","data":{"since":2020}}
{"edge":"Knows","from":"ann","to":"cy"}
`
	r.load(t, load.Merge, file)
	first := r.imageRows(t)
	knows := r.rows(t, "main", "edge:Knows", "src", "dst", "since")
	if len(knows) != 2 {
		t.Fatalf("Knows after one merge: %v", knows)
	}
	r.load(t, load.Merge, file)
	second := r.imageRows(t)
	if first != second {
		t.Errorf("merging the same file twice changed rows:\nfirst:\n%s\nsecond:\n%s", first, second)
	}
	// A changed property updates the same edge.
	r.load(t, load.Merge, `{"edge":"Knows","from":"cy","to":"ann","data":{"since":2021}}`)
	after := r.rows(t, "main", "edge:Knows", "src", "dst", "since")
	if len(after) != 2 {
		t.Fatalf("Knows after the update: %v", after)
	}
	for i := range after {
		if id := strings.SplitN(after[i], "|", 2)[0]; id != strings.SplitN(knows[i], "|", 2)[0] {
			t.Errorf("edge %d changed id: %s -> %s", i, knows[i], after[i])
		}
	}
	if !strings.Contains(strings.Join(after, " "), "src=cy|dst=ann|since=2021") {
		t.Errorf("since not updated: %v", after)
	}
	// Append still adds a parallel edge (an edge without data.id is new).
	r.load(t, load.Append, `{"edge":"Knows","from":"cy","to":"ann"}`)
	if got := len(r.rows(t, "main", "edge:Knows")); got != 3 {
		t.Fatalf("%d Knows edges after append, want 3", got)
	}
}

// TestMergeEdgeWithoutIDRefusesAmbiguity: where the endpoint pair names
// several edges (parallel edges on the branch, or the same pair twice in the
// file) a merge without data.id is refused with a message saying to give ids.
func TestMergeEdgeWithoutIDRefusesAmbiguity(t *testing.T) {
	r := newIntegrityRig(t)
	r.load(t, load.Append, `{"edge":"Knows","from":"ann","to":"bob","data":{"id":"k1"}}`+"\n"+`{"edge":"Knows","from":"ann","to":"bob","data":{"id":"k2"}}`)
	refused(t, r, r.tryLoad(load.Merge, `{"edge":"Knows","from":"ann","to":"bob","data":{"since":1}}`), invalid,
		"line 1", `has 2 Knows edges from "ann" to "bob"`, `"k1", "k2"`, "give data.id")
	refused(t, r, r.tryLoad(load.Merge, `{"edge":"Knows","from":"bob","to":"ann"}`+"\n"+`{"edge":"Knows","from":"bob","to":"ann"}`), invalid,
		"line 2", "already given at line 1", "data.id")
	// With ids the same parallel edges merge fine.
	r.load(t, load.Merge, `{"edge":"Knows","from":"ann","to":"bob","data":{"id":"k1","since":1}}`+"\n"+`{"edge":"Knows","from":"ann","to":"bob","data":{"id":"k2","since":2}}`)
	if got := strings.Join(r.rows(t, "main", "edge:Knows", "since"), " "); got != "k1|since=1 k2|since=2" {
		t.Errorf("Knows: %s", got)
	}
}

// wrapMutation wraps bare statements in a parameterless mutation, as
// omnigraph mutate -e does.
func wrapMutation(stmts string) string {
	return "mutation m() {\n" + stmts + "\n}"
}
