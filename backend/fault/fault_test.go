package fault_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/counter"
	"github.com/omnigraph-go/omnigraph/backend/fault"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/conformance"
)

func TestConformance(t *testing.T) {
	conformance.Run(t, func(t *testing.T) backend.StorageAdapter {
		return fault.New(mem.New())
	})
}

// The answer of an applied PutIfAbsent is lost: the caller hears Unknown,
// the object exists exactly once with the caller's bytes, and a second
// attempt is refused instead of writing a duplicate.
func TestLostAnswerPutIfAbsent(t *testing.T) {
	ctx := t.Context()
	inner := mem.New()
	c := counter.New(inner)
	inj := fault.New(c)
	inj.LoseAnswer(fault.CondPut, 1)

	_, err := inj.PutIfAbsent(ctx, "graph/_manifest/00001", []byte("commit-1"))
	if !errors.Is(err, backend.ErrUnknown) || backend.KindOf(err) != backend.KindUnknown {
		t.Fatalf("PutIfAbsent with a lost answer = %v (kind %s), want Unknown", err, backend.KindOf(err))
	}
	if errors.Is(err, backend.ErrPrecondition) || errors.Is(err, backend.ErrTransient) {
		t.Fatalf("lost answer must not look like a failure: %v", err)
	}
	if got := c.Snapshot().CondPut; got != 1 {
		t.Fatalf("inner store saw %d conditional puts, want 1 (the write was applied once)", got)
	}
	all, err := backend.ListAll(ctx, inj, "graph/")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 || all[0].Key != "graph/_manifest/00001" {
		t.Fatalf("read-back lists %+v, want exactly the one object", all)
	}
	got, _, err := inj.Get(ctx, "graph/_manifest/00001")
	if err != nil || string(got) != "commit-1" {
		t.Fatalf("read-back = %q, %v; want commit-1", got, err)
	}
	_, err = inj.PutIfAbsent(ctx, "graph/_manifest/00001", []byte("commit-1-again"))
	if !errors.Is(err, backend.ErrPrecondition) {
		t.Fatalf("second PutIfAbsent = %v, want Precondition", err)
	}
	if got, _, _ := inj.Get(ctx, "graph/_manifest/00001"); string(got) != "commit-1" {
		t.Fatalf("content changed to %q", got)
	}
}

func TestFailNth(t *testing.T) {
	kinds := []backend.Kind{backend.KindTransient, backend.KindConfiguration, backend.KindNotFound,
		backend.KindPrecondition, backend.KindPermanent, backend.KindUnknown}
	for _, kind := range kinds {
		t.Run(kind.String(), func(t *testing.T) {
			ctx := t.Context()
			c := counter.New(mem.New())
			inj := fault.New(c)
			inj.FailNth(fault.Put, 2, kind)
			for i, key := range []string{"a", "b", "c"} {
				_, err := inj.Put(ctx, key, []byte(key))
				if i == 1 {
					if backend.KindOf(err) != kind || !errors.Is(err, fault.ErrInjected) {
						t.Fatalf("second Put = %v (kind %s), want injected %s", err, backend.KindOf(err), kind)
					}
					continue
				}
				if err != nil {
					t.Fatalf("Put %d: %v", i+1, err)
				}
			}
			// The failed request never reached the store.
			if got := c.Snapshot().Put; got != 2 {
				t.Fatalf("inner saw %d puts, want 2", got)
			}
			if ok, _ := inj.Exists(ctx, "b"); ok {
				t.Fatal("a failed Put was applied")
			}
		})
	}
}

