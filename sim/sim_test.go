package sim

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/fault"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/clusterlock"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/internal/logtest"
	"github.com/omnigraph-go/omnigraph/recovery"
	"github.com/omnigraph-go/omnigraph/table"
)

var (
	seedFlag    = flag.Uint64("seed", 0, "sim: run only this seed (0: seeds 1..-seeds)")
	seedsFlag   = flag.Int("seeds", 200, "sim: how many seeds TestSimulation runs")
	opsFlag     = flag.Int("ops", 200, "sim: operations per seed")
	firstFlag   = flag.Uint64("first", 1, "sim: the first seed of TestSimulation")
	historyFlag = flag.Bool("history", false, "sim: log the history of every seed, passing or not")
	workersFlag = flag.Int("workers", 0, "sim: seeds run at once (0: GOMAXPROCS)")
	freshFlag   = flag.Int("fresh", 10, "sim: fresh seeds TestSimulation runs besides -first..-seeds, drawn from $OMNIGRAPH_SIM_FRESH (CI: the commit id) or the UTC date")
)

// freshSeeds returns n seeds no fixed range covers, drawn from salt: each
// CI run (each commit, each day) explores new seeds besides the fixed
// ones, and a failing one replays by its number alone (-seed=N).
func freshSeeds(salt string, n int) []uint64 {
	h := fnv.New64a()
	h.Write([]byte(salt))
	// Above the fixed range (1..200) and make soak's (1,000 on, by the
	// thousand): 10^9 up.
	base := 1_000_000_000 + h.Sum64()%1_000_000_000_000
	out := make([]uint64, n)
	for i := range out {
		out[i] = base + uint64(i)
	}
	return out
}

// freshSalt is what the fresh seeds are drawn from.
func freshSalt() string {
	if s := os.Getenv("OMNIGRAPH_SIM_FRESH"); s != "" {
		return s
	}
	return time.Now().UTC().Format(time.DateOnly)
}

// clients is how many read-write handles (logical clients) one simulated
// writer process holds; their operations interleave as the seed chooses.
const clients = 3

// maxWorlds bounds the oracle's open possibilities; beyond it the simulator
// restarts the process so that the recovery sweep resolves them.
const maxWorlds = 8

// fullEvery is how often (in operations) the whole commit history of every
// branch is compared; in between only the newest tailLen commits are.
const (
	fullEvery = 25
	tailLen   = 4
)

// sim is one seeded run.
type sim struct {
	seed uint64
	rng  *rand.Rand
	bug  *planted

	raw   *mem.Store
	inj   *fault.Injector
	spy   *spy
	sch   *sched
	store backend.StorageAdapter // sched(spy(inj(bug(raw))))
	// wstore is what the writer process's handles write through: its
	// lease's Guard over store (lease_test.go).
	wstore backend.StorageAdapter
	lclock *leaseClock
	view   *clockView // the writer process's clock
	lease  *clusterlock.Lease
	// nextView and nextLease: a lease a takeover acquired, for the next
	// process
	nextView  *clockView
	nextLease *clusterlock.Lease

	proc    *graph.Process
	clients []*graph.Graph
	ro      *graph.Graph // a read-only handle on the raw store, alongside

	worlds  []*world
	known   map[string]data // acknowledged commit id -> content
	audited map[string]bool // recovery audit rows already in the history
	knownAt map[string]int  // when a commit's content became known
	// lastCleanup is the step of the last cleanup.
	lastCleanup int
	restarted   bool            // the process restarted during this step
	seen        map[string]data // what the checks read, by branch, commit and version
	step        int
	history     []string

	clock time.Duration     // the simulated clock: total re-issue pauses
	skip  map[int]bool      // steps whose operation is drawn but not run
	cids  map[string]string // commit id -> its name in the history (cid)
	// schemaK is the number of extra properties the last schema apply
	// generated asked for; schemaLock: an apply that did not end well may
	// have left its lock (branch creates are refused until an apply ends).
	schemaK    int
	schemaLock bool
	// ghosts: a branch create of the current batch was withdrawn under a
	// schema lock (its branch was visible to the batch for a while).
	ghosts bool
	logbuf logSink
	log    *slog.Logger
}

// logSink collects a run's log lines.
type logSink struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *logSink) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// take returns and clears what was logged.
func (l *logSink) take() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.buf.String()
	l.buf.Reset()
	return out
}

// failure is a failed run: the seed, the history and why.
type failure struct {
	seed    uint64
	step    int
	ops     int
	bug     string
	history []string
	msg     string
	skip    map[int]bool
}

func (f *failure) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d failed at step %d: %s\n", f.seed, f.step, f.msg)
	b.WriteString("history:\n")
	for _, h := range f.history {
		b.WriteString("  " + h + "\n")
	}
	if f.bug == "" {
		fmt.Fprintf(&b, "replay: %s\n", f.replay())
	} else {
		fmt.Fprintf(&b, "planted bug %q\n", f.bug)
	}
	return b.String()
}

// replay is the command that replays the failure.
func (f *failure) replay() string {
	cmd := fmt.Sprintf("go test ./sim -run 'TestSimulation$' -seed=%d -ops=%d", f.seed, f.ops)
	if len(f.skip) > 0 {
		cmd += " -drop=" + formatSteps(f.skip)
	}
	return cmd + " -v"
}

func (s *sim) failf(format string, args ...any) error {
	return &failure{seed: s.seed, step: s.step, history: slices.Clone(s.history), msg: fmt.Sprintf(format, args...)}
}

