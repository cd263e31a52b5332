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
	kept := cands[:0]
	k := 0
	starts := nr.rows.starts
	var col arrow.Array
	for _, row := range cands {
		r := int(row)
		for k+1 < len(starts) && starts[k+1] <= r {
			k++
			col = nil
		}
		if col == nil {
			col = nr.rows.recs[k].Column(ci)
		}
		off := r - starts[k]
		if col.IsNull(off) {
			continue
		}
		var keep bool
		switch a := col.(type) {
		case *array.Int32:
			keep = p.Op.Holds(cmpNum(int64(a.Value(off)), ic))
		case *array.Int64:
			keep = p.Op.Holds(cmpNum(a.Value(off), ic))
		case *array.Date32:
			keep = p.Op.Holds(cmpNum(int64(a.Value(off)), ic))
		case *array.Timestamp:
			keep = p.Op.Holds(cmpNum(int64(a.Value(off)), ic))
		case *array.String:
			v := a.Value(off)
			switch p.Op {
			case gq.OpContains:
				keep = strings.Contains(v, sc)
			case gq.OpStartsWith:
				keep = strings.HasPrefix(v, sc)
			default:
				keep = p.Op.Holds(strings.Compare(v, sc))
			}
		}
		if keep {
			kept = append(kept, row)
		}
	}
	return kept, true
}
