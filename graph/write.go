package graph

// The shared write pipeline. Every writer that changes tables and publishes a
// graph commit (mutation, load, merge, schema apply, index build, optimize)
// runs one attempt through it:
//
//	w, err := g.BeginWrite(ctx, branch, WriteOptions{Kind: "mutation"})
//	                                  // 1. capture the branch-authority token
//	snap := w.Snapshot()              //    the immutable state to validate against
//	err = w.Stage(ctx, key, fn)       // 2. validate and stage outside the gates
//	res, err := w.Commit(ctx)         // 3-6. gates, re-check, effects, publish
//
// Commit, in order:
//
//  1. takes the process-local gates: schema, then the branch, then the
//     touched tables sorted;
//  2. builds the complete manifest.Intent (pre-minted commit id and per-table
//     transaction ids) and calls armIntent (Phase A, the recovery sidecar)
//     in parallel with the token re-check: one freshness probe, plus
//     pendingIntentBarrier, the recovery layer's hook for intents armed
//     since capture. A sidecar is not an effect: when the re-check fails it
//     is withdrawn;
//  3. a changed token returns *ReadSetChanged before any effect; Retryable
//     tells re-preparing writers (insert, append, merge) to start a new
//     attempt;
//  4. Phase B: forks first-touch tables on a named branch (then stages them
//     there), and commits every staged table transaction (one PutIfAbsent
//     each, zero retries; a lost answer is resolved by the exact uuid);
//  5. Phase C: publishes the one manifest version (one PutIfAbsent);
//  6. Phase D: disarmIntent deletes the sidecar (a failure is a warning).
//
// Failure after the first durable effect is *RecoveryRequired (the sidecar
// lets recovery finish or undo the write). A publish whose answer was lost
// and could not be read back is *OutcomeUnknown: never success, never
// failure, never re-sent.

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/internal/plant"
	"github.com/omnigraph-go/omnigraph/manifest"
	"github.com/omnigraph-go/omnigraph/recovery"
	"github.com/omnigraph-go/omnigraph/table"
)

// Token is a branch-authority token (see manifest.Token).
type Token = manifest.Token

func tokenOf(e *manifest.Entry) Token { return manifest.TokenOf(e) }

// Writer kinds recorded in the intent.
const (
	KindMutation    = "mutation"
	KindLoad        = "load"
	KindMerge       = "merge"
	KindSchemaApply = "schema_apply"
	KindIndex       = "index"
	KindOptimize    = "optimize"
)

// DefaultWriteRetries bounds how often an insert, append or merge
// re-prepares after losing a race for its branch before any effect (and
// any write, strict ones included, after a maintenance commit moved it).
const DefaultWriteRetries = 16

// maxMaintenanceLookback bounds the versions a write's re-check reads to
// decide that only maintenance commits moved its branch; more than that
// is treated as a data change (the write reports it as before).
const maxMaintenanceLookback = 8

// IsMaintenance reports whether a writer kind changes no row and no
// schema (its commit is marked manifest.Commit.Maintenance).
func IsMaintenance(kind string) bool { return kind == KindOptimize || kind == KindIndex }

// WriteOptions shape one write attempt.
type WriteOptions struct {
	// Kind is the writer (Kind* constants); recorded in the intent.
	Kind string
	// Strict writes (update, delete, overwrite) report a changed token as a
	// non-retryable ReadSetChanged; others get a retryable one.
	Strict bool
	// Actor overrides the handle's actor for this commit (recovery keeps
	// the original actor when it rolls a write forward).
	Actor string
	// MergedParent, when set, is the commit's second parent (merges).
	MergedParent string
	// MergedFrom, with MergedParent, is where that commit was published
	// (recorded as the entry's Merged location).
	MergedFrom *manifest.ForkPoint
	// SchemaExclusive takes the schema gate exclusively (schema apply).
	SchemaExclusive bool
	// SchemaIdentity, when set, is the accepted schema the commit publishes
	// (schema apply); the source must already be stored at
	// manifest.SchemaKey.
	SchemaIdentity string
}

// StageFunc stages one table's change against base, the table at the
// version the write reads, and returns the staged transaction (Empty when
// nothing changes). It must not commit. For a table the branch has not
// written yet it runs inside Commit, after the table is forked.
type StageFunc func(ctx context.Context, base *table.Dataset) (*table.Staged, error)

