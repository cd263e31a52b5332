package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
)

// tripCtx is a context that cancels itself the at-th time the store looks
// at it (Done or Err): the store is then inside the call, past its entry
// check, which is what "cancelled in flight" means for a store that gives
// no other handle on its progress.
type tripCtx struct {
	context.Context
	looks atomic.Int32
	at    int32
	fire  func()
}

func (c *tripCtx) Done() <-chan struct{} { c.look(); return c.Context.Done() }
func (c *tripCtx) Err() error            { c.look(); return c.Context.Err() }

func (c *tripCtx) look() {
	if c.at > 0 && c.looks.Add(1) == c.at {
		c.fire()
	}
}

// trigger is one way of cancelling a call in flight.
type trigger struct {
	name  string
	looks int32         // cancel at the store's n-th look at the context,
	after time.Duration // or this long after the call started, whichever is first
}

var triggers = []trigger{
	{name: "at the second look", looks: 2, after: 20 * time.Millisecond},
	{name: "at the third look", looks: 3, after: 20 * time.Millisecond},
	{name: "after 100µs", after: 100 * time.Microsecond},
	{name: "after 1ms", after: time.Millisecond},
	{name: "after 10ms", after: 10 * time.Millisecond},
}

// inFlight runs call under a context that trig cancels while the call runs,
// and returns the call's error. It fails the test when the call has not
// returned grace after the cancel. The context has no deadline: a
// cancellation, not a timeout, is what stops it.
func inFlight(t *testing.T, trig trigger, grace time.Duration, what string, call func(ctx context.Context) error) error {
	t.Helper()
	inner, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	defer cancel()
	fired := make(chan struct{})
	var once sync.Once
	fire := func() { once.Do(func() { cancel(); close(fired) }) }
	ctx := &tripCtx{Context: inner, at: trig.looks, fire: fire}
	if trig.after > 0 {
		stop := time.AfterFunc(trig.after, fire)
		defer stop.Stop()
	}
	res := make(chan error, 1)
	go func() { res <- call(ctx) }()
	select {
	case err := <-res:
		return err
	case <-fired:
	}
	wait := time.NewTimer(grace)
	defer wait.Stop()
	select {
	case err := <-res:
		return err
	case <-wait.C:
		t.Fatalf("%s cancelled %s: still running %v after its context was cancelled (a call must watch its context while it blocks)", what, trig.name, grace)
		return nil
	}
}

