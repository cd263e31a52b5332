package sim

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"regexp"
	"strings"
)

// batchPct is the share (in percent) of operations that are a concurrent
// batch: 2 or 3 clients' operations at once, interleaved by the scheduler.
const batchPct = 5

// batchOp draws a batch of 2..3 operations, one per distinct client. Its
// members are the writers and reads that may run beside each other in one
// process: loads, mutations, branch create and delete, merges, optimize,
// and reads. Cleanup, repair, stray commits and restarts stay alone.
func (s *sim) batchOp(r *rand.Rand, w *world) *op {
	k := 2
	if r.IntN(3) == 0 {
		k = 3
	}
	names := w.branchNames()
	who := r.Perm(clients)[:k]
	b := &op{client: -4}
	var descs []string
	// a batch never both creates or deletes a branch and merges it: the
	// merge's pair would depend on the order (the oracle models a branch's
	// merges with its parent only)
	created, merged := map[string]bool{}, map[string]bool{}
	for _, c := range who {
		br := names[r.IntN(len(names))]
		if r.IntN(3) == 0 {
			br = "main"
		}
		user := userBranches[r.IntN(len(userBranches))]
		var o *op
		switch x := r.IntN(100); {
		case x < 25:
			o = loadOp(r, br)
		case x < 50:
			o = mutateOp(r, br)
		case x < 58:
			o = createOp(user, forkSource(r, names, user))
		case x < 63:
			o = deleteOp(user)
		case x < 73:
			o = s.mergeWithParent(user, true)
		case x < 78:
			o = s.mergeWithParent(user, false)
		case x < 80:
			o = optimizeOp(br)
		case x < 82:
			s.schemaK++
			o = schemaOp(s.schemaK, false)
		case x < 90:
			o = queryOp(r, br)
		case x < 95:
			o = readOp(br)
		default:
			o = exportOp(br)
		}
		switch {
		case o.create || o.deletes != "":
			n := o.deletes
			if o.create {
				n = user
			}
			if merged[n] {
				o = readOp(n)
			}
			created[n] = true
		case o.merges != "":
			if created[o.merges] || !s.everywhere(o.merges) {
				o = readOp(o.merges)
			}
			merged[o.merges] = true
		}
		o.client = c
		b.write = b.write || o.write
		b.batch = append(b.batch, o)
		descs = append(descs, fmt.Sprintf("c%d %s", c, o.desc))
	}
	b.desc = "concurrently: " + strings.Join(descs, " | ")
	return b
}

