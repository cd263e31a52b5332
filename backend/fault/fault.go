// Package fault is a StorageAdapter wrapper that injects failures: fail the
// n-th request of a class, apply a request but lose its answer, throttle, add
// latency, and crash the store at (or after) the k-th write. Recovery and
// commit code is tested by arming these rules, never by reasoning about what
// a store might do.
//
// With no rule armed the Injector is transparent and passes the conformance
// suite.
package fault

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/counter"
)

// Class is a request class, shared with package counter: GetRange is a Get,
// Stat and Exists are Heads, PutIfAbsent and PutIfMatch are CondPuts, and
// DeletePrefix is a Delete.
type Class = counter.Class

// Request classes, re-exported from package counter, plus Any.
const (
	Get     = counter.Get
	Head    = counter.Head
	List    = counter.List
	Put     = counter.Put
	CondPut = counter.CondPut
	Delete  = counter.Delete
	// Any matches a request of every class.
	Any Class = -1
)

// ErrCrashed is the cause of every error a crashed Injector returns. Those
// errors are also backend.ErrUnknown: a caller cannot tell a crash from a
// lost answer, and must not.
var ErrCrashed = errors.New("fault: store crashed (injected)")

// ErrInjected is the cause of errors from FailNth, Throttle and LoseAnswer.
var ErrInjected = errors.New("fault: injected")

type action int

const (
	fail action = iota
	throttle
	loseAnswer
)

type rule struct {
	class  Class
	left   int // matching requests still to pass before this one fires
	action action
	kind   backend.Kind
}

var _ backend.StorageAdapter = (*Injector)(nil)

// Injector wraps a StorageAdapter and applies the armed rules. All methods
// are safe for concurrent use, and rules may be armed while requests run.
type Injector struct {
	inner backend.StorageAdapter

	mu         sync.Mutex
	rules      []*rule
	latency    time.Duration
	writes     int
	crashAt    int // 0: not armed
	crashAfter int // 0: not armed
	crashed    bool
	// partialPrefix >= 0: the next DeletePrefix removes only that many
	// objects, then the store crashes.
	partialPrefix int
}

// New wraps inner with no rules armed.
func New(inner backend.StorageAdapter) *Injector { return &Injector{inner: inner, partialPrefix: -1} }

// CrashDeletePrefixAfter makes the next DeletePrefix crash part way: it
// deletes the first n objects under the prefix (in key order), then the
// store crashes (that call and every later request fail with ErrCrashed
// until Heal or Reset), as a process killed in the middle of a recursive
// delete would leave it. n < 0 disarms.
func (f *Injector) CrashDeletePrefixAfter(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.partialPrefix = n
}

// Unwrap returns the wrapped adapter.
func (f *Injector) Unwrap() backend.StorageAdapter { return f.inner }

func (f *Injector) arm(r *rule) {
	if r.left < 1 {
		r.left = 1
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = append(f.rules, r)
}

// FailNth makes the n-th request of class (counted from now, 1 = the next
// one) fail with an error of kind, without reaching the inner store. Each
// rule fires once; if two rules pick the same request the earlier one wins.
func (f *Injector) FailNth(class Class, n int, kind backend.Kind) {
	f.arm(&rule{class: class, left: n, action: fail, kind: kind})
}

// LoseAnswer makes the n-th request of class (counted from now) reach the
// inner store and take effect, and then report backend.ErrUnknown instead of
// its result: the reply was lost on the way back.
func (f *Injector) LoseAnswer(class Class, n int) {
	f.arm(&rule{class: class, left: n, action: loseAnswer})
}

// Throttle makes the n-th request of class (counted from now) fail with a
// Transient "SlowDown" error without reaching the inner store.
func (f *Injector) Throttle(class Class, n int) {
	f.arm(&rule{class: class, left: n, action: throttle})
}

// Latency makes every later request wait d before it is handled. A
// cancelled context ends the wait with a Transient error.
func (f *Injector) Latency(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.latency = d
}

// CrashAtWrite arms a crash at the k-th write counted from the start (see
// Writes): that write is not applied, and it and every later request fail
// with ErrCrashed until Heal or Reset. k <= 0 disarms.
func (f *Injector) CrashAtWrite(k int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.crashAt = k
}

// CrashAfterWrite is CrashAtWrite, except that the k-th write is applied
// before the store crashes (its caller still gets ErrCrashed).
func (f *Injector) CrashAfterWrite(k int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.crashAfter = k
}

// Writes is the number of writes (Put, PutIfAbsent, PutIfMatch, Delete,
// DeletePrefix) that arrived before the crash, the crashing one included.
// A "crash at every k" loop runs k = 1, 2, ... until Writes() < k.
func (f *Injector) Writes() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writes
}

