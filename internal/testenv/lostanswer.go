package testenv

import (
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/counter"
	"github.com/omnigraph-go/omnigraph/backend/fault"
)

// LostAnswerInjected wraps inner (a fresh namespace) in the fault injector
// with LoseAnswer on the next conditional put, and checks that the
// PutIfAbsent is reported Unknown, reached the store exactly once, left
// exactly one object with its bytes, and that a later PutIfAbsent loses.
func LostAnswerInjected(t *testing.T, inner backend.StorageAdapter) {
	t.Helper()
	c := counter.New(inner)
	inj := fault.New(c)
	inj.LoseAnswer(fault.CondPut, 1)
	ctx := t.Context()
	_, err := inj.PutIfAbsent(ctx, "m/00001", []byte("commit-1"))
	if backend.KindOf(err) != backend.KindUnknown || backend.IsPrecondition(err) {
		t.Fatalf("lost answer: got %v (kind %s), want Unknown", err, backend.KindOf(err))
	}
	if n := c.Snapshot().CondPut; n != 1 {
		t.Fatalf("store saw %d conditional puts, want exactly 1", n)
	}
	all, err := backend.ListAll(ctx, inner, "m/")
	if err != nil || len(all) != 1 || all[0].Key != "m/00001" {
		t.Fatalf("after the lost answer the store lists %+v (%v), want exactly m/00001", all, err)
	}
	got, a, err := inner.Get(ctx, "m/00001")
	if err != nil || string(got) != "commit-1" {
		t.Fatalf("read-back = %q, %v; want commit-1", got, err)
	}
	if _, err := inj.PutIfAbsent(ctx, "m/00001", []byte("again")); !backend.IsPrecondition(err) {
		t.Fatalf("second PutIfAbsent = %v, want Precondition", err)
	}
	if st, err := inner.Stat(ctx, "m/00001"); err != nil || st.Version != a.Version {
		t.Fatalf("version moved from %q to %q (%v): a second version was written", a.Version, st.Version, err)
	}
	if n := c.Snapshot().CondPut; n != 2 {
		t.Fatalf("store saw %d conditional puts in all, want 2", n)
	}
}
