package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// TestCLIExportRebuild: the documented rebuild path on the quickstart
// graph. 'export --out FILE' writes FILE and the schema beside it (FILE.pg
// with the extension replaced); 'init --schema' + 'load --mode overwrite'
// of them gives a graph that answers the example queries alike and exports
// to the same bytes; stdout export is the same NDJSON.
func TestCLIExportRebuild(t *testing.T) {
	dir := t.TempDir()
	old, fresh := filepath.Join(dir, "old"), filepath.Join(dir, "new")
	mustCLI(t, "init", "--schema", "../../examples/social.pg", old)
	mustCLI(t, "load", "--data", "../../examples/social.jsonl", "--mode", "append", old)
	out := filepath.Join(dir, "graph.jsonl")
	msg := mustCLI(t, "export", "--out", out, "--store", old)
	if !strings.Contains(msg, "schema in "+filepath.Join(dir, "graph.pg")) {
		t.Fatalf("export said %q, want it to name the schema file", msg)
	}
	mustCLI(t, "init", "--schema", filepath.Join(dir, "graph.pg"), fresh)
	mustCLI(t, "load", "--data", out, "--mode", "overwrite", fresh)
	for _, q := range []string{"city_adults", "friends_of_friends", "headcount", "staff"} {
		params := map[string]string{"city_adults": `{"city":"Berlin","min":30}`, "friends_of_friends": `{"h":"alice"}`, "headcount": `{}`, "staff": `{"slug":"acme"}`}[q]
		a := mustCLI(t, "query", "--query", "../../examples/social.gq", q, "--params", params, "--format", "json", "--store", old)
		b := mustCLI(t, "query", "--query", "../../examples/social.gq", q, "--params", params, "--format", "json", "--store", fresh)
		strip := func(s string) string { // the commit ids differ; the rows may not
			var keep []string
			for _, l := range strings.Split(s, "\n") {
				if !strings.Contains(l, "commit") && !strings.Contains(l, "version") {
					keep = append(keep, l)
				}
			}
			return strings.Join(keep, "\n")
		}
		if strip(a) != strip(b) {
			t.Fatalf("query %s differs after the rebuild:\nold %s\nnew %s", q, a, b)
		}
	}
	first, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	second := mustCLI(t, "export", "--store", fresh)
	if !bytes.Equal(first, []byte(second)) || len(first) == 0 {
		t.Fatalf("re-export of the rebuilt graph differs:\n%s\n---\n%s", first, second)
	}
	// No temporary file is left beside the export.
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			t.Fatalf("export left %s behind", e.Name())
		}
	}
}

