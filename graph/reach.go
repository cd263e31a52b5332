package graph

import (
	"context"
	"sync"

	"github.com/omnigraph-go/omnigraph/manifest"
)

// clockSkew is how far commit times of different writers may disagree:
// a walk bounded by time looks this much further back.
const clockSkew = int64(10 * 60 * 1_000_000) // 10 minutes, in microseconds

// reachableFromLive reports whether a commit of the incarnation whose head
// is head (a branch being deleted) is reachable from the head of a live
// branch: merged into one, directly or through branches merged and
// deleted since (their merges' recorded locations, their fork points).
// Those commits stay listed by every such branch's history, so branch
// delete leaves their data for cleanup, which keeps it until the
// retention drops it.
//
// Every commit on the way from a live head down to one of head's commits
// was made after the branch was forked: on the branch it was forked from,
// above the fork version (a version at or below it was published before
// the branch existed); elsewhere, younger than the branch's first commit
// (less clockSkew). The walk stops there, and reads nothing of a live
// branch whose head is older: the cost follows the commits made since the
// branch was forked and the number of live branches (one GET each), not
// the history. Any failure answers true: keeping the data is the safe
// side, cleanup reclaims it.
func (g *Graph) reachableFromLive(ctx context.Context, head *manifest.Entry) bool {
	if head.Version <= 1 {
		return false // no commit of its own
	}
	first, err := g.man.ReadVersion(ctx, head.Branch, head.Incarnation, 2)
	if err != nil || first.Commit == nil {
		return true
	}
	genesis, err := g.man.ReadVersion(ctx, head.Branch, head.Incarnation, 1)
	if err != nil || genesis.Fork == nil {
		return true
	}
	fork := genesis.Fork
	bound := first.Commit.TimeMicros - clockSkew
	mine := func(e *manifest.Entry) bool { return e.Branch == head.Branch && e.Incarnation == head.Incarnation }
	refs, err := g.man.Branches(ctx)
	if err != nil {
		return true
	}
	// The heads of the live branches, in parallel; an old head (or a fork
	// that never committed: its parent's own lane covers it) is skipped.
	heads := make([]*manifest.Entry, len(refs))
	errs := make([]error, len(refs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i, r := range refs {
		if !r.Live() || r.Branch == head.Branch && r.Incarnation == head.Incarnation {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func(i int, r manifest.Ref) {
			defer wg.Done()
			defer func() { <-sem }()
			heads[i], errs[i] = g.man.Read(ctx, r)
		}(i, r)
	}
	wg.Wait()
	var todo []*manifest.Entry
	for i, e := range heads {
		if errs[i] != nil {
			return true
		}
		if e != nil && e.Kind == manifest.KindCommit && e.Commit.TimeMicros >= bound {
			todo = append(todo, e)
		}
	}
	seen := map[string]bool{}
	for len(todo) > 0 {
		start := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		l := &lane{start: start, page: 8, max: 256}
		for {
			if len(l.buf) == 0 {
				if err := l.fill(ctx, g.man); err != nil {
					return true
				}
				if len(l.buf) == 0 {
					break
				}
			}
			e := l.buf[0]
			l.buf = l.buf[1:]
			if mine(e) {
				return true // one of its commits
			}
			if seen[e.Commit.ID] || e.Commit.TimeMicros < bound ||
				e.Branch == fork.Branch && e.Incarnation == fork.Incarnation && e.Version <= fork.Version {
				break
			}
			seen[e.Commit.ID] = true
			if len(e.Commit.Parents) > 1 && !seen[e.Commit.Parents[1]] {
				p, err := g.man.MergedParent(ctx, e)
				if err != nil || p == nil || mine(p) {
					return true
				}
				todo = append(todo, p)
			}
		}
	}
	return false
}
