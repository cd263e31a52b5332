package cleanup_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend/local"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/cleanup"
	"github.com/omnigraph-go/omnigraph/graph/export"
	"github.com/omnigraph-go/omnigraph/graph/load"
	"github.com/omnigraph-go/omnigraph/graph/optimize"
	"github.com/omnigraph-go/omnigraph/graph/query"
)

// classStat is what one class of object costs on a local store.
type classStat struct {
	Objects int
	Bytes   int64
}

// objectClass names the class of one object key (slash-separated, relative
// to the graph root): the manifest history, other control objects, and per
// table its version manifests, data fragments, deletion vectors, key and
// adjacency indexes and table-branch trees.
func objectClass(key string) string {
	parts := strings.Split(key, "/")
	switch {
	case strings.Contains(parts[len(parts)-1], "#"):
		return "temp residue (name#N)"
	case strings.HasPrefix(key, "__manifest/branches/"):
		return "manifest history"
	case strings.HasPrefix(key, "__manifest/archive/"):
		return "manifest archive"
	case parts[0] != "nodes" && parts[0] != "edges":
		return "control (" + parts[0] + ")"
	case len(parts) < 3:
		return "table other"
	}
	rest := parts[2:]
	if rest[0] == "tree" {
		return "table branch trees"
	}
	switch rest[0] {
	case "_versions":
		return "table versions"
	case "data":
		return "data fragments"
	case "_deletions":
		return "deletion vectors"
	case "_indices":
		if strings.HasSuffix(key, "key.idx") {
			return "key index"
		}
		return "other index"
	}
	return "table " + rest[0]
}

// breakdown sums a local store's objects by class.
func breakdown(t testing.TB, dir string) map[string]classStat {
	t.Helper()
	out := map[string]classStat{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		c := objectClass(filepath.ToSlash(rel))
		s := out[c]
		s.Objects++
		s.Bytes += fi.Size()
		out[c] = s
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// describeBreakdown renders two breakdowns side by side, one class a line.
func describeBreakdown(a, b map[string]classStat) string {
	classes := map[string]bool{}
	for c := range a {
		classes[c] = true
	}
	for c := range b {
		classes[c] = true
	}
	names := make([]string, 0, len(classes))
	for c := range classes {
		names = append(names, c)
	}
	sort.Strings(names)
	var sb strings.Builder
	fmt.Fprintf(&sb, "%-22s %20s %20s\n", "class", "cleaned (objs/bytes)", "fresh (objs/bytes)")
	for _, c := range names {
		fmt.Fprintf(&sb, "%-22s %8d %11d %8d %11d\n", c, a[c].Objects, a[c].Bytes, b[c].Objects, b[c].Bytes)
	}
	return sb.String()
}

// freshCopy is what freshCopyScenario measured.
type freshCopy struct {
	grown, cleaned, fresh int64
	classes               map[string]classStat // of the cleaned store
	table                 string               // both breakdowns, side by side
	answers               [2]string            // one query on the cleaned store, on the fresh copy
}

func (r freshCopy) ratio() float64 { return float64(r.cleaned) / float64(r.fresh) }

// freshCopyScenario is issue 16's storage measurement on the local
// backend under dir: 100,000 nodes loaded, 1,000 one-row commits each
// followed by the automatic compaction (as the CLI writes them), a full
// optimize if optimizeFirst, cleanup --keep 10 --confirm; then a fresh
// copy of the same data as a user makes one (export, init, load).
func freshCopyScenario(tb testing.TB, dir string, optimizeFirst bool) freshCopy {
	tb.Helper()
	ctx := context.Background()
	const base, commits = 100_000, 1000
	store, err := local.New(filepath.Join(dir, "g"))
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := graph.Init(ctx, store, schema, graph.InitOptions{}); err != nil {
		tb.Fatal(err)
	}
	g, err := graph.Open(ctx, store, graph.OpenOptions{ExclusiveWriter: true})
	if err != nil {
		tb.Fatal(err)
	}
	defer g.Close()
	var in bytes.Buffer
	for i := 0; i < base; i++ {
		fmt.Fprintf(&in, `{"type":"Person","data":{"handle":"b%06d","age":%d}}`+"\n", i, i%90)
	}
	if _, err := load.Run(ctx, g, &in, load.Options{Mode: load.Append}); err != nil {
		tb.Fatal(err)
	}
	for i := 0; i < commits; i++ {
		mut(tb, g, "main", `mutation m($h: String, $a: I32) { insert Person { handle: $h, age: $a } }`, map[string]any{"h": fmt.Sprintf("c%05d", i), "a": i % 50})
		if _, err := optimize.Auto(ctx, g, optimize.AutoOptions{}); err != nil {
			tb.Fatal(err)
		}
	}
	var r freshCopy
	r.grown = dirBytes(tb, filepath.Join(dir, "g"))
	if optimizeFirst {
		if _, err := optimize.Run(ctx, g, optimize.Options{Branch: "main"}); err != nil {
			tb.Fatal(err)
		}
	}
	if _, err := cleanup.Run(ctx, g, cleanup.Options{Keep: 10, Confirm: true}); err != nil {
		tb.Fatal(err)
	}
	r.cleaned = dirBytes(tb, filepath.Join(dir, "g"))
	s, err := g.Snapshot(ctx, "main")
	if err != nil {
		tb.Fatal(err)
	}
	var buf bytes.Buffer
	res, err := export.Run(ctx, s, &buf, export.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	fstore, err := local.New(filepath.Join(dir, "fresh"))
	if err != nil {
		tb.Fatal(err)
	}
	fg, err := graph.Init(ctx, fstore, res.Schema, graph.InitOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	defer fg.Close()
	if _, err := load.Run(ctx, fg, &buf, load.Options{Mode: load.Append}); err != nil {
		tb.Fatal(err)
	}
	r.fresh = dirBytes(tb, filepath.Join(dir, "fresh"))
	r.classes = breakdown(tb, filepath.Join(dir, "g"))
	r.table = describeBreakdown(r.classes, breakdown(tb, filepath.Join(dir, "fresh")))
	q := `query q() { match { $p: Person } return { count($p) as n, max($p.age) as oldest, min($p.handle) as first } }`
	for i, h := range []*graph.Graph{g, fg} {
		a, err := query.Head(ctx, h, "main", q, "", nil)
		if err != nil {
			tb.Fatal(err)
		}
		r.answers[i] = fmt.Sprint(a.Rows)
	}
	return r
}

// BenchmarkCleanupStorageAgainstAFreshCopy reports issue 16's storage
// ratio (freshCopyScenario): the bytes on the store after 1,000 one-row
// commits and cleanup --keep 10, over a freshly loaded copy's, and the
// bytes by object class; with a full optimize before the cleanup too.
// Run it with -benchtime 1x (make bench does).
func BenchmarkCleanupStorageAgainstAFreshCopy(b *testing.B) {
	for _, c := range []struct {
		name          string
		optimizeFirst bool
	}{{"cleanup", false}, {"optimize+cleanup", true}} {
		b.Run(c.name, func(b *testing.B) {
			var r freshCopy
			for range b.N {
				r = freshCopyScenario(b, b.TempDir(), c.optimizeFirst)
			}
			b.ReportMetric(r.ratio(), "x_fresh_copy")
			b.ReportMetric(float64(r.cleaned), "cleaned_bytes")
			b.ReportMetric(float64(r.fresh), "fresh_bytes")
			b.Logf("%s --keep 10: %d bytes; fresh copy: %d bytes (%.2fx)\n%s", c.name, r.cleaned, r.fresh, r.ratio(), r.table)
		})
	}
}
