package graph_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/counter"
	"github.com/omnigraph-go/omnigraph/backend/fault"
	"github.com/omnigraph-go/omnigraph/backend/local"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/internal/testenv"
	"github.com/omnigraph-go/omnigraph/recovery"
	"github.com/omnigraph-go/omnigraph/table"
)

var (
	recPerson  = graph.NodeTableKey("Person")
	recCompany = graph.NodeTableKey("Company")
)

// recRows builds a record of the table's schema: id and name are the given
// names, every other column null.
func recRows(schema *arrow.Schema, names ...string) arrow.Record {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i, f := range schema.Fields() {
		for _, n := range names {
			switch f.Name {
			case "id", "name":
				b.Field(i).(*array.StringBuilder).Append(n)
			default:
				b.Field(i).AppendNull()
			}
		}
	}
	return b.NewRecordBatch()
}

func recAppend(names ...string) graph.StageFunc {
	return func(ctx context.Context, base *table.Dataset) (*table.Staged, error) {
		return base.StageAppend(ctx, recRows(base.Schema(), names...))
	}
}

// crashRig is a graph behind a fault injector, over mem or local disk.
type crashRig struct {
	inner backend.StorageAdapter
	fault *fault.Injector
	g     *graph.Graph
}

func newCrashRig(t testing.TB, backendName string) *crashRig {
	t.Helper()
	r := &crashRig{}
	switch backendName {
	case "mem":
		r.inner = mem.New()
	case "local":
		s, err := local.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		r.inner = s
	case "s3":
		r.inner = testenv.Open(t, testenv.S3(t))
	case "gcs":
		r.inner = testenv.Open(t, testenv.GCS(t))
	case "azure":
		r.inner = testenv.Open(t, testenv.Azure(t))
	default:
		t.Fatalf("unknown backend %q", backendName)
	}
	r.fault = fault.New(r.inner)
	g, err := graph.Init(context.Background(), r.fault, testSchema, graph.InitOptions{Actor: "tester"})
	if err != nil {
		t.Fatalf("Init: %v", err)
	}
	r.g = g
	return r
}

// writeOp is one interrupted-write scenario: the branch it writes and how.
type writeOp struct {
	name   string
	kind   string
	branch string
	// setup runs before faults are armed (acknowledged history).
	setup func(t testing.TB, g *graph.Graph)
}

var writeOps = []writeOp{
	{
		name: "mutation", kind: graph.KindMutation, branch: "main",
		setup: func(t testing.TB, g *graph.Graph) { mustWrite(t, g, "main", graph.KindMutation, "seed") },
	},
	{
		name: "load", kind: graph.KindLoad, branch: "feat",
		setup: func(t testing.TB, g *graph.Graph) {
			mustWrite(t, g, "main", graph.KindMutation, "seed")
			if _, err := g.CreateBranch(context.Background(), "feat", ""); err != nil {
				t.Fatal(err)
			}
		},
	},
}

// twoTableWrite begins a write that appends one row to Person and one to
// Company (first touches on a named branch) and commits it.
func twoTableWrite(ctx context.Context, g *graph.Graph, branch, kind, name string) (*graph.Write, *graph.Result, error) {
	w, err := g.BeginWrite(ctx, branch, graph.WriteOptions{Kind: kind})
	if err != nil {
		return nil, nil, err
	}
	for _, k := range []string{recPerson, recCompany} {
		if err := w.Stage(ctx, k, recAppend(name)); err != nil {
			return w, nil, err
		}
	}
	res, err := w.Commit(ctx)
	return w, res, err
}

func mustWrite(t testing.TB, g *graph.Graph, branch, kind, name string) *graph.Result {
	t.Helper()
	_, res, err := twoTableWrite(context.Background(), g, branch, kind, name)
	if err != nil {
		t.Fatalf("write %s on %s: %v", name, branch, err)
	}
	return res
}

