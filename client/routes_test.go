package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/client"
	"github.com/omnigraph-go/omnigraph/internal/testenv"
)

// routeCalls drive each route of api.Routes through its client method and
// check the answer's content, by operation id. TestEveryRoute fails for a
// route of the table without an entry here, so a route added without a
// client method (and its call here) cannot pass.
var routeCalls = map[string]func(ctx context.Context, t *testing.T, c *client.Client, g *client.Graph){
	"health": func(ctx context.Context, t *testing.T, c *client.Client, g *client.Graph) {
		h, err := c.Health(ctx)
		if err != nil || h.Status != "ok" || h.Graphs != 1 || h.Mode != "read-write" {
			t.Fatalf("health: %+v %v", h, err)
		}
	},
	"openapi": func(ctx context.Context, t *testing.T, c *client.Client, g *client.Graph) {
		doc, err := c.OpenAPI(ctx)
		var d struct {
			OpenAPI string                     `json:"openapi"`
			Paths   map[string]json.RawMessage `json:"paths"`
		}
		if err != nil || json.Unmarshal(doc, &d) != nil || d.OpenAPI != "3.1.0" || len(d.Paths) < len(api.Routes())-2 {
			t.Fatalf("openapi: %v %.200s", err, doc)
		}
	},
	"listGraphs": func(ctx context.Context, t *testing.T, c *client.Client, g *client.Graph) {
		gs, err := c.Graphs(ctx)
		if err != nil || len(gs.Graphs) != 1 || gs.Graphs[0].GraphID != "default" {
			t.Fatalf("graphs: %+v %v", gs, err)
		}
	},
	"query": func(ctx context.Context, t *testing.T, c *client.Client, g *client.Graph) {
		out, err := g.Query(ctx, api.QueryRequest{
			Query:  `query q($city: String, $min: I32) { match { $p: Person { city: $city } $p.age >= $min } return { $p.handle, $p.age } order { $p.age desc } }`,
			Params: map[string]any{"city": "Berlin", "min": 30},
		})
		if err != nil || out.RowCount == 0 || !slices.Equal(out.Columns, []string{"p.handle", "p.age"}) {
			t.Fatalf("query: %+v %v", out, err)
		}
		for _, r := range out.Rows {
			var row struct {
				Age int `json:"p.age"`
			}
			if json.Unmarshal(r, &row) != nil || row.Age < 30 {
				t.Fatalf("query row %s does not hold the filter", r)
			}
		}
	},
	"mutate": func(ctx context.Context, t *testing.T, c *client.Client, g *client.Graph) {
		out, err := g.Mutate(ctx, api.MutateRequest{Query: `mutation m($h: String) { insert Person { handle: $h, name: "Go Client" } }`, Params: map[string]any{"h": "go-mutate"}})
		if err != nil || out.AffectedNodes != 1 || out.Commit == nil || out.Commit.GraphBranch != "main" {
			t.Fatalf("mutate: %+v %v", out, err)
		}
		if n := count(ctx, t, g, "main", `$p: Person { handle: "go-mutate" }`); n != 1 {
			t.Fatalf("the mutated person is there %d times", n)
		}
	},
	"mutateIfGraphCommit": func(ctx context.Context, t *testing.T, c *client.Client, g *client.Graph) {
		snap, err := g.Snapshot(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		out, err := g.Mutate(ctx, api.MutateRequest{Query: `mutation m() { insert Person { handle: "go-if", name: "If" } }`}, client.IfGraphCommit(snap.GraphCommitID))
		if err != nil || out.Commit == nil || out.Commit.ParentCommitID != snap.GraphCommitID {
			t.Fatalf("conditional mutate on the head: %+v %v", out, err)
		}
		_, err = g.Mutate(ctx, api.MutateRequest{Query: `mutation m() { insert Person { handle: "go-if-stale", name: "Stale" } }`}, client.IfGraphCommit(snap.GraphCommitID))
		var e *client.Error
		if !errors.As(err, &e) || !errors.Is(err, client.ErrPrecondition) || e.Details.PreconditionFailure.Actual != out.Commit.GraphCommitID {
			t.Fatalf("conditional mutate on a stale head: %v", err)
		}
		if n := count(ctx, t, g, "main", `$p: Person { handle: "go-if-stale" }`); n != 0 {
			t.Fatalf("a refused conditional mutate wrote %d rows", n)
		}
	},
	"load": func(ctx context.Context, t *testing.T, c *client.Client, g *client.Graph) {
		out, err := g.LoadInline(ctx, api.LoadRequest{Branch: "go-inline", From: "main", Mode: "merge", Records: []map[string]any{
			{"type": "Person", "data": map[string]any{"handle": "go-inline", "name": "Inline"}},
		}})
		if err != nil || !out.BranchCreated || out.Nodes != 1 || out.Types["Person"] != 1 {
			t.Fatalf("load inline: %+v %v", out, err)
		}
		if n := count(ctx, t, g, "go-inline", `$p: Person { handle: "go-inline" }`); n != 1 {
			t.Fatalf("the inline row is on its branch %d times", n)
		}
	},
	"loadNdjson": func(ctx context.Context, t *testing.T, c *client.Client, g *client.Graph) {
		body := `{"type":"Person","data":{"handle":"go-ndjson-1","name":"One"}}` + "\n" + `{"type":"Person","data":{"handle":"go-ndjson-2","name":"Two"}}` + "\n"
		out, err := g.Load(ctx, strings.NewReader(body), client.LoadOptions{Mode: "append"})
		if err != nil || out.Nodes != 2 || out.Mode != "append" || out.Commit == nil {
			t.Fatalf("load: %+v %v", out, err)
		}
		if n := count(ctx, t, g, "main", `$p: Person $p.handle >= "go-ndjson-1" $p.handle <= "go-ndjson-2"`); n != 2 {
			t.Fatalf("loaded rows: %d, want 2", n)
		}
	},
	"export": func(ctx context.Context, t *testing.T, c *client.Client, g *client.Graph) {
		snap, err := g.Snapshot(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		exp, err := g.Export(ctx, client.ExportOptions{Types: []string{"Company"}})
		if err != nil {
			t.Fatal(err)
		}
		defer exp.Close()
		n := 0
		for r, err := range exp.Records() {
			if err != nil {
				t.Fatal(err)
			}
			if r.Type != "Company" || r.Data["slug"] == nil {
				t.Fatalf("export record %+v", r)
			}
			n++
		}
		if want := companies(snap); n != want || exp.Commit != snap.GraphCommitID {
			t.Fatalf("export: %d companies at %s, want %d at %s", n, exp.Commit, want, snap.GraphCommitID)
		}
	},
	"mcp": func(ctx context.Context, t *testing.T, c *client.Client, g *client.Graph) {
		out, err := g.MCP(ctx, json.RawMessage(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"schema_get","arguments":{}}}`))
		var res struct {
			ID     int `json:"id"`
			Result struct {
				Structured api.SchemaOutput `json:"structuredContent"`
			} `json:"result"`
		}
		if err != nil || json.Unmarshal(out, &res) != nil || res.ID != 7 || !strings.Contains(res.Result.Structured.SchemaSource, "node Person") {
			t.Fatalf("mcp: %v %.300s", err, out)
		}
	},
	"getSnapshot": func(ctx context.Context, t *testing.T, c *client.Client, g *client.Graph) {
		snap, err := g.Snapshot(ctx, "main")
		if err != nil || snap.GraphBranch != "main" || companies(snap) == 0 || snap.GraphCommitID == "" {
			t.Fatalf("snapshot: %+v %v", snap, err)
		}
	},
	"getSchema": func(ctx context.Context, t *testing.T, c *client.Client, g *client.Graph) {
		s, err := g.Schema(ctx, "")
		if err != nil || !strings.Contains(s.SchemaSource, "edge WorksAt") || s.SchemaIdentity == "" {
			t.Fatalf("schema: %+v %v", s, err)
		}
	},
	"listBranches": func(ctx context.Context, t *testing.T, c *client.Client, g *client.Graph) {
		if _, err := g.CreateBranch(ctx, api.BranchCreateRequest{Name: "go/listed"}); err != nil {
			t.Fatal(err)
		}
		bl, err := g.Branches(ctx)
		if err != nil || !slices.Contains(bl.Branches, "go/listed") || len(bl.Heads) != len(bl.Branches) {
			t.Fatalf("branches: %+v %v", bl, err)
		}
	},
	"createBranch": func(ctx context.Context, t *testing.T, c *client.Client, g *client.Graph) {
		snap, _ := g.Snapshot(ctx, "")
		out, err := g.CreateBranch(ctx, api.BranchCreateRequest{Name: "go/created", From: "main"})
		if err != nil || out.Name != "go/created" || out.From != "main" || out.GraphCommitID != snap.GraphCommitID {
			t.Fatalf("create branch: %+v %v", out, err)
		}
	},
	"mergeBranch": func(ctx context.Context, t *testing.T, c *client.Client, g *client.Graph) {
		if _, err := g.CreateBranch(ctx, api.BranchCreateRequest{Name: "go/merge"}); err != nil {
			t.Fatal(err)
		}
		if _, err := g.Mutate(ctx, api.MutateRequest{Branch: "go/merge", Query: `mutation m() { insert Person { handle: "go-merged", name: "Merged" } }`}); err != nil {
			t.Fatal(err)
		}
		out, err := g.Merge(ctx, api.MergeRequest{Source: "go/merge", DeleteBranch: true})
		if err != nil || out.Inserted != 1 || out.Commit == nil || out.BranchDeleted == nil || !*out.BranchDeleted {
			t.Fatalf("merge: %+v %v", out, err)
		}
		if n := count(ctx, t, g, "main", `$p: Person { handle: "go-merged" }`); n != 1 {
			t.Fatalf("the merged row is on main %d times", n)
		}
	},
	"deleteBranch": func(ctx context.Context, t *testing.T, c *client.Client, g *client.Graph) {
		if _, err := g.CreateBranch(ctx, api.BranchCreateRequest{Name: "go/deleted/x"}); err != nil {
			t.Fatal(err)
		}
		out, err := g.DeleteBranch(ctx, "go/deleted/x")
		if err != nil || out.Name != "go/deleted/x" {
			t.Fatalf("delete branch: %+v %v", out, err)
		}
		if _, err := g.DeleteBranch(ctx, "go/deleted/x"); !errors.Is(err, client.ErrNotFound) {
			t.Fatalf("delete of a deleted branch: %v", err)
		}
	},
	"listCommits": func(ctx context.Context, t *testing.T, c *client.Client, g *client.Graph) {
		// Through both parents: the head, then the newer of its parents.
		cs, err := g.Commits(ctx, "main", 2)
		snap, _ := g.Snapshot(ctx, "main")
		if err != nil || len(cs.Commits) != 2 || cs.Commits[0].GraphCommitID != snap.GraphCommitID ||
			cs.Commits[0].ParentCommitID != cs.Commits[1].GraphCommitID && cs.Commits[0].MergedParentCommitID != cs.Commits[1].GraphCommitID {
			t.Fatalf("commits: %+v %v", cs, err)
		}
		// First parents only: the head, then its first parent.
		fp, err := g.FirstParentCommits(ctx, "main", 2)
		if err != nil || len(fp.Commits) != 2 || fp.Commits[0].GraphCommitID != snap.GraphCommitID || fp.Commits[0].ParentCommitID != fp.Commits[1].GraphCommitID {
			t.Fatalf("first-parent commits: %+v %v", fp, err)
		}
	},
	"getCommit": func(ctx context.Context, t *testing.T, c *client.Client, g *client.Graph) {
		snap, _ := g.Snapshot(ctx, "main")
		cm, err := g.Commit(ctx, snap.GraphCommitID)
		if err != nil || cm.GraphCommitID != snap.GraphCommitID || cm.GraphManifestVersion != snap.GraphManifestVersion {
			t.Fatalf("commit: %+v %v", cm, err)
		}
	},
	"getCommitChanges": func(ctx context.Context, t *testing.T, c *client.Client, g *client.Graph) {
		out, err := g.Mutate(ctx, api.MutateRequest{Query: `mutation m() { insert Person { handle: "go-changed", name: "Changed" } }`})
		if err != nil {
			t.Fatal(err)
		}
		ch, err := g.CommitChanges(ctx, out.Commit.GraphCommitID, client.ChangesOptions{Type: "Person"})
		if err != nil || len(ch.Changes) != 1 || ch.Changes[0].Op != "insert" || ch.Changes[0].ID != "go-changed" || ch.Cause.GraphCommitID != out.Commit.GraphCommitID {
			t.Fatalf("changes: %+v %v", ch, err)
		}
	},
	// The social graph has no Blob property: the calls check the route's
	// refusal; TestBlob reads real values.
	"getBlob": func(ctx context.Context, t *testing.T, c *client.Client, g *client.Graph) {
		_, err := g.Blob(ctx, client.BlobRef{Entity: "node", Type: "Person", ID: "alice", Property: "name"}, client.BlobOptions{})
		var e *client.Error
		if !errors.As(err, &e) || !errors.Is(err, client.ErrBadRequest) || !strings.Contains(e.Message, "not a Blob") {
			t.Fatalf("blob of a String property: %v", err)
		}
	},
	"headBlob": func(ctx context.Context, t *testing.T, c *client.Client, g *client.Graph) {
		_, err := g.BlobHead(ctx, client.BlobRef{Entity: "node", Type: "Person", ID: "alice", Property: "nope"}, client.BlobOptions{})
		if !errors.Is(err, client.ErrBadRequest) {
			t.Fatalf("blob head of a missing property: %v", err)
		}
	},
	"pollChanges": func(ctx context.Context, t *testing.T, c *client.Client, g *client.Graph) {
		now, err := g.PollChanges(ctx, api.PollRequest{})
		if err != nil || now.Cursor == "" || !now.CaughtUp || len(now.Blocks) != 0 {
			t.Fatalf("poll now: %+v %v", now, err)
		}
		out, err := g.Mutate(ctx, api.MutateRequest{Query: `mutation m() { insert Person { handle: "go-fed", name: "Fed" } }`})
		if err != nil {
			t.Fatal(err)
		}
		var pages, changes int
		var last *api.ChangeFeedOutput
		for p, err := range g.Poll(ctx, api.PollRequest{Cursor: now.Cursor, Limit: 1}) {
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, b := range p.Blocks {
				if b.Cause.GraphCommitID != out.Commit.GraphCommitID || b.Changes[0].ID != "go-fed" {
					t.Fatalf("the block: %+v", b)
				}
				changes += len(b.Changes)
			}
			last = p
		}
		if changes != 1 || last.Cursor == "" || !last.CaughtUp {
			t.Fatalf("the poll after one commit: %d pages, %d changes, %+v", pages, changes, last)
		}
		if _, err := g.PollChanges(ctx, api.PollRequest{Cursor: "ogc1.AAAA"}); !errors.Is(err, client.ErrBadRequest) {
			t.Fatalf("a damaged cursor: %v", err)
		}
	},
	"captureChangeBaseline": func(ctx context.Context, t *testing.T, c *client.Client, g *client.Graph) {
		b, err := g.Baseline(ctx, api.BaselineRequest{Types: []string{"Company"}})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for line, err := range b.Lines() {
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(line), `{"type":"Company"`) {
				t.Fatalf("a baseline line: %s", line)
			}
			n++
		}
		snap, _ := g.Snapshot(ctx, "main")
		if n != companies(snap) || b.End() == nil || b.End().SnapshotCommitID != snap.GraphCommitID || b.Commit != snap.GraphCommitID {
			t.Fatalf("baseline: %d lines for %d companies, end %+v", n, companies(snap), b.End())
		}
		p, err := g.PollChanges(ctx, api.PollRequest{Cursor: b.End().ResumeCursor})
		if err != nil || !p.CaughtUp || len(p.Blocks) != 0 {
			t.Fatalf("poll from the baseline: %+v %v", p, err)
		}
	},
	"listQueries": func(ctx context.Context, t *testing.T, c *client.Client, g *client.Graph) {
		// examples/social.gq: 5 queries and the quickstart's 4 search queries.
		cat, err := g.Queries(ctx)
		if err != nil || len(cat.Queries) != 9 || cat.Queries[0].Name != "city_adults" || len(cat.Queries[0].Params) != 2 || cat.Queries[0].Params[1].Kind != "int" {
			t.Fatalf("queries: %+v %v", cat, err)
		}
	},
	"invokeQuery": func(ctx context.Context, t *testing.T, c *client.Client, g *client.Graph) {
		res, err := g.InvokeQuery(ctx, "city_adults", api.InvokeRequest{Params: map[string]any{"city": "Berlin", "min": 30}})
		if err != nil || res.Read == nil || res.Mutation != nil || res.Read.RowCount == 0 || res.Read.QueryName != "city_adults" {
			t.Fatalf("invoke city_adults: %+v %v", res, err)
		}
		if _, err := g.InvokeQuery(ctx, "nope", api.InvokeRequest{}); !errors.Is(err, client.ErrNotFound) {
			t.Fatalf("invoke a missing query: %v", err)
		}
	},
	"invokeQueryIfGraphCommit": func(ctx context.Context, t *testing.T, c *client.Client, g *client.Graph) {
		snap, _ := g.Snapshot(ctx, "main")
		params := map[string]any{"h": "go-hired", "name": "Hired", "age": 30, "city": "Lisbon", "company": "acme", "title": "dev", "since": "2026-01-05"}
		res, err := g.InvokeQuery(ctx, "hire", api.InvokeRequest{Params: params}, client.IfGraphCommit(snap.GraphCommitID))
		if err != nil || res.Mutation == nil || res.Mutation.Commit == nil || res.Mutation.Commit.ParentCommitID != snap.GraphCommitID || res.Mutation.AffectedEdges != 1 {
			t.Fatalf("conditional hire: %+v %v", res, err)
		}
		params["h"] = "go-hired-stale"
		if _, err := g.InvokeQuery(ctx, "hire", api.InvokeRequest{Params: params}, client.IfGraphCommit(snap.GraphCommitID)); !errors.Is(err, client.ErrPrecondition) {
			t.Fatalf("conditional hire at a stale head: %v", err)
		}
	},
}

// count runs a count query over match on branch.
func count(ctx context.Context, t *testing.T, g *client.Graph, branch, match string) int {
	t.Helper()
	out, err := g.Query(ctx, api.QueryRequest{Branch: branch, Query: "query n() { match { " + match + " } return { count($p) as n } }"})
	if err != nil || len(out.Rows) != 1 {
		t.Fatalf("count %s: %+v %v", match, out, err)
	}
	var row struct{ N int }
	if err := json.Unmarshal(out.Rows[0], &row); err != nil {
		t.Fatal(err)
	}
	return row.N
}

func companies(s *api.SnapshotOutput) int {
	for _, d := range s.Datasets {
		if d.TypeName == "Company" {
			return int(d.EntityCount)
		}
	}
	return 0
}

// TestEveryRoute calls every route of the route table through its client
// method against the real binary (with a token), on a local graph and on
// the S3 emulator, and checks each answer's content.
func TestEveryRoute(t *testing.T) {
	t.Run("local", func(t *testing.T) { runEveryRoute(t, filepath.Join(t.TempDir(), "graph")) })
	t.Run("s3", func(t *testing.T) { runEveryRoute(t, testenv.S3(t)) })
}

func runEveryRoute(t *testing.T, url string) {
	exampleGraph(t, url)
	file, secrets := tokens(t, "alice")
	s := serve(t, nil, "--store", url, "--tokens", file, "--queries", "../examples/social.gq")
	c := newClient(t, s.base, secrets["alice"])
	ctx := ctxT(t)
	for _, rt := range api.Routes() {
		f, ok := routeCalls[rt.OperationID]
		if !ok {
			t.Errorf("route %s %s (%s) has no client method call in routeCalls", rt.Method, rt.Path, rt.OperationID)
			continue
		}
		t.Run(rt.OperationID, func(t *testing.T) { f(ctx, t, c, c.Graph("default")) })
	}
	if len(routeCalls) != len(api.Routes()) {
		t.Errorf("%d route calls for %d routes", len(routeCalls), len(api.Routes()))
	}
}
