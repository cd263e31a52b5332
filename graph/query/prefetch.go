package query

import (
	"context"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/lang/gq"
)

// Prefetch. A cold traversal reads a node table (to bind its start nodes)
// and then each edge table's traversal index; on an object store those
// are round trips in series. When its first scan starts, an execution
// loads the traversal index of every edge type its plan expands along, in
// the background, so the reads overlap (and so does decoding, on a
// machine with cores to spare). The expansion then finds the index loaded
// or waits for it (the cache entry's lock); a prefetch that fails is
// forgotten and the expansion loads (and reports) on its own. Execute
// waits for every prefetch before it returns, so no read outlives the
// query.

// prefetchEdges starts the background loads, once per execution.
func (ex *executor) prefetchEdges(ctx context.Context) {
	if ex.prefetched {
		return
	}
	ex.prefetched = true
	c := cacheOf(ex.s.Graph())
	seen := map[string]bool{}
	var walk func([]gq.Step)
	walk = func(steps []gq.Step) {
		for _, st := range steps {
			switch st := st.(type) {
			case *gq.ExpandStep:
				typ := st.Edge.Name
				if seen[typ] {
					continue
				}
				seen[typ] = true
				pin, ok := ex.s.Pin(graph.EdgeTableKey(typ))
				if !ok || c.edgesLoaded(pinID(pin)) {
					continue
				}
				ex.prefetch.Add(1)
				go func() {
					defer ex.prefetch.Done()
					_, _ = edgeTable(ctx, ex.s, typ)
				}()
			case *gq.AntiJoinStep:
				walk(st.Steps)
			}
		}
	}
	walk(ex.rp.Steps)
}

// waitPrefetch returns when every background load has finished.
func (ex *executor) waitPrefetch() { ex.prefetch.Wait() }

// edgesLoaded reports, without counting a lookup, whether a table
// version's traversal index is cached.
func (c *queryCache) edgesLoaded(id tableID) bool {
	c.mu.Lock()
	el, ok := c.entries[id]
	c.mu.Unlock()
	if !ok {
		return false
	}
	e := el.Value.(*cacheEntry)
	if !e.mu.TryLock() {
		return false // loading now: a prefetch would wait behind it
	}
	defer e.mu.Unlock()
	return e.edges != nil
}
