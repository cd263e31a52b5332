package sim

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// The oracle: a plain in-memory model of every branch's entities and commit
// history. A world is one possible state of the whole graph; the simulator
// keeps a set of worlds, because an operation whose outcome is unknown
// (a lost answer, a crash) leaves two possibilities until storage resolves
// them (see sim.settle).

// ent is one node or edge as the model holds it. Node ids are their @key.
type ent struct {
	src, dst string // edges only
	val      int32  // Person.age, Knows.w
	has      bool   // val is set (not NULL)
}

// kinds of entity, the first byte of an entity key "P/p1".
const (
	kPerson  = 'P'
	kCompany = 'C'
	kKnows   = 'K'
	kWorks   = 'W'
)

var tableOfKind = map[byte]string{kPerson: "node:Person", kCompany: "node:Company", kKnows: "edge:Knows", kWorks: "edge:WorksAt"}

func ekey(kind byte, id string) string { return string(kind) + "/" + id }

// data is one branch's entity set, by entity key.
type data map[string]ent

func (d data) clone() data { return maps.Clone(d) }

func (d data) String() string {
	keys := slices.Sorted(maps.Keys(d))
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(k)
		e := d[k]
		if e.src != "" {
			fmt.Fprintf(&b, "(%s>%s)", e.src, e.dst)
		}
		if e.has {
			fmt.Fprintf(&b, "=%d", e.val)
		}
	}
	return b.String()
}

func equalData(a, b data) bool { return maps.Equal(a, b) }

