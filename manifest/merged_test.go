package manifest

import (
	"context"
	"testing"
	"time"
)

// TestMergedLocationReadsTheSecondParentAndSurvivesPruning: a merge commit
// that records where its second parent was published (Entry.Merged) gets
// it back with MergedParent in one GET, also after the merge commit was
// pruned (the location is kept in the archive) and after the source
// branch was deleted; a location that does not name the second parent is
// refused at encode.
func TestMergedLocationReadsTheSecondParentAndSurvivesPruning(t *testing.T) {
	ctx := context.Background()
	m, c := newStore(t)
	src := commitEntry("review", 1, 2, "")
	if err := m.Publish(ctx, src); err != nil {
		t.Fatal(err)
	}
	if err := m.Tombstone(ctx, Ref{Branch: "review", Incarnation: 1, Version: 2, Exists: true}); err != nil {
		t.Fatal(err)
	}
	var mergeCommit *Entry
	prev := ""
	for v := uint64(1); v <= 4; v++ {
		e := commitEntry("main", 1, v, prev)
		if v == 2 {
			e.Commit.Parents = append(e.Commit.Parents, src.Commit.ID)
			e.Merged = &ForkPoint{Branch: "review", Incarnation: 1, Version: 2, Head: src.Commit.ID}
			mergeCommit = e
		}
		if err := m.Publish(ctx, e); err != nil {
			t.Fatal(err)
		}
		prev = e.Commit.ID
	}
	check := func(what string, e *Entry) {
		t.Helper()
		before := c.gets.Load()
		p, err := m.MergedParent(ctx, e)
		if err != nil || p == nil || p.Commit.ID != src.Commit.ID || p.Branch != "review" {
			t.Fatalf("%s: second parent %+v, %v", what, p, err)
		}
		if n := c.gets.Load() - before; n != 1 {
			t.Fatalf("%s: %d GETs, want 1", what, n)
		}
	}
	check("the merge commit", mergeCommit)
	if err := m.Prune(ctx, []*Entry{mergeCommit}, PruneOptions{Now: time.UnixMicro(7)}); err != nil {
		t.Fatal(err)
	}
	var pruned *Entry
	err := m.Versions(ctx, "main", 1, 4, func(e *Entry) (bool, error) {
		if e.Version == 2 {
			pruned = e
		}
		return true, nil
	})
	if err != nil || pruned == nil || !pruned.Pruned || pruned.Merged == nil || *pruned.Merged != *mergeCommit.Merged {
		t.Fatalf("the pruned merge commit: %+v, %v; want its merged location kept", pruned, err)
	}
	check("the pruned merge commit", pruned)

	bad := commitEntry("main", 1, 5, prev)
	bad.Merged = &ForkPoint{Branch: "review", Incarnation: 1, Version: 2, Head: src.Commit.ID}
	if _, err := Encode(bad); err == nil {
		t.Fatal("a merged location on a commit with one parent was encoded")
	}
}