// Write is one prepared write attempt. It is not safe for concurrent use.
type Write struct {
	g      *Graph
	opts   WriteOptions
	base   *manifest.Entry
	opID   string
	commit string
	tables map[string]*tableWrite
	pins   map[string]manifest.TablePin // pointer-only pin updates
	// tableSet, when set, replaces the whole table set the commit pins
	// (schema apply: tables added, renamed or dropped).
	tableSet []manifest.TablePin
	used     bool
	failed   string // the table whose Phase B step failed
	// ownHead: base is the head this exclusive writer handle last
	// published, taken without a probe; the pre-arm check then probes the
	// branch only when a table head differs from its pin (see recheck).
	ownHead bool
}

type tableWrite struct {
	pin        manifest.TablePin
	firstTouch bool
	// held holds the stage's new data files until Commit's arm round trip
	// (deferput.go); real is the store beneath it.
	held    *heldPuts
	real    backend.StorageAdapter
	fn      StageFunc
	staged  *table.Staged
	txnUUID string
	// committed is the version the table commit made; the handle caches it
	// only once the publish pinning it lands (an undone version's number
	// is reused by the next fork).
	committed *table.Dataset
}

// Result is what a published write reports.
type Result struct {
	// Commit is the published commit; zero when NoOp.
	Commit CommitInfo
	// Snapshot is the branch head after the write.
	Snapshot *Snapshot
	// NoOp: nothing changed, so nothing was published.
	NoOp bool
	// Warnings are non-fatal problems after the publish (a sidecar that
	// could not be deleted).
	Warnings []string
}

// BeginWrite captures the branch-authority token of branch (on a warm
// handle: one List, no GET) and returns an attempt to stage changes in. The
// commit id and operation id are minted here.
func (g *Graph) BeginWrite(ctx context.Context, branch string, opts WriteOptions) (*Write, error) {
	if g.readOnly {
		return nil, ErrReadOnly
	}
	if branch == "" {
		branch = g.current
	}
	if err := manifest.ValidateBranchName(branch); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidBranch, err)
	}
	if opts.Kind == "" {
		opts.Kind = KindMutation
	}
	if err := g.recoveryBarrier(ctx, branch); err != nil {
		return nil, err
	}
	head, own, err := g.headOwn(ctx, branch)
	if err != nil {
		return nil, err
	}
	return &Write{
		g:       g,
		opts:    opts,
		base:    head,
		ownHead: own,
		opID:    newID(),
		commit:  newID(),
		tables:  map[string]*tableWrite{},
		pins:    map[string]manifest.TablePin{},
	}, nil
}

// Token is the authority this attempt prepared against.
func (w *Write) Token() Token { return tokenOf(w.base) }

// Snapshot is the immutable state the attempt validates against.
func (w *Write) Snapshot() *Snapshot { return &Snapshot{g: w.g, entry: w.base} }

// OperationID identifies the attempt (the recovery sidecar's id).
func (w *Write) OperationID() string { return w.opID }

// CommitID is the pre-minted id of the commit the attempt publishes.
func (w *Write) CommitID() string { return w.commit }

// FirstTouch reports whether writing table key forks it onto the branch
// (the branch has not written it yet).
func (w *Write) FirstTouch(key string) bool {
	pin, ok := w.base.Pin(key)
	return ok && pin.Branch != tableBranch(w.base.Branch, w.base.Incarnation)
}

// Stage registers one table's change. For a table already on the write's
// branch, fn runs now, outside the gates, against the pinned version; for a
// first-touch table it is kept and runs inside Commit after the fork.
// Staging a table twice replaces the earlier change.
func (w *Write) Stage(ctx context.Context, key string, fn StageFunc) error {
	if w.used {
		return errors.New("graph: Stage after Commit; begin a new write")
	}
	pin, ok := w.base.Pin(key)
	if !ok {
		return fmt.Errorf("no table %q in the graph", key)
	}
	tw := &tableWrite{pin: pin, fn: fn, firstTouch: w.FirstTouch(key)}
	if !tw.firstTouch {
		ds, err := w.g.openTable(ctx, pin.Path, pin.Branch, pin.Version)
		if err != nil {
			return fmt.Errorf("open table %s at its pinned version %d: %w", key, pin.Version, err)
		}
		tw.real = ds.Store()
		if h, ok := tw.real.(*heldPuts); ok { // a version committed through one
			tw.real = h.StorageAdapter
		}
		tw.held = newHeldPuts(tw.real)
		st, err := fn(ctx, ds.WithStore(tw.held))
		if err != nil {
			return err
		}
		if st.Empty() {
			delete(w.tables, key)
			return nil
		}
		if st.ReadVersion != pin.Version || st.Branch != pin.Branch || st.Path != pin.Path {
			return fmt.Errorf("graph: table %s was staged against %s@%d, the write reads %s@%d", key, st.Branch, st.ReadVersion, pin.Branch, pin.Version)
		}
		if err := indexEdges(ctx, key, st); err != nil {
			return err
		}
		tw.staged = st
	} else {
		tw.txnUUID = newID()
	}
	w.tables[key] = tw
	return nil
}

