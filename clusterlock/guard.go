package clusterlock

import (
	"context"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
)

// Guard wraps the store a lease owner writes the graph through. While the
// lease holds, every request passes unchanged; every write also ends the
// moment the lease is lost (its context is cancelled). Once the lease is
// lost, lapsed by this clock, or released, every write is refused before it
// is sent, with an error satisfying ErrLeaseLost (or ErrNotHeld after
// Release) and classified backend.KindPermanent: it never reached storage.
// Reads are not guarded.
func (l *Lease) Guard(s backend.StorageAdapter) backend.StorageAdapter {
	return &guarded{StorageAdapter: s, l: l}
}

type guarded struct {
	backend.StorageAdapter
	l *Lease
}

var _ backend.StorageAdapter = (*guarded)(nil)

// Unwrap returns the wrapped adapter.
func (g *guarded) Unwrap() backend.StorageAdapter { return g.StorageAdapter }

// admit refuses a write when the lease does not hold, and otherwise binds
// the write's context to the lease's.
func (g *guarded) admit(ctx context.Context, op, key string) (context.Context, func(), error) {
	if err := g.l.Valid(); err != nil {
		return nil, nil, backend.NewError(op, key, backend.KindPermanent, err)
	}
	wctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(g.l.ctx, func() { cancel(context.Cause(g.l.ctx)) })
	return wctx, func() { stop(); cancel(nil) }, nil
}

// Put implements backend.StorageAdapter.
func (g *guarded) Put(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	ctx, done, err := g.admit(ctx, "put", key)
	if err != nil {
		return backend.Attrs{}, err
	}
	defer done()
	return g.StorageAdapter.Put(ctx, key, data)
}

// PutIfAbsent implements backend.StorageAdapter.
func (g *guarded) PutIfAbsent(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	ctx, done, err := g.admit(ctx, "put-if-absent", key)
	if err != nil {
		return backend.Attrs{}, err
	}
	defer done()
	return g.StorageAdapter.PutIfAbsent(ctx, key, data)
}

// PutIfMatch implements backend.StorageAdapter.
func (g *guarded) PutIfMatch(ctx context.Context, key string, data []byte, version string) (backend.Attrs, error) {
	ctx, done, err := g.admit(ctx, "put-if-match", key)
	if err != nil {
		return backend.Attrs{}, err
	}
	defer done()
	return g.StorageAdapter.PutIfMatch(ctx, key, data, version)
}

// Delete implements backend.StorageAdapter.
func (g *guarded) Delete(ctx context.Context, key string) error {
	ctx, done, err := g.admit(ctx, "delete", key)
	if err != nil {
		return err
	}
	defer done()
	return g.StorageAdapter.Delete(ctx, key)
}

// DeletePrefix implements backend.StorageAdapter.
func (g *guarded) DeletePrefix(ctx context.Context, prefix string) error {
	ctx, done, err := g.admit(ctx, "delete-prefix", prefix)
	if err != nil {
		return err
	}
	defer done()
	return g.StorageAdapter.DeletePrefix(ctx, prefix)
}

var _ backend.TempSweeper = (*guarded)(nil)

// SweepTemp implements backend.TempSweeper: a sweep deletes, so it is
// refused once the lease does not hold and ends when the lease is lost.
func (g *guarded) SweepTemp(ctx context.Context, prefix string, olderThan time.Time, dryRun bool) (backend.TempSwept, bool, error) {
	ctx, done, err := g.admit(ctx, "sweep-temp", prefix)
	if err != nil {
		return backend.TempSwept{}, true, err
	}
	defer done()
	return backend.SweepTempBelow(ctx, g.StorageAdapter, prefix, olderThan, dryRun)
}
