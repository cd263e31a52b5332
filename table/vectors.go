package table

import (
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Parquet (pqarrow) cannot write a null entry of a fixed-size list: its
// child values always exist. So a fixed-size list of float32 (a Vector
// property) is written as a variable list whose null entries are empty,
// marked with fixedSizeKey, and read back as the fixed-size list. Files
// written before carry the fixed-size list and read unchanged.
const fixedSizeKey = "omnigraph:fixed_size_list"

// vectorField reports whether f is written as a variable list.
func vectorField(f arrow.Field) (*arrow.FixedSizeListType, bool) {
	t, ok := f.Type.(*arrow.FixedSizeListType)
	if !ok || t.Elem().ID() != arrow.FLOAT32 {
		return nil, false
	}
	return t, true
}

// parquetSchema is s as written to Parquet.
func parquetSchema(s *arrow.Schema) *arrow.Schema {
	fields := s.Fields()
	changed := false
	for i, f := range fields {
		t, ok := vectorField(f)
		if !ok {
			continue
		}
		keys, vals := append([]string{}, f.Metadata.Keys()...), append([]string{}, f.Metadata.Values()...)
		keys, vals = append(keys, fixedSizeKey), append(vals, strconv.Itoa(int(t.Len())))
		fields[i] = arrow.Field{Name: f.Name, Type: arrow.ListOfField(t.ElemField()), Nullable: f.Nullable, Metadata: arrow.NewMetadata(keys, vals)}
		changed = true
	}
	if !changed {
		return s
	}
	md := s.Metadata()
	return arrow.NewSchema(fields, &md)
}

// toParquet converts rec (of s) to ps = parquetSchema(s); rec itself when
// nothing changes. The caller releases the result.
func toParquet(ps *arrow.Schema, rec arrow.Record) arrow.Record {
	if ps == rec.Schema() {
		rec.Retain()
		return rec
	}
	cols := make([]arrow.Array, rec.NumCols())
	for i := range cols {
		c := rec.Column(i)
		if fl, ok := c.(*array.FixedSizeList); ok && fl.ListValues().DataType().ID() == arrow.FLOAT32 {
			cols[i] = fixedToList(fl)
			continue
		}
		c.Retain()
		cols[i] = c
	}
	out := array.NewRecordBatch(ps, cols, rec.NumRows())
	for _, c := range cols {
		c.Release()
	}
	return out
}

func fixedToList(fl *array.FixedSizeList) arrow.Array {
	t := fl.DataType().(*arrow.FixedSizeListType)
	n := int(t.Len())
	if fl.NullN() == 0 {
		// No null entry: the list shares the child values; only the
		// offsets are new.
		offsets := make([]int32, fl.Len()+1)
		for i := range offsets {
			offsets[i] = int32(i * n)
		}
		child := array.NewSlice(fl.ListValues(), int64(fl.Offset()*n), int64((fl.Offset()+fl.Len())*n))
		defer child.Release()
		data := array.NewData(arrow.ListOfField(t.ElemField()), fl.Len(),
			[]*memory.Buffer{nil, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(offsets))},
			[]arrow.ArrayData{child.Data()}, 0, 0)
		defer data.Release()
		return array.MakeFromData(data)
	}
	vals := fl.ListValues().(*array.Float32)
	b := array.NewListBuilderWithField(memory.DefaultAllocator, t.ElemField())
	defer b.Release()
	vb := b.ValueBuilder().(*array.Float32Builder)
	for i := 0; i < fl.Len(); i++ {
		if fl.IsNull(i) {
			b.AppendNull()
			continue
		}
		b.Append(true)
		start := (fl.Offset() + i) * n
		for j := 0; j < n; j++ {
			if vals.IsNull(start + j) {
				vb.AppendNull()
			} else {
				vb.Append(vals.Value(start + j))
			}
		}
	}
	return b.NewArray()
}

// fromParquet converts a record read from a file back to the table's
// types: variable lists marked fixedSizeKey become fixed-size lists (a
// null entry's values are zeros). rec itself when nothing changes; the
// caller releases the result.
func fromParquet(rec arrow.Record) arrow.Record {
	s := rec.Schema()
	var fields []arrow.Field
	var cols []arrow.Array
	for i, f := range s.Fields() {
		n, ok := fixedSizeOf(f)
		if !ok {
			continue
		}
		if fields == nil {
			fields = s.Fields()
			cols = make([]arrow.Array, rec.NumCols())
		}
		l := rec.Column(i).(*array.List)
		elem := l.DataType().(*arrow.ListType).ElemField()
		keys, vals := []string{}, []string{}
		for k, key := range f.Metadata.Keys() {
			if key != fixedSizeKey {
				keys, vals = append(keys, key), append(vals, f.Metadata.Values()[k])
			}
		}
		fields[i] = arrow.Field{Name: f.Name, Type: arrow.FixedSizeListOfField(int32(n), elem), Nullable: f.Nullable, Metadata: arrow.NewMetadata(keys, vals)}
		cols[i] = listToFixed(l, n, elem)
	}
	if fields == nil {
		rec.Retain()
		return rec
	}
	for i := range cols {
		if cols[i] == nil {
			cols[i] = rec.Column(i)
			cols[i].Retain()
		}
	}
	md := s.Metadata()
	out := array.NewRecordBatch(arrow.NewSchema(fields, &md), cols, rec.NumRows())
	for _, c := range cols {
		c.Release()
	}
	return out
}

func fixedSizeOf(f arrow.Field) (int, bool) {
	if _, ok := f.Type.(*arrow.ListType); !ok {
		return 0, false
	}
	i := f.Metadata.FindKey(fixedSizeKey)
	if i < 0 {
		return 0, false
	}
	n, err := strconv.Atoi(f.Metadata.Values()[i])
	return n, err == nil && n > 0
}

func listToFixed(l *array.List, n int, elem arrow.Field) arrow.Array {
	if l.NullN() == 0 && l.Len() > 0 {
		// No null entry: every entry holds n values (the writer wrote
		// them so), contiguous in the child; the vectors share it.
		start, _ := l.ValueOffsets(0)
		_, end := l.ValueOffsets(l.Len() - 1)
		if int(end-start) == l.Len()*n {
			child := array.NewSlice(l.ListValues(), start, end)
			defer child.Release()
			data := array.NewData(arrow.FixedSizeListOfField(int32(n), elem), l.Len(), []*memory.Buffer{nil},
				[]arrow.ArrayData{child.Data()}, 0, 0)
			defer data.Release()
			return array.MakeFromData(data)
		}
	}
	b := array.NewFixedSizeListBuilderWithField(memory.DefaultAllocator, int32(n), elem)
	defer b.Release()
	vb := b.ValueBuilder().(*array.Float32Builder)
	vals := l.ListValues().(*array.Float32)
	for i := 0; i < l.Len(); i++ {
		if l.IsNull(i) {
			b.AppendNull() // appends n null values to the child
			continue
		}
		b.Append(true)
		start, end := l.ValueOffsets(i)
		for j := start; j < end; j++ {
			if vals.IsNull(int(j)) {
				vb.AppendNull()
			} else {
				vb.Append(vals.Value(int(j)))
			}
		}
	}
	return b.NewArray()
}
