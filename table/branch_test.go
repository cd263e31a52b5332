package table

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
)

func TestBranches(t *testing.T) {
	ctx := context.Background()
	store, cnt := countedStore()
	ds := mustCreate(t, store)
	ds = mustAppend(t, ds, people("m", 0, 5))
	forkAt := ds.Version()

	cnt.Reset()
	ref, err := CreateBranch(ctx, store, testPath, "review", MainBranch, forkAt)
	if err != nil {
		t.Fatal(err)
	}
	c := cnt.Snapshot()
	if c.Put != 0 || c.CondPut != 2 {
		t.Fatalf("branch create copied data or wrote too much: %s", c)
	}
	t.Logf("branch create: %s", c)
	if ref.ParentBranch != MainBranch || ref.ParentVersion != forkAt || ref.ID == "" {
		t.Fatalf("ref = %+v", ref)
	}
	br, err := Open(ctx, store, testPath, "review")
	if err != nil {
		t.Fatal(err)
	}
	if br.Version() != forkAt || br.Branch() != "review" || br.BranchID() != ref.ID {
		t.Fatalf("branch opened at %d %q id %s", br.Version(), br.Branch(), br.BranchID())
	}
	// Copy-on-write: the branch shares main's fragment files.
	if br.Manifest().Fragments[0].Path != ds.Manifest().Fragments[0].Path {
		t.Fatal("branch does not share the parent's fragment")
	}
	br = mustAppend(t, br, people("b", 0, 2))
	if p := br.Manifest().Fragments[1].Path; !strings.HasPrefix(p, "tree/review/data/") {
		t.Fatalf("branch fragment written at %s", p)
	}
	br = mc(t)(br.StageDelete(ctx, Eq("id", "m000000")))
	main, err := Open(ctx, store, testPath, MainBranch)
	if err != nil {
		t.Fatal(err)
	}
	if main.Version() != forkAt || main.RowCount() != 5 {
		t.Fatalf("main changed by branch writes: version %d rows %d", main.Version(), main.RowCount())
	}
	want := render(append(people("m", 1, 4), people("b", 0, 2)...))
	if got := rowsOf(t, br); !equalRows(got, want) {
		t.Fatalf("branch rows = %v", got)
	}
	// Branch of a branch.
	if _, err := CreateBranch(ctx, store, testPath, "other", "review", 0); err != nil {
		t.Fatal(err)
	}

	// Path-prefix-disjoint names, both directions.
	for _, name := range []string{"review/2026-07", "review"} {
		_, err := CreateBranch(ctx, store, testPath, name, MainBranch, 0)
		want := ErrBranchNameConflict
		if name == "review" {
			want = ErrBranchExists
		}
		if !errors.Is(err, want) {
			t.Fatalf("create %q: %v, want %v", name, err, want)
		}
	}
	if _, err := CreateBranch(ctx, store, testPath, "x/y", MainBranch, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := CreateBranch(ctx, store, testPath, "x", MainBranch, 0); !errors.Is(err, ErrBranchNameConflict) || !strings.Contains(err.Error(), "prefix-disjoint") {
		t.Fatalf("ancestor of live branch: %v", err)
	}

	refs, err := ListBranches(ctx, store, testPath)
	if err != nil || len(refs) != 3 || refs[0].Name != "other" || refs[1].Name != "review" || refs[2].Name != "x/y" {
		t.Fatalf("ListBranches = %+v, %v", refs, err)
	}

	// Delete and recreate: the identifier changes, so a stale holder notices.
	if err := DeleteBranch(ctx, store, testPath, "review", "wrong-id"); !errors.Is(err, ErrConflict) {
		t.Fatalf("delete with wrong id: %v", err)
	}
	if err := DeleteBranch(ctx, store, testPath, "review", ref.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, store, testPath, "review"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("open deleted branch: %v", err)
	}
	// The child forked from review still reads (files are shared, not deleted).
	child, err := Open(ctx, store, testPath, "other")
	if err != nil || child.RowCount() != 6 {
		t.Fatalf("child of deleted branch: %v rows %d", err, child.RowCount())
	}
	ref2, err := CreateBranch(ctx, store, testPath, "review", MainBranch, 0)
	if err != nil {
		t.Fatal(err)
	}
	if ref2.ID == ref.ID {
		t.Fatal("recreated branch reuses the identifier")
	}
	br2, err := Open(ctx, store, testPath, "review")
	if err != nil || br2.BranchID() != ref2.ID || br2.RowCount() != 5 || br2.Version() != forkAt {
		t.Fatalf("recreated branch: %v id %s rows %d v %d", err, br2.BranchID(), br2.RowCount(), br2.Version())
	}
	if cur, _ := ReadRef(ctx, store, testPath, "review"); cur.ID == br.BranchID() {
		t.Fatal("stale handle's identity matches the new ref")
	}
}

func mustStage(t testing.TB, st *Staged, err error) *Staged {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestBranchOpensFromRefWhenLineEmpty(t *testing.T) {
	// A creation interrupted after the ref (before the first version) still
	// opens at the fork point, and the first commit starts the line.
	ctx := context.Background()
	store := newStore()
	ds := mustCreate(t, store)
	ds = mustAppend(t, ds, people("m", 0, 3))
	if _, err := CreateBranch(ctx, store, testPath, "dev", MainBranch, 0); err != nil {
		t.Fatal(err)
	}
	if err := store.DeletePrefix(ctx, versionsPrefix(testPath, "dev")); err != nil {
		t.Fatal(err)
	}
	br, err := Open(ctx, store, testPath, "dev")
	if err != nil || br.Version() != ds.Version() || br.RowCount() != 3 {
		t.Fatalf("open: %v", err)
	}
	if v, err := LatestVersion(ctx, store, testPath, "dev"); err != nil || v != ds.Version() {
		t.Fatalf("latest = %d, %v", v, err)
	}
	br = mustAppend(t, br, people("d", 0, 1))
	re, err := Open(ctx, store, testPath, "dev")
	if err != nil || re.Version() != ds.Version()+1 || re.RowCount() != 4 {
		t.Fatalf("reopen: %v", err)
	}
}

func TestBranchNameValidation(t *testing.T) {
	ctx := context.Background()
	store := newStore()
	mustCreate(t, store)
	for _, name := range []string{"", "a//b", "/a", "a/", "..", "main", "main/x", "a#1"} {
		if _, err := CreateBranch(ctx, store, testPath, name, MainBranch, 0); !errors.Is(err, ErrInvalid) {
			t.Errorf("name %q: %v, want ErrInvalid", name, err)
		}
	}
	if _, err := CreateBranch(ctx, store, testPath, "ok", "nope", 0); !errors.Is(err, ErrNotFound) || !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("missing parent: %v", err)
	}
	if _, err := ReadRef(ctx, store, testPath, "ok"); !errors.Is(err, ErrNotFound) {
		t.Errorf("ref of failed create exists: %v", err)
	}
}
