package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
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