// doBatch runs a batch's operations concurrently under the scheduler and
// advances the oracle by every serialization of them that the outcomes
// fit: for some order, each write's outcome must fit the model applied in
// that order (a write a concurrent writer beat is refused and changes
// nothing), and each read must equal the state at its place in it. A batch
// arms no fault.
func (s *sim) doBatch(ctx context.Context, o *op) error {
	fns := make([]func(context.Context) batchRun, len(o.batch))
	for i, sub := range o.batch {
		g := s.clients[sub.client]
		if sub.write {
			fns[i] = func(c context.Context) batchRun {
				res, err := sub.exec(c, g)
				return batchRun{res: res, err: err}
			}
		} else {
			fns[i] = func(c context.Context) batchRun {
				got, err := sub.read(c, g)
				return batchRun{got: got, err: err}
			}
		}
	}
	s.spy.reset()
	rng := rand.New(rand.NewPCG(s.seed, uint64(s.step)^0xba7c4))
	outs, order, err := s.sch.run(ctx, rng, false, fns)
	s.inj.Reset()
	if err != nil {
		s.logf("%s", o.desc)
		return s.failf("%s: %v", o.desc, err)
	}
	fired := s.spy.fired()
	s.logf("concurrently (%d storage requests, schedule %s):", len(order), digest(order))
	outcomes := make([]string, len(o.batch))
	for i, sub := range o.batch {
		out := outs[i]
		if out.err != nil {
			if msg := leak(out.err); msg != "" {
				return s.failf("%s: error message carries %q: %v", sub.desc, msg, out.err)
			}
		}
		line := fmt.Sprintf("  c%d %s", sub.client, sub.desc)
		if sub.write {
			outcomes[i] = outcomeOf(out.err, false)
			s.noteSchema(sub, outcomes[i], fired)
			line += s.outcomeLine(outcomes[i], out.res, out.err)
		} else if out.err != nil {
			line += " -> refused (" + errClass(out.err) + ")"
		} else {
			line += " -> " + out.got
		}
		s.logf("%s", line)
	}
	s.ghosts = false
	for i, sub := range o.batch {
		if sub.create && errClass(outs[i].err) == "schema-locked" {
			s.ghosts = true
		}
	}
	defer func() { s.ghosts = false }()
	var all []*world
	var why []string
	contents := make([][]data, len(o.batch))
	for _, perm := range permutations(len(o.batch)) {
		ws := s.worlds
		got := make([][]data, len(o.batch))
		for _, i := range perm {
			sub, out := o.batch[i], outs[i]
			if sub.write {
				next, cs, w := s.advance(ws, sub, outcomes[i], out.res, out.err, fired, true)
				ws = dedupe(next)
				got[i] = cs
				if len(ws) == 0 {
					why = append(why, fmt.Sprintf("order %v: c%d %s: %s", perm, sub.client, sub.desc, strings.Join(w, "; ")))
				}
			} else {
				var keep []*world
				for _, w := range ws {
					if s.readFits(w, sub, out.got, out.err) {
						keep = append(keep, w)
					}
				}
				if ws = keep; len(ws) == 0 {
					why = append(why, fmt.Sprintf("order %v: c%d %s answered %q (err %v), no world before it has that", perm, sub.client, sub.desc, out.got, out.err))
				}
			}
			if len(ws) == 0 {
				break
			}
		}
		if len(ws) > 0 {
			all = append(all, ws...)
			for i := range got {
				contents[i] = append(contents[i], got[i]...)
			}
		}
	}
	if len(all) == 0 {
		return s.failf("%s: no serialization fits the outcomes:\n    %s", o.desc, strings.Join(why, "\n    "))
	}
	s.worlds = dedupe(all)
	for i, sub := range o.batch {
		c, cs := outs[i].res.commit, contents[i]
		if !sub.write || c == "" || c == maybeCommit || len(cs) == 0 {
			continue
		}
		same := true
		for _, d := range cs {
			same = same && equalData(d, cs[0])
		}
		if same {
			s.remember(c, cs[0])
		}
	}
	return nil
}

// everywhere says whether branch n is live in every world.
func (s *sim) everywhere(n string) bool {
	for _, w := range s.worlds {
		if w.br[n] == nil {
			return false
		}
	}
	return true
}

// readFits says whether a read's answer (or failure) fits world w.
func (s *sim) readFits(w *world, o *op, got string, err error) bool {
	want, ok := o.expect(w)
	switch {
	case err == nil && ok && want == got:
		return true
	case err != nil && !ok:
		return true
	case err != nil && o.travel != "" && s.knownAt[o.travel] <= s.lastCleanup:
		return true
	}
	return false
}

// permutations lists every order of 0..n-1.
func permutations(n int) [][]int {
	if n == 0 {
		return [][]int{nil}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for i := 0; i <= len(p); i++ {
			q := append(append(append([]int(nil), p[:i]...), n-1), p[i:]...)
			out = append(out, q)
		}
	}
	return out
}

// digest shortens a release order for the history: short ones whole,
// long ones by length and hash.
func digest(order string) string {
	if len(order) <= 48 {
		return order
	}
	h := fnv.New32a()
	h.Write([]byte(order))
	return fmt.Sprintf("%s...%08x", order[:24], h.Sum32())
}

// ulidLike matches a ULID in a message (upper or lower case).
var ulidLike = regexp.MustCompile(`\b[0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{26}\b`)

// cid names a commit for the history: "@n", n in the order the run first
// named it, so that two runs of one seed print the same history although
// ids are ULIDs (wall clock and entropy).
func (s *sim) cid(id string) string {
	if id == "" {
		return ""
	}
	if s.cids == nil {
		s.cids = map[string]string{}
	}
	n, ok := s.cids[id]
	if !ok {
		n = fmt.Sprintf("@%d", len(s.cids)+1)
		s.cids[id] = n
	}
	return n
}

// scrub replaces the ULIDs of a message with their history names (a
// commit's "@n"; others "<id>").
func (s *sim) scrub(m string) string {
	return ulidLike.ReplaceAllStringFunc(m, func(id string) string {
		if n, ok := s.cids[id]; ok {
			return n
		}
		return "<id>"
	})
}
