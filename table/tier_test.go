package table

import (
	"context"
	"fmt"
	"slices"
	"testing"
)

func TestSmallestTierPicksTheSmallestAndEveryDeletion(t *testing.T) {
	frag := func(id string, rows int64, del bool) Fragment {
		f := Fragment{ID: id, Rows: rows}
		if del {
			f.Deletion = &DeletionFile{Count: 1}
			f.Rows++
		}
		return f
	}
	cand := []Fragment{frag("big", 100, false), frag("a", 1, false), frag("b", 7, false), frag("c", 1, false),
		frag("d", 30, false), frag("e", 3, false), frag("gone", 90, true)}
	var got []string
	for _, f := range smallestTier(cand, 2) {
		got = append(got, f.ID)
	}
	// By size: a 1, c 1 (2 rows), e 3 <= 4 (5), b 7 <= 10 (12), d 30 > 24
	// stops; "gone" carries a deletion, so it is folded whatever its size.
	// Manifest order is kept.
	if want := []string{"a", "b", "c", "e", "gone"}; !slices.Equal(got, want) {
		t.Fatalf("tier: got %v, want %v", got, want)
	}
	if got := smallestTier(cand[:1], 2); len(got) != 1 {
		t.Fatalf("one candidate: %d", len(got))
	}
}

// TestTieredCompactionBoundsFragmentsAndRewrites runs the automatic
// compaction's policy (compact at 10 small fragments, TierRatio 2) over
// 400 one-row commits on a 500-row base: the table never holds 10 small
// fragments after a run, a row is rewritten a few times rather than the
// base once per run, the rows are unchanged, and a run that writes only
// small fragments keeps the key index (a key check still reads no
// fragment: every key is in the index or inline).
func TestTieredCompactionBoundsFragmentsAndRewrites(t *testing.T) {
	ctx := context.Background()
	store, _, mt := meteredStore()
	ds := mustCreate(t, store)
	ds = mustAppend(t, ds, people("base", 0, 500))
	ds = mc(t)(ds.StageCompact(ctx, CompactOptions{IndexKey: true}))
	const threshold, commits = 10, 400
	var rewritten int64
	runs, kept := 0, 0
	for i := 0; i < commits; i++ {
		ds = mustAppend(t, ds, people("q", i, 1))
		if ds.SmallFragments(0) < threshold {
			continue
		}
		before := map[string]bool{}
		for _, f := range ds.Manifest().Fragments {
			before[f.ID] = true
		}
		oldIndex := ds.keyIndex("id").UUID
		ds = mc(t)(ds.StageCompact(ctx, CompactOptions{IndexKey: true, TierRatio: 2}))
		runs++
		small := true
		for _, f := range ds.Manifest().Fragments {
			if !before[f.ID] {
				rewritten += f.Rows
				small = small && f.Rows <= inlineKeyRows
			}
		}
		if ix := ds.keyIndex("id"); small && ix.UUID == oldIndex {
			kept++
		} else if small {
			t.Fatalf("run %d wrote only small fragments and rebuilt the key index", runs)
		}
		if n := ds.SmallFragments(0); n >= threshold {
			t.Fatalf("after run %d: %d small fragments, want < %d", runs, n, threshold)
		}
	}
	want := append(render(people("base", 0, 500)), render(people("q", 0, commits))...)
	slices.Sort(want)
	if got := rowsOf(t, ds); !equalRows(got, want) {
		t.Fatalf("rows changed: %d rows, want %d", len(got), len(want))
	}
	// Merging every small fragment each run would rewrite the whole table
	// (500+ rows) every 9 commits: over 20,000 rows here.
	t.Logf("%d runs (%d kept the key index), %d rows rewritten for %d committed", runs, kept, rewritten, commits)
	if rewritten > 8*commits {
		t.Errorf("%d rows rewritten for %d one-row commits, want at most %d", rewritten, commits, 8*commits)
	}
	if kept == 0 {
		t.Error("no run kept the key index")
	}
	// An absent key inside the fragments' key ranges is refuted without
	// reading a fragment: by the index (the base) or by inline keys (the
	// rewritten small fragments and the newest commits).
	mt.reset()
	found, err := ds.locateKeys(ctx, []string{"base000123x", fmt.Sprintf("q%06dx", 3), fmt.Sprintf("q%06dx", commits-2)})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 0 || mt.fragRead != 0 {
		t.Errorf("absent keys: found %v, read %d fragment bytes, want none and 0", found, mt.fragRead)
	}
	// Existing keys are still found: in the base, in a rewritten small
	// fragment and in the last commit's fragment.
	for _, k := range []string{"base000123", fmt.Sprintf("q%06d", 3), fmt.Sprintf("q%06d", commits-1)} {
		rec, err := ds.Lookup(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if rec.NumRows() != 1 {
			t.Errorf("lookup %s: %d rows", k, rec.NumRows())
		}
		rec.Release()
	}
}

// TestTieredCompactionKeepsAdjacencyIndex: on an edge table, a tiered run
// that writes only small fragments keeps the adjacency index (a traversal
// patches it with the rewritten fragments) instead of rebuilding it over
// every edge, a full compaction rebuilds it, and the adjacency equals the
// scan's edges throughout.
func TestTieredCompactionKeepsAdjacencyIndex(t *testing.T) {
	ctx := context.Background()
	ds, err := Create(ctx, newStore(), "edges/Knows", edgeSchema, "id")
	if err != nil {
		t.Fatal(err)
	}
	adj := [2]string{"src", "dst"}
	ds = appendEdges(t, ds, "base", 2000, 300, 0)
	ds = mc(t)(ds.StageCompact(ctx, CompactOptions{IndexKey: true, Adjacency: adj}))
	built := ds.Manifest().adjacencyIndex("src", "dst").UUID
	for i := 0; i < 12; i++ {
		ds = appendEdges(t, ds, fmt.Sprintf("c%02d", i), 1, 300, i)
	}
	ds = mc(t)(ds.StageCompact(ctx, CompactOptions{IndexKey: true, Adjacency: adj, TierRatio: 2}))
	if n := len(ds.Manifest().Fragments); n >= 12 {
		t.Fatalf("tiered run left %d fragments", n)
	}
	ix := ds.Manifest().adjacencyIndex("src", "dst")
	if ix == nil || ix.UUID != built {
		t.Fatalf("tiered run of small fragments replaced the adjacency index: %+v", ix)
	}
	if a := loadAdj(t, ds); a.From != AdjacencyPatched || !slices.Equal(adjEdges(t, a), scanEdges(t, ds)) {
		t.Fatalf("after the tiered run: from %s, edges differ from the scan", a.From)
	}
	ds = mc(t)(ds.StageCompact(ctx, CompactOptions{IndexKey: true, Adjacency: adj}))
	if ix := ds.Manifest().adjacencyIndex("src", "dst"); ix == nil || ix.UUID == built || !ds.AdjacencyCovers("src", "dst") {
		t.Fatalf("a full compaction must rebuild the index over the result: %+v", ix)
	}
	if a := loadAdj(t, ds); !slices.Equal(adjEdges(t, a), scanEdges(t, ds)) {
		t.Fatal("after the full compaction: edges differ from the scan")
	}
}
