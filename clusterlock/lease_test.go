package clusterlock

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/fault"
	"github.com/omnigraph-go/omnigraph/backend/mem"
)

const testLease = 3 * time.Second // heartbeat 1 s, lapse 2 s, takeover 4.5 s

func leaseOpts(clk Clock, opts Options) Options {
	opts.Lease, opts.Clock = testLease, clk
	if opts.Owner == (Owner{}) {
		opts.Owner = testOwner
	}
	return opts
}

func beats(t *testing.T, s backend.StorageAdapter, id string) []uint64 {
	t.Helper()
	all, err := backend.ListAll(context.Background(), s, heartbeatPrefix(id))
	if err != nil {
		t.Fatal(err)
	}
	var out []uint64
	for _, a := range all {
		out = append(out, seqOf(a.Key))
	}
	return out
}

// deadOwner writes the leased record and one heartbeat of a server that has
// died, and returns its record.
func deadOwner(t *testing.T, s backend.StorageAdapter, leaseSeconds int) Record {
	t.Helper()
	rec := Record{FormatVersion: FormatLeased, LockID: NewLockID(), Operation: "serve", Owner: Owner{Host: "old", PID: 9}, CreatedAt: epoch, LeaseSeconds: leaseSeconds}
	ctx := context.Background()
	if _, err := s.PutIfAbsent(ctx, LockKey, encodeRecord(rec)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutIfAbsent(ctx, heartbeatKey(rec.LockID, 1), []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestLeaseHeartbeatCadence: the owner writes a heartbeat every third of a
// lease, keeps only the newest few, and a clean release leaves a tombstone
// and no heartbeats.
func TestLeaseHeartbeatCadence(t *testing.T) {
	ctx := context.Background()
	s := mem.New()
	clk := newFakeClock()
	l, err := AcquireLeased(ctx, s, leaseOpts(clk, Options{}))
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := getRecord(t, s)
	if rec.FormatVersion != FormatLeased || rec.LeaseSeconds != 3 || rec.LockID != l.ID() || rec.Operation != "serve" {
		t.Fatalf("record = %+v", rec)
	}
	if got := beats(t, s, l.ID()); len(got) != 1 || got[0] != 1 {
		t.Fatalf("heartbeats after start = %v, want [1]", got)
	}
	for i := 2; i <= 6; i++ {
		clk.waitSleepers(t, constant(2), nil)
		clk.Advance(time.Second)
		clk.waitSleepers(t, constant(2), nil)
		if l.Heartbeats() != i {
			t.Fatalf("after %d s: %d heartbeats, want %d", i-1, l.Heartbeats(), i)
		}
	}
	if got := beats(t, s, l.ID()); len(got) != 3 || got[2] != 6 {
		t.Errorf("heartbeat objects = %v, want the newest three ending at 6", got)
	}
	st, err := Status(ctx, s, Options{Clock: clk})
	if err != nil || !st.Held || !st.Leased || st.HeartbeatSeq != 6 || st.LeaseSeconds != 3 || st.LastHeartbeat.IsZero() {
		t.Errorf("status = %+v, %v", st, err)
	}
	if l.Err() != nil {
		t.Fatalf("lease lost: %v", l.Err())
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if got := beats(t, s, l.ID()); len(got) != 0 {
		t.Errorf("heartbeats after release = %v", got)
	}
	if st, _ := Status(ctx, s, Options{}); st.Held {
		t.Error("lock held after release")
	}
	select {
	case <-l.Lost():
		t.Error("a released lease reports lost")
	default:
	}
}

// TestLeaseLapsesWithoutAnswers: when no heartbeat is answered for two
// thirds of a lease, Lost closes, OnLost fires once, and the guard refuses
// every write without sending it; the lock is not released.
func TestLeaseLapsesWithoutAnswers(t *testing.T) {
	ctx := context.Background()
	log, out := captureLogs(t)
	f := fault.New(mem.New())
	clk := newFakeClock()
	var lost atomic.Int32
	lostErr := make(chan error, 10)
	l, err := AcquireLeased(ctx, f, leaseOpts(clk, Options{Logger: log, OnLost: func(err error) { lost.Add(1); lostErr <- err }}))
	if err != nil {
		t.Fatal(err)
	}
	guard := l.Guard(f)
	if _, err := guard.Put(ctx, "data/a", []byte("1")); err != nil {
		t.Fatalf("guarded write while the lease holds: %v", err)
	}
	for i := 1; i <= 40; i++ { // no answer to any conditional write any more
		f.FailNth(fault.CondPut, i, backend.KindUnknown)
	}
	moved := clk.drive(t, 250*time.Millisecond, constant(2), l.Lost())
	if moved < 2*time.Second || moved > 2*time.Second+250*time.Millisecond {
		t.Errorf("lapsed after %s of fake time, want two thirds of the lease (2s)", moved)
	}
	if err := <-lostErr; lost.Load() != 1 || !errors.Is(err, ErrLeaseLost) || !errors.Is(l.Err(), ErrLeaseLost) {
		t.Fatalf("OnLost calls %d, err %v", lost.Load(), err)
	}
	var le *LostError
	if !errors.As(l.Err(), &le) || le.Reason != ReasonLapsed || le.Class != backend.KindUnknown {
		t.Errorf("lost error = %+v", le)
	}
	writes := f.Writes()
	_, err = guard.Put(ctx, "data/b", []byte("2"))
	if !errors.Is(err, ErrLeaseLost) || backend.KindOf(err) != backend.KindPermanent {
		t.Errorf("guarded write after loss: %v", err)
	}
	if err := guard.Delete(ctx, "data/a"); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("guarded delete after loss: %v", err)
	}
	if f.Writes() != writes {
		t.Error("the guard sent a write after the lease was lost")
	}
	if b, _, err := guard.Get(ctx, "data/a"); err != nil || string(b) != "1" {
		t.Errorf("guarded read: %q, %v", b, err)
	}
	if rec, _ := getRecord(t, f.Unwrap()); rec.LockID != l.ID() || rec.Released {
		t.Errorf("a lost lease released its record: %+v", rec)
	}
	if err := l.Release(ctx); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("release of a lost lease: %v", err)
	}
	for _, ev := range []string{"cluster lock lease lapsed", "cluster lock heartbeat outcome unknown", `"failure_class":"unknown"`} {
		if !strings.Contains(out.String(), ev) {
			t.Errorf("log lacks %q:\n%s", ev, out)
		}
	}
}

// TestGuardCancelsInFlightWrite: a write in flight when the lease is lost
// ends at once.
func TestGuardCancelsInFlightWrite(t *testing.T) {
	ctx := context.Background()
	s := &cutStore{StorageAdapter: mem.New(), prefix: LeasePrefix, kind: backend.KindTransient}
	clk := newFakeClock()
	l, err := AcquireLeased(ctx, s, leaseOpts(clk, Options{}))
	if err != nil {
		t.Fatal(err)
	}
	blocked := &blockingStore{StorageAdapter: s, entered: make(chan struct{})}
	errc := make(chan error, 1)
	go func() {
		_, err := l.Guard(blocked).Put(ctx, "data/slow", []byte("x"))
		errc <- err
	}()
	<-blocked.entered
	s.set(true)
	clk.drive(t, 250*time.Millisecond, constant(2), l.Lost())
	if err := <-errc; !errors.Is(err, ErrLeaseLost) {
		t.Errorf("in-flight write after loss: %v", err)
	}
}

type blockingStore struct {
	backend.StorageAdapter
	entered chan struct{}
}

func (b *blockingStore) Put(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	close(b.entered)
	<-ctx.Done()
	return backend.Attrs{}, backend.NewError("put", key, backend.KindTransient, context.Cause(ctx))
}

// TestLostHeartbeatAnswerCountsOnRetry: a heartbeat applied but whose
// answer was lost is re-issued unchanged; the retry finds it (precondition)
// and it counts, once, settling the key's poison.
func TestLostHeartbeatAnswerCountsOnRetry(t *testing.T) {
	ctx := context.Background()
	log, out := captureLogs(t)
	f := fault.New(mem.New())
	clk := newFakeClock()
	p := NewPoison()
	l, err := AcquireLeased(ctx, f, leaseOpts(clk, Options{Logger: log, Poison: p}))
	if err != nil {
		t.Fatal(err)
	}
	f.LoseAnswer(fault.CondPut, 1) // heartbeat 2
	clk.waitSleepers(t, constant(2), nil)
	clk.Advance(time.Second)
	clk.waitSleepers(t, constant(2), nil) // heartbeat loop waits to retry
	if l.Heartbeats() != 1 || !p.Poisoned(heartbeatKey(l.ID(), 2)) {
		t.Fatalf("after the lost answer: %d heartbeats, poisoned %v", l.Heartbeats(), p.Keys())
	}
	clk.Advance(250 * time.Millisecond)
	clk.waitSleepers(t, constant(2), nil)
	if l.Heartbeats() != 2 || p.Poisoned(heartbeatKey(l.ID(), 2)) {
		t.Fatalf("after the retry: %d heartbeats, poisoned %v", l.Heartbeats(), p.Keys())
	}
	if got := beats(t, f, l.ID()); len(got) != 2 || got[1] != 2 {
		t.Errorf("heartbeat objects = %v", got)
	}
	// It counts from its first send (t=1s): the lease holds until 3s.
	clk.Advance(1500 * time.Millisecond)
	if err := l.Valid(); err != nil {
		t.Errorf("lease after the counted retry: %v", err)
	}
	if !strings.Contains(out.String(), "re-issuing the identical conditional create") {
		t.Errorf("no heartbeat-unknown event:\n%s", out)
	}
	_ = l.Release(ctx)
}

// TestSuccessorClaimDetected: an owner that finds the record naming another
// lock stops at once (Lost, guard refuses) and does not touch the record.
func TestSuccessorClaimDetected(t *testing.T) {
	ctx := context.Background()
	log, out := captureLogs(t)
	s := mem.New()
	clk := newFakeClock()
	l, err := AcquireLeased(ctx, s, leaseOpts(clk, Options{Logger: log}))
	if err != nil {
		t.Fatal(err)
	}
	_, a := getRecord(t, s)
	succ := Record{FormatVersion: FormatLeased, LockID: NewLockID(), Operation: "serve", Owner: Owner{Host: "b", PID: 2}, CreatedAt: epoch, LeaseSeconds: 3}
	if _, err := s.PutIfMatch(ctx, LockKey, encodeRecord(succ), a.Version); err != nil {
		t.Fatal(err)
	}
	clk.drive(t, time.Second, constant(2), l.Lost())
	var le *LostError
	if !errors.As(l.Err(), &le) || le.Reason != ReasonSuccessor {
		t.Fatalf("lost = %v", l.Err())
	}
	if _, err := l.Guard(s).Put(ctx, "data/x", nil); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("guarded write after the claim: %v", err)
	}
	if rec, _ := getRecord(t, s); rec.LockID != succ.LockID {
		t.Errorf("the old owner changed the successor's record: %+v", rec)
	}
	if !strings.Contains(out.String(), "another server claimed the cluster lock") {
		t.Errorf("no successor-claim event:\n%s", out)
	}
}

type acquireResult struct {
	l   *Lease
	err error
}

// starters runs n AcquireLeased calls on one fake clock, advancing it in
// steps whenever every goroutine involved sleeps, until all have returned.
func starters(t *testing.T, s backend.StorageAdapter, clk *fakeClock, n int, opts Options) ([]acquireResult, time.Duration) {
	t.Helper()
	res := make([]acquireResult, n)
	var mu sync.Mutex
	returned := make([]bool, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := AcquireLeased(context.Background(), s, opts)
			mu.Lock()
			res[i], returned[i] = acquireResult{l, err}, true
			mu.Unlock()
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	want := func() int {
		mu.Lock()
		defer mu.Unlock()
		k := 0
		for i := range n {
			switch {
			case !returned[i]:
				k++ // watching
			case res[i].l != nil:
				k += 2 // heartbeats and watchdog
			}
		}
		return k
	}
	return res, clk.drive(t, 500*time.Millisecond, want, done)
}

// TestTakeoverAfterSilence: a starter that finds a leased lock whose
// heartbeats are silent takes it over after a lease and a half of the
// owner's recorded lease (not its own), logging the takeover.
func TestTakeoverAfterSilence(t *testing.T) {
	log, out := captureLogs(t)
	s := mem.New()
	old := deadOwner(t, s, 2) // recorded lease 2 s: takeover after 3 s
	clk := newFakeClock()
	res, _ := starters(t, s, clk, 1, leaseOpts(clk, Options{Logger: log, Lease: 6 * time.Second}))
	if res[0].err != nil {
		t.Fatalf("takeover: %v", res[0].err)
	}
	l := res[0].l
	defer l.Release(context.Background())
	rec, _ := getRecord(t, s)
	// The takeover record is stamped at the moment of the takeover.
	if at := rec.CreatedAt.Sub(epoch); at < 3*time.Second || at > 3*time.Second+500*time.Millisecond {
		t.Errorf("took over after %s of fake time, want a lease and a half of the recorded 2 s lease (3s)", at)
	}
	if rec.LockID != l.ID() || rec.LockID == old.LockID || rec.LeaseSeconds != 3 || rec.FormatVersion != FormatLeased {
		t.Errorf("record after takeover = %+v", rec)
	}
	if !strings.Contains(out.String(), "took over a silent owner's cluster lock") || !strings.Contains(out.String(), old.LockID) {
		t.Errorf("no takeover event:\n%s", out)
	}
}

// TestRefuseWhileHeartbeatsContinue: a starter watching a live owner's
// heartbeats is refused with state_lock_held and the owner keeps its lease.
func TestRefuseWhileHeartbeatsContinue(t *testing.T) {
	ctx := context.Background()
	s := mem.New()
	clk := newFakeClock()
	owner, err := AcquireLeased(ctx, s, leaseOpts(clk, Options{}))
	if err != nil {
		t.Fatal(err)
	}
	var res acquireResult
	done := make(chan struct{})
	go func() {
		res.l, res.err = AcquireLeased(ctx, s, leaseOpts(clk, Options{}))
		close(done)
	}()
	moved := clk.drive(t, 500*time.Millisecond, constant(3), done)
	var held *HeldError
	if !errors.As(res.err, &held) || !held.HeartbeatsContinue || held.LockID != owner.ID() {
		t.Fatalf("starter against a live owner: %v", res.err)
	}
	if moved >= 4500*time.Millisecond {
		t.Errorf("refused only after %s; the heartbeats were visible within a third of a lease", moved)
	}
	if owner.Valid() != nil {
		t.Errorf("owner lost its lease: %v", owner.Valid())
	}
	if rec, _ := getRecord(t, s); rec.LockID != owner.ID() {
		t.Errorf("record = %+v", rec)
	}
	if !strings.Contains(res.err.Error(), "heartbeats continue") {
		t.Errorf("message %q", res.err)
	}
	_ = owner.Release(ctx)
}

// TestTwoStartersOneTakesOver: two starters watching the same silent lock
// race; the takeover is a compare-and-swap, so exactly one wins and the
// other is refused with state_lock_held.
func TestTwoStartersOneTakesOver(t *testing.T) {
	for round := range 20 {
		s := mem.New()
		deadOwner(t, s, 3)
		clk := newFakeClock()
		res, _ := starters(t, s, clk, 2, leaseOpts(clk, Options{}))
		var won []*Lease
		for _, r := range res {
			switch {
			case r.err == nil:
				won = append(won, r.l)
			case !errors.Is(r.err, ErrLockHeld):
				t.Fatalf("round %d: loser's error %v, want ErrLockHeld", round, r.err)
			}
		}
		if len(won) != 1 {
			t.Fatalf("round %d: %d starters took over, want exactly 1", round, len(won))
		}
		if rec, _ := getRecord(t, s); rec.LockID != won[0].ID() {
			t.Fatalf("round %d: record names %s, winner %s", round, rec.LockID, won[0].ID())
		}
		_ = won[0].Release(context.Background())
	}
}

// TestUnleasedHolderNeverTakenOver: a server finding a CLI writer's lock is
// refused at once, however long it has been held.
func TestUnleasedHolderNeverTakenOver(t *testing.T) {
	ctx := context.Background()
	s := mem.New()
	a, err := Acquire(ctx, s, Options{Operation: "load"})
	if err != nil {
		t.Fatal(err)
	}
	clk := newFakeClock()
	_, err = AcquireLeased(ctx, s, leaseOpts(clk, Options{}))
	var held *HeldError
	if !errors.As(err, &held) || held.Leased || held.LockID != a.ID() || clk.Now() != epoch {
		t.Fatalf("server against a CLI lock: %v", err)
	}
}

// TestFirstHeartbeatNotAnswered: a server whose first heartbeat gets no
// answer within two thirds of a lease does not start, and frees the lock.
func TestFirstHeartbeatNotAnswered(t *testing.T) {
	log, out := captureLogs(t)
	s := &cutStore{StorageAdapter: mem.New(), prefix: LeasePrefix, kind: backend.KindTransient, cut: true}
	clk := newFakeClock()
	res, moved := starters(t, s, clk, 1, leaseOpts(clk, Options{Logger: log}))
	if !errors.Is(res[0].err, ErrFirstHeartbeat) {
		t.Fatalf("start with no heartbeat answer: %v", res[0].err)
	}
	if moved < 2*time.Second || moved > 2500*time.Millisecond {
		t.Errorf("gave up after %s, want two thirds of the lease (2s)", moved)
	}
	if st, err := Status(context.Background(), s, Options{}); err != nil || st.Held {
		t.Errorf("lock after a failed start = %+v, %v", st, err)
	}
	if !strings.Contains(out.String(), "first heartbeat not answered") || !strings.Contains(out.String(), `"failure_class":"transient"`) {
		t.Errorf("log:\n%s", out)
	}
}

// TestLeaseOnStoreWithoutConditionalUpdate is refused.
func TestLeaseOnStoreWithoutConditionalUpdate(t *testing.T) {
	_, err := AcquireLeased(context.Background(), noCAS{mem.New()}, Options{})
	if !errors.Is(err, ErrLeaseUnsupported) {
		t.Errorf("got %v", err)
	}
	if _, err := AcquireLeased(context.Background(), mem.New(), Options{Lease: time.Second}); err == nil {
		t.Error("a 1 s lease was accepted")
	}
}

type noCAS struct{ backend.StorageAdapter }

func (noCAS) Capabilities() backend.Capabilities {
	return backend.Capabilities{ConditionalCreate: true}
}

// TestReleaseWithoutConditionalUpdate: on a store with no compare-and-swap
// the release reads, compares the id and deletes.
func TestReleaseWithoutConditionalUpdate(t *testing.T) {
	ctx := context.Background()
	s := noCAS{mem.New()}
	a, err := Acquire(ctx, s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, _ := s.Exists(ctx, LockKey); ok {
		t.Error("record left after release")
	}
}

// gatedStore holds PutIfAbsent of one key until released: a request the
// old owner sent before it stopped, still on the wire.
type gatedStore struct {
	backend.StorageAdapter
	key     string
	entered chan struct{}
	release chan struct{}
}

func (g *gatedStore) PutIfAbsent(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	if key == g.key {
		close(g.entered)
		<-g.release
		return g.StorageAdapter.PutIfAbsent(context.WithoutCancel(ctx), key, data)
	}
	return g.StorageAdapter.PutIfAbsent(ctx, key, data)
}

// TestStalePublishAfterTakeoverCollides pins the conditional-publish case of
// docs/dev/cluster-lock.md: a manifest publish (put-if-absent of the next
// version key) the old owner sent before it lost its lease, landing after a
// successor took over and published that version, fails its condition and
// leaves the successor's commit in place; landing first, it makes the
// successor's publish collide (an ordinary conflict), never a silent
// overwrite.
func TestStalePublishAfterTakeoverCollides(t *testing.T) {
	const versionKey = "graph/_manifest/v000005"
	for _, staleFirst := range []bool{false, true} {
		t.Run(map[bool]string{false: "successor_first", true: "stale_first"}[staleFirst], func(t *testing.T) {
			ctx := context.Background()
			inner := mem.New()
			cut := &cutStore{StorageAdapter: inner, prefix: LeasePrefix, kind: backend.KindTransient}
			gate := &gatedStore{StorageAdapter: cut, key: versionKey, entered: make(chan struct{}), release: make(chan struct{})}
			clk := newFakeClock()
			old, err := AcquireLeased(ctx, gate, leaseOpts(clk, Options{}))
			if err != nil {
				t.Fatal(err)
			}
			stale := make(chan error, 1)
			go func() {
				_, err := old.Guard(gate).PutIfAbsent(ctx, versionKey, []byte("old owner's commit"))
				stale <- err
			}()
			<-gate.entered // past the guard, on the wire
			cut.set(true)  // the old owner's heartbeats stop
			clk.drive(t, 250*time.Millisecond, constant(2), old.Lost())
			cut.set(false)

			res, _ := starters(t, inner, clk, 1, leaseOpts(clk, Options{}))
			if res[0].err != nil {
				t.Fatalf("takeover: %v", res[0].err)
			}
			succ := old.Guard(inner) // the old owner's guard refuses it any new write
			if _, err := succ.Put(ctx, "graph/x", nil); !errors.Is(err, ErrLeaseLost) {
				t.Errorf("old owner's new write after takeover: %v", err)
			}
			var succErr error
			if staleFirst {
				close(gate.release)
				if err := <-stale; err != nil {
					t.Fatalf("stale publish landing first: %v", err)
				}
				_, succErr = res[0].l.Guard(inner).PutIfAbsent(ctx, versionKey, []byte("successor's commit"))
				if !backend.IsPrecondition(succErr) {
					t.Errorf("successor's publish over a landed stale one: %v, want a conflict", succErr)
				}
			} else {
				if _, succErr = res[0].l.Guard(inner).PutIfAbsent(ctx, versionKey, []byte("successor's commit")); succErr != nil {
					t.Fatal(succErr)
				}
				close(gate.release)
				if err := <-stale; !backend.IsPrecondition(err) {
					t.Errorf("stale publish after the successor's: %v, want ErrPrecondition", err)
				}
			}
			b, _, _ := inner.Get(ctx, versionKey)
			want := map[bool]string{false: "successor's commit", true: "old owner's commit"}[staleFirst]
			if string(b) != want {
				t.Errorf("version holds %q, want %q", b, want)
			}
			_ = res[0].l.Release(ctx)
		})
	}
}