// Crashed reports whether the store is crashed.
func (f *Injector) Crashed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.crashed
}

// Heal brings a crashed store back ("the process restarted"): requests reach
// the inner store again and the crash points are disarmed. The write count
// and other rules are kept.
func (f *Injector) Heal() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.crashed = false
	f.crashAt, f.crashAfter = 0, 0
	f.partialPrefix = -1
}

// Reset disarms every rule, heals the store and zeroes the write count.
func (f *Injector) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = nil
	f.latency = 0
	f.writes = 0
	f.crashAt, f.crashAfter = 0, 0
	f.crashed = false
	f.partialPrefix = -1
}

// decision is what happens to one request.
type decision struct {
	err        error // fail now, without applying
	loseAnswer bool  // apply, then report Unknown
	crashAfter bool  // apply, then crash
}

func crashedErr(op, key string) error {
	return backend.NewError(op, key, backend.KindUnknown, ErrCrashed)
}

// admit applies latency and the rules to one request.
func (f *Injector) admit(ctx context.Context, op, key string, class Class) decision {
	f.mu.Lock()
	d := f.latency
	f.mu.Unlock()
	if d > 0 {
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return decision{err: backend.NewError(op, key, backend.KindTransient, ctx.Err())}
		case <-t.C:
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.crashed {
		return decision{err: crashedErr(op, key)}
	}
	var dec decision
	if class.IsWrite() {
		f.writes++
		switch {
		case f.crashAt > 0 && f.writes == f.crashAt:
			f.crashed = true
			return decision{err: crashedErr(op, key)}
		case f.crashAfter > 0 && f.writes == f.crashAfter:
			dec.crashAfter = true
		}
	}
	var fired *rule
	kept := f.rules[:0]
	for _, r := range f.rules {
		if r.class == class || r.class == Any {
			r.left--
			if r.left == 0 {
				if fired == nil {
					fired = r
				}
				continue // one-shot: consumed
			}
		}
		kept = append(kept, r)
	}
	f.rules = kept
	if fired == nil || dec.crashAfter {
		return dec
	}
	switch fired.action {
	case fail:
		dec.err = backend.NewError(op, key, fired.kind, fmt.Errorf("%w: failure of kind %s", ErrInjected, fired.kind))
	case throttle:
		dec.err = backend.NewError(op, key, backend.KindTransient, fmt.Errorf("%w: SlowDown: please reduce your request rate", ErrInjected))
	case loseAnswer:
		dec.loseAnswer = true
	}
	return dec
}

// finish turns an applied request's result into what the caller sees.
func (f *Injector) finish(op, key string, dec decision, err error) error {
	switch {
	case dec.crashAfter:
		f.mu.Lock()
		f.crashed = true
		f.mu.Unlock()
		return crashedErr(op, key)
	case dec.loseAnswer:
		return backend.NewError(op, key, backend.KindUnknown, fmt.Errorf("%w: the request was applied but its answer was lost", ErrInjected))
	}
	return err
}

// Get implements backend.StorageAdapter.
func (f *Injector) Get(ctx context.Context, key string) ([]byte, backend.Attrs, error) {
	dec := f.admit(ctx, "get", key, Get)
	if dec.err != nil {
		return nil, backend.Attrs{}, dec.err
	}
	b, a, err := f.inner.Get(ctx, key)
	if err = f.finish("get", key, dec, err); err != nil {
		return nil, backend.Attrs{}, err
	}
	return b, a, nil
}

// GetRange implements backend.StorageAdapter.
func (f *Injector) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	dec := f.admit(ctx, "get-range", key, Get)
	if dec.err != nil {
		return nil, dec.err
	}
	b, err := f.inner.GetRange(ctx, key, offset, length)
	if err = f.finish("get-range", key, dec, err); err != nil {
		return nil, err
	}
	return b, nil
}

// Stat implements backend.StorageAdapter.
func (f *Injector) Stat(ctx context.Context, key string) (backend.Attrs, error) {
	dec := f.admit(ctx, "stat", key, Head)
	if dec.err != nil {
		return backend.Attrs{}, dec.err
	}
	a, err := f.inner.Stat(ctx, key)
	if err = f.finish("stat", key, dec, err); err != nil {
		return backend.Attrs{}, err
	}
	return a, nil
}

