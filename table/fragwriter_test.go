package table

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// A FragmentWriter fed record by record stages one fragment per writer with
// the rows in order, exact statistics, inline keys only when small, and the
// key column (and plain columns) without a dictionary.
func TestFragmentWriterStagesFragments(t *testing.T) {
	ctx := context.Background()
	store := newStore()
	ds := mustCreate(t, store)
	big, err := NewFragmentWriter(personSchema, "id", "name")
	if err != nil {
		t.Fatal(err)
	}
	var want []person
	for i := 0; i < 3; i++ {
		rows := people("p", i*1000, 1000)
		if i == 1 {
			rows[5].age = -1 // a null
		}
		want = append(want, rows...)
		rec := record(t, rows)
		if err := big.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	if err := big.Close(); err != nil {
		t.Fatal(err)
	}
	small, err := NewFragmentWriter(personSchema, "id")
	if err != nil {
		t.Fatal(err)
	}
	tail := []person{{id: "z2", name: "n", age: 7}, {id: "z1", name: "n", age: 9}}
	rec := record(t, tail)
	if err := small.Write(rec); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	if err := small.Close(); err != nil {
		t.Fatal(err)
	}
	if err := small.Write(record(t, tail)); err == nil {
		t.Fatal("Write after Close: want an error")
	}
	empty, _ := NewFragmentWriter(personSchema, "id")
	empty.Close()
	st, err := ds.StageAppendFragments(ctx, big, empty, small)
	ds = mustCommit(t, st, err)
	if got, w := rowsOf(t, ds), render(append(want, tail...)); !equalRows(got, w) {
		t.Fatalf("rows differ: got %d rows, want %d", len(got), len(w))
	}
	frags := ds.Manifest().Fragments
	if len(frags) != 2 {
		t.Fatalf("fragments: got %d, want 2 (the empty writer adds none)", len(frags))
	}
	f0, f1 := frags[0], frags[1]
	if f0.Rows != 3000 || f1.Rows != 2 {
		t.Fatalf("fragment rows %d, %d; want 3000, 2", f0.Rows, f1.Rows)
	}
	if f0.Keys != nil || fmt.Sprint(f1.Keys) != "[z1 z2]" {
		t.Fatalf("inline keys: %v / %v; want none / [z1 z2]", f0.Keys, f1.Keys)
	}
	st0 := statsMap(f0)
	if a := st0["age"]; a.NullCount != 1 || a.Min.Int != 0 || a.Max.Int != 2999 {
		t.Fatalf("age stats %+v min %v max %v", a, a.Min, a.Max)
	}
	if id := st0["id"]; id.Min.Str != "p000000" || id.Max.Str != "p002999" {
		t.Fatalf("id stats %v..%v", id.Min, id.Max)
	}
	// Key lookups find rows of both fragments.
	found, err := ds.Lookup(ctx, "p001500", "z1", "nope")
	if err != nil {
		t.Fatal(err)
	}
	if found.NumRows() != 2 {
		t.Fatalf("lookup: %d rows, want 2", found.NumRows())
	}
	found.Release()
}

// Each Write of up to rowGroupRows rows is a row group; the key and plain
// columns carry no dictionary page.
func TestFragmentWriterRowGroupsAndDictionary(t *testing.T) {
	ctx := context.Background()
	store := newStore()
	ds := mustCreate(t, store)
	fw, err := NewFragmentWriter(personSchema, "id", "name")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		rec := record(t, people("p", i*100, 100))
		if err := fw.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	fw.Close()
	st, err := ds.StageAppendFragments(ctx, fw)
	ds = mustCommit(t, st, err)
	ff, err := loadFragment(ctx, store, ds.Path(), ds.Manifest().Fragments[0])
	if err != nil {
		t.Fatal(err)
	}
	md := ff.fr.ParquetReader().MetaData()
	if md.NumRowGroups() != 3 {
		t.Fatalf("row groups: %d, want 3 (one per Write)", md.NumRowGroups())
	}
	for c, wantDict := range map[int]bool{0: false, 1: false, 2: true} {
		cc, err := md.RowGroup(0).ColumnChunk(c)
		if err != nil {
			t.Fatal(err)
		}
		if got := cc.HasDictionaryPage(); got != wantDict {
			t.Errorf("column %d: dictionary page %v, want %v", c, got, wantDict)
		}
	}
	// A plain StageAppend writes the key column without a dictionary too.
	rec := record(t, people("q", 0, 50))
	defer rec.Release()
	st, err = ds.StageAppend(ctx, rec)
	ds = mustCommit(t, st, err)
	ff, err = loadFragment(ctx, store, ds.Path(), ds.Manifest().Fragments[1])
	if err != nil {
		t.Fatal(err)
	}
	cc, _ := ff.fr.ParquetReader().MetaData().RowGroup(0).ColumnChunk(0)
	if cc.HasDictionaryPage() {
		t.Error("StageAppend: the key column has a dictionary page")
	}
}

// A column with NaN in one record has no min/max for the fragment, even
// when another record has ordinary values; a schema mismatch is refused at
// staging.
func TestFragmentWriterUnorderedStatsAndSchema(t *testing.T) {
	ctx := context.Background()
	s := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "w", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	fw, err := NewFragmentWriter(s, "id")
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range []float64{1.5, math.NaN()} {
		b := array.NewRecordBuilder(memory.DefaultAllocator, s)
		b.Field(0).(*array.StringBuilder).Append(fmt.Sprint("e", i))
		b.Field(1).(*array.Float64Builder).Append(w)
		rec := b.NewRecordBatch()
		b.Release()
		if err := fw.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	fw.Close()
	f := fw.fragment("x", "data/x.parquet", nil)
	if st := statsMap(f)["w"]; st.Min != nil || st.Max != nil {
		t.Fatalf("w stats %v..%v, want none (NaN)", st.Min, st.Max)
	}
	ds := mustCreate(t, newStore())
	if _, err := ds.StageAppendFragments(ctx, fw); err == nil {
		t.Fatal("staging a fragment of another schema: want an error")
	}
	open, _ := NewFragmentWriter(personSchema, "id")
	if _, err := ds.StageAppendFragments(ctx, open); err == nil {
		t.Fatal("staging an open writer: want an error")
	}
}

// TestCompactWritesDistinctStringsWithoutDictionary: a compaction rewrites
// a string column whose values are all distinct (names here, as a unique
// property) without a dictionary, as the load path writes it, and keeps
// the dictionary of a string column of few values. A dictionary of
// distinct strings made a rewritten 100k-row fragment 2.5x the loaded one.
func TestCompactWritesDistinctStringsWithoutDictionary(t *testing.T) {
	ctx := context.Background()
	store := newStore()
	s := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "name", Type: arrow.BinaryTypes.String},
		{Name: "city", Type: arrow.BinaryTypes.String},
	}, nil)
	ds, err := Create(ctx, store, "t", s, "id")
	if err != nil {
		t.Fatal(err)
	}
	for f := 0; f < 4; f++ {
		b := array.NewRecordBuilder(memory.DefaultAllocator, s)
		for i := 0; i < 200; i++ {
			n := f*200 + i
			b.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("id%05d", n))
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("name-%05d", n))
			b.Field(2).(*array.StringBuilder).Append([]string{"oslo", "lima", "rome"}[n%3])
		}
		rec := b.NewRecord()
		b.Release()
		st, err := ds.StageAppend(ctx, rec)
		rec.Release()
		ds = mustCommit(t, st, err)
	}
	st, err := ds.StageCompact(ctx, CompactOptions{})
	ds = mustCommit(t, st, err)
	if n := len(ds.Manifest().Fragments); n != 1 {
		t.Fatalf("%d fragments after compaction", n)
	}
	ff, err := loadFragment(ctx, store, ds.Path(), ds.Manifest().Fragments[0])
	if err != nil {
		t.Fatal(err)
	}
	md := ff.fr.ParquetReader().MetaData()
	for c, wantDict := range map[int]bool{0: false, 1: false, 2: true} {
		cc, err := md.RowGroup(0).ColumnChunk(c)
		if err != nil {
			t.Fatal(err)
		}
		if got := cc.HasDictionaryPage(); got != wantDict {
			t.Errorf("column %d: dictionary page %v, want %v", c, got, wantDict)
		}
	}
	rec, err := ds.ScanRecord(ctx, ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	if rec.NumRows() != 800 {
		t.Fatalf("%d rows after compaction", rec.NumRows())
	}
	names := rec.Column(1).(*array.String)
	cities := rec.Column(2).(*array.String)
	seen := map[string]bool{}
	for i := 0; i < int(rec.NumRows()); i++ {
		seen[names.Value(i)+"/"+cities.Value(i)] = true
	}
	for n := 0; n < 800; n++ {
		if k := fmt.Sprintf("name-%05d/%s", n, []string{"oslo", "lima", "rome"}[n%3]); !seen[k] {
			t.Fatalf("row %s missing after compaction", k)
		}
	}
}