func (s *sim) logf(format string, args ...any) {
	s.history = append(s.history, fmt.Sprintf("#%d ", s.step)+fmt.Sprintf(format, args...))
}

// run executes one seed of nops operations; bug (nil: none) plants a bug.
func run(seed uint64, nops int, bug *planted) (err error) {
	return runTraced(seed, nops, bug, nil)
}

// runTraced is run; trace, when set, receives the history of a passing run.
func runTraced(seed uint64, nops int, bug *planted, trace func([]string)) (err error) {
	var at func(*sim)
	if trace != nil {
		at = func(s *sim) { trace(s.history) }
	}
	return runSkipping(seed, nops, nil, bug, at)
}

// runSkipping is runTraced with the operations of the steps in skip drawn
// but not run (the shrinker's variants of a seed).
func runSkipping(seed uint64, nops int, skip map[int]bool, bug *planted, trace func(*sim)) (err error) {
	s := &sim{
		skip:    skip,
		seed:    seed,
		rng:     rand.New(rand.NewPCG(seed, seed^0x5eed)),
		bug:     bug,
		raw:     mem.New(),
		known:   map[string]data{},
		audited: map[string]bool{},
		knownAt: map[string]int{},
		seen:    map[string]data{},
		lclock:  newLeaseClock(),
	}
	defer func() { s.endLease(true) }() // the last process's heartbeats end with the run
	s.log = slog.New(slog.NewJSONHandler(&s.logbuf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	defer func() {
		if f, ok := err.(*failure); ok {
			f.ops = nops
			f.skip = skip
			if bug != nil {
				f.bug = bug.name
			}
		}
	}()
	var under backend.StorageAdapter = s.raw
	if bug != nil && bug.wrap != nil {
		under = bug.wrap(under)
	}
	s.inj = fault.New(under)
	s.spy = &spy{StorageAdapter: s.inj}
	s.sch = newSched(s.spy)
	s.store = s.sch
	ctx := context.Background()
	g, err := graph.Init(ctx, s.store, schema, graph.InitOptions{Actor: "init"})
	if err != nil {
		return s.failf("init: %v", err)
	}
	head, err := g.Snapshot(ctx, "main")
	if err != nil {
		return s.failf("init snapshot: %v", err)
	}
	s.known[head.CommitID()] = data{}
	s.worlds = []*world{{br: map[string]*branch{"main": {data: data{}, commits: []string{head.CommitID()}}}}}
	if err := g.Close(); err != nil {
		return s.failf("close: %v", err)
	}
	if s.ro, err = graph.Open(ctx, s.raw, graph.OpenOptions{ReadOnly: true}); err != nil {
		return s.failf("open read-only: %v", err)
	}
	s.tune(s.ro)
	if err := s.restart(false); err != nil {
		return err
	}
	if trace != nil {
		defer func() { trace(s) }()
	}
	for s.step = 1; s.step <= nops; s.step++ {
		if err := s.lclock.advance(stepTime, s.view, 2); err != nil {
			return s.failf("simulated clock: %v", err)
		}
		o := s.gen()
		if s.skip[s.step] {
			continue
		}
		s.restarted = false
		if err := s.do(ctx, o); err != nil {
			return err
		}
		full := s.step%fullEvery == 0 || s.step == nops
		if !o.write && !s.restarted && !full {
			continue // a read changed nothing to check
		}
		// A cleanup or a recovery may touch any version: read everything
		// again rather than what earlier checks read at the same heads.
		fresh := full || o.cleanup || s.restarted
		if err := s.settle(ctx, full, fresh); err != nil {
			return err
		}
	}
	return nil
}

// gen draws the next operation from the seed.
func (s *sim) gen() *op {
	r := s.rng
	w := s.worlds[r.IntN(len(s.worlds))]
	names := w.branchNames()
	br := names[r.IntN(len(names))]
	if r.IntN(3) == 0 {
		br = "main"
	}
	user := userBranches[r.IntN(len(userBranches))]
	if live := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == "main" }); len(live) > 0 && r.IntN(5) > 0 {
		user = live[r.IntN(len(live))] // mostly a branch that exists
	}
	if r.IntN(100) < batchPct {
		return s.batchOp(r, w)
	}
	var o *op
	drifted := false
	for _, b := range w.br {
		drifted = drifted || b.drift
	}
	switch x := r.IntN(100); {
	case drifted && x < 8:
		o = repairOp() // an operator notices drift soon
	case x < 22:
		o = loadOp(r, br)
	case x < 42:
		o = mutateOp(r, br)
	case x < 48:
		o = createOp(user, forkSource(r, names, user))
	case x < 52:
		o = deleteOp(user)
	case x < 62:
		o = s.mergeWithParent(user, true)
	case x < 66:
		o = optimizeOp(br)
	case x < 68:
		o = cleanupOp(1 + r.IntN(3))
	case x < 76:
		o = queryOp(r, br)
	case x < 80:
		o = readOp(br)
	case x < 82:
		o = exportOp(br)
	case x < 87:
		o = s.timeTravelOp(r, w)
	case x < 88:
		o = strayOp(s.raw)
	case x < 89:
		o = repairOp()
	case x < 90:
		s.schemaK++
		o = schemaOp(s.schemaK, true)
	case x < 91:
		o = &op{desc: "restart (clean)", client: -2}
	case x < 93:
		o = &op{desc: "restart (crash between operations)", client: -3}
	case x < 94:
		o = takeoverOp(r)
	default:
		o = s.mergeWithParent(user, false)
	}
	if o.client == 0 {
		o.client = r.IntN(clients)
		if !o.write && r.IntN(3) == 0 {
			o.client = -1
		}
	}
	return o
}

