package sim

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/mem"
)

// The scheduler: during a concurrent batch (sim.concurrently) every storage
// request of the batch's clients stops at sched, the outermost store
// wrapper, and waits until the seeded scheduler releases it. One request
// runs at a time; the scheduler picks the next only once the batch is
// quiescent (see quiet): every goroutine of the batch is parked, at the
// gate or elsewhere (an engine gate, a channel, a wait group), so the set
// of pending requests no longer depends on how fast goroutines ran, and
// the seed's pick among them (sorted by client, method and key) decides
// the interleaving.
//
// Quiescence is read from the runtime: runtime.Stack of every goroutine (a
// stop-the-world snapshot) gives each goroutine's state and its creator, so
// the scheduler follows the batch's goroutines (the clients' and every
// goroutine they start, transitively) and waits until none of them is
// running or runnable. A client parked on an engine gate another client
// holds is quiescent: the holder's request is pending, and releasing it
// lets the holder finish. Nothing pending while the batch is quiescent is a
// deadlock of the engine (a goroutine parked for good outside storage): the
// batch fails after deadlockPolls checks.
type sched struct {
	backend.StorageAdapter
	mu      sync.Mutex
	on      bool
	pending []*req
	signal  chan struct{} // a request arrived or a client ended (buffered 1)
	called  chan struct{} // a released request's call returned (buffered 1)
	last    int64         // the goroutine of the newest request since a release (0: none)
	// writesOnly: only writes stop at the gate (a faulted write alone:
	// the fault schedule counts writes, so their order is what must not
	// vary; its reads run freely).
	writesOnly bool
}

// isWrite: the requests that stop at the gate in a writes-only batch.
// A write's entry into its branch queue ("Queue") is one: it decides the
// order the writes then make their storage writes in, so it is the seed's
// pick there too, not the goroutines' race (seed 11 once ran two writes'
// entries in either order on a loaded machine).
func isWrite(method string) bool {
	switch method {
	case "Put", "PutIfAbsent", "PutIfMatch", "Delete", "DeletePrefix", "Queue":
		return true
	}
	return false
}

// req is one storage request waiting at the gate.
type req struct {
	who    int   // the client, from the context (whoKey), -1 if none
	gid    int64 // the goroutine
	method string
	key    string
	run    chan struct{}
}

func (r *req) String() string { return fmt.Sprintf("c%d %s %s", r.who, r.method, r.key) }

type whoKey struct{}

func newSched(s backend.StorageAdapter) *sched {
	return &sched{StorageAdapter: s, signal: make(chan struct{}, 1), called: make(chan struct{}, 1)}
}

// done notes that a released request's call returned.
func (s *sched) done(ctx context.Context) {
	if _, ok := ctx.Value(whoKey{}).(int); !ok {
		return
	}
	s.mu.Lock()
	on := s.on
	s.mu.Unlock()
	if on {
		select {
		case s.called <- struct{}{}:
		default:
		}
	}
}

func (s *sched) poke() {
	select {
	case s.signal <- struct{}{}:
	default:
	}
}

// gate blocks a request of a batch until the scheduler releases it.
func (s *sched) gate(ctx context.Context, method, key string) error {
	s.mu.Lock()
	if !s.on || (s.writesOnly && !isWrite(method)) {
		s.mu.Unlock()
		return nil
	}
	who, ok := ctx.Value(whoKey{}).(int)
	if !ok {
		who = -1
	}
	r := &req{who: who, gid: goid(), method: method, key: key, run: make(chan struct{})}
	s.pending = append(s.pending, r)
	s.last = r.gid
	s.mu.Unlock()
	s.poke()
	select {
	case <-r.run:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		waiting := slices.Contains(s.pending, r)
		s.pending = slices.DeleteFunc(s.pending, func(x *req) bool { return x == r })
		s.mu.Unlock()
		if !waiting { // released meanwhile: the scheduler waits for its call
			s.called <- struct{}{}
		}
		return ctx.Err()
	}
}

// queued is the process's write-queue hook (graph.Process.SetQueueHook):
// a write about to wait for its branch's turn stops at the gate like a
// storage request, so which of a batch's writes queues first is the
// seed's pick, not the goroutines' race.
func (s *sched) queued(ctx context.Context, branch string) {
	if err := s.gate(ctx, "Queue", branch); err != nil {
		return // the write's own wait sees its context end
	}
	s.done(ctx)
}

func (s *sched) Get(ctx context.Context, key string) ([]byte, backend.Attrs, error) {
	if err := s.gate(ctx, "Get", key); err != nil {
		return nil, backend.Attrs{}, err
	}
	defer s.done(ctx)
	return s.StorageAdapter.Get(ctx, key)
}

