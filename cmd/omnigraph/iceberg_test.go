package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type icebergSyncOutput struct {
	Tables []struct {
		Table struct {
			Namespace string `json:"namespace"`
			Name      string `json:"name"`
		} `json:"table"`
		MetadataLocation string `json:"metadata_location"`
		MetadataVersion  int    `json:"metadata_version"`
		Added            int    `json:"snapshots_added"`
		Expired          int    `json:"snapshots_expired"`
	} `json:"tables"`
	Branches []string `json:"branches"`
}

func syncJSON(t *testing.T, args ...string) icebergSyncOutput {
	t.Helper()
	var out icebergSyncOutput
	raw := mustCLI(t, append([]string{"iceberg", "sync", "--json"}, args...)...)
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		t.Fatalf("iceberg sync --json: %v\n%s", err, raw)
	}
	return out
}

// TestCLIIcebergSync pins `omnigraph iceberg sync`: --json names each
// table and its metadata file (which exists where it says), a second run
// with nothing new writes nothing, one commit later only its table moves,
// bad invocations (an unknown metadata codec among them) are refused with
// nothing written, metadata files are plain JSON by default, and cleanup expires
// the snapshots beyond its retention.
func TestCLIIcebergSync(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "g")
	mustCLI(t, "init", "--schema", writeSchema(t), dir)
	mustCLI(t, "mutate", "--no-auto-optimize", "-e", `mutation m() { insert Person { name: "ada", age: 36 } }`, "--store", dir)

	if code, _, errs := cli(t, "iceberg", "--store", dir); code != exitUsage {
		t.Fatalf("iceberg without a subcommand: exit %d (%s), want %d", code, errs, exitUsage)
	}
	if code, _, errs := cli(t, "iceberg", "sync", "--branch", "nope", "--store", dir); code != exitError || !strings.Contains(errs, "nope") {
		t.Fatalf("sync of a missing branch: exit %d: %s", code, errs)
	}
	if code, _, errs := cli(t, "iceberg", "sync", "--metadata-compression", "zstd", "--store", dir); code != exitUsage || !strings.Contains(errs, "none or gzip") {
		t.Fatalf("sync with an unknown metadata codec: exit %d: %s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "_iceberg")); err == nil {
		t.Fatal("a refused sync wrote Iceberg metadata")
	}

	first := syncJSON(t, "--store", dir)
	if len(first.Tables) == 0 || len(first.Branches) != 1 || first.Branches[0] != "main" {
		t.Fatalf("first sync: %+v", first)
	}
	versions := map[string]int{}
	for _, tb := range first.Tables {
		path, ok := strings.CutPrefix(tb.MetadataLocation, "file://")
		if !ok || !strings.HasSuffix(path, fmt.Sprintf("/_iceberg/%s/%s/metadata/v%d.metadata.json", tb.Table.Namespace, tb.Table.Name, tb.MetadataVersion)) {
			t.Fatalf("metadata location %q of %s.%s", tb.MetadataLocation, tb.Table.Namespace, tb.Table.Name)
		}
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("--json names %s, which does not exist: %v", path, err)
		}
		versions[tb.Table.Namespace+"."+tb.Table.Name] = tb.MetadataVersion
	}
	if versions["nodes.Person"] == 0 {
		t.Fatalf("no Person table in %+v", first)
	}

	if again := syncJSON(t, "--store", dir); len(again.Tables) != 0 {
		t.Fatalf("a sync with nothing new wrote %+v", again.Tables)
	}
	if out := mustCLI(t, "iceberg", "sync", "--store", dir); !strings.Contains(out, "up to date") {
		t.Fatalf("text output of an idle sync: %q", out)
	}

	mustCLI(t, "mutate", "--no-auto-optimize", "-e", `mutation m() { insert Person { name: "bob", age: 41 } }`, "--store", dir)
	next := syncJSON(t, "--branch", "main", "--store", dir)
	if len(next.Tables) != 1 || next.Tables[0].Table.Name != "Person" || next.Tables[0].Added != 1 || next.Tables[0].MetadataVersion != versions["nodes.Person"]+1 {
		t.Fatalf("sync after one Person commit: %+v", next)
	}

	mustCLI(t, "cleanup", "--keep", "1", "--confirm", "--store", dir)
	data, err := os.ReadFile(filepath.Join(dir, "_iceberg", "nodes", "Person", "metadata", "version-hint.text"))
	if err != nil || strings.TrimSpace(string(data)) != fmt.Sprint(versions["nodes.Person"]+2) {
		t.Fatalf("after cleanup, Person's version hint is %q (%v), want the expiry's metadata v%d", data, err, versions["nodes.Person"]+2)
	}
}
