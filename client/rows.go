package client

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/omnigraph-go/omnigraph/api"
)

// Rows decodes the rows of a query's answer into T, one value per row.
// A row is a JSON object keyed by the query's column names (out.Columns,
// e.g. "p.handle" for a return of $p.handle, or the alias after "as"), so
// T is a struct whose json tags name the columns, or a map[string]any.
// Values are as the API renders them: a Date is "YYYY-MM-DD" (decode it
// into a string), a DateTime RFC 3339 (a string or a time.Time), a 64-bit
// integer a JSON number (an int64 field keeps every digit).
//
//	type person struct {
//		Handle string `json:"p.handle"`
//		Age    *int   `json:"p.age"` // nil for a NULL
//	}
//	people, err := client.Rows[person](out)
func Rows[T any](out *api.ReadOutput) ([]T, error) {
	if out == nil {
		return nil, nil
	}
	rows := make([]T, len(out.Rows))
	for i, r := range out.Rows {
		if err := json.Unmarshal(r, &rows[i]); err != nil {
			return nil, fmt.Errorf("omnigraph query: row %d into %T: %w", i, rows[i], err)
		}
	}
	return rows, nil
}

// QueryRows runs a query and decodes its rows into T (Graph.Query, then
// Rows). The answer is returned too, for its GraphCommitID and Columns.
func QueryRows[T any](ctx context.Context, g *Graph, q api.QueryRequest) ([]T, *api.ReadOutput, error) {
	out, err := g.Query(ctx, q)
	if err != nil {
		return nil, nil, err
	}
	rows, err := Rows[T](out)
	if err != nil {
		return nil, out, err
	}
	return rows, out, nil
}
