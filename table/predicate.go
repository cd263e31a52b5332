package table

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

type predOp int

const (
	opAll predOp = iota
	opEq
	opNe
	opLt
	opLe
	opGt
	opGe
	opIn
	opIsNull
	opAnd
	opOr
)

var opNames = map[predOp]string{opEq: "=", opNe: "!=", opLt: "<", opLe: "<=", opGt: ">", opGe: ">="}

// Predicate is a row filter: comparisons of a column with a scalar, In on a
// string column, IsNull, And and Or. The zero Predicate matches every row.
// Comparisons with a null value are false (SQL semantics).
type Predicate struct {
	op     predOp
	column string
	value  Scalar
	values []string
	kids   []Predicate
	err    error
}

func cmpPred(op predOp, column string, value any) Predicate {
	s, err := ScalarOf(value)
	return Predicate{op: op, column: column, value: s, err: err}
}

// Eq matches rows where column = value.
func Eq(column string, value any) Predicate { return cmpPred(opEq, column, value) }

// Ne matches rows where column != value (nulls do not match).
func Ne(column string, value any) Predicate { return cmpPred(opNe, column, value) }

// Lt matches rows where column < value.
func Lt(column string, value any) Predicate { return cmpPred(opLt, column, value) }

// Le matches rows where column <= value.
func Le(column string, value any) Predicate { return cmpPred(opLe, column, value) }

// Gt matches rows where column > value.
func Gt(column string, value any) Predicate { return cmpPred(opGt, column, value) }

// Ge matches rows where column >= value.
func Ge(column string, value any) Predicate { return cmpPred(opGe, column, value) }

// In matches rows whose string column equals one of values. In with no
// values matches nothing.
func In(column string, values ...string) Predicate {
	v := append([]string(nil), values...)
	sort.Strings(v)
	return Predicate{op: opIn, column: column, values: v}
}

// IsNull matches rows where column is null.
func IsNull(column string) Predicate { return Predicate{op: opIsNull, column: column} }

// And matches rows every p matches (And() matches everything).
func And(ps ...Predicate) Predicate {
	return Predicate{op: opAnd, kids: append([]Predicate(nil), ps...)}
}

// Or matches rows some p matches (Or() matches nothing).
func Or(ps ...Predicate) Predicate {
	return Predicate{op: opOr, kids: append([]Predicate(nil), ps...)}
}

// IsZero reports whether p is the match-everything zero Predicate.
func (p Predicate) IsZero() bool { return p.op == opAll }

func (p Predicate) String() string {
	switch p.op {
	case opAll:
		return "true"
	case opIn:
		return fmt.Sprintf("%s IN %q", p.column, p.values)
	case opIsNull:
		return p.column + " IS NULL"
	case opAnd, opOr:
		sep := " AND "
		if p.op == opOr {
			sep = " OR "
		}
		parts := make([]string, len(p.kids))
		for i, k := range p.kids {
			parts[i] = k.String()
		}
		return "(" + strings.Join(parts, sep) + ")"
	}
	return fmt.Sprintf("%s %s %s", p.column, opNames[p.op], p.value)
}

// columns lists the columns p reads.
func (p Predicate) columns(out map[string]bool) {
	if p.column != "" {
		out[p.column] = true
	}
	for _, k := range p.kids {
		k.columns(out)
	}
}

// validate checks p against a schema: known columns, usable values.
func (p Predicate) validate(s *arrow.Schema) error {
	if p.err != nil {
		return fmt.Errorf("%w: predicate %s: %v", ErrInvalid, p, p.err)
	}
	if p.column != "" {
		idx := s.FieldIndices(p.column)
		if len(idx) == 0 {
			return errorf(ErrInvalid, "predicate %s: no column %q in the schema", p, p.column)
		}
		t := s.Field(idx[0]).Type
		if p.op == opIn && !isStringType(t) {
			return errorf(ErrInvalid, "predicate %s: In needs a string column, %q is %s", p, p.column, t)
		}
		if p.op != opIn && p.op != opIsNull && scalarKindOf(t) == "" {
			return errorf(ErrInvalid, "predicate %s: column %q of type %s cannot be compared", p, p.column, t)
		}
	}
	for _, k := range p.kids {
		if err := k.validate(s); err != nil {
			return err
		}
	}
	return nil
}

// ScalarOf converts a Go value (integers, floats, string, bool) to a Scalar.
func ScalarOf(v any) (Scalar, error) {
	switch x := v.(type) {
	case int:
		return Scalar{Kind: "int", Int: int64(x)}, nil
	case int8:
		return Scalar{Kind: "int", Int: int64(x)}, nil
	case int16:
		return Scalar{Kind: "int", Int: int64(x)}, nil
	case int32:
		return Scalar{Kind: "int", Int: int64(x)}, nil
	case int64:
		return Scalar{Kind: "int", Int: x}, nil
	case uint:
		return Scalar{Kind: "uint", Uint: uint64(x)}, nil
	case uint8:
		return Scalar{Kind: "uint", Uint: uint64(x)}, nil
	case uint16:
		return Scalar{Kind: "uint", Uint: uint64(x)}, nil
	case uint32:
		return Scalar{Kind: "uint", Uint: uint64(x)}, nil
	case uint64:
		return Scalar{Kind: "uint", Uint: x}, nil
	case float32:
		return Scalar{Kind: "float", Float: float64(x)}, nil
	case float64:
		return Scalar{Kind: "float", Float: x}, nil
	case string:
		return Scalar{Kind: "string", Str: x}, nil
	case bool:
		return Scalar{Kind: "bool", Bool: x}, nil
	case Scalar:
		return x, nil
	}
	return Scalar{}, fmt.Errorf("unsupported value type %T (use an integer, float, string or bool)", v)
}

