package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLIReadsAndFailuresCreateNothing pins "nothing is created by a
// command that fails or only reads": every read-only command, storage check
// and a failing init on a mistyped local path leave the filesystem as it
// was.
func TestCLIReadsAndFailuresCreateNothing(t *testing.T) {
	parent := t.TempDir()
	typo := filepath.Join(parent, "typo", "graph")
	bad := filepath.Join(t.TempDir(), "bad.pg")
	if err := os.WriteFile(bad, []byte("node person {\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"query", "-e", "query q() { match { $p: Person } return { $p.name } }", "--store", typo},
		{"commit", "list", "--store", typo},
		{"recovery", "list", "--store", typo},
		{"branch", "list", "--store", typo},
		{"snapshot", "--store", typo},
		{"schema", "show", "--store", typo},
		{"storage", "check", typo},
		{"init", "--schema", bad, typo},
		{"init", "--schema", "/nonexistent.pg", typo},
	} {
		code, _, errs := cli(t, args...)
		if code == exitOK {
			t.Fatalf("omnigraph %s succeeded on a missing directory", strings.Join(args, " "))
		}
		if ents, _ := os.ReadDir(parent); len(ents) != 0 {
			t.Fatalf("omnigraph %s (exit %d: %s) created %v", strings.Join(args, " "), code, errs, ents)
		}
	}
	if _, _, errs := cli(t, "storage", "check", typo); !strings.Contains(errs, "does not exist") {
		t.Fatalf("storage check on a missing directory says %q, want it to say so", errs)
	}
}

// TestStorageCheckLeavesNothingOnLocal pins "storage check cleans up after
// itself and leaves no .omnigraph-lock#N files".
func TestStorageCheckLeavesNothingOnLocal(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "mine.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := storageCheckRun(t, dir); code != exitOK {
		t.Fatalf("storage check: exit %d\n%s", code, out)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "mine.txt" {
		t.Fatalf("storage check left %v beside the user's file", names)
	}
}

// TestCLIInitRefusesUnfencedStores pins "init refuses a store that does not
// fence writers, naming omnigraph storage check".
func TestCLIInitRefusesUnfencedStores(t *testing.T) {
	schema := writeSchema(t)
	for _, url := range []string{"test-blindcreate://x", "test-nocreate://x"} {
		code, _, errs := cli(t, "init", "--schema", schema, url)
		if code != exitError || !strings.Contains(errs, "omnigraph storage check") {
			t.Fatalf("init %s: exit %d, %q; want exit 1 naming 'omnigraph storage check'", url, code, errs)
		}
	}
}

// TestCLIRefusesMemStores pins "`init mem://x` does not report a graph that
// vanishes": outside one process a mem:// store cannot hold a graph, so the
// binary refuses it for graph commands.
func TestCLIRefusesMemStores(t *testing.T) {
	processLocalStores = false
	defer func() { processLocalStores = true }()
	schema := writeSchema(t)
	for _, args := range [][]string{
		{"init", "--schema", schema, "mem://vanishing"},
		{"snapshot", "--store", "gocloud+mem://vanishing"},
	} {
		code, out, errs := cli(t, args...)
		if code != exitError || out != "" || !strings.Contains(errs, "vanish") {
			t.Fatalf("omnigraph %s: exit %d, out %q, err %q; want exit 1 saying the graph would vanish", strings.Join(args, " "), code, out, errs)
		}
	}
}
