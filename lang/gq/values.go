package gq

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/omnigraph-go/omnigraph/lang/pg"
)

// Go representation of values in plans and bound parameters (also in
// doc.go): String and enum → string; Bool → bool; I32 → int32; I64 →
// int64; U32 → uint32; U64 → uint64; F32 → float32; F64 → float64; Date →
// int32 days since 1970-01-01; DateTime → int64 microseconds since the Unix
// epoch, UTC; Vector → []float32; Blob → []byte; list → []any of the element
// representation; NULL → nil. These are pg's canonical values (pg.Property.Coerce).

// bareProperty is a property of type t with no constraints, used to coerce
// values with pg's rules without @range or @check.
func bareProperty(t pg.Type, nullable bool) *pg.Property {
	return &pg.Property{Name: "value", Type: t, Nullable: nullable}
}

const dateLayout = "2006-01-02"

func parseDate(s string) (int32, error) {
	t, err := time.Parse(dateLayout, s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a date; write YYYY-MM-DD, as in \"2024-01-31\"", s)
	}
	return int32(t.Unix() / 86400), nil
}

func parseDateTime(s string) (int64, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a date-time; write RFC 3339, as in \"2024-01-31T12:00:00Z\"", s)
	}
	return pg.DateTimeMicros(t), nil
}

// parseIntText converts decimal text (optionally signed) to kind k.
func parseIntText(s string, k pg.Kind) (any, error) {
	switch k {
	case pg.KindI32:
		v, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("%s does not fit I32 (%d..%d)", s, math.MinInt32, math.MaxInt32)
		}
		return int32(v), nil
	case pg.KindI64:
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s does not fit I64", s)
		}
		return v, nil
	case pg.KindU32:
		v, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("%s does not fit U32 (0..%d)", s, uint32(math.MaxUint32))
		}
		return uint32(v), nil
	case pg.KindU64:
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s does not fit U64 (0..%d)", s, uint64(math.MaxUint64))
		}
		return v, nil
	}
	return nil, fmt.Errorf("not an integer type")
}

func parseFloatText(s string, k pg.Kind) (any, error) {
	bits := 64
	if k == pg.KindF32 {
		bits = 32
	}
	v, err := strconv.ParseFloat(s, bits)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return nil, fmt.Errorf("%s does not fit %s", s, k)
	}
	if k == pg.KindF32 {
		return float32(v), nil
	}
	return v, nil
}

// isConstExpr reports literal expressions (not parameters, not now()).
func isLiteralExpr(e *Expr) bool {
	switch e.Kind {
	case ExprString, ExprInt, ExprFloat, ExprBool, ExprNull, ExprDate, ExprDateTime, ExprList:
		return true
	}
	return false
}

func exprKindName(e *Expr) string {
	switch e.Kind {
	case ExprString:
		return "a string"
	case ExprInt:
		return "an integer"
	case ExprFloat:
		return "a number"
	case ExprBool:
		return "a boolean"
	case ExprNull:
		return "null"
	case ExprDate:
		return "a date"
	case ExprDateTime:
		return "a date-time"
	case ExprList:
		return "a list"
	case ExprNow:
		return "now()"
	}
	return "a value"
}

// example returns a literal of type t, for messages.
func example(t pg.Type) string {
	switch t.Kind {
	case pg.KindString, pg.KindBlob:
		return `"text"`
	case pg.KindEnum:
		if len(t.Values) > 0 {
			return strconv.Quote(t.Values[0])
		}
	case pg.KindBool:
		return "true"
	case pg.KindI32, pg.KindI64, pg.KindU32, pg.KindU64:
		return "42"
	case pg.KindF32, pg.KindF64:
		return "1.5"
	case pg.KindDate:
		return `date("2024-01-31")`
	case pg.KindDateTime:
		return `datetime("2024-01-31T12:00:00Z")`
	case pg.KindVector:
		return "[0.1, 0.2, ...]"
	case pg.KindList:
		if t.Elem != nil {
			return "[" + example(*t.Elem) + "]"
		}
	}
	return "a value"
}

