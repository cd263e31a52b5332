package merge

import (
	"container/heap"
	"context"

	"github.com/omnigraph-go/omnigraph/graph"
)

// Divergence is how two snapshots' histories differ: Ahead counts the
// commits reachable from the first and not from the second, Behind the
// reverse (git's `rev-list --left-right --count`). Capped: the walk
// stopped when one side reached the cap, so both counts are lower bounds.
type Divergence struct {
	Ahead  int  `json:"ahead"`
	Behind int  `json:"behind"`
	Capped bool `json:"capped,omitempty"`
}

// AheadBehind counts the commits a has that b lacks and those b has that
// a lacks. It walks both histories newest first with the merge base's
// painting (each commit carries the sides that reach it) and stops as soon
// as every commit left to visit is reachable from both, so it reads the
// commits since the merge base, not the history below it. limit > 0 stops
// the walk once either count reaches it (Capped).
//
// A commit is counted when it is visited, with the sides that reached it
// by then; commit times order the walk, so a commit whose clock ran behind
// one of its parents' may be counted on one side although the other side
// reaches it later (as with git).
func AheadBehind(ctx context.Context, a, b *graph.Snapshot, limit int) (Divergence, error) {
	w := newWalker(a.Graph())
	ca, err := w.commitOf(ctx, a.Entry())
	if err != nil {
		return Divergence{}, err
	}
	cb, err := w.commitOf(ctx, b.Entry())
	if err != nil {
		return Divergence{}, err
	}
	var d Divergence
	if ca.Commit.ID == cb.Commit.ID {
		return d, nil
	}
	nodes := map[string]*paint{}
	var q queue
	// one counts the queued commits reached from one side only: the walk
	// ends when none is left.
	one := 0
	add := func(p *paint, fl int) {
		before := p.flags
		p.flags |= fl
		if before&(sideA|sideB) == p.flags&(sideA|sideB) {
			return
		}
		if p.flags&stale != 0 {
			return // visited: its sides were settled when it was counted
		}
		if before == 0 {
			heap.Push(&q, p)
			one++
		}
		if p.flags&(sideA|sideB) == sideA|sideB {
			one--
		}
	}
	for _, s := range []struct {
		e  *paint
		fl int
	}{{&paint{e: ca}, sideA}, {&paint{e: cb}, sideB}} {
		nodes[s.e.e.Commit.ID] = s.e
		add(s.e, s.fl)
	}
	for one > 0 {
		n := heap.Pop(&q).(*paint)
		fl := n.flags & (sideA | sideB)
		n.flags |= stale
		switch fl {
		case sideA:
			d.Ahead++
			one--
		case sideB:
			d.Behind++
			one--
		}
		if limit > 0 && (d.Ahead >= limit || d.Behind >= limit) {
			d.Capped = true
			return d, nil
		}
		ps, err := w.parents(ctx, n.e)
		if err != nil {
			return Divergence{}, err
		}
		for _, pe := range ps {
			p := nodes[pe.Commit.ID]
			if p == nil {
				p = &paint{e: pe}
				nodes[pe.Commit.ID] = p
			}
			add(p, fl)
		}
	}
	return d, nil
}
