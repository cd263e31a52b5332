package graph_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/mutate"
	"github.com/omnigraph-go/omnigraph/graph/query"
	"github.com/omnigraph-go/omnigraph/manifest"
)

// personNames reads the names of every Person on branch, sorted.
func personNames(t *testing.T, g *graph.Graph, branch string) string {
	t.Helper()
	res, err := query.Head(context.Background(), g, branch, `query q() { match { $p: Person } return { $p.name } order { $p.name } }`, "", nil)
	if err != nil {
		t.Fatalf("read Person on %s: %v", branch, err)
	}
	var out []string
	for _, row := range res.Rows {
		out = append(out, fmt.Sprint(row[0]))
	}
	return strings.Join(out, ",")
}

func mutateOn(t *testing.T, g *graph.Graph, branch, src string) {
	t.Helper()
	if _, err := mutate.Query(context.Background(), g, src, "", mutate.Options{Branch: branch}); err != nil {
		t.Fatalf("mutate on %s: %v", branch, err)
	}
}

// TestBranchDeleteReclaimsEveryFileItOwned pins "branch delete reclaims
// every file the branch owned alone (its forks' version lines, data,
// deletion and index files), and other branches still read correctly".
func TestBranchDeleteReclaimsEveryFileItOwned(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	g := r.g
	for _, b := range []string{"gone", "kept"} {
		if _, err := g.CreateBranch(ctx, b, ""); err != nil {
			t.Fatal(err)
		}
	}
	mutateOn(t, g, "main", `mutation m() { insert Person { name: "main-1" } }`)
	mutateOn(t, g, "gone", `mutation m() { insert Person { name: "g1" } insert Person { name: "g2" } insert Company { name: "acme" } }`)
	mutateOn(t, g, "gone", `mutation m() { delete Person where name = "g2" }`)
	mutateOn(t, g, "kept", `mutation m() { insert Person { name: "k1" } }`)
	owned := "/tree/" + graph.TableBranch("gone", 1) + "/"
	var before []string
	for _, k := range allKeys(t, r.mem) {
		if strings.Contains(k, owned) {
			before = append(before, k)
		}
	}
	if !strings.Contains(strings.Join(before, " "), "/data/") || !strings.Contains(strings.Join(before, " "), "/_deletions/") {
		t.Fatalf("the test writes no data and deletion files on the branch: %v", before)
	}
	if err := g.DeleteBranch(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	for _, k := range allKeys(t, r.mem) {
		if strings.Contains(k, owned) || strings.HasSuffix(k, "/_refs/branches/"+graph.TableBranch("gone", 1)) {
			t.Errorf("branch delete left %s", k)
		}
	}
	fresh := r.open(t, graph.OpenOptions{ReadOnly: true})
	if got := personNames(t, fresh, "main"); got != "main-1" {
		t.Fatalf("main reads %q after the delete", got)
	}
	if got := personNames(t, fresh, "kept"); got != "k1" {
		t.Fatalf("kept reads %q after the delete", got)
	}
}

// TestBranchCreateFromRacingDelete pins "no live branch ever points at
// reclaimed data": many `branch create --from X` race `branch delete X`
// (separate handles, so only storage arbitrates); afterwards every listed
// branch is fully readable.
func TestBranchCreateFromRacingDelete(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	const pairs = 24
	creators := r.open(t, graph.OpenOptions{})
	deleter := r.open(t, graph.OpenOptions{})
	for i := 0; i < pairs; i++ {
		src := fmt.Sprintf("src-%d", i)
		if _, err := r.g.CreateBranch(ctx, src, ""); err != nil {
			t.Fatal(err)
		}
		// A write forks the source's Person table: the data a delete
		// reclaims.
		mutateOn(t, r.g, src, fmt.Sprintf(`mutation m() { insert Person { name: "p%d" } }`, i))
	}
	var wg sync.WaitGroup
	createErrs := make([]error, pairs)
	deleteErrs := make([]error, pairs)
	for i := 0; i < pairs; i++ {
		src := fmt.Sprintf("src-%d", i)
		wg.Add(2)
		go func(i int) {
			defer wg.Done()
			_, createErrs[i] = creators.CreateBranch(ctx, fmt.Sprintf("child-%d", i), src)
		}(i)
		go func(i int) {
			defer wg.Done()
			deleteErrs[i] = deleter.DeleteBranch(ctx, src)
		}(i)
	}
	wg.Wait()
	for i := 0; i < pairs; i++ {
		if err := createErrs[i]; err != nil && !errors.Is(err, manifest.ErrBranchNotFound) {
			t.Fatalf("create child-%d: %v", i, err)
		}
		if err := deleteErrs[i]; err != nil && !errors.Is(err, graph.ErrHasDescendants) {
			t.Fatalf("delete src-%d: %v", i, err)
		}
	}
	fresh := r.open(t, graph.OpenOptions{ReadOnly: true})
	bs, err := fresh.Branches(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, b := range bs {
		listed = append(listed, b.Name)
		snap, err := fresh.Snapshot(ctx, b.Name)
		if err != nil {
			t.Fatalf("listed branch %s: %v", b.Name, err)
		}
		if _, err := snap.TableStats(ctx); err != nil {
			t.Fatalf("listed branch %s points at reclaimed data: %v", b.Name, err)
		}
		var i int
		if _, err := fmt.Sscanf(b.Name, "child-%d", &i); err == nil {
			if got, want := personNames(t, fresh, b.Name), fmt.Sprintf("p%d", i); got != want {
				t.Fatalf("%s reads %q, want %q", b.Name, got, want)
			}
		}
	}
	sort.Strings(listed)
	t.Logf("live after the race: %v", listed)
}

// TestBranchNamesAreUniqueIgnoringCase pins "branch names are unique
// ignoring case": a new name with an upper-case letter is refused (so MAIN
// cannot stand beside main), before any write.
func TestBranchNamesAreUniqueIgnoringCase(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	if _, err := r.g.CreateBranch(ctx, "feature", ""); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"MAIN", "Feature", "review/Q3"} {
		r.count.Reset()
		_, err := r.g.CreateBranch(ctx, name, "")
		if !errors.Is(err, graph.ErrInvalidBranch) || !strings.Contains(err.Error(), strings.ToLower(name)) {
			t.Fatalf("CreateBranch(%q) = %v, want ErrInvalidBranch suggesting %q", name, err, strings.ToLower(name))
		}
		if w := writes(r.count.Snapshot()); w != 0 {
			t.Fatalf("a refused create made %d writes", w)
		}
	}
	if got := branchNames(t, r.g); got != "feature,main" {
		t.Fatalf("branches = %s", got)
	}
}