func (s *sched) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if err := s.gate(ctx, "GetRange", key); err != nil {
		return nil, err
	}
	defer s.done(ctx)
	return s.StorageAdapter.GetRange(ctx, key, off, n)
}

func (s *sched) Stat(ctx context.Context, key string) (backend.Attrs, error) {
	if err := s.gate(ctx, "Stat", key); err != nil {
		return backend.Attrs{}, err
	}
	defer s.done(ctx)
	return s.StorageAdapter.Stat(ctx, key)
}

func (s *sched) Put(ctx context.Context, key string, b []byte) (backend.Attrs, error) {
	if err := s.gate(ctx, "Put", key); err != nil {
		return backend.Attrs{}, err
	}
	defer s.done(ctx)
	return s.StorageAdapter.Put(ctx, key, b)
}

func (s *sched) PutIfAbsent(ctx context.Context, key string, b []byte) (backend.Attrs, error) {
	if err := s.gate(ctx, "PutIfAbsent", key); err != nil {
		return backend.Attrs{}, err
	}
	defer s.done(ctx)
	return s.StorageAdapter.PutIfAbsent(ctx, key, b)
}

func (s *sched) PutIfMatch(ctx context.Context, key string, b []byte, v string) (backend.Attrs, error) {
	if err := s.gate(ctx, "PutIfMatch", key); err != nil {
		return backend.Attrs{}, err
	}
	defer s.done(ctx)
	return s.StorageAdapter.PutIfMatch(ctx, key, b, v)
}

func (s *sched) List(ctx context.Context, prefix string, opts backend.ListOptions) (backend.ListPage, error) {
	if err := s.gate(ctx, "List", prefix+"|"+opts.StartAfter); err != nil {
		return backend.ListPage{}, err
	}
	defer s.done(ctx)
	return s.StorageAdapter.List(ctx, prefix, opts)
}

func (s *sched) Exists(ctx context.Context, key string) (bool, error) {
	if err := s.gate(ctx, "Exists", key); err != nil {
		return false, err
	}
	defer s.done(ctx)
	return s.StorageAdapter.Exists(ctx, key)
}

func (s *sched) Delete(ctx context.Context, key string) error {
	if err := s.gate(ctx, "Delete", key); err != nil {
		return err
	}
	defer s.done(ctx)
	return s.StorageAdapter.Delete(ctx, key)
}

func (s *sched) DeletePrefix(ctx context.Context, prefix string) error {
	if err := s.gate(ctx, "DeletePrefix", prefix); err != nil {
		return err
	}
	defer s.done(ctx)
	return s.StorageAdapter.DeletePrefix(ctx, prefix)
}

// deadlockPolls is how many quiescent checks with nothing pending (1 ms
// apart) make a deadlock.
const deadlockPolls = 3000

// batchRun is what one client of a batch returned.
type batchRun struct {
	res written
	err error
	got string // reads
}

