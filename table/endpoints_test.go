package table

import (
	"bytes"
	"context"
	"slices"
	"testing"
)

// TestTrackedEndpointsBuildTheSameIndex: fragments whose writers tracked
// their endpoints build the adjacency index without a single GET (nothing
// is read back), and the file is byte for byte the one an untracked build
// reads from the fragments (the reference encoder's); a later append whose
// fragments were not tracked, over a table with an index, reads as before.
func TestTrackedEndpointsBuildTheSameIndex(t *testing.T) {
	ctx := context.Background()
	// The first writer gets its rows by Write, the second by Append (row
	// groups across the batches); the tracker gets every batch in order,
	// and its values are sorted ahead of the build.
	write := func(track *Endpoints) []*FragmentWriter {
		var out []*FragmentWriter
		for i, p := range []string{"a", "b"} {
			fw, err := NewFragmentWriter(edgeSchema, "id")
			if err != nil {
				t.Fatal(err)
			}
			for part := 0; part < 3; part++ {
				rec := edgeRecord(p+string(rune('0'+part)), 2_000, 900, i*5+part)
				write := fw.Write
				if i == 1 {
					write = fw.Append
				}
				if err := write(rec); err != nil {
					t.Fatal(err)
				}
				if track != nil {
					if err := track.Add(rec); err != nil {
						t.Fatal(err)
					}
				}
				rec.Release()
			}
			if err := fw.Close(); err != nil {
				t.Fatal(err)
			}
			out = append(out, fw)
		}
		if track != nil {
			track.Sort()
			if err := track.Track(out...); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	build := func(track *Endpoints) ([]byte, *Dataset, int) {
		store, cnt := countedStore()
		ds, err := Create(ctx, store, "edges/Knows", edgeSchema, "id")
		if err != nil {
			t.Fatal(err)
		}
		st, err := ds.StageAppendFragments(ctx, write(track)...)
		if err != nil {
			t.Fatal(err)
		}
		cnt.Reset()
		if err := st.AddAdjacencyIndex(ctx, "src", "dst"); err != nil {
			t.Fatal(err)
		}
		gets := cnt.Snapshot().Get
		v := mustCommit(t, st, nil)
		file, _ := indexFile(t, v)
		return file, v, gets
	}
	plain, _, plainGets := build(nil)
	tracked, v, trackedGets := build(NewEndpoints("src", "dst"))
	if trackedGets != 0 || plainGets == 0 {
		t.Fatalf("the tracked build made %d GETs (want none), the untracked %d (want some)", trackedGets, plainGets)
	}
	if !bytes.Equal(tracked, plain) {
		t.Fatalf("the tracked build wrote %d bytes, the untracked %d, not the same file", len(tracked), len(plain))
	}
	fresh, err := OpenVersion(ctx, v.store, v.Path(), MainBranch, v.Version())
	if err != nil {
		t.Fatal(err)
	}
	a := loadAdj(t, fresh)
	if want := encodeAdjacency(a); a.From != AdjacencyFromIndex || !bytes.Equal(tracked, want) || !slices.Equal(adjEdges(t, a), scanEdges(t, fresh)) {
		t.Fatalf("loaded from %s; the file differs from the reference or the edges from the scan", a.From)
	}

	// Tracked fragments appended to a table that has an index: the build
	// patches the older file and reads the new fragments (the tracker's
	// numbers are not the older file's ranks); same answer.
	st, err := fresh.StageAppendFragments(ctx, write(NewEndpoints("src", "dst"))...)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.AddAdjacencyIndex(ctx, "src", "dst"); err != nil {
		t.Fatal(err)
	}
	appended := mustCommit(t, st, nil)
	again, err := OpenVersion(ctx, v.store, appended.Path(), MainBranch, appended.Version())
	if err != nil {
		t.Fatal(err)
	}
	b := loadAdj(t, again)
	got, _ := indexFile(t, again)
	if b.From != AdjacencyFromIndex || !bytes.Equal(got, encodeAdjacency(b)) || !slices.Equal(adjEdges(t, b), scanEdges(t, again)) {
		t.Fatalf("after a tracked append over an index: from %s, or the file or edges differ", b.From)
	}
}

// TestTrackEndpointsRefusesWrongColumnsOrRows: an Endpoints needs its two
// string columns, and gives its rows only to closed writers that hold
// exactly them.
func TestTrackEndpointsRefusesWrongColumnsOrRows(t *testing.T) {
	rec := edgeRecord("x", 10, 5, 0)
	defer rec.Release()
	if err := NewEndpoints("src", "nope").Add(rec); err == nil {
		t.Fatal("tracked a column that does not exist")
	}
	e := NewEndpoints("src", "dst")
	if err := e.Add(rec); err != nil {
		t.Fatal(err)
	}
	fw, err := NewFragmentWriter(edgeSchema, "id")
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := e.Track(fw); err == nil {
		t.Fatal("tracked an open writer")
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.Track(fw, fw); err == nil {
		t.Fatal("tracked writers holding more rows than were added")
	}
	if src, _ := fw.Endpoints(); src != nil {
		t.Fatal("a refused Track left the writer tracked")
	}
	if err := e.Track(fw); err != nil {
		t.Fatal(err)
	}
	if src, dst := fw.Endpoints(); len(src) != 10 || len(dst) != 10 || e.Value(src[0]) != "n00000" || e.Value(dst[0]) != "n00000" {
		t.Fatalf("tracked %d and %d rows, want 10 from n00000", len(src), len(dst))
	}
}
