package graph

import (
	"context"
	"sort"
	"sync"
)

// gates are the process-local queues a writer holds while it makes durable
// effects: the schema gate, then one branch gate, then table gates in sorted
// order. They are shared by every handle of one graph in this process (keyed
// by the graph id) and reduce retries; they are not distributed authority —
// the manifest compare-and-swap is.
type gates struct {
	mu     sync.Mutex
	schema chan struct{} // held exclusively by schema apply; data writers share it
	shared int           // data writers inside the schema gate
	cond   *sync.Cond
	locks  map[string]chan struct{}
}

var (
	gatesMu  sync.Mutex
	gatesFor = map[string]*gates{}
)

// gatesOf returns the gates of one graph in this process.
func gatesOf(graphID string) *gates {
	gatesMu.Lock()
	defer gatesMu.Unlock()
	g, ok := gatesFor[graphID]
	if !ok {
		g = &gates{locks: map[string]chan struct{}{}, schema: make(chan struct{}, 1)}
		g.cond = sync.NewCond(&g.mu)
		gatesFor[graphID] = g
	}
	return g
}

func (g *gates) lock(name string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	c, ok := g.locks[name]
	if !ok {
		c = make(chan struct{}, 1)
		g.locks[name] = c
	}
	return c
}

// held is a set of acquired gates; release frees them in reverse order.
type held struct {
	g       *gates
	schemaX bool
	schemaS bool
	chans   []chan struct{}
}

func (h *held) release() {
	for i := len(h.chans) - 1; i >= 0; i-- {
		<-h.chans[i]
	}
	h.chans = nil
	if h.schemaS {
		h.g.mu.Lock()
		h.g.shared--
		h.g.mu.Unlock()
		h.g.cond.Broadcast()
		h.schemaS = false
	}
	if h.schemaX {
		<-h.g.schema
		h.schemaX = false
	}
}

// acquire takes the schema gate (exclusive when schemaExclusive, shared
// otherwise), then the branch gate of each branch (sorted), then the table
// gates (sorted by "<branch>\x00<table key>"). It gives up when ctx ends.
func (g *gates) acquire(ctx context.Context, schemaExclusive bool, branches []string, tables []string) (*held, error) {
	h := &held{g: g}
	if schemaExclusive {
		select {
		case g.schema <- struct{}{}:
			h.schemaX = true
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		// Wait for shared holders to drain; they never wait on us.
		g.mu.Lock()
		for g.shared > 0 {
			g.cond.Wait()
		}
		g.mu.Unlock()
	} else {
		// Shared: join unless an exclusive holder is inside.
		select {
		case g.schema <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		g.mu.Lock()
		g.shared++
		g.mu.Unlock()
		<-g.schema
		h.schemaS = true
	}
	names := make([]string, 0, len(branches)+len(tables))
	bs := append([]string(nil), branches...)
	sort.Strings(bs)
	for _, b := range bs {
		names = append(names, "branch\x00"+b)
	}
	ts := append([]string(nil), tables...)
	sort.Strings(ts)
	for _, t := range ts {
		names = append(names, "table\x00"+t)
	}
	for i, n := range names {
		if i > 0 && n == names[i-1] {
			continue
		}
		c := g.lock(n)
		select {
		case c <- struct{}{}:
			h.chans = append(h.chans, c)
		case <-ctx.Done():
			h.release()
			return nil, ctx.Err()
		}
	}
	return h, nil
}
