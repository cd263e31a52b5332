package table

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

var vectorSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.BinaryTypes.String},
	{Name: "v", Type: arrow.FixedSizeListOf(3, arrow.PrimitiveTypes.Float32), Nullable: true},
}, nil)

// vectorRecord has ids d<i> and, for each i, the vector [i, i+.5, -i], or
// null where null[i].
func vectorRecord(t *testing.T, from int, null []bool) arrow.Record {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, vectorSchema)
	defer b.Release()
	vb := b.Field(1).(*array.FixedSizeListBuilder)
	fb := vb.ValueBuilder().(*array.Float32Builder)
	for i, n := range null {
		b.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("d%03d", from+i))
		if n {
			vb.AppendNull()
			continue
		}
		vb.Append(true)
		x := float32(from + i)
		fb.AppendValues([]float32{x, x + .5, -x}, nil)
	}
	return b.NewRecord()
}

func vectorRows(t *testing.T, ds *Dataset) string {
	t.Helper()
	recs, err := ds.Scan(context.Background(), ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer releaseAll(recs)
	var out string
	for _, r := range recs {
		if !arrow.TypeEqual(r.Schema().Field(1).Type, vectorSchema.Field(1).Type) {
			t.Fatalf("read back as %s, want %s", r.Schema().Field(1).Type, vectorSchema.Field(1).Type)
		}
		for i := 0; i < int(r.NumRows()); i++ {
			out += r.Column(0).(*array.String).Value(i) + "=" + r.Column(1).ValueStr(i) + " "
		}
	}
	return out
}

// TestNullableVectorsWithNulls pins the vector encoding rule: a nullable
// fixed-size list of float32 (a Vector property) with null entries between
// values — which Parquet writers refuse as a fixed-size list — is written
// and read back with its nulls and values, through a staged append, a
// fragment writer and a compaction.
func TestNullableVectorsWithNulls(t *testing.T) {
	ctx := context.Background()
	store := newStore()
	ds, err := Create(ctx, store, testPath, vectorSchema, "id")
	if err != nil {
		t.Fatal(err)
	}
	rec := vectorRecord(t, 0, []bool{false, true, false, true})
	defer rec.Release()
	ds = mc(t)(ds.StageAppend(ctx, rec))
	want := "d000=[0,0.5,-0] d001=(null) d002=[2,2.5,-2] d003=(null) "
	if got := vectorRows(t, ds); got != want {
		t.Fatalf("after append: %s\nwant %s", got, want)
	}
	fw, err := NewFragmentWriter(vectorSchema, "id")
	if err != nil {
		t.Fatal(err)
	}
	rec2 := vectorRecord(t, 4, []bool{true, false})
	defer rec2.Release()
	if err := fw.Write(rec2); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	ds = mc(t)(ds.StageAppendFragments(ctx, fw))
	want += "d004=(null) d005=[5,5.5,-5] "
	if got := vectorRows(t, ds); got != want {
		t.Fatalf("after the fragment writer: %s\nwant %s", got, want)
	}
	ds = mc(t)(ds.StageCompact(ctx, CompactOptions{}))
	if got := vectorRows(t, ds); got != want {
		t.Fatalf("after compaction: %s\nwant %s", got, want)
	}
	// Vectors without a null (the shared-values path), from a sliced record.
	full := vectorRecord(t, 10, []bool{false, false, false, false})
	defer full.Release()
	part := full.NewSlice(1, 4)
	defer part.Release()
	ds = mc(t)(ds.StageAppend(ctx, part))
	want += "d011=[11,11.5,-11] d012=[12,12.5,-12] d013=[13,13.5,-13] "
	if got := vectorRows(t, ds); got != want {
		t.Fatalf("after a null-free sliced append: %s\nwant %s", got, want)
	}
}
