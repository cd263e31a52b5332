package table

import (
	"context"
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestRicherColumnTypes runs vectors (fixed-size lists), timestamps, floats
// with NaN and infinities, and booleans through every read path.
func TestRicherColumnTypes(t *testing.T) {
	ctx := context.Background()
	s := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "emb", Type: arrow.FixedSizeListOf(3, arrow.PrimitiveTypes.Float32), Nullable: true},
		{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	}, nil)
	build := func(ids []string, scores []float64) arrow.Record {
		b := array.NewRecordBuilder(memory.DefaultAllocator, s)
		defer b.Release()
		for i, id := range ids {
			b.Field(0).(*array.StringBuilder).Append(id)
			lb := b.Field(1).(*array.FixedSizeListBuilder)
			lb.Append(true)
			for k := 0; k < 3; k++ {
				lb.ValueBuilder().(*array.Float32Builder).Append(float32(i*3 + k))
			}
			b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(1_000_000 * int64(i)))
			b.Field(3).(*array.Float64Builder).Append(scores[i])
			b.Field(4).(*array.BooleanBuilder).Append(i%2 == 0)
		}
		return b.NewRecordBatch()
	}
	store := newStore()
	ds, err := Create(ctx, store, "nodes/Doc", s, "id")
	if err != nil {
		t.Fatal(err)
	}
	r1 := build([]string{"a", "b", "c"}, []float64{1, math.NaN(), math.Inf(1)})
	r2 := build([]string{"d", "e"}, []float64{2, 3})
	defer r1.Release()
	defer r2.Release()
	ds = mc(t)(ds.StageAppend(ctx, r1))
	ds = mc(t)(ds.StageAppend(ctx, r2))
	ds = mc(t)(ds.StageCreateIndex(ctx, "id"))

	if f := ds.Manifest().Fragments[0]; f.Stats[3].Min != nil {
		t.Fatalf("float stats with NaN/Inf kept min/max: %+v", f.Stats[3])
	}
	count := func(p Predicate) int64 {
		t.Helper()
		recs, err := ds.Scan(ctx, ScanOptions{Filter: p, Columns: []string{"id", "emb"}})
		if err != nil {
			t.Fatal(err)
		}
		defer releaseAll(recs)
		return rows(recs)
	}
	if n := count(Gt("score", 1e300)); n != 1 {
		t.Fatalf("score > 1e300 = %d rows, want 1 (the +Inf row)", n)
	}
	if n := count(Ge("at", 1_000_000)); n != 3 {
		t.Fatalf("timestamp filter = %d rows", n)
	}
	if n := count(Eq("ok", true)); n != 3 {
		t.Fatalf("bool filter = %d rows", n)
	}
	ds = mc(t)(ds.StageDelete(ctx, Eq("id", "b")))
	rec, err := ds.Lookup(ctx, "c", "e", "b")
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	if rec.NumRows() != 2 {
		t.Fatalf("lookup rows = %d", rec.NumRows())
	}
	emb := rec.Column(1).(*array.FixedSizeList)
	vals := emb.ListValues().(*array.Float32)
	if vals.Len() != 6 || vals.Value(0) != 6 || vals.Value(3) != 3 {
		t.Fatalf("vector values = %v", vals)
	}
	ds = mc(t)(ds.StageCompact(ctx, CompactOptions{}))
	if ds.RowCount() != 4 {
		t.Fatalf("rows after compact = %d", ds.RowCount())
	}
}
