// Package metrics is a StorageAdapter wrapper that records every storage
// request as Prometheus metrics: requests and their duration by operation
// and outcome (the failure taxonomy's class), and the bytes read and
// written. Labels come from closed sets (Ops, Outcomes), never from keys,
// so the series count is bounded whatever the workload.
package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/omnigraph-go/omnigraph/backend"
)

// Operation names, the op label. GetRange is a get; Stat and Exists are
// heads; PutIfMatch is a compare_and_swap; DeletePrefix and a temp sweep
// are deletes (the wrapper cannot see how many requests the inner adapter
// spends on them).
const (
	OpGet            = "get"
	OpHead           = "head"
	OpList           = "list"
	OpPut            = "put"
	OpPutIfAbsent    = "put_if_absent"
	OpCompareAndSwap = "compare_and_swap"
	OpDelete         = "delete"
)

// Ops lists every op label value.
var Ops = []string{OpGet, OpHead, OpList, OpPut, OpPutIfAbsent, OpCompareAndSwap, OpDelete}

// OutcomeOK is the outcome of a request that succeeded; a failed one is
// its backend.Kind's name (not_found, precondition, transient, ...).
const OutcomeOK = "ok"

// Outcomes lists every outcome label value.
var Outcomes = []string{OutcomeOK,
	backend.KindNotFound.String(), backend.KindPrecondition.String(), backend.KindTransient.String(),
	backend.KindConfiguration.String(), backend.KindPermanent.String(), backend.KindUnknown.String()}

// Outcome is the outcome label of err.
func Outcome(err error) string {
	k := backend.KindOf(err)
	if k == backend.KindNone {
		return OutcomeOK
	}
	return k.String()
}

// Collectors are the storage metrics of one process; every wrapped store
// records into them.
type Collectors struct {
	requests     *prometheus.CounterVec
	duration     *prometheus.HistogramVec
	bytesRead    prometheus.Counter
	bytesWritten prometheus.Counter
}

// NewCollectors makes the storage metrics and registers them with reg.
// The ok outcome of every op starts at zero, so a rate is defined before
// the first request.
func NewCollectors(reg prometheus.Registerer) (*Collectors, error) {
	c := &Collectors{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "omnigraph_storage_requests_total",
			Help: "Storage requests by operation and outcome (ok or the failure class).",
		}, []string{"op", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "omnigraph_storage_request_duration_seconds",
			Help:    "Duration of storage requests by operation and outcome.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"op", "outcome"}),
		bytesRead: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "omnigraph_storage_read_bytes_total",
			Help: "Bytes returned by successful storage reads (get).",
		}),
		bytesWritten: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "omnigraph_storage_written_bytes_total",
			Help: "Bytes sent by successful storage writes (put, put_if_absent, compare_and_swap).",
		}),
	}
	for _, col := range []prometheus.Collector{c.requests, c.duration, c.bytesRead, c.bytesWritten} {
		if err := reg.Register(col); err != nil {
			return nil, err
		}
	}
	for _, op := range Ops {
		c.requests.WithLabelValues(op, OutcomeOK)
	}
	return c, nil
}

// observe records one request that started at start.
func (c *Collectors) observe(op string, start time.Time, err error) {
	o := Outcome(err)
	c.requests.WithLabelValues(op, o).Inc()
	c.duration.WithLabelValues(op, o).Observe(time.Since(start).Seconds())
}

// Wrap returns s with every request recorded in c.
func (c *Collectors) Wrap(s backend.StorageAdapter) *Store { return &Store{inner: s, c: c} }

var (
	_ backend.StorageAdapter = (*Store)(nil)
	_ backend.TempSweeper    = (*Store)(nil)
)

// Store is a recording StorageAdapter. It changes no behaviour: results
// and errors are the inner adapter's.
type Store struct {
	inner backend.StorageAdapter
	c     *Collectors
}

