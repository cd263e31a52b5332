package graph_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/fault"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/table"
)

var personKey = graph.NodeTableKey("Person")

// people builds a Person record: id and name are the given names, age null.
func people(schema *arrow.Schema, names ...string) arrow.Record {
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
	return b.NewRecord()
}

// appendPeople stages an append of the named people.
func appendPeople(names ...string) graph.StageFunc {
	return func(ctx context.Context, base *table.Dataset) (*table.Staged, error) {
		return base.StageAppend(ctx, people(base.Schema(), names...))
	}
}

// insert commits one append to Person on branch through the pipeline.
func insert(t testing.TB, g *graph.Graph, branch string, names ...string) *graph.Result {
	t.Helper()
	ctx := context.Background()
	w, err := g.BeginWrite(ctx, branch, graph.WriteOptions{Kind: graph.KindMutation})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Stage(ctx, personKey, appendPeople(names...)); err != nil {
		t.Fatal(err)
	}
	res, err := w.Commit(ctx)
	if err != nil {
		t.Fatalf("commit on %s: %v", branch, err)
	}
	return res
}

func rowsOf(t testing.TB, s *graph.Snapshot) map[string]int64 {
	t.Helper()
	stats, err := s.TableStats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, st := range stats {
		out[st.Key] = st.Rows
	}
	return out
}

func TestWriteOnMainAndTimeTravel(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	g := r.g
	before, _ := g.Snapshot(ctx, "main")
	res := insert(t, g, "main", "ada", "bob")
	pin, _ := res.Snapshot.Pin(personKey)
	if pin.Branch != "main" || pin.Version != 2 {
		t.Fatalf("Person pin after insert = %+v, want main@2", pin)
	}
	if got := rowsOf(t, res.Snapshot)[personKey]; got != 2 {
		t.Fatalf("Person rows = %d", got)
	}
	// The old commit still reads the old rows.
	old, err := g.SnapshotAt(ctx, before.CommitID())
	if err != nil {
		t.Fatal(err)
	}
	if got := rowsOf(t, old)[personKey]; got != 0 {
		t.Fatalf("time travel to the initial commit sees %d Person rows", got)
	}
	ds, err := old.OpenTable(ctx, personKey)
	if err != nil || ds.Version() != 1 {
		t.Fatalf("OpenTable at the old pin: %v %v", ds, err)
	}
}

