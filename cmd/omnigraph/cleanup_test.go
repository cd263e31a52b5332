package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// storeFiles counts the files under a local graph directory.
func storeFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestCLICleanupPreviewThenConfirm pins the rules of `omnigraph cleanup`: a
// preview deletes nothing, --confirm removes what the preview listed and
// no query answer changes, and a missing retention is a usage error.
func TestCLICleanupPreviewThenConfirm(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "g")
	mustCLI(t, "init", "--schema", writeSchema(t), dir)
	for i := 0; i < 12; i++ {
		mustCLI(t, "mutate", "--no-auto-optimize", "-e", fmt.Sprintf(`mutation m() { insert Person { name: "p%02d", age: %d } }`, i, i), "--store", dir)
	}
	const count = `query n() { match { $p: Person } return { count($p) as people, sum($p.age) as ages } }`
	before := mustCLI(t, "query", "-e", count, "--format", "json", "--store", dir)

	if code, _, _ := cli(t, "cleanup", "--store", dir); code != exitUsage {
		t.Fatalf("cleanup without a retention: exit %d, want %d", code, exitUsage)
	}
	files := storeFiles(t, dir)
	var preview struct {
		Preview bool `json:"preview"`
		Objects int  `json:"objects"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, "cleanup", "--keep", "2", "--json", "--store", dir)), &preview); err != nil {
		t.Fatal(err)
	}
	if !preview.Preview || preview.Objects == 0 {
		t.Fatalf("preview = %+v, want a preview that lists objects", preview)
	}
	if got := storeFiles(t, dir); got != files {
		t.Fatalf("the preview changed the store: %d files, was %d", got, files)
	}
	var done struct {
		Preview bool `json:"preview"`
		Objects int  `json:"objects"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, "cleanup", "--keep", "2", "--confirm", "--json", "--store", dir)), &done); err != nil {
		t.Fatal(err)
	}
	if done.Preview || done.Objects != preview.Objects {
		t.Fatalf("confirm = %+v, want the %d objects the preview listed", done, preview.Objects)
	}
	if got := storeFiles(t, dir); got >= files {
		t.Fatalf("confirm left %d files, was %d", got, files)
	}
	if after := mustCLI(t, "query", "-e", count, "--format", "json", "--store", dir); after != before {
		t.Fatalf("cleanup changed an answer:\nbefore %s\nafter  %s", before, after)
	}
	// main's history beyond the retention is pruned: commit list still
	// lists all 13 commits, the ten pruned ones (versions 2..11) marked;
	// commit show still shows one; time travel to one says cleaned up.
	var list struct {
		Commits []struct {
			ID        string `json:"id"`
			Version   uint64 `json:"manifest_version"`
			CleanedUp bool   `json:"cleaned_up"`
		} `json:"commits"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, "commit", "list", "--json", "--store", dir)), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Commits) != 13 {
		t.Fatalf("commit list has %d commits after cleanup, want 13", len(list.Commits))
	}
	pruned := ""
	for _, c := range list.Commits {
		if c.CleanedUp != (c.Version >= 2 && c.Version <= 11) {
			t.Fatalf("commit at version %d: cleaned_up %v", c.Version, c.CleanedUp)
		}
		if c.Version == 5 {
			pruned = c.ID
		}
	}
	if text := mustCLI(t, "commit", "list", "--store", dir); strings.Count(text, "(cleaned up)") != 10 {
		t.Fatalf("commit list marks %d commits cleaned up, want 10:\n%s", strings.Count(text, "(cleaned up)"), text)
	}
	if show := mustCLI(t, "commit", "show", pruned, "--store", dir); !strings.Contains(show, pruned) || !strings.Contains(show, "cleaned up") {
		t.Fatalf("commit show of a pruned commit:\n%s", show)
	}
	if code, _, stderr := cli(t, "query", "-e", count, "--snapshot", pruned, "--store", dir); code == 0 || !strings.Contains(stderr, "removed by cleanup") || strings.Contains(stderr, "__manifest") {
		t.Fatalf("time travel to a pruned commit: exit %d, %s", code, stderr)
	}
	mustCLI(t, "mutate", "-e", `mutation m() { insert Person { name: "late", age: 1 } }`, "--store", dir)
}
