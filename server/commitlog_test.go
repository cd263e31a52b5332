package server

import (
	"context"
	"fmt"
	"testing"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/graph/merge"
	"github.com/omnigraph-go/omnigraph/graph/mutate"
	"github.com/omnigraph-go/omnigraph/manifest"
)

// TestServerCommitListWalksBothParents: GET commits lists a merged
// branch's commits among the target's (both parents of the merge, as git
// log), first_parent=true the target's own line, and a first_parent that
// is not true or false is a 400.
func TestServerCommitListWalksBothParents(t *testing.T) {
	ctx := context.Background()
	g := testGraph(t)
	_, base := newTestServer(t, g, Config{})
	c := &client{t: t, base: base}
	if _, err := mutate.Query(ctx, g, `mutation m() { insert Person { name: "ada" } }`, "", mutate.Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.CreateBranch(ctx, "review", "main"); err != nil {
		t.Fatal(err)
	}
	r, err := mutate.Query(ctx, g, `mutation m() { insert Person { name: "bo" } }`, "", mutate.Options{Branch: "review"})
	if err != nil {
		t.Fatal(err)
	}
	rev := r.Commit.ID
	if _, err := merge.Run(ctx, g, "review", "main", merge.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := g.DeleteBranch(ctx, "review"); err != nil {
		t.Fatal(err)
	}
	ids := func(q string) []string {
		t.Helper()
		st, m := c.json("GET", "/graphs/default/commits"+q, "")
		mustStatus(t, "commits"+q, st, 200, m)
		var out []string
		for _, x := range m["commits"].([]any) {
			out = append(out, x.(map[string]any)["graph_commit_id"].(string))
		}
		return out
	}
	all, fp := ids("?branch=main"), ids("?branch=main&first_parent=true")
	if len(all) != len(fp)+1 || all[1] != rev || fmt.Sprint(all[2:]) != fmt.Sprint(fp[1:]) {
		t.Fatalf("commits: %v; first_parent: %v; want the merged commit %s second, then main's line", all, fp, rev)
	}
	st, m := c.json("GET", "/graphs/default/commits?first_parent=yes", "")
	mustStatus(t, "first_parent=yes", st, 400, m)
	// A listed commit whose data cleanup removed is a 404 that says so,
	// not a 500 storage_not_found.
	f := MapError(fmt.Errorf("commit %s was made on branch %q, which has been deleted, and its data was removed by cleanup: %w", rev, "review", manifest.ErrCleanedUp), "default")
	if f.Status != 404 || f.Body.Code != api.CodeNotFound {
		t.Fatalf("a removed commit's read: %d %+v", f.Status, f.Body)
	}
}
