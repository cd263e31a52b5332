package cleanup

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/manifest"
	"github.com/omnigraph-go/omnigraph/recovery"
)

// Pruning the manifest history.
//
// Every commit leaves one manifest version, so without pruning the
// __manifest history grows with the number of commits whatever the
// retention. Cleanup prunes the versions beyond the retention of each
// live branch that is not a fork (main: its genesis is a commit), down
// from its floor: their commits move to the archive and their objects are
// emptied (manifest.Prune), so `commit list` still lists them, and
// reading their data says they were cleaned up.
//
// A merge reads the commit graph from both heads down to their common
// ancestors (graph/merge/base.go), and one step below them, so the floor
// of an incarnation is the lowest of:
//
//   - the oldest version within the retention;
//   - one below the fork point of every live branch forked from it: a
//     merge of that branch walks it down to there;
//   - one below every version of it a merge may reach another way: the
//     fork point of a branch whose commits were merged into a live branch
//     and which was deleted since (its own history is never pruned, and
//     leads back to here).
//
// A named branch (a fork) is never pruned: a merge of it walks its whole
// history down to its fork point. Versions below the floor that the
// retention pins (the genesis, merge bases) are kept too, and so is every
// version a recovery sidecar on the store names (sparedBySidecars). When a merged
// commit cannot be found at all, nothing is pruned.

// incarnation is one live branch incarnation's walked history.
type incarnation struct {
	ref     manifest.Ref
	entries []*manifest.Entry // newest first
	floor   uint64            // versions below it may be pruned
}

func (i *incarnation) genesis() *manifest.Entry {
	if len(i.entries) == 0 {
		return nil
	}
	return i.entries[len(i.entries)-1]
}

type incKey struct {
	branch string
	inc    uint64
}

type history struct {
	live  map[incKey]*incarnation
	order []*incarnation
	// dead indexes the versions of incarnations that are not live (read
	// once, when a merged commit is not on a live one).
	dead      map[incKey][]*manifest.Entry
	deadByID  map[string]*manifest.Entry
	deadRead  bool
	deadSeen  map[incKey]uint64 // the highest version already followed
	processed map[*manifest.Entry]bool
}

func newHistory() *history {
	return &history{live: map[incKey]*incarnation{}, deadSeen: map[incKey]uint64{}, processed: map[*manifest.Entry]bool{}}
}

func (h *history) add(r manifest.Ref) *incarnation {
	i := &incarnation{ref: r, floor: math.MaxUint64}
	h.live[incKey{r.Branch, r.Incarnation}] = i
	h.order = append(h.order, i)
	return i
}

// forked reports whether the incarnation is a named branch's (never
// pruned).
func (i *incarnation) forked() bool {
	g := i.genesis()
	return g == nil || g.Kind == manifest.KindFork
}

// readDead indexes every version of every incarnation that is not live.
func (h *history) readDead(ctx context.Context, man *manifest.Store) error {
	if h.deadRead {
		return nil
	}
	h.deadRead = true
	h.dead = map[incKey][]*manifest.Entry{}
	h.deadByID = map[string]*manifest.Entry{}
	objs, err := backend.ListAll(ctx, man.Adapter(), manifest.Dir+"branches/")
	if err != nil {
		return fmt.Errorf("list the manifest history: %w", err)
	}
	for _, o := range objs {
		b, inc, v, err := manifest.ParseVersionKey(o.Key)
		if err != nil {
			return err
		}
		k := incKey{b, inc}
		if h.live[k] != nil || o.Size == 0 {
			continue
		}
		e, err := man.ReadVersion(ctx, b, inc, v)
		if err != nil {
			return err
		}
		h.dead[k] = append(h.dead[k], e)
		if e.Commit != nil {
			h.deadByID[e.Commit.ID] = e
		}
	}
	return nil
}

// reach records that a merge walk may reach version v of incarnation k
// and walk on below it.
func (h *history) reach(ctx context.Context, man *manifest.Store, byID map[string]*manifest.Entry, k incKey, v uint64) (ok bool, err error) {
	if i := h.live[k]; i != nil {
		if !i.forked() && v > 0 {
			i.floor = min(i.floor, v-1)
		}
		return true, nil
	}
	// A dead incarnation: follow its merges and its fork point.
	if h.deadSeen[k] >= v {
		return true, nil
	}
	h.deadSeen[k] = v
	if err := h.readDead(ctx, man); err != nil {
		return false, err
	}
	for _, e := range h.dead[k] {
		if e.Version > v {
			continue
		}
		if e.Kind == manifest.KindFork {
			if ok, err := h.reach(ctx, man, byID, incKey{e.Fork.Branch, e.Fork.Incarnation}, e.Fork.Version); err != nil || !ok {
				return ok, err
			}
			continue
		}
		if e.Commit != nil {
			for _, id := range e.Commit.Parents[min(1, len(e.Commit.Parents)):] {
				if ok, err := h.reachID(ctx, man, byID, id); err != nil || !ok {
					return ok, err
				}
			}
		}
	}
	return true, nil
}

