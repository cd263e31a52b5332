package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/load"
)

const queryCLIData = `{"type":"Person","data":{"name":"ada","age":36}}
{"type":"Person","data":{"name":"bo","age":29}}
{"type":"Person","data":{"name":"cy"}}
{"type":"Company","data":{"name":"acme"}}
{"edge":"WorksAt","from":"ada","to":"acme"}
{"edge":"WorksAt","from":"bo","to":"acme"}
`

// queryGraph creates a local graph with cliSchema and a little data.
func queryGraph(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "g")
	mustCLI(t, "init", "--schema", writeSchema(t), dir)
	ctx := context.Background()
	store, err := backend.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	g, err := graph.Open(ctx, store, graph.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := load.Run(ctx, g, strings.NewReader(queryCLIData), load.Options{Mode: load.Append}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestCLIQueryFormats(t *testing.T) {
	dir := queryGraph(t)
	q := `query staff($min: I32) { match { $p: Person  $p worksAt $c  $p.age >= $min } return { $p.name, $p.age, $c.name as company } order { $p.age desc } }`
	tests := []struct {
		name   string
		format string
		want   []string
	}{
		{"table", "table", []string{"p.name  p.age  company", "ada     36     acme", "bo      29     acme", "(2 rows, commit "}},
		{"kv", "kv", []string{"p.name   ada\np.age    36\ncompany  acme\n\np.name   bo"}},
		{"csv", "csv", []string{"p.name,p.age,company\nada,36,acme\nbo,29,acme\n"}},
		{"jsonl", "jsonl", []string{`{"p.name":"ada","p.age":36,"company":"acme"}` + "\n" + `{"p.name":"bo","p.age":29,"company":"acme"}` + "\n"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := mustCLI(t, "query", "-e", q, "--params", `{"min": 20}`, "--format", tc.format, "--store", dir)
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}

	t.Run("json", func(t *testing.T) {
		out := mustCLI(t, "query", "-e", q, "--params", `{"min": 30}`, "--format", "json", "--store", dir)
		var got struct {
			QueryName string           `json:"query_name"`
			RowCount  int              `json:"row_count"`
			Columns   []string         `json:"columns"`
			Rows      []map[string]any `json:"rows"`
			Commit    string           `json:"graph_commit_id"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if got.QueryName != "staff" || got.RowCount != 1 || len(got.Rows) != 1 || got.Rows[0]["p.name"] != "ada" || got.Commit == "" ||
			strings.Join(got.Columns, ",") != "p.name,p.age,company" {
			t.Fatalf("json output: %s", out)
		}
	})

	t.Run("file, name and params file", func(t *testing.T) {
		d := t.TempDir()
		f := filepath.Join(d, "q.gq")
		os.WriteFile(f, []byte(q+"\nquery everyone() { match { $p: Person } return { count($p) as n } }\n"), 0o644)
		pf := filepath.Join(d, "p.json")
		os.WriteFile(pf, []byte(`{"min": 30}`), 0o644)
		if out := mustCLI(t, "query", "--query", f, "everyone", "--format", "csv", "--store", dir); out != "n\n3\n" {
			t.Fatalf("everyone: %q", out)
		}
		if out := mustCLI(t, "query", "--query", f, "staff", "--params-file", pf, "--format", "csv", "--store", dir); out != "p.name,p.age,company\nada,36,acme\n" {
			t.Fatalf("staff: %q", out)
		}
	})
}

// TestCLIQuerySnapshotAndBranch: --snapshot reads a past commit; --branch
// reads another branch's head.
func TestCLIQuerySnapshotAndBranch(t *testing.T) {
	dir := queryGraph(t)
	count := `query n() { match { $p: Person } return { count($p) as n } }`
	var before struct {
		Commit string `json:"graph_commit_id"`
	}
	json.Unmarshal([]byte(mustCLI(t, "query", "-e", count, "--format", "json", "--store", dir)), &before)

	ctx := context.Background()
	store, err := backend.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	g, err := graph.Open(ctx, store, graph.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.CreateBranch(ctx, "dev", "main"); err != nil {
		t.Fatal(err)
	}
	if _, err := load.Run(ctx, g, strings.NewReader(`{"type":"Person","data":{"name":"di"}}`), load.Options{Mode: load.Append, Branch: "dev"}); err != nil {
		t.Fatal(err)
	}
	if _, err := load.Run(ctx, g, strings.NewReader(`{"type":"Person","data":{"name":"ed"}}
{"type":"Person","data":{"name":"fi"}}`), load.Options{Mode: load.Append}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"main head", nil, "n\n5\n"},
		{"branch head", []string{"--branch", "dev"}, "n\n4\n"},
		{"past commit", []string{"--snapshot", before.Commit}, "n\n3\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"query", "-e", count, "--format", "csv", "--store", dir}, tc.args...)
			if out := mustCLI(t, args...); out != tc.want {
				t.Fatalf("got %q want %q", out, tc.want)
			}
		})
	}
}

func TestCLIQueryUsage(t *testing.T) {
	dir := queryGraph(t)
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no query", []string{"query", "--store", dir}, exitUsage, "give the query once"},
		{"both query forms", []string{"query", "-e", "x", "--query", "f.gq", "--store", dir}, exitUsage, "give the query once"},
		{"bad format", []string{"query", "-e", "x", "--format", "xml", "--store", dir}, exitUsage, "--format"},
		{"branch and snapshot", []string{"query", "-e", "x", "--branch", "a", "--snapshot", "b", "--store", dir}, exitUsage, "not both"},
		{"bad params", []string{"query", "-e", "x", "--params", "[1]", "--store", dir}, exitUsage, "JSON object"},
		{"type error", []string{"query", "-e", "query q() { match { $p: Persn } return { $p } }", "--store", dir}, exitError, "GQ010"},
		{"mutation", []string{"query", "-e", `query m() { insert Company { name: "x" } }`, "--store", dir}, exitError, "mutate"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := cli(t, tc.args...)
			if code != tc.code || !strings.Contains(errs, tc.msg) {
				t.Fatalf("exit %d, stderr %q; want exit %d mentioning %q", code, errs, tc.code, tc.msg)
			}
		})
	}
}

// TestCLIRunsValidQueryOfAMixedFile pins: the type checks and the D₂ rule
// apply to the query named on the command line, so `query` and `mutate`
// run a valid query of a file whose other queries are wrong, and the
// errors of the wrong ones name them.
func TestCLIRunsValidQueryOfAMixedFile(t *testing.T) {
	dir := queryGraph(t)
	f := filepath.Join(t.TempDir(), "q.gq")
	if err := os.WriteFile(f, []byte(`query adults() {
  match { $p: Person  $p.age >= 30 }
  return { $p.name }
}
query typo() {
  match { $p: Persn }
  return { $p }
}
mutation mixed() {
  insert Company { name: "x" }
  delete Person where name = "cy"
}
mutation hire($n: String) {
  insert Company { name: $n }
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := mustCLI(t, "query", "--query", f, "adults", "--format", "csv", "--store", dir); out != "p.name\nada\n" {
		t.Errorf("adults: %q", out)
	}
	if out := mustCLI(t, "mutate", "--query", f, "hire", "--params", `{"n":"initech"}`, "--store", dir); !strings.Contains(out, "1 nodes") {
		t.Errorf("hire: %q", out)
	}
	if out := mustCLI(t, "query", "-e", `query q() { match { $c: Company } return { $c.name } }`, "--format", "csv", "--store", dir); out != "c.name\nacme\ninitech\n" {
		t.Errorf("companies after hire: %q", out)
	}
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"query", "--query", f, "typo", "--store", dir}, `GQ010 in query "typo" at 6:15`},
		{[]string{"mutate", "--query", f, "mixed", "--store", dir}, `GQ002 in query "mixed" at 11:3`},
	} {
		code, _, errs := cli(t, tc.args...)
		if code != exitError || !strings.Contains(errs, tc.msg) {
			t.Errorf("%v: exit %d, stderr %q; want %q", tc.args, code, errs, tc.msg)
		}
	}
}
