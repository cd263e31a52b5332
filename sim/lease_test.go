package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/clusterlock"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/mutate"
)

// The writer fence on a simulated clock. Every writer process of the
// simulation holds a leased cluster lock (clusterlock.AcquireLeased, as a
// server does) and writes through its Guard; the lock record and the
// heartbeats go to the raw store (never faulted, never scheduled). Each
// process has its own view of one simulated clock (leaseClock), so that a
// process can stall (its heartbeats stop: a long pause) or die (its
// heartbeat goroutines end) while the others' time goes on.

// simLease is the lease of every simulated process.
const simLease = 10 * time.Second

// stepTime is how far the simulated clock moves per operation.
const stepTime = time.Second

// leaseClock is the simulated time every process's view shares.
type leaseClock struct {
	mu   sync.Mutex
	cond *sync.Cond
	now  time.Time
	// sleeping are the goroutines in Sleep, with their view and deadline:
	// after an advance, the clock waits until the live view's sleepers are
	// all asleep again for a time still ahead (their heartbeat answered),
	// so the heartbeat loop keeps pace with simulated time, not the wall
	// clock.
	sleeping map[*sleeper]bool
}

type sleeper struct {
	v        *clockView
	deadline time.Time
}

func newLeaseClock() *leaseClock {
	c := &leaseClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), sleeping: map[*sleeper]bool{}}
	c.cond = sync.NewCond(&c.mu)
	return c
}

// clockView is one process's clock (a clusterlock.Clock).
type clockView struct {
	c *leaseClock
	// auto: Sleep moves the shared time itself (a starter watching a
	// silent holder's heartbeats: nothing else moves meanwhile);
	// paused: the process stalls, its sleepers do not wake; dead: the
	// process died, its sleepers return at once with an error.
	auto, paused, dead bool
	autoG              int64 // the goroutine auto applies to
}

var errProcessDead = errors.New("sim: the process died")

func (c *leaseClock) view() *clockView { return &clockView{c: c} }

func (v *clockView) Now() time.Time {
	v.c.mu.Lock()
	defer v.c.mu.Unlock()
	return v.c.now
}

func (v *clockView) Sleep(ctx context.Context, d time.Duration) error {
	c := v.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if v.dead {
		return errProcessDead
	}
	if d <= 0 {
		return ctx.Err()
	}
	if v.auto && goid() == v.autoG {
		c.now = c.now.Add(d)
		return ctx.Err()
	}
	stop := context.AfterFunc(ctx, func() {
		c.mu.Lock()
		c.cond.Broadcast()
		c.mu.Unlock()
	})
	defer stop()
	sl := &sleeper{v: v, deadline: c.now.Add(d)}
	c.sleeping[sl] = true
	c.cond.Broadcast()
	for (c.now.Before(sl.deadline) || v.paused) && !v.dead && ctx.Err() == nil {
		c.cond.Wait()
	}
	delete(c.sleeping, sl)
	c.cond.Broadcast()
	if v.dead {
		return errProcessDead
	}
	return ctx.Err()
}

// set changes a view's state under the clock's lock and wakes its
// sleepers.
func (v *clockView) set(f func(v *clockView)) {
	v.c.mu.Lock()
	f(v)
	v.c.cond.Broadcast()
	v.c.mu.Unlock()
}

// advance moves the time by d and waits (up to a wall-clock bound, against
// a hang) until live, running view's sleepers are asleep again: a lease
// owner's heartbeat loop and watchdog (want each).
func (c *leaseClock) advance(d time.Duration, live *clockView, want int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.cond.Broadcast()
	if live == nil || live.paused || live.dead {
		return nil
	}
	limit := time.Now().Add(5 * time.Second)
	for {
		ahead := 0
		for sl := range c.sleeping {
			if sl.v == live && sl.deadline.After(c.now) {
				ahead++
			}
		}
		if ahead >= want {
			return nil
		}
		if time.Now().After(limit) {
			return fmt.Errorf("the lease's heartbeat loop did not go back to sleep (%d of %d asleep)", ahead, want)
		}
		c.mu.Unlock()
		time.Sleep(20 * time.Microsecond)
		c.mu.Lock()
	}
}