// SetPin records a pointer-only table update: the commit pins the table at
// pin without a physical effect (a merge taking the source's version).
func (w *Write) SetPin(pin manifest.TablePin) error {
	if _, ok := w.base.Pin(pin.Key); !ok {
		return fmt.Errorf("no table %q in the graph", pin.Key)
	}
	w.pins[pin.Key] = pin
	return nil
}

// SetTables replaces the set of tables the commit pins: pins lists every
// table of the graph after the write, by its new key (a renamed type's
// table keeps its path under a new key; a dropped type's pin is left out;
// an added type's table, created beforehand at an unreferenced path, is
// pinned pointer-only). Tables staged with Stage keep their key and get
// their planned version on top, so each must be in pins. Only a write with
// SchemaExclusive (schema apply) may change the table set.
func (w *Write) SetTables(pins []manifest.TablePin) error {
	if !w.opts.SchemaExclusive {
		return errors.New("graph: SetTables needs a schema-exclusive write")
	}
	seen := map[string]bool{}
	for _, p := range pins {
		if p.Key == "" || p.Path == "" || p.Branch == "" || p.Version == 0 {
			return fmt.Errorf("graph: incomplete table pin %+v", p)
		}
		if seen[p.Key] {
			return fmt.Errorf("graph: table %q pinned twice", p.Key)
		}
		seen[p.Key] = true
	}
	w.tableSet = append([]manifest.TablePin{}, pins...)
	sort.Slice(w.tableSet, func(i, j int) bool { return w.tableSet[i].Key < w.tableSet[j].Key })
	return nil
}

