package main

import (
	"encoding/json"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// listCommitIDs runs commit list --json with extra flags and returns the ids,
// newest first.
func listCommitIDs(t *testing.T, url string, extra ...string) []string {
	t.Helper()
	var out struct {
		Commits []struct {
			ID     string `json:"id"`
			Branch string `json:"branch"`
		} `json:"commits"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, append([]string{"commit", "list", "--store", url, "--json"}, extra...)...)), &out); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range out.Commits {
		ids = append(ids, c.ID)
	}
	return ids
}

// headOf returns the head commit id of branch.
func headOf(t *testing.T, url, branch string) string {
	t.Helper()
	ids := listCommitIDs(t, url, "--branch", branch, "--limit", "1")
	if len(ids) != 1 {
		t.Fatalf("no head commit on %s", branch)
	}
	return ids[0]
}

// TestMergedAndDeletedBranchStaysReadable: after `branch merge review
// --into main --delete-branch` (a fast-forward), main's history lists the
// review commits (commit list walks both parents; --first-parent shows
// main's own line), and every read of the merged commit works: commit
// changes, query --snapshot, diff and export --snapshot (on main they
// failed with `table: not found: version 4 of branch "review@1"`). Once
// cleanup's retention no longer keeps the merge, the same reads say the
// data was removed by cleanup and name no internal table branch, and the
// commits stay listed.
func TestMergedAndDeletedBranchStaysReadable(t *testing.T) {
	url := filepath.Join(t.TempDir(), "g")
	mustCLI(t, "init", "--schema", writeSchema(t), url)
	mustCLI(t, "mutate", "-e", `insert Person {name: "ada", age: 36}`, "--store", url)
	base := headOf(t, url, "main")
	mustCLI(t, "branch", "create", "review", "--store", url)
	mustCLI(t, "mutate", "-e", `insert Person {name: "bo", age: 20}`, "--branch", "review", "--store", url)
	mustCLI(t, "mutate", "-e", `update Person set { age: 37 } where name = "ada"`, "--branch", "review", "--store", url)
	rev := headOf(t, url, "review")
	revFirst := listCommitIDs(t, url, "--branch", "review", "--limit", "2")[1]
	out := mustCLI(t, "branch", "merge", "review", "--into", "main", "--delete-branch", "--store", url, "--json")
	if !strings.Contains(out, `"fast_forward"`) || !strings.Contains(out, `"branch_deleted": true`) {
		t.Fatalf("merge: %s", out)
	}
	merge := headOf(t, url, "main")

	// History: both parents by default, main's own line with --first-parent.
	all := listCommitIDs(t, url)
	if len(all) < 4 || all[0] != merge || all[1] != rev || all[2] != revFirst || !slices.Contains(all, base) {
		t.Fatalf("commit list after the merge: %v; want the merge, then review's two commits, then main's", all)
	}
	fp := listCommitIDs(t, url, "--first-parent")
	if len(fp) == 0 || fp[0] != merge || slices.Contains(fp, rev) || slices.Contains(fp, revFirst) || fp[1] != base {
		t.Fatalf("commit list --first-parent: %v; want main's own line (no review commits)", fp)
	}

	people := `query q() { match { $p: Person } return { $p.name, $p.age } order { $p.name } }`
	reads := func() [][]string {
		return [][]string{
			{"commit", "changes", rev, "--store", url},
			{"query", "-e", people, "--snapshot", rev, "--store", url},
			{"diff", base, rev, "--store", url},
			{"export", "--snapshot", rev, "--store", url},
			{"commit", "changes", revFirst, "--store", url},
		}
	}
	for _, args := range reads() {
		code, out, errs := cli(t, args...)
		if code != exitOK {
			t.Fatalf("omnigraph %s after the merge and delete: exit %d: %s", strings.Join(args, " "), code, errs)
		}
		switch args[0] {
		case "query":
			if !strings.Contains(out, "ada") || !strings.Contains(out, "37") || !strings.Contains(out, "bo") {
				t.Fatalf("query --snapshot of the merged commit: %s", out)
			}
		case "export":
			if !strings.Contains(out, `"bo"`) || !strings.Contains(out, "37") {
				t.Fatalf("export --snapshot of the merged commit: %s", out)
			}
		case "diff":
			if !strings.Contains(out, "bo") || !strings.Contains(out, "ada") {
				t.Fatalf("diff to the merged commit: %s", out)
			}
		}
	}

	// Two more commits on main: a retention of 1 no longer keeps the merge.
	mustCLI(t, "mutate", "-e", `insert Person {name: "cy"}`, "--store", url)
	mustCLI(t, "mutate", "-e", `insert Person {name: "di"}`, "--store", url)
	mustCLI(t, "cleanup", "--keep", "1", "--confirm", "--store", url)
	for _, args := range reads() {
		code, _, errs := cli(t, args...)
		if code == exitOK || !strings.Contains(errs, "removed by cleanup") || strings.Contains(errs, "review@") || strings.Contains(errs, "not found: version") {
			t.Fatalf("omnigraph %s after cleanup: exit %d: %s; want a refusal saying it was removed by cleanup, naming no table branch", strings.Join(args, " "), code, errs)
		}
	}
	if all := listCommitIDs(t, url); !slices.Contains(all, rev) || !slices.Contains(all, revFirst) {
		t.Fatalf("commit list after cleanup: %v; the merged commits stay listed", all)
	}
	// The deleted branch's table forks went with the retention.
	err := filepath.WalkDir(url, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.Contains(p, "review@") {
			t.Errorf("cleanup left the deleted branch's table fork: %s", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// main itself is whole.
	if got := personNames(t, url); len(got) != 4 || got["bo"] != 1 {
		t.Fatalf("main after cleanup: %v", got)
	}
}