// run runs fns concurrently, one goroutine each (client i's context carries
// whoKey i), under the scheduler: rng picks every released request. It
// returns each one's result and the release order (client digits).
//
// After a release the scheduler waits for the call to return, then for the
// batch to be quiescent again. The fast path needs no stack dump: the
// released goroutine itself came back to the gate, no client ended, no
// goroutine was created in the process meanwhile, and no goroutine of the
// process but the scheduler is running or runnable (runtime/metrics): then
// nothing can still be on its way to the gate (a goroutine the released
// one woke would be runnable). Otherwise quiet reads every goroutine's
// state.
func (s *sched) run(ctx context.Context, rng *rand.Rand, writesOnly bool, fns []func(ctx context.Context) batchRun) ([]batchRun, string, error) {
	out := make([]batchRun, len(fns))
	var mu sync.Mutex
	roots := map[int64]bool{}
	alive := len(fns)
	var started sync.WaitGroup
	s.mu.Lock()
	s.on, s.writesOnly = true, writesOnly
	s.last = 0
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.on = false
		s.mu.Unlock()
	}()
	for i, fn := range fns {
		started.Add(1)
		go func() {
			id := goid()
			mu.Lock()
			roots[id] = true
			mu.Unlock()
			started.Done()
			r := fn(context.WithValue(ctx, whoKey{}, i))
			mu.Lock()
			out[i] = r
			delete(roots, id)
			alive--
			mu.Unlock()
			s.poke()
		}()
	}
	started.Wait()
	select {
	case <-s.called:
	default:
	}
	var order strings.Builder
	idle := 0
	buf := make([]byte, 1<<16)
	var released *req // the last request released
	aliveAt := 0
	created := goroutinesCreated()
	for {
		fast := false
		if released != nil {
			// wait for what the release causes: most often its goroutine
			// comes back to the gate, or its client ends
			select {
			case <-s.signal:
			case <-time.After(300 * time.Microsecond):
				schedWaits.Add(1)
			}
			mu.Lock()
			n := alive
			mu.Unlock()
			s.mu.Lock()
			// Read twice: a goroutine woken by another (a queue turn
			// passed on) may move between the states one read samples.
			fast = s.last == released.gid && n == aliveAt && goroutinesCreated() == created && othersActive() == 0 && othersActive() == 0
			s.mu.Unlock()
		}
		for polls := 0; !fast; polls++ {
			mu.Lock()
			rs := make(map[int64]bool, len(roots))
			for id := range roots {
				rs[id] = true
			}
			n := alive
			mu.Unlock()
			if n == 0 {
				return out, order.String(), nil
			}
			var ok bool
			schedDumps.Add(1)
			buf, ok = quiet(buf, rs)
			if ok {
				break
			}
			if polls < 4 {
				runtime.Gosched()
			} else {
				time.Sleep(50 * time.Microsecond)
			}
		}
		s.mu.Lock()
		p := s.pending
		if len(p) == 0 {
			s.mu.Unlock()
			released = nil
			idle++
			if idle > deadlockPolls {
				return out, order.String(), fmt.Errorf("deadlock: the batch is parked with no storage request pending:\n%s", stacks(buf))
			}
			time.Sleep(time.Millisecond)
			continue
		}
		idle = 0
		slices.SortStableFunc(p, func(a, b *req) int {
			if a.who != b.who {
				return a.who - b.who
			}
			if c := strings.Compare(a.method, b.method); c != 0 {
				return c
			}
			// ids in keys (ULIDs) differ between runs: they decide late
			if c := strings.Compare(ulidLike.ReplaceAllString(a.key, "~"), ulidLike.ReplaceAllString(b.key, "~")); c != 0 {
				return c
			}
			// Two goroutines of one client asking the same thing (a
			// fan-out): the one created first goes first. Goroutine ids
			// rise in creation order, and one parent creates its fan-out
			// one after another, so their order is the same in every run;
			// the order they reached the gate in is not (it follows the
			// real-time scheduler: TestSchedulerIsSeededAndSurvivesInProcessWaits
			// once saw b0 and b1 swap under load).
			if a.gid != b.gid {
				return cmp.Compare(a.gid, b.gid)
			}
			return strings.Compare(a.key, b.key)
		})
		k := rng.IntN(len(p))
		r := p[k]
		s.pending = slices.Delete(p, k, k+1)
		s.last = 0
		s.mu.Unlock()
		select { // drop a stale signal: wait for what the release causes
		case <-s.signal:
		default:
		}
		if r.who >= 0 && r.who < 10 {
			order.WriteByte(byte('0' + r.who))
		} else {
			order.WriteByte('?')
		}
		schedSteps.Add(1)
		mu.Lock()
		aliveAt = alive
		mu.Unlock()
		created = goroutinesCreated()
		released = r
		close(r.run)
		<-s.called // the call runs (or its context ended) before anything else
	}
}