func (f *Injector) write(ctx context.Context, op, key string, class Class, do func() (backend.Attrs, error)) (backend.Attrs, error) {
	dec := f.admit(ctx, op, key, class)
	if dec.err != nil {
		return backend.Attrs{}, dec.err
	}
	a, err := do()
	if err = f.finish(op, key, dec, err); err != nil {
		return backend.Attrs{}, err
	}
	return a, nil
}

// Put implements backend.StorageAdapter.
func (f *Injector) Put(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	return f.write(ctx, "put", key, Put, func() (backend.Attrs, error) { return f.inner.Put(ctx, key, data) })
}

// PutIfAbsent implements backend.StorageAdapter.
func (f *Injector) PutIfAbsent(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	return f.write(ctx, "put-if-absent", key, CondPut, func() (backend.Attrs, error) { return f.inner.PutIfAbsent(ctx, key, data) })
}

// PutIfMatch implements backend.StorageAdapter.
func (f *Injector) PutIfMatch(ctx context.Context, key string, data []byte, version string) (backend.Attrs, error) {
	return f.write(ctx, "put-if-match", key, CondPut, func() (backend.Attrs, error) { return f.inner.PutIfMatch(ctx, key, data, version) })
}

// List implements backend.StorageAdapter.
func (f *Injector) List(ctx context.Context, prefix string, opts backend.ListOptions) (backend.ListPage, error) {
	dec := f.admit(ctx, "list", prefix, List)
	if dec.err != nil {
		return backend.ListPage{}, dec.err
	}
	p, err := f.inner.List(ctx, prefix, opts)
	if err = f.finish("list", prefix, dec, err); err != nil {
		return backend.ListPage{}, err
	}
	return p, nil
}

// Exists implements backend.StorageAdapter.
func (f *Injector) Exists(ctx context.Context, key string) (bool, error) {
	dec := f.admit(ctx, "exists", key, Head)
	if dec.err != nil {
		return false, dec.err
	}
	ok, err := f.inner.Exists(ctx, key)
	if err = f.finish("exists", key, dec, err); err != nil {
		return false, err
	}
	return ok, nil
}

// Delete implements backend.StorageAdapter.
func (f *Injector) Delete(ctx context.Context, key string) error {
	_, err := f.write(ctx, "delete", key, Delete, func() (backend.Attrs, error) { return backend.Attrs{}, f.inner.Delete(ctx, key) })
	return err
}

// DeletePrefix implements backend.StorageAdapter; it is one Delete-class
// write. CrashDeletePrefixAfter makes it stop part way.
func (f *Injector) DeletePrefix(ctx context.Context, prefix string) error {
	_, err := f.write(ctx, "delete-prefix", prefix, Delete, func() (backend.Attrs, error) {
		f.mu.Lock()
		n := f.partialPrefix
		f.partialPrefix = -1
		f.mu.Unlock()
		if n < 0 {
			return backend.Attrs{}, f.inner.DeletePrefix(ctx, prefix)
		}
		objs, err := backend.ListAll(ctx, f.inner, prefix)
		if err != nil {
			return backend.Attrs{}, err
		}
		for i, o := range objs {
			if i >= n {
				break
			}
			if err := f.inner.Delete(ctx, o.Key); err != nil {
				return backend.Attrs{}, err
			}
		}
		f.mu.Lock()
		f.crashed = true
		f.mu.Unlock()
		return backend.Attrs{}, crashedErr("delete-prefix", prefix)
	})
	return err
}

// Capabilities implements backend.StorageAdapter.
func (f *Injector) Capabilities() backend.Capabilities { return f.inner.Capabilities() }

// Close implements backend.StorageAdapter.
func (f *Injector) Close() error { return f.inner.Close() }

var _ backend.TempSweeper = (*Injector)(nil)

// SweepTemp implements backend.TempSweeper; a sweep deletes, so it is one
// Delete-class write: counted for crash points, failed by a rule, refused
// by a crashed store.
func (f *Injector) SweepTemp(ctx context.Context, prefix string, olderThan time.Time, dryRun bool) (backend.TempSwept, bool, error) {
	var res backend.TempSwept
	ok := true
	_, err := f.write(ctx, "sweep-temp", prefix, Delete, func() (backend.Attrs, error) {
		var err error
		res, ok, err = backend.SweepTempBelow(ctx, f.inner, prefix, olderThan, dryRun)
		return backend.Attrs{}, err
	})
	return res, ok, err
}
