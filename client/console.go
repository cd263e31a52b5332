package client

import (
	"context"
	"net/url"
	"strconv"

	"github.com/omnigraph-go/omnigraph/api"
)

// The methods of the routes the web console reads (api.ConsoleRoutes),
// open to any client.

// Status is GET status: the server's version and mode, the graph's
// storage kind, writer lock, pending recovery and automatic compaction,
// and what the server lets the caller do on the whole graph.
func (g *Graph) Status(ctx context.Context) (*api.StatusOutput, error) {
	var out api.StatusOutput
	return &out, g.c.do(ctx, g.call("getStatus"), &out)
}

// Catalog is GET catalog: the schema of a branch head (default main), or
// of a commit when snapshot is given, as types with their row counts.
func (g *Graph) Catalog(ctx context.Context, branch, snapshot string) (*api.CatalogOutput, error) {
	c := g.call("getCatalog")
	c.query = url.Values{}
	if branch != "" {
		c.query.Set("branch", branch)
	}
	if snapshot != "" {
		c.query.Set("snapshot", snapshot)
	}
	var out api.CatalogOutput
	return &out, g.c.do(ctx, c, &out)
}

// Check is POST query/check: .gq source type-checked against a branch's
// (or a commit's) schema without running it. Errors in the source are the
// answer (OK false, Errors at their line and column), not an error.
func (g *Graph) Check(ctx context.Context, in api.CheckRequest) (*api.CheckOutput, error) {
	var out api.CheckOutput
	return &out, g.c.do(ctx, g.json("checkQuery", in), &out)
}

// BranchHeads is GET branches/heads: every live branch with its head, the
// commits it is ahead of and behind base (default main), counted up to
// max (0: the server's default), and the caller's actions on it.
func (g *Graph) BranchHeads(ctx context.Context, base string, max int) (*api.BranchHeadsOutput, error) {
	c := g.call("listBranchHeads")
	c.query = url.Values{}
	if base != "" {
		c.query.Set("base", base)
	}
	if max > 0 {
		c.query.Set("max", strconv.Itoa(max))
	}
	var out api.BranchHeadsOutput
	return &out, g.c.do(ctx, c, &out)
}

// PreviewMerge is POST branches/merge/preview: what merging would do now,
// written nowhere. Conflicts are in the answer, not an error.
func (g *Graph) PreviewMerge(ctx context.Context, in api.MergePreviewRequest) (*api.MergePreviewOutput, error) {
	var out api.MergePreviewOutput
	return &out, g.c.do(ctx, g.json("previewMerge", in), &out)
}

// Diff is POST diff: the entity changes from one ref to another (branch
// names or commit ids).
func (g *Graph) Diff(ctx context.Context, in api.DiffRequest) (*api.DiffOutput, error) {
	var out api.DiffOutput
	return &out, g.c.do(ctx, g.json("diffRefs", in), &out)
}
