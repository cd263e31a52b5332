package query

import (
	"math"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/omnigraph-go/omnigraph/lang/gq"
)

// filterRows is the scan fast path: it keeps the candidate rows of nr
// (ascending) for which `property op constant` holds, comparing Arrow
// values in place instead of materialising each one. It handles integer,
// date and date-time columns against integer constants, and string columns
// against string constants; ok is false for any other shape, which the
// caller then evaluates row by row (same semantics: NULL never matches).
func (ex *executor) filterRows(nr *nodeRows, p *gq.Predicate, cands []int32) ([]int32, bool) {
	if p.Left.Kind != gq.OperandProp || p.Op.TextOp() {
		return nil, false
	}
	switch p.Right.Kind {
	case gq.OperandLiteral, gq.OperandParam, gq.OperandNow:
	default:
		return nil, false
	}
	ci, ok := nr.rows.cols[p.Left.Prop.Name]
	if !ok {
		return nil, false
	}
	c := ex.args.Value(p.Right)
	if c == nil {
		return cands[:0], true
	}
	var ic int64
	var sc string
	isInt, isStr := false, false
	switch x := c.(type) {
	case int32:
		ic, isInt = int64(x), true
	case int64:
		ic, isInt = x, true
	case string:
		sc, isStr = x, true
	default:
		return nil, false
	}
	if len(nr.rows.recs) == 0 {
		return cands[:0], true
	}
	// Every chunk has the same column type; check the first.
	switch nr.rows.recs[0].Column(ci).(type) {
	case *array.Int32, *array.Int64, *array.Date32, *array.Timestamp:
		if !isInt || p.Op == gq.OpContains || p.Op == gq.OpStartsWith {
			return nil, false
		}
	case *array.String:
		if !isStr {
			return nil, false
		}
	default:
		return nil, false
	}
	// One typed loop per chunk: the row loop neither switches on the
	// column type nor on the operator, nor boxes a value.
	lo, hi, ne := intRange(p.Op, ic)
	first := nr.rows.recs[0].Column(ci).DataType()
	for _, r := range nr.rows.recs {
		if !arrow.TypeEqual(r.Column(ci).DataType(), first) {
			return nil, false // never: the chunks share the table's schema
		}
	}
	kept := cands[:0]
	starts := nr.rows.starts
	for k, i := 0, 0; i < len(cands); k++ {
		end := nr.rows.total
		if k+1 < len(starts) {
			end = starts[k+1]
		}
		col := nr.rows.recs[k].Column(ci)
		nulls := col.NullN() > 0
		base := starts[k]
		switch a := col.(type) {
		case *array.Int32:
			kept, i = keepInts(a.Int32Values(), col, nulls, cands, i, end, base, lo, hi, ne, ic, kept)
		case *array.Int64:
			kept, i = keepInts(a.Int64Values(), col, nulls, cands, i, end, base, lo, hi, ne, ic, kept)
		case *array.Date32:
			kept, i = keepInts(a.Date32Values(), col, nulls, cands, i, end, base, lo, hi, ne, ic, kept)
		case *array.Timestamp:
			kept, i = keepInts(a.TimestampValues(), col, nulls, cands, i, end, base, lo, hi, ne, ic, kept)
		case *array.String:
			kept, i = keepStrings(a, nulls, cands, i, end, base, p.Op, sc, kept)
		}
	}
	return kept, true
}

// intRange is the set of integers `v op c` admits: [lo, hi], or with ne
// every integer but c (lo > hi: none).
func intRange(op gq.CmpOp, c int64) (lo, hi int64, ne bool) {
	switch op {
	case gq.OpEq:
		return c, c, false
	case gq.OpNe:
		return 0, 0, true
	case gq.OpLt:
		if c == math.MinInt64 {
			return 1, 0, false
		}
		return math.MinInt64, c - 1, false
	case gq.OpLe:
		return math.MinInt64, c, false
	case gq.OpGt:
		if c == math.MaxInt64 {
			return 1, 0, false
		}
		return c + 1, math.MaxInt64, false
	case gq.OpGe:
		return c, math.MaxInt64, false
	}
	return 1, 0, false
}

// keepInts appends to kept the candidates from cands[i:] below end (global
// rows; the chunk starts at base) whose value lies in the range. kept
// shares cands' array and never outruns i, so each candidate is written in
// place and kept by advancing n: no branch on the outcome to mispredict.
func keepInts[T ~int32 | ~int64](vals []T, col arrow.Array, nulls bool, cands []int32, i, end, base int, lo, hi int64, ne bool, c int64, kept []int32) ([]int32, int) {
	n := len(kept)
	buf := kept[:cap(kept)]
	if !ne && lo > hi { // no integer passes
		for i < len(cands) && int(cands[i]) < end {
			i++
		}
		return kept, i
	}
	width := uint64(hi - lo)
	for ; i < len(cands) && int(cands[i]) < end; i++ {
		r := cands[i]
		off := int(r) - base
		if nulls && col.IsNull(off) {
			continue
		}
		v := int64(vals[off])
		pass := uint64(v-lo) <= width
		if ne {
			pass = v != c
		}
		buf[n] = r
		if pass {
			n++
		}
	}
	return buf[:n], i
}

// keepStrings is keepInts for a string column and a string operator.
func keepStrings(a *array.String, nulls bool, cands []int32, i, end, base int, op gq.CmpOp, sc string, kept []int32) ([]int32, int) {
	const (
		contains = iota
		prefix
		compare
	)
	mode := compare
	switch op {
	case gq.OpContains:
		mode = contains
	case gq.OpStartsWith:
		mode = prefix
	}
	n := len(kept)
	buf := kept[:cap(kept)] // as keepInts: written in place, kept by advancing n
	for ; i < len(cands) && int(cands[i]) < end; i++ {
		r := cands[i]
		off := int(r) - base
		if nulls && a.IsNull(off) {
			continue
		}
		v := a.Value(off)
		var keep bool
		switch mode {
		case contains:
			keep = strings.Contains(v, sc)
		case prefix:
			keep = len(v) >= len(sc) && v[:len(sc)] == sc
		default:
			keep = op.Holds(strings.Compare(v, sc))
		}
		buf[n] = r
		if keep {
			n++
		}
	}
	return buf[:n], i
}

// cmpInt is cmpNum for int64, small enough to inline in the row loops.
func cmpInt(a, b int64) int {
	if a < b {
		return -1
	}
	if a > b {
		return 1
	}
	return 0
}
