package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestCLIBranchMergeAndChanges: branch merge prints its outcome, conflicts
// exit 5 with every conflict in --json, --delete-branch deletes the source,
// and commit changes / diff print the entity changes.
func TestCLIBranchMergeAndChanges(t *testing.T) {
	url := "mem://cli-merge"
	mustCLI(t, "init", "--schema", writeSchema(t), url)
	mustCLI(t, "mutate", "-e", `insert Person { name: "ada" }`, "--store", url)
	genesis := ""
	{
		_, out, _ := cli(t, "commit", "list", "--json", "--store", url)
		var v struct {
			Commits []struct {
				ID string `json:"id"`
			} `json:"commits"`
		}
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatal(err)
		}
		genesis = v.Commits[len(v.Commits)-1].ID
	}
	mustCLI(t, "branch", "create", "f", "--store", url)
	mustCLI(t, "branch", "create", "g", "--store", url)
	mustCLI(t, "mutate", "-e", `update Person set { age: 1 } where name = "ada"`, "--branch", "f", "--store", url)
	mustCLI(t, "mutate", "-e", `update Person set { age: 2 } where name = "ada"`, "--branch", "g", "--store", url)

	out := mustCLI(t, "branch", "merge", "f", "--json", "--store", url)
	var res struct {
		Outcome string `json:"outcome"`
		Commit  struct {
			ID      string   `json:"id"`
			Parents []string `json:"parents"`
		} `json:"commit"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Outcome != "fast_forward" || len(res.Commit.Parents) != 2 {
		t.Fatalf("merge f: %s (%v)", out, err)
	}

	out = mustCLI(t, "commit", "changes", res.Commit.ID, "--json", "--store", url)
	var ch struct {
		Changes []struct {
			Op     string         `json:"op"`
			ID     string         `json:"id"`
			Before map[string]any `json:"before"`
			After  map[string]any `json:"after"`
		} `json:"changes"`
	}
	if err := json.Unmarshal([]byte(out), &ch); err != nil || len(ch.Changes) != 1 || ch.Changes[0].Op != "update" || ch.Changes[0].ID != "ada" ||
		ch.Changes[0].Before["age"] != nil || ch.Changes[0].After["age"] != float64(1) {
		t.Fatalf("commit changes: %s (%v)", out, err)
	}
	if out := mustCLI(t, "commit", "changes", res.Commit.ID, "--op", "insert", "--store", url); !strings.Contains(out, "0 changes") {
		t.Errorf("--op insert: %s", out)
	}
	code, _, errs := cli(t, "commit", "changes", genesis, "--json", "--store", url)
	if code != exitError || !strings.Contains(errs, `"parentless_commit"`) {
		t.Errorf("genesis: %d %s", code, errs)
	}

	// g changed ada differently: a conflict, exit 5, nothing written.
	code, _, errs = cli(t, "branch", "merge", "g", "--store", url)
	if code != exitMergeConflict || !strings.Contains(errs, "divergent_update") {
		t.Fatalf("conflict: %d %s", code, errs)
	}
	code, out, _ = cli(t, "branch", "merge", "g", "--into", "main", "--json", "--store", url)
	var conf struct {
		Conflicts []struct {
			Kind, EntityID string
		} `json:"merge_conflicts"`
	}
	if err := json.Unmarshal([]byte(out), &conf); code != exitMergeConflict || err != nil || len(conf.Conflicts) != 1 || conf.Conflicts[0].Kind != "divergent_update" {
		t.Fatalf("conflict json: %d %s", code, out)
	}
	out = mustCLI(t, "diff", "main", "g", "--json", "--store", url)
	if !strings.Contains(out, `"op": "update"`) || !strings.Contains(out, `"age": 2`) {
		t.Errorf("diff: %s", out)
	}

	// Merging f again is up to date; --delete-branch deletes it.
	out = mustCLI(t, "branch", "merge", "f", "--delete-branch", "--json", "--store", url)
	if !strings.Contains(out, `"already_up_to_date"`) || !strings.Contains(out, `"branch_deleted": true`) {
		t.Errorf("merge again: %s", out)
	}
	if out := mustCLI(t, "branch", "list", "--store", url); strings.Contains(out, "f ") {
		t.Errorf("f still listed: %s", out)
	}
	// A failed delete is a warning: main cannot be deleted.
	mustCLI(t, "branch", "create", "h", "--store", url)
	mustCLI(t, "mutate", "-e", `insert Person { name: "cy" }`, "--store", url)
	code, out, errs = cli(t, "branch", "merge", "main", "--into", "h", "--delete-branch", "--json", "--store", url)
	if code != exitOK || !strings.Contains(out, `"branch_deleted": false`) || !strings.Contains(out, `"branch_delete_error"`) || !strings.Contains(errs, "warning") {
		t.Errorf("failed delete: %d %s %s", code, out, errs)
	}
	if code, _, _ := cli(t, "branch", "merge", "main", "--store", url); code != exitUsage {
		t.Errorf("SRC = TGT: exit %d, want usage", code)
	}
}
