package manifest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/counter"
	"github.com/omnigraph-go/omnigraph/backend/fault"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/internal/logtest"
)

const (
	reissueEvent = "manifest request outcome unknown; re-issuing the identical conditional request"
	unknownEvent = "manifest request outcome unknown after every re-issue"
)

// reissueRig is a manifest store over counter(fault(mem)) whose pauses are
// recorded instead of slept: the counter sees every request the publisher
// sends, whether or not the injector lets it reach the store.
type reissueRig struct {
	mem    *mem.Store
	count  *counter.Counter
	fault  *fault.Injector
	m      *Store
	logs   *logtest.Capture
	mu     sync.Mutex
	pauses []time.Duration
	// onPause, if set, runs at each pause (another writer acting meanwhile).
	onPause func(n int)
}

func newReissueRig(t *testing.T) *reissueRig {
	t.Helper()
	r := &reissueRig{mem: mem.New()}
	r.fault = fault.New(r.mem)
	r.count = counter.New(r.fault)
	r.m = New(r.count)
	log, logs := logtest.New(t)
	r.logs = logs
	r.m.SetLogger(log)
	r.m.SetSleeper(func(ctx context.Context, d time.Duration) error {
		r.mu.Lock()
		r.pauses = append(r.pauses, d)
		n := len(r.pauses)
		r.mu.Unlock()
		if r.onPause != nil {
			r.onPause(n)
		}
		return ctx.Err()
	})
	return r
}

// versions lists the version keys of main's first incarnation.
func (r *reissueRig) versions(t *testing.T) []string {
	t.Helper()
	all, err := backend.ListAll(context.Background(), r.mem, IncarnationPrefix("main", 1))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, a := range all {
		keys = append(keys, a.Key)
	}
	return keys
}

// timedOut applies the first n conditional puts and then answers each with
// a request timeout (the adapters' Unknown for a mutation whose deadline
// passed after sending).
type timedOut struct {
	backend.StorageAdapter
	mu sync.Mutex
	n  int
}

func (s *timedOut) PutIfAbsent(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	a, err := s.StorageAdapter.PutIfAbsent(ctx, key, data)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n > 0 {
		s.n--
		return backend.Attrs{}, backend.NewError("put-if-absent", key, backend.KindUnknown, context.DeadlineExceeded)
	}
	return a, err
}

