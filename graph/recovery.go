package graph

// The wiring of package recovery into the write pipeline (write.go's four
// hooks) and into Open.
//
// Cost model (a one-row insert must stay within 8 requests and 5 round
// trips). Phase A is one conditional PUT of the sidecar, sent together with
// the token re-check, so it adds no round trip. Phase D is one DELETE, but
// it is not sent after the publish (that would be a sixth round trip):
// once a write has published, its sidecar is only evidence of a finished
// write, so its delete is deferred and sent together with the next write's
// Phase A (or by Close). A crash in between leaves a sidecar whose commit is
// visible, which the next open retires (ClassPublished).
//
// A warm write does not List __recovery/: every intent this process arms is
// tracked in a process-wide registry (per graph, shared by all handles like
// the gates), so the write-entry heal knows for free whether this process
// left an unresolved intent on the branch. Intents left by a process that
// died are found by the read-write open sweep, which Lists __recovery/ in
// parallel with the head read. Writers in other live processes are outside
// the supported single-writer-process topology, as in the seed; the table
// and manifest compare-and-swaps still keep them from corrupting anything.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/manifest"
	"github.com/omnigraph-go/omnigraph/recovery"
)

// intentRegistry tracks the sidecars this process armed and has not yet
// seen deleted.
type intentRegistry struct {
	mu sync.Mutex
	// pending: armed and not known to be published (live writers and
	// failed ones alike; a live writer's gates tell them apart).
	pending map[string]*recovery.Sidecar
	// deferred: pending intents the in-process heal found need a rollback.
	deferred map[string]bool
	// retired: published; only the sidecar delete (Phase D) is left.
	// deleting: retired ones whose delete is in flight (still retired
	// until it succeeds, so no sweep mistakes them for interrupted).
	retired  map[string]bool
	deleting map[string]bool
}

func newIntentRegistry() *intentRegistry {
	return &intentRegistry{pending: map[string]*recovery.Sidecar{}, deferred: map[string]bool{}, retired: map[string]bool{}, deleting: map[string]bool{}}
}

func (r *intentRegistry) add(sc *recovery.Sidecar) {
	r.mu.Lock()
	r.pending[sc.Intent.OperationID] = sc
	r.mu.Unlock()
}

// remove forgets an operation whose sidecar is gone.
func (r *intentRegistry) remove(opID string) {
	r.mu.Lock()
	delete(r.pending, opID)
	delete(r.deferred, opID)
	delete(r.retired, opID)
	delete(r.deleting, opID)
	r.mu.Unlock()
}

// retire marks a pending intent published: its delete is deferred.
func (r *intentRegistry) retire(opID string) {
	r.mu.Lock()
	delete(r.pending, opID)
	delete(r.deferred, opID)
	r.retired[opID] = true
	r.mu.Unlock()
}

func (r *intentRegistry) isPending(opID string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.pending[opID]
	return ok
}

func (r *intentRegistry) isRetired(opID string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.retired[opID]
}

// takeRetired returns the retired operations whose delete nobody is
// sending, and marks them in flight. The caller reports each one back with
// deleted.
func (r *intentRegistry) takeRetired() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.retired))
	for id := range r.retired {
		if !r.deleting[id] {
			r.deleting[id] = true
			out = append(out, id)
		}
	}
	return out
}

// deleted ends an in-flight delete: a success forgets the operation, a
// failure leaves it retired for the next attempt.
func (r *intentRegistry) deleted(id string, err error) {
	if err == nil {
		r.remove(id)
		return
	}
	r.mu.Lock()
	delete(r.deleting, id)
	r.mu.Unlock()
}

// on returns the pending intents on branch, oldest first.
func (r *intentRegistry) on(branch string) []*recovery.Sidecar {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*recovery.Sidecar
	for _, sc := range r.pending {
		if sc.Intent.Token.Branch == branch {
			out = append(out, sc)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Intent.OperationID < out[j].Intent.OperationID })
	return out
}

func (r *intentRegistry) isDeferred(opID string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.deferred[opID]
}

func (r *intentRegistry) markDeferred(opID string) {
	r.mu.Lock()
	r.deferred[opID] = true
	r.mu.Unlock()
}

// opCtxKey carries the operation id of the write whose Commit is running,
// so the in-gate barrier does not mistake the write's own intent (armed
// concurrently with the token re-check) for an unresolved one.
type opCtxKey struct{}