// coerceLiteral converts a literal expression to type t. It returns an
// *Error with CodeTypeMismatch for a literal of the wrong kind, CodeBadValue
// for a right-kind literal with a bad value, CodeNull for null where a value
// is required.
func coerceLiteral(e *Expr, t pg.Type, nullable bool, what string) (any, *Error) {
	mismatch := func() *Error {
		return errorf(CodeTypeMismatch, e.Pos, "%s is %s but got %s; write a %s value, as in %s", what, t, exprKindName(e), t, example(t))
	}
	bad := func(err error) *Error {
		return errorf(CodeBadValue, e.Pos, "%s: %v", what, err)
	}
	if e.Kind == ExprNull {
		if nullable {
			return nil, nil
		}
		return nil, errorf(CodeNull, e.Pos, "%s is %s and cannot be null; give a value, as in %s", what, t, example(t))
	}
	switch t.Kind {
	case pg.KindString:
		if e.Kind == ExprString {
			return e.Text, nil
		}
	case pg.KindBlob:
		if e.Kind == ExprString {
			v, err := bareProperty(t, false).Coerce(e.Text)
			if err != nil {
				return nil, errorf(CodeBadValue, e.Pos, "%s: %v; write \"base64:<payload>\"", what, err)
			}
			return v, nil
		}
	case pg.KindEnum:
		if e.Kind == ExprString {
			if !slices.Contains(t.Values, e.Text) {
				return nil, errorf(CodeBadValue, e.Pos, "%s: %q is not one of %s", what, e.Text, strings.Join(t.Values, ", "))
			}
			return e.Text, nil
		}
	case pg.KindBool:
		if e.Kind == ExprBool {
			return e.Bool, nil
		}
	case pg.KindI32, pg.KindI64, pg.KindU32, pg.KindU64:
		if e.Kind == ExprInt {
			v, err := parseIntText(e.Text, t.Kind)
			if err != nil {
				return nil, bad(err)
			}
			return v, nil
		}
	case pg.KindF32, pg.KindF64:
		if e.Kind == ExprInt || e.Kind == ExprFloat {
			v, err := parseFloatText(e.Text, t.Kind)
			if err != nil {
				return nil, bad(err)
			}
			return v, nil
		}
	case pg.KindDate:
		if e.Kind == ExprDate || e.Kind == ExprString {
			v, err := parseDate(e.Text)
			if err != nil {
				return nil, bad(err)
			}
			return v, nil
		}
	case pg.KindDateTime:
		if e.Kind == ExprDateTime || e.Kind == ExprString {
			v, err := parseDateTime(e.Text)
			if err != nil {
				return nil, bad(err)
			}
			return v, nil
		}
	case pg.KindVector:
		if e.Kind == ExprList {
			if len(e.Elems) != t.Dim {
				return nil, errorf(CodeBadValue, e.Pos, "%s is %s but the list has %d numbers; give exactly %d", what, t, len(e.Elems), t.Dim)
			}
			out := make([]float32, len(e.Elems))
			for i, el := range e.Elems {
				v, err := coerceLiteral(el, pg.Type{Kind: pg.KindF32}, false, what+" element")
				if err != nil {
					return nil, err
				}
				out[i] = v.(float32)
			}
			return out, nil
		}
	case pg.KindList:
		if e.Kind == ExprList && t.Elem != nil {
			out := make([]any, len(e.Elems))
			for i, el := range e.Elems {
				v, err := coerceLiteral(el, *t.Elem, false, what+" element")
				if err != nil {
					return nil, err
				}
				out[i] = v
			}
			return out, nil
		}
	}
	return nil, mismatch()
}

// literalType infers the type of a literal that has no context (a return
// item): integers are I64, numbers F64, lists take the type of their first
// element.
func literalType(e *Expr) (pg.Type, bool) {
	switch e.Kind {
	case ExprString:
		return pg.Type{Kind: pg.KindString}, true
	case ExprInt:
		return pg.Type{Kind: pg.KindI64}, true
	case ExprFloat:
		return pg.Type{Kind: pg.KindF64}, true
	case ExprBool:
		return pg.Type{Kind: pg.KindBool}, true
	case ExprDate:
		return pg.Type{Kind: pg.KindDate}, true
	case ExprDateTime:
		return pg.Type{Kind: pg.KindDateTime}, true
	case ExprList:
		if len(e.Elems) == 0 {
			return pg.Type{}, false
		}
		el, ok := literalType(e.Elems[0])
		if !ok || el.Kind == pg.KindList {
			return pg.Type{}, false
		}
		return pg.Type{Kind: pg.KindList, Elem: &el}, true
	}
	return pg.Type{}, false
}
