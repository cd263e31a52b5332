package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLintCommand: offline with --schema and against a graph give the same
// findings; warnings exit 0, an error exits 1 with the report still
// printed; bad invocations are usage errors that touch nothing.
func TestLintCommand(t *testing.T) {
	schema := writeSchema(t)
	good := writeFile(t, "good.gq", `
query people() { match { $p: Person } return { $p.name, $p.age } }
mutation older($n: String) { update Person set { age: 40 } where name = $n }
mutation fixed() { update Person set { age: 1 } where name = "a" }
`)
	bad := writeFile(t, "bad.gq", `
query people() { match { $p: Person  $p.age > "old" } return { $p.name } }
query fine() { match { $p: Person } return { $p.name } }
`)
	broken := writeFile(t, "broken.gq", `query q( {`)

	url := filepath.Join(t.TempDir(), "g")
	mustCLI(t, "init", "--schema", schema, url)

	for _, target := range [][]string{{"--schema", schema}, {"--store", url}, {url}} {
		args := append([]string{"lint", "--query", good, "--json"}, target...)
		out := mustCLI(t, args...)
		var r lintOutput
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v: %v\n%s", target, err, out)
		}
		// fixed() has no parameters (L202); age is set, nothing else is nullable.
		if r.Status != "ok" || r.Errors != 0 || r.Warnings != 1 || r.QueriesProcessed != 3 || r.Findings[0].Code != "L202" {
			t.Fatalf("%v: %s", target, out)
		}
		if want := map[bool]string{true: "file", false: "graph"}[target[0] == "--schema"]; r.Schema.Kind != want {
			t.Errorf("%v: schema source %+v, want %s", target, r.Schema, want)
		}
	}

	code, out, errs := cli(t, "lint", "--query", bad, "--schema", schema)
	if code != exitError || !strings.Contains(out, "bad.gq:2:") || !strings.Contains(out, "error T7") ||
		!strings.Contains(out, "1 error(s)") || !strings.Contains(errs, "lint found 1 error(s)") {
		t.Fatalf("bad file: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, _ = cli(t, "lint", "--query", broken, "--schema", schema, "--json")
	var r lintOutput
	if code != exitError || json.Unmarshal([]byte(out), &r) != nil || len(r.Findings) != 1 || r.Findings[0].Code != "Q000" {
		t.Fatalf("broken file: exit %d\n%s", code, out)
	}

	// Through a server: the same report, exit code and output, text and
	// --json (the served graph's schema, linted by the same function).
	base, _, _ := startServe(t, "--store", url)
	for _, file := range []string{good, bad, broken} {
		for _, format := range [][]string{nil, {"--json"}} {
			args := append([]string{"lint", "--query", file}, format...)
			lc, lout, _ := cli(t, append(args, "--store", url)...)
			sc, sout, serr := cli(t, append(args, "--server", base)...)
			if lc != sc || lout != sout || lout == "" {
				t.Fatalf("lint %s %v: --store exit %d\n%s\n--server exit %d\n%s%s", filepath.Base(file), format, lc, lout, sc, sout, serr)
			}
		}
	}
	for _, args := range [][]string{
		{"lint", "--query", good, "--schema", schema, "--server", base},
		{"lint", "--query", good, url, "--server", base},
	} {
		if code, _, errs := cli(t, args...); code != exitUsage {
			t.Errorf("%v: exit %d, want usage\n%s", args, code, errs)
		}
	}

	missing := filepath.Join(t.TempDir(), "nothing-here")
	for _, args := range [][]string{
		{"lint", "--schema", schema},                                      // no --query
		{"lint", "--query", good},                                         // no schema
		{"lint", "--query", good, "--schema", schema, "--store", url},     // two schemas
		{"lint", "--query", good, "--store", url, url},                    // the graph twice
		{"lint", "--query", good, "--schema", schema, "--branch", "main"}, // branch without a graph
	} {
		if code, _, errs := cli(t, args...); code != exitUsage {
			t.Errorf("%v: exit %d, want usage\n%s", args, code, errs)
		}
	}
	if code, _, _ := cli(t, "lint", "--query", good, missing); code == exitOK {
		t.Errorf("lint against a missing graph succeeded")
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("lint created %s", missing)
	}
}
