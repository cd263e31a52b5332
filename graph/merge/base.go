package merge

// The merge base: the lowest common ancestor of two commits in the commit
// graph (see docs/dev/merge.md).
//
// Commits are manifest versions. The first parent of the commit at version
// v of a branch incarnation is version v-1 (through fork points: a branch's
// genesis shows the commit it was forked at), so it is one GET away. A
// second parent (the source head of a merge) is found by commit id, which
// scans the manifest (FindCommit); the walk only does that when it has to
// cross a merge commit.
//
// The walk paints commits newest first (by commit time, then id) with the
// side that reaches them, as git does: a commit reached from both sides is
// a common ancestor, and its ancestors are painted stale, so the walk stops
// as soon as nothing but stale commits is left. A fast-forward (the
// target's head is the fork point of the source) therefore reads only the
// source's own commits, whatever the depth of the history below.

import (
	"container/heap"
	"context"
	"fmt"
	"sort"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/manifest"
)

type walker struct {
	m    *manifest.Store
	byID map[string]*manifest.Entry
}

func newWalker(g *graph.Graph) *walker {
	return &walker{m: g.Manifest(), byID: map[string]*manifest.Entry{}}
}

func (w *walker) remember(e *manifest.Entry) {
	if e.Kind == manifest.KindCommit {
		w.byID[e.Commit.ID] = e
	}
}

// commitOf returns the commit entry a branch version shows: itself, or for
// a fork point the commit its parent showed.
func (w *walker) commitOf(ctx context.Context, e *manifest.Entry) (*manifest.Entry, error) {
	for e.Kind == manifest.KindFork {
		if c, ok := w.byID[e.Head]; ok {
			return c, nil
		}
		p, err := w.m.ReadVersion(ctx, e.Fork.Branch, e.Fork.Incarnation, e.Fork.Version)
		if err != nil {
			return nil, fmt.Errorf("read the fork point of branch %q: %w", e.Branch, err)
		}
		e = p
	}
	w.remember(e)
	return e, nil
}

// firstParent returns the entry of e's first parent.
func (w *walker) firstParent(ctx context.Context, e *manifest.Entry) (*manifest.Entry, error) {
	want := e.Commit.Parents[0]
	if c, ok := w.byID[want]; ok {
		return c, nil
	}
	if e.Version > 1 {
		p, err := w.m.ReadVersion(ctx, e.Branch, e.Incarnation, e.Version-1)
		if err != nil {
			return nil, fmt.Errorf("read the parent of commit %s: %w", e.Commit.ID, err)
		}
		c, err := w.commitOf(ctx, p)
		if err != nil {
			return nil, err
		}
		if c.Commit.ID == want {
			return c, nil
		}
	}
	return w.byCommit(ctx, want)
}

// merged returns the second parent of a merge commit that records where it
// was published (one GET; cached).
func (w *walker) merged(ctx context.Context, e *manifest.Entry) (*manifest.Entry, error) {
	if c, ok := w.byID[e.Commit.Parents[1]]; ok {
		return c, nil
	}
	l := e.Merged
	p, err := w.m.ReadVersion(ctx, l.Branch, l.Incarnation, l.Version)
	if err != nil || p.Kind != manifest.KindCommit || p.Commit.ID != l.Head {
		return w.byCommit(ctx, e.Commit.Parents[1])
	}
	w.remember(p)
	return p, nil
}

// byCommit finds a commit by id (a manifest scan; cached).
func (w *walker) byCommit(ctx context.Context, id string) (*manifest.Entry, error) {
	if c, ok := w.byID[id]; ok {
		return c, nil
	}
	c, err := w.m.FindCommit(ctx, id)
	if err != nil {
		return nil, err
	}
	w.remember(c)
	return c, nil
}

func (w *walker) parents(ctx context.Context, e *manifest.Entry) ([]*manifest.Entry, error) {
	var out []*manifest.Entry
	for i, id := range e.Commit.Parents {
		var p *manifest.Entry
		var err error
		switch {
		case i == 0:
			p, err = w.firstParent(ctx, e)
		case i == 1 && e.Merged != nil:
			p, err = w.merged(ctx, e)
		default:
			p, err = w.byCommit(ctx, id)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

const (
	sideA = 1 << iota
	sideB
	stale
)

type paint struct {
	e     *manifest.Entry
	flags int
}

type queue []*paint

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	a, b := q[i].e.Commit, q[j].e.Commit
	if a.TimeMicros != b.TimeMicros {
		return a.TimeMicros > b.TimeMicros
	}
	return a.ID > b.ID
}
func (q queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)   { *q = append(*q, x.(*paint)) }
func (q *queue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

func (q queue) live() bool {
	for _, p := range q {
		if p.flags&stale == 0 {
			return true
		}
	}
	return false
}

// mergeBases returns the best common ancestors of commits a and b (commit
// entries), newest first; none when the histories are disjoint.
func (w *walker) mergeBases(ctx context.Context, a, b *manifest.Entry) ([]*manifest.Entry, error) {
	if a.Commit.ID == b.Commit.ID {
		return []*manifest.Entry{a}, nil
	}
	nodes := map[string]*paint{}
	var q queue
	add := func(e *manifest.Entry, fl int) {
		n := nodes[e.Commit.ID]
		if n == nil {
			n = &paint{e: e}
			nodes[e.Commit.ID] = n
		}
		n.flags |= fl
		heap.Push(&q, n)
	}
	add(a, sideA)
	add(b, sideB)
	var results []*manifest.Entry
	isResult := map[string]bool{}
	for q.live() {
		n := heap.Pop(&q).(*paint)
		fl := n.flags & (sideA | sideB | stale)
		if fl == sideA|sideB {
			if !isResult[n.e.Commit.ID] {
				isResult[n.e.Commit.ID] = true
				results = append(results, n.e)
			}
			fl |= stale
			n.flags |= stale
			if !q.live() {
				break
			}
		}
		ps, err := w.parents(ctx, n.e)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			if pn := nodes[p.Commit.ID]; pn != nil && pn.flags&fl == fl {
				continue
			}
			add(p, fl)
		}
	}
	// Drop a result that is an ancestor of another (possible when commit
	// times are skewed), then order the rest newest first.
	var best []*manifest.Entry
	for _, r := range results {
		redundant := false
		for _, o := range results {
			if o != r {
				anc, err := w.isAncestor(ctx, r, o)
				if err != nil {
					return nil, err
				}
				if anc {
					redundant = true
					break
				}
			}
		}
		if !redundant {
			best = append(best, r)
		}
	}
	sort.Slice(best, func(i, j int) bool {
		x, y := best[i].Commit, best[j].Commit
		if x.TimeMicros != y.TimeMicros {
			return x.TimeMicros > y.TimeMicros
		}
		return x.ID > y.ID
	})
	return best, nil
}

// isAncestor reports whether commit a is an ancestor of commit b (walking
// b's ancestors no older than a).
func (w *walker) isAncestor(ctx context.Context, a, b *manifest.Entry) (bool, error) {
	seen := map[string]bool{}
	stack := []*manifest.Entry{b}
	for len(stack) > 0 {
		e := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if e.Commit.ID == a.Commit.ID {
			return true, nil
		}
		if seen[e.Commit.ID] || e.Commit.TimeMicros < a.Commit.TimeMicros {
			continue
		}
		seen[e.Commit.ID] = true
		ps, err := w.parents(ctx, e)
		if err != nil {
			return false, err
		}
		stack = append(stack, ps...)
	}
	return false, nil
}
