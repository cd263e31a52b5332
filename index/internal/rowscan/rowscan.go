// Package rowscan reads the live rows of one fragment of a table version
// with their physical row numbers: what an index builder records, and what
// a reader scans for the fragments an index does not cover.
package rowscan

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/omnigraph-go/omnigraph/table"
)

// Row is one live row of a fragment: its physical row, id and the value
// of the indexed column (a string, a []float32, or nil for NULL).
type Row struct {
	Phys  uint32
	ID    string
	Value any
}

// Fragment reads the id and column of the live rows of ds's fragment i,
// in physical order.
func Fragment(ctx context.Context, ds *table.Dataset, i int, column string) ([]Row, error) {
	frags := ds.Fragments()
	del, err := ds.DeletedRows(ctx, i)
	if err != nil {
		return nil, err
	}
	recs, err := ds.Scan(ctx, table.ScanOptions{Columns: []string{ds.KeyColumn(), column}, Fragments: frags[i : i+1]})
	if err != nil {
		return nil, fmt.Errorf("scan for index: %w", err)
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	var out []Row
	phys := uint32(0)
	next := func() uint32 {
		for del != nil && del.Contains(phys) {
			phys++
		}
		p := phys
		phys++
		return p
	}
	for _, r := range recs {
		ids, col := r.Column(0), r.Column(1)
		for j := 0; j < int(r.NumRows()); j++ {
			out = append(out, Row{Phys: next(), ID: str(ids, j), Value: value(col, j)})
		}
	}
	return out, nil
}

func str(a arrow.Array, i int) string {
	switch s := a.(type) {
	case *array.String:
		return s.Value(i)
	case *array.LargeString:
		return s.Value(i)
	}
	return a.ValueStr(i)
}

func value(a arrow.Array, i int) any {
	if a.IsNull(i) {
		return nil
	}
	switch c := a.(type) {
	case *array.String, *array.LargeString:
		return str(c, i)
	case *array.FixedSizeList:
		start, end := c.ValueOffsets(i)
		vals, _ := c.ListValues().(*array.Float32)
		if vals == nil {
			return nil
		}
		out := make([]float32, end-start)
		for k := start; k < end; k++ {
			out[k-start] = vals.Value(int(k))
		}
		return out
	}
	return nil
}