// TestPublishReissueRule pins the re-issue rule: a manifest create whose
// answer was lost, timed out or throttled is re-issued unchanged up to four
// times; a re-issue that finds the version taken reads it back (ours:
// success once; another's: ErrHeadMoved); no settlement is OutcomeUnknown.
// Every case asserts the requests sent and that the store holds the commit
// at most once.
func TestPublishReissueRule(t *testing.T) {
	type want struct {
		err      error // nil: success
		condPuts int
		gets     int
		landed   bool // version 2 holds our bytes afterwards
	}
	type tc struct {
		name string
		arm  func(r *reissueRig)
		want want
	}
	var cases []tc
	for k := 1; k <= 5; k++ {
		// The first attempt lands, and the answers of the first k are lost.
		w := want{condPuts: k + 1, gets: 1, landed: true}
		if k == 5 {
			w = want{err: ErrOutcomeUnknown, condPuts: 5, landed: true}
		}
		cases = append(cases, tc{fmt.Sprintf("answer lost on the first %d", k), func(r *reissueRig) {
			for i := 0; i < k; i++ {
				r.fault.LoseAnswer(fault.CondPut, 1+i)
			}
		}, w})
		// Nothing reaches the store on the first k (refused, answer lost).
		w = want{condPuts: k + 1, landed: true}
		if k == 5 {
			w = want{err: ErrOutcomeUnknown, condPuts: 5}
		}
		cases = append(cases, tc{fmt.Sprintf("lost without effect on the first %d", k), func(r *reissueRig) {
			for i := 0; i < k; i++ {
				r.fault.FailNth(fault.CondPut, 1+i, backend.KindUnknown)
			}
		}, w})
		// Throttled: each refusal proves no effect, so after five nothing
		// was published and the error says so (not Unknown).
		w = want{condPuts: k + 1, landed: true}
		if k == 5 {
			w = want{err: backend.ErrTransient, condPuts: 5}
		}
		cases = append(cases, tc{fmt.Sprintf("throttled on the first %d", k), func(r *reissueRig) {
			for i := 0; i < k; i++ {
				r.fault.Throttle(fault.CondPut, 1+i)
			}
		}, w})
	}
	cases = append(cases,
		tc{"timed out after sending, twice", func(r *reissueRig) {
			r.m.s = counter.New(&timedOut{StorageAdapter: r.mem, n: 2})
			r.count = r.m.s.(*counter.Counter)
		}, want{condPuts: 3, gets: 1, landed: true}},
		tc{"answer lost, then throttled four times", func(r *reissueRig) {
			r.fault.LoseAnswer(fault.CondPut, 1)
			for i := 2; i <= 5; i++ {
				r.fault.Throttle(fault.CondPut, i)
			}
		}, want{err: ErrOutcomeUnknown, condPuts: 5, landed: true}},
		tc{"lost without effect, then refused outright", func(r *reissueRig) {
			r.fault.FailNth(fault.CondPut, 1, backend.KindUnknown)
			r.fault.FailNth(fault.CondPut, 2, backend.KindPermanent)
		}, want{err: ErrOutcomeUnknown, condPuts: 2}},
		tc{"refused outright at once", func(r *reissueRig) {
			r.fault.FailNth(fault.CondPut, 1, backend.KindPermanent)
		}, want{err: backend.ErrPermanent, condPuts: 1}},
		tc{"answer lost, read-back fails once", func(r *reissueRig) {
			r.fault.LoseAnswer(fault.CondPut, 1)
			r.fault.FailNth(fault.Get, 1, backend.KindTransient)
		}, want{condPuts: 3, gets: 2, landed: true}},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			r := newReissueRig(t)
			head := chain(t, r.m, "main", 1, 1)
			mine := commitEntry("main", 1, 2, head.Head)
			c.arm(r)
			r.count.Reset()
			err := r.m.Publish(ctx, mine)
			if c.want.err == nil && err != nil || c.want.err != nil && !errors.Is(err, c.want.err) {
				t.Fatalf("Publish = %v, want %v", err, c.want.err)
			}
			got := r.count.Snapshot()
			if got.CondPut != c.want.condPuts || got.Get != c.want.gets {
				t.Fatalf("requests %s; want cond_put=%d get=%d", got, c.want.condPuts, c.want.gets)
			}
			if got.Put != 0 || got.Delete != 0 {
				t.Fatalf("requests %s: a publish only creates", got)
			}
			// Exactly one publish: version 2 exists once, with our commit,
			// or not at all.
			keys := r.versions(t)
			data, _, gerr := r.mem.Get(ctx, mine.Key())
			switch {
			case c.want.landed && (len(keys) != 2 || gerr != nil):
				t.Fatalf("versions %v (%v); want 1 and 2", keys, gerr)
			case c.want.landed:
				e, derr := Decode(mine.Key(), data)
				if derr != nil || e.Commit.ID != mine.Commit.ID {
					t.Fatalf("version 2 holds %+v (%v), want commit %s", e, derr, mine.Commit.ID)
				}
			case len(keys) != 1:
				t.Fatalf("versions %v; want only 1", keys)
			}
			// Pauses: one per re-issue, from the schedule.
			if n := len(r.pauses); n != c.want.condPuts-1 {
				t.Fatalf("%d pauses for %d requests", n, c.want.condPuts)
			}
			for i, d := range r.pauses {
				if d != reissuePauses[i] {
					t.Fatalf("pause %d = %v, want %v", i, d, reissuePauses[i])
				}
			}
			if n := r.logs.Count(t, reissueEvent); n != c.want.condPuts-1 {
				t.Fatalf("%d re-issue events for %d requests:\n%s", n, c.want.condPuts, r.logs)
			}
			wantFinal := 0
			if errors.Is(c.want.err, ErrOutcomeUnknown) {
				wantFinal = 1
			}
			if n := r.logs.Count(t, unknownEvent); n != wantFinal {
				t.Fatalf("%d final unknown events, want %d:\n%s", n, wantFinal, r.logs)
			}
			if err == nil {
				// Success once: a second publish of the same version is
				// now an ordinary conflict.
				r.fault.Reset()
				if err := r.m.Publish(ctx, commitEntry("main", 1, 2, head.Head)); !errors.Is(err, ErrHeadMoved) {
					t.Fatalf("a later publish of version 2 = %v, want ErrHeadMoved", err)
				}
			}
		})
	}
}

// TestPublishReissuePausesTotalAboutThreeSeconds: four re-issues, about
// three seconds of pauses in all.
func TestPublishReissuePausesTotalAboutThreeSeconds(t *testing.T) {
	var total time.Duration
	for _, d := range ReissuePauses() {
		total += d
	}
	if MaxReissues != 4 || total < 2500*time.Millisecond || total > 3500*time.Millisecond {
		t.Fatalf("%d re-issues with %v of pauses; want 4 and about 3s", MaxReissues, total)
	}
}