// forkSource draws the branch a new branch forks from: main mostly, else
// a live user branch (a branch of a branch).
func forkSource(r *rand.Rand, names []string, name string) string {
	var users []string
	for _, n := range names {
		if n != "main" && n != name {
			users = append(users, n)
		}
	}
	if len(users) == 0 || r.IntN(3) > 0 {
		return "main"
	}
	return users[r.IntN(len(users))]
}

// mergeWithParent is a merge of user with the branch it forked from, into
// that parent or from it; when the worlds disagree on the parent, a read
// of user instead.
func (s *sim) mergeWithParent(user string, intoParent bool) *op {
	parent := ""
	for _, w := range s.worlds {
		if b := w.br[user]; b != nil {
			if parent != "" && parent != b.parent {
				return readOp(user)
			}
			parent = b.parent
		}
	}
	if parent == "" {
		parent = "main" // no world has it: refused as not found
	}
	if intoParent {
		return mergeOp(user, parent, parent)
	}
	return mergeOp(parent, user, parent)
}

// timeTravelOp reads a branch as of one of its acknowledged commits.
func (s *sim) timeTravelOp(r *rand.Rand, w *world) *op {
	var ids []string
	for _, n := range w.branchNames() {
		for _, id := range w.br[n].commits {
			if s.known[id] != nil {
				ids = append(ids, id)
			}
		}
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	id := ids[r.IntN(len(ids))]
	want := s.known[id]
	return &op{
		travel: id,
		desc:   "time travel to " + s.cid(id),
		read: func(ctx context.Context, g *graph.Graph) (string, error) {
			snap, err := g.SnapshotAt(ctx, id)
			if err != nil {
				return "", err
			}
			d, err := readData(ctx, snap)
			return d.String(), err
		},
		expect: func(w *world) (string, bool) {
			for _, b := range w.br {
				if slices.Contains(b.commits, id) {
					return want.String(), true
				}
			}
			return "", false
		},
	}
}

func short(id string) string {
	if len(id) > 6 {
		return id[len(id)-6:]
	}
	return id
}

// do runs one operation against the engine and advances the oracle.
func (s *sim) do(ctx context.Context, o *op) error {
	switch o.client {
	case -2:
		s.logf("%s", o.desc)
		return s.restart(false)
	case -3:
		s.logf("%s", o.desc)
		return s.restart(true)
	case -4:
		return s.doBatch(ctx, o)
	case -5:
		return s.takeover(ctx, o)
	}
	g := s.ro
	who := "ro"
	if o.client >= 0 {
		g, who = s.clients[o.client], fmt.Sprintf("c%d", o.client)
	}
	if !o.write {
		got, err := o.read(ctx, g)
		if err != nil {
			if msg := leak(err); msg != "" {
				return s.failf("%s: error message carries %q: %v", o.desc, msg, err)
			}
		}
		for _, w := range s.worlds {
			want, ok := o.expect(w)
			if err == nil && ok && want == got {
				s.logf("%s %s -> %s", who, o.desc, got)
				return nil
			}
			if err != nil && !ok {
				s.logf("%s %s -> refused (%s)", who, o.desc, errClass(err))
				return nil
			}
		}
		if err != nil && o.travel != "" && s.knownAt[o.travel] <= s.lastCleanup {
			s.logf("%s %s -> refused after a cleanup (%s)", who, o.desc, errClass(err))
			return nil
		}
		s.logf("%s %s -> %q err=%v", who, o.desc, got, err)
		want, _ := o.expect(s.worlds[0])
		return s.failf("%s: the engine answered %q (err %v); the model expects %q (of %d worlds)", o.desc, got, err, want, len(s.worlds))
	}

	fdesc := ""
	if !o.stray {
		fdesc = s.armFault()
	}
	s.spy.reset()
	octx, cancel := s.spy.dies(ctx)
	var res written
	var err error
	if fdesc != "" {
		// A faulted write runs under the scheduler, alone: its own
		// concurrent requests (parallel table commits, the pre-arm check
		// beside Phase A) go one at a time in the seed's order, so the
		// fault hits the same request in every run of the seed.
		outs, _, serr := s.sch.run(octx, rand.New(rand.NewPCG(s.seed, uint64(s.step)^0x5c4ed)), true, []func(context.Context) batchRun{
			func(c context.Context) batchRun { r, e := o.exec(c, g); return batchRun{res: r, err: e} },
		})
		if serr != nil {
			cancel()
			return s.failf("%s: %v", o.desc, serr)
		}
		res, err = outs[0].res, outs[0].err
	} else {
		res, err = o.exec(octx, g)
	}
	cancel()
	fired := s.spy.fired()
	crashed := s.inj.Crashed()
	s.inj.Reset()
	if err != nil {
		if msg := leak(err); msg != "" {
			return s.failf("%s: error message carries %q: %v", o.desc, msg, err)
		}
	}
	outcome := outcomeOf(err, crashed)
	line := fmt.Sprintf("%s %s", who, o.desc)
	if fdesc != "" {
		line += " [fault " + fdesc
		if !fired {
			line += ", not fired"
		}
		line += "]"
	}
	line += s.outcomeLine(outcome, res, err)
	if crashed {
		line += " (process crashed)"
	}
	s.logf("%s", line)

	next, contents, why := s.advance(s.worlds, o, outcome, res, err, fired, false)
	s.noteSchema(o, outcome, fired)
	if len(next) == 0 {
		return s.failf("%s: the engine's outcome (%s, err %v) fits no model world: %s", o.desc, outcome, err, strings.Join(why, "; "))
	}
	s.worlds = dedupe(next)
	if res.commit != maybeCommit && len(contents) > 0 && !slices.ContainsFunc(contents, func(d data) bool { return !equalData(d, contents[0]) }) {
		s.remember(res.commit, contents[0])
	}
	if o.cleanup {
		// even a failed cleanup may have deleted part of what it meant to
		s.lastCleanup = s.step
	}
	if crashed {
		return s.restart(true)
	}
	return nil
}

// outcomeLine renders a write's outcome for the history.
func (s *sim) outcomeLine(outcome string, res written, err error) string {
	line := ""
	switch outcome {
	case "ok":
		line += " -> ok"
		if res.commit != "" {
			line += " commit " + s.cid(res.commit)
		}
		if res.extra != "" {
			line += " " + res.extra
		}
	case "unknown":
		line += " -> unknown: " + errClass(err)
	default:
		line += " -> refused: " + errClass(err) + ": " + firstLine(s.scrub(err.Error()))
	}
	return line
}

// outcomeOf classifies a write's result: ok, refused, or unknown (the
// caller never heard how the write ended).
func outcomeOf(err error, crashed bool) string {
	switch {
	case err == nil:
		return "ok"
	case crashed:
		// the process died: its caller never heard how the write ended
		return "unknown"
	case errors.Is(err, backend.ErrUnknown), errors.Is(err, graph.ErrRecoveryRequired):
		return "unknown"
	}
	return "refused"
}

// advance applies a write's engine outcome (ok, refused, unknown) to each
// world of ws: the worlds the outcome fits, the content of the acknowledged
// commit per world, and why the others do not fit. conc: the write ran in
// a concurrent batch, where a concurrent writer may make it fail without
// a fault (a refusal that must change nothing).
func (s *sim) advance(ws []*world, o *op, outcome string, res written, err error, fired, conc bool) (next []*world, contents []data, why []string) {
	// A write on a branch with a pending write first heals it in process
	// (roll forward only) or is refused.
	var cands []*world
	for _, w := range ws {
		if b := w.br[o.target]; o.target != "" && b != nil && b.pend != nil {
			cands = append(cands, w.resolutions(o.target)[0])
		}
		cands = append(cands, w)
	}
	for _, w := range cands {
		p := o.predict(w)
		if b := w.br[o.target]; o.target != "" && b != nil && b.pend != nil {
			p = pred{refuse: "recovery", why: "a write is pending on " + o.target}
		}
		switch outcome {
		case "ok":
			if p.refuse != "" {
				why = append(why, "the model refuses it: "+p.refuse+" "+p.why)
				continue
			}
			if p.rule == commitMust && res.commit == "" {
				why = append(why, "no commit was published; the model expects one")
				continue
			}
			if p.rule == commitNever && res.commit != "" {
				why = append(why, "a commit was published; the model expects none "+p.why)
				continue
			}
			n := w.clone()
			p.apply(n)
			if res.commit == maybeCommit {
				m := n.clone()
				m.br[p.branch].commits = append(m.br[p.branch].commits, "")
				next = append(next, m)
			} else if res.commit != "" {
				b := n.br[p.branch]
				b.commits = append(b.commits, res.commit)
				contents = append(contents, b.data)
			}
			next = append(next, n)
		case "refused":
			if o.stray {
				next = append(next, w) // a second stray finds its version taken
				continue
			}
			drifted := false
			for _, b := range w.br {
				drifted = drifted || b.drift
			}
			if drifted && (errClass(err) == "drift" || errClass(err) == "cleanup-refused") {
				next = append(next, w) // refused over drift, as it must be
				continue
			}
			if s.schemaLock && errClass(err) == "schema-locked" {
				next = append(next, w) // an interrupted apply's lock refuses branch creates
				continue
			}
			if conc && s.ghosts && (errClass(err) == "exists" || errClass(err) == "branches-exist") {
				// a create the schema lock withdrew was visible meanwhile
				next = append(next, w)
				continue
			}
			if conc && lostToConcurrent(err) && !(o.blind && headConflict(err)) {
				// a concurrent writer won; nothing changed (never a blind
				// insert's head: it queues behind the others and
				// re-prepares)
				next = append(next, w)
				continue
			}
			if p.refuse == "" && !fired && !(o.cleanup && errClass(err) == "cleanup-refused") {
				why = append(why, "the model accepts it ("+p.why+") and no fault fired")
				continue
			}
			if p.refuse != "" && !fired && !compatible(p.refuse, errClass(err)) {
				why = append(why, fmt.Sprintf("the model refuses it as %s (%s), the engine as %s", p.refuse, p.why, errClass(err)))
				continue
			}
			next = append(next, w)
		case "unknown":
			next = append(next, w)
			if p.refuse != "" {
				continue
			}
			n := w.clone()
			p.apply(n)
			switch p.rule {
			case commitMust, commitMaybe:
				// the publish landed, or it did not and recovery may
				// still end the write (pend)
				b := n.br[p.branch]
				pendingW := w.clone()
				pendingW.br[p.branch].pend = b.data.clone()
				if u := n.br[p.sync]; p.sync != "" && u != nil {
					pendingW.br[p.branch].pendSync = &pendSync{branch: p.sync, base: u.base.clone(), baseLen: u.baseLen, mainLen: u.mainLen, by: u.by}
				}
				next = append(next, pendingW)
				b.commits = append(b.commits, "")
				if p.rule == commitMaybe {
					next = append(next, w.clone())
				}
			}
			next = append(next, n)
		}
	}
	return next, contents, why
}

// noteSchema follows the schema-apply lock: an apply that ended with a
// commit removed any stale lock (it breaks them); one that did not end
// well may have left it.
func (s *sim) noteSchema(o *op, outcome string, fired bool) {
	if !o.schema {
		return
	}
	switch {
	case outcome == "ok":
		s.schemaLock = false
	case outcome == "unknown" || fired:
		s.schemaLock = true
	}
}

// remember records the content of commit id, for time travel.
func (s *sim) remember(id string, d data) {
	s.known[id] = d.clone()
	s.knownAt[id] = s.step
}

func firstLine(m string) string {
	if len(m) > 160 {
		m = m[:160] + "..."
	}
	return m
}

func dedupe(ws []*world) []*world {
	seen := map[string]bool{}
	var out []*world
	for _, w := range ws {
		f := w.fingerprint()
		if !seen[f] {
			seen[f] = true
			out = append(out, w)
		}
	}
	return out
}

// armFault draws the fault schedule of one write from the seed.
func (s *sim) armFault() string {
	r := s.rng
	if s.bug != nil && s.bug.faults != nil {
		return s.bug.faults(r, s.inj)
	}
	if r.IntN(100) >= 35 {
		return ""
	}
	classes := []fault.Class{fault.Put, fault.CondPut, fault.CondPut, fault.Delete}
	names := map[fault.Class]string{fault.Put: "Put", fault.CondPut: "CondPut", fault.Delete: "Delete"}
	c := classes[r.IntN(len(classes))]
	n := 1 + r.IntN(6)
	k := 1 + r.IntN(12)
	switch r.IntN(7) {
	case 0:
		s.inj.FailNth(c, n, backend.KindTransient)
		return fmt.Sprintf("transient %s#%d", names[c], n)
	case 1:
		s.inj.Throttle(c, n)
		return fmt.Sprintf("throttle %s#%d", names[c], n)
	case 2:
		s.inj.LoseAnswer(c, n)
		return fmt.Sprintf("lost answer %s#%d", names[c], n)
	case 3:
		s.inj.FailNth(c, n, backend.KindUnknown)
		return fmt.Sprintf("unknown (not applied) %s#%d", names[c], n)
	case 4:
		s.inj.CrashAtWrite(k)
		return fmt.Sprintf("crash at write %d", k)
	case 5:
		s.inj.CrashAfterWrite(k)
		return fmt.Sprintf("crash after write %d", k)
	default:
		n := r.IntN(4)
		s.inj.CrashDeletePrefixAfter(n)
		return fmt.Sprintf("partial delete-prefix after %d", n)
	}
}

// restart ends the writer process (cleanly: its handles are closed; or by a
// crash: they are dropped with everything the process held) and starts a
// new one: a fresh graph.Process, fresh handles; the first read-write open
// runs the recovery sweep. A crash may strike the sweep itself.
func (s *sim) restart(crash bool) error {
	ctx := context.Background()
	if !crash {
		for _, c := range s.clients {
			if err := c.Close(); err != nil {
				return s.failf("close: %v", err)
			}
		}
	}
	s.clients = nil
	s.restarted = true
	if err := s.endLease(crash); err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		s.proc = graph.NewProcess()
		// Two clients that reach a branch's write queue with no storage
		// request between them take their turns in the seed's order.
		s.proc.SetQueueHook(s.sch.queued)
		s.inj.Reset()
		if err := s.startLease(ctx); err != nil {
			return err
		}
		fdesc := ""
		if crash && attempt < 3 && s.rng.IntN(4) == 0 {
			k := 1 + s.rng.IntN(6)
			s.inj.CrashAtWrite(k)
			fdesc = fmt.Sprintf(" [fault crash at write %d]", k)
		}
		octx, cancel := s.spy.dies(ctx)
		g, err := graph.Open(octx, s.wstore, graph.OpenOptions{Actor: "c0", Process: s.proc})
		cancel()
		crashed := s.inj.Crashed()
		s.inj.Reset()
		if err == nil && !crashed {
			s.tune(g)
			s.logf("reopen%s -> ok%s", fdesc, s.audits(ctx))
			s.clients = append(s.clients, g)
			break
		}
		if err != nil {
			if msg := leak(err); msg != "" {
				return s.failf("reopen: error message carries %q: %v", msg, err)
			}
		}
		if !crashed && errors.Is(err, recovery.ErrForeign) && attempt < 3 {
			// Foreign table state under an intent: the open fails closed
			// (by design); the operator runs repair --confirm.
			s.logf("reopen -> refused: foreign table state under an intent; repair --confirm")
			if err := s.repairAtOpen(ctx); err != nil {
				return err
			}
			// The repairing process exits cleanly, so the next attempt's
			// process finds the lock free. (Leaving it held raced the new
			// process's takeover wait against this one's live heartbeats
			// in real time: TestSameSeedSameHistory, seed 29.)
			if err := s.endLease(false); err != nil {
				return err
			}
			continue
		}
		if !crashed {
			return s.failf("reopen after a restart: %v", err)
		}
		if err := s.endLease(true); err != nil { // the process died in its sweep
			return err
		}
		s.logf("reopen%s -> crashed during the sweep (%v)", fdesc, errClass(err))
	}
	for i := 1; i < clients; i++ {
		g, err := graph.Open(ctx, s.wstore, graph.OpenOptions{Actor: fmt.Sprintf("c%d", i), Process: s.proc})
		if err != nil {
			return s.failf("open client %d: %v", i, err)
		}
		s.tune(g)
		s.clients = append(s.clients, g)
	}
	return nil
}