// TestExportServerModeMatchesLocal: export --server (a real 'omnigraph
// serve' child) writes the bytes export --store writes, for a branch head,
// another branch, a past commit and a type filter; with --out it writes
// the same file, the same schema beside it and the same --json summary
// (counts per type, branch, commit, schema identity); the server's export
// rebuilds the graph; a refusal keeps its exit code and JSON code.
func TestExportServerModeMatchesLocal(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "g")
	mustCLI(t, "init", "--schema", "../../examples/social.pg", store)
	var c struct {
		Commit struct {
			ID string `json:"id"`
		} `json:"commit"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, "load", "--data", "../../examples/social.jsonl", "--mode", "append", "--json", store)), &c); err != nil || c.Commit.ID == "" {
		t.Fatalf("load --json: %v %+v", err, c)
	}
	mustCLI(t, "branch", "create", "side", "--store", store)
	mustCLI(t, "mutate", "-e", `update Person set { age: 99 } where handle = "alice"`, "--branch", "side", "--store", store)
	mustCLI(t, "mutate", "-e", `delete Person where handle = "bob"`, "--store", store)
	base, srv, wait := startServe(t, "--store", store)

	for _, args := range [][]string{
		{},
		{"--branch", "side"},
		{"--snapshot", c.Commit.ID},
		{"--type", "Person", "--type", "Knows"},
	} {
		local := mustCLI(t, append([]string{"export", "--store", store}, args...)...)
		served := mustCLI(t, append([]string{"export", "--server", base}, args...)...)
		if local != served || strings.Count(local, "\n") < 10 {
			t.Fatalf("export %v: --server wrote %d bytes, --store %d (they differ)", args, len(served), len(local))
		}
	}
	for _, args := range [][]string{{}, {"--snapshot", c.Commit.ID}, {"--type", "Person"}} {
		var sums [2]string
		var files [2][]byte
		var schemas [2][]byte
		for i, where := range [][]string{{"--store", store}, {"--server", base}} {
			out := filepath.Join(dir, fmt.Sprintf("x%d.jsonl", i))
			sum := mustCLI(t, append(append([]string{"export", "--out", out, "--json"}, where...), args...)...)
			sums[i] = strings.ReplaceAll(sum, fmt.Sprintf("x%d.", i), "x.")
			files[i], _ = os.ReadFile(out)
			schemas[i], _ = os.ReadFile(strings.TrimSuffix(out, ".jsonl") + ".pg")
		}
		if sums[0] != sums[1] || !bytes.Equal(files[0], files[1]) || !bytes.Equal(schemas[0], schemas[1]) || len(schemas[0]) == 0 {
			t.Fatalf("export --out %v: summaries\n--store  %s\n--server %s\nfiles equal %v, schemas equal %v", args, sums[0], sums[1],
				bytes.Equal(files[0], files[1]), bytes.Equal(schemas[0], schemas[1]))
		}
	}
	// The server's export of a past commit rebuilds that commit.
	out := filepath.Join(dir, "old.jsonl")
	mustCLI(t, "export", "--out", out, "--snapshot", c.Commit.ID, "--server", base)
	fresh := filepath.Join(dir, "fresh")
	mustCLI(t, "init", "--schema", filepath.Join(dir, "old.pg"), fresh)
	mustCLI(t, "load", "--data", out, "--mode", "overwrite", fresh)
	want, _ := os.ReadFile(out)
	if got := mustCLI(t, "export", "--store", fresh); got != string(want) || !strings.Contains(got, `"handle":"bob"`) {
		t.Fatalf("the rebuilt graph exports %d bytes, the server's export of the commit was %d", len(got), len(want))
	}

	for _, args := range [][]string{
		{"--type", "Nope", "--out", filepath.Join(dir, "r.jsonl"), "--json"},
		{"--branch", "nope", "--out", filepath.Join(dir, "r.jsonl"), "--json"},
		{"--snapshot", "01M8V9Q6KVQVRHYA255KR9YTW5", "--out", filepath.Join(dir, "r.jsonl"), "--json"},
	} {
		lc, _, lerr := cli(t, append([]string{"export", "--store", store}, args...)...)
		sc, _, serr := cli(t, append([]string{"export", "--server", base}, args...)...)
		code := regexp.MustCompile(`"code":"[a-z_]+"`)
		if lc != sc || lc == exitOK || code.FindString(lerr) == "" || code.FindString(lerr) != code.FindString(serr) {
			t.Errorf("export %v: --store exit %d %s; --server exit %d %s", args, lc, lerr, sc, serr)
		}
		if _, err := os.Stat(filepath.Join(dir, "r.jsonl")); err == nil {
			t.Fatalf("export %v: a refused export left its --out file", args)
		}
	}

	srv.Process.Signal(syscall.SIGTERM)
	if code := wait(); code != 0 {
		t.Fatalf("serve: exit %d", code)
	}

	// A token that may read and export one branch only exports it through
	// the server as the store's owner does (its schema is asked of the
	// branch, not of the commit, which needs a read of the whole graph).
	tokens := filepath.Join(dir, "tokens.json")
	secret := strings.TrimSpace(mustCLI(t, "token", "add", "sider", "--tokens", tokens))
	policy := filepath.Join(dir, "policy.cedar")
	os.WriteFile(policy, []byte(`permit (principal == Omnigraph::Actor::"sider", action in [Omnigraph::Action::"read", Omnigraph::Action::"export"], resource == Omnigraph::Branch::"default/side");`+"\n"), 0o644)
	scoped, _, _ := startServe(t, "--store", store, "--tokens", tokens, "--policy", policy)
	sideOut := filepath.Join(dir, "side-scoped.jsonl")
	mustCLI(t, "export", "--branch", "side", "--out", sideOut, "--server", scoped, "--token", secret)
	mustCLI(t, "export", "--branch", "side", "--out", filepath.Join(dir, "side-local.jsonl"), "--store", store)
	for _, ext := range []string{".jsonl", ".pg"} {
		a, _ := os.ReadFile(filepath.Join(dir, "side-scoped"+ext))
		b, _ := os.ReadFile(filepath.Join(dir, "side-local"+ext))
		if !bytes.Equal(a, b) || len(a) == 0 {
			t.Fatalf("the branch-scoped export's %s differs from the local one (%d and %d bytes)", ext, len(a), len(b))
		}
	}
	if code, _, errs := cli(t, "export", "--server", scoped, "--token", secret, "--json", "--out", filepath.Join(dir, "r.jsonl")); code != exitError || !strings.Contains(errs, `"code":"forbidden"`) {
		t.Fatalf("the branch-scoped token exporting main: exit %d %s", code, errs)
	}
}

// TestTypeCounterAnyChunking: the per-type counts of export --server do
// not depend on where the stream's reads split the lines, and a long line
// (a Blob value) is passed on without being held.
func TestTypeCounterAnyChunking(t *testing.T) {
	long := strings.Repeat("A", 1<<20)
	stream := `{"type":"Person","data":{"id":"a"}}` + "\n" +
		`{"type":"Doc","data":{"id":"d","body":"base64:` + long + `"}}` + "\n" +
		`{"edge":"Knows","from":"a","to":"b","data":{"id":"k"}}` + "\n" +
		`{"type":"Person","data":{"id":"b"}}` + "\n"
	want := map[string]int{"Person": 2, "Doc": 1, "Knows": 1}
	for _, chunk := range []int{1, 2, 7, 255, 256, 257, 4096, len(stream)} {
		var out bytes.Buffer
		c := &typeCounter{w: &out, types: map[string]int{}}
		for p := stream; len(p) > 0; {
			n := min(chunk, len(p))
			if _, err := c.Write([]byte(p[:n])); err != nil {
				t.Fatal(err)
			}
			p = p[n:]
		}
		if out.String() != stream || c.bad != "" || fmt.Sprint(c.types) != fmt.Sprint(want) || cap(c.head) > 2*headMax {
			t.Fatalf("chunk %d: counts %v (want %v), bad %q, passed %d of %d bytes, head cap %d", chunk, c.types, want, c.bad, out.Len(), len(stream), cap(c.head))
		}
	}
	c := &typeCounter{w: io.Discard, types: map[string]int{}}
	c.Write([]byte("{\"nope\":1}\n"))
	if c.bad == "" {
		t.Fatal("a line of neither form was not noticed")
	}
}
