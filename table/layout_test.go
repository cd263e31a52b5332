package table

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestCleanupKeepsBranchesNamedWithLayoutWords: branches whose names hold
// a layout word as a component, at every depth ("feat/_versions/x" made
// cleanup take "feat" for the branch, find no ref, and delete every
// version of the live branch), keep every version cleanup must keep and
// read their rows unchanged after it; the residue of a deleted branch of
// such a name is still reclaimed.
func TestCleanupKeepsBranchesNamedWithLayoutWords(t *testing.T) {
	ctx := context.Background()
	store := newStore()
	ds := mustCreate(t, store)
	ds = mustAppend(t, ds, people("m", 0, 3))
	var names []string
	for i, w := range LayoutWords() {
		// Alone, first, inner and last, under prefixes that keep the
		// names path-prefix-disjoint.
		names = append(names, w+"@1", fmt.Sprintf("%s/z%d@1", w, i), fmt.Sprintf("a%d/%s/z@1", i, w), fmt.Sprintf("b%d/%s@1", i, w), fmt.Sprintf("c%d/d/%s/e@1", i, w))
	}
	want := map[string][]string{}
	for i, n := range names {
		if _, err := CreateBranch(ctx, store, testPath, n, MainBranch, 0); err != nil {
			t.Fatalf("create %q: %v", n, err)
		}
		br, err := Open(ctx, store, testPath, n)
		if err != nil {
			t.Fatal(err)
		}
		// Three versions of its own, so retention has something to drop.
		for j := range 3 {
			br = mustAppend(t, br, people(fmt.Sprintf("b%d-%d-", i, j), 0, 2))
		}
		want[n] = rowsOf(t, br)
	}
	// A deleted branch whose name holds a layout word leaves residue.
	dead := "q/_versions/dead@1"
	if _, err := CreateBranch(ctx, store, testPath, dead, MainBranch, 0); err != nil {
		t.Fatal(err)
	}
	dbr, _ := Open(ctx, store, testPath, dead)
	dbr = mustAppend(t, dbr, people("dead", 0, 1))
	deadFrag := testPath + "/" + dbr.Manifest().Fragments[len(dbr.Manifest().Fragments)-1].Path
	if err := store.Delete(ctx, refKey(testPath, dead)); err != nil { // a crash after the ref delete
		t.Fatal(err)
	}
	if _, err := Cleanup(ctx, store, testPath, CleanupOptions{RetainVersions: 1}); err != nil {
		t.Fatalf("cleanup: %v", err)
	}
	for _, n := range names {
		br, err := Open(ctx, store, testPath, n)
		if err != nil {
			t.Fatalf("branch %q after cleanup: %v", n, err)
		}
		if got := rowsOf(t, br); !slices.Equal(got, want[n]) {
			t.Fatalf("branch %q after cleanup: %v, want %v", n, got, want[n])
		}
		// Retention did run on it: only the head version is left.
		if _, err := OpenVersion(ctx, store, testPath, n, br.Version()-1); err == nil {
			t.Fatalf("branch %q: version %d survived a retention of 1", n, br.Version()-1)
		}
	}
	for _, k := range keysOf(t, store) {
		if k == deadFrag || strings.HasPrefix(k, versionsPrefix(testPath, dead)) {
			t.Fatalf("the residue of deleted branch %q survived cleanup: %s", dead, k)
		}
	}
}

// TestLayoutWordsCoverEveryKey writes every kind of file the package
// makes (fragments, deletion vectors, key, adjacency and search indexes,
// version manifests, refs), on main and on a branch, and checks that every
// directory of every key is a word LayoutWords lists (or a name the
// caller chose, or a generated one): a new directory added to the layout
// without its constant fails here, so callers refusing layout words in
// branch names cannot miss it.
func TestLayoutWordsCoverEveryKey(t *testing.T) {
	ctx := context.Background()
	store := newStore()
	ds := mustCreate(t, store)
	const branch = "br/x@1"
	write := func(ds *Dataset) {
		t.Helper()
		ds = mustAppend(t, ds, people("p", 0, 4))
		ds = mustAppend(t, ds, people("q", 0, 4))
		ds = mc(t)(ds.StageDelete(ctx, Eq("id", "p000001")))
		st, err := ds.StageCompact(ctx, CompactOptions{IndexKey: true, Adjacency: [2]string{"id", "name"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.AddIndexFile(ctx, IndexFile{Kind: "fulltext", Columns: []string{"name"}, Data: []byte("x"), Entries: 1}); err != nil {
			t.Fatal(err)
		}
		mustCommit(t, st, nil)
	}
	write(ds)
	if _, err := CreateBranch(ctx, store, testPath, branch, MainBranch, 0); err != nil {
		t.Fatal(err)
	}
	br, err := Open(ctx, store, testPath, branch)
	if err != nil {
		t.Fatal(err)
	}
	write(br)
	words := LayoutWords()
	seen := map[string]bool{}
	for _, k := range keysOf(t, store) {
		rel := strings.TrimPrefix(k, testPath+"/")
		if r, ok := strings.CutPrefix(rel, dirRefs+"/"+dirRefBranches+"/"); ok {
			seen[dirRefs], seen[dirRefBranches] = true, true
			if r != branch {
				t.Fatalf("ref key %q names no branch", k)
			}
			continue
		}
		if r, ok := strings.CutPrefix(rel, dirTree+"/"+branch+"/"); ok {
			seen[dirTree] = true
			rel = r
		}
		comps := strings.Split(rel, "/")
		for i, c := range comps[:len(comps)-1] {
			if i > 0 && comps[i-1] == dirIndices {
				continue // an index's generated directory
			}
			if !slices.Contains(words, c) {
				t.Fatalf("key %q has directory %q, which LayoutWords does not list", k, c)
			}
			seen[c] = true
		}
	}
	for _, w := range words {
		if !seen[w] {
			t.Errorf("LayoutWords lists %q, which no key used (stale entry, or the test misses a kind of file)", w)
		}
	}
}