// repairAtOpen runs repair --confirm through OpenForRepair, as an operator
// would when a read-write open fails closed, and advances the oracle as
// repairOp does.
func (s *sim) repairAtOpen(ctx context.Context) error {
	g, err := graph.OpenForRepair(ctx, s.wstore, graph.OpenOptions{Actor: "operator", Process: s.proc})
	if err != nil {
		return s.failf("open for repair: %v", err)
	}
	s.tune(g)
	rep, err := g.Repair(ctx, true)
	if err != nil {
		return s.failf("repair: %v", err)
	}
	s.logf("repair -> applied=%v drift=%d recovered=%d%s", rep.Applied, len(rep.Drift), len(rep.Recovered), s.audits(ctx))
	var next []*world
	for _, w := range s.worlds {
		n := w.clone()
		for _, b := range n.br {
			b.drift = false
		}
		m := n.clone()
		m.br["main"].commits = append(m.br["main"].commits, "")
		next = append(next, n, m)
	}
	s.worlds = dedupe(next)
	return nil
}

// audits describes the recovery audit rows not reported before.
func (s *sim) audits(ctx context.Context) string {
	rs, err := recovery.Audits(ctx, s.raw)
	if err != nil {
		return fmt.Sprintf("; audit: %v", err)
	}
	var out []string
	for _, r := range rs {
		if s.audited[r.OperationID] {
			continue
		}
		s.audited[r.OperationID] = true
		out = append(out, fmt.Sprintf("%s %s %s on %s commit %s", r.WriterKind, r.RecoveryKind, r.Classification, r.Branch, s.cid(r.CommitID)))
	}
	if len(out) == 0 {
		return ""
	}
	return "; recovered: " + strings.Join(out, "; ")
}

