package table

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// TestRowsAt: rows fetched by place equal the same rows looked up by key,
// deleted rows are left out, and the cost is one tail GET per fragment
// (cached after) plus one GET per row group holding a row.
func TestRowsAt(t *testing.T) {
	ctx := context.Background()
	store, cnt := countedStore()
	ds := mustCreate(t, store)
	ds = mustAppend(t, ds, people("a", 0, 40000)) // 3 row groups
	ds = mustAppend(t, ds, people("b", 0, 100))
	ds = mc(t)(ds.StageChanges(ctx, Changes{DeleteKeys: []string{"a000005"}}))
	ds, err := Open(ctx, store, testPath, MainBranch)
	if err != nil {
		t.Fatal(err)
	}
	at := []RowAt{{0, 3}, {0, 5}, {0, 20000}, {0, 39999}, {1, 7}}
	cnt.Reset()
	rec, err := ds.RowsAt(ctx, at)
	if err != nil {
		t.Fatal(err)
	}
	first := cnt.Snapshot()
	got := renderRecs([]arrow.Record{rec})
	rec.Release()
	look, err := ds.Lookup(ctx, "a000003", "a020000", "a039999", "b000007")
	if err != nil {
		t.Fatal(err)
	}
	want := renderRecs([]arrow.Record{look})
	look.Release()
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) || len(got) != 4 {
		t.Fatalf("RowsAt %v, Lookup %v", got, want)
	}
	// Fragment 0: its tail, its deletion file, 3 row groups; fragment 1:
	// its tail and 1 row group.
	if first.Total != 7 {
		t.Errorf("first RowsAt cost %s, want 7", first)
	}
	cnt.Reset()
	rec, err = ds.RowsAt(ctx, at[:1])
	if err != nil {
		t.Fatal(err)
	}
	rec.Release()
	if c := cnt.Snapshot(); c.Total != 1 {
		t.Errorf("warm RowsAt of one row cost %s, want 1 (its row group)", c)
	}
	if _, err := ds.RowsAt(ctx, []RowAt{{5, 0}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a fragment out of range: %v", err)
	}
}

// TestIndexFile: a caller-built index file is written beside the
// fragments, recorded with what it covers, read back through the cache,
// carried into later versions, and reported partial after an append or a
// delete.
func TestIndexFile(t *testing.T) {
	ctx := context.Background()
	store, cnt := countedStore()
	ds := mustAppend(t, mustCreate(t, store), people("a", 0, 10))
	data := []byte("hello index")
	ds = mc(t)(ds.StageIndexes(ctx, func(*Dataset) ([]IndexFile, error) {
		return []IndexFile{{Kind: "demo", Columns: []string{"name"}, Data: data, Entries: 10}}, nil
	}))
	ixs := ds.IndexesOf("demo")
	if len(ixs) != 1 || !ds.IndexCovers(ixs[0]) || ixs[0].Entries != 10 || len(ixs[0].Fragments) != 1 {
		t.Fatalf("indexes %+v", ixs)
	}
	decode := func(b []byte) (any, int64, error) { return bytes.Clone(b), int64(len(b)), nil }
	cnt.Reset()
	for range 2 {
		v, err := ds.ReadIndex(ctx, ixs[0], 0, -1, decode)
		if err != nil || !bytes.Equal(v.([]byte), data) {
			t.Fatalf("read %q, %v", v, err)
		}
	}
	if c := cnt.Snapshot(); c.Total != 1 {
		t.Errorf("two reads cost %s, want one GET", c)
	}
	ds = mustAppend(t, ds, people("b", 0, 3))
	ixs = ds.IndexesOf("demo")
	if len(ixs) != 1 || ds.IndexCovers(ixs[0]) {
		t.Fatalf("after an append: %+v", ixs)
	}
	ord, newer := ds.FragmentCoverage(ixs[0])
	if !slices.Equal(ord, []int{0, -1}) || slices.Contains(newer, true) {
		t.Errorf("coverage %v %v", ord, newer)
	}
	ds = mc(t)(ds.StageChanges(ctx, Changes{DeleteKeys: []string{"a000001"}}))
	ord, newer = ds.FragmentCoverage(ds.IndexesOf("demo")[0])
	if !slices.Equal(ord, []int{0, -1}) || !newer[0] {
		t.Errorf("coverage after a delete %v %v", ord, newer)
	}
	del, err := ds.DeletedRows(ctx, 0)
	if err != nil || del == nil || !del.Contains(1) || del.GetCardinality() != 1 {
		t.Errorf("deleted rows %v, %v", del, err)
	}
	if err := store.Delete(ctx, ds.Path()+"/"+ixs[0].Path); err != nil {
		t.Fatal(err)
	}
	fresh, err := Open(ctx, store, testPath, MainBranch)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fresh.ReadIndex(ctx, ixs[0], 0, -1, decode); !errors.Is(err, ErrNotFound) {
		t.Errorf("a deleted file: %v", err)
	}
	st, err := fresh.StageIndexes(ctx, func(*Dataset) ([]IndexFile, error) { return nil, nil })
	if err != nil || !st.Empty() {
		t.Errorf("no index file: %+v, %v; want an empty stage", st, err)
	}
	if err := st.AddIndexFile(ctx, IndexFile{Kind: "x", Columns: []string{"name"}}); !errors.Is(err, ErrNothingStaged) {
		t.Errorf("empty stage: %v", err)
	}
	st, err = fresh.StageIndexes(ctx, func(*Dataset) ([]IndexFile, error) {
		return []IndexFile{{Kind: "key", Columns: []string{"name"}}}, nil
	})
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("a reserved kind: %+v, %v", st, err)
	}
}