func (s Scalar) String() string {
	switch s.Kind {
	case "int":
		return fmt.Sprint(s.Int)
	case "uint":
		return fmt.Sprint(s.Uint)
	case "float":
		return fmt.Sprint(s.Float)
	case "string":
		return fmt.Sprintf("%q", s.Str)
	case "bool":
		return fmt.Sprint(s.Bool)
	}
	return "?"
}

func (s Scalar) float() float64 {
	switch s.Kind {
	case "int":
		return float64(s.Int)
	case "uint":
		return float64(s.Uint)
	}
	return s.Float
}

func isNumeric(k string) bool { return k == "int" || k == "uint" || k == "float" }

// compareScalars orders a and b; ok is false when they are not comparable.
func compareScalars(a, b Scalar) (int, bool) {
	switch {
	case a.Kind == "string" && b.Kind == "string":
		return strings.Compare(a.Str, b.Str), true
	case a.Kind == "bool" && b.Kind == "bool":
		ai, bi := 0, 0
		if a.Bool {
			ai = 1
		}
		if b.Bool {
			bi = 1
		}
		return ai - bi, true
	case a.Kind == "int" && b.Kind == "int":
		return cmp3(a.Int < b.Int, a.Int > b.Int), true
	case a.Kind == "uint" && b.Kind == "uint":
		return cmp3(a.Uint < b.Uint, a.Uint > b.Uint), true
	case a.Kind == "int" && b.Kind == "uint":
		if a.Int < 0 {
			return -1, true
		}
		u := uint64(a.Int)
		return cmp3(u < b.Uint, u > b.Uint), true
	case a.Kind == "uint" && b.Kind == "int":
		c, ok := compareScalars(b, a)
		return -c, ok
	case isNumeric(a.Kind) && isNumeric(b.Kind):
		af, bf := a.float(), b.float()
		if math.IsNaN(af) || math.IsNaN(bf) {
			return 0, false
		}
		return cmp3(af < bf, af > bf), true
	}
	return 0, false
}

func cmp3(lt, gt bool) int {
	switch {
	case lt:
		return -1
	case gt:
		return 1
	}
	return 0
}

func holds(op predOp, c int) bool {
	switch op {
	case opEq:
		return c == 0
	case opNe:
		return c != 0
	case opLt:
		return c < 0
	case opLe:
		return c <= 0
	case opGt:
		return c > 0
	case opGe:
		return c >= 0
	}
	return false
}

// mayMatch reports whether a fragment with these statistics can hold a
// matching row. It is conservative: unknown means true.
func (p Predicate) mayMatch(stats map[string]ColumnStats, rows int64) bool {
	switch p.op {
	case opAll:
		return true
	case opAnd:
		for _, k := range p.kids {
			if !k.mayMatch(stats, rows) {
				return false
			}
		}
		return true
	case opOr:
		for _, k := range p.kids {
			if k.mayMatch(stats, rows) {
				return true
			}
		}
		return false
	}
	st, ok := stats[p.column]
	if !ok {
		return true
	}
	if p.op == opIsNull {
		return st.NullCount > 0
	}
	if st.NullCount >= rows && rows > 0 {
		return false // every value is null: no comparison holds
	}
	if st.Min == nil || st.Max == nil {
		return true
	}
	if p.op == opIn {
		if len(p.values) == 0 {
			return false
		}
		if st.Min.Kind != "string" {
			return true
		}
		// values are sorted: find the first >= min and test it against max.
		i := sort.SearchStrings(p.values, st.Min.Str)
		return i < len(p.values) && p.values[i] <= st.Max.Str
	}
	cmin, ok1 := compareScalars(*st.Min, p.value)
	cmax, ok2 := compareScalars(*st.Max, p.value)
	if !ok1 || !ok2 {
		return true
	}
	switch p.op {
	case opEq:
		return cmin <= 0 && cmax >= 0
	case opNe:
		return !(cmin == 0 && cmax == 0)
	case opLt:
		return cmin < 0
	case opLe:
		return cmin <= 0
	case opGt:
		return cmax > 0
	case opGe:
		return cmax >= 0
	}
	return true
}