// testCancelInFlight: a call whose context is cancelled while it runs
// returns promptly, with no error (it finished first) or one satisfying
// errors.Is(err, context.Canceled); a write leaves nothing (or the old
// object) or the whole new object, never part of it; a read that reports
// success returns the whole answer.
func testCancelInFlight(t *testing.T, s backend.StorageAdapter, o Options) {
	ctx := ctxFor(t)
	caps := s.Capabilities()
	const size = 1 << 20
	payload := largeBody(size, 7)
	old := []byte("old bytes")
	mustPut(t, ctx, s, "cif/read", payload)
	for i := 0; i < 3; i++ {
		mustPut(t, ctx, s, fmt.Sprintf("cif/list/%d", i), []byte("l"))
	}
	canceled := func(what string, err error) {
		t.Helper()
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("%s cancelled in flight: %v (kind %s), want nil or an error satisfying errors.Is(err, context.Canceled)", what, err, backend.KindOf(err))
		}
	}
	// holds checks that key holds one of the whole payloads (nil: absent).
	holds := func(what, key string, want ...[]byte) {
		t.Helper()
		got, _, err := s.Get(ctx, key)
		for _, w := range want {
			if (w == nil && errors.Is(err, backend.ErrNotFound)) || (w != nil && err == nil && bytes.Equal(got, w)) {
				return
			}
		}
		t.Fatalf("%s cancelled in flight left %d bytes (%v): neither nothing, the old object nor the whole new one", what, len(got), err)
	}
	for ti, trig := range triggers {
		t.Run(trig.name, func(t *testing.T) {
			grace := o.CancelGrace
			key := func(name string) string { return fmt.Sprintf("cif/%d/%s", ti, name) }
			// Reads: success means the whole answer.
			var got []byte
			err := inFlight(t, trig, grace, "Get", func(c context.Context) (err error) { got, _, err = s.Get(c, "cif/read"); return err })
			canceled("Get", err)
			if err == nil && !bytes.Equal(got, payload) {
				t.Fatalf("Get cancelled in flight reported success with %d of %d bytes", len(got), size)
			}
			err = inFlight(t, trig, grace, "GetRange", func(c context.Context) (err error) { got, err = s.GetRange(c, "cif/read", 10, size/2); return err })
			canceled("GetRange", err)
			if err == nil && !bytes.Equal(got, payload[10:10+size/2]) {
				t.Fatalf("GetRange cancelled in flight reported success with %d of %d bytes", len(got), size/2)
			}
			var st backend.Attrs
			err = inFlight(t, trig, grace, "Stat", func(c context.Context) (err error) { st, err = s.Stat(c, "cif/read"); return err })
			canceled("Stat", err)
			if err == nil && st.Size != size {
				t.Fatalf("Stat cancelled in flight reported size %d, want %d", st.Size, size)
			}
			var ok bool
			err = inFlight(t, trig, grace, "Exists", func(c context.Context) (err error) { ok, err = s.Exists(c, "cif/read"); return err })
			canceled("Exists", err)
			if err == nil && !ok {
				t.Fatal("Exists cancelled in flight reported false for an existing object")
			}
			var page backend.ListPage
			err = inFlight(t, trig, grace, "List", func(c context.Context) (err error) {
				page, err = s.List(c, "cif/list/", backend.ListOptions{})
				return err
			})
			canceled("List", err)
			if err == nil && len(page.Objects) != 3 {
				t.Fatalf("List cancelled in flight reported success with %d of 3 keys", len(page.Objects))
			}
			// Writes: nothing (or the old object), or the whole new one.
			err = inFlight(t, trig, grace, "Put", func(c context.Context) error { _, err := s.Put(c, key("put"), payload); return err })
			canceled("Put", err)
			if err == nil {
				holds("Put (succeeded)", key("put"), payload)
			}
			holds("Put", key("put"), nil, payload)
			mustPut(t, ctx, s, key("over"), old)
			err = inFlight(t, trig, grace, "Put over an object", func(c context.Context) error { _, err := s.Put(c, key("over"), payload); return err })
			canceled("Put over an object", err)
			holds("Put over an object", key("over"), old, payload)
			if caps.ConditionalCreate {
				err = inFlight(t, trig, grace, "PutIfAbsent", func(c context.Context) error { _, err := s.PutIfAbsent(c, key("pia"), payload); return err })
				canceled("PutIfAbsent", err)
				if err == nil {
					holds("PutIfAbsent (succeeded)", key("pia"), payload)
				}
				holds("PutIfAbsent", key("pia"), nil, payload)
			}
			if caps.ConditionalUpdate {
				v := mustPut(t, ctx, s, key("cas"), old).Version
				err = inFlight(t, trig, grace, "PutIfMatch", func(c context.Context) error { _, err := s.PutIfMatch(c, key("cas"), payload, v); return err })
				canceled("PutIfMatch", err)
				if err == nil {
					holds("PutIfMatch (succeeded)", key("cas"), payload)
				}
				holds("PutIfMatch", key("cas"), old, payload)
			}
			mustPut(t, ctx, s, key("del"), payload)
			err = inFlight(t, trig, grace, "Delete", func(c context.Context) error { return s.Delete(c, key("del")) })
			canceled("Delete", err)
			if err == nil {
				holds("Delete (succeeded)", key("del"), nil)
			}
			holds("Delete", key("del"), nil, payload)
			for i := 0; i < 4; i++ {
				mustPut(t, ctx, s, key(fmt.Sprintf("dp/%d", i)), payload)
			}
			err = inFlight(t, trig, grace, "DeletePrefix", func(c context.Context) error { return s.DeletePrefix(c, key("dp/")) })
			canceled("DeletePrefix", err)
			for i := 0; i < 4; i++ {
				k := key(fmt.Sprintf("dp/%d", i))
				if err == nil {
					holds("DeletePrefix (succeeded)", k, nil)
				}
				holds("DeletePrefix", k, nil, payload)
			}
		})
	}
}

// testDenied: a store that refuses the caller (Options.Deny: wrong
// credentials, no permission) fails every method loudly, with a
// Configuration or Permanent error: Exists never answers false and List
// never an empty page.
func testDenied(t *testing.T, s backend.StorageAdapter, o Options) {
	if o.Deny == nil {
		skipRule(t, "no refusing store given (conformance.WithDeny)")
	}
	d := o.Deny(t)
	if d == nil {
		t.Fatal("Deny returned a nil store")
	}
	ctx := ctxFor(t)
	caps := d.Capabilities()
	loud := func(what string, err error) {
		t.Helper()
		switch k := backend.KindOf(err); k {
		case backend.KindConfiguration, backend.KindPermanent:
		case backend.KindNone:
			t.Fatalf("%s on a refusing store succeeded: a refusal must be an error", what)
		default:
			t.Fatalf("%s on a refusing store: %v (kind %s), want a Configuration or Permanent error", what, err, k)
		}
	}
	_, _, err := d.Get(ctx, "denied/obj")
	loud("Get", err)
	_, err = d.GetRange(ctx, "denied/obj", 0, 10)
	loud("GetRange", err)
	_, err = d.Stat(ctx, "denied/obj")
	loud("Stat", err)
	ok, err := d.Exists(ctx, "denied/obj")
	if err == nil {
		t.Fatalf("Exists on a refusing store answered %v with no error: a refusal must not read as absence", ok)
	}
	loud("Exists", err)
	page, err := d.List(ctx, "denied/", backend.ListOptions{})
	if err == nil {
		t.Fatalf("List on a refusing store answered a page of %d keys with no error: a refusal must not read as an empty listing", len(page.Objects))
	}
	loud("List", err)
	_, err = d.Put(ctx, "denied/obj", []byte("x"))
	loud("Put", err)
	if caps.ConditionalCreate {
		_, err = d.PutIfAbsent(ctx, "denied/new", []byte("x"))
		loud("PutIfAbsent", err)
	}
	if caps.ConditionalUpdate {
		_, err = d.PutIfMatch(ctx, "denied/obj", []byte("x"), "1")
		loud("PutIfMatch", err)
	}
	loud("Delete", d.Delete(ctx, "denied/obj"))
	loud("DeletePrefix", d.DeletePrefix(ctx, "denied/"))
}
