package changes

import (
	"context"
	"fmt"

	"github.com/omnigraph-go/omnigraph/manifest"
)

// The first-parent chain of a branch is its incarnation's versions, and
// below its fork point the versions of the branch it was forked from, up
// to the fork version, and so on down to main's genesis. A segment is one
// incarnation's part of the chain; the feed's own segment ends at the
// head. Version 1 of a forked segment is its fork point: not a commit,
// but a position equal to the end of the segment below (normalize).
//
// The ancestors are read only when a position lies below the feed's own
// incarnation (start beginning, after:ID of inherited history, a cursor
// that was issued there): one GET per fork point crossed.

type segment struct {
	branch string
	inc    uint64
	// hi is the last version of the segment on the chain: the head for
	// the feed's own, the fork version of the segment above otherwise.
	hi    uint64
	child *segment // the segment above (towards the head); nil for the own
}

// noSeg marks a position that is not on the chain.
var noSeg *segment

// chainPos is a position on the chain: version v of segment seg. commit,
// when known, is the commit the version shows (checked against storage
// when the version is read).
type chainPos struct {
	seg    *segment
	v      uint64
	commit string
}

type chain struct {
	m      *manifest.Store
	head   *manifest.Entry
	own    *segment
	root   *segment // nil until the ancestors are read
	loaded bool
}

func newChain(m *manifest.Store, head *manifest.Entry) *chain {
	own := &segment{branch: head.Branch, inc: head.Incarnation, hi: head.Version}
	return &chain{m: m, head: head, own: own}
}

// maxForkDepth bounds the walk down fork points (a loop means a corrupt
// manifest).
const maxForkDepth = 1024

// load reads the ancestors: version 1 of each segment, down to one that
// is not a fork point.
func (c *chain) load(ctx context.Context) error {
	if c.loaded {
		return nil
	}
	seg := c.own
	for range maxForkDepth {
		var genesis *manifest.Entry
		if seg == c.own && c.head.Version == 1 {
			genesis = c.head
		} else {
			e, err := c.m.ReadVersion(ctx, seg.branch, seg.inc, 1)
			if err != nil {
				return fmt.Errorf("read the fork point of branch %q: %w", seg.branch, err)
			}
			genesis = e
		}
		if genesis.Kind != manifest.KindFork {
			c.root, c.loaded = seg, true
			return nil
		}
		f := genesis.Fork
		seg = &segment{branch: f.Branch, inc: f.Incarnation, hi: f.Version, child: seg}
	}
	return fmt.Errorf("%w: branch %q has more than %d fork points below it", manifest.ErrCorrupt, c.head.Branch, maxForkDepth)
}

// find returns the position of version v of incarnation inc of branch,
// with seg noSeg when it is not on the chain.
func (c *chain) find(ctx context.Context, branch string, inc, v uint64) (chainPos, error) {
	if branch == c.own.branch && inc == c.own.inc {
		if v == 0 || v > c.own.hi {
			return chainPos{seg: noSeg}, nil
		}
		return chainPos{seg: c.own, v: v}, nil
	}
	if err := c.load(ctx); err != nil {
		return chainPos{}, err
	}
	for s := c.root; s != nil && s != c.own; s = s.child {
		if s.branch == branch && s.inc == inc {
			if v == 0 || v > s.hi {
				return chainPos{seg: noSeg}, nil
			}
			return chainPos{seg: s, v: v}, nil
		}
	}
	return chainPos{seg: noSeg}, nil
}

// rootPos is the chain's first position: main's genesis.
func (c *chain) rootPos(ctx context.Context) (chainPos, error) {
	if err := c.load(ctx); err != nil {
		return chainPos{}, err
	}
	return chainPos{seg: c.root, v: 1}, nil
}

// normalize moves a position at the end of an ancestor segment to the
// fork point above it (the same commit), so the next step is always in
// the position's own segment.
func (c *chain) normalize(p chainPos) chainPos {
	for p.seg != c.own && p.seg.child != nil && p.v >= p.seg.hi {
		p = chainPos{seg: p.seg.child, v: 1, commit: p.commit}
	}
	return p
}

// atOrBefore reports whether position p is at or before version v of the
// own segment.
func (c *chain) atOrBefore(p chainPos, v uint64) bool {
	return p.seg != c.own || p.v <= v
}

func (c *chain) position(p chainPos) position {
	return position{Branch: p.seg.branch, Inc: p.seg.inc, V: p.v, Commit: p.commit}
}

// plan is the commits a poll walks: commits[i] at pos[i] with its first
// parent parents[i]; parent is the entry at the starting position; more
// says commits remain beyond the last (up to the cut).
type plan struct {
	parent  *manifest.Entry
	commits []*manifest.Entry
	parents []*manifest.Entry
	pos     []chainPos
	more    bool
}

// steps reads the commits after position at (normalized), up to version
// cut of the own segment, at most max of them: one ranged read per
// segment crossed (the starting position's version included, as the
// first parent), and the head is never read again.
func (c *chain) steps(ctx context.Context, at chainPos, cut uint64, max int) (*plan, error) {
	type span struct {
		seg    *segment
		lo, hi uint64
	}
	var spans []span
	n := 0
	seg, v := at.seg, at.v
	for n < max {
		end := seg.hi
		if seg == c.own {
			end = cut
		}
		if v < end {
			take := min(end-v, uint64(max-n))
			spans = append(spans, span{seg, v, v + take})
			n += int(take)
			v += take
			if v < end {
				break
			}
		}
		if seg == c.own {
			break
		}
		seg, v = seg.child, 1
	}
	p := &plan{}
	if n == max {
		rest := c.normalize(chainPos{seg: seg, v: v})
		p.more = !(rest.seg == c.own && rest.v >= cut)
	}
	if len(spans) == 0 {
		e, err := c.entryAt(ctx, at)
		if err != nil {
			return nil, err
		}
		p.parent = e
		return p, nil
	}
	for i, sp := range spans {
		es, err := c.read(ctx, sp.seg, sp.lo, sp.hi)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			p.parent = es[0]
		}
		for j := 1; j < len(es); j++ {
			p.commits = append(p.commits, es[j])
			p.parents = append(p.parents, es[j-1])
			p.pos = append(p.pos, chainPos{seg: sp.seg, v: es[j].Version, commit: es[j].Head})
		}
	}
	return p, nil
}

// read returns versions lo..hi of a segment, the head from memory.
func (c *chain) read(ctx context.Context, s *segment, lo, hi uint64) ([]*manifest.Entry, error) {
	withHead := s == c.own && hi == c.head.Version
	if withHead {
		hi--
	}
	var es []*manifest.Entry
	if hi >= lo {
		var err error
		if es, err = c.m.Range(ctx, s.branch, s.inc, lo, hi); err != nil {
			return nil, fmt.Errorf("read the history of branch %q: %w", s.branch, err)
		}
	}
	if withHead {
		es = append(es, c.head)
	}
	return es, nil
}

// entryAt reads the version at one position (a pruned one as its hollow
// entry).
func (c *chain) entryAt(ctx context.Context, p chainPos) (*manifest.Entry, error) {
	es, err := c.read(ctx, p.seg, p.v, p.v)
	if err != nil {
		return nil, err
	}
	return es[0], nil
}
