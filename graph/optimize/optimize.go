// Package optimize compacts the tables of a branch (seed 000's Optimize):
// small fragments are merged, deletion vectors folded into rewritten
// fragments, the key index built or extended to cover every fragment, and
// each edge table's adjacency index (its persisted traversal index) built
// to cover the new version,
// so the cost of reads, key checks and version manifests depends on the
// data, not on how many commits produced it.
//
// One Run is one write through the graph write pipeline (graph.KindOptimize):
// one recovery intent naming every compacted table, the compactions staged
// in parallel (bounded) and committed as that intent's table effects, and
// one publish. It never deletes a file: the rewritten fragments stay for
// older versions until cleanup reclaims them. It changes no row.
package optimize

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/index/declared"
	"github.com/omnigraph-go/omnigraph/lang/pg"
	"github.com/omnigraph-go/omnigraph/table"
)

// DefaultTargetRows is the row count a rewritten fragment aims for.
const DefaultTargetRows = 1 << 20

// stageParallelism bounds the tables compacted at once.
const stageParallelism = 4

// Options shape a Run.
type Options struct {
	// Branch to optimize ("" : the handle's branch).
	Branch string
	// Tables limits the run to these table keys (nil: every table).
	Tables []string
	// TargetRows is the size of a rewritten fragment (<= 0: default).
	TargetRows int64
	// MinSmallFragments skips a table with fewer small fragments (or
	// fragments with deletions) than this, unless its key index is
	// missing or partial (0: compact any table with at least two).
	MinSmallFragments int
	// Actor recorded on the commit ("" : the handle's).
	Actor string
	// Retries bounds re-preparation after losing a race before any effect
	// (0: graph.DefaultWriteRetries; automatic runs pass 1 to yield).
	Retries int
	// TierRatio, when > 0, rewrites only each table's smallest fragments
	// (table.CompactOptions.TierRatio): automatic runs use AutoTierRatio.
	// 0: every small fragment is merged (what `omnigraph optimize` does).
	TierRatio float64
}

// TableResult is what Run did to one table.
type TableResult struct {
	Table           string `json:"table"`
	FromVersion     uint64 `json:"from_version"`
	ToVersion       uint64 `json:"to_version"`
	FragmentsBefore int    `json:"fragments_before"`
	FragmentsAfter  int    `json:"fragments_after"`
}

// Result reports a Run.
type Result struct {
	// NoOp: every table was already compact; nothing was published.
	NoOp   bool              `json:"no_op"`
	Commit *graph.CommitInfo `json:"commit,omitempty"`
	Tables []TableResult     `json:"tables"`
}

// Run compacts the branch's tables as one graph commit. A branch deleted
// while it ran is manifest.ErrBranchNotFound (graph.IfBranchDeleted), like
// every writer's target.
func Run(ctx context.Context, g *graph.Graph, opts Options) (*Result, error) {
	res, err := graph.RetryOp(ctx, opts.Retries, func(ctx context.Context) (*Result, *graph.Result, error) {
		return attempt(ctx, g, opts)
	})
	if err != nil {
		return nil, g.IfBranchDeleted(ctx, "optimize target", opts.Branch, err)
	}
	return res, nil
}

func attempt(ctx context.Context, g *graph.Graph, opts Options) (*Result, *graph.Result, error) {
	w, err := g.BeginWrite(ctx, opts.Branch, graph.WriteOptions{Kind: graph.KindOptimize, Actor: opts.Actor})
	if err != nil {
		return nil, nil, err
	}
	snap := w.Snapshot()
	want := map[string]bool{}
	for _, k := range opts.Tables {
		want[k] = true
	}
	var keys []string
	for _, p := range snap.Tables() {
		// A table the branch has not written yet is its parent's: compact
		// it there (optimizing must not fork every table onto a branch).
		if (len(want) == 0 || want[p.Key]) && !w.FirstTouch(p.Key) {
			keys = append(keys, p.Key)
		}
	}
	sort.Strings(keys)
	specs, err := searchSpecs(ctx, snap)
	if err != nil {
		return nil, nil, err
	}
	target := opts.TargetRows
	if target <= 0 {
		target = DefaultTargetRows
	}
	type staged struct {
		st     *table.Staged
		before int
	}
	results := make([]staged, len(keys))
	errs := make([]error, len(keys))
	var wg sync.WaitGroup
	sem := make(chan struct{}, stageParallelism)
	for i, k := range keys {
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
			copts := table.CompactOptions{TargetRows: target, IndexKey: true, TierRatio: opts.TierRatio}
			if isEdgeTable(k) {
				copts.Adjacency = [2]string{pg.ColSrc, pg.ColDst}
			}
			if !needsWork(ds, target, opts.MinSmallFragments, copts.Adjacency) {
				return
			}
			st, err := ds.StageCompact(ctx, copts)
			if err != nil {
				errs[i] = fmt.Errorf("compact %s: %w", k, err)
				return
			}
			// The compaction drops the search indexes: rebuild them over it.
			if _, err := declared.AddTo(ctx, st, specs[k]); err != nil {
				errs[i] = fmt.Errorf("compact %s: %w", k, err)
				return
			}
			results[i] = staged{st: st, before: len(ds.Manifest().Fragments)}
		}(i, k)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, nil, err
		}
	}
	res := &Result{Tables: []TableResult{}}
	for i, k := range keys {
		st := results[i].st
		if st.Empty() {
			continue
		}
		if err := w.Stage(ctx, k, func(context.Context, *table.Dataset) (*table.Staged, error) { return st, nil }); err != nil {
			return nil, nil, err
		}
		res.Tables = append(res.Tables, TableResult{Table: k, FromVersion: st.ReadVersion, ToVersion: st.ReadVersion + 1,
			FragmentsBefore: results[i].before, FragmentsAfter: len(st.Manifest.Fragments)})
	}
	gr, err := w.Commit(ctx)
	if err != nil {
		return nil, nil, err
	}
	if gr.NoOp {
		res.NoOp = true
		res.Tables = []TableResult{}
		return res, gr, nil
	}
	c := gr.Commit
	res.Commit = &c
	return res, gr, nil
}

// needsWork: a table with small fragments past the threshold, or a key
// index (or, for an edge table, an adjacency index) that does not cover
// every fragment as it is.
func needsWork(ds *table.Dataset, target int64, minSmall int, adj [2]string) bool {
	if len(ds.Manifest().Fragments) == 0 {
		return false
	}
	if !ds.KeyIndexCovers() {
		return true
	}
	if adj[0] != "" && !ds.AdjacencyCovers(adj[0], adj[1]) {
		return true
	}
	return ds.SmallFragments(target) >= max(minSmall, 2) || hasDeletions(ds)
}

// isEdgeTable reports whether a manifest table key names an edge type's
// table (its traversal index is the adjacency on src and dst).
func isEdgeTable(key string) bool { return strings.HasPrefix(key, graph.EdgeTableKey("")) }

func hasDeletions(ds *table.Dataset) bool {
	for _, f := range ds.Manifest().Fragments {
		if f.Deletion != nil {
			return true
		}
	}
	return false
}

// searchSpecs maps each node table key to the search indexes its type
// declares (index/declared).
func searchSpecs(ctx context.Context, snap *graph.Snapshot) (map[string][]declared.Spec, error) {
	cat, err := snap.Catalog(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string][]declared.Spec{}
	for _, n := range cat.Nodes {
		if sp := declared.Of(n); len(sp) > 0 {
			out[graph.NodeTableKey(n.Name)] = sp
		}
	}
	return out, nil
}
