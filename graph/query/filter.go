package query

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/omnigraph-go/omnigraph/graph/gq"
)

// filterRows is the scan fast path: it keeps the candidate rows of nr
// (ascending) for which `property op constant` holds, comparing Arrow
// values in place instead of materialising each one. It handles integer,
// date and date-time columns against integer constants, and string columns
// against string constants; ok is false for any other shape, which the
// caller then evaluates row by row (same semantics: NULL never matches).
func (ex *executor) filterRows(nr *nodeRows, p *gq.Predicate, cands []int32) ([]int32, bool) {
	if p.Left.Kind != gq.OperandProp {
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
	// One typed test per chunk, so the row loop neither switches on the
	// column type nor boxes a value.
	chunkTest := func(col arrow.Array) func(off int) bool {
		op := p.Op
		switch a := col.(type) {
		case *array.Int32:
			vals := a.Int32Values()
			return func(off int) bool { return op.Holds(cmpInt(int64(vals[off]), ic)) }
		case *array.Int64:
			vals := a.Int64Values()
			return func(off int) bool { return op.Holds(cmpInt(vals[off], ic)) }
		case *array.Date32:
			vals := a.Date32Values()
			return func(off int) bool { return op.Holds(cmpInt(int64(vals[off]), ic)) }
		case *array.Timestamp:
			vals := a.TimestampValues()
			return func(off int) bool { return op.Holds(cmpInt(int64(vals[off]), ic)) }
		case *array.String:
			switch op {
			case gq.OpContains:
				return func(off int) bool { return strings.Contains(a.Value(off), sc) }
			case gq.OpStartsWith:
				return func(off int) bool { return strings.HasPrefix(a.Value(off), sc) }
			}
			return func(off int) bool { return op.Holds(strings.Compare(a.Value(off), sc)) }
		}
		return func(int) bool { return false }
	}
	kept := cands[:0]
	starts := nr.rows.starts
	for k, i := 0, 0; i < len(cands); k++ {
		end := nr.rows.total
		if k+1 < len(starts) {
			end = starts[k+1]
		}
		col := nr.rows.recs[k].Column(ci)
		test := chunkTest(col)
		nulls := col.NullN() > 0
		for ; i < len(cands) && int(cands[i]) < end; i++ {
			off := int(cands[i]) - starts[k]
			if nulls && col.IsNull(off) {
				continue
			}
			if test(off) {
				kept = append(kept, cands[i])
			}
		}
	}
	return kept, true
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
