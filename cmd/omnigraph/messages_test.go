package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/internal/buildinfo"
	"github.com/omnigraph-go/omnigraph/server"
)

// cliGoInternals are what a CLI message must never show: Go's decoder
// words and type names.
var cliGoInternals = []string{"Go value", "Go struct", "Go type", "interface {}", "map[string]", "[]interface", "json:", "unmarshal", "github.com/", "json.Number", "float64", "%!"}

// TestCLIParamsSpeakJSON (issue 26 item 11): a malformed --params (or
// --params-file) of query and mutate is a usage error (exit 2) that says
// what was expected in JSON's terms, never Go's, and changes nothing.
func TestCLIParamsSpeakJSON(t *testing.T) {
	dir := queryGraph(t)
	head := headCommit(t, dir)
	cases := map[string]string{
		"array": `[1]`, "numbers": `[1,2]`, "string": `"x"`, "number": `5`, "null": `null`, "true": `true`,
		"cut": `{"a":1`, "multibyte": `{é}`, "two objects": `{"a":1}{}`, "bom inside": "{\ufeff}",
	}
	pf := filepath.Join(t.TempDir(), "p.json")
	for what, p := range cases {
		for _, args := range [][]string{
			{"query", "-e", `query q() { match { $p: Person } return { $p.name } }`, "--params", p, "--store", dir},
			{"mutate", "-e", `insert Person { name: "zed" }`, "--params", p, "--store", dir},
			{"query", "-e", `query q() { match { $p: Person } return { $p.name } }`, "--params-file", pf, "--store", dir},
		} {
			if err := os.WriteFile(pf, []byte(p), 0o644); err != nil {
				t.Fatal(err)
			}
			code, _, errs := cli(t, args...)
			if code != exitUsage || !strings.Contains(errs, "JSON") {
				t.Errorf("%s %s: exit %d %q, want a usage error about JSON", args[0], what, code, errs)
			}
			for _, bad := range cliGoInternals {
				if strings.Contains(errs, bad) {
					t.Errorf("%s %s: the message shows %q: %s", args[0], what, bad, errs)
				}
			}
			if what == "multibyte" && !strings.Contains(errs, "'é'") {
				t.Errorf("%s %s: %q does not quote the character", args[0], what, errs)
			}
		}
	}
	if got := headCommit(t, dir); got != head {
		t.Fatalf("refused invocations moved the head to %s", got)
	}
}

// TestCLIQuotesCharactersNotBytes (issue 26 item 12): every message that
// quotes a character of the user's input quotes the character (a rune),
// never its first byte: a branch name, the .pg and .gq lexers, NDJSON
// lines; a byte order mark inside a file is named as one.
func TestCLIQuotesCharactersNotBytes(t *testing.T) {
	dir := queryGraph(t)
	tmp := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		what string
		args []string
		want string
	}{
		{"branch create", []string{"branch", "create", "fé", "--store", dir}, `'é'`},
		{"branch create, first", []string{"branch", "create", "éa", "--store", dir}, `'é'`},
		{"branch create, cjk", []string{"branch", "create", "review/日本", "--store", dir}, `'日'`},
		{"query --branch", []string{"query", "-e", `query q() { match { $p: Person } return { $p.name } }`, "--branch", "fé", "--store", dir}, `'é'`},
		{"gq lexer", []string{"query", "-e", "query q() { match { $p: Person } return { $p.name } } é", "--store", dir}, `'é'`},
		{"gq bom inside", []string{"query", "-e", "query q() { match { $p: Person } \ufeffreturn { $p.name } }", "--store", dir}, "byte order mark"},
		{"pg lexer", []string{"schema", "plan", "--schema", write("a.pg", "node Person {\n  name: String @key é\n}\n"), "--store", dir}, `'é'`},
		{"pg bom inside", []string{"schema", "plan", "--schema", write("b.pg", "node Person {\n  name: String @key\n}\n\ufeff"), "--store", dir}, "byte order mark"},
		{"pg escape", []string{"schema", "plan", "--schema", write("c.pg", "node Person {\n  name: String @key @check(\"\\é\")\n}\n"), "--store", dir}, `\é`},
		{"ndjson value", []string{"load", "--mode", "merge", "--data", write("a.jsonl", `{"type":"Person","data":{"name":é}}`+"\n"), "--store", dir}, `'é'`},
		{"ndjson bom inside", []string{"load", "--mode", "merge", "--data", write("b.jsonl", `{"type":"Person","data":{"name":"a"}}`+"\n\ufeff"+`{"type":"Person","data":{"name":"b"}}`+"\n"), "--store", dir}, "byte order mark"},
		{"ndjson after value", []string{"load", "--mode", "merge", "--data", write("c.jsonl", `{"type":"Person","data":{"name":"a"}}é`+"\n"), "--store", dir}, `'é'`},
		{"ndjson escape", []string{"load", "--mode", "merge", "--data", write("d.jsonl", `{"type":"Person","data":{"name":"\é"}}`+"\n"), "--store", dir}, `'é'`},
	} {
		code, _, errs := cli(t, c.args...)
		if code == exitOK || !strings.Contains(errs, c.want) {
			t.Errorf("%s: exit %d %q, want it to quote %s", c.what, code, errs, c.want)
		}
		for _, garbled := range []string{"Ã", "ï", "æ", "\ufffd"} {
			if strings.Contains(errs, garbled) {
				t.Errorf("%s: the message quotes a byte (%q): %s", c.what, garbled, errs)
			}
		}
	}
	// Columns count characters: 'é' after "fé" on one line is at column 4
	// of {"a":"fé"é...}, not at its byte offset.
	code, _, errs := cli(t, "load", "--mode", "merge", "--data", write("e.jsonl", `"fé"é`+"\n"), "--store", dir)
	if code == exitOK || !strings.Contains(errs, "column 5") {
		t.Errorf("column of a character after a multibyte one: exit %d %q, want column 5", code, errs)
	}
}

