package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/internal/testenv"
)

// quickstartSession is the `make run` flow through the CLI a user types:
// init from the example schema, load the example data, run the example
// queries, branch, mutate the branch, and read both branches. It returns
// every command's output with commit ids blanked, so sessions on different
// stores can be compared line for line.
func quickstartSession(t *testing.T, url string) string {
	t.Helper()
	const (
		schema  = "../../examples/social.pg"
		data    = "../../examples/social.jsonl"
		queries = "../../examples/social.gq"
	)
	var log []string
	step := func(args ...string) {
		t.Helper()
		out := mustCLI(t, args...)
		shown := strings.ReplaceAll(strings.Join(args, " "), url, "<store>")
		log = append(log, "$ "+shown, out)
	}
	step("init", "--schema", schema, "--store", url)
	step("load", "--data", data, "--mode", "append", "--store", url)
	for _, q := range [][]string{
		{"city_adults", `{"city":"Berlin","min":30}`},
		{"friends_of_friends", `{"h":"alice"}`},
		{"headcount", `{}`},
		{"staff", `{"slug":"acme"}`},
	} {
		step("query", "--query", queries, q[0], "--params", q[1], "--format", "jsonl", "--store", url)
	}
	step("branch", "create", "hiring", "--store", url)
	step("mutate", "--query", queries, "hire", "--branch", "hiring", "--store", url, "--params",
		`{"h":"quinn","name":"Quinn Park","age":34,"city":"Lisbon","company":"acme","title":"engineer","since":"2026-01-05"}`)
	step("query", "--query", queries, "staff", "--params", `{"slug":"acme"}`, "--branch", "hiring", "--format", "jsonl", "--store", url)
	step("query", "--query", queries, "staff", "--params", `{"slug":"acme"}`, "--format", "jsonl", "--store", url)
	step("branch", "list", "--store", url)
	return blankCommitIDs(strings.Join(log, "\n"))
}

// blankCommitIDs replaces ULIDs (26 Crockford base32 characters) so that
// outputs of two sessions compare equal when only commit ids differ.
func blankCommitIDs(s string) string {
	var b strings.Builder
	run := 0
	const alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(alphabet, s[i]) >= 0 {
			run++
			continue
		}
		flush(&b, s[i-run:i], run)
		run = 0
		b.WriteByte(s[i])
	}
	flush(&b, s[len(s)-run:], run)
	return b.String()
}

func flush(b *strings.Builder, tok string, n int) {
	if n == 26 {
		b.WriteString("<ULID>")
		return
	}
	b.WriteString(tok)
}

// TestQuickstartSessionCloud runs the quickstart flow on S3, GCS and Azure
// and requires every answer to equal the same flow on a local directory.
func TestQuickstartSessionCloud(t *testing.T) {
	want := quickstartSession(t, filepath.Join(t.TempDir(), "graph"))
	if !strings.Contains(want, `"p.handle":"quinn"`) || !strings.Contains(want, `"staff":`) {
		t.Fatalf("local quickstart output lacks the expected rows:\n%s", want)
	}
	for _, tc := range []struct {
		name string
		url  func(testing.TB) string
	}{
		{"s3", testenv.S3}, {"gcs", testenv.GCS}, {"azure", testenv.Azure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := quickstartSession(t, tc.url(t))
			if got != want {
				t.Fatalf("%s session differs from the local one:\n--- local\n%s\n--- %s\n%s", tc.name, want, tc.name, got)
			}
		})
	}
}

// docCommands returns the omnigraph commands of the fenced blocks of a doc,
// in order, split into arguments as a POSIX shell would (single and double
// quotes, backslash-newline continuations).
func docCommands(t *testing.T, path string) [][]string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cmds [][]string
	in := false
	var cur string
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "```") {
			in = !in
			continue
		}
		if !in {
			continue
		}
		if cur == "" && !strings.HasPrefix(line, "omnigraph ") {
			continue
		}
		if s, ok := strings.CutSuffix(line, "\\"); ok {
			cur += s + " "
			continue
		}
		cmds = append(cmds, shellWords(t, cur+line))
		cur = ""
	}
	return cmds
}

// shellWords splits a command line as sh does for the quoting the docs use.
func shellWords(t *testing.T, s string) []string {
	t.Helper()
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				t.Fatalf("unterminated ' in %q", s)
			}
			w.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte(`"\$`+"`", s[i+1]) >= 0 {
					i++
				}
				w.WriteByte(s[i])
			}
			inWord = true
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}

