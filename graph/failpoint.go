package graph

import "sync"

// Failpoint names at the phase boundaries of every writer that goes through
// the write pipeline (mutation, load, merge, ...), and of recovery itself.
const (
	// FailpointPostPhaseA: the sidecar is durable, no table effect yet.
	FailpointPostPhaseA = "write.post_phase_a"
	// FailpointPostPhaseB: every table commit landed, the manifest is not
	// published yet.
	FailpointPostPhaseB = "write.post_phase_b"
	// FailpointPostPhaseC: the manifest is published, the sidecar not yet
	// deleted.
	FailpointPostPhaseC = "write.post_phase_c"
	// Recovery's own boundaries (see package recovery).
	FailpointRecoveryPostRestore = "recovery.post_restore"
	FailpointRecoveryPostPublish = "recovery.post_publish"
	FailpointRecoveryPostAudit   = "recovery.post_audit"
)

// Failpoints is the test-only registry of named failpoints, scoped to one
// graph (by its id) so parallel tests never see each other's. With nothing
// set, a failpoint costs one map lookup under a mutex.
var Failpoints = &failpointSet{m: map[string]map[string]func() error{}}

type failpointSet struct {
	mu sync.Mutex
	m  map[string]map[string]func() error // graph id -> name -> action
}

// Set arms failpoint name on the graph with id graphID: fn runs when a
// writer reaches it, and a non-nil error stops the writer there as if it
// had crashed (tests typically also crash the store from fn). It returns a
// function that disarms it.
func (f *failpointSet) Set(graphID, name string, fn func() error) (clear func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m[graphID] == nil {
		f.m[graphID] = map[string]func() error{}
	}
	f.m[graphID][name] = fn
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.m[graphID], name)
	}
}

func (f *failpointSet) hit(graphID, name string) error {
	f.mu.Lock()
	fn := f.m[graphID][name]
	f.mu.Unlock()
	if fn == nil {
		return nil
	}
	return fn()
}

// failpoint runs the named failpoint of this graph, if armed.
func (g *Graph) failpoint(name string) error { return Failpoints.hit(g.graphID, name) }