func liveRows(t testing.TB, s *graph.Snapshot, key string) int64 {
	t.Helper()
	ds, err := s.OpenTable(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return ds.RowCount()
}

// state is what the harness compares before and after: counts, and the
// exact rows (names) of both tables, so a recovery that keeps the right
// number of rows but the wrong ones fails.
type state struct {
	commit    string
	version   uint64
	person    int64
	company   int64
	persons   []string
	companies []string
	commits   []string
}

// tableNames returns the sorted name column of a table at a snapshot.
func tableNames(t testing.TB, s *graph.Snapshot, key string) []string {
	t.Helper()
	ctx := context.Background()
	ds, err := s.OpenTable(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := ds.ScanRecord(ctx, table.ScanOptions{Columns: []string{"name"}})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	out := make([]string, 0, rec.NumRows())
	for i := 0; i < int(rec.NumRows()); i++ {
		out = append(out, rec.Column(0).ValueStr(i))
	}
	sort.Strings(out)
	return out
}

// withName returns names plus name, sorted.
func withName(names []string, name string) []string {
	out := append(append([]string(nil), names...), name)
	sort.Strings(out)
	return out
}

func sameNames(a, b []string) bool {
	return strings.Join(a, "\x00") == strings.Join(b, "\x00") && len(a) == len(b)
}

func stateOf(t testing.TB, g *graph.Graph, branch string) state {
	t.Helper()
	ctx := context.Background()
	s, err := g.Snapshot(ctx, branch)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := g.Commits(ctx, branch, 0)
	if err != nil {
		t.Fatal(err)
	}
	st := state{commit: s.CommitID(), version: s.Version(), person: liveRows(t, s, recPerson), company: liveRows(t, s, recCompany),
		persons: tableNames(t, s, recPerson), companies: tableNames(t, s, recCompany)}
	for _, c := range cs {
		st.commits = append(st.commits, c.ID)
	}
	return st
}

// assertConverged checks every live branch: each pinned table's HEAD equals
// its manifest pin, and no recovery sidecar is left.
func assertConverged(t testing.TB, g *graph.Graph, store backend.StorageAdapter) {
	t.Helper()
	ctx := context.Background()
	bs, err := g.Manifest().Branches(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bs {
		h, err := g.Manifest().Read(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range h.Tables {
			if own := graph.TableBranch(h.Branch, h.Incarnation); p.Branch != own {
				// Inherited from the parent (checked there). A fork of
				// this branch the manifest does not pin must not hold
				// commits of its own.
				v, err := table.LatestVersion(ctx, store, p.Path, own)
				if err == nil && v != p.Version {
					t.Errorf("branch %s table %s: unpublished fork %q has HEAD %d (pin %s@%d)", b.Branch, p.Key, own, v, p.Branch, p.Version)
				} else if err != nil && !errors.Is(err, table.ErrNotFound) {
					t.Fatal(err)
				}
				continue
			}
			v, err := table.LatestVersion(ctx, store, p.Path, p.Branch)
			if err != nil {
				t.Fatal(err)
			}
			if v != p.Version {
				t.Errorf("branch %s table %s: HEAD %d on %q, manifest pins %d", b.Branch, p.Key, v, p.Branch, p.Version)
			}
		}
	}
	keys, err := recovery.Pending(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 0 {
		t.Errorf("sidecars left after a read-write open: %v", keys)
	}
}

// checkOutcome is the harness's verdict on one interrupted write after a
// read-write reopen. It returns the recovery kind recorded for it ("" if
// none).
//
// name is the row the write adds to both tables: a visible write must show
// exactly the rows before plus that one, an invisible one exactly the rows
// before (content, not only counts).
func checkOutcome(t testing.TB, store backend.StorageAdapter, op writeOp, before state, w *graph.Write, name string, opErr error) recovery.Kind {
	t.Helper()
	ctx := context.Background()
	// A crash is a process restart: the reopen runs in a fresh process
	// scope that remembers no intent, gate or failpoint of the writer.
	g, err := graph.Open(ctx, store, graph.OpenOptions{Process: graph.NewProcess()})
	if err != nil {
		t.Fatalf("read-write reopen after the interruption (op error %v): %v", opErr, err)
	}
	assertConverged(t, g, store)
	after := stateOf(t, g, op.branch)
	for _, id := range before.commits {
		if !containsStr(after.commits, id) {
			t.Fatalf("acknowledged commit %s was lost", id)
		}
	}
	seen := map[string]int{}
	for _, id := range after.commits {
		if seen[id]++; seen[id] > 1 {
			t.Fatalf("commit %s appears twice in the history", id)
		}
	}
	var commitID string
	if w != nil {
		commitID = w.CommitID()
	}
	visible := commitID != "" && containsStr(after.commits, commitID)
	if opErr == nil && !visible {
		t.Fatalf("an acknowledged write (commit %s) is not visible", commitID)
	}
	switch {
	case visible:
		if after.person != before.person+1 || after.company != before.company+1 {
			t.Fatalf("the write's commit is visible but rows are %d/%d, want %d/%d", after.person, after.company, before.person+1, before.company+1)
		}
		if !sameNames(after.persons, withName(before.persons, name)) || !sameNames(after.companies, withName(before.companies, name)) {
			t.Fatalf("the write's commit is visible but the rows are %v / %v, want %v plus %q", after.persons, after.companies, before.persons, name)
		}
	default:
		if after.person != before.person || after.company != before.company {
			t.Fatalf("an unacknowledged write is half-visible: rows %d/%d, before %d/%d", after.person, after.company, before.person, before.company)
		}
		if !sameNames(after.persons, before.persons) || !sameNames(after.companies, before.companies) {
			t.Fatalf("an invisible write changed the rows: %v / %v, before %v / %v", after.persons, after.companies, before.persons, before.companies)
		}
	}
	if w == nil {
		return ""
	}
	rs, err := g.RecoveryAudit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var kind recovery.Kind
	n := 0
	for _, r := range rs {
		if r.OperationID == w.OperationID() {
			n++
			kind = r.RecoveryKind
			if r.RecoveryForActor != "tester" || r.WriterKind != op.kind {
				t.Errorf("audit row %+v: want recovery_for_actor tester, writer %s", r, op.kind)
			}
			if (kind == recovery.RolledForward) != visible {
				t.Errorf("audit says %s but the commit visible = %v", kind, visible)
			}
		}
	}
	if n > 1 {
		t.Fatalf("%d audit rows for one operation", n)
	}
	if visible && opErr != nil && n == 0 && !errors.Is(opErr, backend.ErrUnknown) {
		t.Errorf("the write failed (%v) yet became visible without an audit row", opErr)
	}
	if visible {
		s, _ := g.Snapshot(ctx, op.branch)
		if ci, err := g.Commit(ctx, commitID); err != nil || ci.Actor != "tester" {
			t.Errorf("rolled-forward commit %s: actor %q (%v), want the original actor", commitID, ci.Actor, err)
		}
		_ = s
	}
	return kind
}

func containsStr(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// TestCrashAtEveryWrite crashes the store at (and just after) every storage
// write of a two-table mutation on main and of a first-touch load on a named
// branch, on mem and local disk, then reopens read-write and checks: the
// graph opens, every HEAD equals its pin, acknowledged commits are present,
// and the interrupted write is all or nothing.
func TestCrashAtEveryWrite(t *testing.T) {
	crashAtEveryWrite(t, "mem", "local")
}

// TestCrashAtEveryWriteCloud runs the same harness on the real stores
// (versitygw, fake-gcs-server, Azurite): their conditional writes, not the
// reference implementation's, decide every outcome.
func TestCrashAtEveryWriteCloud(t *testing.T) {
	for _, be := range []string{"s3", "gcs", "azure"} {
		t.Run(be, func(t *testing.T) { crashAtEveryWrite(t, be) })
	}
}

func crashAtEveryWrite(t *testing.T, backends ...string) {
	ctx := context.Background()
	for _, be := range backends {
		for _, op := range writeOps {
			for _, after := range []bool{false, true} {
				name := fmt.Sprintf("%s/%s/crash_at", be, op.name)
				if after {
					name = fmt.Sprintf("%s/%s/crash_after", be, op.name)
				}
				t.Run(name, func(t *testing.T) {
					kinds := map[recovery.Kind]int{}
					for k := 1; ; k++ {
						r := newCrashRig(t, be)
						op.setup(t, r.g)
						before := stateOf(t, r.g, op.branch)
						r.fault.Reset()
						if after {
							r.fault.CrashAfterWrite(k)
						} else {
							r.fault.CrashAtWrite(k)
						}
						name := fmt.Sprintf("k%d", k)
						w, _, err := twoTableWrite(ctx, r.g, op.branch, op.kind, name)
						crashed := r.fault.Crashed()
						r.fault.Heal()
						kinds[checkOutcome(t, r.fault, op, before, w, name, err)]++
						if !crashed {
							if err != nil {
								t.Fatalf("k=%d: no crash, yet the write failed: %v", k, err)
							}
							t.Logf("%d crash points; recovery kinds %v", k-1, kinds)
							break
						}
						if k > 60 {
							t.Fatal("the write never finished its writes")
						}
					}
					if kinds[recovery.RolledForward] == 0 || kinds[recovery.Discarded] == 0 {
						t.Errorf("the harness never exercised both roll-forward and discard: %v", kinds)
					}
					if !after && kinds[recovery.RolledBack] == 0 {
						t.Errorf("the harness never exercised a rollback: %v", kinds)
					}
				})
			}
		}
	}
}

// TestLostAnswersNeverDuplicate loses the answer of the n-th write of each
// class (the request took effect); the write either succeeds or reports an
// error, and after a reopen nothing is published twice.
func TestLostAnswersNeverDuplicate(t *testing.T) {
	ctx := context.Background()
	for _, op := range writeOps {
		for _, class := range []fault.Class{fault.Put, fault.CondPut, fault.Delete} {
			t.Run(fmt.Sprintf("%s/%s", op.name, class), func(t *testing.T) {
				for n := 1; n <= 16; n++ {
					r := newCrashRig(t, "mem")
					op.setup(t, r.g)
					c := counter.New(r.fault)
					g, err := graph.Open(ctx, c, graph.OpenOptions{Actor: "tester", Branch: "main"})
					if err != nil {
						t.Fatal(err)
					}
					// A warm handle: the write also sends the deferred
					// delete of this one's sidecar.
					mustWrite(t, g, "main", graph.KindMutation, "warm")
					before := stateOf(t, g, op.branch)
					r.fault.Reset()
					r.fault.LoseAnswer(class, n)
					c.Reset()
					name := fmt.Sprintf("n%d", n)
					w, _, err := twoTableWrite(ctx, g, op.branch, op.kind, name)
					// The outcome is success or a typed error that says the
					// write may have landed (never an untyped failure).
					if err != nil && !errors.Is(err, backend.ErrUnknown) && !errors.Is(err, graph.ErrRecoveryRequired) && !graph.IsRetryable(err) {
						t.Fatalf("n=%d: a lost answer surfaced as an untyped error: %v", n, err)
					}
					checkOutcome(t, r.fault, op, before, w, name, err)
					if c.Snapshot().Of(class) < n {
						t.Logf("%d lost answers tried", n-1)
						break
					}
				}
			})
		}
	}
}

// TestFailpointsAtPhaseBoundaries stops a mutation and a load at each named
// phase boundary (crashing the store there), reopens read-write and checks
// the outcome the protocol prescribes and its audit row.
func TestFailpointsAtPhaseBoundaries(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		point     string
		wantAck   bool
		wantKind  recovery.Kind
		wantClass recovery.Classification
		visible   bool
	}{
		{graph.FailpointPostPhaseA, false, recovery.Discarded, recovery.ClassNoMovement, false},
		{graph.FailpointPostPhaseB, false, recovery.RolledForward, recovery.ClassRolledPastExpected, true},
		{graph.FailpointPostPhaseC, true, recovery.RolledForward, recovery.ClassPublished, true},
	}
	for _, op := range writeOps {
		for _, tc := range cases {
			t.Run(op.name+"/"+tc.point, func(t *testing.T) {
				r := newCrashRig(t, "mem")
				op.setup(t, r.g)
				before := stateOf(t, r.g, op.branch)
				clear := graph.Failpoints.Set(r.g.ID(), tc.point, func() error {
					r.fault.CrashAtWrite(r.fault.Writes() + 1)
					return errors.New("injected crash at " + tc.point)
				})
				w, _, err := twoTableWrite(ctx, r.g, op.branch, op.kind, "fp")
				clear()
				r.fault.Heal()
				if (err == nil) != tc.wantAck {
					t.Fatalf("write error %v; acknowledged want %v", err, tc.wantAck)
				}
				if tc.point == graph.FailpointPostPhaseB && !errors.Is(err, graph.ErrRecoveryRequired) {
					t.Fatalf("a write stopped after its table commits returned %v, want RecoveryRequired", err)
				}
				kind := checkOutcome(t, r.fault, op, before, w, "fp", err)
				if kind != tc.wantKind {
					t.Fatalf("recovery kind %q, want %q", kind, tc.wantKind)
				}
				g, _ := graph.Open(ctx, r.fault, graph.OpenOptions{ReadOnly: true})
				rs, _ := g.RecoveryAudit(ctx)
				if len(rs) != 1 || rs[0].Classification != tc.wantClass {
					t.Fatalf("audit %+v; want one row classified %s", rs, tc.wantClass)
				}
				if tc.visible {
					if s := stateOf(t, g, op.branch); s.commit != w.CommitID() {
						t.Fatalf("head %s, want the interrupted write's pre-minted commit %s", s.commit, w.CommitID())
					}
				}
			})
		}
	}
}

// TestInProcessHeal: a write that failed after its table commits is rolled
// forward by the next write on the same handle, without a reopen.
func TestInProcessHeal(t *testing.T) {
	ctx := context.Background()
	r := newCrashRig(t, "mem")
	mustWrite(t, r.g, "main", graph.KindMutation, "seed")
	clear := graph.Failpoints.Set(r.g.ID(), graph.FailpointPostPhaseB, func() error { return errors.New("publisher down") })
	w, _, err := twoTableWrite(ctx, r.g, "main", graph.KindMutation, "interrupted")
	clear()
	if !errors.Is(err, graph.ErrRecoveryRequired) {
		t.Fatalf("got %v, want RecoveryRequired", err)
	}
	res := mustWrite(t, r.g, "main", graph.KindMutation, "next")
	st := stateOf(t, r.g, "main")
	if !containsStr(st.commits, w.CommitID()) || st.commit != res.Commit.ID || st.person != 3 {
		t.Fatalf("heal did not roll the interrupted write forward before the next one: %+v", st)
	}
	rs, err := r.g.RecoveryAudit(ctx)
	if err != nil || len(rs) != 1 || rs[0].RecoveryKind != recovery.RolledForward || rs[0].OperationID != w.OperationID() {
		t.Fatalf("audit %+v %v", rs, err)
	}
}

// TestDeferredRollbackBlocksUntilReopen: a write whose second table commit
// failed needs a rollback, which the in-process heal defers; the next write
// says so, and a read-write reopen rolls it back.
func TestDeferredRollbackBlocksUntilReopen(t *testing.T) {
	ctx := context.Background()
	r := newCrashRig(t, "mem")
	mustWrite(t, r.g, "main", graph.KindMutation, "seed")
	before := stateOf(t, r.g, "main")
	// Conditional puts of the write: sidecar, Company, Person, manifest.
	r.fault.FailNth(fault.CondPut, 3, backend.KindPermanent)
	w, _, err := twoTableWrite(ctx, r.g, "main", graph.KindMutation, "half")
	if !errors.Is(err, graph.ErrRecoveryRequired) {
		t.Fatalf("got %v, want RecoveryRequired", err)
	}
	_, _, err = twoTableWrite(ctx, r.g, "main", graph.KindMutation, "blocked")
	var rr *graph.RecoveryRequired
	if !errors.As(err, &rr) || rr.OperationID != w.OperationID() || !strings.Contains(err.Error(), "a pending recovery sidecar requires rollback — reopen the graph read-write") {
		t.Fatalf("blocked write: %v", err)
	}
	// Read-only open repairs nothing and serves the last published commit.
	ro, err := graph.Open(ctx, r.fault, graph.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if s := stateOf(t, ro, "main"); s.commit != before.commit || s.person != before.person {
		t.Fatalf("read-only view %+v, want %+v", s, before)
	}
	if keys, _ := recovery.Pending(ctx, r.fault); len(keys) != 1 {
		t.Fatalf("read-only open touched the sidecar: %v", keys)
	}
	g, err := graph.Open(ctx, r.fault, graph.OpenOptions{Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	assertConverged(t, g, r.fault)
	st := stateOf(t, g, "main")
	ci, _ := g.Commit(ctx, st.commit)
	if ci.Actor != graph.RecoveryActor || st.person != before.person || st.company != before.company {
		t.Fatalf("after the rollback: %+v by %q", st, ci.Actor)
	}
	rs, _ := g.RecoveryAudit(ctx)
	if len(rs) != 1 || rs[0].RecoveryKind != recovery.RolledBack || rs[0].Classification != recovery.ClassIncompletePhaseB {
		t.Fatalf("audit %+v", rs)
	}
	mustWrite(t, g, "main", graph.KindMutation, "after")
}

// TestForeignDriftFailsOpenClosed: a table commit no sidecar owns, on a
// table a pending sidecar covers, makes the read-write open fail closed and
// keep the sidecar.
func TestForeignDriftFailsOpenClosed(t *testing.T) {
	ctx := context.Background()
	r := newCrashRig(t, "mem")
	mustWrite(t, r.g, "main", graph.KindMutation, "seed")
	clear := graph.Failpoints.Set(r.g.ID(), graph.FailpointPostPhaseA, func() error {
		r.fault.CrashAtWrite(r.fault.Writes() + 1)
		return errors.New("crash")
	})
	_, _, err := twoTableWrite(ctx, r.g, "main", graph.KindMutation, "x")
	clear()
	r.fault.Heal()
	if err == nil {
		t.Fatal("the write succeeded through a crash")
	}
	s, _ := graph.Open(ctx, r.fault, graph.OpenOptions{ReadOnly: true})
	snap, _ := s.Snapshot(ctx, "main")
	ds, err := snap.OpenTable(ctx, recPerson)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := ds.StageAppend(ctx, recRows(ds.Schema(), "foreign"))
	if _, err := table.Commit(ctx, st); err != nil {
		t.Fatal(err)
	}
	_, err = graph.Open(ctx, r.fault, graph.OpenOptions{})
	if !errors.Is(err, recovery.ErrForeign) {
		t.Fatalf("open = %v, want a fail-closed ErrForeign", err)
	}
	// The message names the operation, never the sidecar's storage key
	// (found by the simulation, sim seed 5).
	if strings.Contains(err.Error(), "__recovery") || !strings.Contains(err.Error(), "omnigraph recovery list") {
		t.Fatalf("open error names a storage key or no next step: %v", err)
	}
	if keys, _ := recovery.Pending(ctx, r.fault); len(keys) != 1 {
		t.Fatalf("the sidecar was not kept: %v", keys)
	}
}

// listSpy records the prefixes listed.
type listSpy struct {
	backend.StorageAdapter
	recoveryLists atomic.Int64
}

func (s *listSpy) List(ctx context.Context, prefix string, opts backend.ListOptions) (backend.ListPage, error) {
	if strings.HasPrefix(prefix, recovery.Dir) {
		s.recoveryLists.Add(1)
	}
	return s.StorageAdapter.List(ctx, prefix, opts)
}

// TestRecoveryBudget: with the sidecar on, a warm one-row insert stays
// within 8 requests and 5 round trips (the sidecar's conditional PUT rides
// with the token re-check, the previous write's sidecar DELETE with it), a
// warm write never Lists __recovery/, and a read-write open lists it in
// parallel with the head read.
func TestRecoveryBudget(t *testing.T) {
	ctx := context.Background()
	m := mem.New()
	f := fault.New(m)
	spy := &listSpy{StorageAdapter: f}
	c := counter.New(spy)
	if _, err := graph.Init(ctx, c, testSchema, graph.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Latency(20 * time.Millisecond) // so scheduling delays cannot split a parallel round
	defer f.Latency(0)
	c.Reset()
	g, err := graph.Open(ctx, c, graph.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	open := c.Snapshot()
	if open.Total > 3 || open.RoundTrips > 2 || open.List != 2 {
		t.Errorf("read-write open: %s; want the __recovery/ List beside the head read (3 requests, 2 round trips)", open)
	}
	one := func(name string) counter.Counts {
		w, err := g.BeginWrite(ctx, "main", graph.WriteOptions{Kind: graph.KindMutation})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Stage(ctx, recPerson, recAppend(name)); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		return c.Snapshot()
	}
	one("warm-1")
	one("warm-2")
	spy.recoveryLists.Store(0)
	c.Reset()
	got := one("measured")
	t.Logf("one-row insert with the sidecar: %s", got)
	if got.Total > 8 || got.RoundTrips > 5 {
		t.Errorf("one-row insert: %s; budget 8 requests, 5 round trips", got)
	}
	if got.CondPut != 3 || got.Delete != 1 {
		t.Errorf("one-row insert: %s; want 3 conditional puts (sidecar, table, manifest) and 1 delete (the previous sidecar)", got)
	}
	if n := spy.recoveryLists.Load(); n != 0 {
		t.Errorf("a warm write listed __recovery/ %d times", n)
	}
}

// TestLiveWritersAreNotRecovered: handles of one process writing
// concurrently, and read-write opens racing them, never treat a live or a
// just-published write as interrupted: no recovery is recorded and every
// write lands.
func TestLiveWritersAreNotRecovered(t *testing.T) {
	ctx := context.Background()
	r := newCrashRig(t, "mem")
	const writers, each = 3, 6
	errs := make(chan error, writers+1)
	for i := 0; i < writers; i++ {
		go func(i int) {
			g, err := graph.Open(ctx, r.fault, graph.OpenOptions{Actor: "tester"})
			if err != nil {
				errs <- err
				return
			}
			for j := 0; j < each; j++ {
				_, err := graph.Retry(ctx, 50, func(ctx context.Context) (*graph.Result, error) {
					_, res, err := twoTableWrite(ctx, g, "main", graph.KindMutation, fmt.Sprintf("w%d-%d", i, j))
					return res, err
				})
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- g.Close()
		}(i)
	}
	go func() {
		for j := 0; j < 10; j++ {
			if _, err := graph.Open(ctx, r.fault, graph.OpenOptions{}); err != nil {
				errs <- err
				return
			}
		}
		errs <- nil
	}()
	for i := 0; i < writers+1; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	g, err := graph.Open(ctx, r.fault, graph.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	assertConverged(t, g, r.fault)
	if st := stateOf(t, g, "main"); st.person != writers*each {
		t.Fatalf("%d Person rows, want %d", st.person, writers*each)
	}
	if rs, _ := g.RecoveryAudit(ctx); len(rs) != 0 {
		t.Fatalf("live writes were recorded as recoveries: %+v", rs)
	}
}

// TestPhaseAFailureWritesNothing: a failed sidecar put aborts the write
// before any effect, and the next write is not wedged. A failed listing of
// __recovery/ fails a read-write open loudly.
func TestPhaseAFailureWritesNothing(t *testing.T) {
	ctx := context.Background()
	r := newCrashRig(t, "mem")
	mustWrite(t, r.g, "main", graph.KindMutation, "seed")
	before := stateOf(t, r.g, "main")
	for _, kind := range []backend.Kind{backend.KindTransient, backend.KindPermanent} {
		r.fault.FailNth(fault.CondPut, 1, kind) // the sidecar is the first conditional put
		_, _, err := twoTableWrite(ctx, r.g, "main", graph.KindMutation, "refused")
		if !errors.Is(err, recovery.ErrArm) || errors.Is(err, graph.ErrRecoveryRequired) {
			t.Fatalf("%s: got %v, want a plain Phase A failure", kind, err)
		}
		if st := stateOf(t, r.g, "main"); st.commit != before.commit || st.person != before.person {
			t.Fatalf("%s: a refused write changed the graph", kind)
		}
		assertConverged(t, r.g, r.fault)
	}
	mustWrite(t, r.g, "main", graph.KindMutation, "next")

	if _, err := graph.Open(ctx, failRecoveryList{r.fault}, graph.OpenOptions{}); !errors.Is(err, recovery.ErrList) {
		t.Fatalf("open with a failing __recovery/ list: %v, want ErrList", err)
	}
}

// failRecoveryList fails every List of __recovery/.
type failRecoveryList struct{ backend.StorageAdapter }

func (f failRecoveryList) List(ctx context.Context, prefix string, opts backend.ListOptions) (backend.ListPage, error) {
	if strings.HasPrefix(prefix, recovery.Dir) {
		return backend.ListPage{}, backend.NewError("list", prefix, backend.KindTransient, errors.New("injected"))
	}
	return f.StorageAdapter.List(ctx, prefix, opts)
}

// TestUntouchedForkHealsInProcess: a first-touch write that failed after
// forking the table (its stage failed inside Commit) leaves an untouched
// fork; the next write's heal retires the sidecar, keeps the fork, and the
// write adopts it.
func TestUntouchedForkHealsInProcess(t *testing.T) {
	ctx := context.Background()
	r := newCrashRig(t, "mem")
	if _, err := r.g.CreateBranch(ctx, "feat", ""); err != nil {
		t.Fatal(err)
	}
	w, err := r.g.BeginWrite(ctx, "feat", graph.WriteOptions{Kind: graph.KindLoad})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Stage(ctx, recPerson, func(context.Context, *table.Dataset) (*table.Staged, error) {
		return nil, errors.New("validation failed on the fork")
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(ctx); !errors.Is(err, graph.ErrRecoveryRequired) {
		t.Fatalf("got %v, want RecoveryRequired (the fork is durable)", err)
	}
	mustWrite(t, r.g, "feat", graph.KindLoad, "after")
	rs, err := r.g.RecoveryAudit(ctx)
	if err != nil || len(rs) != 1 || rs[0].RecoveryKind != recovery.Discarded || rs[0].OperationID != w.OperationID() ||
		len(rs[0].Tables) != 1 || rs[0].Tables[0].Action != "fork_kept" {
		t.Fatalf("audit %+v %v", rs, err)
	}
	g, err := graph.Open(ctx, r.fault, graph.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	assertConverged(t, g, r.fault)
	if st := stateOf(t, g, "feat"); st.person != 1 || st.company != 1 {
		t.Fatalf("feat rows %+v", st)
	}
}