func withOperation(ctx context.Context, opID string) context.Context {
	return context.WithValue(ctx, opCtxKey{}, opID)
}

// graphManifests is the manifest access recovery gets: the store's, plus
// the handle's head cache kept current after a recovery publish.
type graphManifests struct{ g *Graph }

var _ recovery.Manifests = graphManifests{}

func (m graphManifests) Probe(ctx context.Context, branch string) (manifest.Ref, error) {
	return m.g.man.Probe(ctx, branch)
}

func (m graphManifests) Read(ctx context.Context, r manifest.Ref) (*manifest.Entry, error) {
	return m.g.man.Read(ctx, r)
}

func (m graphManifests) ReadVersion(ctx context.Context, branch string, inc, v uint64) (*manifest.Entry, error) {
	return m.g.man.ReadVersion(ctx, branch, inc, v)
}

func (m graphManifests) Publish(ctx context.Context, e *manifest.Entry) error {
	if err := m.g.man.Publish(ctx, e); err != nil {
		return err
	}
	m.g.remember(e, "")
	return nil
}

// lockIntent takes the gates a writer of sc held (shared schema, its branch,
// its tables sorted), so recovery never acts under a live writer of this
// process.
func (g *Graph) lockIntent(ctx context.Context, sc *recovery.Sidecar) (func(), error) {
	in := &sc.Intent
	names := make([]string, 0, len(in.Tables))
	for _, t := range in.Tables {
		names = append(names, in.Token.Branch+"\x00"+t.Key)
	}
	sort.Strings(names)
	h, err := g.gates.acquire(ctx, false, []string{in.Token.Branch}, names)
	if err != nil {
		return nil, err
	}
	return h.release, nil
}

func (g *Graph) recoveryOptions(mode recovery.Mode) recovery.Options {
	reg := g.intents
	return recovery.Options{
		Mode:      mode,
		Manifests: graphManifests{g},
		Lock:      g.lockIntent,
		// A write of this process that published while the sweep waited
		// for its gates is finished, though its sidecar delete is deferred.
		Unresolved: func(sc *recovery.Sidecar) bool { return !reg.isRetired(sc.Intent.OperationID) },
		Failpoint:  g.failpoint,
	}
}

// listPending lists __recovery/ for a read-write open; Open runs it in
// parallel with its head read.
func listPending(ctx context.Context, store backend.StorageAdapter) ([]string, error) {
	return recovery.Pending(ctx, store)
}

// openRecovery is the read-write open sweep over the keys Open listed:
// every pending sidecar is read, classified from storage and rolled
// forward, rolled back or discarded with its audit row, or the open fails
// closed with the sidecar kept. The one sidecar it leaves alone is a live
// writer's of this same process (its gates are held, or it published and
// only its deferred delete is left): the sweep waits for the writer's gates
// and then skips it, deleting nothing; one that only waits for its deferred
// Phase D delete gets that delete first. A restarted process remembers no
// intent, so it classifies and audits every sidecar it finds.
func (g *Graph) openRecovery(ctx context.Context, keys []string, listErr error) error {
	if listErr != nil {
		return fmt.Errorf("open graph: recovery: %w", listErr)
	}
	if len(keys) == 0 {
		return nil
	}
	// Writes this process published and whose Phase D delete is still
	// deferred finish that delete now (it is their writer's last step, not
	// a recovery); the sweep then finds them gone.
	for _, k := range keys {
		if id, ok := recovery.OperationIDOf(k); ok && g.intents.isRetired(id) {
			g.flushRetired(ctx)
			break
		}
	}
	rep, err := recovery.SweepKeys(ctx, g.store, keys, g.recoveryOptions(recovery.Full))
	g.forgetResolved(rep)
	g.noteOpenRecovered(rep)
	if err != nil {
		return fmt.Errorf("open graph: recovery: %w", err)
	}
	return nil
}

func (g *Graph) forgetResolved(rep *recovery.Report) {
	if rep == nil {
		return
	}
	reg := g.intents
	for _, o := range rep.Outcomes {
		// A skipped sidecar is its live writer's business (it may be
		// retired with its delete deferred): leave its state alone.
		if o.Record != nil || o.Vanished && !reg.isRetired(o.OperationID) {
			reg.remove(o.OperationID)
		}
	}
}

