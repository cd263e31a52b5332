package query

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/omnigraph-go/omnigraph/lang/gq"
	"github.com/omnigraph-go/omnigraph/lang/pg"
)

// Values during execution are pg's canonical values (see lang/gq/doc.go):
// string, bool, int32, int64, uint32, uint64, float32, float64, []float32,
// []byte, []any, and nil for NULL.

// arrowValue reads row i of a column as a canonical value.
func arrowValue(col arrow.Array, i int) any {
	if col.IsNull(i) {
		return nil
	}
	switch a := col.(type) {
	case *array.String:
		return a.Value(i)
	case *array.LargeString:
		return a.Value(i)
	case *array.Boolean:
		return a.Value(i)
	case *array.Int32:
		return a.Value(i)
	case *array.Int64:
		return a.Value(i)
	case *array.Uint32:
		return a.Value(i)
	case *array.Uint64:
		return a.Value(i)
	case *array.Float32:
		return a.Value(i)
	case *array.Float64:
		return a.Value(i)
	case *array.Date32:
		return int32(a.Value(i))
	case *array.Timestamp:
		return int64(a.Value(i))
	case *array.Binary:
		return bytes.Clone(a.Value(i))
	case *array.FixedSizeList:
		start, end := a.ValueOffsets(i)
		vals, _ := a.ListValues().(*array.Float32)
		out := make([]float32, 0, end-start)
		for k := start; k < end && vals != nil; k++ {
			out = append(out, vals.Value(int(k)))
		}
		return out
	case *array.List:
		start, end := a.ValueOffsets(i)
		vals := a.ListValues()
		out := make([]any, 0, end-start)
		for k := start; k < end; k++ {
			out = append(out, arrowValue(vals, int(k)))
		}
		return out
	}
	return fmt.Sprint(col.ValueStr(i))
}

// numeric splits a canonical number into an exact integer form when it has
// one, or a float.
func numeric(v any) (i int64, u uint64, f float64, kind byte, ok bool) {
	switch x := v.(type) {
	case int32:
		return int64(x), 0, 0, 'i', true
	case int64:
		return x, 0, 0, 'i', true
	case uint32:
		return 0, uint64(x), 0, 'u', true
	case uint64:
		return 0, x, 0, 'u', true
	case float32:
		return 0, 0, float64(x), 'f', true
	case float64:
		return 0, 0, x, 'f', true
	}
	return 0, 0, 0, 0, false
}

// cmpNum is the three-way comparison of two numbers of one kind.
func cmpNum[T int64 | uint64 | float64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// compareNumbers orders two canonical numbers exactly across kinds.
func compareNumbers(a, b any) (int, bool) {
	ai, au, af, ak, ok1 := numeric(a)
	bi, bu, bf, bk, ok2 := numeric(b)
	if !ok1 || !ok2 {
		return 0, false
	}
	switch {
	case ak == 'i' && bk == 'i':
		return cmpNum(ai, bi), true
	case ak == 'u' && bk == 'u':
		return cmpNum(au, bu), true
	case ak == 'i' && bk == 'u':
		if ai < 0 {
			return -1, true
		}
		return cmpNum(uint64(ai), bu), true
	case ak == 'u' && bk == 'i':
		if bi < 0 {
			return 1, true
		}
		return cmpNum(au, uint64(bi)), true
	}
	toF := func(i int64, u uint64, f float64, k byte) float64 {
		switch k {
		case 'i':
			return float64(i)
		case 'u':
			return float64(u)
		}
		return f
	}
	return cmpNum(toF(ai, au, af, ak), toF(bi, bu, bf, bk)), true
}

// compareValues orders two non-NULL canonical values of one comparable
// class: numbers by value, strings by bytes, false < true. ok is false when
// the values do not compare (different classes, lists, vectors).
func compareValues(a, b any) (int, bool) {
	if c, ok := compareNumbers(a, b); ok {
		return c, true
	}
	switch x := a.(type) {
	case string:
		if y, ok := b.(string); ok {
			return strings.Compare(x, y), true
		}
	case bool:
		if y, ok := b.(bool); ok {
			switch {
			case x == y:
				return 0, true
			case !x:
				return -1, true
			}
			return 1, true
		}
	case []byte:
		if y, ok := b.([]byte); ok {
			return bytes.Compare(x, y), true
		}
	}
	return 0, false
}

// sortCompare is the total order of sort keys: NULL first, then
// compareValues; values that do not compare fall back to their text so the
// order stays total.
func sortCompare(a, b any) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	if c, ok := compareValues(a, b); ok {
		return c
	}
	return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
}

