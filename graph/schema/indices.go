package schema

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/pg"
	"github.com/omnigraph-go/omnigraph/table"
)

// IndexOptions shape EnsureIndices.
type IndexOptions struct {
	// Branch ("" : the handle's).
	Branch string
	// Actor recorded on the commit ("" : the handle's).
	Actor string
	// Retries bounds re-preparation after losing a race before any effect
	// (0: graph.DefaultWriteRetries).
	Retries int
}

// IndexBuilt is one index EnsureIndices built.
type IndexBuilt struct {
	Table       string `json:"table"`
	Column      string `json:"column"`
	Kind        string `json:"kind"`
	FromVersion uint64 `json:"from_version"`
	ToVersion   uint64 `json:"to_version"`
	Fragments   int    `json:"fragments"`
}

// IndexPending is a declared index EnsureIndices did not build, and why.
type IndexPending struct {
	Table   string `json:"table"`
	Columns string `json:"columns"`
	Reason  string `json:"reason"`
}

// IndexResult reports EnsureIndices.
type IndexResult struct {
	// NoOp: every buildable index was already complete; nothing was
	// written.
	NoOp    bool              `json:"no_op"`
	Commit  *graph.CommitInfo `json:"commit,omitempty"`
	Built   []IndexBuilt      `json:"built"`
	Pending []IndexPending    `json:"pending"`
}

// Pending reasons.
const (
	pendingSecondary = "this engine builds no secondary property indexes yet; reads of this column prune fragments by their statistics and scan the rest"
	pendingInherited = "the branch has not written this table yet: it reads its parent's, so run ensure-indices on the parent"
)

// EnsureIndices builds every missing or partial key index of the branch's
// tables (the index on "id" that key checks, lookups and traversals use)
// as one maintenance commit (graph.KindIndex): one index transaction per
// table, one recovery intent, one publish. A branch whose indexes are all
// complete is a no-op. Declared @index groups are listed as pending (see
// IndexPending.Reason); search indexes are not this command's.
func EnsureIndices(ctx context.Context, g *graph.Graph, opts IndexOptions) (*IndexResult, error) {
	return graph.RetryOp(ctx, opts.Retries, func(ctx context.Context) (*IndexResult, *graph.Result, error) {
		return ensureAttempt(ctx, g, opts)
	})
}

func ensureAttempt(ctx context.Context, g *graph.Graph, opts IndexOptions) (*IndexResult, *graph.Result, error) {
	w, err := g.BeginWrite(ctx, opts.Branch, graph.WriteOptions{Kind: graph.KindIndex, Actor: opts.Actor})
	if err != nil {
		return nil, nil, err
	}
	snap := w.Snapshot()
	cat, err := snap.Catalog(ctx)
	if err != nil {
		return nil, nil, err
	}
	res := &IndexResult{Built: []IndexBuilt{}, Pending: declaredPending(cat)}
	var keys []string
	for _, p := range snap.Tables() {
		keys = append(keys, p.Key)
	}
	sort.Strings(keys)
	staged := make([]*table.Staged, len(keys))
	frags := make([]int, len(keys))
	errs := make([]error, len(keys))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i, k := range keys {
		if w.FirstTouch(k) {
			// Indexing a table the branch reads from its parent would fork
			// it; the parent's own run builds it.
			ds, err := snap.OpenTable(ctx, k)
			if err != nil {
				return nil, nil, err
			}
			if needsKeyIndex(ds) {
				res.Pending = append(res.Pending, IndexPending{Table: k, Columns: pg.ColID, Reason: pendingInherited})
			}
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func(i int, k string) {
			defer wg.Done()
			defer func() { <-sem }()
			ds, err := snap.OpenTable(ctx, k)
			if err != nil {
				errs[i] = err
				return
			}
			if !needsKeyIndex(ds) {
				return
			}
			st, err := ds.StageCreateIndex(ctx, ds.KeyColumn())
			if err != nil {
				errs[i] = fmt.Errorf("build the key index of %s: %w", k, err)
				return
			}
			staged[i], frags[i] = st, len(ds.Manifest().Fragments)
		}(i, k)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, nil, err
		}
	}
	for i, k := range keys {
		st := staged[i]
		if st.Empty() {
			continue
		}
		if err := w.Stage(ctx, k, func(context.Context, *table.Dataset) (*table.Staged, error) { return st, nil }); err != nil {
			return nil, nil, err
		}
		res.Built = append(res.Built, IndexBuilt{Table: k, Column: pg.ColID, Kind: "key", FromVersion: st.ReadVersion, ToVersion: st.ReadVersion + 1, Fragments: frags[i]})
	}
	gr, err := w.Commit(ctx)
	if err != nil {
		return nil, nil, err
	}
	if gr.NoOp {
		res.NoOp = true
		return res, gr, nil
	}
	c := gr.Commit
	res.Commit = &c
	return res, gr, nil
}

// needsKeyIndex: a table with rows whose key index is missing or does not
// cover every fragment.
func needsKeyIndex(ds *table.Dataset) bool {
	return len(ds.Manifest().Fragments) > 0 && !ds.KeyIndexCovers()
}

// declaredPending lists the declared @index groups (keys excluded: their
// index is the key index).
func declaredPending(cat *pg.Catalog) []IndexPending {
	out := []IndexPending{}
	add := func(key string, key1 []string, groups [][]string) {
		for _, g := range groups {
			if sameStrings(g, key1) {
				continue
			}
			out = append(out, IndexPending{Table: key, Columns: strings.Join(g, ", "), Reason: pendingSecondary})
		}
	}
	for _, n := range cat.Nodes {
		add(graph.NodeTableKey(n.Name), n.Key, n.Index)
	}
	for _, e := range cat.Edges {
		add(graph.EdgeTableKey(e.Name), nil, e.Index)
	}
	return out
}