// tune puts a handle on the simulated clock (publish re-issue pauses
// advance it instead of sleeping) and sends its publish logs to the run's
// log, which settle scans.
func (s *sim) tune(g *graph.Graph) {
	// Open's head read is the read point of the handle's first snapshot of
	// its branch, however long after the open that snapshot is taken (see
	// docs/dev/simulation.md, "Findings"): consume it here, so that every
	// operation reads the current head.
	if _, err := g.Snapshot(context.Background(), g.CurrentBranch()); err != nil {
		s.logf("consume the open head: %v", err)
	}
	g.Manifest().SetSleeper(func(ctx context.Context, d time.Duration) error {
		s.clock += d
		return ctx.Err()
	})
	g.Manifest().SetLogger(s.log)
}

// observed is what storage holds, read through the read-only handle.
type observed struct {
	br map[string]*obsBranch
}

type obsBranch struct {
	data    data
	commits []string // oldest first; only the newest tailLen unless full
	full    bool
}

func (s *sim) observe(ctx context.Context, full, fresh bool) (*observed, error) {
	bs, err := s.ro.Branches(ctx)
	if err != nil {
		return nil, fmt.Errorf("branches: %w", err)
	}
	o := &observed{br: map[string]*obsBranch{}}
	for _, b := range bs {
		snap, err := s.ro.Snapshot(ctx, b.Name)
		if err != nil {
			return nil, fmt.Errorf("snapshot %s: %w", b.Name, err)
		}
		ck := fmt.Sprintf("%s|%s|%d", b.Name, snap.CommitID(), snap.Version())
		d := s.seen[ck]
		if fresh || d == nil {
			if d, err = readData(ctx, snap); err != nil {
				return nil, fmt.Errorf("read %s: %w", b.Name, err)
			}
			s.seen[ck] = d
		}
		limit := tailLen
		if full {
			limit = 0
		}
		cs, err := s.ro.Commits(ctx, b.Name, limit)
		if err != nil {
			return nil, fmt.Errorf("commits of %s: %w", b.Name, err)
		}
		if len(cs) == 0 || cs[0].ID != snap.CommitID() {
			return nil, fmt.Errorf("commits of %s do not start at its head", b.Name)
		}
		ob := &obsBranch{data: d, full: full}
		seen := map[string]bool{}
		for i := len(cs) - 1; i >= 0; i-- {
			if seen[cs[i].ID] {
				return nil, fmt.Errorf("commit %s appears twice in the history of %s", short(cs[i].ID), b.Name)
			}
			seen[cs[i].ID] = true
			ob.commits = append(ob.commits, cs[i].ID)
		}
		o.br[b.Name] = ob
	}
	return o, nil
}

