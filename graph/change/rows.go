package change

// Conversions between rows of canonical values (pg.Property.Coerce's Go
// types, keyed by column name) and Arrow records, for the write path: load
// and mutations build records from rows, and read committed rows back to
// match predicates and to apply updates.

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/omnigraph-go/omnigraph/table"
)

// Row is one entity: column name to canonical value (nil is NULL). Node rows
// hold "id"; edge rows hold "id", "src" and "dst".
type Row = map[string]any

// rowsRecord builds one record of schema from rows, in order. A column a
// row does not mention is NULL; a value of the wrong Go type is an error
// (rows come from Coerce, so that is a bug, not bad input).
func rowsRecord(schema *arrow.Schema, rows []Row) (arrow.Record, error) {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i, f := range schema.Fields() {
		fb := b.Field(i)
		fb.Reserve(len(rows))
		for _, r := range rows {
			if err := appendCanonical(fb, r[f.Name]); err != nil {
				return nil, fmt.Errorf("column %s: %w", f.Name, err)
			}
		}
	}
	return b.NewRecordBatch(), nil
}

func appendCanonical(b array.Builder, v any) error {
	if v == nil {
		b.AppendNull()
		return nil
	}
	bad := func() error { return fmt.Errorf("value %v (%T) does not fit %s", v, v, b.Type()) }
	switch bb := b.(type) {
	case *array.StringBuilder:
		s, ok := v.(string)
		if !ok {
			return bad()
		}
		bb.Append(s)
	case *array.BooleanBuilder:
		x, ok := v.(bool)
		if !ok {
			return bad()
		}
		bb.Append(x)
	case *array.Int32Builder:
		x, ok := v.(int32)
		if !ok {
			return bad()
		}
		bb.Append(x)
	case *array.Int64Builder:
		x, ok := v.(int64)
		if !ok {
			return bad()
		}
		bb.Append(x)
	case *array.Uint32Builder:
		x, ok := v.(uint32)
		if !ok {
			return bad()
		}
		bb.Append(x)
	case *array.Uint64Builder:
		x, ok := v.(uint64)
		if !ok {
			return bad()
		}
		bb.Append(x)
	case *array.Float32Builder:
		x, ok := v.(float32)
		if !ok {
			return bad()
		}
		bb.Append(x)
	case *array.Float64Builder:
		x, ok := v.(float64)
		if !ok {
			return bad()
		}
		bb.Append(x)
	case *array.Date32Builder:
		x, ok := v.(int32)
		if !ok {
			return bad()
		}
		bb.Append(arrow.Date32(x))
	case *array.TimestampBuilder:
		x, ok := v.(int64)
		if !ok {
			return bad()
		}
		bb.Append(arrow.Timestamp(x))
	case *array.BinaryBuilder:
		x, ok := v.([]byte)
		if !ok {
			return bad()
		}
		bb.Append(x)
	case *array.StructBuilder:
		if !table.IsBlobType(bb.Type()) {
			return fmt.Errorf("unsupported column type %s", b.Type())
		}
		if _, ok := v.(table.Blob); !ok {
			return bad()
		}
		return table.AppendBlob(bb, v)
	case *array.FixedSizeListBuilder:
		x, ok := v.([]float32)
		if !ok {
			return bad()
		}
		vb, ok := bb.ValueBuilder().(*array.Float32Builder)
		if !ok || int32(len(x)) != bb.Type().(*arrow.FixedSizeListType).Len() {
			return bad()
		}
		bb.Append(true)
		vb.AppendValues(x, nil)
	case *array.ListBuilder:
		x, ok := v.([]any)
		if !ok {
			return bad()
		}
		bb.Append(true)
		for _, e := range x {
			if err := appendCanonical(bb.ValueBuilder(), e); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("unsupported column type %s", b.Type())
	}
	return nil
}

// recordEntityRows converts a record into rows of canonical values.
func recordEntityRows(rec arrow.Record) []Row {
	n := int(rec.NumRows())
	out := make([]Row, n)
	for i := range out {
		out[i] = make(Row, rec.NumCols())
	}
	for c := 0; c < int(rec.NumCols()); c++ {
		name := rec.ColumnName(c)
		col := rec.Column(c)
		for i := 0; i < n; i++ {
			out[i][name] = canonicalAt(col, i)
		}
	}
	return out
}

// canonicalAt returns the canonical value at row i of a column (nil for NULL).
func canonicalAt(a arrow.Array, i int) any {
	if a.IsNull(i) {
		return nil
	}
	switch x := a.(type) {
	case *array.String:
		return x.Value(i)
	case *array.Boolean:
		return x.Value(i)
	case *array.Int32:
		return x.Value(i)
	case *array.Int64:
		return x.Value(i)
	case *array.Uint32:
		return x.Value(i)
	case *array.Uint64:
		return x.Value(i)
	case *array.Float32:
		return x.Value(i)
	case *array.Float64:
		return x.Value(i)
	case *array.Date32:
		return int32(x.Value(i))
	case *array.Timestamp:
		return int64(x.Value(i))
	case *array.Binary:
		return append([]byte(nil), x.Value(i)...)
	case *array.Struct:
		if b, ok := table.BlobAt(x, i); ok && table.IsBlobType(x.DataType()) {
			return b
		}
		return nil
	case *array.FixedSizeList:
		vals, _ := x.ListValues().(*array.Float32)
		n := int(x.DataType().(*arrow.FixedSizeListType).Len())
		out := make([]float32, n)
		if vals != nil {
			start := (x.Offset() + i) * n
			copy(out, vals.Float32Values()[start:start+n])
		}
		return out
	case *array.List:
		start, end := x.ValueOffsets(i)
		vals := x.ListValues()
		out := make([]any, 0, end-start)
		for j := int(start); j < int(end); j++ {
			out = append(out, canonicalAt(vals, j))
		}
		return out
	}
	return nil
}

// RecordRows converts a record into rows of canonical values (the diff and
// the merge read committed rows with it).
func RecordRows(rec arrow.Record) []Row { return recordEntityRows(rec) }

// AppendValue appends one canonical value (nil is NULL) to a column builder
// of the write path's Arrow types (bulk load builds records with it).
func AppendValue(b array.Builder, v any) error { return appendCanonical(b, v) }