// Unwrap returns the wrapped adapter.
func (s *Store) Unwrap() backend.StorageAdapter { return s.inner }

// Get implements backend.StorageAdapter.
func (s *Store) Get(ctx context.Context, key string) ([]byte, backend.Attrs, error) {
	start := time.Now()
	b, a, err := s.inner.Get(ctx, key)
	s.c.observe(OpGet, start, err)
	if err == nil {
		s.c.bytesRead.Add(float64(len(b)))
	}
	return b, a, err
}

// GetRange implements backend.StorageAdapter; it is a get.
func (s *Store) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	start := time.Now()
	b, err := s.inner.GetRange(ctx, key, offset, length)
	s.c.observe(OpGet, start, err)
	if err == nil {
		s.c.bytesRead.Add(float64(len(b)))
	}
	return b, err
}

// Stat implements backend.StorageAdapter; it is a head.
func (s *Store) Stat(ctx context.Context, key string) (backend.Attrs, error) {
	start := time.Now()
	a, err := s.inner.Stat(ctx, key)
	s.c.observe(OpHead, start, err)
	return a, err
}

func (s *Store) written(op string, start time.Time, n int, err error) {
	s.c.observe(op, start, err)
	if err == nil {
		s.c.bytesWritten.Add(float64(n))
	}
}

// Put implements backend.StorageAdapter.
func (s *Store) Put(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	start := time.Now()
	a, err := s.inner.Put(ctx, key, data)
	s.written(OpPut, start, len(data), err)
	return a, err
}

// PutIfAbsent implements backend.StorageAdapter.
func (s *Store) PutIfAbsent(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	start := time.Now()
	a, err := s.inner.PutIfAbsent(ctx, key, data)
	s.written(OpPutIfAbsent, start, len(data), err)
	return a, err
}

// PutIfMatch implements backend.StorageAdapter; it is a compare_and_swap.
func (s *Store) PutIfMatch(ctx context.Context, key string, data []byte, version string) (backend.Attrs, error) {
	start := time.Now()
	a, err := s.inner.PutIfMatch(ctx, key, data, version)
	s.written(OpCompareAndSwap, start, len(data), err)
	return a, err
}

// List implements backend.StorageAdapter.
func (s *Store) List(ctx context.Context, prefix string, opts backend.ListOptions) (backend.ListPage, error) {
	start := time.Now()
	p, err := s.inner.List(ctx, prefix, opts)
	s.c.observe(OpList, start, err)
	return p, err
}

// Exists implements backend.StorageAdapter; it is a head.
func (s *Store) Exists(ctx context.Context, key string) (bool, error) {
	start := time.Now()
	ok, err := s.inner.Exists(ctx, key)
	s.c.observe(OpHead, start, err)
	return ok, err
}

// Delete implements backend.StorageAdapter.
func (s *Store) Delete(ctx context.Context, key string) error {
	start := time.Now()
	err := s.inner.Delete(ctx, key)
	s.c.observe(OpDelete, start, err)
	return err
}

// DeletePrefix implements backend.StorageAdapter; it is one delete.
func (s *Store) DeletePrefix(ctx context.Context, prefix string) error {
	start := time.Now()
	err := s.inner.DeletePrefix(ctx, prefix)
	s.c.observe(OpDelete, start, err)
	return err
}

// SweepTemp implements backend.TempSweeper; it is one delete.
func (s *Store) SweepTemp(ctx context.Context, prefix string, olderThan time.Time, dryRun bool) (backend.TempSwept, bool, error) {
	start := time.Now()
	res, ok, err := backend.SweepTempBelow(ctx, s.inner, prefix, olderThan, dryRun)
	s.c.observe(OpDelete, start, err)
	return res, ok, err
}

// Capabilities implements backend.StorageAdapter.
func (s *Store) Capabilities() backend.Capabilities { return s.inner.Capabilities() }

// Close implements backend.StorageAdapter.
func (s *Store) Close() error { return s.inner.Close() }