// matches reports whether world w is what storage shows, and fills the
// commit ids w did not know.
func (w *world) matches(o *observed) (bool, string) {
	if len(w.br) != len(o.br) {
		return false, fmt.Sprintf("branches %v, storage has %d", w.branchNames(), len(o.br))
	}
	for n, b := range w.br {
		ob := o.br[n]
		if ob == nil {
			return false, "branch " + n + " is missing"
		}
		if !equalData(b.data, ob.data) {
			return false, fmt.Sprintf("branch %s holds\n      {%s}\n    the model has\n      {%s}", n, ob.data, b.data)
		}
		wc := b.commits
		if ob.full && len(wc) != len(ob.commits) {
			return false, fmt.Sprintf("branch %s has %d commits, the model %d", n, len(ob.commits), len(wc))
		}
		if !ob.full && len(ob.commits) < tailLen && len(wc) != len(ob.commits) {
			return false, fmt.Sprintf("branch %s has %d commits, the model %d", n, len(ob.commits), len(wc))
		}
		if len(wc) < len(ob.commits) {
			return false, fmt.Sprintf("branch %s has more commits than the model", n)
		}
		off := len(wc) - len(ob.commits)
		for i, id := range ob.commits {
			if wc[off+i] != "" && wc[off+i] != id {
				return false, fmt.Sprintf("branch %s commit %d is %s, the model has %s", n, off+i, short(id), short(wc[off+i]))
			}
		}
	}
	for n, b := range w.br {
		ob := o.br[n]
		off := len(b.commits) - len(ob.commits)
		for i, id := range ob.commits {
			b.commits[off+i] = id
		}
	}
	return true, ""
}

