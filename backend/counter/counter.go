// Package counter is a StorageAdapter wrapper that counts requests per class
// and the length of their critical path, so tests can assert request budgets
// ("a warm read costs 3 GETs in 2 round trips") without timing anything.
package counter

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
)

// Class is the kind of request, as an object store bills and schedules it.
type Class int

// Request classes. GetRange counts as Get; Stat and Exists as Head;
// PutIfAbsent and PutIfMatch as CondPut.
const (
	Get Class = iota
	Head
	List
	Put
	CondPut
	Delete
	numClasses
)

// Classes lists every class in order.
var Classes = []Class{Get, Head, List, Put, CondPut, Delete}

func (c Class) String() string {
	switch c {
	case Get:
		return "get"
	case Head:
		return "head"
	case List:
		return "list"
	case Put:
		return "put"
	case CondPut:
		return "cond_put"
	case Delete:
		return "delete"
	}
	return fmt.Sprintf("class(%d)", int(c))
}

// IsWrite reports whether requests of the class change the store.
func (c Class) IsWrite() bool { return c == Put || c == CondPut || c == Delete }

// Counts is a snapshot of the requests seen since New or the last Reset.
type Counts struct {
	Get, Head, List, Put, CondPut, Delete int
	// Total is the sum of the per-class counts.
	Total int
	// RoundTrips is the critical-path depth: a request's depth is 1 + the
	// largest depth of any request that completed before it started, and
	// RoundTrips is the largest depth of a completed request. N requests
	// issued together cost 1; N issued one after another cost N.
	RoundTrips int
}

// Of returns the count for one class.
func (c Counts) Of(class Class) int {
	switch class {
	case Get:
		return c.Get
	case Head:
		return c.Head
	case List:
		return c.List
	case Put:
		return c.Put
	case CondPut:
		return c.CondPut
	case Delete:
		return c.Delete
	}
	return 0
}

func (c Counts) String() string {
	return fmt.Sprintf("get=%d head=%d list=%d put=%d cond_put=%d delete=%d total=%d round_trips=%d",
		c.Get, c.Head, c.List, c.Put, c.CondPut, c.Delete, c.Total, c.RoundTrips)
}

var _ backend.StorageAdapter = (*Counter)(nil)

// Counter wraps a StorageAdapter and counts what passes through. It changes
// no behaviour: results and errors are the inner adapter's.
type Counter struct {
	inner backend.StorageAdapter

	mu     sync.Mutex
	counts [numClasses]int
	// doneDepth is the largest depth among completed requests.
	doneDepth int
	// epoch changes on Reset, so requests in flight across a Reset do not
	// leak their depth into the new count.
	epoch uint64
}

// New wraps inner.
func New(inner backend.StorageAdapter) *Counter { return &Counter{inner: inner} }

// Unwrap returns the wrapped adapter.
func (c *Counter) Unwrap() backend.StorageAdapter { return c.inner }

// Snapshot returns the counts so far.
func (c *Counter) Snapshot() Counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Counts{
		Get: c.counts[Get], Head: c.counts[Head], List: c.counts[List],
		Put: c.counts[Put], CondPut: c.counts[CondPut], Delete: c.counts[Delete],
		RoundTrips: c.doneDepth,
	}
	for _, n := range c.counts {
		s.Total += n
	}
	return s
}

// Reset zeroes every count. Requests in flight during a Reset were counted
// before it and are not counted after it.
func (c *Counter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts = [numClasses]int{}
	c.doneDepth = 0
	c.epoch++
}

// start counts one request and returns the function that records its
// completion.
func (c *Counter) start(class Class) func() {
	c.mu.Lock()
	c.counts[class]++
	depth := c.doneDepth + 1
	epoch := c.epoch
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		if c.epoch == epoch && depth > c.doneDepth {
			c.doneDepth = depth
		}
		c.mu.Unlock()
	}
}

// Get implements backend.StorageAdapter.
func (c *Counter) Get(ctx context.Context, key string) ([]byte, backend.Attrs, error) {
	defer c.start(Get)()
	return c.inner.Get(ctx, key)
}

// GetRange implements backend.StorageAdapter; it counts as a Get.
func (c *Counter) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	defer c.start(Get)()
	return c.inner.GetRange(ctx, key, offset, length)
}

// Stat implements backend.StorageAdapter; it counts as a Head.
func (c *Counter) Stat(ctx context.Context, key string) (backend.Attrs, error) {
	defer c.start(Head)()
	return c.inner.Stat(ctx, key)
}

// Put implements backend.StorageAdapter.
func (c *Counter) Put(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	defer c.start(Put)()
	return c.inner.Put(ctx, key, data)
}

// PutIfAbsent implements backend.StorageAdapter; it counts as a CondPut.
func (c *Counter) PutIfAbsent(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	defer c.start(CondPut)()
	return c.inner.PutIfAbsent(ctx, key, data)
}

// PutIfMatch implements backend.StorageAdapter; it counts as a CondPut.
func (c *Counter) PutIfMatch(ctx context.Context, key string, data []byte, version string) (backend.Attrs, error) {
	defer c.start(CondPut)()
	return c.inner.PutIfMatch(ctx, key, data, version)
}

// List implements backend.StorageAdapter.
func (c *Counter) List(ctx context.Context, prefix string, opts backend.ListOptions) (backend.ListPage, error) {
	defer c.start(List)()
	return c.inner.List(ctx, prefix, opts)
}

// Exists implements backend.StorageAdapter; it counts as a Head (a store may
// add a one-key List when the HEAD misses; that is the inner adapter's cost).
func (c *Counter) Exists(ctx context.Context, key string) (bool, error) {
	defer c.start(Head)()
	return c.inner.Exists(ctx, key)
}

// Delete implements backend.StorageAdapter.
func (c *Counter) Delete(ctx context.Context, key string) error {
	defer c.start(Delete)()
	return c.inner.Delete(ctx, key)
}

// DeletePrefix implements backend.StorageAdapter. The wrapper cannot see how
// many requests the inner adapter spends, so it counts the minimum any store
// needs: one List, then one Delete, on the critical path one after the other
// (two round trips).
func (c *Counter) DeletePrefix(ctx context.Context, prefix string) error {
	c.start(List)()
	defer c.start(Delete)()
	return c.inner.DeletePrefix(ctx, prefix)
}

var _ backend.TempSweeper = (*Counter)(nil)

// SweepTemp implements backend.TempSweeper; a sweep deletes, so it counts as
// one Delete (like DeletePrefix, a walk of the store's own residue).
func (c *Counter) SweepTemp(ctx context.Context, prefix string, olderThan time.Time, dryRun bool) (backend.TempSwept, bool, error) {
	defer c.start(Delete)()
	return backend.SweepTempBelow(ctx, c.inner, prefix, olderThan, dryRun)
}

// Capabilities implements backend.StorageAdapter.
func (c *Counter) Capabilities() backend.Capabilities { return c.inner.Capabilities() }

// Close implements backend.StorageAdapter.
func (c *Counter) Close() error { return c.inner.Close() }