// acquireLease takes the cluster lock for a new process on view v: at
// once when it is free, or after a lease and a half of silence when a dead
// or stalled process holds it (v moves the time itself meanwhile).
func (s *sim) acquireLease(ctx context.Context, v *clockView) (*clusterlock.Lease, error) {
	g := goid()
	v.set(func(v *clockView) { v.auto, v.autoG = true, g })
	l, err := clusterlock.AcquireLeased(ctx, s.raw, clusterlock.Options{Clock: v, Lease: simLease, Operation: "sim"})
	v.set(func(v *clockView) { v.auto = false })
	if err != nil {
		return nil, err
	}
	return l, nil
}

// startLease starts a writer process's fence: a clock view, the lease
// (taking over a dead process's after its silence), the guarded store.
func (s *sim) startLease(ctx context.Context) error {
	v, l := s.nextView, s.nextLease
	s.nextView, s.nextLease = nil, nil
	if l == nil {
		v = s.lclock.view()
		var err error
		if l, err = s.acquireLease(ctx, v); err != nil {
			return s.failf("acquire the cluster lock: %v", err)
		}
	}
	s.view, s.lease, s.wstore = v, l, l.Guard(s.store)
	return nil
}

// endLease ends the writer process's fence: released on a clean stop, left
// behind (its heartbeats stop) when the process dies.
func (s *sim) endLease(crash bool) error {
	if s.lease == nil {
		return nil
	}
	var err error
	if !crash {
		if rerr := s.lease.Release(context.Background()); rerr != nil {
			err = s.failf("release the cluster lock: %v", rerr)
		}
	}
	s.view.set(func(v *clockView) { v.dead = true })
	s.view, s.lease, s.wstore = nil, nil, nil
	return err
}

var _ backend.StorageAdapter = (*sched)(nil)

// takeoverOp: the writer process stalls (its heartbeats stop), a new
// process takes the cluster lock over after a lease and a half of silence,
// and the stalled process resumes with a write in flight: the fence must
// refuse it (ErrLeaseLost) before it reaches storage, and it changes
// nothing. The stalled process then exits, as a server does on a lost
// lease, and the new one serves the clients.
func takeoverOp(r *rand.Rand) *op {
	h, age := person(r), int32(r.IntN(60))
	w := &op{
		desc:   fmt.Sprintf("mutate main: insert P/%s=%d", h, age),
		write:  true,
		target: "main",
		exec: func(ctx context.Context, g *graph.Graph) (written, error) {
			res, err := mutate.Query(ctx, g, fmt.Sprintf(`mutation m() { insert Person { handle: %q, age: %d } }`, h, age), "", mutate.Options{Branch: "main"})
			if err != nil {
				return written{}, err
			}
			return written{commit: commitOf(res.Commit)}, nil
		},
		predict: func(w *world) pred {
			d := w.br["main"].data.clone()
			d[ekey(kPerson, h)] = ent{val: age, has: true}
			return pred{branch: "main", rule: commitMust, apply: func(w *world) { w.br["main"].data = d.clone() }}
		},
	}
	return &op{desc: "lease takeover; the stalled writer then runs: " + w.desc, client: -5, batch: []*op{w}}
}

func (s *sim) takeover(ctx context.Context, o *op) error {
	stale, old := s.clients[0], s.view
	old.set(func(v *clockView) { v.paused = true })
	v := s.lclock.view()
	l, err := s.acquireLease(ctx, v)
	if err != nil {
		return s.failf("%s: take the cluster lock over: %v", o.desc, err)
	}
	w := o.batch[0]
	for _, wd := range s.worlds {
		if b := wd.br["main"]; b.pend != nil || b.drift {
			// a write pending or drift on main refuses it before the fence
			s.logf("c0 %s -> not run (a write is pending on main, or drift)", o.desc)
			if err := s.endLease(true); err != nil {
				return err
			}
			s.nextView, s.nextLease = v, l
			return s.restart(true)
		}
	}
	_, werr := w.exec(ctx, stale)
	switch {
	case werr == nil:
		s.logf("c0 %s -> ok", o.desc)
		return s.failf("%s: a stalled writer's write after a takeover was acknowledged", o.desc)
	case !errors.Is(werr, clusterlock.ErrLeaseLost):
		s.logf("c0 %s -> refused: %s: %s", o.desc, errClass(werr), firstLine(s.scrub(werr.Error())))
		return s.failf("%s: refused, but not by the fence: %v", o.desc, werr)
	}
	if msg := leak(werr); msg != "" {
		return s.failf("%s: error message carries %q: %v", o.desc, msg, werr)
	}
	s.logf("c0 %s -> refused by the fence (lease lost)", o.desc)

	if err := s.endLease(true); err != nil {
		return err
	}
	s.nextView, s.nextLease = v, l
	return s.restart(true)
}