// settle compares storage with the oracle after an operation: some world
// must be exactly what storage shows; once no recovery intent is pending
// the outcome is final and only the matching worlds remain.
func (s *sim) settle(ctx context.Context, full, fresh bool) error {
	if out := s.logbuf.take(); out != "" {
		low := strings.ToLower(out)
		for _, bad := range logtest.Forbidden {
			if strings.Contains(low, strings.ToLower(bad)) {
				return s.failf("a log line carries %q:\n%s", bad, out)
			}
		}
	}
	pending, err := recovery.Pending(ctx, s.raw)
	if err != nil {
		return s.failf("pending intents: %v", err)
	}
	o, err := s.observe(ctx, full, fresh)
	if err != nil {
		return s.failf("observe: %v", err)
	}
	// A pending write may have ended (a recovery resolved it; its sidecar
	// may outlive that when its delete fails); once no intent is left in
	// storage, every pending write has ended.
	var cands []*world
	for _, w := range s.worlds {
		rs := w.resolved()
		if len(pending) > 0 && len(rs) > 1 {
			cands = append(cands, w)
		}
		cands = append(cands, rs...)
	}
	var keep []*world
	var why []string
	for _, w := range cands {
		c := w.clone()
		if ok, msg := c.matches(o); ok {
			keep = append(keep, c)
		} else {
			why = append(why, msg)
		}
	}
	if len(keep) == 0 {
		return s.failf("storage fits none of the model's %d worlds:\n    %s", len(cands), strings.Join(why, "\n    "))
	}
	s.worlds = dedupe(keep)
	if len(pending) == 0 && fresh {
		if err := s.checkPins(ctx); err != nil {
			return err
		}
	}
	if len(pending) == 0 {
		for _, w := range s.worlds {
			for _, b := range w.br {
				if id := b.commits[len(b.commits)-1]; s.known[id] == nil && len(s.worlds) == 1 {
					s.remember(id, b.data)
				}
			}
		}
	}
	if len(s.worlds) > maxWorlds {
		s.logf("restart (crash) to resolve %d open outcomes", len(s.worlds))
		if err := s.restart(true); err != nil {
			return err
		}
		return s.settle(ctx, full, true)
	}
	return nil
}

// checkPins: once no intent is pending and no stray commit is known, every
// table a branch has written (its own table branch) has its live HEAD at
// the version the branch's head pins: recovery left no table ahead of, or
// behind, the manifest.
func (s *sim) checkPins(ctx context.Context) error {
	for _, w := range s.worlds {
		for _, b := range w.br {
			if b.drift {
				return nil
			}
		}
	}
	bs, err := s.ro.Branches(ctx)
	if err != nil {
		return s.failf("branches: %v", err)
	}
	for _, b := range bs {
		snap, err := s.ro.Snapshot(ctx, b.Name)
		if err != nil {
			return s.failf("snapshot %s: %v", b.Name, err)
		}
		own := b.Name
		if b.Name != "main" {
			own = fmt.Sprintf("%s@%d", b.Name, b.Incarnation)
		}
		for _, p := range snap.Tables() {
			if p.Branch != own {
				continue // inherited: the parent's table branch moves on its own
			}
			h, err := table.LatestVersion(ctx, s.raw, p.Path, p.Branch)
			if err != nil {
				return s.failf("table head of %s on %s: %v", p.Key, b.Name, err)
			}
			if h != p.Version {
				return s.failf("%s on %s: table HEAD %d, manifest pin %d, with no intent pending", p.Key, b.Name, h, p.Version)
			}
		}
	}
	return nil
}

// leak returns the forbidden fragment an error message carries, if any: a
// user-facing message never names a storage key or internal path.
func leak(err error) string {
	m := strings.ToLower(err.Error())
	for _, bad := range []string{"__manifest", "__cluster", "__recovery", "_schema/", ".v/", "lock.json", "_versions/", "_deletions/", "/data/"} {
		if strings.Contains(m, bad) {
			return bad
		}
	}
	return ""
}

// spy notes whether a fault fired during one operation.
type spy struct {
	backend.StorageAdapter
	mu   sync.Mutex
	hit  bool
	kill context.CancelFunc // ends the operation's context on a crash
}

func (p *spy) reset() { p.mu.Lock(); p.hit = false; p.mu.Unlock() }
func (p *spy) fired() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hit
}

func (p *spy) note(err error) error {
	if err != nil && (errors.Is(err, fault.ErrInjected) || errors.Is(err, fault.ErrCrashed)) {
		p.mu.Lock()
		p.hit = true
		if errors.Is(err, fault.ErrCrashed) && p.kill != nil {
			p.kill()
		}
		p.mu.Unlock()
	}
	return err
}

