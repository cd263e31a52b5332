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
	// queueHook, when set, runs before a write waits for its branch's turn
	// (SetQueueHook).
	queueHook func(ctx context.Context, branch string)
}

// SetQueueHook makes fn run each time a write of this process is about to
// wait for its branch's turn in the write queue (queue.go), with the
// write's context. A test scheduler uses it to decide which of two writes
// that reach the queue without a storage request between them goes first
// (the simulation's seeded scheduler). Set it before the scope opens
// handles.
func (p *Process) SetQueueHook(fn func(ctx context.Context, branch string)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.queueHook = fn
}

func (p *Process) hookQueue(ctx context.Context, branch string) {
	if p == nil {
		p = defaultProcess
	}
	p.mu.Lock()
	fn := p.queueHook
	p.mu.Unlock()
	if fn != nil {
		fn(ctx, branch)
	}
}

// NewProcess returns an empty process scope.
func NewProcess() *Process {
	return &Process{roots: map[string]*root{}, failpoints: newFailpointSet()}
}

// defaultProcess is the scope of this OS process.
var defaultProcess = NewProcess()

// root is the state one process shares between the handles of one graph
// root: the write queues, the gates and the intent registry, and nothing
// else.
type root struct {
	gates   *gates
	intents *intentRegistry
	queues  *writeQueues
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
		r = &root{gates: newGates(), intents: newIntentRegistry(), queues: newWriteQueues()}
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
	g.gates, g.intents, g.queues = r.gates, r.intents, r.queues
}

// gates are the process-local queues a writer holds while it makes durable
// effects: the schema gate, then one branch gate, then table gates in sorted
// order. They are shared by every handle of one graph root in one process
// (the root object) and reduce retries; they are not distributed authority —
// the manifest compare-and-swap is.
//
// A named gate lives in the map only while some writer holds it or waits
// for it: each entry counts its holders and waiters, and the last one to
// leave removes it. So the map's size follows the writes in flight, not
// every branch and table ever written (a server whose clients use a
// short-lived branch per request would otherwise grow without bound), and
// an entry is never dropped while held or awaited.
type gates struct {
	mu     sync.Mutex
	schema chan struct{} // held exclusively by schema apply; data writers share it
	shared int           // data writers inside the schema gate
	// drained, while an exclusive holder waits for the shared ones to
	// leave, is closed by the last of them.
	drained chan struct{}
	locks   map[string]*gate
}

// gate is one named gate: a one-slot channel and the writers that hold it
// or wait for it.
type gate struct {
	ch   chan struct{}
	refs int
}

func newGates() *gates {
	return &gates{locks: map[string]*gate{}, schema: make(chan struct{}, 1)}
}

// join returns the gate called name, counting the caller in; every join is
// matched by one leave.
func (g *gates) join(name string) *gate {
	g.mu.Lock()
	defer g.mu.Unlock()
	e := g.locks[name]
	if e == nil {
		e = &gate{ch: make(chan struct{}, 1)}
		g.locks[name] = e
	}
	e.refs++
	return e
}

// leave counts the caller out of the gate called name, removing it when
// nobody holds it or waits for it any more.
func (g *gates) leave(name string, e *gate) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if e.refs--; e.refs == 0 && g.locks[name] == e {
		delete(g.locks, name)
	}
}

// size is the number of named gates in the map (tests).
func (g *gates) size() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.locks)
}

// held is a set of acquired gates; release frees them in reverse order.
type held struct {
	g       *gates
	schemaX bool
	schemaS bool
	names   []string
	gates   []*gate
}

func (h *held) release() {
	for i := len(h.gates) - 1; i >= 0; i-- {
		<-h.gates[i].ch
		h.g.leave(h.names[i], h.gates[i])
	}
	h.gates, h.names = nil, nil
	if h.schemaS {
		h.g.mu.Lock()
		if h.g.shared--; h.g.shared == 0 && h.g.drained != nil {
			close(h.g.drained)
			h.g.drained = nil
		}
		h.g.mu.Unlock()
		h.schemaS = false
	}
	if h.schemaX {
		<-h.g.schema
		h.schemaX = false
	}
}

// acquire takes the schema gate (exclusive when schemaExclusive, shared
// otherwise), then the branch gate of each branch (sorted), then the table
// gates (sorted by "<branch>\x00<table key>"). It gives up when ctx ends,
// holding nothing, whichever gate it was waiting for.
func (g *gates) acquire(ctx context.Context, schemaExclusive bool, branches []string, tables []string) (*held, error) {
	h := &held{g: g}
	if schemaExclusive {
		select {
		case g.schema <- struct{}{}:
			h.schemaX = true
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		// Wait for shared holders to drain; they never wait on us (new
		// ones queue on the schema channel we hold).
		g.mu.Lock()
		var drained chan struct{}
		if g.shared > 0 {
			drained = make(chan struct{})
			g.drained = drained
		}
		g.mu.Unlock()
		if drained != nil {
			select {
			case <-drained:
			case <-ctx.Done():
				g.mu.Lock()
				if g.drained == drained {
					g.drained = nil
				}
				g.mu.Unlock()
				h.release()
				return nil, ctx.Err()
			}
		}
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
		e := g.join(n)
		select {
		case e.ch <- struct{}{}:
			h.names = append(h.names, n)
			h.gates = append(h.gates, e)
		case <-ctx.Done():
			g.leave(n, e)
			h.release()
			return nil, ctx.Err()
		}
	}
	return h, nil
}