// Commit runs the effect phase of the attempt (see the file comment). A
// Write commits at most once.
func (w *Write) Commit(ctx context.Context) (*Result, error) {
	if w.used {
		return nil, errors.New("graph: Write committed twice; begin a new write")
	}
	w.used = true
	g := w.g
	if len(w.tables) == 0 && len(w.pins) == 0 && w.tableSet == nil && w.opts.SchemaIdentity == "" {
		return &Result{NoOp: true, Snapshot: w.Snapshot()}, nil
	}
	if err := g.failpoint(FailpointPreCommit); err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(w.tables))
	for k := range w.tables {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	gateNames := make([]string, len(keys))
	for i, k := range keys {
		gateNames[i] = w.base.Branch + "\x00" + k
	}
	h, err := g.gates.acquire(ctx, w.opts.SchemaExclusive, []string{w.base.Branch}, gateNames)
	if err != nil {
		return nil, err
	}
	defer h.release()

	// Phase A rides with the token re-check (one round trip): a sidecar is
	// not an effect, and one armed for an attempt the re-check refuses is
	// withdrawn (or discarded by the next sweep).
	ctx = withOperation(ctx, w.opID)
	intent := w.plan(keys)
	// The staged data files go in the arm's round trip: files no version
	// names yet, not effects (a refused attempt leaves them to cleanup, as
	// a failed stage always did).
	armed := make(chan error, 1)
	go func() {
		armed <- g.armIntent(ctx, intent, func() error {
			if err := w.storeHeld(ctx, keys); err != nil {
				return fmt.Errorf("%w: %w", errStaged, err)
			}
			return nil
		})
	}()
	drift := make(chan error, 1)
	go func() { drift <- w.checkHeads(ctx, keys) }()
	err = w.recheck(ctx)
	if derr := <-drift; err == nil {
		err = derr
	}
	if err != nil {
		if <-armed == nil {
			g.disarmIntent(ctx, intent)
		}
		return nil, err
	}
	if err := <-armed; errors.Is(err, errStaged) {
		return nil, fmt.Errorf("write the staged data files (nothing was committed): %w", err)
	} else if err != nil {
		return nil, fmt.Errorf("arm the recovery intent (nothing was written): %w", err)
	}
	effects, err := w.effects(ctx, keys, intent)
	if err != nil {
		if effects == 0 {
			err = w.effectsRefused(ctx, keys, err)
			g.disarmIntent(ctx, intent) // nothing durable: the intent is moot
			return nil, err
		}
		if errors.Is(err, table.ErrConflict) {
			// Another writer (in any process) took a later table's next
			// version after our first effect: undo ours and prepare again.
			return w.lostRace(ctx, intent, "table:"+w.failed, err)
		}
		return nil, &RecoveryRequired{OperationID: w.opID, Reason: "a table commit failed after other effects", Err: err}
	}
	if err := g.failpoint(FailpointPostPhaseB); err != nil {
		return nil, &RecoveryRequired{OperationID: w.opID, Reason: "stopped after the table commits", Err: err}
	}
	if err := g.man.Publish(ctx, intent.Entry); err != nil {
		g.forget(w.base.Branch) // whatever happened, the next write probes
		switch {
		case errors.Is(err, backend.ErrUnknown):
			return nil, &OutcomeUnknown{Branch: w.base.Branch, CommitID: w.commit, Version: intent.Entry.Version, Err: err}
		case errors.Is(err, manifest.ErrHeadMoved) && effects == 0:
			g.disarmIntent(ctx, intent)
			if r, perr := g.man.Probe(ctx, w.base.Branch); perr == nil {
				return nil, w.headMoved(ctx, "graph_head", r)
			}
			return nil, w.changed("graph_head", fmt.Sprint(w.base.Version), "a newer version")
		case errors.Is(err, manifest.ErrHeadMoved) && w.opts.Kind == KindOptimize:
			// The maintenance-class publish (maintenance.go).
			return w.rebaseMaintenance(ctx, intent, err)
		case errors.Is(err, manifest.ErrHeadMoved):
			// A writer the gates do not see (another process) published
			// first: undo our table effects and prepare again.
			return w.lostRace(ctx, intent, "graph_head", err)
		}
		return w.refusedPublish(ctx, intent, err)
	}
	return w.published(ctx, intent), nil
}

// published finishes a write whose publish of intent.Entry landed: the
// caches, then Phase D.
func (w *Write) published(ctx context.Context, intent *manifest.Intent) *Result {
	g := w.g
	g.rememberPublished(intent.Entry)
	for _, tw := range w.tables {
		if tw.committed != nil {
			g.cacheTable(tw.committed) // the next write on this table stages without a GET
		}
	}
	res := &Result{Commit: commitInfo(intent.Entry), Snapshot: &Snapshot{g: g, entry: intent.Entry}}
	if err := g.disarmIntent(ctx, intent); err != nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("the write is committed, but its recovery intent could not be removed (the next open removes it): %v", backend.Redact(err.Error())))
	}
	return res
}

// recheck compares the live branch head with the captured token: one List.
// The head key names the incarnation and version, and versions are
// immutable, so an equal key means the whole token (schema identity
// included) is unchanged.
//
// A write whose base is the exclusive writer's own last publish (ownHead)
// sends no probe here: the writer lock promises no one else published, the
// pre-arm table check (checkHeads) still reads every target table's head
// and probes the branch before it calls a moved table drift, and the
// publish is a compare-and-swap on the next version. So a broken promise
// (a lost lock) that moved a target table is refused before any effect as
// ReadSetChanged; one that only moved other tables is caught by the
// publish, and the write undoes its own table commits (lostRace) and
// prepares again (TestExclusiveWriterTrustsOwnPublishesSafely). That saves
// one request a write; docs/dev/differences.md says why the seed's order
// is kept in substance.
func (w *Write) recheck(ctx context.Context) error {
	if w.ownHead && !w.g.publishedSince(w.base) {
		return w.g.pendingIntentBarrier(ctx, w.Token())
	}
	return w.probeBranch(ctx)
}

