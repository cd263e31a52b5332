package client_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/client"
)

// The console's routes join routeCalls, so TestEveryRoute drives them too
// (through their client methods, against the real binary).
func init() {
	routeCalls["getStatus"] = func(ctx context.Context, t *testing.T, c *client.Client, g *client.Graph) {
		st, err := g.Status(ctx)
		if err != nil || st.GraphID != "default" || st.Mode != "read-write" || st.Actor != "alice" || !st.Auth ||
			!st.Lock.Held || st.Lock.Operation != "serve" || st.Recovery.State != "clean" || st.MainHead == nil || !slices.Contains(st.AllowedActions, "change") {
			t.Fatalf("status: %+v %v", st, err)
		}
	}
	routeCalls["getCatalog"] = func(ctx context.Context, t *testing.T, c *client.Client, g *client.Graph) {
		snap, _ := g.Snapshot(ctx, "main")
		cat, err := g.Catalog(ctx, "main", "")
		if err != nil || cat.GraphCommitID != snap.GraphCommitID || len(cat.Nodes) == 0 {
			t.Fatalf("catalog: %+v %v", cat, err)
		}
		for _, n := range cat.Nodes {
			if n.Name == "Company" && n.Rows != int64(companies(snap)) {
				t.Fatalf("catalog counts %d companies, the snapshot %d", n.Rows, companies(snap))
			}
		}
	}
	routeCalls["checkQuery"] = func(ctx context.Context, t *testing.T, c *client.Client, g *client.Graph) {
		out, err := g.Check(ctx, api.CheckRequest{Query: "query q() {\n  match { $p: Person }\n  return { $p.nme }\n}"})
		if err != nil || out.OK || len(out.Errors) != 1 || out.Errors[0].Line != 3 || out.Errors[0].Code != "GQ011" || out.Errors[0].LintCode != "T2" || len(out.Queries) != 1 {
			t.Fatalf("check: %+v %v", out, err)
		}
	}
	routeCalls["listBranchHeads"] = func(ctx context.Context, t *testing.T, c *client.Client, g *client.Graph) {
		if _, err := g.CreateBranch(ctx, api.BranchCreateRequest{Name: "go/heads"}); err != nil {
			t.Fatal(err)
		}
		if _, err := g.Mutate(ctx, api.MutateRequest{Branch: "go/heads", Query: `mutation m() { insert Person { handle: "go-heads", name: "Heads" } }`}); err != nil {
			t.Fatal(err)
		}
		out, err := g.BranchHeads(ctx, "main", 0)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(out.Branches, func(b api.BranchStatus) bool { return b.Name == "go/heads" })
		if i < 0 || out.Branches[i].Ahead != 1 || out.Branches[i].Behind != 0 || out.Branches[i].Head.GraphBranch != "go/heads" {
			t.Fatalf("branch heads: %+v", out)
		}
	}
	routeCalls["previewMerge"] = func(ctx context.Context, t *testing.T, c *client.Client, g *client.Graph) {
		if _, err := g.CreateBranch(ctx, api.BranchCreateRequest{Name: "go/preview"}); err != nil {
			t.Fatal(err)
		}
		if _, err := g.Mutate(ctx, api.MutateRequest{Branch: "go/preview", Query: `mutation m() { insert Person { handle: "go-preview", name: "Preview" } }`}); err != nil {
			t.Fatal(err)
		}
		out, err := g.PreviewMerge(ctx, api.MergePreviewRequest{Source: "go/preview"})
		if err != nil || out.Outcome != "fast_forward" || out.Inserted != 1 || len(out.Changes) != 1 || out.Changes[0].ID != "go-preview" || len(out.Conflicts) != 0 {
			t.Fatalf("preview: %+v %v", out, err)
		}
		if n := count(ctx, t, g, "main", `$p: Person { handle: "go-preview" }`); n != 0 {
			t.Fatalf("the preview wrote %d rows on main", n)
		}
		if _, err := g.PreviewMerge(ctx, api.MergePreviewRequest{Source: "go/none"}); !errors.Is(err, client.ErrNotFound) {
			t.Fatalf("preview of an unknown branch: %v", err)
		}
	}
	routeCalls["diffRefs"] = func(ctx context.Context, t *testing.T, c *client.Client, g *client.Graph) {
		if _, err := g.CreateBranch(ctx, api.BranchCreateRequest{Name: "go/diff"}); err != nil {
			t.Fatal(err)
		}
		if _, err := g.Mutate(ctx, api.MutateRequest{Branch: "go/diff", Query: `mutation m() { insert Person { handle: "go-diff", name: "Diff" } }`}); err != nil {
			t.Fatal(err)
		}
		out, err := g.Diff(ctx, api.DiffRequest{From: "main", To: "go/diff"})
		if err != nil || len(out.Changes) != 1 || out.Changes[0].ID != "go-diff" || out.Changes[0].Op != "insert" || !strings.HasPrefix(out.To, "go/") {
			t.Fatalf("diff: %+v %v", out, err)
		}
	}
}