// dangling lists the edges of d whose endpoint is missing.
func (d data) dangling() []string {
	var out []string
	for k, e := range d {
		switch k[0] {
		case kKnows:
			if _, ok := d[ekey(kPerson, e.src)]; !ok {
				out = append(out, k)
			} else if _, ok := d[ekey(kPerson, e.dst)]; !ok {
				out = append(out, k)
			}
		case kWorks:
			if _, ok := d[ekey(kPerson, e.src)]; !ok {
				out = append(out, k)
			} else if _, ok := d[ekey(kCompany, e.dst)]; !ok {
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}

// cascade deletes node key k and every edge touching it.
func (d data) cascade(k string) {
	delete(d, k)
	id := k[2:]
	for ek, e := range d {
		switch ek[0] {
		case kKnows:
			if (k[0] == kPerson) && (e.src == id || e.dst == id) {
				delete(d, ek)
			}
		case kWorks:
			if (k[0] == kPerson && e.src == id) || (k[0] == kCompany && e.dst == id) {
				delete(d, ek)
			}
		}
	}
}

// branch is the model of one live branch.
type branch struct {
	data    data
	commits []string // oldest first, inherited ones included; "" is a commit whose id is not known yet
	// base is the content of the merge base of a merge between this branch
	// and its parent (its fork point, or its head at its last merge),
	// baseLen the length of commits then. A branch merges only with its
	// parent, so the base is always one of this branch's commits.
	base    data
	baseLen int
	// mainLen is the length of the parent's commits at that sync point
	// (main's for a branch of main), and by says what made it: 'f' the
	// fork, 'b' a merge of this branch into its parent, 'm' a merge of the
	// parent into this branch. Merges run one at a time, so
	// each sync point descends from the one before: the newest is the base.
	mainLen int
	by      byte
	// pendSync is the sync point a pending merge on this branch (its
	// target) makes when it rolls forward, for the branch named.
	pendSync *pendSync
	// pend is a write on this branch whose outcome is unknown and whose
	// publish did not land: storage shows data, and a recovery may still
	// roll the write forward (pend becomes data, with one commit), roll it
	// back (one rollback commit, data unchanged) or discard it (nothing).
	pend data
	// drift: a table of this branch has a version no commit pins (a stray
	// table commit): a write over it is refused until repair restores it.
	drift bool
	// parent is the branch this one forked from ("" for main): its merges
	// go to and from it, and the sync point above is with it.
	parent string
}

func (b *branch) clone() *branch {
	c := *b
	c.data = b.data.clone()
	c.commits = slices.Clone(b.commits)
	c.base = b.base.clone()
	if b.pend != nil {
		c.pend = b.pend.clone()
	}
	if b.pendSync != nil {
		ps := *b.pendSync
		ps.base = ps.base.clone()
		c.pendSync = &ps
	}
	return &c
}

// pendSync is the merge bookkeeping of a pending merge.
type pendSync struct {
	branch           string
	base             data
	baseLen, mainLen int
	by               byte
}

func (b *branch) setSync(base data, baseLen, mainLen int, by byte) {
	b.base, b.baseLen, b.mainLen, b.by = base.clone(), baseLen, mainLen, by
}

// resolutions are the three ways recovery can end a pending write on br.
func (w *world) resolutions(br string) []*world {
	forward, back, discard := w.clone(), w.clone(), w.clone()
	f := forward.br[br]
	f.data, f.pend = f.pend, nil
	f.commits = append(f.commits, "")
	if ps := f.pendSync; ps != nil {
		if u := forward.br[ps.branch]; u != nil {
			u.setSync(ps.base, ps.baseLen, ps.mainLen, ps.by)
		}
	}
	b := back.br[br]
	b.pend = nil
	b.commits = append(b.commits, "")
	discard.br[br].pend = nil
	for _, x := range []*world{forward, back, discard} {
		x.br[br].pendSync = nil
	}
	return []*world{forward, back, discard}
}

// resolved expands every pending write of w into its resolutions.
func (w *world) resolved() []*world {
	out := []*world{w}
	for _, n := range w.branchNames() {
		if w.br[n].pend == nil {
			continue
		}
		var next []*world
		for _, x := range out {
			next = append(next, x.resolutions(n)...)
		}
		out = next
	}
	return out
}

// world is one possible state of the graph.
type world struct {
	br map[string]*branch
}

func (w *world) clone() *world {
	c := &world{br: map[string]*branch{}}
	for n, b := range w.br {
		c.br[n] = b.clone()
	}
	return c
}

// fingerprint identifies a world for de-duplication.
func (w *world) fingerprint() string {
	var b strings.Builder
	for _, n := range slices.Sorted(maps.Keys(w.br)) {
		br := w.br[n]
		fmt.Fprintf(&b, "%s<%s[%s]{%s}base{%s}%d,%d%c", n, br.parent, strings.Join(br.commits, ","), br.data, br.base, br.baseLen, br.mainLen, br.by)
		if br.pend != nil {
			fmt.Fprintf(&b, "pend{%s}", br.pend)
		}
		if ps := br.pendSync; ps != nil {
			fmt.Fprintf(&b, "psync{%s %s %d,%d%c}", ps.branch, ps.base, ps.baseLen, ps.mainLen, ps.by)
		}
		if br.drift {
			b.WriteString("drift")
		}
		b.WriteByte(';')
	}
	return b.String()
}

func (w *world) branchNames() []string { return slices.Sorted(maps.Keys(w.br)) }

// commitRule says whether an acknowledged operation publishes a commit.
type commitRule int

const (
	commitMust commitRule = iota
	commitNever
	commitMaybe
)

// pred is what the model predicts an operation does in one world.
type pred struct {
	refuse string // "": it succeeds; else the class of refusal (errClass)
	// apply changes a clone of the world as a success would; commit is the
	// new commit id ("" when unknown), appended by the caller per rule.
	apply  func(w *world)
	branch string // the branch whose history a commit extends
	rule   commitRule
	// sync names the user branch whose sync point a merge moves (apply
	// moves it; a pending merge carries it in pendSync).
	sync string
	why  string
}

// threeWay merges src into tgt over base per entity, as graph/merge does:
// a side that did not change an entity keeps the other's; both changed to
// the same thing is a no-op; otherwise a conflict. Then every edge of the
// result must have its endpoints (orphan_edge).
func threeWay(base, src, tgt data) (data, []string) {
	out := tgt.clone()
	var conflicts []string
	keys := map[string]bool{}
	for _, d := range []data{base, src, tgt} {
		for k := range d {
			keys[k] = true
		}
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		b, inB := base[k]
		s, inS := src[k]
		t, inT := tgt[k]
		srcChanged := inB != inS || (inB && b != s)
		tgtChanged := inB != inT || (inB && b != t)
		switch {
		case !srcChanged:
		case !tgtChanged:
			if inS {
				out[k] = s
			} else {
				delete(out, k)
			}
		case inS == inT && (!inS || s == t):
		case !inB:
			conflicts = append(conflicts, "divergent_insert "+k)
		case !inS || !inT:
			conflicts = append(conflicts, "delete_vs_update "+k)
		default:
			conflicts = append(conflicts, "divergent_update "+k)
		}
	}
	if len(conflicts) > 0 {
		return nil, conflicts
	}
	for _, k := range out.dangling() {
		conflicts = append(conflicts, "orphan_edge "+k)
	}
	if len(conflicts) > 0 {
		return nil, conflicts
	}
	return out, nil
}
