package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/client"
)

// The example program of docs/clients.md: a query with parameters, a
// mutation with a precondition, a streamed load, a branch merged back,
// and what to do when a write's outcome is unknown. TestDocsExample runs
// it against a real server.
func Example() {
	ctx := context.Background()
	c, err := client.New(os.Getenv("OMNIGRAPH_URL"), client.WithToken(os.Getenv("OMNIGRAPH_TOKEN")))
	if err != nil {
		log.Fatal(err)
	}
	g := c.Graph("default")

	// A query with parameters.
	out, err := g.Query(ctx, api.QueryRequest{
		Query:  `query q($city: String) { match { $p: Person { city: $city } } return { $p.handle } order { $p.handle } }`,
		Params: map[string]any{"city": "Lisbon"},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out.RowCount, "people in Lisbon")

	// A mutation that writes only while main is still the commit we read.
	_, err = g.Mutate(ctx, api.MutateRequest{Query: `mutation m() { insert Person { handle: "quinn", name: "Quinn Park", city: "Lisbon" } }`},
		client.IfGraphCommit(out.GraphCommitID))
	var e *client.Error
	switch {
	case err == nil:
		fmt.Println("quinn added")
	case errors.Is(err, client.ErrPrecondition):
		fmt.Println("main moved: read again, then retry")
	case errors.As(err, &e) && errors.Is(err, client.ErrOutcomeUnknown):
		// The write may have landed: look before sending it again.
		check, _ := e.OutcomeUnknown()
		fmt.Println("unknown outcome: check", check)
	default:
		log.Fatal(err)
	}

	// A streamed load of a file, on a new branch, merged back into main.
	f, err := os.Open("people.jsonl")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	if _, err := g.Load(ctx, f, client.LoadOptions{Branch: "import", From: "main", Mode: "merge"}); err != nil {
		log.Fatal(err)
	}
	m, err := g.Merge(ctx, api.MergeRequest{Source: "import", DeleteBranch: true})
	if errors.As(err, &e) && len(e.Details.MergeConflicts) > 0 {
		log.Fatalf("merge conflicts: %+v", e.Details.MergeConflicts)
	} else if err != nil {
		log.Fatal(err)
	}
	fmt.Println(m.Outcome, m.Inserted, "inserted")
}

// TestDocsExample runs Example against a real server holding the example
// graph, with a people.jsonl in the working directory, checks what it
// prints, and checks docs/clients.md shows the same program (every line
// of Example's body).
func TestDocsExample(t *testing.T) {
	url := exampleGraph(t, filepath.Join(t.TempDir(), "graph"))
	file, secrets := tokens(t, "alice")
	s := serve(t, nil, "--store", url, "--tokens", file)
	t.Setenv("OMNIGRAPH_URL", s.base)
	t.Setenv("OMNIGRAPH_TOKEN", secrets["alice"])
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "people.jsonl"), []byte(`{"type":"Person","data":{"handle":"ines","name":"Ines Duarte","city":"Lisbon"}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	Example()
	os.Stdout = stdout
	w.Close()
	got, _ := io.ReadAll(r)
	if want := "4 people in Lisbon\nquinn added\nfast_forward 1 inserted\n"; string(got) != want {
		t.Fatalf("the example printed %q, want %q", got, want)
	}

	src, err := os.ReadFile(filepath.Join(srcDir(t), "example_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(srcDir(t), "..", "docs", "clients.md"))
	if err != nil {
		t.Fatal(err)
	}
	body := string(src[strings.Index(string(src), "func Example() {"):])
	body = body[:strings.Index(body, "\n}\n")]
	for _, line := range strings.Split(body, "\n")[1:] {
		if l := strings.TrimSpace(line); l != "" && !strings.Contains(string(doc), l) {
			t.Errorf("docs/clients.md lacks the example's line %q", l)
		}
	}
}

// srcDir is the package's source directory (the test's working
// directory before Chdir).
var pkgDir, _ = os.Getwd()

func srcDir(*testing.T) string { return pkgDir }