func TestRulesAreClassScopedAndOneShot(t *testing.T) {
	ctx := t.Context()
	inj := fault.New(mem.New())
	inj.Put(ctx, "k", []byte("v"))
	inj.FailNth(fault.Head, 1, backend.KindTransient)
	// Gets and Lists do not consume a Head rule.
	if _, _, err := inj.Get(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if _, err := inj.List(ctx, "", backend.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := inj.Exists(ctx, "k"); !errors.Is(err, backend.ErrTransient) {
		t.Fatalf("Exists = %v, want injected Transient", err)
	}
	if _, err := inj.Stat(ctx, "k"); err != nil {
		t.Fatalf("the rule fired twice: %v", err)
	}
	inj.FailNth(fault.Any, 2, backend.KindPermanent)
	if _, err := inj.GetRange(ctx, "k", 0, 1); err != nil {
		t.Fatal(err)
	}
	if err := inj.Delete(ctx, "k"); !errors.Is(err, backend.ErrPermanent) {
		t.Fatalf("Delete = %v, want injected Permanent", err)
	}
	if ok, _ := inj.Exists(ctx, "k"); !ok {
		t.Fatal("the failed Delete was applied")
	}
}

func TestThrottle(t *testing.T) {
	ctx := t.Context()
	c := counter.New(mem.New())
	inj := fault.New(c)
	inj.Throttle(fault.List, 1)
	_, err := inj.List(ctx, "", backend.ListOptions{})
	if backend.KindOf(err) != backend.KindTransient {
		t.Fatalf("throttled List = %v, want Transient", err)
	}
	if c.Snapshot().List != 0 {
		t.Fatal("a throttled request reached the store")
	}
	if _, err := inj.List(ctx, "", backend.ListOptions{}); err != nil {
		t.Fatalf("second List: %v", err)
	}
}

func TestLoseAnswerOfPutIfMatchAndDelete(t *testing.T) {
	ctx := t.Context()
	inj := fault.New(mem.New())
	a, _ := inj.Put(ctx, "k", []byte("v1"))
	inj.LoseAnswer(fault.CondPut, 1)
	if _, err := inj.PutIfMatch(ctx, "k", []byte("v2"), a.Version); backend.KindOf(err) != backend.KindUnknown {
		t.Fatalf("PutIfMatch = %v, want Unknown", err)
	}
	if got, _, _ := inj.Get(ctx, "k"); string(got) != "v2" {
		t.Fatalf("the lost PutIfMatch was not applied: %q", got)
	}
	// Replaying with the old token is refused: Unknown never authorises a replay.
	if _, err := inj.PutIfMatch(ctx, "k", []byte("v2"), a.Version); !errors.Is(err, backend.ErrPrecondition) {
		t.Fatalf("replayed PutIfMatch = %v, want Precondition", err)
	}
	inj.LoseAnswer(fault.Delete, 1)
	if err := inj.Delete(ctx, "k"); backend.KindOf(err) != backend.KindUnknown {
		t.Fatalf("Delete = %v, want Unknown", err)
	}
	if ok, _ := inj.Exists(ctx, "k"); ok {
		t.Fatal("the lost Delete was not applied")
	}
}

func TestLatencyRespectsContext(t *testing.T) {
	c := counter.New(mem.New())
	inj := fault.New(c)
	inj.Latency(time.Hour)
	ctx, cancel := context.WithCancel(t.Context())
	go cancel()
	_, err := inj.Put(ctx, "k", []byte("v"))
	if backend.KindOf(err) != backend.KindTransient || !errors.Is(err, context.Canceled) {
		t.Fatalf("Put under a cancelled wait = %v, want Transient wrapping context.Canceled", err)
	}
	if c.Snapshot().Total != 0 {
		t.Fatal("the request reached the store after its context ended")
	}
}

// writeWorkload issues five writes and reports the first error.
func writeWorkload(ctx context.Context, s backend.StorageAdapter) error {
	steps := []func() error{
		func() error { _, err := s.Put(ctx, "w/1", []byte("1")); return err },
		func() error { _, err := s.PutIfAbsent(ctx, "w/2", []byte("2")); return err },
		func() error {
			a, err := s.Stat(ctx, "w/2")
			if err != nil {
				return err
			}
			_, err = s.PutIfMatch(ctx, "w/2", []byte("2b"), a.Version)
			return err
		},
		func() error { return s.Delete(ctx, "w/1") },
		func() error { return s.DeletePrefix(ctx, "w/") },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

func TestCrashAtEveryWrite(t *testing.T) {
	ctx := t.Context()
	for k := 1; ; k++ {
		store := mem.New()
		c := counter.New(store)
		inj := fault.New(c)
		inj.CrashAtWrite(k)
		err := writeWorkload(ctx, inj)
		if inj.Writes() < k {
			if err != nil || k != 6 {
				t.Fatalf("k=%d: workload of 5 writes ended with %v after %d writes", k, err, inj.Writes())
			}
			return
		}
		if !errors.Is(err, fault.ErrCrashed) || !errors.Is(err, backend.ErrUnknown) {
			t.Fatalf("k=%d: workload error %v, want ErrCrashed classified Unknown", k, err)
		}
		// The crashing write was not applied: the inner store saw k-1 writes.
		n := c.Snapshot()
		if applied := n.Put + n.CondPut + n.Delete; applied != k-1 {
			t.Fatalf("k=%d: inner saw %v", k, n)
		}
		// Every later request fails too, reads included, until Heal.
		if _, _, err := inj.Get(ctx, "w/2"); !errors.Is(err, fault.ErrCrashed) {
			t.Fatalf("k=%d: Get after crash = %v", k, err)
		}
		if !inj.Crashed() {
			t.Fatalf("k=%d: Crashed() = false", k)
		}
		inj.Heal()
		if _, err := inj.Exists(ctx, "w/2"); err != nil {
			t.Fatalf("k=%d: Exists after Heal: %v", k, err)
		}
	}
}

func TestCrashAfterWriteApplies(t *testing.T) {
	ctx := t.Context()
	inj := fault.New(mem.New())
	inj.CrashAfterWrite(2)
	if _, err := inj.Put(ctx, "a", []byte("1")); err != nil {
		t.Fatal(err)
	}
	_, err := inj.PutIfAbsent(ctx, "b", []byte("2"))
	if !errors.Is(err, fault.ErrCrashed) || backend.KindOf(err) != backend.KindUnknown {
		t.Fatalf("crashing write = %v, want ErrCrashed/Unknown", err)
	}
	if _, err := inj.Stat(ctx, "a"); !errors.Is(err, fault.ErrCrashed) {
		t.Fatalf("Stat after crash = %v", err)
	}
	if inj.Writes() != 2 {
		t.Fatalf("Writes() = %d, want 2", inj.Writes())
	}
	inj.Reset()
	if got, _, err := inj.Get(ctx, "b"); err != nil || string(got) != "2" {
		t.Fatalf("after Reset, Get(b) = %q, %v; the write before the crash must be applied", got, err)
	}
	if inj.Writes() != 0 {
		t.Fatalf("Writes() after Reset = %d", inj.Writes())
	}
}

// TestCrashDeletePrefixPartWay: an armed DeletePrefix deletes only the
// first n objects under the prefix (key order), then the store is crashed;
// after Heal the rest is still there and a plain DeletePrefix finishes.
func TestCrashDeletePrefixPartWay(t *testing.T) {
	ctx := context.Background()
	f := fault.New(mem.New())
	for _, k := range []string{"d/a", "d/b", "d/c", "e/x"} {
		if _, err := f.Put(ctx, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	f.CrashDeletePrefixAfter(1)
	if err := f.DeletePrefix(ctx, "d/"); !errors.Is(err, fault.ErrCrashed) || !errors.Is(err, backend.ErrUnknown) {
		t.Fatalf("partial DeletePrefix = %v, want a crash", err)
	}
	if !f.Crashed() {
		t.Fatal("the store is not crashed after a partial DeletePrefix")
	}
	f.Heal()
	left, err := backend.ListAll(ctx, f, "")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range left {
		keys = append(keys, o.Key)
	}
	if strings.Join(keys, ",") != "d/b,d/c,e/x" {
		t.Fatalf("after a crash part way: %v, want d/b,d/c,e/x", keys)
	}
	if err := f.DeletePrefix(ctx, "d/"); err != nil {
		t.Fatal(err)
	}
	if left, _ := backend.ListAll(ctx, f, "d/"); len(left) != 0 {
		t.Fatalf("a later DeletePrefix left %v", left)
	}
}