// reachID is reach for a merged commit by id; ok is false when it is
// nowhere.
func (h *history) reachID(ctx context.Context, man *manifest.Store, byID map[string]*manifest.Entry, id string) (bool, error) {
	e := byID[id]
	if e == nil {
		if err := h.readDead(ctx, man); err != nil {
			return false, err
		}
		e = h.deadByID[id]
	}
	if e == nil {
		return false, nil
	}
	return h.reach(ctx, man, byID, incKey{e.Branch, e.Incarnation}, e.Version)
}

// prunable returns, per live incarnation that is not a fork, the versions
// below its floor that nothing pins.
func (h *history) prunable(ctx context.Context, man *manifest.Store, byID map[string]*manifest.Entry, pinned map[*manifest.Entry]bool) ([][]*manifest.Entry, error) {
	// Forks of live branches.
	for _, i := range h.order {
		if g := i.genesis(); g != nil && g.Kind == manifest.KindFork {
			if ok, err := h.reach(ctx, man, byID, incKey{g.Fork.Branch, g.Fork.Incarnation}, g.Fork.Version); err != nil || !ok {
				return nil, err
			}
		}
	}
	// Merges a walk may cross: every merge of a fork, and of a pruned
	// incarnation every merge at or above its floor; a lower floor
	// brings more merges in, so repeat until nothing moves.
	for changed := true; changed; {
		changed = false
		for _, i := range h.order {
			for _, e := range i.entries {
				if h.processed[e] || e.Commit == nil || len(e.Commit.Parents) < 2 || (!i.forked() && e.Version < i.floor) {
					continue
				}
				h.processed[e] = true
				changed = true
				for _, id := range e.Commit.Parents[1:] {
					ok, err := h.reachID(ctx, man, byID, id)
					if err != nil {
						return nil, err
					}
					if !ok {
						return nil, nil // a merged commit is nowhere: prune nothing
					}
				}
			}
		}
	}
	var out [][]*manifest.Entry
	for _, i := range h.order {
		if i.forked() {
			continue
		}
		var vs []*manifest.Entry
		for _, e := range i.entries {
			if e.Version < i.floor && e.Version > 1 && e.Version < i.ref.Version && !pinned[e] && !e.Pruned && e.Kind == manifest.KindCommit {
				vs = append(vs, e)
			}
		}
		if len(vs) > 0 {
			sort.Slice(vs, func(a, b int) bool { return vs[a].Version < vs[b].Version })
			out = append(out, vs)
		}
	}
	return out, nil
}

// pruneHistory prunes (or with Confirm unset counts) the versions.
func pruneHistory(ctx context.Context, man *manifest.Store, prune [][]*manifest.Entry, opts Options, now time.Time, res *Result) error {
	for _, vs := range prune {
		var bytes int64
		for _, e := range vs {
			bytes += manifest.PrunedSize(e)
		}
		if opts.Confirm {
			err := man.Prune(ctx, vs, manifest.PruneOptions{Now: now, BeforeWrite: opts.BeforeDelete})
			if err != nil {
				return fmt.Errorf("prune the history of branch %s: %w", vs[0].Branch, err)
			}
		}
		res.History.Versions += len(vs)
		res.History.Bytes += bytes
		res.History.Branches = append(res.History.Branches, vs[0].Branch)
		res.Bytes += bytes
	}
	sort.Strings(res.History.Branches)
	return nil
}

// sparedBySidecars drops from prune every version a recovery sidecar on
// the store names (its planned version and the head it prepared
// against). Cleanup refuses while an intent is pending, but a sidecar
// this process retired (its write completed) may still be on the store,
// and the next read-write open after a crash assesses it by reading the
// version it published.
func sparedBySidecars(ctx context.Context, store backend.StorageAdapter, prune [][]*manifest.Entry) ([][]*manifest.Entry, error) {
	if len(prune) == 0 {
		return prune, nil
	}
	keys, err := recovery.Pending(ctx, store)
	if err != nil {
		return nil, err
	}
	spare := map[incKey]map[uint64]bool{}
	add := func(b string, inc, v uint64) {
		k := incKey{b, inc}
		if spare[k] == nil {
			spare[k] = map[uint64]bool{}
		}
		spare[k][v] = true
	}
	for _, k := range keys {
		sc, err := recovery.Read(ctx, store, k)
		if backend.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		in := &sc.Intent
		if in.Entry != nil {
			add(in.Entry.Branch, in.Entry.Incarnation, in.Entry.Version)
		}
		add(in.Token.Branch, in.Token.Incarnation, in.Token.Head)
	}
	var out [][]*manifest.Entry
	for _, vs := range prune {
		var keep []*manifest.Entry
		for _, e := range vs {
			if !spare[incKey{e.Branch, e.Incarnation}][e.Version] {
				keep = append(keep, e)
			}
		}
		if len(keep) > 0 {
			out = append(out, keep)
		}
	}
	return out, nil
}
