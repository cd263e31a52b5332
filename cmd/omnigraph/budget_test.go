package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/load"
)

// crowdGraph is a local graph of n people (cliSchema).
func crowdGraph(t *testing.T, n int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "g")
	mustCLI(t, "init", "--schema", writeSchema(t), dir)
	ctx := context.Background()
	store, err := backend.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	g, err := graph.Open(ctx, store, graph.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `{"type":"Person","data":{"name":"p%03d","age":%d}}`+"\n", i, i)
	}
	if _, err := load.Run(ctx, g, strings.NewReader(b.String()), load.Options{Mode: load.Append}); err != nil {
		t.Fatal(err)
	}
	return dir
}

const (
	cliFiveWay = `query q() { match { $a: Person  $b: Person  $c: Person  $d: Person  $e: Person } return { count($a) as n } }`
	cliTwoWay  = `query q() { match { $a: Person  $b: Person } return { count($a) as n } }`
)

// TestCLIQueryBudget: the CLI's budgets are finite by default (the issue's
// five-way cross product is refused on its estimate, exit 6, with what to
// do), each flag raises one or (0) lifts it, the JSON error names
// budget_exceeded, --explain shows the estimate per step without running,
// and a mutation's read phase has the same flags.
func TestCLIQueryBudget(t *testing.T) {
	dir := crowdGraph(t, 30)
	code, out, errs := cli(t, "query", "-e", cliFiveWay, "--store", dir)
	if code != exitBudget || out != "" {
		t.Fatalf("five-way: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	for _, want := range []string{"estimates 25137931 rows", "scan $e Person", "over the budget of 20000000 rows", "raise it with --max-rows N"} {
		if !strings.Contains(errs, want) {
			t.Fatalf("five-way message %q lacks %q", errs, want)
		}
	}
	code, _, errs = cli(t, "query", "-e", cliFiveWay, "--format", "json", "--store", dir)
	var je jsonError
	if code != exitBudget || json.Unmarshal([]byte(errs), &je) != nil || je.Error.Code != "budget_exceeded" {
		t.Fatalf("five-way json: exit %d, stderr %q", code, errs)
	}
	// Raised, the two-way cross product runs; lowered, it is stopped.
	if out := mustCLI(t, "query", "-e", cliTwoWay, "--max-rows", "0", "--format", "jsonl", "--store", dir); out != `{"n":900}`+"\n" {
		t.Fatalf("two-way unlimited: %q", out)
	}
	for _, c := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--max-rows", "500"}, "--max-rows"},
		{[]string{"--max-memory", "1KiB"}, "--max-memory"},
		{[]string{"--max-read-bytes", "100"}, "--max-read-bytes"},
		{[]string{"--timeout", "1ns"}, "--timeout"},
	} {
		args := append([]string{"query", "-e", cliTwoWay, "--store", dir}, c.flags...)
		code, _, errs := cli(t, args...)
		if code != exitBudget || !strings.Contains(errs, "raise it with "+c.want) {
			t.Fatalf("%v: exit %d, %q", c.flags, code, errs)
		}
	}
	for _, bad := range [][]string{{"--max-memory", "lots"}, {"--max-rows", "-1"}, {"--max-read-bytes", "-3GiB"}} {
		args := append([]string{"query", "-e", cliTwoWay, "--store", dir}, bad...)
		if code, _, errs := cli(t, args...); code != exitUsage {
			t.Fatalf("%v: exit %d (%q), want usage", bad, code, errs)
		}
	}

	// --explain: the estimate per step, the verdict, nothing run.
	out = mustCLI(t, "query", "-e", cliFiveWay, "--explain", "--store", dir)
	for _, want := range []string{"scan $a Person  -- est. 30 rows", "scan $e Person  -- est. 24300000 rows (30 per input row: a cross product)", "estimate: 1 output rows, 25137931 rows produced in all", "over the budget"} {
		if !strings.Contains(out, want) {
			t.Fatalf("explain:\n%s\nlacks %q", out, want)
		}
	}
	out = mustCLI(t, "query", "-e", cliTwoWay, "--explain", "--format", "json", "--store", dir)
	var ex struct {
		Steps []struct {
			Step string
			Rows int64
		}
		TotalRows int64 `json:"total_rows"`
		Fits      bool
	}
	if err := json.Unmarshal([]byte(out), &ex); err != nil || len(ex.Steps) != 2 || ex.Steps[1].Rows != 900 || ex.TotalRows != 931 || !ex.Fits {
		t.Fatalf("explain json %q: %+v %v", out, ex, err)
	}

	// A mutation's read phase.
	code, _, errs = cli(t, "mutate", "-e", `update Person set { age: 1 } where age >= 0`, "--max-rows", "10", "--store", dir)
	if code != exitBudget || !strings.Contains(errs, "query budget") {
		t.Fatalf("mutation over budget: exit %d, %q", code, errs)
	}
	if out := mustCLI(t, "query", "-e", `query q() { match { $p: Person { age: 1 } } return { count($p) as n } }`, "--format", "jsonl", "--store", dir); out != `{"n":1}`+"\n" {
		t.Fatalf("the refused mutation wrote: %q", out)
	}
}

func TestParseSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"1024", 1024, true}, {"512MiB", 512 << 20, true}, {"1.5GiB", 3 << 29, true},
		{"4 GiB", 4 << 30, true}, {"2KB", 2000, true}, {"7B", 7, true},
		{"", 0, false}, {"GiB", 0, false}, {"-1", 0, false}, {"1XB", 0, false}, {"99999999TiB", 0, false}, {"NaN", 0, false},
	} {
		got, err := parseSize(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
	if s := formatSize(8 << 30); s != "8GiB" {
		t.Errorf("formatSize: %s", s)
	}
}
