package graph

import "sync"

// Failpoint names at the phase boundaries of every writer that goes through
// the write pipeline (mutation, load, merge, ...), and of recovery itself.
const (
	// FailpointPreCommit: the attempt is prepared (staged), its Commit has
	// begun and holds no gate yet: a test runs another writer here to
	// land between a write's prepare and its publish.
	FailpointPreCommit = "write.pre_commit"
	// FailpointPostPhaseA: the sidecar is durable, no table effect yet.
	FailpointPostPhaseA = "write.post_phase_a"
	// FailpointPostPhaseB: every table commit landed, the manifest is not
	// published yet.
	FailpointPostPhaseB = "write.post_phase_b"
	// FailpointPostPhaseC: the manifest is published, the sidecar not yet
	// deleted.
	FailpointPostPhaseC = "write.post_phase_c"
	// FailpointMaintenanceRebase: an optimize lost the graph head after
	// its table effects and is about to move its intent onto the new head
	// (maintenance.go).
	FailpointMaintenanceRebase = "write.maintenance_rebase"
	// Recovery's own boundaries (see package recovery).
	FailpointRecoveryPostRestore = "recovery.post_restore"
	FailpointRecoveryPostPublish = "recovery.post_publish"
	FailpointRecoveryPostAudit   = "recovery.post_audit"
)

// Failpoints is the test-only registry of named failpoints of the default
// process, scoped to one graph (by its id) so parallel tests never see each
// other's. A handle opened in another Process scope (a simulated restart)
// does not see them: a restarted process has none armed. With nothing set, a
// failpoint costs one map lookup under a mutex.
var Failpoints = defaultProcess.failpoints

// Failpoints returns the failpoint registry of this process scope.
func (p *Process) Failpoints() *FailpointSet { return p.failpoints }

func newFailpointSet() *FailpointSet {
	return &FailpointSet{m: map[string]map[string]func() error{}}
}

type FailpointSet struct {
	mu sync.Mutex
	m  map[string]map[string]func() error // graph id -> name -> action
}

// Set arms failpoint name on the graph with id graphID: fn runs when a
// writer reaches it, and a non-nil error stops the writer there as if it
// had crashed (tests typically also crash the store from fn). It returns a
// function that disarms it.
func (f *FailpointSet) Set(graphID, name string, fn func() error) (clear func()) {
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

func (f *FailpointSet) hit(graphID, name string) error {
	f.mu.Lock()
	fn := f.m[graphID][name]
	f.mu.Unlock()
	if fn == nil {
		return nil
	}
	return fn()
}

// failpoint runs the named failpoint of this graph, if armed.
func (g *Graph) failpoint(name string) error {
	if g.proc == nil {
		return defaultProcess.failpoints.hit(g.graphID, name)
	}
	return g.proc.failpoints.hit(g.graphID, name)
}
