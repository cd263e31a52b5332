package iceberg

import (
	"encoding"
	"encoding/binary"
	"math"
	"unicode/utf8"

	ice "github.com/apache/iceberg-go"

	"github.com/omnigraph-go/omnigraph/table"
)

// truncateLen is the width of Iceberg's default metrics mode,
// truncate(16): string bounds keep at most 16 code points.
const truncateLen = 16

// fileStats are the column statistics of one manifest entry, by field id:
// what engines prune files by. A field without an entry is unknown to
// readers (they keep the file), never wrong.
type fileStats struct {
	values, nulls map[int]int64
	lower, upper  map[int][]byte
}

func newFileStats() fileStats {
	return fileStats{values: map[int]int64{}, nulls: map[int]int64{}, lower: map[int][]byte{}, upper: map[int][]byte{}}
}

// columnIDs resolves the column names of the table's Parquet files to the
// field ids of schema as a reader applying schema.name-mapping.default
// does (nameMapping): a field by its name, else by any older name some
// schema gave its id that no field of schema holds.
func columnIDs(schema *ice.Schema, all []*ice.Schema) map[string]int {
	out := map[string]int{}
	for _, f := range schema.Fields() {
		out[f.Name] = f.ID
	}
	for _, s := range all {
		for _, f := range s.Fields() {
			if _, taken := out[f.Name]; taken {
				continue
			}
			if _, live := schema.FindFieldByID(f.ID); live {
				out[f.Name] = f.ID
			}
		}
	}
	return out
}

// dataStats are a data file's statistics, from those the table's Parquet
// writer recorded in the fragment (table.ColumnStats: every value's
// minimum and maximum, nulls), for every top-level primitive field the
// fragment's columns resolve to (ids: columnIDs). Bounds are left out
// where the writer kept none (every value null, a NaN or an infinity
// among floats), where a value has no exact form in the field's type (a
// U64 above 2^63-1), and where strings cannot be truncated upward.
func dataStats(schema *ice.Schema, ids map[string]int, fr table.Fragment) fileStats {
	st := newFileStats()
	for _, cs := range fr.Stats {
		id, ok := ids[cs.Column]
		if !ok {
			continue
		}
		f, ok := schema.FindFieldByID(id)
		if !ok {
			continue
		}
		pt, ok := f.Type.(ice.PrimitiveType)
		if !ok {
			continue // a list or a Blob struct: no column-level counts
		}
		st.values[id] = fr.Rows
		st.nulls[id] = cs.NullCount
		if cs.Min == nil || cs.Max == nil {
			continue
		}
		lo, ok1 := bound(pt, *cs.Min, false)
		hi, ok2 := bound(pt, *cs.Max, true)
		if ok1 && ok2 {
			st.lower[id], st.upper[id] = lo, hi
		}
	}
	return st
}

// bound serializes a column minimum (upper false) or maximum as an
// Iceberg single-value binary of type t; ok is false when it has none.
func bound(t ice.PrimitiveType, v table.Scalar, upper bool) ([]byte, bool) {
	var lit encoding.BinaryMarshaler
	switch t.(type) {
	case ice.BooleanType:
		if v.Kind != "bool" {
			return nil, false
		}
		lit = ice.BoolLiteral(v.Bool)
	case ice.Int32Type, ice.DateType:
		if v.Kind != "int" || v.Int < math.MinInt32 || v.Int > math.MaxInt32 {
			return nil, false
		}
		if _, date := t.(ice.DateType); date {
			lit = ice.DateLiteral(v.Int)
		} else {
			lit = ice.Int32Literal(v.Int)
		}
	case ice.Int64Type, ice.TimestampType, ice.TimestampTzType:
		n := v.Int
		switch v.Kind {
		case "int":
		case "uint":
			if v.Uint > math.MaxInt64 {
				return nil, false // read as a negative long: no bound holds
			}
			n = int64(v.Uint)
		default:
			return nil, false
		}
		switch t.(type) {
		case ice.Int64Type:
			lit = ice.Int64Literal(n)
		default:
			lit = ice.TimestampLiteral(n)
		}
	case ice.Float32Type, ice.Float64Type:
		if v.Kind != "float" || math.IsNaN(v.Float) || math.IsInf(v.Float, 0) {
			return nil, false
		}
		f := v.Float
		// Iceberg orders -0 before +0; the writer's minimum and maximum do
		// not tell them apart, so a zero bound is widened to cover both.
		if f == 0 && upper {
			f = 0
		} else if f == 0 {
			f = math.Copysign(0, -1)
		}
		if _, single := t.(ice.Float32Type); single {
			lit = ice.Float32Literal(float32(f))
		} else {
			lit = ice.Float64Literal(f)
		}
	case ice.StringType:
		if v.Kind != "string" {
			return nil, false
		}
		s, ok := truncateBound(v.Str, upper)
		if !ok {
			return nil, false
		}
		lit = ice.StringLiteral(s)
	default:
		return nil, false
	}
	b, err := lit.MarshalBinary()
	return b, err == nil
}

// truncateBound truncates a string bound to truncateLen code points as
// Iceberg's truncate(16) does: a lower bound is its prefix; an upper bound
// is its prefix with the last code point that can be incremented
// incremented (the code points after it dropped), and has none (ok false)
// when no code point can be.
func truncateBound(s string, upper bool) (string, bool) {
	cut, n := len(s), 0
	for i := range s {
		if n == truncateLen {
			cut = i
			break
		}
		n++
	}
	if cut == len(s) {
		return s, true
	}
	p := s[:cut]
	if !upper {
		return p, true
	}
	for len(p) > 0 {
		r, size := utf8.DecodeLastRuneInString(p)
		p = p[:len(p)-size]
		switch {
		case r == 0xD7FF: // the next code point is past the surrogates
			return p + string(rune(0xE000)), true
		case r < utf8.MaxRune && (r != utf8.RuneError || size > 1):
			return p + string(r+1), true
		}
	}
	return "", false
}

// deleteStats are a position-delete file's statistics: file_path bounded
// by the one data file it names (in full, as Java Iceberg writes it, so a
// reader matches the file to its data file), pos by the first deleted row
// offset and the last (end is the last plus one; 0 leaves pos unbounded,
// for a file whose offsets the sync state does not hold).
func deleteStats(dataURI string, rows, lo, end int64) fileStats {
	st := newFileStats()
	st.values[fieldIDFilePath], st.values[fieldIDPos] = rows, rows
	st.nulls[fieldIDFilePath], st.nulls[fieldIDPos] = 0, 0
	p, _ := ice.StringLiteral(dataURI).MarshalBinary()
	st.lower[fieldIDFilePath], st.upper[fieldIDFilePath] = p, p
	if end > lo {
		l, _ := ice.Int64Literal(lo).MarshalBinary()
		h, _ := ice.Int64Literal(end - 1).MarshalBinary()
		st.lower[fieldIDPos], st.upper[fieldIDPos] = l, h
	}
	return st
}

// posBounds reads a position-delete entry's pos bounds back (as lo and
// hi+1; 0, 0 when it has none).
func posBounds(df ice.DataFile) (lo, end int64) {
	l, h := df.LowerBoundValues()[fieldIDPos], df.UpperBoundValues()[fieldIDPos]
	if len(l) != 8 || len(h) != 8 {
		return 0, 0
	}
	lo, hi := int64(binary.LittleEndian.Uint64(l)), int64(binary.LittleEndian.Uint64(h))
	if lo < 0 || hi < lo {
		return 0, 0
	}
	return lo, hi + 1
}
