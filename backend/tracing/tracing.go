// Package tracing is a StorageAdapter wrapper that makes one OpenTelemetry
// span per storage request, a child of the span in the request's context
// (the server's request span). A span carries the operation and the
// outcome (the failure taxonomy's class), never a key, a prefix or a
// credential: keys name users' data.
package tracing

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/metrics"
)

// Wrap returns s with every request traced by tp's tracer; a nil tp
// returns s unchanged (tracing off costs nothing).
func Wrap(s backend.StorageAdapter, tp trace.TracerProvider) backend.StorageAdapter {
	if tp == nil {
		return s
	}
	return &Store{inner: s, tr: tp.Tracer("github.com/omnigraph-go/omnigraph/backend")}
}

var (
	_ backend.StorageAdapter = (*Store)(nil)
	_ backend.TempSweeper    = (*Store)(nil)
)

// Store is a tracing StorageAdapter. It changes no behaviour: results and
// errors are the inner adapter's.
type Store struct {
	inner backend.StorageAdapter
	tr    trace.Tracer
}

// Unwrap returns the wrapped adapter.
func (s *Store) Unwrap() backend.StorageAdapter { return s.inner }

// start opens the span of one op; the op names use the metrics' closed set.
func (s *Store) start(ctx context.Context, op string) (context.Context, trace.Span) {
	return s.tr.Start(ctx, "storage."+op, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("storage.op", op)))
}

// end closes sp with the outcome of err (its class, not its text: an
// adapter's message can hold a key).
func end(sp trace.Span, err error) {
	o := metrics.Outcome(err)
	sp.SetAttributes(attribute.String("storage.outcome", o))
	if err != nil && o != backend.KindNotFound.String() {
		sp.SetStatus(codes.Error, o)
	}
	sp.End()
}

// Get implements backend.StorageAdapter.
func (s *Store) Get(ctx context.Context, key string) ([]byte, backend.Attrs, error) {
	ctx, sp := s.start(ctx, metrics.OpGet)
	b, a, err := s.inner.Get(ctx, key)
	end(sp, err)
	return b, a, err
}

// GetRange implements backend.StorageAdapter; it is a get.
func (s *Store) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	ctx, sp := s.start(ctx, metrics.OpGet)
	b, err := s.inner.GetRange(ctx, key, offset, length)
	end(sp, err)
	return b, err
}

// Stat implements backend.StorageAdapter; it is a head.
func (s *Store) Stat(ctx context.Context, key string) (backend.Attrs, error) {
	ctx, sp := s.start(ctx, metrics.OpHead)
	a, err := s.inner.Stat(ctx, key)
	end(sp, err)
	return a, err
}

// Put implements backend.StorageAdapter.
func (s *Store) Put(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	ctx, sp := s.start(ctx, metrics.OpPut)
	a, err := s.inner.Put(ctx, key, data)
	end(sp, err)
	return a, err
}

// PutIfAbsent implements backend.StorageAdapter.
func (s *Store) PutIfAbsent(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	ctx, sp := s.start(ctx, metrics.OpPutIfAbsent)
	a, err := s.inner.PutIfAbsent(ctx, key, data)
	end(sp, err)
	return a, err
}

// PutIfMatch implements backend.StorageAdapter; it is a compare_and_swap.
func (s *Store) PutIfMatch(ctx context.Context, key string, data []byte, version string) (backend.Attrs, error) {
	ctx, sp := s.start(ctx, metrics.OpCompareAndSwap)
	a, err := s.inner.PutIfMatch(ctx, key, data, version)
	end(sp, err)
	return a, err
}

// List implements backend.StorageAdapter.
func (s *Store) List(ctx context.Context, prefix string, opts backend.ListOptions) (backend.ListPage, error) {
	ctx, sp := s.start(ctx, metrics.OpList)
	p, err := s.inner.List(ctx, prefix, opts)
	end(sp, err)
	return p, err
}

// Exists implements backend.StorageAdapter; it is a head.
func (s *Store) Exists(ctx context.Context, key string) (bool, error) {
	ctx, sp := s.start(ctx, metrics.OpHead)
	ok, err := s.inner.Exists(ctx, key)
	end(sp, err)
	return ok, err
}

// Delete implements backend.StorageAdapter.
func (s *Store) Delete(ctx context.Context, key string) error {
	ctx, sp := s.start(ctx, metrics.OpDelete)
	err := s.inner.Delete(ctx, key)
	end(sp, err)
	return err
}

// DeletePrefix implements backend.StorageAdapter; it is one delete.
func (s *Store) DeletePrefix(ctx context.Context, prefix string) error {
	ctx, sp := s.start(ctx, metrics.OpDelete)
	err := s.inner.DeletePrefix(ctx, prefix)
	end(sp, err)
	return err
}

// SweepTemp implements backend.TempSweeper; it is one delete.
func (s *Store) SweepTemp(ctx context.Context, prefix string, olderThan time.Time, dryRun bool) (backend.TempSwept, bool, error) {
	ctx, sp := s.start(ctx, metrics.OpDelete)
	res, ok, err := backend.SweepTempBelow(ctx, s.inner, prefix, olderThan, dryRun)
	end(sp, err)
	return res, ok, err
}

// Capabilities implements backend.StorageAdapter.
func (s *Store) Capabilities() backend.Capabilities { return s.inner.Capabilities() }

// Close implements backend.StorageAdapter.
func (s *Store) Close() error { return s.inner.Close() }