// dies returns the context of one operation: it ends when the store
// crashes, so that a dead process's re-issue pauses end at once (the handles
// of a graph.Open still on the wall clock) and it stops at its next wait.
func (p *spy) dies(ctx context.Context) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancel(ctx)
	p.mu.Lock()
	p.kill = cancel
	p.mu.Unlock()
	return c, func() {
		p.mu.Lock()
		p.kill = nil
		p.mu.Unlock()
		cancel()
	}
}

func (p *spy) Get(ctx context.Context, key string) ([]byte, backend.Attrs, error) {
	b, a, err := p.StorageAdapter.Get(ctx, key)
	return b, a, p.note(err)
}

func (p *spy) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	b, err := p.StorageAdapter.GetRange(ctx, key, off, n)
	return b, p.note(err)
}

func (p *spy) Stat(ctx context.Context, key string) (backend.Attrs, error) {
	a, err := p.StorageAdapter.Stat(ctx, key)
	return a, p.note(err)
}

func (p *spy) Put(ctx context.Context, key string, b []byte) (backend.Attrs, error) {
	a, err := p.StorageAdapter.Put(ctx, key, b)
	return a, p.note(err)
}

func (p *spy) PutIfAbsent(ctx context.Context, key string, b []byte) (backend.Attrs, error) {
	a, err := p.StorageAdapter.PutIfAbsent(ctx, key, b)
	return a, p.note(err)
}

func (p *spy) PutIfMatch(ctx context.Context, key string, b []byte, v string) (backend.Attrs, error) {
	a, err := p.StorageAdapter.PutIfMatch(ctx, key, b, v)
	return a, p.note(err)
}

func (p *spy) List(ctx context.Context, prefix string, opts backend.ListOptions) (backend.ListPage, error) {
	pg, err := p.StorageAdapter.List(ctx, prefix, opts)
	return pg, p.note(err)
}

func (p *spy) Exists(ctx context.Context, key string) (bool, error) {
	ok, err := p.StorageAdapter.Exists(ctx, key)
	return ok, p.note(err)
}

func (p *spy) Delete(ctx context.Context, key string) error {
	return p.note(p.StorageAdapter.Delete(ctx, key))
}

func (p *spy) DeletePrefix(ctx context.Context, prefix string) error {
	return p.note(p.StorageAdapter.DeletePrefix(ctx, prefix))
}

// defaultLog captures what the engine logs to slog.Default (the handles a
// read-write open makes before the simulation can point them at its run's
// log); TestSimulation scans it at the end.
var defaultLog logSink

func TestMain(m *testing.M) {
	flag.Parse()
	slog.SetDefault(slog.New(slog.NewJSONHandler(&defaultLog, &slog.HandlerOptions{Level: slog.LevelDebug})))
	os.Exit(m.Run())
}

// scanDefaultLog fails t when a default-logger line carries a forbidden
// string.
func scanDefaultLog(t *testing.T) {
	out := defaultLog.take()
	low := strings.ToLower(out)
	for _, bad := range logtest.Forbidden {
		if strings.Contains(low, strings.ToLower(bad)) {
			t.Errorf("a log line carries %q:\n%s", bad, out)
			return
		}
	}
}

// TestSimulation runs seeds first..first+seeds-1 (or only -seed) of -ops
// operations each, in parallel, and fails with the seed, its history and
// a replay command for every failing one.
func TestSimulation(t *testing.T) {
	seeds := []uint64{*seedFlag}
	if *seedFlag == 0 {
		seeds = nil
		for i := range *seedsFlag {
			seeds = append(seeds, *firstFlag+uint64(i))
		}
	}
	if testing.Short() && *seedFlag == 0 && len(seeds) > 20 {
		seeds = seeds[:20]
	}
	if *seedFlag == 0 && *freshFlag > 0 && !testing.Short() {
		salt := freshSalt()
		fresh := freshSeeds(salt, *freshFlag)
		t.Logf("fresh seeds %d..%d (drawn from %q); replay one with: go test ./sim -run 'TestSimulation$' -seed=N -ops=%d -v", fresh[0], fresh[len(fresh)-1], salt, *opsFlag)
		seeds = append(seeds, fresh...)
	}
	skip, err := parseSteps(*dropFlag)
	if err != nil {
		t.Fatalf("-drop: %v", err)
	}
	var mu sync.Mutex
	var failed []uint64
	work := make(chan uint64)
	var wg sync.WaitGroup
	workers := *workersFlag
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seed := range work {
				var trace func(*sim)
				if *historyFlag {
					trace = func(s *sim) { t.Logf("seed %d:\n  %s", seed, strings.Join(s.history, "\n  ")) }
				}
				if err := runSkipping(seed, *opsFlag, skip, nil, trace); err != nil {
					mu.Lock()
					failed = append(failed, seed)
					n := len(failed)
					mu.Unlock()
					t.Error(err)
					var f *failure
					if errors.As(err, &f) && *shrinkFlag > 0 && n <= 3 {
						small, runs := shrink(f, *shrinkFlag)
						t.Logf("seed %d shrunk in %d runs: %d operations run (from %d), failing at step %d: %s\n  replay: %s",
							seed, runs, executed(small), executed(f), small.step, small.msg, small.replay())
					}
				}
			}
		}()
	}
	for _, sd := range seeds {
		work <- sd
	}
	close(work)
	wg.Wait()
	scanDefaultLog(t)
	t.Logf("scheduler: %d steps, %d quiescence checks, %d timed waits", schedSteps.Load(), schedDumps.Load(), schedWaits.Load())
	if len(failed) > 0 {
		slices.Sort(failed)
		t.Logf("failing seeds: %v", failed)
	} else {
		t.Logf("%d seeds x %d operations passed", len(seeds), *opsFlag)
	}
}