// TestQuickstartDocRuns (issue 26 item 22): every command docs/quickstart.md
// shows runs, in order, on a fresh local graph (its paths moved to a
// temporary directory, COMMIT_ID and 01M8... read from the graph), and the
// search section answers: vectors made by omnigraph embed with the built-in
// embedder, full-text, fuzzy, nearest (the post's own text at distance 0)
// and rrf. Then the search examples of docs/queries.md (nearest by a vector
// and by text, hybrid) return rows on the same data, as they did not before
// the quickstart filled the vectors.
func TestQuickstartDocRuns(t *testing.T) {
	tmp := t.TempDir()
	store := filepath.Join(tmp, "demo-graph")
	cmds := docCommands(t, filepath.Join("..", "..", "docs", "quickstart.md"))
	if len(cmds) < 10 {
		t.Fatalf("docs/quickstart.md shows %d commands", len(cmds))
	}
	var initCommit string
	outs := map[string]string{}
	for _, args := range cmds {
		args = args[1:] // "omnigraph"
		for i, a := range args {
			switch {
			case a == "./demo-graph":
				args[i] = store
			case strings.HasPrefix(a, "examples/"):
				args[i] = filepath.Join("..", "..", a)
			case a == "demo-social.jsonl":
				args[i] = filepath.Join(tmp, a)
			case a == "COMMIT_ID":
				args[i] = headCommit(t, store)
			case a == "01M8...":
				args[i] = initCommit
			}
		}
		code, out, errs := cli(t, args...)
		if code != exitOK {
			t.Fatalf("omnigraph %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errs)
		}
		if args[0] == "init" {
			initCommit = headCommit(t, store)
		}
		if args[0] == "query" && len(args) > 3 && args[1] == "--query" {
			outs[args[3]] = out
		}
	}
	for name, want := range map[string][]string{
		"search_posts":  {"Branches for data are underrated", "Commit graphs make audits easy", "(2 rows"},
		"fuzzy_posts":   {"Tried a new sourdough recipe", "(1 row"},
		"similar_posts": {"Commit graphs make audits easy     0\n", "(3 rows"},
		"hybrid_posts":  {"Commit graphs make audits easy", "(3 rows"},
	} {
		for _, w := range want {
			if !strings.Contains(outs[name], w) {
				t.Errorf("%s: %q lacks %q", name, outs[name], w)
			}
		}
	}
	// docs/queries.md's vector examples, on the quickstart's data.
	src := `
query similar($v: Vector(8)) {
  match { $p: Post }
  return { $p.text, nearest($p.embedding, $v) as distance }
  order { nearest($p.embedding, $v) }
  limit 2
}
query hybrid($v: Vector(8), $q: String) {
  match { $p: Post }
  return { $p.text, rrf(nearest($p.embedding, $v), bm25($p.text, $q)) as score }
  order { rrf(nearest($p.embedding, $v), bm25($p.text, $q), 60) }
  limit 2
}
query like_text() {
  match { $p: Post }
  return { $p.text }
  order { nearest($p.embedding, "hello graphs") }
  limit 1
}`
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "queries.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range strings.Split(src, "\nquery ")[1:] {
		if !strings.Contains(string(doc), "query "+q) {
			t.Fatalf("docs/queries.md no longer shows:\nquery %s", q)
		}
	}
	qf := filepath.Join(tmp, "search.gq")
	if err := os.WriteFile(qf, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	v := `[0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8]`
	for name, params := range map[string]string{"similar": `{"v":` + v + `}`, "hybrid": `{"v":` + v + `,"q":"graphs"}`, "like_text": `{}`} {
		out := mustCLI(t, "query", "--query", qf, name, "--params", params, "--format", "jsonl", "--store", store)
		if n := strings.Count(out, "\n"); n != map[string]int{"similar": 2, "hybrid": 2, "like_text": 1}[name] {
			t.Errorf("docs/queries.md %s on the quickstart data: %d rows: %s", name, n, out)
		}
	}
}

// TestMakeRunScript (issue 26 item 22): scripts/run.sh, what `make run`
// runs, goes through to its end with this build as the omnigraph binary,
// on a graph in a temporary directory, and its search step answers.
func TestMakeRunScript(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "omnigraph")
	wrapper := "#!/bin/sh\n" + cliChildEnv + "=1 exec " + strconv.Quote(os.Args[0]) + " \"$@\"\n"
	if err := os.WriteFile(bin, []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", filepath.Join("..", "..", "scripts", "run.sh"))
	cmd.Env = append(os.Environ(), "OMNIGRAPH_BIN="+bin, "OMNIGRAPH_DEMO_STORE="+filepath.Join(tmp, "demo-graph"), "OMNIGRAPH_DEMO_DATA="+filepath.Join(tmp, "demo-social.jsonl"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/run.sh: %v\n%s", err, out)
	}
	for _, want := range []string{"11. Search", "12 embedded", "Branches for data are underrated  2.27", "Tried a new sourdough recipe", "Commit graphs make audits easy     0\n", "== Done."} {
		if !strings.Contains(string(out), want) {
			t.Errorf("scripts/run.sh output lacks %q:\n%s", want, out)
		}
	}
}
