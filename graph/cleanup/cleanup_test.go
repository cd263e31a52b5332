package cleanup_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/fault"
	"github.com/omnigraph-go/omnigraph/backend/local"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/cleanup"
	"github.com/omnigraph-go/omnigraph/graph/export"
	"github.com/omnigraph-go/omnigraph/graph/load"
	"github.com/omnigraph-go/omnigraph/graph/merge"
	"github.com/omnigraph-go/omnigraph/graph/mutate"
	"github.com/omnigraph-go/omnigraph/graph/optimize"
	"github.com/omnigraph-go/omnigraph/graph/query"
	"github.com/omnigraph-go/omnigraph/table"
)

const schema = `
node Person {
  handle: String @key
  age: I32?
}
edge Knows: Person -> Person
`

var probes = []string{
	`query q() { match { $p: Person } return { $p.handle, $p.age } order { $p.handle } }`,
	`query q() { match { $a: Person  $a knows $b } return { $a.handle as a, $b.handle as b } order { a, b } }`,
}

func mut(t testing.TB, g *graph.Graph, branch, src string, params map[string]any) {
	t.Helper()
	if _, err := mutate.Query(context.Background(), g, src, "", mutate.Options{Branch: branch, Params: params}); err != nil {
		t.Fatalf("%s: %v", src, err)
	}
}