// Recover runs the read-write open sweep on an open handle: every pending
// recovery sidecar is resolved or the call fails closed. A read-only handle
// refuses.
func (g *Graph) Recover(ctx context.Context) (*recovery.Report, error) {
	if g.readOnly {
		return nil, ErrReadOnly
	}
	g.flushRetired(ctx)
	rep, err := recovery.Sweep(ctx, g.store, g.recoveryOptions(recovery.Full))
	g.forgetResolved(rep)
	return rep, err
}

// PendingRecovery lists the pending sidecars with what recovery would do
// with each (it writes nothing). Sidecars of writes this process saw
// published are left out.
func (g *Graph) PendingRecovery(ctx context.Context) ([]*recovery.Assessment, error) {
	keys, err := recovery.Pending(ctx, g.store)
	if err != nil {
		return nil, err
	}
	reg := g.intents
	var out []*recovery.Assessment
	for _, k := range keys {
		sc, err := recovery.Read(ctx, g.store, k)
		if backend.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if reg.isRetired(sc.Intent.OperationID) {
			continue
		}
		a, err := recovery.Assess(ctx, g.store, g.man, sc)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// RecoveryAudit returns the recovery audit log, oldest operation first.
func (g *Graph) RecoveryAudit(ctx context.Context) ([]recovery.Record, error) {
	return recovery.Audits(ctx, g.store)
}

// recoveryHeal is the write-entry barrier: the in-process, roll-forward-only
// heal of the intents this process left unresolved on branch. With none
// (the steady state) it makes no request.
func (g *Graph) recoveryHeal(ctx context.Context, branch string) error {
	reg := g.intents
	opts := g.recoveryOptions(recovery.RollForwardOnly)
	opts.Unresolved = func(sc *recovery.Sidecar) bool { return reg.isPending(sc.Intent.OperationID) }
	for _, sc := range reg.on(branch) {
		out, err := recovery.Resolve(ctx, g.store, sc, opts)
		switch {
		case err == nil:
			if out.Record != nil || out.Vanished && !reg.isRetired(sc.Intent.OperationID) {
				reg.remove(sc.Intent.OperationID)
			}
		case errors.Is(err, recovery.ErrDeferred):
			reg.markDeferred(sc.Intent.OperationID)
			return &RecoveryRequired{OperationID: sc.Intent.OperationID, Reason: recovery.ErrDeferred.Error()}
		default:
			return &RecoveryRequired{OperationID: sc.Intent.OperationID, Reason: "the in-process heal of an interrupted write failed", Err: err}
		}
	}
	return nil
}

// recoveryPending is the in-gate barrier: holding the branch gate, any
// other intent of this process still pending on the branch belongs to a
// writer that is no longer live and left it unresolved.
func (g *Graph) recoveryPending(ctx context.Context, tok Token) error {
	self, _ := ctx.Value(opCtxKey{}).(string)
	reg := g.intents
	for _, sc := range reg.on(tok.Branch) {
		if sc.Intent.OperationID == self {
			continue
		}
		reason := "an earlier interrupted write on this branch is not resolved yet (the next write's entry heal or a read-write open resolves it)"
		if reg.isDeferred(sc.Intent.OperationID) {
			reason = recovery.ErrDeferred.Error()
		}
		return &RecoveryRequired{OperationID: sc.Intent.OperationID, Reason: reason}
	}
	return nil
}

// recoveryArm is Phase A: the sidecar is durable before the first effect.
// The deferred deletes of earlier published writes' sidecars go out in the
// same round trip, and so does alongside (the write's staged data files,
// which are not effects: no version names them yet); the failpoint after
// Phase A runs once all of it is done. When alongside fails the sidecar
// is withdrawn again and its error returned.
//
// A write with no table effect (pointer-only pins, a metadata-only schema
// change) arms nothing: its publish is its only durable step, so there is
// nothing to finish or undo.
func (g *Graph) recoveryArm(ctx context.Context, in *manifest.Intent, alongside func() error) error {
	if alongside == nil {
		alongside = func() error { return nil }
	}
	if len(in.Tables) == 0 {
		if err := alongside(); err != nil {
			return err
		}
		return g.failpoint(FailpointPostPhaseA)
	}
	sc := recovery.New(in, newID(), time.Now())
	reg := g.intents
	var wg sync.WaitGroup
	for _, id := range reg.takeRetired() {
		wg.Add(1)
		go func(id string) {
			defer wg.Done()
			reg.deleted(id, recovery.Disarm(ctx, g.store, id))
		}(id)
	}
	var aerr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		aerr = alongside()
	}()
	err := recovery.Arm(ctx, g.store, sc)
	wg.Wait()
	if err != nil {
		return err
	}
	if aerr != nil {
		// Armed for nothing: no effect was made or will be.
		if derr := recovery.Disarm(ctx, g.store, in.OperationID); derr != nil {
			reg.add(sc) // pending: the next write's heal or an open resolves it
		}
		return aerr
	}
	reg.add(sc)
	return g.failpoint(FailpointPostPhaseA)
}

// recoveryDisarm is Phase D, also called for an attempt that made no
// effect. After a publish the delete is deferred (see the file comment);
// otherwise it is sent now, and a failure keeps the intent pending so the
// next write's entry heal retires it.
func (g *Graph) recoveryDisarm(ctx context.Context, in *manifest.Intent) error {
	if len(in.Tables) == 0 {
		return nil // nothing was armed
	}
	reg := g.intents
	if g.publishedHere(in) {
		if err := g.failpoint(FailpointPostPhaseC); err != nil {
			return err
		}
		reg.retire(in.OperationID)
		return nil
	}
	if err := recovery.Disarm(ctx, g.store, in.OperationID); err != nil {
		return err
	}
	reg.remove(in.OperationID)
	return nil
}

// flushRetired sends the deferred Phase D deletes now.
func (g *Graph) flushRetired(ctx context.Context) {
	reg := g.intents
	for _, id := range reg.takeRetired() {
		reg.deleted(id, recovery.Disarm(ctx, g.store, id))
	}
}

// publishedHere reports whether this handle just published in's manifest
// version (Commit remembers it before Phase D).
func (g *Graph) publishedHere(in *manifest.Intent) bool {
	if in.Entry == nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.heads[in.Entry.Branch]
	return c != nil && c.entry.Key() == in.Entry.Key() && c.entry.Head == in.Entry.Head
}

// RepairReport is what Repair found and, when confirmed, did.
type RepairReport struct {
	// Pending lists the recovery sidecars found, with what recovery does
	// with each (preview) or did (Recovered, after --confirm).
	Pending []*recovery.Assessment `json:"pending,omitempty"`
	// Recovered are the audit rows of the interrupted writes repair
	// resolved first (rolled forward, rolled back, discarded), with
	// --confirm.
	Recovered []recovery.Record `json:"recovered,omitempty"`
	// Drift lists the tables whose HEAD differs from their manifest pin
	// with no recovery sidecar covering them.
	Drift []recovery.Drift `json:"drift"`
	// Applied: the drift was restored (confirm was set and there was some).
	Applied bool `json:"applied"`
	// Records are the audit rows written, one per repaired branch.
	Records []recovery.Record `json:"records,omitempty"`
}

// OpenForRepair opens the graph read-write for Repair without the
// fail-closed open sweep: Repair runs that sweep itself, in Compensate
// mode, so it can also resolve the intents a plain read-write open refuses
// (foreign table state under an intent). Use it only to call Repair.
func OpenForRepair(ctx context.Context, store backend.StorageAdapter, opts OpenOptions) (*Graph, error) {
	opts.ReadOnly = true
	g, err := Open(ctx, store, opts)
	if err != nil {
		return nil, err
	}
	g.readOnly = false
	return g, nil
}

// Repair resolves every state a write can leave. Without confirm it only
// reports: the pending recovery sidecars with their classification, and
// the table drift (HEAD != manifest pin) no sidecar covers. With confirm it
// first resolves every pending sidecar in Compensate mode (roll forward
// what is complete, roll back the write's own effects otherwise, leaving
// foreign table state alone), then restores each drifted table to its pin
// and publishes one commit per branch by omnigraph:recovery. Only an
// invariant violation (HEAD behind its pin) is refused.
func (g *Graph) Repair(ctx context.Context, confirm bool) (*RepairReport, error) {
	if confirm && g.readOnly {
		return nil, ErrReadOnly
	}
	rep := &RepairReport{}
	pending, err := g.PendingRecovery(ctx)
	if err != nil {
		return nil, err
	}
	rep.Pending = pending
	if confirm && len(pending) > 0 {
		g.flushRetired(ctx)
		opts := g.recoveryOptions(recovery.Compensate)
		rr, err := recovery.Sweep(ctx, g.store, opts)
		g.forgetResolved(rr)
		if rr != nil {
			for _, o := range rr.Outcomes {
				if o.Record != nil {
					rep.Recovered = append(rep.Recovered, *o.Record)
				}
			}
		}
		if err != nil {
			return rep, fmt.Errorf("repair: resolve the pending recovery intents: %w", err)
		}
	}
	drift, err := recovery.FindDrift(ctx, g.store, g.man)
	if err != nil {
		return rep, err
	}
	if !confirm {
		// Drift a pending sidecar covers is that write's, not repair's.
		covered := map[string]bool{}
		for _, a := range pending {
			for _, t := range a.Sidecar.Intent.Tables {
				covered[a.Sidecar.Intent.Token.Branch+"\x00"+t.Key] = true
			}
		}
		for _, d := range drift {
			if !covered[d.Branch+"\x00"+d.Key] {
				rep.Drift = append(rep.Drift, d)
			}
		}
		if rep.Drift == nil {
			rep.Drift = []recovery.Drift{}
		}
		return rep, nil
	}
	rep.Drift = drift
	if len(drift) == 0 {
		rep.Drift = []recovery.Drift{}
		return rep, nil
	}
	byBranch := map[string][]recovery.Drift{}
	var order []string
	for _, d := range drift {
		if byBranch[d.Branch] == nil {
			order = append(order, d.Branch)
		}
		byBranch[d.Branch] = append(byBranch[d.Branch], d)
	}
	for _, b := range order {
		ds := byBranch[b]
		names := make([]string, 0, len(ds))
		for _, d := range ds {
			names = append(names, b+"\x00"+d.Key)
		}
		sort.Strings(names)
		h, err := g.gates.acquire(ctx, false, []string{b}, names)
		if err != nil {
			return rep, err
		}
		rec, err := recovery.RepairBranch(ctx, g.store, graphManifests{g}, ds, newID(), newID(), time.Now())
		h.release()
		if rec != nil {
			rep.Records = append(rep.Records, *rec)
		}
		if errors.Is(err, recovery.ErrAuditNotWritten) && rec != nil {
			// The repair stands (published): not a refusal, and not
			// complete either — its audit row is missing.
			rep.Applied = true
			return rep, fmt.Errorf("branch %q was repaired (commit %s) and the repair stands (see 'omnigraph commit list'), but its audit row could not be written: %w", b, rec.CommitID, err)
		}
		if err != nil {
			return rep, err
		}
	}
	rep.Applied = true
	return rep, nil
}

// intentCovers reports whether a pending sidecar (of any process) names
// table key on branch: drift under it belongs to an interrupted or
// in-flight write, not to repair. It Lists __recovery/ and reads the
// sidecars, which only happens after the pre-arm check found drift.
func (g *Graph) intentCovers(ctx context.Context, branch, key string) (bool, error) {
	keys, err := recovery.Pending(ctx, g.store)
	if err != nil {
		return false, err
	}
	self, _ := ctx.Value(opCtxKey{}).(string)
	for _, k := range keys {
		if id, ok := recovery.OperationIDOf(k); ok && (id == self || g.intents.isRetired(id)) {
			continue // ours, or a published write of this process
		}
		sc, err := recovery.Read(ctx, g.store, k)
		if backend.IsNotFound(err) {
			continue
		}
		if err != nil {
			return false, err
		}
		if sc.Intent.Token.Branch != branch {
			continue
		}
		// A published write's sidecar (its delete still pending) does
		// not explain drift beyond its published versions.
		e := sc.Intent.Entry
		if pub, err := g.man.ReadVersion(ctx, e.Branch, e.Incarnation, e.Version); err == nil && pub.Commit != nil && pub.Commit.ID == e.Commit.ID {
			continue
		} else if err != nil && !backend.IsNotFound(err) {
			return false, err
		}
		for _, t := range sc.Intent.Tables {
			if t.Key == key {
				return true, nil
			}
		}
	}
	return false, nil
}

// undoIntent resolves the write's own intent in Compensate mode while the
// writer still holds its gates (see Write.lostRace).
func (g *Graph) undoIntent(ctx context.Context, in *manifest.Intent) (recovery.Outcome, error) {
	sc, err := recovery.Read(ctx, g.store, recovery.Key(in.OperationID))
	if err != nil {
		return recovery.Outcome{}, err
	}
	opts := g.recoveryOptions(recovery.Compensate)
	opts.Lock, opts.Unresolved = nil, nil // this writer holds the gates
	out, err := recovery.Resolve(ctx, g.store, sc, opts)
	if err == nil {
		g.intents.remove(in.OperationID)
	}
	return out, err
}
