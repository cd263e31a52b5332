package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEmbedCommand fills a load file's missing vectors offline from the
// schema's @embed, loads it, and finds a line by text with nearest(); the
// original's spec JSON works too, and --clean removes the vectors.
func TestEmbedCommand(t *testing.T) {
	t.Setenv("OMNIGRAPH_EMBEDDINGS_MOCK", "")
	t.Setenv("OMNIGRAPH_EMBED_PROVIDER", "")
	t.Setenv("OMNIGRAPH_EMBED_MODEL", "")
	dir := t.TempDir()
	schema := filepath.Join(dir, "s.pg")
	os.WriteFile(schema, []byte("node Doc {\n  slug: String @key\n  title: String\n  v: Vector(8)? @embed(\"title\")\n}\n"), 0o644)
	in := filepath.Join(dir, "in.jsonl")
	os.WriteFile(in, []byte(`{"type":"Doc","data":{"slug":"a","title":"alpha guide"}}
{"type":"Doc","data":{"slug":"b","title":"beta manual"}}
{"type":"Doc","data":{"slug":"c","title":"gamma notes"}}
`), 0o644)
	out := filepath.Join(dir, "out.jsonl")
	if got := mustCLI(t, "embed", "--input", in, "--output", out, "--schema", schema); got != out+": 3 records, 3 selected, 3 embedded, 0 cleaned (fill_missing, model mock)\n" {
		t.Fatalf("embed: %q", got)
	}
	raw, _ := os.ReadFile(out)
	if strings.Count(string(raw), `"v":[`) != 3 {
		t.Fatalf("output: %s", raw)
	}
	store := filepath.Join(dir, "g")
	mustCLI(t, "init", "--schema", schema, store)
	mustCLI(t, "load", "--data", out, "--mode", "overwrite", "--store", store)
	// The vectors embed "type: Doc\ntitle: ..."; the same text finds its line first.
	q := `query q($t: String) { match { $d: Doc } return { $d.slug } order { nearest($d.v, $t) } limit 1 }`
	for slug, title := range map[string]string{"a": "alpha guide", "b": "beta manual", "c": "gamma notes"} {
		if got := mustCLI(t, "query", "-e", q, "--params", `{"t": "type: Doc\ntitle: `+title+`"}`, "--format", "csv", "--store", store); got != "d.slug\n"+slug+"\n" {
			t.Errorf("%s: %q", title, got)
		}
	}
	spec := filepath.Join(dir, "spec.json")
	os.WriteFile(spec, []byte(`{"dimension": 8, "types": {"Doc": {"target": "v", "fields": ["title"]}}}`), 0o644)
	again := filepath.Join(dir, "again.jsonl")
	mustCLI(t, "embed", "--input", in, "--output", again, "--spec", spec)
	if b, _ := os.ReadFile(again); string(b) != string(raw) {
		t.Errorf("spec and schema disagree:\n%s\n%s", b, raw)
	}
	cleaned := filepath.Join(dir, "clean.jsonl")
	if got := mustCLI(t, "embed", "--input", out, "--output", cleaned, "--schema", schema, "--clean", "--json"); !strings.Contains(got, `"cleaned_records": 3`) {
		t.Errorf("clean: %s", got)
	}
	if b, _ := os.ReadFile(cleaned); strings.Contains(string(b), `"v"`) {
		t.Errorf("clean left vectors: %s", b)
	}
	if code, _, _ := cli(t, "embed", "--input", in, "--output", out); code != exitUsage {
		t.Errorf("no schema or spec: exit %d", code)
	}
}
