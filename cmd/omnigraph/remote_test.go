package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// timestamps blanks what differs between two runs besides commit ids:
// commit times (RFC 3339 and microseconds) and a load's timing.
var timestamps = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z|"time_us": \d+|"seconds": [0-9.e+-]+|"rows_per_second": [0-9.e+-]+`)

var columnPad = regexp.MustCompile(` {2,}`)

// quickstartFlow is the `make run` quickstart (scripts/run.sh) after init,
// through the commands that take --server, in every output format: where
// names the graph (--store DIR or --server URL). It returns each
// command's exit code and output with commit ids and times blanked.
func quickstartFlow(t *testing.T, where ...string) string {
	t.Helper()
	const (
		data    = "../../examples/social.jsonl"
		queries = "../../examples/social.gq"
	)
	var log []string
	step := func(args ...string) string {
		t.Helper()
		code, out, errs := cli(t, append(args, where...)...)
		if code != exitOK && code != exitConflict {
			t.Fatalf("omnigraph %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errs)
		}
		log = append(log, fmt.Sprintf("$ %s (exit %d)", strings.Join(args, " "), code), out)
		return out
	}
	var commits struct {
		Commits []struct {
			ID string `json:"id"`
		} `json:"commits"`
	}
	if err := json.Unmarshal([]byte(step("commit", "list", "--json")), &commits); err != nil || len(commits.Commits) == 0 {
		t.Fatalf("commit list: %v", err)
	}
	initCommit := commits.Commits[len(commits.Commits)-1].ID
	step("load", "--data", data, "--mode", "append", "--json")
	step("query", "--query", queries, "city_adults", "--params", `{"city":"Berlin","min":30}`)
	step("query", "--query", queries, "friends_of_friends", "--params", `{"h":"alice"}`, "--format", "kv")
	for _, f := range queryFormats {
		step("query", "--query", queries, "headcount", "--format", f)
	}
	step("branch", "create", "hiring")
	step("mutate", "--query", queries, "hire", "--branch", "hiring", "--params",
		`{"h":"quinn","name":"Quinn Park","age":34,"city":"Lisbon","company":"acme","title":"engineer","since":"2026-01-05"}`)
	step("mutate", "--query", queries, "hire", "--branch", "hiring", "--json", "--params",
		`{"h":"remy","name":"Remy Duval","age":41,"city":"Berlin","company":"acme","title":"designer","since":"2026-02-02"}`)
	step("query", "--query", queries, "staff", "--params", `{"slug":"acme"}`)
	step("query", "--query", queries, "staff", "--params", `{"slug":"acme"}`, "--branch", "hiring", "--format", "csv")
	step("query", "--query", queries, "headcount", "--format", "jsonl", "--branch", "hiring")
	step("branch", "list")
	step("branch", "list", "--json")
	step("snapshot", "--branch", "hiring")
	step("schema", "show")
	step("schema", "show", "--json", "--branch", "hiring")
	// A write on a head that moved: nothing is written, exit 4 in both.
	step("mutate", "-e", `update Person set { age: 35 } where handle = "quinn"`, "--branch", "hiring", "--if-commit", initCommit)
	step("branch", "merge", "hiring", "--into", "main", "--delete-branch")
	if err := json.Unmarshal([]byte(step("commit", "list", "--limit", "2", "--json")), &commits); err != nil || len(commits.Commits) != 2 {
		t.Fatalf("commit list: %v", err)
	}
	step("commit", "show", commits.Commits[0].ID)
	step("commit", "show", commits.Commits[0].ID, "--json")
	step("commit", "changes", commits.Commits[0].ID)
	step("commit", "changes", commits.Commits[0].ID, "--json")
	step("commit", "list")
	step("branch", "create", "scratch", "--json")
	step("mutate", "-e", `update Person set { age: 23 } where handle = "alice"`, "--branch", "scratch")
	step("branch", "merge", "scratch", "--json")
	step("branch", "delete", "scratch")
	step("query", "--query", queries, "staff", "--params", `{"slug":"acme"}`)
	count := `query n() { match { $p: Person } return { count($p) as people } }`
	step("query", "-e", count, "--format", "kv")
	step("query", "-e", count, "--format", "json", "--snapshot", initCommit)
	out := timestamps.ReplaceAllString(blankCommitIDs(strings.Join(log, "\n")), "<time>")
	// A table pads its columns to the widest value, and a time's width
	// varies (RFC 3339 drops trailing zeros of the fraction).
	return columnPad.ReplaceAllString(out, "  ")
}

// TestServerModeMatchesLocal runs the quickstart once on a local graph
// with --store and once through 'omnigraph serve' (a real child process)
// with --server, and requires the same output and exit codes, line for
// line: query in every format, mutate, load, branch create/list/merge/
// delete, commit list/show/changes, snapshot, schema show, text and --json.
func TestServerModeMatchesLocal(t *testing.T) {
	const schema = "../../examples/social.pg"
	local := filepath.Join(t.TempDir(), "local")
	mustCLI(t, "init", "--schema", schema, local)
	want := quickstartFlow(t, "--store", local)

	served := filepath.Join(t.TempDir(), "served")
	mustCLI(t, "init", "--schema", schema, served)
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.json")
	token := strings.TrimSpace(mustCLI(t, "token", "add", "anonymous", "--tokens", tokens))
	base, _, _ := startServe(t, "--store", served, "--tokens", tokens)
	t.Setenv(envToken, token)
	got := quickstartFlow(t, "--server", base)

	for _, w := range []string{"node:Person  hiring", "node Person implements Named", "quinn  engineer", "fast_forward: merged hiring into main", "(exit 4)", "insert node Person \"remy\""} {
		if !strings.Contains(want, w) {
			t.Fatalf("the local quickstart lacks %q:\n%s", w, want)
		}
	}
	if got != want {
		wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
		for i := range min(len(wl), len(gl)) {
			if wl[i] != gl[i] {
				t.Fatalf("--server output differs from --store at line %d:\n--store:  %s\n--server: %s\n\n--- whole --server output:\n%s", i+1, wl[i], gl[i], got)
			}
		}
		t.Fatalf("--server output has %d lines, --store %d", len(gl), len(wl))
	}
}

// TestServerModeRefusals: flags that do not go with --server are usage
// errors (exit 2) that reach no server; the server's refusals keep the
// local mode's exit codes (5 for merge conflicts) and JSON error codes;
// an unreachable server is exit 7 (server_unreachable) naming it; a 401
// says how to pass a token; a CLI write refused by a server's lock says to
// use --server.
func TestServerModeRefusals(t *testing.T) {
	dir := t.TempDir()
	served := filepath.Join(dir, "served")
	mustCLI(t, "init", "--schema", writeSchema(t), served)
	tokens := filepath.Join(dir, "tokens.json")
	token := strings.TrimSpace(mustCLI(t, "token", "add", "alice", "--tokens", tokens))
	base, _, _ := startServe(t, "--store", served, "--tokens", tokens)

	for _, args := range [][]string{
		{"query", "-e", "query q() { match { $p: Person } return { $p.name } }", "--server", base, "--store", served},
		{"mutate", "-e", `insert Person { name: "x" }`, "--server", base, "--as", "mallory"},
		{"load", "--data", "-", "--mode", "merge", "--server", base, "--wait", "5s"},
		{"load", "--data", "-", "--mode", "overwrite", "--server", base, "--type", "Person"},
		{"branch", "list", "--token", token, "--store", served},
		{"query", "-e", "query q() { match { $p: Person } return { $p.name } }", "--server", "ftp://example"},
	} {
		if code, out, errs := cli(t, args...); code != exitUsage {
			t.Errorf("%s: exit %d, want %d (usage)\n%s%s", strings.Join(args, " "), code, exitUsage, out, errs)
		}
	}

	code, _, errs := cli(t, "branch", "list", "--server", base, "--token", "wrong", "--json")
	if code != exitError || !strings.Contains(errs, `"code":"unauthorized"`) {
		t.Fatalf("a wrong token: exit %d %s", code, errs)
	}
	// The 401 keeps its words (the redaction ate "token") and says how to
	// pass one.
	t.Setenv(envToken, "")
	for _, tc := range []struct{ name, token, want string }{
		{"no token", "", "missing bearer token"},
		{"a wrong token", "og_wrong0123456789abcdef", "invalid bearer token"},
	} {
		args := []string{"branch", "list", "--server", base}
		if tc.token != "" {
			args = append(args, "--token", tc.token)
		}
		code, _, errs := cli(t, args...)
		if code != exitError || !strings.Contains(errs, tc.want) || !strings.Contains(errs, "--token") || !strings.Contains(errs, envToken) ||
			strings.Contains(errs, "REDACTED") || (tc.token != "" && strings.Contains(errs, tc.token)) {
			t.Errorf("%s: exit %d %q; want exit 1 saying %q and how to pass a token (--token, %s)", tc.name, code, errs, tc.want, envToken)
		}
	}
	// A CLI write to the served store is refused by the server's lock, and
	// the refusal says to go through the server.
	code, _, errs = cli(t, "mutate", "-e", `insert Person { name: "direct" }`, "--store", served)
	if code != exitLockHeld || !strings.Contains(errs, "--server URL") || !strings.Contains(errs, "omnigraph serve") {
		t.Errorf("a CLI write while a server holds the lock: exit %d %q; want exit 3 saying to use --server URL", code, errs)
	}
	srv := []string{"--server", base, "--token", token}
	mustCLI(t, append([]string{"branch", "create", "rival"}, srv...)...)
	mustCLI(t, append([]string{"mutate", "-e", `insert Person { name: "ada", age: 1 }`, "--branch", "rival"}, srv...)...)
	mustCLI(t, append([]string{"mutate", "-e", `insert Person { name: "ada", age: 2 }`}, srv...)...)
	code, out, errs := cli(t, append([]string{"branch", "merge", "rival", "--json"}, srv...)...)
	if code != exitMergeConflict || !strings.Contains(out, `"merge_conflicts"`) || !strings.Contains(errs, `"code":"merge_conflict"`) {
		t.Fatalf("a merge with conflicts: exit %d\n%s%s", code, out, errs)
	}
	// The engine's refusal keeps its local JSON code (the envelope's reason).
	for _, args := range [][]string{
		{"snapshot", "--branch", "nope", "--json"},
		{"schema", "show", "--branch", "nope", "--json"},
		{"commit", "show", "01M8V9Q6KVQVRHYA255KR9YTW5", "--json"},
	} {
		lc, _, lerr := cli(t, append(args, "--store", served)...)
		sc, _, serr := cli(t, append(args, srv...)...)
		want := map[bool]string{true: `"code":"commit_not_found"`, false: `"code":"branch_not_found"`}[args[0] == "commit"]
		if lc != exitError || sc != exitError || !strings.Contains(lerr, want) || !strings.Contains(serr, want) {
			t.Errorf("%s: --store exit %d %s; --server exit %d %s; want %s", strings.Join(args, " "), lc, lerr, sc, serr, want)
		}
	}
	var snap struct {
		Branch string `json:"branch"`
		Tables []struct {
			Table string `json:"table"`
			Path  string `json:"path"`
			Rows  int64  `json:"rows"`
		} `json:"tables"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, append([]string{"snapshot", "--json"}, srv...)...)), &snap); err != nil || snap.Branch != "main" || len(snap.Tables) == 0 {
		t.Fatalf("snapshot --json --server: %v %+v", err, snap)
	}
	for _, tb := range snap.Tables {
		if tb.Path != "" || !strings.Contains(tb.Table, ":") {
			t.Fatalf("snapshot --json --server: table %+v (the server sends no storage path)", tb)
		}
	}
	// An unreachable server has its own exit code and JSON code, for a
	// read and for a write (nothing was sent, so nothing was done).
	for _, args := range [][]string{
		{"branch", "list", "--server", "http://127.0.0.1:1"},
		{"mutate", "-e", `insert Person { name: "x" }`, "--server", "http://127.0.0.1:1"},
		{"diff", "main", "main", "--server", "http://127.0.0.1:1"},
	} {
		code, _, errs = cli(t, args...)
		if code != exitUnreachable || !strings.Contains(errs, "the server at http://127.0.0.1:1") || !strings.Contains(errs, "Nothing was done") {
			t.Errorf("%s against an unreachable server: exit %d %s; want exit %d", args[0], code, errs, exitUnreachable)
		}
		code, _, errs = cli(t, append(args, "--json")...)
		if code != exitUnreachable || !strings.Contains(errs, `"code":"server_unreachable"`) {
			t.Errorf("%s --json against an unreachable server: exit %d %s; want code server_unreachable", args[0], code, errs)
		}
	}
}
