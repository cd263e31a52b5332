package schema

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/index/declared"
	"github.com/omnigraph-go/omnigraph/lang/pg"
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
	pendingSecondary = "this engine builds no secondary index for this group (only full-text indexes on String properties and vector indexes on Vector properties); reads of these columns prune fragments by their statistics and scan the rest"
	pendingInherited = "the branch has not written this table yet: it reads its parent's, so run ensure-indices on the parent"
)

// EnsureIndices builds every missing or partial key index of the branch's
// tables (the index on "id" that key checks, lookups and traversals use)
// as one maintenance commit (graph.KindIndex): one index transaction per
// table, one recovery intent, one publish. A branch whose indexes are all
// complete is a no-op. It also builds the search indexes node types
// declare (index/declared: full-text on String @index properties, vector
// on Vector @index properties of large enough tables) that are missing or
// do not cover the table as it is, in the same table transactions. Other
// declared @index groups are listed as pending (see IndexPending.Reason).
func EnsureIndices(ctx context.Context, g *graph.Graph, opts IndexOptions) (*IndexResult, error) {
	res, err := graph.RetryOp(ctx, opts.Retries, func(ctx context.Context) (*IndexResult, *graph.Result, error) {
		return ensureAttempt(ctx, g, opts)
	})
	if err != nil {
		return nil, g.IfBranchDeleted(ctx, "index target", opts.Branch, err)
	}
	return res, nil
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
	searchFiles := make([][]table.IndexFile, len(keys))
	keyBuilt := make([]bool, len(keys))
	specs := searchSpecs(cat)
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
			for _, sp := range specs[k] {
				if len(ds.Fragments()) > 0 && !declared.Covers(ds, sp) {
					res.Pending = append(res.Pending, IndexPending{Table: k, Columns: sp.Column, Reason: pendingInherited})
				}
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
			// The search indexes the node type declares (index/declared),
			// built with the key index's stage or in their own.
			files, err := declared.Build(ctx, ds, specs[k], true)
			if err != nil {
				errs[i] = fmt.Errorf("%s: %w", k, err)
				return
			}
			var st *table.Staged
			if needsKeyIndex(ds) {
				if st, err = ds.StageCreateIndex(ctx, ds.KeyColumn()); err != nil {
					errs[i] = fmt.Errorf("build the key index of %s: %w", k, err)
					return
				}
				for _, f := range files {
					if err := st.AddIndexFile(ctx, f); err != nil {
						errs[i] = fmt.Errorf("%s: %w", k, err)
						return
					}
				}
			} else if len(files) > 0 {
				st, err = ds.StageIndexes(ctx, func(*table.Dataset) ([]table.IndexFile, error) { return files, nil })
				if err != nil {
					errs[i] = fmt.Errorf("%s: %w", k, err)
					return
				}
			} else {
				return
			}
			staged[i], searchFiles[i], keyBuilt[i], frags[i] = st, files, needsKeyIndex(ds), len(ds.Fragments())
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
		if keyBuilt[i] {
			res.Built = append(res.Built, IndexBuilt{Table: k, Column: pg.ColID, Kind: "key", FromVersion: st.ReadVersion, ToVersion: st.ReadVersion + 1, Fragments: frags[i]})
		}
		for _, f := range searchFiles[i] {
			res.Built = append(res.Built, IndexBuilt{Table: k, Column: f.Columns[0], Kind: f.Kind, FromVersion: st.ReadVersion, ToVersion: st.ReadVersion + 1, Fragments: frags[i]})
		}
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

// searchSpecs maps each node table key to the search indexes its type
// declares.
func searchSpecs(cat *pg.Catalog) map[string][]declared.Spec {
	out := map[string][]declared.Spec{}
	for _, n := range cat.Nodes {
		if sp := declared.Of(n); len(sp) > 0 {
			out[graph.NodeTableKey(n.Name)] = sp
		}
	}
	return out
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
	add := func(key string, key1 []string, groups [][]string, built []declared.Spec) {
		for _, g := range groups {
			if sameStrings(g, key1) || len(g) == 1 && slices.ContainsFunc(built, func(s declared.Spec) bool { return s.Column == g[0] }) {
				continue
			}
			out = append(out, IndexPending{Table: key, Columns: strings.Join(g, ", "), Reason: pendingSecondary})
		}
	}
	for _, n := range cat.Nodes {
		add(graph.NodeTableKey(n.Name), n.Key, n.Index, declared.Of(n))
	}
	for _, e := range cat.Edges {
		add(graph.EdgeTableKey(e.Name), nil, e.Index, nil)
	}
	return out
}
