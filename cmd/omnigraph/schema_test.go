package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/graph"
)

// TestCLISchemaPlanApply pins 'schema plan' and 'schema apply': plan
// prints the steps (text and --json) and writes nothing, a refused apply
// exits 1 with schema_change_refused and writes nothing, an apply with a
// branch present is refused naming it, a supported apply commits once and
// queries use the new names, and applying again is a no-op.
func TestCLISchemaPlanApply(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "g")
	mustCLI(t, "init", "--schema", writeSchema(t), dir)
	mustCLI(t, "mutate", "--no-auto-optimize", "-e", `mutation m() { insert Person { name: "ann", age: 30 } }`, "--store", dir)
	write := func(name, src string) string {
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.pg", strings.Replace(cliSchema, "age: I32?", "years: I32? @rename_from(\"age\")\n  city: String?", 1))
	bad := write("bad.pg", strings.Replace(cliSchema, "age: I32?", "age: I32?\n  city: String", 1))

	files := storeFiles(t, dir)
	text := mustCLI(t, "schema", "plan", "--schema", good, "--store", dir)
	for _, want := range []string{"supported", "rename_property", "Person.age -> years", "add_property", "tables rewritten: node:Person"} {
		if !strings.Contains(text, want) {
			t.Fatalf("plan text lacks %q:\n%s", want, text)
		}
	}
	var plan struct {
		Supported bool `json:"supported"`
		Steps     []struct {
			Kind, Effect, Code string
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, "schema", "plan", "--schema", bad, "--json", "--store", dir)), &plan); err != nil {
		t.Fatal(err)
	}
	if plan.Supported || len(plan.Steps) != 1 || plan.Steps[0].Code != "OG-MF-103" || plan.Steps[0].Effect != "refused" {
		t.Fatalf("plan of a required property: %+v", plan)
	}
	code, _, errs := cli(t, "schema", "apply", "--schema", bad, "--json", "--store", dir)
	if code != 1 || !strings.Contains(errs, `"code":"schema_change_refused"`) || !strings.Contains(errs, "OG-MF-103") {
		t.Fatalf("refused apply: exit %d, stderr %s", code, errs)
	}
	if got := storeFiles(t, dir); got != files {
		t.Fatalf("plan and a refused apply changed the store: %d files, was %d", got, files)
	}
	mustCLI(t, "branch", "create", "side", "--store", dir)
	code, _, errs = cli(t, "schema", "apply", "--schema", good, "--store", dir)
	if code != 1 || !strings.Contains(errs, "side") || !strings.Contains(errs, "branch delete") {
		t.Fatalf("apply with a branch: exit %d, stderr %s", code, errs)
	}
	mustCLI(t, "branch", "delete", "side", "--store", dir)
	files = storeFiles(t, dir)
	var res struct {
		NoOp   bool     `json:"no_op"`
		Tables []string `json:"tables"`
		Commit *struct {
			ID string `json:"id"`
		} `json:"commit"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, "schema", "apply", "--schema", good, "--json", "--store", dir)), &res); err != nil {
		t.Fatal(err)
	}
	if res.NoOp || res.Commit == nil || strings.Join(res.Tables, ",") != "node:Person" {
		t.Fatalf("apply: %+v", res)
	}
	if storeFiles(t, dir) <= files {
		t.Fatal("the apply wrote nothing")
	}
	got := mustCLI(t, "query", "-e", `query q() { match { $p: Person } return { $p.name, $p.years, $p.city } }`, "--format", "csv", "--store", dir)
	if !strings.Contains(got, "ann,30,") {
		t.Fatalf("query after apply: %s", got)
	}
	if out := mustCLI(t, "schema", "show", "--store", dir); !strings.Contains(out, "years") {
		t.Fatalf("schema show after apply: %s", out)
	}
	if out := mustCLI(t, "schema", "apply", "--schema", good, "--store", dir); !strings.Contains(out, "nothing was written") {
		t.Fatalf("second apply: %s", out)
	}
	if code, _, _ := cli(t, "schema", "apply", "--store", dir); code != exitUsage {
		t.Fatalf("apply without --schema: exit %d, want %d", code, exitUsage)
	}
}

// TestCLIEnsureIndices: the first run builds the missing key indexes in one
// commit, the second says nothing was written and writes nothing.
func TestCLIEnsureIndices(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "g")
	mustCLI(t, "init", "--schema", writeSchema(t), dir)
	for _, n := range []string{"a", "b", "c"} {
		mustCLI(t, "mutate", "--no-auto-optimize", "-e", `mutation m() { insert Person { name: "`+n+`" } }`, "--store", dir)
	}
	var first struct {
		NoOp  bool `json:"no_op"`
		Built []struct {
			Table string `json:"table"`
		} `json:"built"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, "ensure-indices", "--json", "--store", dir)), &first); err != nil {
		t.Fatal(err)
	}
	if first.NoOp || len(first.Built) != 1 || first.Built[0].Table != "node:Person" {
		t.Fatalf("first run: %+v", first)
	}
	files := storeFiles(t, dir)
	if out := mustCLI(t, "ensure-indices", "--store", dir); !strings.Contains(out, "nothing was written") {
		t.Fatalf("second run: %s", out)
	}
	if storeFiles(t, dir) != files {
		t.Fatal("the second run wrote files")
	}
}

// TestCLIInterruptedApplyLock: the lock an interrupted apply leaves refuses
// 'branch create' with schema_locked (leaving no branch), and the next
// 'schema apply' (here of the accepted schema: a no-op) removes it.
func TestCLIInterruptedApplyLock(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "g")
	schemaFile := writeSchema(t)
	mustCLI(t, "init", "--schema", schemaFile, dir)
	store, err := backend.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	g, err := graph.Open(ctx, store, graph.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.LockSchema(ctx, false); err != nil { // and never unlocked: a crash
		t.Fatal(err)
	}
	g.Close()
	store.Close()

	code, _, errs := cli(t, "branch", "create", "side", "--json", "--store", dir)
	if code != 1 || !strings.Contains(errs, `"code":"schema_locked"`) || !strings.Contains(errs, "schema apply") {
		t.Fatalf("branch create under the lock: exit %d, stderr %s", code, errs)
	}
	if out := mustCLI(t, "branch", "list", "--store", dir); strings.Contains(out, "side") {
		t.Fatalf("the refused create left a branch:\n%s", out)
	}
	if out := mustCLI(t, "schema", "apply", "--schema", schemaFile, "--store", dir); !strings.Contains(out, "nothing was written") {
		t.Fatalf("apply of the accepted schema: %s", out)
	}
	mustCLI(t, "branch", "create", "side", "--store", dir)
}
