package graph

import (
	"container/heap"
	"context"

	"github.com/omnigraph-go/omnigraph/manifest"
)

// LogOptions shape a Log.
type LogOptions struct {
	// Limit lists at most this many commits (<= 0: all).
	Limit int
	// FirstParent follows first parents only: the branch's own commits,
	// then those it inherited through its fork point (Commits), not the
	// commits merges brought in.
	FirstParent bool
}

// Log lists the commits reachable from branch's head, newest first, as
// `git log` does: through both parents of every merge (the merged
// branch's commits appear among the target's, by time), each commit once.
// With FirstParent it is Commits.
//
// Cost: each line of first parents (the branch's own, and one per merged
// branch met) is read a page at a time like Commits (a List and
// concurrent GETs per page of at most Limit versions); a merge's second
// parent costs one GET where the merge recorded its location
// (manifest.Entry.Merged), else a search by id.
func (g *Graph) Log(ctx context.Context, branch string, opts LogOptions) ([]CommitInfo, error) {
	if opts.FirstParent {
		return g.Commits(ctx, branch, opts.Limit)
	}
	if branch == "" {
		branch = g.current
	}
	head, err := g.head(ctx, branch)
	if err != nil {
		return nil, err
	}
	page := opts.Limit
	if page <= 0 || page > 256 {
		page = 256
	}
	var (
		out  []CommitInfo
		seen = map[string]bool{}
		q    lanes
	)
	start := func(e *manifest.Entry) error {
		l := &lane{start: e, page: min(page, 8), max: page}
		if err := l.fill(ctx, g.man); err != nil {
			return err
		}
		if len(l.buf) > 0 {
			heap.Push(&q, l)
		}
		return nil
	}
	if err := start(head); err != nil {
		return nil, err
	}
	for q.Len() > 0 && (opts.Limit <= 0 || len(out) < opts.Limit) {
		l := heap.Pop(&q).(*lane)
		c := l.buf[0]
		l.buf = l.buf[1:]
		if seen[c.Commit.ID] {
			// Another line reached this commit first and goes on below
			// it: this one is done.
			continue
		}
		seen[c.Commit.ID] = true
		out = append(out, commitInfo(c))
		if len(c.Commit.Parents) > 1 && !seen[c.Commit.Parents[1]] {
			p, err := g.man.MergedParent(ctx, c)
			if err != nil {
				return nil, err
			}
			if err := start(p); err != nil {
				return nil, err
			}
		}
		if len(l.buf) == 0 {
			if err := l.fill(ctx, g.man); err != nil {
				return nil, err
			}
		}
		if len(l.buf) > 0 {
			heap.Push(&q, l)
		}
	}
	return out, nil
}

// lane is one line of first parents being listed, read a page at a time.
type lane struct {
	start *manifest.Entry   // where the next page starts (included once)
	last  *manifest.Entry   // the last entry read; the next page starts below it
	buf   []*manifest.Entry // read and not yet listed, newest first
	done  bool
	// page is the size of the next page: small at first (a merged line
	// is often a few commits), doubling up to max.
	page, max int
}

// fill reads the next page of the line.
func (l *lane) fill(ctx context.Context, m *manifest.Store) error {
	if l.done {
		return nil
	}
	n := l.page
	l.page = min(2*l.page, l.max)
	from, skip := l.start, false
	if l.last != nil {
		from, skip = l.last, true
	}
	want := n
	if skip {
		want++
	}
	got := 0
	err := m.HistoryN(ctx, from, want, func(e *manifest.Entry) (bool, error) {
		got++
		if skip && got == 1 && e == from {
			return true, nil
		}
		l.buf = append(l.buf, e)
		l.last = e
		return true, nil
	})
	if err != nil {
		return err
	}
	if got < want {
		l.done = true
	}
	return nil
}

// lanes is a max-heap of lanes by their next commit (time, then id).
type lanes []*lane

func (q lanes) Len() int { return len(q) }
func (q lanes) Less(i, j int) bool {
	a, b := q[i].buf[0].Commit, q[j].buf[0].Commit
	if a.TimeMicros != b.TimeMicros {
		return a.TimeMicros > b.TimeMicros
	}
	return a.ID > b.ID
}
func (q lanes) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *lanes) Push(x any)   { *q = append(*q, x.(*lane)) }
func (q *lanes) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}