// TestFragmentWriterAppendFillsRowGroups: Append adds batches of any size
// to the open row group up to rowGroupRows rows, EndRowGroup and Write end
// it, the rows stay in order; a string column whose first batch is all
// distinct values is written without a dictionary, one of few values with.
func TestFragmentWriterAppendFillsRowGroups(t *testing.T) {
	ctx := context.Background()
	s := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "name", Type: arrow.BinaryTypes.String},
		{Name: "city", Type: arrow.BinaryTypes.String},
	}, nil)
	fw, err := NewFragmentWriter(s, "id")
	if err != nil {
		t.Fatal(err)
	}
	next := 0
	batch := func(n int) arrow.Record {
		b := array.NewRecordBuilder(memory.DefaultAllocator, s)
		defer b.Release()
		for i := 0; i < n; i++ {
			b.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("id%06d", next))
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("name-%06d", next))
			b.Field(2).(*array.StringBuilder).Append([]string{"oslo", "lima", "rome"}[next%3])
			next++
		}
		return b.NewRecordBatch()
	}
	for _, step := range []struct {
		n    int
		call string
	}{{10_000, "append"}, {10_000, "append"}, {3_000, "append"}, {0, "end"}, {500, "append"}, {100, "write"}, {50, "append"}} {
		if step.call == "end" {
			fw.EndRowGroup()
			continue
		}
		rec := batch(step.n)
		write := fw.Append
		if step.call == "write" {
			write = fw.Write
		}
		if err := write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	store := newStore()
	ds, err := Create(ctx, store, "t", s, "id")
	if err != nil {
		t.Fatal(err)
	}
	st, err := ds.StageAppendFragments(ctx, fw)
	ds = mustCommit(t, st, err)
	ff, err := loadFragment(ctx, store, ds.Path(), ds.Manifest().Fragments[0])
	if err != nil {
		t.Fatal(err)
	}
	md := ff.fr.ParquetReader().MetaData()
	var groups []int64
	for g := 0; g < md.NumRowGroups(); g++ {
		groups = append(groups, md.RowGroup(g).NumRows())
	}
	if want := fmt.Sprint([]int64{rowGroupRows, 23_000 - rowGroupRows, 500, 100, 50}); fmt.Sprint(groups) != want {
		t.Fatalf("row groups %v, want %s", groups, want)
	}
	for c, wantDict := range map[int]bool{0: false, 1: false, 2: true} {
		cc, err := md.RowGroup(0).ColumnChunk(c)
		if err != nil {
			t.Fatal(err)
		}
		if got := cc.HasDictionaryPage(); got != wantDict {
			t.Errorf("column %d: dictionary page %v, want %v", c, got, wantDict)
		}
	}
	rec, err := ds.ScanRecord(ctx, ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	ids := rec.Column(0).(*array.String)
	if ids.Len() != next {
		t.Fatalf("%d rows, want %d", ids.Len(), next)
	}
	for i := 0; i < ids.Len(); i++ {
		if want := fmt.Sprintf("id%06d", i); ids.Value(i) != want {
			t.Fatalf("row %d is %s, want %s", i, ids.Value(i), want)
		}
	}
}
