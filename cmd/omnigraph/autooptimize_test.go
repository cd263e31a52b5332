package main

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/optimize"
)

// fragments opens the graph at url and returns the fragment count of one
// table on main.
func fragments(t *testing.T, url, key string) int {
	t.Helper()
	ctx := context.Background()
	store, err := backend.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	g, err := graph.Open(ctx, store, graph.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := g.Snapshot(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	ds, err := snap.OpenTable(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	return len(ds.Manifest().Fragments)
}

// TestCLIAutoOptimizeBoundsFragments pins issue 14's automatic compaction:
// after 40 one-row CLI mutations the Person table's fragment count stays
// under the threshold (optimize.DefaultAutoThreshold) and every answer is
// unchanged; with OMNIGRAPH_AUTO_OPTIMIZE=0 (or --no-auto-optimize) it
// grows by one per commit.
func TestCLIAutoOptimizeBoundsFragments(t *testing.T) {
	const writes = 40
	var want []string
	for i := 0; i < writes; i++ {
		want = append(want, fmt.Sprintf("p%03d", i))
	}
	sort.Strings(want)
	for _, tc := range []struct {
		name string
		env  string
		flag []string
		auto bool
	}{
		{"on", "", nil, true},
		{"env-off", "0", nil, false},
		{"flag-off", "", []string{"--no-auto-optimize"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(envAutoOptimize, tc.env)
			dir := filepath.Join(t.TempDir(), "g")
			mustCLI(t, "init", "--schema", writeSchema(t), dir)
			for i := 0; i < writes; i++ {
				args := append([]string{"mutate", "-e", fmt.Sprintf(`insert Person {name: "p%03d", age: %d}`, i, i), "--store", dir}, tc.flag...)
				out := mustCLI(t, args...)
				if !strings.Contains(out, "1 nodes and 0 edges affected") {
					t.Fatalf("mutate %d: %q", i, out)
				}
			}
			n := fragments(t, dir, graph.NodeTableKey("Person"))
			t.Logf("%s: %d fragments after %d one-row commits", tc.name, n, writes)
			if tc.auto && n >= optimize.DefaultAutoThreshold {
				t.Errorf("auto-optimize on: %d fragments after %d commits, want < %d", n, writes, optimize.DefaultAutoThreshold)
			}
			if !tc.auto && n < writes {
				t.Errorf("auto-optimize off: %d fragments after %d commits, want >= %d (one per commit)", n, writes, writes)
			}
			out := mustCLI(t, "query", "-e", `query q() { match { $p: Person } return { $p.name } }`, "--format", "csv", "--store", dir)
			got := strings.Split(strings.TrimSpace(out), "\n")[1:]
			sort.Strings(got)
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("answers changed: got %v", got)
			}
			// Keys still resolve after compaction: an insert of an existing
			// key is an upsert that replaces the node, never a second row.
			mustCLI(t, "mutate", "-e", `insert Person {name: "p007", age: 700}`, "--store", dir, "--no-auto-optimize")
			if n := rowCount(t, dir, "main", graph.NodeTableKey("Person")); n != writes {
				t.Errorf("after the upsert of an existing key: %d rows, want %d", n, writes)
			}
			out = mustCLI(t, "query", "-e", `query q() { match { $p: Person } return { $p.name, $p.age } }`, "--format", "csv", "--store", dir)
			if !strings.Contains(out, "p007,700\n") || strings.Contains(out, "p007,7\n") {
				t.Errorf("upserted node not replaced:\n%s", out)
			}
		})
	}
}