// build makes a history: n one-row commits on main (persons, edges, a few
// deletes), a branch "feature" forked half way with commits of its own,
// and a deleted branch "gone" that had written a table.
func build(t testing.TB, store backend.StorageAdapter, n int) *graph.Graph {
	t.Helper()
	ctx := context.Background()
	g, err := graph.Init(ctx, store, schema, graph.InitOptions{Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		mut(t, g, "main", `mutation m($h: String, $a: I32) { insert Person { handle: $h, age: $a } }`, map[string]any{"h": fmt.Sprintf("p%04d", i), "a": i % 50})
		if i > 0 && i%4 == 0 {
			mut(t, g, "main", `mutation m($a: String, $b: String) { insert Knows { from: $a, to: $b } }`, map[string]any{"a": fmt.Sprintf("p%04d", i), "b": fmt.Sprintf("p%04d", i-1)})
		}
		if i%9 == 8 {
			mut(t, g, "main", `mutation m($h: String) { update Person set { age: 99 } where handle = $h }`, map[string]any{"h": fmt.Sprintf("p%04d", i-3)})
		}
		if i == n/2 {
			for _, b := range []string{"feature", "gone"} {
				if _, err := g.CreateBranch(ctx, b, "main"); err != nil {
					t.Fatal(err)
				}
				for j := 0; j < 3; j++ {
					mut(t, g, b, `mutation m($h: String) { insert Person { handle: $h } }`, map[string]any{"h": fmt.Sprintf("%s%d", b, j)})
				}
			}
		}
	}
	if err := g.DeleteBranch(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	plantOrphan(t, store)
	return g
}

// orphanPath is a table no manifest version pins, as an interrupted schema
// apply leaves one (a new table at a path named for its operation).
const orphanPath = "nodes/Ghost.01orphan"

func plantOrphan(t testing.TB, store backend.StorageAdapter) {
	t.Helper()
	ctx := context.Background()
	s := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.BinaryTypes.String}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).AppendValues([]string{"g1", "g2"}, nil)
	rec := b.NewRecord()
	defer rec.Release()
	ds, err := table.Create(ctx, store, orphanPath, s, "id")
	if err != nil {
		t.Fatal(err)
	}
	st, err := ds.StageAppend(ctx, rec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := table.Commit(ctx, st); err != nil {
		t.Fatal(err)
	}
}

// answers runs the probes on every live branch with a fresh read-only
// handle (cold caches: every file a version needs is read from the store).
func answers(t testing.TB, store backend.StorageAdapter) string {
	t.Helper()
	ctx := context.Background()
	g, err := graph.Open(ctx, store, graph.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	var out []string
	for _, b := range []string{"main", "feature"} {
		for _, q := range probes {
			r, err := query.Head(ctx, g, b, q, "", nil)
			if err != nil {
				t.Fatalf("branch %s: %s: %v", b, q, err)
			}
			out = append(out, fmt.Sprint(b, r.Rows))
		}
	}
	return strings.Join(out, "\n")
}

// TestCleanupPreviewDeletesNothingThenConfirmKeepsAnswers: without Confirm
// nothing is deleted; with it, old versions and the deleted branch's tree
// go, and every live branch answers as before.
func TestCleanupPreviewDeletesNothingThenConfirmKeepsAnswers(t *testing.T) {
	ctx := context.Background()
	store := mem.New()
	g := build(t, store, 24)
	want := answers(t, store)
	before, _ := backend.ListAll(ctx, store, "")
	prev, err := cleanup.Run(ctx, g, cleanup.Options{Keep: 2})
	if err != nil {
		t.Fatal(err)
	}
	after, _ := backend.ListAll(ctx, store, "")
	if len(after) != len(before) || !prev.Preview || prev.Objects == 0 {
		t.Fatalf("preview: %d -> %d objects, result %+v", len(before), len(after), prev)
	}
	res, err := cleanup.Run(ctx, g, cleanup.Options{Keep: 2, Confirm: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Objects != prev.Objects || res.Bytes != prev.Bytes {
		t.Fatalf("confirm removed %d objects/%d bytes, the preview said %d/%d", res.Objects, res.Bytes, prev.Objects, prev.Bytes)
	}
	// main's history below the fork of feature is pruned (its objects
	// emptied, one archive added); feature, a fork, is never pruned.
	if res.History.Versions == 0 || fmt.Sprint(res.History.Branches) != "[main]" {
		t.Fatalf("pruned history %+v, want main's below the fork of feature", res.History)
	}
	final, _ := backend.ListAll(ctx, store, "")
	if len(final) != len(before)-res.Objects+1 {
		t.Fatalf("%d objects left, want %d", len(final), len(before)-res.Objects+1)
	}
	for _, o := range final {
		if strings.Contains(o.Key, "/tree/gone") {
			t.Fatalf("the deleted branch's table tree survived: %s", o.Key)
		}
		if strings.HasPrefix(o.Key, orphanPath+"/") {
			t.Fatalf("the unreferenced table survived: %s", o.Key)
		}
	}
	if len(res.Orphans) != 1 || res.Orphans[0].Table != "node:Ghost (a replaced copy)" || res.Orphans[0].Objects == 0 {
		t.Fatalf("orphan tables in the result: %+v", res.Orphans)
	}
	if d := cleanup.Describe(res); strings.Contains(d, orphanPath) {
		t.Fatalf("the summary names a storage path:\n%s", d)
	}
	if got := answers(t, store); got != want {
		t.Fatalf("answers changed:\n%s\nwant\n%s", got, want)
	}
	// A second run finds nothing.
	again, err := cleanup.Run(ctx, g, cleanup.Options{Keep: 2, Confirm: true})
	if err != nil || again.Objects != 0 || again.History.Versions != 0 {
		t.Fatalf("second cleanup: %+v, %v", again, err)
	}
}

// TestCleanupSweepsTempResidue pins the temp-residue rule on the local
// store: staged temp files (name#<digits>) that a killed write left behind,
// including a recovery sidecar's, are removed once older than the grace,
// a younger one (a write that may be in flight) stays, the preview counts
// them without deleting, and the answers do not change.
func TestCleanupSweepsTempResidue(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store, err := local.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	g := build(t, store, 6)
	want := answers(t, store)
	old := time.Now().Add(-time.Hour)
	plant := func(rel string, at time.Time) string {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("half a write"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
		return p
	}
	stale := []string{
		plant("nodes/Person/data/deadbeef.parquet#123456", old),
		plant("__recovery/01ABCDEF.json#77", old),
	}
	young := plant("nodes/Person/data/cafe.parquet#42", time.Now())
	opts := cleanup.Options{Keep: 100, Grace: 10 * time.Minute}
	prev, err := cleanup.Run(ctx, g, opts)
	if err != nil {
		t.Fatal(err)
	}
	if prev.Temp.Objects != 2 || prev.Temp.Bytes != 24 {
		t.Fatalf("preview temp residue %+v, want 2 objects of 24 bytes", prev.Temp)
	}
	for _, p := range append(stale, young) {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("the preview deleted %s", filepath.Base(p))
		}
	}
	opts.Confirm = true
	res, err := cleanup.Run(ctx, g, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Temp.Objects != 2 {
		t.Fatalf("temp residue removed %+v, want 2 objects", res.Temp)
	}
	for _, p := range stale {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("stale residue %s survived (%v)", filepath.Base(p), err)
		}
	}
	if _, err := os.Stat(young); err != nil {
		t.Fatalf("residue younger than the grace was removed: %v", err)
	}
	if !strings.Contains(cleanup.Describe(res), "residue of interrupted writes: removed 2 objects") {
		t.Fatalf("summary:\n%s", cleanup.Describe(res))
	}
	g.Close()
	if got := answers(t, store); got != want {
		t.Fatalf("answers changed:\n%s\nwant\n%s", got, want)
	}
}

// TestCleanupCrashAtEveryWrite: a crash at (and after) every delete of a
// cleanup never removes a file a live version needs: after each crash every
// live branch answers as before, and a later cleanup finishes the job.
func TestCleanupCrashAtEveryWrite(t *testing.T) {
	ctx := context.Background()
	const n = 12
	ref := mem.New()
	g := build(t, ref, n)
	want := answers(t, ref)
	prev, err := cleanup.Run(ctx, g, cleanup.Options{Keep: 2})
	if err != nil {
		t.Fatal(err)
	}
	g.Close()
	if prev.Objects < 10 {
		t.Fatalf("only %d objects to clean; the history is too short to test", prev.Objects)
	}
	for k := 1; k <= prev.Objects; k++ {
		for _, mode := range []string{"at", "after"} {
			store := mem.New()
			build(t, store, n).Close()
			crashCleanup(t, store, k, mode)
			if got := answers(t, store); got != want {
				t.Fatalf("k=%d %s: answers changed after the crash:\n%s\nwant\n%s", k, mode, got, want)
			}
			g2, err := graph.Open(ctx, store, graph.OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cleanup.Run(ctx, g2, cleanup.Options{Keep: 2, Confirm: true}); err != nil {
				t.Fatalf("k=%d %s: cleanup after the crash: %v", k, mode, err)
			}
			g2.Close()
			if got := answers(t, store); got != want {
				t.Fatalf("k=%d %s: answers changed after the finishing cleanup", k, mode)
			}
		}
	}
}

// TestCleanupRefusesDrift: cleanup refuses while a table moved outside any commit (drift), before deleting anything.
func TestCleanupRefusesDrift(t *testing.T) {
	ctx := context.Background()
	store := mem.New()
	g := build(t, store, 6)
	// Move a table outside any commit: a loose table commit, as a killed
	// writer without a sidecar would leave.
	s, _ := g.Snapshot(ctx, "main")
	ds, err := s.OpenTable(ctx, graph.NodeTableKey("Person"))
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, ds.Schema())
	for i, f := range ds.Schema().Fields() {
		if sb, ok := b.Field(i).(*array.StringBuilder); ok {
			sb.Append("stray")
		} else {
			b.Field(i).AppendNull()
		}
		_ = f
	}
	st, err := ds.StageAppend(ctx, b.NewRecordBatch())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := table.Commit(ctx, st); err != nil {
		t.Fatal(err)
	}
	before, _ := backend.ListAll(ctx, store, "")
	_, err = cleanup.Run(ctx, g, cleanup.Options{Keep: 1, Confirm: true})
	if !errors.Is(err, cleanup.ErrRefused) || !strings.Contains(err.Error(), "repair") {
		t.Fatalf("cleanup with drift: %v, want a refusal naming repair", err)
	}
	after, _ := backend.ListAll(ctx, store, "")
	if len(after) != len(before) {
		t.Fatalf("a refused cleanup deleted %d objects", len(before)-len(after))
	}
}

func dirBytes(t testing.TB, dir string) int64 {
	t.Helper()
	var n int64
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// TestCleanupReclaimsManyCommitsHistory measures many one-row commits,
// then optimize + cleanup --keep 10, against a freshly loaded copy (local
// backend). It asserts that cleanup reclaims most of the growth and keeps
// the answers; it logs the ratio to the fresh copy. The 2x bound is
// NOT met yet: the kept 10 versions still name the pre-optimize fragments,
// and the __manifest history (one entry per commit) is never pruned.
func TestCleanupReclaimsManyCommitsHistory(t *testing.T) {
	ctx := context.Background()
	commits := 500
	if testing.Short() {
		commits = 200
	}
	dir := t.TempDir()
	store, err := local.New(filepath.Join(dir, "g"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := graph.Init(ctx, store, schema, graph.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < commits; i++ {
		mut(t, g, "main", `mutation m($h: String, $a: I32) { insert Person { handle: $h, age: $a } }`, map[string]any{"h": fmt.Sprintf("p%05d", i), "a": i % 50})
	}
	grown := dirBytes(t, filepath.Join(dir, "g"))
	if _, err := optimize.Run(ctx, g, optimize.Options{Branch: "main"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cleanup.Run(ctx, g, cleanup.Options{Keep: 10, Confirm: true}); err != nil {
		t.Fatal(err)
	}
	cleaned := dirBytes(t, filepath.Join(dir, "g"))
	t.Logf("storage by object class:\n%s", describeBreakdown(breakdown(t, filepath.Join(dir, "g")), nil))
	if os.Getenv("CLEANUP_DIAG") != "" {
		ents, _ := os.ReadDir(filepath.Join(dir, "g"))
		for _, e := range ents {
			t.Logf("%s %d", e.Name(), dirBytes(t, filepath.Join(dir, "g", e.Name())))
		}
		sub, _ := os.ReadDir(filepath.Join(dir, "g", "nodes", "Person"))
		for _, e := range sub {
			t.Logf("Person/%s %d", e.Name(), dirBytes(t, filepath.Join(dir, "g", "nodes", "Person", e.Name())))
		}
	}
	// A fresh copy: export, init, load.
	s, _ := g.Snapshot(ctx, "main")
	var buf bytes.Buffer
	res, err := export.Run(ctx, s, &buf, export.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fstore, err := local.New(filepath.Join(dir, "fresh"))
	if err != nil {
		t.Fatal(err)
	}
	fg, err := graph.Init(ctx, fstore, res.Schema, graph.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := load.Run(ctx, fg, &buf, load.Options{Branch: "main", Mode: load.Append}); err != nil {
		t.Fatal(err)
	}
	fresh := dirBytes(t, filepath.Join(dir, "fresh"))
	t.Logf("%d one-row commits: %d bytes; after optimize + cleanup --keep 10: %d bytes; fresh load: %d bytes (%.2fx)", commits, grown, cleaned, fresh, float64(cleaned)/float64(fresh))
	// What stays is what the kept versions reference (the ten newest
	// pre-compaction versions still list the one-row fragments) and the
	// __manifest history; old version manifests, the bulk of what is
	// reclaimed, are gzip-compressed since, so the bound is 80%.
	if cleaned*5 > grown {
		t.Fatalf("cleanup left %d of %d bytes; it should reclaim at least 80%%", cleaned, grown)
	}
	r1, err := query.Head(ctx, g, "main", probes[0], "", nil)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := query.Head(ctx, fg, "main", probes[0], "", nil)
	if err != nil || fmt.Sprint(r1.Rows) != fmt.Sprint(r2.Rows) || len(r1.Rows) != commits {
		t.Fatalf("answers after cleanup differ from the fresh copy (%v)", err)
	}
}

// TestCleanupStorageAgainstAFreshCopy measures issue 16's storage bound at
// a realistic size, on the local backend (see freshCopyScenario): a
// 100,000-node table, then 1,000 one-row commits written as the CLI
// writes them (automatic compaction after each), then cleanup --keep 10
// --confirm, against a freshly loaded copy of the same data (export,
// init, load: what a user would do); both answer the same. It logs the
// bytes by object class of both stores.
//
// Before the storage work: 29.8x (3.6 MB against 120 KB). The manifest
// history is now pruned beyond the retention (582 KB -> 6 KB of kept
// versions + a 17 KB archive of the pruned commits), the key index is
// compressed (2 x 1.2 MB -> 2 x 8 KB), a compaction writes distinct string
// columns without a dictionary (a rewritten 100k-row fragment 293 KB ->
// 116 KB, as loaded), and the automatic compaction is size-tiered, so it
// never rewrites the 100k-row fragment for a few one-row ones.
//
// With a full optimize right before the cleanup, the ten kept versions
// still name the pre-optimize fragments, so the store holds the big
// fragment twice until the retention passes: that case is bounded at 2.6x
// (measured 2.50x) as a regression guard, and reported by the benchmark.
func TestCleanupStorageAgainstAFreshCopy(t *testing.T) {
	if testing.Short() {
		t.Skip("loads 100,000 nodes and writes 1,000 commits")
	}
	for _, c := range []struct {
		name          string
		optimizeFirst bool
		limit         float64
	}{{"cleanup", false, 2.0}, {"optimize+cleanup", true, 2.6}} {
		t.Run(c.name, func(t *testing.T) {
			r := freshCopyScenario(t, t.TempDir(), c.optimizeFirst)
			t.Logf("storage by object class:\n%s", r.table)
			t.Logf("100k nodes + 1000 one-row commits: %d bytes; after %s --keep 10: %d bytes; fresh copy: %d bytes (%.2fx)", r.grown, c.name, r.cleaned, r.fresh, r.ratio())
			if r.ratio() > c.limit {
				t.Fatalf("after %s the store holds %.2fx a fresh copy, want at most %.1fx", c.name, r.ratio(), c.limit)
			}
			// What this storage work bounds, class by class.
			for class, limit := range map[string]int64{"manifest history": 8 << 10, "manifest archive": 24 << 10, "key index": 40 << 10, "table versions": 16 << 10} {
				if got := r.classes[class].Bytes; got > limit {
					t.Errorf("%s: %d bytes after cleanup, want at most %d", class, got, limit)
				}
			}
			if r.answers[0] != r.answers[1] || r.answers[0] != "[[101000 89 b000000]]" {
				t.Fatalf("answers: cleaned %s, fresh %s", r.answers[0], r.answers[1])
			}
		})
	}
}

// TestCleanupKeepsTheBaseOfTheNextMerge is the simulation's finding (sim
// seeds 3, 5 and 15 of the first 20): after a branch was merged, the base
// of its next merge is its head at that merge (the merge commit's second
// parent), not its fork point. Cleanup kept only the fork point, so a
// `--keep 1` made every later merge of the branch fail on a missing table
// version. Now the merged parents of every live branch's history keep
// their tables, and the next merge runs and merges the right rows.
func TestCleanupKeepsTheBaseOfTheNextMerge(t *testing.T) {
	ctx := context.Background()
	store := mem.New()
	g, err := graph.Init(ctx, store, schema, graph.InitOptions{Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	ins := `mutation m($h: String, $a: I32) { insert Person { handle: $h, age: $a } }`
	mut(t, g, "main", ins, map[string]any{"h": "base", "a": 1})
	if _, err := g.CreateBranch(ctx, "feature", "main"); err != nil {
		t.Fatal(err)
	}
	mut(t, g, "feature", ins, map[string]any{"h": "f1", "a": 2})
	if _, err := merge.Run(ctx, g, "feature", "main", merge.Options{}); err != nil {
		t.Fatal(err)
	}
	// after the merge, both sides move on: the next merge is three-way
	// over feature's head at the first merge
	for i := range 3 {
		mut(t, g, "feature", ins, map[string]any{"h": fmt.Sprintf("f%d", i+2), "a": 3})
		mut(t, g, "main", ins, map[string]any{"h": fmt.Sprintf("m%d", i), "a": 4})
	}
	if _, err := cleanup.Run(ctx, g, cleanup.Options{Keep: 1, Confirm: true}); err != nil {
		t.Fatal(err)
	}
	// a fresh handle: nothing of the first merge is cached
	if g, err = graph.Open(ctx, store, graph.OpenOptions{Actor: "tester"}); err != nil {
		t.Fatal(err)
	}
	res, err := merge.Run(ctx, g, "feature", "main", merge.Options{})
	if err != nil {
		t.Fatalf("the merge after cleanup: %v", err)
	}
	if res.Outcome != merge.Merged || res.Inserted != 3 || res.Deleted != 0 {
		t.Fatalf("merge %+v, want a three-way merge inserting f2..f4", res)
	}
	got, err := query.Head(ctx, g, "main", `query q() { match { $p: Person } return { $p.handle } order { $p.handle } }`, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var hs []string
	for _, r := range got.Rows {
		hs = append(hs, fmt.Sprint(r[0]))
	}
	if s := strings.Join(hs, " "); s != "base f1 f2 f3 f4 m0 m1 m2" {
		t.Fatalf("main holds %s", s)
	}
}

// crashCleanup runs cleanup --keep 2 --confirm on a fresh handle over
// store with a crash at (mode "at") or after (mode "after") its k-th write,
// and requires the crash.
func crashCleanup(t *testing.T, store backend.StorageAdapter, k int, mode string) {
	t.Helper()
	inj := fault.New(store)
	g, err := graph.Open(context.Background(), inj, graph.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	inj.Reset()
	if mode == "at" {
		inj.CrashAtWrite(k)
	} else {
		inj.CrashAfterWrite(k)
	}
	_, err = cleanup.Run(context.Background(), g, cleanup.Options{Keep: 2, Confirm: true})
	if !errors.Is(err, fault.ErrCrashed) {
		t.Fatalf("k=%d %s: cleanup returned %v, want the crash", k, mode, err)
	}
	inj.Heal()
}
