package graph

import (
	"context"
	"sync"
)

// warmParallel bounds the reads WarmWrites sends at once.
const warmParallel = 16

// WarmWrites reads, in parallel, what the first write to the handle's
// branch needs and every later one finds in the handle's caches: the
// head's accepted schema, each table's version and each key index's
// directory (the head Open read; no probe). A server calls it after Open
// and before it admits requests, so the first write after a start costs
// about what a warm one does (issue 37; TestFirstKeyedInsertAfterOpenOnTheWireS3)
// instead of reading these one after another on its critical path.
//
// It changes nothing; a read that fails is only a read the first write
// makes again, so the error (the first one) is for the caller's log.
func (g *Graph) WarmWrites(ctx context.Context) error {
	g.mu.Lock()
	h := g.heads[g.current]
	g.mu.Unlock()
	if h == nil {
		return nil
	}
	e := h.entry
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
		}
		mu.Unlock()
	}
	sem := make(chan struct{}, warmParallel)
	run := func(f func() error) {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := f(); err != nil {
				fail(err)
			}
		}()
	}
	run(func() error {
		_, err := g.catalog(ctx, e.SchemaIdentity)
		return err
	})
	for _, pin := range e.Tables {
		run(func() error {
			ds, err := g.openTable(ctx, pin.Path, pin.Branch, pin.Version)
			if err != nil {
				return err
			}
			return ds.WarmKeyIndexes(ctx)
		})
	}
	wg.Wait()
	return first
}
