package iceberg_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/catalog"
	icetable "github.com/apache/iceberg-go/table"

	"github.com/omnigraph-go/omnigraph/backend/fault"
	"github.com/omnigraph-go/omnigraph/backend/local"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/iceberg"
)

// crashBase builds, once, a graph directory to copy: the seed, a keyed
// update (a deletion vector), a delete; with synced set, also synced.
func crashBase(t *testing.T, synced bool) string {
	t.Helper()
	r := newLocalRig(t)
	r.init(testSchema)
	loadData(t, r.g, "main", testSeed)
	mutateQ(t, r.g, "main", `query q() { update Person set { age: 50 } where handle = "bob" }`)
	if synced {
		r.sync()
	}
	mutateQ(t, r.g, "main", `query q() { delete Person where handle = "cy" }`)
	mutateQ(t, r.g, "main", `query q() { update Person set { name: "Ada L" } where handle = "ada" }`)
	r.g.Close()
	return strings.TrimPrefix(r.loc, "file://")
}

// TestSyncCrashAtEveryWrite crashes a sync at (and right after) each of
// its storage writes, cold and incremental. After each crash, with all
// in-memory state dropped, every table's metadata that exists reads in
// full with iceberg-go's scanner and shows a state the graph really had
// (the commit its summary names): a half-written sync is invisible. Then
// a fresh sync finishes the work: every table matches the graph head.
func TestSyncCrashAtEveryWrite(t *testing.T) {
	// The cold sync writes every kind of file the incremental one does, so
	// it is crashed at each write only; the incremental one also right
	// after each (CI time).
	for _, c := range []struct {
		name   string
		synced bool
		after  []bool
	}{{"cold", false, []bool{false}}, {"incremental", true, []bool{false, true}}} {
		t.Run(c.name, func(t *testing.T) {
			base := crashBase(t, c.synced)
			for _, after := range c.after {
				for k := 1; ; k++ {
					dir := filepath.Join(t.TempDir(), "g")
					if err := os.CopyFS(dir, os.DirFS(base)); err != nil {
						t.Fatal(err)
					}
					crashed := crashSync(t, dir, k, after)
					if !crashed {
						if k == 1 {
							t.Fatal("the sync wrote nothing")
						}
						t.Logf("%s: crashed (after=%v) at each of %d writes", c.name, after, k-1)
						break
					}
				}
			}
		})
	}
}

// crashSync runs one sync on the graph at dir that crashes at write k,
// checks what it left, re-runs it and checks the result. It reports
// whether the crash happened.
func crashSync(t *testing.T, dir string, k int, after bool) bool {
	t.Helper()
	ctx := context.Background()
	st, err := local.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	loc, _ := iceberg.Location(dir)
	f := fault.New(st)
	g, err := graph.Open(ctx, f, graph.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if after {
		f.CrashAfterWrite(k)
	} else {
		f.CrashAtWrite(k)
	}
	_, serr := iceberg.Sync(ctx, g, iceberg.Options{Location: loc})
	g.Close()
	if !f.Crashed() {
		if serr != nil {
			t.Fatalf("sync without a crash: %v", serr)
		}
		return false
	}
	if serr == nil {
		t.Fatalf("write %d crashed and the sync reported success", k)
	}

	// The process restarts: nothing of it survives but the store.
	r := &rig{t: t, store: st, loc: loc}
	r.open = func() catalog.Catalog { return staticCatalog(t, loc, nil) }
	if r.g, err = graph.Open(ctx, st, graph.OpenOptions{ReadOnly: true}); err != nil {
		t.Fatal(err)
	}
	defer r.g.Close()
	cat := r.open()
	for _, key := range tableKeys {
		id, _ := iceberg.IdentOf(key)
		tbl, err := cat.LoadTable(ctx, icetable.Identifier{id.Namespace, id.Name})
		if errors.Is(err, catalog.ErrNoSuchTable) {
			continue
		}
		if err != nil {
			t.Fatalf("crash at write %d (after=%v): %s does not load: %v", k, after, key, err)
		}
		cur := tbl.CurrentSnapshot()
		if cur == nil {
			continue
		}
		commit := cur.Summary.Properties[iceberg.SummaryCommitID]
		snap, err := r.g.SnapshotAt(ctx, commit)
		if err != nil {
			t.Fatalf("crash at write %d: %s's main names commit %q: %v", k, key, commit, err)
		}
		want, cols := graphRows(t, snap, key)
		if got := icebergRows(t, tbl, scanSelector{ref: "main"}, cols); !slices.Equal(got, want) {
			t.Fatalf("crash at write %d (after=%v): %s reads\n%s\nbut the graph at %s held\n%s", k, after, key, strings.Join(got, "\n"), commit, strings.Join(want, "\n"))
		}
	}
	r.sync()
	r.check("re-run after a crash", "main")
	// Idempotent: one more run has nothing to do.
	if res := r.sync(); len(res.Tables) != 0 {
		t.Fatalf("a second re-run wrote %+v", res.Tables)
	}
	return true
}