// TestPublishReissueFindsAnotherWriter: while our first create's answer is
// lost (it had no effect), another writer publishes the version; the
// re-issue finds it taken, reads it back, and reports an ordinary conflict.
func TestPublishReissueFindsAnotherWriter(t *testing.T) {
	ctx := context.Background()
	r := newReissueRig(t)
	head := chain(t, r.m, "main", 1, 1)
	theirs := commitEntry("main", 1, 2, head.Head)
	mine := commitEntry("main", 1, 2, head.Head)
	mine.Commit.ID, mine.Head = "mine", "mine"
	r.onPause = func(n int) {
		if n == 1 {
			if err := New(r.mem).Publish(ctx, theirs); err != nil {
				t.Error(err)
			}
		}
	}
	r.fault.FailNth(fault.CondPut, 1, backend.KindUnknown)
	r.count.Reset()
	err := r.m.Publish(ctx, mine)
	if !errors.Is(err, ErrHeadMoved) || errors.Is(err, backend.ErrUnknown) {
		t.Fatalf("Publish = %v, want ErrHeadMoved (a definite conflict)", err)
	}
	if c := r.count.Snapshot(); c.CondPut != 2 || c.Get != 1 {
		t.Fatalf("requests %s; want cond_put=2 get=1", c)
	}
	e, err := r.m.ReadVersion(ctx, "main", 1, 2)
	if err != nil || e.Commit.ID != theirs.Commit.ID {
		t.Fatalf("version 2 = %+v, %v; want the other writer's commit", e, err)
	}
}

// TestPublishFirstConflictIsNotReadBack: a version already taken on the
// first attempt is the head-moved conflict with no read-back and no
// re-issue.
func TestPublishFirstConflictIsNotReadBack(t *testing.T) {
	ctx := context.Background()
	r := newReissueRig(t)
	head := chain(t, r.m, "main", 1, 1)
	if err := r.m.Publish(ctx, commitEntry("main", 1, 2, head.Head)); err != nil {
		t.Fatal(err)
	}
	r.count.Reset()
	if err := r.m.Publish(ctx, commitEntry("main", 1, 2, head.Head)); !errors.Is(err, ErrHeadMoved) {
		t.Fatalf("Publish = %v, want ErrHeadMoved", err)
	}
	if c := r.count.Snapshot(); c.CondPut != 1 || c.Total != 1 || len(r.pauses) != 0 {
		t.Fatalf("requests %s, %d pauses; want one conditional put", c, len(r.pauses))
	}
}

// TestPublishReissueStopsWhenCancelled: a context that ends during a pause
// stops the re-issues; the outcome stays unknown.
func TestPublishReissueStopsWhenCancelled(t *testing.T) {
	r := newReissueRig(t)
	head := chain(t, r.m, "main", 1, 1)
	ctx, cancel := context.WithCancel(context.Background())
	r.onPause = func(int) { cancel() }
	r.fault.LoseAnswer(fault.CondPut, 1)
	r.count.Reset()
	err := r.m.Publish(ctx, commitEntry("main", 1, 2, head.Head))
	if !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("Publish = %v, want ErrOutcomeUnknown", err)
	}
	if c := r.count.Snapshot(); c.CondPut != 1 {
		t.Fatalf("requests %s; want the one conditional put", c)
	}
}

// TestOutcomeUnknownMessage: the unsettled outcome is Unknown by errors.Is
// and KindOf, and its message says how to find out (the branch's commits),
// never advises a blind retry, and names no storage key or store error text.
func TestOutcomeUnknownMessage(t *testing.T) {
	r := newReissueRig(t)
	head := chain(t, r.m, "main", 1, 1)
	mine := commitEntry("main", 1, 2, head.Head)
	r.fault.LoseAnswer(fault.CondPut, 1)
	for i := 2; i <= 5; i++ {
		r.fault.Throttle(fault.CondPut, i) // the last failure is a Transient
	}
	err := r.m.Publish(context.Background(), mine)
	var ue *UnknownError
	if !errors.As(err, &ue) || !errors.Is(err, backend.ErrUnknown) || backend.KindOf(err) != backend.KindUnknown {
		t.Fatalf("Publish = %v (kind %s), want *UnknownError of kind unknown", err, backend.KindOf(err))
	}
	if ue.Attempts != 5 || ue.Branch != "main" || ue.Version != 2 {
		t.Fatalf("UnknownError = %+v", ue)
	}
	msg := err.Error()
	if !strings.Contains(msg, "omnigraph commit list --branch main") {
		t.Fatalf("message does not say how to find out: %s", msg)
	}
	for _, bad := range []string{mine.Key(), "__manifest", "fault: injected", "SlowDown", "retry", "run it again", "try again"} {
		if strings.Contains(msg, bad) {
			t.Fatalf("message carries %q: %s", bad, msg)
		}
	}
}

// TestTombstoneReissued: a branch delete's create is re-issued like a
// publish.
func TestTombstoneReissued(t *testing.T) {
	ctx := context.Background()
	r := newReissueRig(t)
	chain(t, r.m, "main", 1, 1)
	ref, err := r.m.Probe(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	r.fault.LoseAnswer(fault.CondPut, 1)
	r.count.Reset()
	if err := r.m.Tombstone(ctx, ref); err != nil {
		t.Fatalf("Tombstone = %v", err)
	}
	if c := r.count.Snapshot(); c.CondPut != 2 || c.Get != 1 {
		t.Fatalf("requests %s; want cond_put=2 get=1", c)
	}
	if ref, err := r.m.Probe(ctx, "main"); err != nil || !ref.Deleted {
		t.Fatalf("after the tombstone: %+v, %v", ref, err)
	}
}