// valuesEqual is equality for predicates and grouping of non-NULL values.
func valuesEqual(a, b any) bool {
	if c, ok := compareValues(a, b); ok {
		return c == 0
	}
	switch x := a.(type) {
	case []float32:
		y, ok := b.([]float32)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if (x[i] == nil) != (y[i] == nil) || (x[i] != nil && !valuesEqual(x[i], y[i])) {
				return false
			}
		}
		return true
	}
	return false
}

// evalCmp applies a predicate operator to two resolved values: NULL on
// either side is false for every operator.
func evalCmp(op gq.CmpOp, l, r any) bool {
	if l == nil || r == nil {
		return false
	}
	switch op {
	case gq.OpContains:
		switch x := l.(type) {
		case []any:
			for _, e := range x {
				if e != nil && valuesEqual(e, r) {
					return true
				}
			}
			return false
		case string:
			s, ok := r.(string)
			return ok && strings.Contains(x, s)
		}
		return false
	case gq.OpStartsWith:
		x, ok1 := l.(string)
		s, ok2 := r.(string)
		return ok1 && ok2 && strings.HasPrefix(x, s)
	case gq.OpEq:
		return valuesEqual(l, r)
	case gq.OpNe:
		return !valuesEqual(l, r)
	}
	c, ok := compareValues(l, r)
	if !ok {
		return false
	}
	switch op {
	case gq.OpLt:
		return c < 0
	case gq.OpLe:
		return c <= 0
	case gq.OpGt:
		return c > 0
	case gq.OpGe:
		return c >= 0
	}
	return false
}

// groupKey appends an unambiguous encoding of a canonical value.
func groupKey(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "n;"...)
	case string:
		b = append(b, 's')
		b = strconv.AppendInt(b, int64(len(x)), 10)
		b = append(b, ':')
		b = append(b, x...)
		return append(b, ';')
	case int64:
		b = strconv.AppendInt(append(b, "int64"...), x, 10)
		return append(b, ';')
	case int32:
		b = strconv.AppendInt(append(b, "int32"...), int64(x), 10)
		return append(b, ';')
	case float32:
		return fmt.Appendf(b, "f%v;", normFloat(float64(x)))
	case float64:
		return fmt.Appendf(b, "f%v;", normFloat(x))
	case []any:
		b = append(b, '[')
		for _, e := range x {
			b = groupKey(b, e)
		}
		return append(b, "];"...)
	}
	return fmt.Appendf(b, "%T%v;", v, v)
}

func normFloat(f float64) float64 {
	if f == 0 {
		return 0 // -0 groups with 0
	}
	return f
}

// jsonValueOf renders a canonical value of type t for JSON output.
func jsonValueOf(t pg.Type, v any) any {
	if v == nil {
		return nil
	}
	if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
		return fmt.Sprint(f)
	}
	return (&pg.Property{Type: t}).JSONValue(v)
}

// appendGroupKey appends groupKey(sortValue(c, column value)) for column c
// on row r, reading a string or integer property straight from its Arrow
// column (no boxed value per row); other shapes take the general path.
func (ex *executor) appendGroupKey(b []byte, c *gq.Column, r []ref) []byte {
	if c.Kind == gq.ColumnProp {
		if col, off, ok := ex.propColumn(c.Expr.Var, c.Expr.Prop.Name, r); ok {
			if col.IsNull(off) {
				return append(b, "n;"...)
			}
			switch a := col.(type) {
			case *array.String:
				v := a.Value(off)
				b = append(b, 's')
				b = strconv.AppendInt(b, int64(len(v)), 10)
				b = append(b, ':')
				b = append(b, v...)
				return append(b, ';')
			case *array.Int32:
				b = strconv.AppendInt(append(b, "int32"...), int64(a.Value(off)), 10)
				return append(b, ';')
			case *array.Int64:
				b = strconv.AppendInt(append(b, "int64"...), a.Value(off), 10)
				return append(b, ';')
			}
		}
	}
	return groupKey(b, sortValue(c, ex.column(c, r)))
}

// propColumn locates property name of the node bound at slot in its
// loaded rows: the Arrow column and offset (ok false: take ex.prop).
func (ex *executor) propColumn(slot int, name string, r []ref) (arrow.Array, int, bool) {
	b := r[slot]
	if !b.set || b.nr == nil || ex.rp.Vars[slot].Kind == gq.VarEdge {
		return nil, 0, false
	}
	ci, ok := b.nr.rows.cols[name]
	if !ok {
		return nil, 0, false
	}
	rec, off := b.nr.rows.locate(int(b.row))
	return rec.Column(ci), off, true
}