// TestCLIDateTimeMilliseconds (issue 26 item 13): the CLI's query formats
// and export print a column of a literal, now() and a loaded microsecond
// value with three fraction digits each.
func TestCLIDateTimeMilliseconds(t *testing.T) {
	tmp := t.TempDir()
	schema := filepath.Join(tmp, "e.pg")
	if err := os.WriteFile(schema, []byte("node Event {\n  name: String @key\n  at: DateTime?\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(tmp, "e.jsonl")
	if err := os.WriteFile(data, []byte(`{"type":"Event","data":{"name":"micros","at":"2025-01-10T08:30:00.123456Z"}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "g")
	mustCLI(t, "init", "--schema", schema, dir)
	mustCLI(t, "load", "--mode", "merge", "--data", data, "--store", dir)
	mustCLI(t, "mutate", "-e", `insert Event { name: "literal", at: datetime("2025-01-10T08:30:00Z") }`, "--store", dir)
	mustCLI(t, "mutate", "-e", `insert Event { name: "now", at: now() }`, "--store", dir)
	stamp := regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)
	outs := map[string]string{"export": mustCLI(t, "export", "--store", dir)}
	for _, f := range []string{"table", "kv", "csv", "jsonl", "json"} {
		outs[f] = mustCLI(t, "query", "-e", `query q() { match { $e: Event } return { $e.name, $e.at } }`, "--format", f, "--store", dir)
	}
	for what, out := range outs {
		found := stamp.FindAllStringSubmatch(out, -1)
		if len(found) != 3 {
			t.Fatalf("%s: %d date-times in %s", what, len(found), out)
		}
		for _, m := range found {
			if len(m[1]) != 4 {
				t.Errorf("%s: %q does not have three fraction digits", what, m[0])
			}
		}
	}
}

// TestEveryGroupCommandListsItsSubcommands (issue 26 item 16): every
// command that has subcommands, run without one, is a usage error (exit 2)
// that names each of its registered subcommands (the list is generated:
// branch used to leave out merge), and so is one run with an unknown
// subcommand.
func TestEveryGroupCommandListsItsSubcommands(t *testing.T) {
	root := newRootCmd(&app{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard})
	groups := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if c == root || !c.HasAvailableSubCommands() {
			return
		}
		groups++
		path := strings.Fields(c.CommandPath())[1:]
		for _, args := range [][]string{path, append(slices.Clone(path), "nosuch")} {
			code, _, errs := cli(t, args...)
			if code != exitUsage {
				t.Errorf("omnigraph %s: exit %d, want %d", strings.Join(args, " "), code, exitUsage)
			}
			for _, sub := range c.Commands() {
				if sub.IsAvailableCommand() && !strings.Contains(errs, sub.Name()) {
					t.Errorf("omnigraph %s: %q does not name subcommand %s", strings.Join(args, " "), errs, sub.Name())
				}
			}
		}
	}
	walk(root)
	if groups < 6 {
		t.Fatalf("only %d group commands found", groups)
	}
}

// TestVersion (issue 26 item 18): 'omnigraph version', '--version' and
// 'version --json' print this binary's build (buildinfo.Read: module
// version, revision, build date, Go), and a writer's lock record carries
// the same line as its binary_version.
func TestVersion(t *testing.T) {
	want := buildinfo.Read()
	line := "omnigraph " + want.String() + "\n"
	if got := mustCLI(t, "version"); got != line || !strings.Contains(got, runtime.Version()) {
		t.Errorf("version: %q, want %q", got, line)
	}
	if got := mustCLI(t, "--version"); got != line {
		t.Errorf("--version: %q, want %q", got, line)
	}
	var got api.BuildInfo
	if err := json.Unmarshal([]byte(mustCLI(t, "version", "--json")), &got); err != nil || got != server.BuildOutput(want) || got.Version == "" || got.GoVersion == "" {
		t.Errorf("version --json: %+v %v, want %+v", got, err, want)
	}
	dir := queryGraph(t)
	var status string
	afterWriteOpen = func(context.Context, *graph.Graph) { status = mustCLI(t, "lock", "status", "--json", "--store", dir) }
	t.Cleanup(func() { afterWriteOpen = nil })
	mustCLI(t, "branch", "create", "v", "--store", dir)
	var st struct {
		Owner struct {
			Version string `json:"binary_version"`
		} `json:"owner"`
	}
	if err := json.Unmarshal([]byte(status), &st); err != nil || st.Owner.Version != want.String() {
		t.Errorf("lock record while writing: %s (%v), want binary_version %q", status, err, want.String())
	}
}
