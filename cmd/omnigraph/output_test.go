package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// textGraph creates a local graph of Notes whose optional text holds NULL,
// the string "null", the empty string, control characters and values that
// look like other types.
func textGraph(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	schema := filepath.Join(d, "notes.pg")
	if err := os.WriteFile(schema, []byte("node Note {\n  slug: String @key\n  text: String?\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(d, "notes.jsonl")
	lines := `{"type":"Note","data":{"slug":"a-null"}}
{"type":"Note","data":{"slug":"b-null-string","text":"null"}}
{"type":"Note","data":{"slug":"c-empty","text":""}}
{"type":"Note","data":{"slug":"d-control","text":"one\ntwo\tthree\rfour\u0007"}}
{"type":"Note","data":{"slug":"e-number","text":"42"}}
{"type":"Note","data":{"slug":"f-plain","text":"hello world"}}
{"type":"Note","data":{"slug":"g-quote","text":"say \"hi\""}}
`
	if err := os.WriteFile(data, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(d, "g")
	mustCLI(t, "init", "--schema", schema, dir)
	mustCLI(t, "load", "--data", data, "--mode", "append", dir)
	return dir
}

// TestQueryTextCellsAreUnambiguous pins the table/kv rendering rule: NULL
// prints as a bare null, a string that could be read as another value (or
// that holds control characters) prints double-quoted with JSON escapes, so
// every row stays on one line and no two values print alike. CSV keeps its
// own quoting and prints NULL as an empty field.
func TestQueryTextCellsAreUnambiguous(t *testing.T) {
	dir := textGraph(t)
	q := `query q() { match { $n: Note } return { $n.slug, $n.text } order { $n.slug } }`
	want := map[string]string{
		"a-null":        `null`,
		"b-null-string": `"null"`,
		"c-empty":       `""`,
		"d-control":     `"one\ntwo\tthree\rfour\u0007"`,
		"e-number":      `"42"`,
		"f-plain":       `hello world`,
		"g-quote":       `say "hi"`,
	}

	out := mustCLI(t, "query", "-e", q, "--store", dir)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	// header, 7 rows, footer: a newline or tab inside a value would add lines
	// or shift columns.
	if len(lines) != 9 {
		t.Fatalf("table has %d lines, want 9:\n%s", len(lines), out)
	}
	for _, line := range lines[1:8] {
		id, text, _ := strings.Cut(line, " ")
		text = strings.TrimLeft(text, " ")
		if w, ok := want[id]; !ok || text != w {
			t.Errorf("table row %q: text %q, want %q", id, text, w)
		}
	}

	out = mustCLI(t, "query", "-e", q, "--format", "kv", "--store", dir)
	for id, w := range want {
		if !strings.Contains(out, "n.slug  "+id+"\nn.text  "+w+"\n") {
			t.Errorf("kv output lacks the block of %s with text %s:\n%s", id, w, out)
		}
	}

	out = mustCLI(t, "query", "-e", q, "--format", "csv", "--store", dir)
	for _, w := range []string{"a-null,\n", "b-null-string,null\n", "d-control,\"one\ntwo\tthree\rfour\a\"\n", "g-quote,\"say \"\"hi\"\"\"\n"} {
		if !strings.Contains(out, w) {
			t.Errorf("csv output lacks %q:\n%q", w, out)
		}
	}
}