func TestFirstWriteOnABranchForksOnlyTheTouchedTable(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	g := r.g
	if _, err := g.CreateBranch(ctx, "feature", ""); err != nil {
		t.Fatal(err)
	}
	w, err := g.BeginWrite(ctx, "feature", graph.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !w.FirstTouch(personKey) {
		t.Fatal("Person is not first-touch on a fresh branch")
	}
	if err := w.Stage(ctx, personKey, appendPeople("ada")); err != nil {
		t.Fatal(err)
	}
	res, err := w.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Snapshot.Tables() {
		want := "main"
		if p.Key == personKey {
			want = "feature@1"
		}
		if p.Branch != want {
			t.Fatalf("pin %+v: table branch %q, want %q", p, p.Branch, want)
		}
	}
	refs, err := table.ListBranches(ctx, r.mem, graph.NodeTablePath("Company"))
	if err != nil || len(refs) != 0 {
		t.Fatalf("an untouched table was forked: %v %v", refs, err)
	}
	// main is unaffected.
	main, _ := g.Snapshot(ctx, "main")
	if got := rowsOf(t, main)[personKey]; got != 0 {
		t.Fatalf("main sees %d Person rows written on feature", got)
	}
	// A second write reuses the fork.
	res = insert(t, g, "feature", "bob")
	if pin, _ := res.Snapshot.Pin(personKey); pin.Branch != "feature@1" || pin.Version != 3 {
		t.Fatalf("second write pin = %+v, want feature@1 v3", pin)
	}
	if got := rowsOf(t, res.Snapshot)[personKey]; got != 2 {
		t.Fatalf("feature sees %d Person rows, want 2", got)
	}
	// A recreated branch forks afresh and never sees the old fork's rows.
	if err := g.DeleteBranch(ctx, "feature"); err != nil {
		t.Fatal(err)
	}
	if _, err := g.CreateBranch(ctx, "feature", ""); err != nil {
		t.Fatal(err)
	}
	res = insert(t, g, "feature", "cy")
	if pin, _ := res.Snapshot.Pin(personKey); pin.Branch != "feature@2" {
		t.Fatalf("recreated branch pin = %+v, want table branch feature@2", pin)
	}
	if got := rowsOf(t, res.Snapshot)[personKey]; got != 1 {
		t.Fatalf("recreated branch sees %d Person rows, want 1", got)
	}
}

func TestRacingTableWritesHaveOneWinnerAndNoDrift(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	a, b := r.open(t, graph.OpenOptions{}), r.open(t, graph.OpenOptions{})
	wa, err := a.BeginWrite(ctx, "main", graph.WriteOptions{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	wb, err := b.BeginWrite(ctx, "main", graph.WriteOptions{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []*graph.Write{wa, wb} {
		if err := w.Stage(ctx, personKey, appendPeople("x")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := wa.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = wb.Commit(ctx)
	if !errors.Is(err, graph.ErrReadSetChanged) || graph.IsRetryable(err) {
		t.Fatalf("loser = %v, want a strict ReadSetChanged", err)
	}
	head, err := table.LatestVersion(ctx, r.mem, graph.NodeTablePath("Person"), "main")
	if err != nil || head != 2 {
		t.Fatalf("Person HEAD = %d (%v), want 2: the loser must not move it", head, err)
	}
	s, _ := r.open(t, graph.OpenOptions{ReadOnly: true}).Snapshot(ctx, "main")
	if pin, _ := s.Pin(personKey); pin.Version != head {
		t.Fatalf("manifest pin %d != table HEAD %d", pin.Version, head)
	}
}

// stagedAda opens a rig and a handle and stages an append of "ada" on main.
func stagedAda(t *testing.T) (*rig, *graph.Graph, *graph.Write) {
	t.Helper()
	r := newRig(t)
	g := r.open(t, graph.OpenOptions{})
	w, err := g.BeginWrite(context.Background(), "main", graph.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Stage(context.Background(), personKey, appendPeople("ada")); err != nil {
		t.Fatal(err)
	}
	return r, g, w
}

// TestRefusedPublishIsSettledInProcess: a manifest publish the store
// refuses with a definite answer after the table commits publishes nothing
// (seed 001), so the writer settles its own intent while it still holds the
// gates instead of leaving it for a restart: its table effects are all
// there, so recovery rolls it forward and the write is acknowledged once:
// its own commit is the head, its row is there once, pins equal table
// HEADs, no intent is left, and the next write lands on the same handle.
func TestRefusedPublishIsSettledInProcess(t *testing.T) {
	ctx := context.Background()
	r, g, w := stagedAda(t)
	// Conditional puts of the effect phase: the recovery sidecar, the table
	// commit, then the manifest publish. Refuse the publish once.
	r.fault.FailNth(fault.CondPut, 3, backend.KindPermanent)
	res, err := w.Commit(ctx)
	if err != nil {
		t.Fatalf("Commit = %v, want the write settled in process", err)
	}
	s, _ := r.open(t, graph.OpenOptions{ReadOnly: true}).Snapshot(ctx, "main")
	if s.CommitID() != w.CommitID() || res.Commit.ID != w.CommitID() || rowsOf(t, s)[personKey] != 1 {
		t.Fatalf("after the settled write: head %s (result %s, write %s), rows %d", s.CommitID(), res.Commit.ID, w.CommitID(), rowsOf(t, s)[personKey])
	}
	head, err := table.LatestVersion(ctx, r.mem, graph.NodeTablePath("Person"), "main")
	if pin, _ := s.Pin(personKey); err != nil || pin.Version != head {
		t.Fatalf("the Person pin is %d and its HEAD %d (%v)", pin.Version, head, err)
	}
	if p, err := g.PendingRecovery(ctx); err != nil || len(p) != 0 {
		t.Fatalf("pending recoveries after the write: %d (%v)", len(p), err)
	}
	res = insert(t, g, "main", "bob")
	if got := rowsOf(t, res.Snapshot)[personKey]; got != 2 {
		t.Fatalf("Person rows after the next write = %d, want 2", got)
	}
}

// TestRefusedPublishWhoseUndoFailsIsRecoveryRequired: when the store keeps
// refusing, the undo cannot publish either, so the intent stays and the
// write answers RecoveryRequired; a fresh read-write open resolves it.
func TestRefusedPublishWhoseUndoFailsIsRecoveryRequired(t *testing.T) {
	ctx := context.Background()
	r, _, w := stagedAda(t)
	for n := 3; n < 40; n++ {
		r.fault.FailNth(fault.CondPut, n, backend.KindPermanent)
	}
	_, err := w.Commit(ctx)
	var rr *graph.RecoveryRequired
	if !errors.As(err, &rr) || rr.OperationID != w.OperationID() || !errors.Is(err, graph.ErrRecoveryRequired) {
		t.Fatalf("Commit = %v, want RecoveryRequired for operation %s", err, w.OperationID())
	}
	r.fault.Reset()
	s, _ := r.open(t, graph.OpenOptions{ReadOnly: true}).Snapshot(ctx, "main")
	if s.CommitID() == w.CommitID() {
		t.Fatal("a failed publish is visible")
	}
	fresh := r.open(t, graph.OpenOptions{})
	if p, err := fresh.PendingRecovery(ctx); err != nil || len(p) != 0 {
		t.Fatalf("pending recoveries after a read-write open: %d (%v)", len(p), err)
	}
	s, _ = fresh.Snapshot(ctx, "main")
	if n := rowsOf(t, s)[personKey]; n > 1 {
		t.Fatalf("Person rows after recovery = %d, want 0 or 1", n)
	}
}

// TestOneRowInsertCost measures a one-row insert on main through a warm
// handle with the counter, at history depth 10 and 1,000. The write path
// budget is <= 8 requests and <= 5 round trips, flat in history.
func TestOneRowInsertCost(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 1,000-commit history")
	}
	measure := func(depth int) budget {
		r := newRig(t)
		h := r.open(t, graph.OpenOptions{})
		for i := 1; i < depth; i++ {
			insert(t, h, "main", "p"+time.Now().Format("150405.000000000"))
		}
		insert(t, h, "main", "warm")
		r.fault.Latency(25 * time.Millisecond) // so scheduling delays cannot split a parallel round
		defer r.fault.Latency(0)
		r.count.Reset()
		insert(t, h, "main", "measured")
		return costOf(r.count.Snapshot())
	}
	shallow, deep := measure(10), measure(1000)
	t.Logf("one-row insert: depth 10: %s; depth 1000: %s", shallow, deep)
	if shallow != deep {
		t.Fatalf("cost grows with history: %s vs %s", shallow, deep)
	}
	if deep.total > 8 || deep.rt > 5 || deep.condPut != 3 {
		t.Fatalf("one-row insert: %s; budget 8 requests, 5 round trips, 3 conditional puts (recovery sidecar + table + manifest)", deep)
	}
}

func TestConcurrentInsertsAllLand(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	const n = 8
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func(i int) {
			g, err := graph.Open(ctx, r.count, graph.OpenOptions{})
			if err != nil {
				errs <- err
				return
			}
			_, err = graph.Retry(ctx, 2*n, func(ctx context.Context) (*graph.Result, error) {
				w, err := g.BeginWrite(ctx, "main", graph.WriteOptions{Kind: graph.KindMutation})
				if err != nil {
					return nil, err
				}
				if err := w.Stage(ctx, personKey, appendPeople(string(rune('a'+i)))); err != nil {
					return nil, err
				}
				return w.Commit(ctx)
			})
			errs <- err
		}(i)
	}
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	g := r.open(t, graph.OpenOptions{ReadOnly: true})
	s, err := g.Snapshot(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	if got := rowsOf(t, s)[personKey]; got != n {
		t.Fatalf("Person rows = %d, want %d", got, n)
	}
	cs, err := g.Commits(ctx, "main", 0)
	if err != nil || len(cs) != n+1 {
		t.Fatalf("%d commits (%v), want %d", len(cs), err, n+1)
	}
	head, _ := table.LatestVersion(ctx, r.mem, graph.NodeTablePath("Person"), "main")
	if pin, _ := s.Pin(personKey); pin.Version != head {
		t.Fatalf("manifest pin %d != table HEAD %d", pin.Version, head)
	}
}

func TestFirstTouchThatChangesNothingKeepsThePin(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	g := r.g
	insert(t, g, "main", "ada")
	if _, err := g.CreateBranch(ctx, "feature", ""); err != nil {
		t.Fatal(err)
	}
	noMatch := func(ctx context.Context, base *table.Dataset) (*table.Staged, error) {
		return base.StageDelete(ctx, table.Eq("id", "nobody"))
	}
	for i := 0; i < 2; i++ { // the second attempt adopts the untouched fork
		w, err := g.BeginWrite(ctx, "feature", graph.WriteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Stage(ctx, personKey, noMatch); err != nil {
			t.Fatal(err)
		}
		if err := w.SetPin(w.Snapshot().Tables()[0]); err != nil {
			t.Fatal(err)
		}
		res, err := w.Commit(ctx)
		if err != nil {
			t.Fatalf("attempt %d: %v", i, err)
		}
		if pin, _ := res.Snapshot.Pin(personKey); pin.Branch != "main" || pin.Version != 2 {
			t.Fatalf("attempt %d: pin %+v, want the inherited main@2", i, pin)
		}
	}
	res := insert(t, g, "feature", "bob")
	if pin, _ := res.Snapshot.Pin(personKey); pin.Branch != "feature@1" || pin.Version != 3 {
		t.Fatalf("first real write pin = %+v, want feature@1 v3", pin)
	}
	if got := rowsOf(t, res.Snapshot)[personKey]; got != 2 {
		t.Fatalf("feature sees %d rows, want 2", got)
	}
}

// TestFirstWriteOnABranchCrashAtEveryWrite crashes the store at each write
// of a branch's first write to a table (sidecar, table ref create, the
// fork's first version, data files, table commit, manifest publish, ...),
// restarts, and checks: the branch is intact, what is visible matches the
// commit history, and the next write on the branch succeeds.
func TestFirstWriteOnABranchCrashAtEveryWrite(t *testing.T) {
	for _, mode := range []struct {
		name string
		arm  func(*fault.Injector, int)
	}{{"crash_at", (*fault.Injector).CrashAtWrite}, {"crash_after", (*fault.Injector).CrashAfterWrite}} {
		t.Run(mode.name, func(t *testing.T) { crashFirstWrite(t, mode.arm) })
	}
}

func crashFirstWrite(t *testing.T, arm func(*fault.Injector, int)) {
	ctx := context.Background()
	for k := 1; ; k++ {
		r := newRig(t)
		if _, err := r.g.CreateBranch(ctx, "feature", ""); err != nil {
			t.Fatal(err)
		}
		h := r.open(t, graph.OpenOptions{})
		r.fault.Reset()
		arm(r.fault, k)
		w, err := h.BeginWrite(ctx, "feature", graph.WriteOptions{})
		if err == nil {
			if err = w.Stage(ctx, personKey, appendPeople("crash")); err == nil {
				_, err = w.Commit(ctx)
			}
		}
		crashed := r.fault.Crashed()
		if !crashed {
			if err != nil {
				t.Fatalf("k=%d: write failed without a crash: %v", k, err)
			}
			if k < 4 {
				t.Fatalf("the first write on a branch made only %d storage writes", k-1)
			}
			t.Logf("%d crash points covered", k-1)
			return // k is past the last write: every crash point was covered
		}
		r.fault.Heal()
		g := r.open(t, graph.OpenOptions{}) // restart: read-write open recovers
		s, err := g.Snapshot(ctx, "feature")
		if err != nil {
			t.Fatalf("k=%d: the branch is unreadable after the crash: %v", k, err)
		}
		visible := rowsOf(t, s)[personKey]
		cs, err := g.Commits(ctx, "feature", 0)
		if err != nil {
			t.Fatal(err)
		}
		if (visible == 1) != (len(cs) == 2) || visible > 1 {
			t.Fatalf("k=%d: %d rows visible with %d commits", k, visible, len(cs))
		}
		res := insert(t, g, "feature", "after")
		if got := rowsOf(t, res.Snapshot)[personKey]; got != visible+1 {
			t.Fatalf("k=%d: after the next write %d rows, want %d", k, got, visible+1)
		}
	}
}