// probeBranch is recheck's probe: the live head must be the base.
func (w *Write) probeBranch(ctx context.Context) error {
	r, err := w.g.man.Probe(ctx, w.base.Branch)
	if err != nil {
		return err
	}
	switch {
	case !r.Live():
		return w.changed("branch", "live", "deleted")
	case r.Incarnation != w.base.Incarnation:
		return w.changed("branch_identifier", fmt.Sprint(w.base.Incarnation), fmt.Sprint(r.Incarnation))
	case r.Version != w.base.Version:
		return w.headMoved(ctx, "graph_head", r)
	}
	return w.g.pendingIntentBarrier(ctx, w.Token())
}

// headMoved is the ReadSetChanged of a write whose branch moved from its
// base to r: retryable, even for a strict write, when only maintenance
// commits lie between (what the write read is unchanged); the usual one
// otherwise.
func (w *Write) headMoved(ctx context.Context, member string, r manifest.Ref) error {
	if r.Live() && r.Incarnation == w.base.Incarnation && w.g.onlyMaintenance(ctx, w.base, r.Version) {
		w.g.forget(w.base.Branch)
		return &ReadSetChanged{Branch: w.base.Branch, Member: member, Expected: fmt.Sprint(w.base.Version), Actual: fmt.Sprint(r.Version),
			Retryable: true, Maintenance: true}
	}
	return w.changed(member, fmt.Sprint(w.base.Version), fmt.Sprint(r.Version))
}

// onlyMaintenance reports whether every version of from's incarnation
// after from, up to version to, is a maintenance commit with from's
// schema (one GET each, at most maxMaintenanceLookback). A failed read
// says no.
func (g *Graph) onlyMaintenance(ctx context.Context, from *manifest.Entry, to uint64) bool {
	if to <= from.Version || to-from.Version > maxMaintenanceLookback {
		return false
	}
	for v := from.Version + 1; v <= to; v++ {
		e, err := g.man.ReadVersion(ctx, from.Branch, from.Incarnation, v)
		if err != nil || e.Kind != manifest.KindCommit || e.Commit == nil || !e.Commit.Maintenance || e.SchemaIdentity != from.SchemaIdentity {
			return false
		}
	}
	return true
}

// effectsRefused classifies a first table commit refused with nothing
// durable: for a write that trusted its own heads (ownHead, no pre-arm
// table check), a conflict means a table head moved behind the writer
// lock's back, and the answer is the pre-arm check's (a stale base:
// retryable ReadSetChanged; drift: TableDrift). Other errors are returned
// as they are.
func (w *Write) effectsRefused(ctx context.Context, keys []string, err error) error {
	if !w.ownHead || !errors.Is(err, table.ErrConflict) {
		return err
	}
	if verr := w.verifyHeads(ctx, keys); verr != nil {
		return verr
	}
	return w.changed("table:"+w.failed, "its pin", "moved by another writer")
}

// errStaged marks a failure to store the staged data files.
var errStaged = errors.New("staged data files not stored")