// compile binds p to a record and returns a per-row test.
func (p Predicate) compile(rec arrow.Record) (func(int) bool, error) {
	switch p.op {
	case opAll:
		return func(int) bool { return true }, nil
	case opAnd, opOr:
		fs := make([]func(int) bool, len(p.kids))
		for i, k := range p.kids {
			f, err := k.compile(rec)
			if err != nil {
				return nil, err
			}
			fs[i] = f
		}
		if p.op == opAnd {
			return func(r int) bool {
				for _, f := range fs {
					if !f(r) {
						return false
					}
				}
				return true
			}, nil
		}
		return func(r int) bool {
			for _, f := range fs {
				if f(r) {
					return true
				}
			}
			return false
		}, nil
	}
	idx := rec.Schema().FieldIndices(p.column)
	if len(idx) == 0 {
		return nil, errorf(ErrInvalid, "predicate %s: no column %q", p, p.column)
	}
	col := rec.Column(idx[0])
	if p.op == opIsNull {
		return col.IsNull, nil
	}
	if sa, ok := col.(stringArray); ok {
		switch p.op {
		case opIn:
			set := make(map[string]struct{}, len(p.values))
			for _, v := range p.values {
				set[v] = struct{}{}
			}
			return func(r int) bool {
				if sa.IsNull(r) {
					return false
				}
				_, ok := set[sa.Value(r)]
				return ok
			}, nil
		default:
			if p.value.Kind != "string" {
				return func(int) bool { return false }, nil
			}
			want, op := p.value.Str, p.op
			return func(r int) bool {
				return !sa.IsNull(r) && holds(op, strings.Compare(sa.Value(r), want))
			}, nil
		}
	}
	if p.op == opIn {
		return nil, errorf(ErrInvalid, "predicate %s: In needs a string column", p)
	}
	want, op := p.value, p.op
	return func(r int) bool {
		s, ok := scalarAt(col, r)
		if !ok {
			return false
		}
		c, ok := compareScalars(s, want)
		return ok && holds(op, c)
	}, nil
}

// stringArray is satisfied by both String and LargeString arrays.
type stringArray interface {
	arrow.Array
	Value(int) string
}

var (
	_ stringArray = (*array.String)(nil)
	_ stringArray = (*array.LargeString)(nil)
)

func isStringType(t arrow.DataType) bool {
	return t.ID() == arrow.STRING || t.ID() == arrow.LARGE_STRING
}

// scalarKindOf is the Scalar kind a column type's values and statistics use,
// or "" when the type is not comparable.
func scalarKindOf(t arrow.DataType) string {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.DATE32, arrow.DATE64, arrow.TIMESTAMP, arrow.TIME32, arrow.TIME64, arrow.DURATION:
		return "int"
	case arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		return "uint"
	case arrow.FLOAT32, arrow.FLOAT64:
		return "float"
	case arrow.STRING, arrow.LARGE_STRING:
		return "string"
	case arrow.BOOL:
		return "bool"
	}
	return ""
}

// scalarAt reads row r of a comparable column; ok is false for null or an
// unsupported type.
func scalarAt(a arrow.Array, r int) (Scalar, bool) {
	if a.IsNull(r) {
		return Scalar{}, false
	}
	switch x := a.(type) {
	case *array.Int8:
		return Scalar{Kind: "int", Int: int64(x.Value(r))}, true
	case *array.Int16:
		return Scalar{Kind: "int", Int: int64(x.Value(r))}, true
	case *array.Int32:
		return Scalar{Kind: "int", Int: int64(x.Value(r))}, true
	case *array.Int64:
		return Scalar{Kind: "int", Int: x.Value(r)}, true
	case *array.Date32:
		return Scalar{Kind: "int", Int: int64(x.Value(r))}, true
	case *array.Date64:
		return Scalar{Kind: "int", Int: int64(x.Value(r))}, true
	case *array.Timestamp:
		return Scalar{Kind: "int", Int: int64(x.Value(r))}, true
	case *array.Time32:
		return Scalar{Kind: "int", Int: int64(x.Value(r))}, true
	case *array.Time64:
		return Scalar{Kind: "int", Int: int64(x.Value(r))}, true
	case *array.Duration:
		return Scalar{Kind: "int", Int: int64(x.Value(r))}, true
	case *array.Uint8:
		return Scalar{Kind: "uint", Uint: uint64(x.Value(r))}, true
	case *array.Uint16:
		return Scalar{Kind: "uint", Uint: uint64(x.Value(r))}, true
	case *array.Uint32:
		return Scalar{Kind: "uint", Uint: uint64(x.Value(r))}, true
	case *array.Uint64:
		return Scalar{Kind: "uint", Uint: x.Value(r)}, true
	case *array.Float32:
		return Scalar{Kind: "float", Float: float64(x.Value(r))}, true
	case *array.Float64:
		return Scalar{Kind: "float", Float: x.Value(r)}, true
	case *array.String:
		return Scalar{Kind: "string", Str: x.Value(r)}, true
	case *array.LargeString:
		return Scalar{Kind: "string", Str: x.Value(r)}, true
	case *array.Boolean:
		return Scalar{Kind: "bool", Bool: x.Value(r)}, true
	}
	return Scalar{}, false
}
