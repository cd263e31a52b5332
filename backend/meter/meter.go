// Package meter charges the bytes read from storage to an allowance carried
// in the request's context, so one query cannot read without bound: the
// storage-bytes budget of a query (graph.Budget.ReadBytes). It is a
// StorageAdapter wrapper; a request whose context carries no allowance
// passes through unchanged.
//
// The rules, each asserted by meter_test.go:
//   - Get and GetRange add the length of the bytes they return to the
//     context's Reads; no other method is charged (writes, lists and stats
//     read no object data).
//   - A read whose Reads is already over its limit is refused before any
//     request is made, with an error matching ErrExceeded.
//   - A read that takes the total over the limit returns that error instead
//     of its bytes (so the overshoot is at most one object).
//   - Everything else (results, errors, capabilities, the temp sweep of
//     backend.TempSweeper) is the inner adapter's.
package meter

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
)

// ErrExceeded is matched (errors.Is) by every refusal of this package.
var ErrExceeded = errors.New("storage read allowance exceeded")

// ExceededError is a read refused because the request's allowance is spent.
type ExceededError struct {
	Limit, Read int64
}

func (e *ExceededError) Error() string {
	return fmt.Sprintf("storage read allowance exceeded: %d bytes read, the limit is %d", e.Read, e.Limit)
}

// Is makes errors.Is(err, ErrExceeded) hold.
func (e *ExceededError) Is(target error) bool { return target == ErrExceeded }

// Reads is one request's allowance of bytes read from storage. It is safe
// for concurrent use (a query's background loads charge the same Reads).
type Reads struct {
	limit int64 // <= 0: no limit
	n     atomic.Int64
}

// NewReads returns an allowance of limit bytes (<= 0: unlimited, counted
// only).
func NewReads(limit int64) *Reads { return &Reads{limit: limit} }

// Bytes is what was charged so far.
func (r *Reads) Bytes() int64 { return r.n.Load() }

// Limit is the allowance (<= 0: none).
func (r *Reads) Limit() int64 { return r.limit }

func (r *Reads) over(n int64) bool { return r.limit > 0 && n > r.limit }

// charge adds n bytes and reports an error when the total passes the limit.
func (r *Reads) charge(n int64) error {
	if t := r.n.Add(n); r.over(t) {
		return &ExceededError{Limit: r.limit, Read: t}
	}
	return nil
}

// before refuses a read when the allowance is already spent.
func (r *Reads) before() error {
	if t := r.n.Load(); r.over(t) {
		return &ExceededError{Limit: r.limit, Read: t}
	}
	return nil
}

type readsKey struct{}

// With returns a context whose reads through a metered adapter are charged
// to r.
func With(ctx context.Context, r *Reads) context.Context {
	return context.WithValue(ctx, readsKey{}, r)
}

// From returns the allowance of ctx (nil: none).
func From(ctx context.Context) *Reads {
	r, _ := ctx.Value(readsKey{}).(*Reads)
	return r
}

var _ backend.StorageAdapter = (*Adapter)(nil)

// Adapter is the metering wrapper.
type Adapter struct {
	inner backend.StorageAdapter
}

// Wrap meters inner. Wrapping an *Adapter returns it as it is, so a store
// is never charged twice.
func Wrap(inner backend.StorageAdapter) backend.StorageAdapter {
	if a, ok := inner.(*Adapter); ok {
		return a
	}
	return &Adapter{inner: inner}
}

// Unwrap returns the wrapped adapter.
func (a *Adapter) Unwrap() backend.StorageAdapter { return a.inner }

// Get implements backend.StorageAdapter.
func (a *Adapter) Get(ctx context.Context, key string) ([]byte, backend.Attrs, error) {
	r := From(ctx)
	if r == nil {
		return a.inner.Get(ctx, key)
	}
	if err := r.before(); err != nil {
		return nil, backend.Attrs{}, err
	}
	b, at, err := a.inner.Get(ctx, key)
	if cerr := r.charge(int64(len(b))); cerr != nil && err == nil {
		return nil, backend.Attrs{}, cerr
	}
	return b, at, err
}

// GetRange implements backend.StorageAdapter.
func (a *Adapter) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	r := From(ctx)
	if r == nil {
		return a.inner.GetRange(ctx, key, offset, length)
	}
	if err := r.before(); err != nil {
		return nil, err
	}
	b, err := a.inner.GetRange(ctx, key, offset, length)
	if cerr := r.charge(int64(len(b))); cerr != nil && err == nil {
		return nil, cerr
	}
	return b, err
}

// Stat implements backend.StorageAdapter.
func (a *Adapter) Stat(ctx context.Context, key string) (backend.Attrs, error) {
	return a.inner.Stat(ctx, key)
}

// Put implements backend.StorageAdapter.
func (a *Adapter) Put(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	return a.inner.Put(ctx, key, data)
}

// PutIfAbsent implements backend.StorageAdapter.
func (a *Adapter) PutIfAbsent(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	return a.inner.PutIfAbsent(ctx, key, data)
}

// PutIfMatch implements backend.StorageAdapter.
func (a *Adapter) PutIfMatch(ctx context.Context, key string, data []byte, version string) (backend.Attrs, error) {
	return a.inner.PutIfMatch(ctx, key, data, version)
}

// List implements backend.StorageAdapter.
func (a *Adapter) List(ctx context.Context, prefix string, opts backend.ListOptions) (backend.ListPage, error) {
	return a.inner.List(ctx, prefix, opts)
}

// Exists implements backend.StorageAdapter.
func (a *Adapter) Exists(ctx context.Context, key string) (bool, error) {
	return a.inner.Exists(ctx, key)
}

// Delete implements backend.StorageAdapter.
func (a *Adapter) Delete(ctx context.Context, key string) error { return a.inner.Delete(ctx, key) }

// DeletePrefix implements backend.StorageAdapter.
func (a *Adapter) DeletePrefix(ctx context.Context, prefix string) error {
	return a.inner.DeletePrefix(ctx, prefix)
}

var _ backend.TempSweeper = (*Adapter)(nil)

// SweepTemp implements backend.TempSweeper: a sweep reads no object data,
// so it is forwarded as it is (without it the store's temp residue would be
// hidden from cleanup).
func (a *Adapter) SweepTemp(ctx context.Context, prefix string, olderThan time.Time, dryRun bool) (backend.TempSwept, bool, error) {
	return backend.SweepTempBelow(ctx, a.inner, prefix, olderThan, dryRun)
}

// Capabilities implements backend.StorageAdapter.
func (a *Adapter) Capabilities() backend.Capabilities { return a.inner.Capabilities() }

// Close implements backend.StorageAdapter.
func (a *Adapter) Close() error { return a.inner.Close() }
