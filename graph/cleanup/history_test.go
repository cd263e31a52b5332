package cleanup_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/fault"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/cleanup"
	"github.com/omnigraph-go/omnigraph/graph/merge"
	"github.com/omnigraph-go/omnigraph/graph/query"
	"github.com/omnigraph-go/omnigraph/manifest"
)

const insPerson = `mutation m($h: String, $a: I32) { insert Person { handle: $h, age: $a } }`

func commitIDs(t testing.TB, g *graph.Graph, branch string) []string {
	t.Helper()
	cs, err := g.Commits(context.Background(), branch, 0)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range cs {
		ids = append(ids, c.ID)
	}
	return ids
}

func handles(t testing.TB, s *graph.Snapshot) string {
	t.Helper()
	r, err := query.Run(context.Background(), s, `query q() { match { $p: Person } return { $p.handle } order { $p.handle } }`, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var hs []string
	for _, row := range r.Rows {
		hs = append(hs, fmt.Sprint(row[0]))
	}
	return strings.Join(hs, " ")
}

// wholeVersions counts the manifest objects of branch that hold a version
// (not emptied by pruning).
func wholeVersions(t testing.TB, store backend.StorageAdapter, branch string) int {
	t.Helper()
	objs, err := backend.ListAll(context.Background(), store, manifest.VersionsPrefix(branch))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, o := range objs {
		if o.Size > 0 {
			n++
		}
	}
	return n
}

// TestCleanupPrunesMainHistoryBeyondTheRetention: with main the only
// branch, cleanup --keep 5 prunes every version but the genesis and the
// newest five. `commit list` still lists every commit (same ids, in
// order); time travel to a pruned commit, by id or by version, is
// ErrCleanedUp (by id also ErrCommitNotFound); a kept one still answers
// as before; writes, a second cleanup, and a branch and merge afterwards
// work.
func TestCleanupPrunesMainHistoryBeyondTheRetention(t *testing.T) {
	ctx := context.Background()
	store := mem.New()
	g, err := graph.Init(ctx, store, schema, graph.InitOptions{Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		mut(t, g, "main", insPerson, map[string]any{"h": fmt.Sprintf("p%02d", i), "a": i})
	}
	before := commitIDs(t, g, "main") // newest first: v31 .. v1
	if len(before) != 31 {
		t.Fatalf("%d commits", len(before))
	}
	keptSnap, err := g.SnapshotAt(ctx, before[2]) // v29
	if err != nil {
		t.Fatal(err)
	}
	keptWant := handles(t, keptSnap)
	prev, err := cleanup.Run(ctx, g, cleanup.Options{Keep: 5})
	if err != nil {
		t.Fatal(err)
	}
	res, err := cleanup.Run(ctx, g, cleanup.Options{Keep: 5, Confirm: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.History.Versions != 25 || fmt.Sprint(prev.History) != fmt.Sprint(res.History) || fmt.Sprint(res.History.Branches) != "[main]" || res.History.Bytes < 25*300 {
		t.Fatalf("pruned %+v (preview %+v), want versions 2..26 of main", res.History, prev.History)
	}
	if !strings.Contains(cleanup.Describe(res), "manifest history of main: removed the data of 25 versions") {
		t.Fatalf("summary:\n%s", cleanup.Describe(res))
	}
	if n := wholeVersions(t, store, "main"); n != 6 {
		t.Fatalf("%d whole manifest versions of main, want 6 (the genesis and the newest five)", n)
	}
	ro, err := graph.Open(ctx, store, graph.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := commitIDs(t, ro, "main"); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("commit list after pruning:\n%v\nwant\n%v", got, before)
	}
	if _, err := ro.SnapshotAt(ctx, before[15]); !errors.Is(err, manifest.ErrCleanedUp) || !errors.Is(err, manifest.ErrCommitNotFound) {
		t.Fatalf("time travel to a pruned commit: %v", err)
	} else if strings.Contains(err.Error(), "__manifest") {
		t.Fatalf("the error names a storage key: %v", err)
	}
	if _, err := ro.SnapshotAtVersion(ctx, "main", 10); !errors.Is(err, manifest.ErrCleanedUp) {
		t.Fatalf("time travel to pruned version 10: %v", err)
	}
	if s, err := ro.SnapshotAt(ctx, before[2]); err != nil || handles(t, s) != keptWant {
		t.Fatalf("time travel to a kept commit: %v", err)
	}
	// commit show still shows a pruned commit, marked; commit list marks
	// exactly the pruned ones.
	if c, err := ro.Commit(ctx, before[15]); err != nil || !c.CleanedUp || c.ID != before[15] || c.ManifestVersion != 16 || len(c.Parents) != 1 || c.Parents[0] != before[16] || c.Actor != "tester" {
		t.Fatalf("commit show of a pruned commit: %+v, %v", c, err)
	}
	cs, err := ro.Commits(ctx, "main", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.CleanedUp != (c.ManifestVersion >= 2 && c.ManifestVersion <= 26) {
			t.Fatalf("commit at version %d listed with cleaned_up %v", c.ManifestVersion, c.CleanedUp)
		}
	}
	// Writes go on; a second cleanup prunes the one version that left
	// the retention.
	mut(t, g, "main", insPerson, map[string]any{"h": "after", "a": 1})
	again, err := cleanup.Run(ctx, g, cleanup.Options{Keep: 5, Confirm: true})
	if err != nil || again.History.Versions != 1 {
		t.Fatalf("second cleanup: %+v, %v", again, err)
	}
	if got := commitIDs(t, g, "main"); len(got) != 32 || fmt.Sprint(got[1:]) != fmt.Sprint(before) {
		t.Fatalf("commit list after the second cleanup: %d commits", len(got))
	}
	// A branch and a three-way merge over the pruned history.
	if _, err := g.CreateBranch(ctx, "feature", "main"); err != nil {
		t.Fatal(err)
	}
	mut(t, g, "feature", insPerson, map[string]any{"h": "f1", "a": 1})
	mut(t, g, "main", insPerson, map[string]any{"h": "m1", "a": 1})
	if r, err := merge.Run(ctx, g, "feature", "main", merge.Options{}); err != nil || r.Outcome != merge.Merged || r.Inserted != 1 {
		t.Fatalf("merge after pruning: %+v, %v", r, err)
	}
	s, err := g.Snapshot(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	if got := handles(t, s); !strings.HasPrefix(got, "after f1 m1 p00 p01") || !strings.HasSuffix(got, "p29") {
		t.Fatalf("main holds %s", got)
	}
}

// TestCleanupNeverPrunesWhatAMergeWalks: a named branch (a fork) is never
// pruned, nor main from one below its fork point, nor from one below the
// fork point of a deleted branch merged into main above that floor (a
// merge walk crosses the merged commits down to there). After cleanup
// --keep 2, merges both ways between main and the live branch run and
// merge the right rows, and every commit list is unchanged.
func TestCleanupNeverPrunesWhatAMergeWalks(t *testing.T) {
	ctx := context.Background()
	store := mem.New()
	g, err := graph.Init(ctx, store, schema, graph.InitOptions{Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		mut(t, g, "main", insPerson, map[string]any{"h": fmt.Sprintf("a%d", i), "a": i})
	}
	// d forks at main v7, feature at v8; d is merged into main above
	// feature's fork point, then deleted.
	if _, err := g.CreateBranch(ctx, "d", "main"); err != nil {
		t.Fatal(err)
	}
	dFork := uint64(7)
	mut(t, g, "d", insPerson, map[string]any{"h": "d1", "a": 1})
	mut(t, g, "main", insPerson, map[string]any{"h": "b0", "a": 1})
	if _, err := g.CreateBranch(ctx, "feature", "main"); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		mut(t, g, "main", insPerson, map[string]any{"h": fmt.Sprintf("c%d", i), "a": i})
	}
	if _, err := merge.Run(ctx, g, "d", "main", merge.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := g.DeleteBranch(ctx, "d"); err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		mut(t, g, "main", insPerson, map[string]any{"h": fmt.Sprintf("e%d", i), "a": i})
		mut(t, g, "feature", insPerson, map[string]any{"h": fmt.Sprintf("f%d", i), "a": i})
	}
	mainBefore, featBefore := commitIDs(t, g, "main"), commitIDs(t, g, "feature")
	featWhole := wholeVersions(t, store, "feature")
	res, err := cleanup.Run(ctx, g, cleanup.Options{Keep: 2, Confirm: true})
	if err != nil {
		t.Fatal(err)
	}
	// main's floor is one below d's fork point: versions 2..dFork-2.
	if res.History.Versions != int(dFork)-3 || fmt.Sprint(res.History.Branches) != "[main]" {
		t.Fatalf("pruned %+v, want main's versions 2..%d", res.History, dFork-2)
	}
	man := manifest.New(store)
	for v := dFork - 1; v <= dFork+6; v++ {
		if _, err := man.ReadVersion(ctx, "main", 1, v); err != nil {
			t.Fatalf("main version %d, which a merge walks, was pruned: %v", v, err)
		}
	}
	if n := wholeVersions(t, store, "feature"); n != featWhole {
		t.Fatalf("feature has %d whole versions, had %d: a fork was pruned", n, featWhole)
	}
	g2, err := graph.Open(ctx, store, graph.OpenOptions{Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	if got := commitIDs(t, g2, "main"); fmt.Sprint(got) != fmt.Sprint(mainBefore) {
		t.Fatal("main's commit list changed")
	}
	if got := commitIDs(t, g2, "feature"); fmt.Sprint(got) != fmt.Sprint(featBefore) {
		t.Fatal("feature's commit list changed")
	}
	if r, err := merge.Run(ctx, g2, "main", "feature", merge.Options{}); err != nil || r.Outcome != merge.Merged {
		t.Fatalf("merge main into feature after cleanup: %+v, %v", r, err)
	}
	if r, err := merge.Run(ctx, g2, "feature", "main", merge.Options{}); err != nil || r.Outcome != merge.FastForward && r.Outcome != merge.Merged {
		t.Fatalf("merge feature into main after cleanup: %+v, %v", r, err)
	}
	s, err := g2.Snapshot(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	want := "a0 a1 a2 a3 a4 a5 b0 c0 c1 c2 d1 e0 e1 e2 e3 e4 e5 e6 e7 f0 f1 f2 f3 f4 f5 f6 f7"
	if got := handles(t, s); got != want {
		t.Fatalf("main holds %s\nwant %s", got, want)
	}
}

// TestCleanupPruneCrashAtEveryWrite: a crash at (and after) every write of
// a cleanup that prunes history (table deletes, the archive, each emptied
// version) leaves every query answering as before and every commit listed
// as before, and the next cleanup finishes.
func TestCleanupPruneCrashAtEveryWrite(t *testing.T) {
	ctx := context.Background()
	const n = 10
	mk := func() (backend.StorageAdapter, *graph.Graph) {
		store := mem.New()
		g, err := graph.Init(ctx, store, schema, graph.InitOptions{Actor: "tester"})
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			mut(t, g, "main", insPerson, map[string]any{"h": fmt.Sprintf("p%02d", i), "a": i})
		}
		return store, g
	}
	ref, g := mk()
	want := handlesOf(t, ref)
	writes := 0
	res, err := cleanup.Run(ctx, g, cleanup.Options{Keep: 2, Confirm: true, BeforeDelete: func(string) error { writes++; return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if res.History.Versions != n-2 || writes != res.Objects+res.History.Versions+1 {
		t.Fatalf("%d writes for %+v", writes, res)
	}
	for k := 1; k <= writes; k++ {
		for _, mode := range []string{"at", "after"} {
			store, g := mk()
			ids := commitIDs(t, g, "main")
			g.Close()
			crashCleanup(t, store, k, mode)
			check := func(when string) {
				t.Helper()
				if got := handlesOf(t, store); got != want {
					t.Fatalf("k=%d %s %s: main holds %s, want %s", k, mode, when, got, want)
				}
				ro, err := graph.Open(ctx, store, graph.OpenOptions{ReadOnly: true})
				if err != nil {
					t.Fatal(err)
				}
				if got := commitIDs(t, ro, "main"); fmt.Sprint(got) != fmt.Sprint(ids) {
					t.Fatalf("k=%d %s %s: commit list changed", k, mode, when)
				}
				if s, err := ro.SnapshotAt(ctx, ids[1]); err != nil || handles(t, s) == "" {
					t.Fatalf("k=%d %s %s: time travel to a kept commit: %v", k, mode, when, err)
				}
				ro.Close()
			}
			check("after the crash")
			g2, err := graph.Open(ctx, store, graph.OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cleanup.Run(ctx, g2, cleanup.Options{Keep: 2, Confirm: true}); err != nil {
				t.Fatalf("k=%d %s: cleanup after the crash: %v", k, mode, err)
			}
			g2.Close()
			check("after the finishing cleanup")
			if w := wholeVersions(t, store, "main"); w != 3 {
				t.Fatalf("k=%d %s: %d whole versions after the finishing cleanup, want 3", k, mode, w)
			}
		}
	}
}

func handlesOf(t testing.TB, store backend.StorageAdapter) string {
	t.Helper()
	g, err := graph.Open(context.Background(), store, graph.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	s, err := g.Snapshot(context.Background(), "main")
	if err != nil {
		t.Fatal(err)
	}
	return handles(t, s)
}

// TestCleanupSparesTheVersionALeftoverSidecarNames is the simulation's
// finding (seed 86 of 100): a write's sidecar is deleted with the next
// write, and when that delete fails the sidecar stays on the store,
// retired in this process (so cleanup does not count it as pending). The
// next read-write open after a crash assesses it by reading the version
// it published; cleanup had pruned that version, so the open failed.
// Cleanup now spares every version a sidecar on the store names.
func TestCleanupSparesTheVersionALeftoverSidecarNames(t *testing.T) {
	ctx := context.Background()
	store := mem.New()
	inj := fault.New(store)
	g, err := graph.Init(ctx, inj, schema, graph.InitOptions{Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	g.Close()
	g, err = graph.Open(ctx, inj, graph.OpenOptions{Actor: "tester", Process: graph.NewProcess()})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		mut(t, g, "main", insPerson, map[string]any{"h": fmt.Sprintf("p%d", i), "a": i})
	}
	left, err := backend.ListAll(ctx, store, "__recovery/")
	if err != nil {
		t.Fatal(err)
	}
	// The next write's delete of the last write's sidecar fails.
	inj.Reset()
	inj.FailNth(fault.Delete, 1, backend.KindTransient)
	mut(t, g, "main", insPerson, map[string]any{"h": "p6", "a": 6})
	after, err := backend.ListAll(ctx, store, "__recovery/")
	if err != nil {
		t.Fatal(err)
	}
	stale := 0
	for _, o := range after {
		for _, l := range left {
			if o.Key == l.Key {
				stale++
			}
		}
	}
	if stale != 1 {
		t.Fatalf("%d sidecars of earlier writes are left, want the one whose delete failed", stale)
	}
	res, err := cleanup.Run(ctx, g, cleanup.Options{Keep: 1, Confirm: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.History.Versions == 0 {
		t.Fatalf("nothing pruned: %+v", res.History)
	}
	want := handles(t, mustSnapshot(t, g, "main"))
	// A crash: a new process opens the store read-write and sweeps.
	g2, err := graph.Open(ctx, store, graph.OpenOptions{Actor: "tester", Process: graph.NewProcess()})
	if err != nil {
		t.Fatalf("read-write open after cleanup: %v", err)
	}
	if got := handles(t, mustSnapshot(t, g2, "main")); got != want || !strings.HasPrefix(got, "p0 p1") {
		t.Fatalf("main holds %s, want %s", got, want)
	}
	if p, err := g2.PendingRecovery(ctx); err != nil || len(p) != 0 {
		t.Fatalf("pending after the open: %d, %v", len(p), err)
	}
}

func mustSnapshot(t testing.TB, g *graph.Graph, branch string) *graph.Snapshot {
	t.Helper()
	s, err := g.Snapshot(context.Background(), branch)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
