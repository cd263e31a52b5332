package optimize

import (
	"context"
	"sort"
	"strconv"
	"sync"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/manifest"
	"github.com/omnigraph-go/omnigraph/table"
)

// DefaultAutoThreshold is the small-fragment count (fragments below the
// target size or carrying deletions) at which automatic compaction runs
// for a table. Each run merges at least two of them, so a table written
// only through writers that run Auto holds fewer than this many small
// fragments at rest, at any history depth: a cold scan of it fits in one
// round of parallel reads (16 in flight) even with a few writes since.
const DefaultAutoThreshold = 10

// AutoTierRatio is the size-tiered choice of automatic runs
// (table.CompactOptions.TierRatio): the smallest fragments are merged,
// each next one while it is at most twice the rows chosen so far, so a
// row is rewritten about log(table rows) times (measured with one-row
// commits: 7 rows rewritten per committed row at 10,000 rows), not once
// every few commits as merging every small fragment would.
const AutoTierRatio = 2.0

// AutoOptions shape an Auto check.
type AutoOptions struct {
	// Branch the user's write published to ("" : the handle's branch).
	Branch string
	// Threshold is the small-fragment count that triggers compaction
	// (<= 0: DefaultAutoThreshold).
	Threshold int
	// Actor recorded on the compaction commit ("" : the handle's).
	Actor string
}

// Auto is automatic compaction, run by a writer after its own write was
// acknowledged: when a table the branch has written holds Threshold or
// more small fragments, it compacts those tables with one attempt
// (Retries 1), so a race it loses or any failure yields and leaves the
// next write to try again. The caller logs its error and never reports it
// as the user's: the user's write has already succeeded.
//
// The check costs one List (the branch head, warm) and one GET per
// branch-written table the handle has not opened yet, all in parallel; a
// table under the threshold costs nothing more. A nil Result with a nil
// error means no table passed the threshold.
func Auto(ctx context.Context, g *graph.Graph, opts AutoOptions) (*Result, error) {
	threshold := opts.Threshold
	if threshold <= 0 {
		threshold = DefaultAutoThreshold
	}
	snap, err := g.Snapshot(ctx, opts.Branch)
	if err != nil {
		return nil, err
	}
	pins := snap.Tables()
	own := ownTableBranch(snap)
	over := make([]bool, len(pins))
	errs := make([]error, len(pins))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i, p := range pins {
		// A table the branch has never written is its parent's; Run leaves
		// it alone too.
		if p.Branch != own {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func(i int, key string) {
			defer wg.Done()
			defer func() { <-sem }()
			ds, err := snap.OpenTable(ctx, key)
			if err != nil {
				errs[i] = err
				return
			}
			over[i] = ds.SmallFragments(DefaultTargetRows) >= threshold
		}(i, p.Key)
	}
	wg.Wait()
	var tables []string
	for i, p := range pins {
		if errs[i] != nil {
			return nil, errs[i]
		}
		if over[i] {
			tables = append(tables, p.Key)
		}
	}
	if len(tables) == 0 {
		return nil, nil
	}
	sort.Strings(tables)
	return Run(ctx, g, Options{Branch: snap.Branch(), Tables: tables, MinSmallFragments: threshold, Actor: opts.Actor, Retries: 1, TierRatio: AutoTierRatio})
}

// ownTableBranch is the table branch a graph branch's own writes go to
// (graph.tableBranch): "main" on main, "<branch>@<incarnation>" elsewhere.
func ownTableBranch(s *graph.Snapshot) string {
	if s.Branch() == manifest.MainBranch {
		return table.MainBranch
	}
	return s.Branch() + "@" + strconv.FormatUint(s.Entry().Incarnation, 10)
}
