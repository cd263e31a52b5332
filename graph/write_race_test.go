package graph_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/counter"
	"github.com/omnigraph-go/omnigraph/backend/fault"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/recovery"
	"github.com/omnigraph-go/omnigraph/table"
)

// commitStray commits one Person/Company version outside the manifest (a
// table commit no graph commit published): uncovered drift.
func commitStray(t testing.TB, g *graph.Graph, key, name string) {
	t.Helper()
	ctx := context.Background()
	s, err := g.Snapshot(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	ds, err := s.OpenTable(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	st, err := ds.StageAppend(ctx, recRows(ds.Schema(), name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := table.Commit(ctx, st); err != nil {
		t.Fatal(err)
	}
}

func noSidecars(t testing.TB, g *graph.Graph) {
	t.Helper()
	keys, err := recovery.Pending(context.Background(), g.Store())
	if err != nil || len(keys) != 0 {
		t.Fatalf("sidecars %v (%v), want none", keys, err)
	}
}

// TestPreArmCheckRefusesUncoveredDrift pins seed 000 step 3: before Phase A
// every existing target table's live HEAD must equal its manifest pin. A
// write over drift no intent covers is refused before any effect (on the
// old code it committed Company, failed on Person and wedged the graph:
// read-write open failed closed, repair refused), pointing at repair;
// repair restores it and the write then succeeds.
func TestPreArmCheckRefusesUncoveredDrift(t *testing.T) {
	ctx := context.Background()
	r := newCrashRig(t, "mem")
	mustWrite(t, r.g, "main", graph.KindMutation, "seed")
	commitStray(t, r.g, recPerson, "stray") // Person sorts after Company
	before := stateOf(t, r.g, "main")

	_, _, err := twoTableWrite(ctx, r.g, "main", graph.KindMutation, "x")
	var td *graph.TableDrift
	if !errors.As(err, &td) || !errors.Is(err, graph.ErrTableDrift) || errors.Is(err, graph.ErrRecoveryRequired) || graph.IsRetryable(err) {
		t.Fatalf("write over drift: %v, want a non-retryable TableDrift", err)
	}
	if td.Table != recPerson || td.Branch != "main" || !strings.Contains(err.Error(), "omnigraph repair") || strings.Contains(err.Error(), "__") {
		t.Fatalf("drift error %+v: %v", td, err)
	}
	if after := stateOf(t, r.g, "main"); after.commit != before.commit || !sameNames(after.companies, before.companies) {
		t.Fatalf("a refused write changed the graph: %+v, before %+v", after, before)
	}
	s, _ := r.g.Snapshot(ctx, "main")
	pin, _ := s.Pin(recCompany)
	if h, _ := table.LatestVersion(ctx, r.fault, pin.Path, pin.Branch); h != pin.Version {
		t.Fatalf("Company HEAD %d, pin %d: the refused write committed a table", h, pin.Version)
	}
	noSidecars(t, r.g)

	// Not wedged: a restarted process opens read-write.
	g, err := graph.Open(ctx, r.fault, graph.OpenOptions{Process: graph.NewProcess(), Actor: "tester"})
	if err != nil {
		t.Fatalf("read-write open over uncovered drift: %v", err)
	}
	rep, err := g.Repair(ctx, false)
	if err != nil || len(rep.Drift) != 1 || rep.Drift[0].Key != recPerson || rep.Applied {
		t.Fatalf("repair preview %+v %v", rep, err)
	}
	if rep, err = g.Repair(ctx, true); err != nil || !rep.Applied || len(rep.Records) != 1 {
		t.Fatalf("repair %+v %v", rep, err)
	}
	mustWrite(t, g, "main", graph.KindMutation, "after")
	g.Close() // its deferred Phase D delete
	assertConverged(t, g, r.fault)
	st := stateOf(t, g, "main")
	if !sameNames(st.persons, []string{"after", "seed"}) || !sameNames(st.companies, []string{"after", "seed"}) {
		t.Fatalf("rows after repair and write: %v / %v", st.persons, st.companies)
	}
}

// TestExclusiveWriterOverDriftIsRefused: the exclusive writer skips the
// pre-arm table check on its own head, so drift it did not make (a table
// version committed behind the lock's back and never published) surfaces
// at its table commit instead. A two-table write whose second table
// drifted undoes its first table's commit (published as one recovery
// commit, as a lost race's undo is) and prepares again; the next
// attempt probes (its base is no longer its own publish) and refuses the
// drift as the pre-arm check does: a non-retryable TableDrift, the rows
// unchanged, the first table's head at its pin, no sidecar left.
func TestExclusiveWriterOverDriftIsRefused(t *testing.T) {
	ctx := context.Background()
	r := newCrashRig(t, "mem")
	mustWrite(t, r.g, "main", graph.KindMutation, "seed")
	a, err := graph.Open(ctx, r.fault, graph.OpenOptions{Process: graph.NewProcess(), Actor: "tester", ExclusiveWriter: true})
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, a, "main", graph.KindMutation, "own") // a's own head
	before := stateOf(t, a, "main")
	commitStray(t, r.g, recPerson, "stray") // Person sorts after Company
	_, err = graph.Retry(ctx, 3, func(ctx context.Context) (*graph.Result, error) {
		_, res, err := twoTableWrite(ctx, a, "main", graph.KindMutation, "x")
		return res, err
	})
	var td *graph.TableDrift
	if !errors.As(err, &td) || graph.IsRetryable(err) || errors.Is(err, graph.ErrRecoveryRequired) || td.Table != recPerson {
		t.Fatalf("exclusive write over drift: %v, want a non-retryable TableDrift on %s", err, recPerson)
	}
	// The undone first attempt published its restore of Company (one
	// omnigraph:recovery commit, as any lost race does); the rows are
	// those before, and Company's head is its pin.
	after := stateOf(t, a, "main")
	if !sameNames(after.companies, before.companies) || !sameNames(after.persons, before.persons) || len(after.commits) > len(before.commits)+1 {
		t.Fatalf("a refused write changed the graph: %+v, before %+v", after, before)
	}
	s, _ := a.Snapshot(ctx, "main")
	pin, _ := s.Pin(recCompany)
	if h, _ := table.LatestVersion(ctx, r.fault, pin.Path, pin.Branch); h != pin.Version {
		t.Fatalf("Company head %d, pin %d: a refused write left a table commit", h, pin.Version)
	}
	noSidecars(t, a)
}

// TestStagedFilesGoWithTheArm: a write's new data files are not sent when
// it stages (Stage sends no request) but in Commit's arm round trip; when
// storing them fails the write fails before any effect ("nothing was
// committed", not RecoveryRequired), leaves no sidecar and no change, and
// the next write lands.
func TestStagedFilesGoWithTheArm(t *testing.T) {
	ctx := context.Background()
	r := newCrashRig(t, "mem")
	mustWrite(t, r.g, "main", graph.KindMutation, "seed")
	before := stateOf(t, r.g, "main")
	cnt := counter.New(r.fault)
	g, err := graph.Open(ctx, cnt, graph.OpenOptions{Process: graph.NewProcess(), Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	w, err := g.BeginWrite(ctx, "main", graph.WriteOptions{Kind: graph.KindMutation})
	if err != nil {
		t.Fatal(err)
	}
	cnt.Reset()
	for _, k := range []string{recPerson, recCompany} {
		if err := w.Stage(ctx, k, recAppend("x")); err != nil {
			t.Fatal(err)
		}
	}
	if c := cnt.Snapshot(); c.Put != 0 {
		t.Fatalf("staging sent %s, want no Put", c)
	}
	r.fault.FailNth(fault.Put, 1, backend.KindPermanent)
	_, err = w.Commit(ctx)
	if err == nil || errors.Is(err, graph.ErrRecoveryRequired) || !strings.Contains(err.Error(), "nothing was committed") {
		t.Fatalf("commit whose data file was refused: %v", err)
	}
	if after := stateOf(t, g, "main"); after.commit != before.commit || !sameNames(after.persons, before.persons) {
		t.Fatalf("a failed write changed the graph: %+v", after)
	}
	noSidecars(t, g)
	mustWrite(t, g, "main", graph.KindMutation, "next")
	if st := stateOf(t, g, "main"); !sameNames(st.persons, []string{"next", "seed"}) {
		t.Fatalf("rows %v", st.persons)
	}
}

// TestRepairResolvesForeignStateUnderAnIntent: the state the old code's
// write left over drift (its own Company commit landed, a foreign Person
// commit under the same intent) makes a read-write open fail closed;
// repair --confirm rolls the write's own effect back, leaves the foreign
// commit to the drift restore, restores it, and the graph takes writes.
func TestRepairResolvesForeignStateUnderAnIntent(t *testing.T) {
	ctx := context.Background()
	r := newCrashRig(t, "mem")
	mustWrite(t, r.g, "main", graph.KindMutation, "seed")
	before := stateOf(t, r.g, "main")
	// The process dies right after its first table commit (Company)...
	clear := graph.Failpoints.Set(r.g.ID(), graph.FailpointPostPhaseA, func() error {
		r.fault.CrashAfterWrite(r.fault.Writes() + 1)
		return nil
	})
	w, _, err := twoTableWrite(ctx, r.g, "main", graph.KindMutation, "x")
	clear()
	r.fault.Heal()
	if err == nil {
		t.Fatal("the write succeeded through a crash")
	}
	// ...and a foreign Person commit lands under its intent.
	commitStray(t, r.g, recPerson, "foreign")
	if _, err := graph.Open(ctx, r.fault, graph.OpenOptions{Process: graph.NewProcess()}); !errors.Is(err, recovery.ErrForeign) {
		t.Fatalf("open = %v, want the fail-closed ErrForeign this test starts from", err)
	}
	g, err := graph.OpenForRepair(ctx, r.fault, graph.OpenOptions{Process: graph.NewProcess()})
	if err != nil {
		t.Fatal(err)
	}
	if prev, err := g.Repair(ctx, false); err != nil || len(prev.Pending) != 1 || prev.Applied {
		t.Fatalf("preview %+v %v", prev, err)
	}
	rep, err := g.Repair(ctx, true)
	if err != nil {
		t.Fatalf("repair: %v", err)
	}
	if len(rep.Recovered) != 1 || rep.Recovered[0].OperationID != w.OperationID() || rep.Recovered[0].RecoveryKind != recovery.RolledBack || !rep.Applied {
		t.Fatalf("repair report %+v", rep)
	}
	g2, err := graph.Open(ctx, r.fault, graph.OpenOptions{Process: graph.NewProcess(), Actor: "tester"})
	if err != nil {
		t.Fatalf("open after repair: %v", err)
	}
	assertConverged(t, g2, r.fault)
	if st := stateOf(t, g2, "main"); !sameNames(st.persons, before.persons) || !sameNames(st.companies, before.companies) {
		t.Fatalf("rows after repair %v / %v, want %v / %v", st.persons, st.companies, before.persons, before.companies)
	}
	mustWrite(t, g2, "main", graph.KindMutation, "after")
	if st := stateOf(t, g2, "main"); !sameNames(st.persons, []string{"after", "seed"}) {
		t.Fatalf("rows %v", st.persons)
	}
}

// TestCrossProcessPublishRaceReprepares pins item 15: an insert that loses
// the manifest publish to a writer of another process (separate process
// scopes: no shared gates or registry) undoes its own table commit and
// reprepares, like a loser against a writer of its own process; no
// message names an internal storage key.
func TestCrossProcessPublishRaceReprepares(t *testing.T) {
	ctx := context.Background()
	r := newCrashRig(t, "mem")
	mustWrite(t, r.g, "main", graph.KindMutation, "seed")
	pa, pb := graph.NewProcess(), graph.NewProcess()
	a, err := graph.Open(ctx, r.fault, graph.OpenOptions{Process: pa, Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := graph.Open(ctx, r.fault, graph.OpenOptions{Process: pb, Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	oneTable := func(g *graph.Graph, key, name string, strict bool) (*graph.Result, error) {
		w, err := g.BeginWrite(ctx, "main", graph.WriteOptions{Kind: graph.KindMutation, Strict: strict})
		if err != nil {
			return nil, err
		}
		if err := w.Stage(ctx, key, recAppend(name)); err != nil {
			return nil, err
		}
		return w.Commit(ctx)
	}
	// A stops after its table commit; B (the other process) commits and
	// publishes meanwhile; A's publish then loses.
	var hits atomic.Int32
	pa.Failpoints().Set(a.ID(), graph.FailpointPostPhaseB, func() error {
		if hits.Add(1) == 1 {
			if _, err := oneTable(b, recCompany, "b-wins", false); err != nil {
				t.Errorf("process B: %v", err)
			}
		}
		return nil
	})
	res, err := graph.Retry(ctx, 5, func(ctx context.Context) (*graph.Result, error) { return oneTable(a, recPerson, "a-retries", false) })
	if err != nil {
		t.Fatalf("the publish-race loser did not reprepare: %v", err)
	}
	if hits.Load() < 2 {
		t.Fatalf("the loser did not prepare again (%d attempts)", hits.Load())
	}
	g, err := graph.Open(ctx, r.fault, graph.OpenOptions{Process: graph.NewProcess()})
	if err != nil {
		t.Fatal(err)
	}
	assertConverged(t, g, r.fault)
	st := stateOf(t, g, "main")
	if st.commit != res.Commit.ID || !sameNames(st.persons, []string{"a-retries", "seed"}) || !sameNames(st.companies, []string{"b-wins", "seed"}) {
		t.Fatalf("after the race: %+v", st)
	}

	// A strict write reports the lost race as ReadSetChanged, naming the
	// branch, never a storage key.
	hits.Store(0)
	_, err = oneTable(a, recPerson, "strict", true)
	if !errors.Is(err, graph.ErrReadSetChanged) || graph.IsRetryable(err) {
		t.Fatalf("strict loser: %v, want a non-retryable ReadSetChanged", err)
	}
	if msg := err.Error(); strings.Contains(msg, "__manifest") || strings.Contains(msg, "/.v/") || !strings.Contains(msg, `"main"`) {
		t.Fatalf("the message exposes storage keys or omits the branch: %s", msg)
	}
	a.Close()
	b.Close() // B's deferred Phase D delete
	g, err = graph.Open(ctx, r.fault, graph.OpenOptions{Process: graph.NewProcess()})
	if err != nil {
		t.Fatal(err)
	}
	st2 := stateOf(t, g, "main")
	if containsStr(st2.persons, "strict") || len(st2.companies) != 3 {
		t.Fatalf("strict loser left rows: %+v", st2)
	}
	assertConverged(t, g, r.fault)
}

// TestMaybeLandedErrorsNeverAdviseBlindRetry pins item 14: after
// RecoveryRequired or OutcomeUnknown the write may have landed (a client
// that retried as told duplicated edges), so the message names what to
// check first (commit list, recovery list) and never says to retry.
func TestMaybeLandedErrorsNeverAdviseBlindRetry(t *testing.T) {
	ctx := context.Background()
	r := newCrashRig(t, "mem")
	clear := graph.Failpoints.Set(r.g.ID(), graph.FailpointPostPhaseB, func() error { return errors.New("publisher down") })
	_, _, rerr := twoTableWrite(ctx, r.g, "main", graph.KindMutation, "x")
	clear()
	if !errors.Is(rerr, graph.ErrRecoveryRequired) {
		t.Fatalf("got %v, want RecoveryRequired", rerr)
	}
	unknown := &graph.OutcomeUnknown{Branch: "main", CommitID: "01COMMIT", Version: 3, Err: errors.New("answer lost")}
	for _, err := range []error{rerr, unknown} {
		msg := err.Error()
		for _, want := range []string{"omnigraph commit list", "omnigraph recovery list", "do not run"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%T message lacks %q: %s", err, want, msg)
			}
		}
		for _, bad := range []string{"then retry", "before retrying", "retry the write"} {
			if strings.Contains(msg, bad) {
				t.Errorf("%T message advises a blind retry (%q): %s", err, bad, msg)
			}
		}
	}
	// The write it was about did land once recovered: retrying it blindly
	// would have duplicated it.
	mustWrite(t, r.g, "main", graph.KindMutation, "next")
	if st := stateOf(t, r.g, "main"); !sameNames(st.persons, []string{"next", "x"}) {
		t.Fatalf("rows %v", st.persons)
	}
}

// TestExclusiveWriterTrustsOwnPublishesSafely pins OpenOptions.ExclusiveWriter:
// a handle opened as the root's only writer starts its next write from the
// head it last published, with no freshness probe of the branch or of its
// tables' heads, neither at BeginWrite nor in the pre-arm check (no List at
// all); and when that promise is broken (another process published
// meanwhile: a lost lock), a write whose table the other commit moved is
// refused before any effect (its table version's put-if-absent fails, and
// the check it skipped classifies that: ReadSetChanged, retryable),
// one whose tables it did not touch loses the publish and undoes its own
// table commit, an insert prepares again and lands on top of the other
// commit, a strict write is refused as ReadSetChanged, and nothing is lost
// or duplicated.
func TestExclusiveWriterTrustsOwnPublishesSafely(t *testing.T) {
	ctx := context.Background()
	r := newCrashRig(t, "mem")
	mustWrite(t, r.g, "main", graph.KindMutation, "seed")
	cnt := counter.New(r.fault)
	a, err := graph.Open(ctx, cnt, graph.OpenOptions{Process: graph.NewProcess(), Actor: "tester", ExclusiveWriter: true})
	if err != nil {
		t.Fatal(err)
	}
	b, err := graph.Open(ctx, r.fault, graph.OpenOptions{Process: graph.NewProcess(), Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	oneTable := func(g *graph.Graph, key, name string, strict bool) (*graph.Result, error) {
		w, err := g.BeginWrite(ctx, "main", graph.WriteOptions{Kind: graph.KindMutation, Strict: strict})
		if err != nil {
			return nil, err
		}
		if err := w.Stage(ctx, key, recAppend(name)); err != nil {
			return nil, err
		}
		return w.Commit(ctx)
	}
	if _, err := oneTable(a, recPerson, "a1", false); err != nil {
		t.Fatal(err)
	}
	// The second write of the exclusive handle: BeginWrite sends nothing.
	cnt.Reset()
	w, err := a.BeginWrite(ctx, "main", graph.WriteOptions{Kind: graph.KindMutation})
	if err != nil {
		t.Fatal(err)
	}
	if c := cnt.Snapshot(); c.Total != 0 {
		t.Fatalf("BeginWrite on the exclusive writer's own head sent %s, want nothing", c)
	}
	if err := w.Stage(ctx, recPerson, recAppend("a2")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if c := cnt.Snapshot(); c.List != 0 || c.Total != 5 {
		t.Fatalf("the exclusive writer's own-head write sent %s, want no List and 5 requests (fragment, sidecar, table version, publish, the previous sidecar's delete)", c)
	}

	// The promise breaks on A's own table: B publishes a Person behind
	// A's back. A's next write is refused before any effect: the sidecar
	// is its only conditional put (no table commit, no publish).
	if _, err := graph.Retry(ctx, 3, func(ctx context.Context) (*graph.Result, error) { return oneTable(b, recPerson, "b-same", false) }); err != nil {
		t.Fatal(err)
	}
	cnt.Reset()
	if _, err := oneTable(a, recPerson, "a-refused", false); !errors.Is(err, graph.ErrReadSetChanged) || !graph.IsRetryable(err) {
		t.Fatalf("a write over a foreign commit to its table: %v, want a retryable ReadSetChanged", err)
	}
	if c := cnt.Snapshot(); c.CondPut != 2 {
		t.Fatalf("the refused write sent %s, want two conditional puts (its sidecar, the refused table version) and no effect", c)
	}
	if _, err := graph.Retry(ctx, 3, func(ctx context.Context) (*graph.Result, error) { return oneTable(a, recPerson, "a-same", false) }); err != nil {
		t.Fatal(err)
	}

	// The promise breaks: B publishes behind A's back.
	if _, err := graph.Retry(ctx, 3, func(ctx context.Context) (*graph.Result, error) { return oneTable(b, recCompany, "b-behind", false) }); err != nil {
		t.Fatal(err)
	}
	res, err := graph.Retry(ctx, 3, func(ctx context.Context) (*graph.Result, error) { return oneTable(a, recPerson, "a3", false) })
	if err != nil {
		t.Fatalf("the exclusive writer did not prepare again over the foreign commit: %v", err)
	}
	if _, err := graph.Retry(ctx, 3, func(ctx context.Context) (*graph.Result, error) { return oneTable(b, recCompany, "b-again", false) }); err != nil {
		t.Fatal(err)
	}
	if _, err := oneTable(a, recPerson, "strict", true); !errors.Is(err, graph.ErrReadSetChanged) {
		t.Fatalf("strict write over a foreign commit: %v, want ReadSetChanged", err)
	}
	// Refused once, the handle probes again: the next strict write lands.
	last, err := oneTable(a, recPerson, "strict2", true)
	if err != nil {
		t.Fatalf("strict write after the refusal: %v", err)
	}
	a.Close()
	b.Close()
	g, err := graph.Open(ctx, r.fault, graph.OpenOptions{Process: graph.NewProcess()})
	if err != nil {
		t.Fatal(err)
	}
	assertConverged(t, g, r.fault)
	st := stateOf(t, g, "main")
	if st.commit != last.Commit.ID || res.Commit.ID == last.Commit.ID ||
		!sameNames(st.persons, []string{"a-same", "a1", "a2", "a3", "b-same", "seed", "strict2"}) ||
		!sameNames(st.companies, []string{"b-again", "b-behind", "seed"}) {
		t.Fatalf("after the broken promise: %+v", st)
	}
}

// failAudit refuses every audit row write.
type failAudit struct{ backend.StorageAdapter }

func (f failAudit) PutIfAbsent(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	if strings.HasPrefix(key, recovery.AuditDir) {
		return backend.Attrs{}, backend.NewError("put_if_absent", key, backend.KindPermanent, errors.New("injected: refused"))
	}
	return f.StorageAdapter.PutIfAbsent(ctx, key, data)
}

// TestRepairWhoseAuditRowFailsReportsTheRepair is the simulation's finding
// (sim seeds 118, 153): a confirmed repair whose audit row cannot be
// written after the repair was published used to fail like a refusal while
// main had the new commit. It now fails with ErrAuditNotWritten, saying the
// repair stands and naming its commit (no storage key), with the report
// marked applied; the graph is repaired (a write succeeds, nothing lost).
func TestRepairWhoseAuditRowFailsReportsTheRepair(t *testing.T) {
	ctx := context.Background()
	r := newCrashRig(t, "mem")
	mustWrite(t, r.g, "main", graph.KindMutation, "seed")
	commitStray(t, r.g, recPerson, "stray")
	// A first open sweeps the seed write's sidecar (its audit row works).
	g0, err := graph.Open(ctx, r.fault, graph.OpenOptions{Process: graph.NewProcess(), Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	g0.Close()
	g, err := graph.Open(ctx, failAudit{r.fault}, graph.OpenOptions{Process: graph.NewProcess(), Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	before, err := g.Commits(ctx, "main", 0)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := g.Repair(ctx, true)
	if !errors.Is(err, recovery.ErrAuditNotWritten) || rep == nil || !rep.Applied || len(rep.Records) != 1 {
		t.Fatalf("repair with a failing audit row: %+v, %v; want ErrAuditNotWritten with the repair applied", rep, err)
	}
	if m := err.Error(); !strings.Contains(m, `"main"`) || !strings.Contains(m, rep.Records[0].CommitID) || !strings.Contains(m, "stands") || strings.Contains(m, "__") {
		t.Fatalf("message %q: want the branch, the commit and that the repair stands, and no storage key", m)
	}
	after, err := g.Commits(ctx, "main", 0)
	if err != nil || len(after) != len(before)+1 || after[0].ID != rep.Records[0].CommitID {
		t.Fatalf("commits after the repair: %d (before %d), %v", len(after), len(before), err)
	}
	mustWrite(t, g, "main", graph.KindMutation, "after")
	g.Close()
	st := stateOf(t, g, "main")
	if !sameNames(st.persons, []string{"after", "seed"}) {
		t.Fatalf("rows after repair and write: %v", st.persons)
	}
}
