package graph

import (
	"context"
	"sort"
	"sync"
)

// Process is the scope of the state a real OS process shares between the
// handles it opens on one graph root: per root, the write gates and the
// registry of the recovery intents this process armed (one root object,
// keyed by the root's identity, the graph id Init minted). Nothing else is
// process-wide: every other cache lives on its handle.
//
// Open and Init use the default process unless OpenOptions.Process names
// another. A test simulates a restart by opening with NewProcess(): the new
// scope has no gates, no intents and no failpoints of the old one, exactly
// as a freshly started process, so its open-time sweep must find, classify
// and audit every sidecar from storage alone. Two NewProcess() scopes on one
// store behave as two independent writer processes.
type Process struct {
	mu    sync.Mutex
	roots map[string]*root

	failpoints *FailpointSet
}

// NewProcess returns an empty process scope.
func NewProcess() *Process {
	return &Process{roots: map[string]*root{}, failpoints: newFailpointSet()}
}

// defaultProcess is the scope of this OS process.
var defaultProcess = NewProcess()

// root is the state one process shares between the handles of one graph
// root: the gates and the intent registry, and nothing else.
type root struct {
	gates   *gates
	intents *intentRegistry
}

// rootOf returns the root object of graphID in this process scope.
func (p *Process) rootOf(graphID string) *root {
	if p == nil {
		p = defaultProcess
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.roots[graphID]
	if r == nil {
		r = &root{gates: newGates(), intents: newIntentRegistry()}
		p.roots[graphID] = r
	}
	return r
}

// Forget drops this scope's root object of graphID, as a dying process
// drops everything it held: handles opened afterwards start with no gates
// and no remembered intents (test hook; handles opened before keep the old
// object and must not be used again).
func (p *Process) Forget(graphID string) {
	if p == nil {
		p = defaultProcess
	}
	p.mu.Lock()
	delete(p.roots, graphID)
	p.mu.Unlock()
}

// ForgetProcessState drops the default process's root object of graphID
// (see Process.Forget): the test hook for "this process died".
func ForgetProcessState(graphID string) { defaultProcess.Forget(graphID) }

// attachRoot binds the handle to its process's root object.
func (g *Graph) attachRoot() {
	r := g.proc.rootOf(g.graphID)
	g.gates, g.intents = r.gates, r.intents
}

// gates are the process-local queues a writer holds while it makes durable
// effects: the schema gate, then one branch gate, then table gates in sorted
// order. They are shared by every handle of one graph root in one process
// (the root object) and reduce retries; they are not distributed authority —
// the manifest compare-and-swap is.
type gates struct {
	mu     sync.Mutex
	schema chan struct{} // held exclusively by schema apply; data writers share it
	shared int           // data writers inside the schema gate
	cond   *sync.Cond
	locks  map[string]chan struct{}
}

func newGates() *gates {
	g := &gates{locks: map[string]chan struct{}{}, schema: make(chan struct{}, 1)}
	g.cond = sync.NewCond(&g.mu)
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
