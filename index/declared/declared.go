// Package declared says which search indexes a node type declares and
// builds them over a table version: a full-text index (index/fulltext) on
// every String property with @index that is not part of the key, a vector
// index (index/vector) on every Vector property with @index (on tables of
// at least vector.MinRows vectors). ensure-indices builds the missing or
// partial ones; optimize rebuilds them over the fragments it rewrites.
package declared

import (
	"context"
	"fmt"

	"github.com/omnigraph-go/omnigraph/index/fulltext"
	"github.com/omnigraph-go/omnigraph/index/vector"
	"github.com/omnigraph-go/omnigraph/lang/pg"
	"github.com/omnigraph-go/omnigraph/table"
)

// Spec is one declared search index.
type Spec struct {
	Column string
	Kind   string // fulltext.Kind or vector.Kind
	Dim    int    // vector: the dimension
}

// Of lists the search indexes node type n declares.
func Of(n *pg.NodeType) []Spec {
	var out []Spec
	for _, p := range n.Properties {
		if !p.Index || p.Key {
			continue
		}
		switch p.Type.Kind {
		case pg.KindString:
			out = append(out, Spec{Column: p.Name, Kind: fulltext.Kind})
		case pg.KindVector:
			out = append(out, Spec{Column: p.Name, Kind: vector.Kind, Dim: p.Type.Dim})
		}
	}
	return out
}

// Covers reports whether ds has spec's index covering every fragment as it
// is. No I/O.
func Covers(ds *table.Dataset, s Spec) bool {
	if s.Kind == vector.Kind {
		return vector.Covers(ds, s.Column)
	}
	return fulltext.Covers(ds, s.Column)
}

// has reports whether ds has spec's index at all, covering every fragment
// or not. No I/O.
func has(ds *table.Dataset, s Spec) bool {
	_, ok := ds.IndexOn(s.Kind, s.Column)
	return ok
}

// Build builds the indexes of specs over ds (with missing set, only those
// not covering ds as it is; a vector index only over at least
// vector.MinRows vectors).
func Build(ctx context.Context, ds *table.Dataset, specs []Spec, missing bool) ([]table.IndexFile, error) {
	var out []table.IndexFile
	if len(ds.Fragments()) == 0 {
		return nil, nil
	}
	for _, s := range specs {
		if missing && Covers(ds, s) || s.Kind == vector.Kind && ds.RowCount() < int64(vector.MinRows) {
			continue
		}
		switch s.Kind {
		case fulltext.Kind:
			f, err := fulltext.Build(ctx, ds, s.Column)
			if err != nil {
				return nil, fmt.Errorf("build the full-text index on %s: %w", s.Column, err)
			}
			out = append(out, f)
		case vector.Kind:
			f, ok, err := vector.Build(ctx, ds, s.Column, s.Dim)
			if err != nil {
				return nil, fmt.Errorf("build the vector index on %s: %w", s.Column, err)
			}
			if ok {
				out = append(out, f)
			}
		}
	}
	return out, nil
}

// AddTo builds the indexes of specs over the staged version and adds them
// to the stage (optimize: the compaction dropped the old ones), except
// those the stage still carries (a tiered compaction keeps them).
func AddTo(ctx context.Context, st *table.Staged, specs []Spec) ([]table.IndexFile, error) {
	if st.Empty() || len(specs) == 0 {
		return nil, nil
	}
	view, err := st.View()
	if err != nil {
		return nil, err
	}
	var need []Spec
	for _, s := range specs {
		if !has(view, s) { // a tiered compaction carried it (table.StageCompact)
			need = append(need, s)
		}
	}
	files, err := Build(ctx, view, need, false)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		if err := st.AddIndexFile(ctx, f); err != nil {
			return nil, err
		}
	}
	return files, nil
}