// storeHeld sends every staged table's held data files (in parallel).
func (w *Write) storeHeld(ctx context.Context, keys []string) error {
	errs := make(chan error, len(keys))
	for _, k := range keys {
		go func(h *heldPuts) {
			if h == nil {
				errs <- nil
				return
			}
			errs <- h.flush(ctx)
		}(w.tables[k].held)
	}
	var first error
	for range keys {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// checkHeads is the pre-arm check (seed step 3): every existing target
// table's live HEAD must equal its manifest pin. One List per table, sent
// in the same round trip as the token re-check and the Phase A put, so it
// adds no round trip. Drift found here is refused before any effect: a
// write over it would commit the tables before it and then fail, leaving an
// intent recovery must fail closed on. Drift that a sidecar covers is an
// interrupted or in-flight write (possibly another process's): a retryable
// ReadSetChanged. Drift nothing covers is *TableDrift (run repair).
func (w *Write) checkHeads(ctx context.Context, keys []string) error {
	if plant.On(plant.SkipPreArmCheck) {
		return nil
	}
	if w.ownHead {
		// The exclusive writer's own last publish pinned these tables: it
		// trusts their heads as it trusts the branch's. A head moved
		// behind its back (a broken promise) makes the table commit's
		// put-if-absent fail before any effect, and effectsRefused
		// classifies it as this check would have.
		return nil
	}
	return w.verifyHeads(ctx, keys)
}

// verifyHeads reads every existing target table's head and refuses a head
// that is not its pin (see checkHeads).
func (w *Write) verifyHeads(ctx context.Context, keys []string) error {
	type res struct {
		key  string
		head uint64
		err  error
	}
	var n int
	out := make(chan res, len(keys))
	for _, k := range keys {
		tw := w.tables[k]
		if tw.firstTouch {
			continue // its ref is created under the armed intent
		}
		n++
		go func(k string, pin manifest.TablePin) {
			h, err := table.LatestVersion(ctx, w.g.store, pin.Path, pin.Branch)
			out <- res{k, h, err}
		}(k, tw.pin)
	}
	var first *res
	for i := 0; i < n; i++ {
		r := <-out
		if r.err != nil {
			if first == nil || first.err == nil {
				first = &r
			}
			continue
		}
		if r.head != w.tables[r.key].pin.Version && (first == nil || first.err == nil && r.key < first.key) {
			first = &r
		}
	}
	switch {
	case first == nil:
		return nil
	case first.err != nil:
		return fmt.Errorf("check table %s before writing (nothing was written): %w", first.key, first.err)
	}
	if w.ownHead {
		// The recheck trusted the writer lock: a moved head is a stale
		// base (another writer published), not drift.
		if err := w.probeBranch(ctx); err != nil {
			return err
		}
	}
	pin := w.tables[first.key].pin
	covered, err := w.g.intentCovers(ctx, w.base.Branch, first.key)
	if err != nil {
		return err
	}
	if covered {
		return w.changed("table:"+first.key, fmt.Sprint(pin.Version), fmt.Sprint(first.head))
	}
	return &TableDrift{Branch: w.base.Branch, Table: first.key, Pin: pin.Version, Head: first.head}
}

// lostRace undoes the write's own table effects after it lost a race to a
// writer the gates do not serialize (another process): its intent is
// resolved in Compensate mode while this writer still holds the gates
// (own effects restored and published by omnigraph:recovery, the other
// writer's state left alone), and the write reports a ReadSetChanged,
// retryable for insert/append/merge. If the undo cannot finish the intent
// stays for recovery: *RecoveryRequired.
func (w *Write) lostRace(ctx context.Context, intent *manifest.Intent, member string, cause error) (*Result, error) {
	out, err := w.g.undoIntent(ctx, intent)
	if err != nil {
		return nil, &RecoveryRequired{OperationID: w.opID, Reason: "another writer won a race after this write's table commits, and undoing them failed", Err: errors.Join(cause, err)}
	}
	if out.Record != nil && out.Record.RecoveryKind == recovery.RolledForward {
		// The intent was intact after all and is now published.
		e := intent.Entry
		w.g.remember(e, "")
		return &Result{Commit: commitInfo(e), Snapshot: &Snapshot{g: w.g, entry: e}}, nil
	}
	if r, err := w.g.man.Probe(ctx, w.base.Branch); err == nil && r.Live() {
		// Only maintenance commits may have moved it (then it prepares
		// again whatever it read).
		return nil, w.headMoved(ctx, member, r)
	}
	return nil, w.changed(member, fmt.Sprint(w.base.Version), "moved by another writer")
}

// refusedPublish settles a write whose manifest publish the store refused
// with a definite answer (not a lost one): nothing was published, so the
// writer resolves its own intent while it still holds the gates rather than
// leave it for a restart (seed 001: a refused manifest request fails only
// its write, and the server keeps serving). Its table effects are all
// there, so recovery normally rolls it forward and the write is
// acknowledged once; a rollback answers the refusal. Only if recovery
// cannot finish (the store keeps refusing) does the intent stay:
// *RecoveryRequired, which a read-write open resolves.
func (w *Write) refusedPublish(ctx context.Context, intent *manifest.Intent, cause error) (*Result, error) {
	out, err := w.g.undoIntent(ctx, intent)
	if err != nil {
		return nil, &RecoveryRequired{OperationID: w.opID, Reason: "the manifest publish failed after the table commits, and undoing them failed", Err: errors.Join(cause, err)}
	}
	if out.Record != nil && out.Record.RecoveryKind == recovery.RolledForward {
		// Recovery published the intact write: it landed, once.
		e := intent.Entry
		w.g.remember(e, "")
		return &Result{Commit: commitInfo(e), Snapshot: &Snapshot{g: w.g, entry: e}}, nil
	}
	return nil, fmt.Errorf("publish commit %s on branch %q (the store refused it; the write's table changes were undone and nothing was published): %w", w.commit, w.base.Branch, cause)
}

func (w *Write) changed(member, expected, actual string) error {
	// The branch moved under this handle: the next write probes again.
	w.g.forget(w.base.Branch)
	return &ReadSetChanged{Branch: w.base.Branch, Member: member, Expected: expected, Actual: actual, Retryable: !w.opts.Strict}
}

// plan builds the complete intent: every table effect with its exact
// transaction identity and planned version, and the manifest version to
// publish with its pre-minted commit.
func (w *Write) plan(keys []string) *manifest.Intent {
	tb := tableBranch(w.base.Branch, w.base.Incarnation)
	next := w.nextEntry(w.base)
	actor := next.Commit.Actor
	if w.opts.SchemaIdentity != "" {
		next.SchemaIdentity = w.opts.SchemaIdentity
	}
	if w.tableSet != nil {
		next.Tables = append([]manifest.TablePin{}, w.tableSet...)
	}
	intent := &manifest.Intent{OperationID: w.opID, Kind: w.opts.Kind, Actor: actor, Token: w.Token()}
	for _, k := range keys {
		tw := w.tables[k]
		it := manifest.IntentTable{Key: k, Path: tw.pin.Path, Branch: tb, ExpectedVersion: tw.pin.Version}
		if tw.firstTouch {
			it.FirstTouch, it.ForkBranch, it.ForkVersion = true, tw.pin.Branch, tw.pin.Version
			it.PlannedVersion = forkedDataVersion(tw.pin.Version)
			it.TxnUUID = tw.txnUUID
		} else {
			it.PlannedVersion = tw.staged.ReadVersion + 1
			it.TxnUUID = tw.staged.UUID
		}
		intent.Tables = append(intent.Tables, it)
	}
	for i, p := range next.Tables {
		if np, ok := w.pins[p.Key]; ok {
			next.Tables[i] = np
		}
	}
	for _, it := range intent.Tables {
		setPin(next, manifest.TablePin{Key: it.Key, Path: it.Path, Branch: it.Branch, Version: it.PlannedVersion})
	}
	intent.Entry = next
	return intent
}

// nextEntry is the manifest version this write's commit makes on top of
// from (its base, or for a maintenance publish the head that moved past
// it), before its own pins are set.
func (w *Write) nextEntry(from *manifest.Entry) *manifest.Entry {
	actor := w.g.actor
	if w.opts.Actor != "" {
		actor = w.opts.Actor
	}
	parents := []string{from.Head}
	if w.opts.MergedParent != "" {
		parents = append(parents, w.opts.MergedParent)
	}
	next := from.Successor(manifest.Commit{ID: w.commit, Parents: parents, Actor: actor, TimeMicros: nowMicros(), Maintenance: IsMaintenance(w.opts.Kind)})
	if l := w.opts.MergedFrom; l != nil && w.opts.MergedParent != "" && l.Head == w.opts.MergedParent {
		m := *l
		next.Merged = &m
	}
	return next
}

// setPin replaces the pin of p.Key in e.
func setPin(e *manifest.Entry, p manifest.TablePin) {
	for i := range e.Tables {
		if e.Tables[i].Key == p.Key {
			e.Tables[i] = p
		}
	}
}

// effects runs Phase B and returns how many durable effects it made.
func (w *Write) effects(ctx context.Context, keys []string, intent *manifest.Intent) (int, error) {
	effects := 0
	for i, k := range keys {
		w.failed = k
		tw, it := w.tables[k], intent.Tables[i]
		if tw.firstTouch {
			// Counted before the call: a failed fork may still have left
			// its ref, which the armed intent owns.
			effects++
			base, err := forkTable(ctx, w.g.store, it.Path, it.Branch, it.ForkBranch, it.ForkVersion)
			if err != nil {
				return effects, fmt.Errorf("fork table %s onto branch %q: %w", k, w.base.Branch, err)
			}
			st, err := tw.fn(ctx, base)
			if err != nil {
				return effects, err
			}
			if st.Empty() {
				// Nothing to write: the commit keeps the inherited pin, and
				// the untouched fork is adopted by the next first write.
				if p, ok := w.base.Pin(k); ok {
					setPin(intent.Entry, p)
				}
				continue
			}
			if st.ReadVersion+1 != it.PlannedVersion {
				return effects, fmt.Errorf("graph: forked table %s staged version %d, planned %d", k, st.ReadVersion+1, it.PlannedVersion)
			}
			if err := st.SetUUID(it.TxnUUID); err != nil {
				return effects, err
			}
			if err := indexEdges(ctx, k, st); err != nil {
				return effects, err
			}
			tw.staged = st
		}
		ds, landed, err := w.g.commitExact(ctx, tw.staged)
		if landed {
			effects++
			if ds != nil && tw.real != nil {
				ds = ds.WithStore(tw.real) // later writes stage through their own
			}
			tw.committed = ds
		}
		if err != nil {
			if errors.Is(err, table.ErrConflict) && effects == 0 {
				return 0, w.changed("table:"+k, fmt.Sprint(tw.staged.ReadVersion), "a newer version")
			}
			return effects, err
		}
	}
	return effects, nil
}

// commitExact commits one staged transaction (one PutIfAbsent, no retry).
// A lost answer is resolved by reading the version back and comparing the
// exact transaction uuid. landed reports whether the version is ours; ds is
// the committed dataset when the answer came back (nil when read back).
func (g *Graph) commitExact(ctx context.Context, st *table.Staged) (ds *table.Dataset, landed bool, err error) {
	ds, err = table.Commit(ctx, st)
	if err == nil {
		return ds, true, nil
	}
	if !errors.Is(err, backend.ErrUnknown) {
		return nil, false, err
	}
	ok, rerr := table.ResolveCommit(ctx, g.store, st)
	switch {
	case rerr != nil:
		return nil, false, fmt.Errorf("table commit outcome unknown and read-back failed (%v): %w", rerr, err)
	case ok:
		return nil, true, nil
	}
	return nil, false, fmt.Errorf("table %s commit did not land (answer lost): %w", st.Path, err)
}

// Retry runs attempt up to n times while it fails with a retryable
// ReadSetChanged (an insert, append or merge whose branch moved before any
// effect). Each attempt must begin its own Write. When the budget is spent
// the answer is *Contended (nothing was written).
func Retry(ctx context.Context, n int, attempt func(ctx context.Context) (*Result, error)) (*Result, error) {
	var err error
	for i := 0; i < max(n, 1); i++ {
		var res *Result
		res, err = attempt(ctx)
		if err == nil || !IsRetryable(err) {
			return res, err
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	var rs *ReadSetChanged
	errors.As(err, &rs)
	return nil, &Contended{Branch: rs.Branch, Attempts: max(n, 1), Err: err}
}

// RetryOp is Retry for an operation whose attempts return their own
// result beside the write's: it runs attempt up to n times (n <= 0:
// DefaultWriteRetries) while the error is retryable, and returns the last
// attempt's result.
func RetryOp[T any](ctx context.Context, n int, attempt func(ctx context.Context) (T, *Result, error)) (T, error) {
	if n <= 0 {
		n = DefaultWriteRetries
	}
	var out T
	_, err := Retry(ctx, n, func(ctx context.Context) (*Result, error) {
		r, gr, err := attempt(ctx)
		out = r
		return gr, err
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return out, nil
}

// The recovery hooks, implemented in recovery.go (package recovery).

// recoveryBarrier runs before a write captures its token: the in-process
// roll-forward heal of intents relevant to branch. An intent that needs a
// rollback returns *RecoveryRequired.
func (g *Graph) recoveryBarrier(ctx context.Context, branch string) error {
	return g.recoveryHeal(ctx, branch)
}

// pendingIntentBarrier runs inside the gates, after the token re-check: an
// unresolved intent armed since capture that overlaps this write returns
// *RecoveryRequired.
func (g *Graph) pendingIntentBarrier(ctx context.Context, tok Token) error {
	return g.recoveryPending(ctx, tok)
}

// armIntent is Phase A: make the intent durable (the recovery sidecar)
// before the first durable effect, including a first-touch table fork. An
// error aborts the write with nothing written.
func (g *Graph) armIntent(ctx context.Context, in *manifest.Intent, alongside func() error) error {
	return g.recoveryArm(ctx, in, alongside)
}

// disarmIntent is Phase D: remove the intent after the publish (or after an
// attempt that made no effect). Errors are reported as warnings only.
func (g *Graph) disarmIntent(ctx context.Context, in *manifest.Intent) error {
	return g.recoveryDisarm(ctx, in)
}
