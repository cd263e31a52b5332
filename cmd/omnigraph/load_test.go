package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/load"
	"github.com/omnigraph-go/omnigraph/graph/mutate"
)

// runIn runs one in-process invocation with stdin.
func runIn(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// rowCount opens the graph at url and counts the live rows of one table on
// branch.
func rowCount(t *testing.T, url, branch, key string) int64 {
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
	snap, err := g.Snapshot(ctx, branch)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := snap.OpenTable(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	return ds.RowCount()
}

func headCommit(t *testing.T, url string) string {
	t.Helper()
	code, out, errs := runIn(t, "", "commit", "list", "--json", "--store", url)
	if code != exitOK {
		t.Fatalf("commit list: %d %s", code, errs)
	}
	var v struct {
		Commits []graph.CommitInfo `json:"commits"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || len(v.Commits) == 0 {
		t.Fatalf("commit list output %q: %v", out, err)
	}
	return v.Commits[0].ID
}

func TestCLILoad(t *testing.T) {
	for _, tc := range []struct{ name, url string }{
		{"mem", fmt.Sprintf("mem://cli-load-%d", time.Now().UnixNano())},
		{"local", filepath.Join(t.TempDir(), "g")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := tc.url
			if code, _, errs := runIn(t, "", "init", "--schema", "../../examples/social.pg", url); code != exitOK {
				t.Fatalf("init: %s", errs)
			}
			code, out, errs := runIn(t, "", "load", "--data", "../../examples/social.jsonl", "--mode", "append", url)
			if code != exitOK || !strings.Contains(out, "loaded 54 nodes and 165 edges") {
				t.Fatalf("load: exit %d\n%s\n%s", code, out, errs)
			}
			if errs != "" {
				t.Errorf("stderr is not a terminal, yet the load wrote %q", errs)
			}
			if n := rowCount(t, url, "main", "node:Person"); n != 30 {
				t.Errorf("%d people", n)
			}
			head := headCommit(t, url)
			// Appending the same file again: key_conflict, nothing changes.
			code, _, errs = runIn(t, "", "load", "--data", "../../examples/social.jsonl", "--mode", "append", "--store", url)
			if code != exitError || !strings.Contains(errs, "key_conflict") || !strings.Contains(errs, "line 1") {
				t.Errorf("second append: exit %d, %s", code, errs)
			}
			// --mode is required, and says what the modes are.
			code, _, errs = runIn(t, "", "load", "--data", "../../examples/social.jsonl", url)
			if code != exitUsage || !strings.Contains(errs, "--mode is required") || !strings.Contains(errs, "merge") {
				t.Errorf("no mode: exit %d, %s", code, errs)
			}
			// A bad line from stdin names the line; nothing changes.
			bad := `{"type":"Person","data":{"handle":"new","name":"N"}}` + "\n" + `{"type":"Person","data":{"handle":"x","name":"X","age":-1}}` + "\n"
			code, _, errs = runIn(t, bad, "load", "--data", "-", "--mode", "merge", url)
			if code != exitError || !strings.Contains(errs, "line 2") || !strings.Contains(errs, "@range") {
				t.Errorf("bad stdin: exit %d, %s", code, errs)
			}
			if got := headCommit(t, url); got != head {
				t.Errorf("failed loads moved the head %s -> %s", head, got)
			}
			// Merge from stdin with --json.
			code, out, errs = runIn(t, `{"type":"Person","data":{"handle":"alice","name":"Alice Renamed"}}`, "load", "--data", "-", "--mode", "merge", "--json", url)
			var res load.Result
			if code != exitOK || json.Unmarshal([]byte(out), &res) != nil || res.Commit == nil || res.Nodes != 1 {
				t.Errorf("merge: exit %d %s %s", code, out, errs)
			}
			if n := rowCount(t, url, "main", "node:Person"); n != 30 {
				t.Errorf("merge changed the count to %d", n)
			}
		})
	}
}

func TestCLIMutate(t *testing.T) {
	url := fmt.Sprintf("mem://cli-mutate-%d", time.Now().UnixNano())
	if code, _, errs := runIn(t, "", "init", "--schema", "../../examples/social.pg", url); code != exitOK {
		t.Fatal(errs)
	}
	if code, _, errs := runIn(t, "", "load", "--data", "../../examples/social.jsonl", "--mode", "append", url); code != exitOK {
		t.Fatal(errs)
	}
	gq := filepath.Join(t.TempDir(), "m.gq")
	if err := os.WriteFile(gq, []byte(`
mutation add_friend($h: String, $name: String, $friend: String) {
  insert Person { handle: $h, name: $name }
  insert Knows { from: $h, to: $friend }
}
mutation drop($h: String) {
  delete Person where handle = $h
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runIn(t, "", "mutate", "--query", gq, "add_friend", "--params", `{"h":"neo","name":"Neo","friend":"alice"}`, "--store", url)
	if code != exitOK || !strings.Contains(out, "1 nodes and 1 edges affected") {
		t.Fatalf("add_friend: exit %d %s %s", code, out, errs)
	}
	head := headCommit(t, url)
	// --if-commit with a stale id: exit 4, nothing written.
	code, _, errs = runIn(t, "", "mutate", "-e", `update Person set { age: 33 } where handle = "neo"`, "--if-commit", "01KA3Q8J5YV9H0M3WQ8X2C4T7B", "--store", url)
	if code != exitConflict || !strings.Contains(errs, "precondition failed") {
		t.Errorf("stale --if-commit: exit %d %s", code, errs)
	}
	if headCommit(t, url) != head {
		t.Error("a failed CAS moved the head")
	}
	code, out, errs = runIn(t, "", "mutate", "-e", `update Person set { age: 33 } where handle = "neo"`, "--if-commit", head, "--json", "--store", url)
	var res mutate.Result
	if code != exitOK || json.Unmarshal([]byte(out), &res) != nil || res.AffectedNodes != 1 || res.Commit == nil {
		t.Errorf("--if-commit head: exit %d %s %s", code, out, errs)
	}
	// D₂: a mixed query is refused before anything runs.
	code, _, errs = runIn(t, "", "mutate", "-e", `insert Person { handle: "m", name: "M" } delete Person where handle = "neo"`, "--store", url)
	if code != exitError || !strings.Contains(errs, "Split it") {
		t.Errorf("mixed: exit %d %s", code, errs)
	}
	// Delete cascades to the node's edges.
	knows := rowCount(t, url, "main", "edge:Knows")
	code, out, errs = runIn(t, "", "mutate", "--query", gq, "drop", "--params", `{"h":"neo"}`, "--store", url)
	if code != exitOK || !strings.Contains(out, "1 nodes and 1 edges affected") {
		t.Errorf("drop: exit %d %s %s", code, out, errs)
	}
	if got := rowCount(t, url, "main", "edge:Knows"); got != knows-1 {
		t.Errorf("Knows %d -> %d", knows, got)
	}
	// Usage errors.
	if code, _, errs := runIn(t, "", "mutate", "--store", url); code != exitUsage || !strings.Contains(errs, "--query FILE.gq") {
		t.Errorf("no query: exit %d %s", code, errs)
	}
	if code, _, errs := runIn(t, "", "mutate", "-e", `insert Person { handle: "p", name: "P" }`, "--params", "[1]", "--store", url); code != exitUsage || !strings.Contains(errs, "JSON object") {
		t.Errorf("bad params: exit %d %s", code, errs)
	}
}

// --quiet prints nothing on success; --json is the summary: the result,
// the bytes read, the time and the rate.
func TestCLILoadQuietAndJSONSummary(t *testing.T) {
	url := filepath.Join(t.TempDir(), "g")
	if code, _, errs := runIn(t, "", "init", "--schema", "../../examples/social.pg", url); code != exitOK {
		t.Fatalf("init: %s", errs)
	}
	data, err := os.ReadFile("../../examples/social.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	file := filepath.Join(t.TempDir(), "people.jsonl")
	var people []string
	for _, l := range lines {
		if strings.HasPrefix(l, `{"type":"Person"`) {
			people = append(people, l)
		}
	}
	if err := os.WriteFile(file, []byte(strings.Join(people[:10], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runIn(t, "", "load", "--quiet", "--data", file, "--mode", "append", url)
	if code != exitOK || out != "" || errs != "" {
		t.Fatalf("--quiet: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if n := rowCount(t, url, "main", "node:Person"); n != 10 {
		t.Fatalf("--quiet loaded %d people, want 10", n)
	}
	if err := os.WriteFile(file, []byte(strings.Join(people[10:15], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = runIn(t, "", "load", "-q", "--json", "--data", file, "--mode", "append", url)
	var sum struct {
		Nodes         int            `json:"nodes"`
		Types         map[string]int `json:"types"`
		Commit        *graph.CommitInfo
		Bytes         int64   `json:"bytes"`
		Seconds       float64 `json:"seconds"`
		RowsPerSecond float64 `json:"rows_per_second"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &sum) != nil {
		t.Fatalf("--json: exit %d %q %q", code, out, errs)
	}
	want := int64(len(strings.Join(people[10:15], "")))
	if sum.Nodes != 5 || sum.Types["Person"] != 5 || sum.Commit == nil || sum.Bytes != want || sum.Seconds <= 0 || sum.RowsPerSecond <= 0 {
		t.Fatalf("summary %+v, want 5 Person nodes, a commit, %d bytes and a rate", sum, want)
	}
	// A bad file: --quiet still reports the error.
	if err := os.WriteFile(file, []byte(`{"type":"Person","data":{}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = runIn(t, "", "load", "--quiet", "--data", file, "--mode", "append", url)
	if code != exitError || out != "" || !strings.Contains(errs, "line 1") {
		t.Fatalf("bad file with --quiet: exit %d %q %q", code, out, errs)
	}
}

func TestLoadProgressLine(t *testing.T) {
	for _, tc := range []struct {
		phase            string
		done, read, size int64
		elapsed          time.Duration
		want             string
	}{
		{"parse", 1000, 250, 1000, 2 * time.Second, "parse    1000 lines  500 lines/s  0.0 MiB read   25%  ETA 6s"},
		{"parse", 1000, 250, 0, 2 * time.Second, "parse    1000 lines  500 lines/s  0.0 MiB read"},
		{"parse", 3_000_000, 150 << 20, 600 << 20, 10 * time.Second, "parse    3000000 lines  300000 lines/s  150.0 MiB read   25%  ETA 30s"},
		{"write", 4000, 1000, 1000, 4 * time.Second, "write    4000 lines  1000 lines/s"},
	} {
		if got := progressLine(tc.phase, tc.done, tc.read, tc.size, tc.elapsed); got != tc.want {
			t.Errorf("progressLine(%s, %d, %d/%d, %v) = %q, want %q", tc.phase, tc.done, tc.read, tc.size, tc.elapsed, got, tc.want)
		}
	}
}
