package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/internal/testenv"
)

const cliSchema = `
node Person {
  name: String @key
  age: I32?
}
node Company {
  name: String @key
}
edge WorksAt: Person -> Company
`

// cli runs one in-process invocation and returns its exit code and streams.
func cli(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// mustCLI runs an invocation that must exit 0.
func mustCLI(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errs := cli(t, args...)
	if code != exitOK {
		t.Fatalf("omnigraph %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

func writeSchema(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "schema.pg")
	if err := os.WriteFile(p, []byte(cliSchema), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCLISession(t *testing.T) {
	t.Run("mem", func(t *testing.T) { runSession(t, "mem://cli-session-"+strings.ReplaceAll(t.Name(), "/", "-")) })
	t.Run("local", func(t *testing.T) { runSession(t, filepath.Join(t.TempDir(), "graph")) })
	t.Run("file-url", func(t *testing.T) { runSession(t, "file://"+filepath.ToSlash(filepath.Join(t.TempDir(), "g"))) })
}

func TestCLISessionCloud(t *testing.T) {
	t.Run("s3", func(t *testing.T) { runSession(t, testenv.S3(t)) })
	t.Run("gcs", func(t *testing.T) { runSession(t, testenv.GCS(t)) })
	t.Run("azure", func(t *testing.T) { runSession(t, testenv.Azure(t)) })
}

func runSession(t *testing.T, url string) {
	schema := writeSchema(t)
	out := mustCLI(t, "init", "--schema", schema, url, "--as", "alice", "--json")
	var initOut struct {
		Commit string   `json:"commit"`
		Tables []string `json:"tables"`
	}
	if err := json.Unmarshal([]byte(out), &initOut); err != nil || initOut.Commit == "" || len(initOut.Tables) != 3 {
		t.Fatalf("init --json = %q (%v)", out, err)
	}
	if code, _, errs := cli(t, "init", "--schema", schema, "--store", url); code != exitError || !strings.Contains(errs, "already exists") {
		t.Fatalf("second init: exit %d, %s", code, errs)
	}

	// branch create, then the refusals of seed 004.
	mustCLI(t, "branch", "create", "feature", "--store", url, "--as", "bob")
	for _, bad := range [][]string{
		{"branch", "create", "main", "--store", url},
		{"branch", "create", "feature", "--store", url},
		{"branch", "create", "feature/x", "--store", url},
	} {
		if code, _, errs := cli(t, bad...); code != exitError || errs == "" {
			t.Fatalf("%v: exit %d, stderr %q; want exit 1 with a message", bad, code, errs)
		}
	}
	mustCLI(t, "branch", "create", "review/2026-07", "--from", "feature", "--store", url)

	out = mustCLI(t, "branch", "list", "--store", url, "--json")
	var bl struct {
		Branches []struct{ Name string } `json:"branches"`
	}
	if err := json.Unmarshal([]byte(out), &bl); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, b := range bl.Branches {
		names = append(names, b.Name)
	}
	if got := strings.Join(names, ","); got != "feature,main,review/2026-07" {
		t.Fatalf("branch list = %s", got)
	}
	if text := mustCLI(t, "branch", "list", "--store", url); !strings.Contains(text, "review/2026-07") {
		t.Fatalf("branch list text = %q", text)
	}

	// commit list: the initial commit, inherited by the branches.
	out = mustCLI(t, "commit", "list", "--branch", "review/2026-07", "--store", url, "--json")
	var cl struct {
		Commits []struct {
			ID, Actor, Branch string
			Parents           []string
		} `json:"commits"`
	}
	if err := json.Unmarshal([]byte(out), &cl); err != nil {
		t.Fatal(err)
	}
	if len(cl.Commits) != 1 || cl.Commits[0].ID != initOut.Commit || cl.Commits[0].Actor != "alice" || cl.Commits[0].Branch != "main" {
		t.Fatalf("commit list = %+v", cl.Commits)
	}
	if text := mustCLI(t, "commit", "show", initOut.Commit, "--store", url); !strings.Contains(text, "alice") {
		t.Fatalf("commit show = %q", text)
	}
	if code, _, _ := cli(t, "commit", "show", "01NOSUCHCOMMIT", "--store", url); code != exitError {
		t.Fatalf("commit show of an unknown id: exit %d", code)
	}

	// snapshot of a branch: per-table version and rows, and the stamp.
	out = mustCLI(t, "snapshot", "--branch", "feature", "--store", url, "--json")
	var snap struct {
		Branch   string `json:"branch"`
		Commit   string `json:"commit"`
		Internal int    `json:"internal_schema_version"`
		Tables   []struct {
			Table   string `json:"table"`
			Version uint64 `json:"version"`
			Rows    int64  `json:"rows"`
		} `json:"tables"`
	}
	if err := json.Unmarshal([]byte(out), &snap); err != nil {
		t.Fatal(err)
	}
	if snap.Branch != "feature" || snap.Commit != initOut.Commit || snap.Internal != 1 || len(snap.Tables) != 3 {
		t.Fatalf("snapshot = %+v", snap)
	}
	for _, tb := range snap.Tables {
		if tb.Version != 1 || tb.Rows != 0 {
			t.Fatalf("table %+v of a fresh graph", tb)
		}
	}
	if text := mustCLI(t, "snapshot", "--store", url); !strings.Contains(text, "node:Person") || !strings.Contains(text, "internal schema version 1") {
		t.Fatalf("snapshot text = %q", text)
	}
	if text := mustCLI(t, "schema", "show", "--store", url); !strings.Contains(text, "node Person") {
		t.Fatalf("schema show = %q", text)
	}

	// delete: refused with descendants, then leaf first.
	if code, _, errs := cli(t, "branch", "delete", "feature", "--store", url); code != exitError || !strings.Contains(errs, "descendants") {
		t.Fatalf("delete with descendants: exit %d %s", code, errs)
	}
	mustCLI(t, "branch", "delete", "review/2026-07", "--store", url)
	mustCLI(t, "branch", "delete", "feature", "--store", url, "--json")
	if out := mustCLI(t, "branch", "list", "--store", url, "--json"); strings.Contains(out, "feature") {
		t.Fatalf("deleted branches still listed: %s", out)
	}
	mustCLI(t, "branch", "create", "feature", "--store", url) // the name is free again
}

func TestCLIUsageErrors(t *testing.T) {
	schema := writeSchema(t)
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"no store", []string{"snapshot"}, exitUsage},
		{"init without schema", []string{"init", "mem://x"}, exitUsage},
		{"init with two locations", []string{"init", "--schema", schema, "--store", "mem://a", "mem://b"}, exitUsage},
		{"branch without subcommand", []string{"branch"}, exitUsage},
		{"branch create without name", []string{"branch", "create", "--store", "mem://x"}, exitUsage},
		{"commit show without id", []string{"commit", "show", "--store", "mem://x"}, exitUsage},
		{"unknown flag", []string{"branch", "list", "--nope", "--store", "mem://x"}, exitUsage},
		{"no graph", []string{"branch", "list", "--store", "mem://empty-graph-usage"}, exitError},
		{"missing schema file", []string{"init", "--schema", "/nonexistent.pg", "mem://x"}, exitError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errs := cli(t, tt.args...)
			if code != tt.code || errs == "" {
				t.Fatalf("exit %d (stderr %q), want %d with a message", code, errs, tt.code)
			}
		})
	}
	for _, help := range [][]string{{"init", "--help"}, {"branch", "create", "--help"}, {"commit", "list", "--help"}, {"snapshot", "--help"}, {"schema", "show", "--help"}} {
		if out := mustCLI(t, help...); !strings.Contains(out, "--store") {
			t.Fatalf("%v does not document --store: %s", help, out)
		}
	}
}

func TestCLIBadSchemaChangesNothing(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bad.pg")
	if err := os.WriteFile(p, []byte("node person {\n  name: String\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "g")
	code, _, errs := cli(t, "init", "--schema", p, dir)
	if code != exitError || !strings.Contains(errs, ":1:") {
		t.Fatalf("bad schema: exit %d, %q; want exit 1 with a line:col message", code, errs)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("a refused init left %d entries in %s", len(entries), dir)
	}
}
