package testenv

import (
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/counter"
	"github.com/omnigraph-go/omnigraph/backend/fault"
)

// Wire describes a cloud adapter for RunWire.
type Wire struct {
	// Open returns a store rooted at a fresh, empty prefix whose requests
	// all pass through the returned proxy.
	Open func(t *testing.T) (backend.StorageAdapter, *Proxy)
	// IsWrite matches the request that carries an object's bytes.
	IsWrite func(Request) bool
	// IsRead matches an object download.
	IsRead func(Request) bool
	// Throttle is the store's own "slow down" refusal (status, headers, body).
	Throttle Rule
}

// RunWire checks the retry and lost-answer rules on the wire, counting the
// requests the proxy saw:
//   - a conditional write (create or compare-and-swap) whose answer is lost
//     or replaced by a 5xx after it took effect is Unknown and was sent once;
//   - a conditional write refused with a throttle is Unknown and sent once;
//   - an overwrite whose answer is lost is Unknown and sent once; an
//     explicit throttle is retried at most 3 times;
//   - a read is retried up to 3 times after server errors and up to 3 times
//     after throttles, and once after a dropped answer.
func RunWire(t *testing.T, w Wire) {
	throttle := func(match func(Request) bool, times int) Rule {
		r := w.Throttle
		r.Match, r.Times = match, times
		return r
	}
	cases := []struct {
		name     string
		rule     Rule
		op       string // put_if_absent, put_if_match, put, get
		wantKind backend.Kind
		wantReqs int  // matching requests that reached the proxy
		applied  bool // the object holds the new bytes afterwards
	}{
		{name: "create answer dropped", rule: Rule{Match: w.IsWrite, Forward: true}, op: "put_if_absent", wantKind: backend.KindUnknown, wantReqs: 1, applied: true},
		{name: "create applied then 503", rule: Rule{Match: w.IsWrite, Forward: true, Status: 503}, op: "put_if_absent", wantKind: backend.KindUnknown, wantReqs: 1, applied: true},
		{name: "create throttled", rule: throttle(w.IsWrite, 1), op: "put_if_absent", wantKind: backend.KindUnknown, wantReqs: 1},
		{name: "swap answer dropped", rule: Rule{Match: w.IsWrite, Forward: true}, op: "put_if_match", wantKind: backend.KindUnknown, wantReqs: 1, applied: true},
		{name: "swap applied then 500", rule: Rule{Match: w.IsWrite, Forward: true, Status: 500}, op: "put_if_match", wantKind: backend.KindUnknown, wantReqs: 1, applied: true},
		{name: "swap throttled", rule: throttle(w.IsWrite, 1), op: "put_if_match", wantKind: backend.KindUnknown, wantReqs: 1},
		{name: "overwrite answer dropped", rule: Rule{Match: w.IsWrite, Forward: true}, op: "put", wantKind: backend.KindUnknown, wantReqs: 1, applied: true},
		{name: "overwrite applied then 500", rule: Rule{Match: w.IsWrite, Forward: true, Status: 500}, op: "put", wantKind: backend.KindUnknown, wantReqs: 1, applied: true},
		{name: "overwrite throttled twice", rule: throttle(w.IsWrite, 2), op: "put", wantKind: backend.KindNone, wantReqs: 3, applied: true},
		{name: "overwrite throttled four times", rule: throttle(w.IsWrite, 4), op: "put", wantKind: backend.KindTransient, wantReqs: 4},
		{name: "read 500 twice", rule: Rule{Match: w.IsRead, Status: 500, Times: 2}, op: "get", wantKind: backend.KindNone, wantReqs: 3},
		{name: "read 500 always", rule: Rule{Match: w.IsRead, Status: 500, Times: 100}, op: "get", wantKind: backend.KindTransient, wantReqs: 4},
		{name: "read throttled three times", rule: throttle(w.IsRead, 3), op: "get", wantKind: backend.KindNone, wantReqs: 4},
		{name: "read answer dropped", rule: Rule{Match: w.IsRead, Forward: true}, op: "get", wantKind: backend.KindNone, wantReqs: 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, p := w.Open(t)
			ctx := t.Context()
			const key = "obj"
			old, err := st.Put(ctx, key, []byte("old"))
			if err != nil {
				t.Fatal(err)
			}
			if c.op == "put_if_absent" {
				if err := st.Delete(ctx, key); err != nil {
					t.Fatal(err)
				}
			}
			p.Reset()
			p.Arm(c.rule)
			match := w.IsWrite
			switch c.op {
			case "put_if_absent":
				_, err = st.PutIfAbsent(ctx, key, []byte("new"))
			case "put_if_match":
				_, err = st.PutIfMatch(ctx, key, []byte("new"), old.Version)
			case "put":
				_, err = st.Put(ctx, key, []byte("new"))
			case "get":
				match = w.IsRead
				var got []byte
				got, _, err = st.Get(ctx, key)
				if err == nil && string(got) != "old" {
					t.Fatalf("Get = %q, want old", got)
				}
			}
			if k := backend.KindOf(err); k != c.wantKind {
				t.Fatalf("%s: got %v (kind %s), want kind %s", c.op, err, k, c.wantKind)
			}
			if n := p.Count(match); n != c.wantReqs {
				t.Fatalf("%s: %d requests went over the wire, want %d", c.op, n, c.wantReqs)
			}
			if c.op == "get" {
				return
			}
			p.Reset() // read back without faults
			got, _, gerr := st.Get(ctx, key)
			switch {
			case c.applied && (gerr != nil || string(got) != "new"):
				t.Fatalf("after the write: Get = %q, %v; want new", got, gerr)
			case !c.applied && c.op == "put_if_absent" && !backend.IsNotFound(gerr):
				t.Fatalf("refused create left %q, %v; want nothing", got, gerr)
			case !c.applied && c.op != "put_if_absent" && string(got) != "old":
				t.Fatalf("refused write left %q, %v; want old", got, gerr)
			}
			if c.op == "put_if_absent" && c.applied {
				// The create landed once: a new attempt now loses.
				if _, err := st.PutIfAbsent(ctx, key, []byte("again")); !backend.IsPrecondition(err) {
					t.Fatalf("PutIfAbsent after the lost answer = %v, want Precondition", err)
				}
			}
		})
	}
}

// IsMethod matches requests by HTTP method (for Wire.IsWrite/IsRead).
func IsMethod(m string) func(Request) bool { return func(r Request) bool { return r.Method == m } }

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