// goroutinesCreated is how many goroutines the process has created.
func goroutinesCreated() uint64 {
	sm := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(sm)
	if sm[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return sm[0].Value.Uint64()
}

// othersActive is how many goroutines of the process other than the
// caller are running or runnable (^0 when the runtime does not say).
func othersActive() uint64 {
	// Runnable before running: a goroutine that starts running between
	// the two samples is seen in the first.
	sm := []metrics.Sample{{Name: "/sched/goroutines/runnable:goroutines"}, {Name: "/sched/goroutines/running:goroutines"}}
	metrics.Read(sm)
	if sm[0].Value.Kind() != metrics.KindUint64 || sm[1].Value.Kind() != metrics.KindUint64 {
		return ^uint64(0)
	}
	n := sm[0].Value.Uint64() + sm[1].Value.Uint64()
	if n == 0 {
		return 0
	}
	return n - 1
}

var schedDumps, schedSteps, schedWaits atomic.Int64

// goid is the calling goroutine's id.
func goid() int64 {
	var b [64]byte
	n := runtime.Stack(b[:], false)
	f := bytes.Fields(b[:n])
	id, _ := strconv.ParseInt(string(f[1]), 10, 64)
	return id
}

// gstate is one goroutine of a stack dump.
type gstate struct {
	id, parent int64
	state      string
}

// dump reads every goroutine's id, state and creator.
func dump(buf []byte) ([]byte, []gstate) {
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var gs []gstate
	for _, blk := range bytes.Split(buf, []byte("\n\n")) {
		hdr, rest, _ := bytes.Cut(blk, []byte("\n"))
		// goroutine 18 [chan receive, 2 minutes]:
		f := bytes.SplitN(hdr, []byte(" "), 3)
		if len(f) < 3 || string(f[0]) != "goroutine" {
			continue
		}
		id, _ := strconv.ParseInt(string(f[1]), 10, 64)
		st := strings.TrimSuffix(strings.TrimPrefix(string(f[2]), "["), "]:")
		if i := strings.IndexByte(st, ','); i >= 0 {
			st = st[:i]
		}
		g := gstate{id: id, parent: -1, state: st}
		if i := bytes.LastIndex(rest, []byte(" in goroutine ")); i >= 0 {
			tail := rest[i+len(" in goroutine "):]
			if j := bytes.IndexByte(tail, '\n'); j >= 0 {
				tail = tail[:j]
			}
			g.parent, _ = strconv.ParseInt(string(bytes.TrimSpace(tail)), 10, 64)
		}
		gs = append(gs, g)
	}
	return buf[:cap(buf)], gs
}

// parked says whether a goroutine state waits on another goroutine (or the
// gate), rather than running on its own.
func parked(state string) bool {
	for _, p := range []string{"chan receive", "chan send", "select", "sync.Mutex.Lock", "sync.RWMutex", "sync.Cond.Wait", "sync.WaitGroup.Wait", "semacquire", "sleep"} {
		if strings.HasPrefix(state, p) {
			return true
		}
	}
	return false
}

// tracked is roots and every goroutine they created, transitively (as far
// as the creators are alive).
func tracked(gs []gstate, roots map[int64]bool) map[int64]bool {
	in := maps.Clone(roots)
	for changed := true; changed; {
		changed = false
		for _, g := range gs {
			if !in[g.id] && in[g.parent] {
				in[g.id] = true
				changed = true
			}
		}
	}
	return in
}

// quiet reports whether every goroutine of the batch is parked.
func quiet(buf []byte, roots map[int64]bool) ([]byte, bool) {
	buf, gs := dump(buf)
	in := tracked(gs, roots)
	for _, g := range gs {
		if in[g.id] && !parked(g.state) {
			return buf, false
		}
	}
	return buf, true
}

// stacks renders every goroutine's stack for a deadlock report.
func stacks(buf []byte) string {
	n := runtime.Stack(buf, true)
	s := string(buf[:n])
	if len(s) > 20000 {
		s = s[:20000] + "..."
	}
	return s
}

// TestSchedulerIsSeededAndSurvivesInProcessWaits runs three clients under
// the scheduler: each writes one key four times; client 1 fans out into two
// goroutines; client 2 waits on a mutex client 0 holds across its first two
// writes (an in-process wait outside storage, like an engine gate). The
// same seed gives the same release order and the same last writer of the
// shared key in every run; no run deadlocks; and the seeds between them
// explore more than one order.
func TestSchedulerIsSeededAndSurvivesInProcessWaits(t *testing.T) {
	runOnce := func(seed uint64) (string, string) {
		raw := mem.New()
		s := newSched(raw)
		var gate sync.Mutex
		held := make(chan struct{})
		put := func(ctx context.Context, who string, i int) {
			if _, err := s.Put(ctx, "shared", []byte(fmt.Sprintf("%s%d", who, i))); err != nil {
				t.Error(err)
			}
		}
		fns := []func(context.Context) batchRun{
			func(ctx context.Context) batchRun {
				gate.Lock()
				close(held)
				put(ctx, "a", 0)
				put(ctx, "a", 1)
				gate.Unlock()
				put(ctx, "a", 2)
				put(ctx, "a", 3)
				return batchRun{}
			},
			func(ctx context.Context) batchRun {
				var wg sync.WaitGroup
				for j := range 2 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						put(ctx, fmt.Sprintf("b%d-", j), 0)
						put(ctx, fmt.Sprintf("b%d-", j), 1)
					}()
				}
				wg.Wait()
				return batchRun{}
			},
			func(ctx context.Context) batchRun {
				<-held
				gate.Lock() // parked outside storage until client 0 frees it
				defer gate.Unlock()
				for i := range 4 {
					put(ctx, "c", i)
				}
				return batchRun{}
			},
		}
		_, order, err := s.run(context.Background(), rand.New(rand.NewPCG(seed, 1)), false, fns)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		b, _, err := raw.Get(context.Background(), "shared")
		if err != nil {
			t.Fatal(err)
		}
		return order, string(b)
	}
	orders := map[string]bool{}
	for seed := uint64(1); seed <= 6; seed++ {
		o1, last1 := runOnce(seed)
		o2, last2 := runOnce(seed)
		if o1 != o2 || last1 != last2 {
			t.Errorf("seed %d: order %s (last %s), then %s (last %s)", seed, o1, last1, o2, last2)
		}
		if len(o1) != 12 {
			t.Errorf("seed %d: %d requests released, want 12", seed, len(o1))
		}
		orders[o1] = true
	}
	if len(orders) < 2 {
		t.Errorf("six seeds gave one order: %v", orders)
	}
}
