package main

import (
	"path/filepath"
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
