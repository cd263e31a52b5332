package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInputFilesMayStartWithBOM pins the rule that a .pg schema, an NDJSON
// load file and a .gq query file that start with a UTF-8 byte order mark are
// read as if it were not there.
func TestInputFilesMayStartWithBOM(t *testing.T) {
	d := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(d, name)
		if err := os.WriteFile(p, []byte("\ufeff"+text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	schema := write("s.pg", cliSchema)
	data := write("d.jsonl", `{"type":"Person","data":{"name":"ada","age":36}}`+"\n"+`{"type":"Person","data":{"name":"bo","age":29}}`+"\n")
	query := write("q.gq", `query q() { match { $p: Person } return { $p.name, $p.age } order { $p.name } }`)
	dir := filepath.Join(d, "g")
	mustCLI(t, "init", "--schema", schema, dir)
	if out := mustCLI(t, "load", "--data", data, "--mode", "append", dir); !strings.Contains(out, "loaded 2 nodes") {
		t.Fatalf("load: %s", out)
	}
	if out := mustCLI(t, "query", "--query", query, "--format", "csv", "--store", dir); out != "p.name,p.age\nada,36\nbo,29\n" {
		t.Fatalf("query = %q", out)
	}
	if src := mustCLI(t, "schema", "show", "--store", dir); strings.HasPrefix(src, "\ufeff") {
		t.Fatalf("the accepted schema kept the BOM: %q", src[:8])
	}
}

// TestSchemaErrorNamesTheFile pins the rule that init's schema errors name
// the file given to --schema, not a made-up schema.pg.
func TestSchemaErrorNamesTheFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "people.pg")
	if err := os.WriteFile(p, []byte("node Person {\n  name: Strng @key\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := cli(t, "init", "--schema", p, filepath.Join(t.TempDir(), "g"))
	if code != exitError || !strings.Contains(errs, p+":2:9: unknown type \"Strng\"") || strings.Contains(errs, "schema.pg") {
		t.Fatalf("exit %d, %q; want an error naming %s:2:9", code, errs, p)
	}
}
