package query

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/load"
	"github.com/omnigraph-go/omnigraph/index/embed"
	"github.com/omnigraph-go/omnigraph/lang/gq"
	"github.com/omnigraph-go/omnigraph/lang/pg"
)

// docParams are the parameters each docs example runs with.
var docParams = map[string]map[string]any{
	"adults":             {"min": 30},
	"by_handle":          {"h": "bob"},
	"employer":           {"h": "alice"},
	"staff":              {"slug": "acme"},
	"friends_of_friends": {"h": "alice"},
	"acquaintances":      {"h": "alice"},
	"colleagues_since":   {"slug": "acme"},
	"filters":            {"prefix": "A"},
	"profile":            {"h": "bob"},
	"youngest":           {"n": 3},
	"relevant":           {"q": "graphs"},
	"similar":            {"v": []any{1, 0, 0, 0, 0, 0, 0, 0}},
	"hybrid":             {"v": []any{0, 1, 0, 0, 0, 0, 0, 0}, "q": "graph"},
}

// docGolden is what each read example of docs/queries.md returns on
// socialFixture, worked out by hand (the rendering is rowsText's). Columns
// whose value depends on the clock (now()) are masked as "<now>".
var docGolden = map[string]string{
	"adults":             "Carol,40 | Erin,35 | Alice,30",
	"everyone":           "alice | bob | carol | dave | erin",
	"by_handle":          `{"id":"bob","name":"Bob","handle":"bob","age":25,"city":"Porto","email":"bob@y.org","joined":"2021-06-15","interests":["chess"]}`,
	"in_city":            "Alice",
	"employer":           "Acme",
	"staff":              "Alice | Bob",
	"friends_of_friends": "Dave",
	"acquaintances":      "bob | carol | dave",
	"colleagues_since":   "Bob,engineer,2021-03-01",
	"filters":            "alice",
	"unemployed":         "Dave | Erin",
	"profile":            `{"id":"bob","name":"Bob","handle":"bob","age":25,"city":"Porto","email":"bob@y.org","joined":"2021-06-15","interests":["chess"]},Acme,employee,<now>`,
	"headcount":          "Acme,2,27.5,2020-01-01 | Globex,1,40,2019-03-10",
	"totals":             "5,40",
	"youngest":           "Dave,null | Bob,25 | Alice,30",
	"about_graphs":       "hello graphs | Graph databases store graphs as nodes and edges",
	"typo":               "Weekend hiking photos",
	"nodes_and_edges":    "Graph databases store graphs as nodes and edges",
	// BM25 over the 3 posts (lengths 2, 6, 3; avgdl 11/3), "graph" in 2:
	// idf ln(1.6); post1 tf 1, post2 tf 2 (TestSearchGolden checks the formula).
	"relevant": "hello graphs,0.5773648643526295 | Graph databases store graphs as nodes and edges,0.5481488109757494",
	"similar":  "hello graphs,0 | Graph databases store graphs as nodes and edges,0.6324555508823199",
	// nearest ranks post2 (0.894), then post3 and post1 tie at √2 (greater
	// id first: post3); bm25 ranks post1, post2. post2: 1/61+1/62; post1: 1/61.
	"hybrid":    "Graph databases store graphs as nodes and edges,0.03252247488101534 | hello graphs,0.01639344262295082",
	"like_text": "Weekend hiking photos", // the built-in embedding of "hello graphs" is nearest post3's vector
}

// TestDocsQueriesGolden executes every read example of docs/queries.md
// against the fixture graph and compares with docGolden. A new example in
// the docs fails this test until its expected answer is added here.
func TestDocsQueriesGolden(t *testing.T) {
	raw, err := os.ReadFile("../../docs/queries.md")
	if err != nil {
		t.Skipf("docs/queries.md: %v", err)
	}
	ctx := context.Background()
	g := newSocialGraph(t, mem.New())
	snap, err := g.Snapshot(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := snap.Catalog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	lines := strings.Split(string(raw), "\n")
	for i := 0; i < len(lines); i++ {
		if lines[i] != "```gq" {
			continue
		}
		var body []string
		for i++; i < len(lines) && lines[i] != "```"; i++ {
			body = append(body, lines[i])
		}
		prog, err := gq.Compile(strings.Join(body, "\n"), cat)
		if err != nil {
			t.Fatalf("docs block before line %d: %v", i, err)
		}
		for _, p := range prog.Plans {
			if p.Read == nil {
				continue
			}
			seen[p.Name] = true
			t.Run(p.Name, func(t *testing.T) {
				want, ok := docGolden[p.Name]
				if !ok {
					t.Fatalf("docs example %s has no expected answer in docGolden", p.Name)
				}
				args, err := gq.Bind(p, docParams[p.Name])
				if err != nil {
					t.Fatal(err)
				}
				res, err := Execute(ctx, snap, p, args)
				if err != nil {
					t.Fatal(err)
				}
				for j, c := range res.Columns {
					if c.Name == "at" { // now() as at
						for _, row := range res.Rows {
							row[j] = "<now>"
						}
						res.Columns[j].Type = pg.Type{Kind: pg.KindString}
					}
				}
				if got := rowsText(res); got != want {
					t.Errorf("got  %s\nwant %s", got, want)
				}
			})
		}
	}
	for name := range docGolden {
		if !seen[name] {
			t.Errorf("docGolden has %s, which the docs no longer show", name)
		}
	}
}

// TestExampleQueries runs examples/social.gq (the quickstart's queries) on
// examples/social.jsonl with its post vectors filled by the built-in
// embedder (as the quickstart's omnigraph embed does), loaded through Load:
// every read query returns rows, and the filter's and the searches'
// answers are the ones worked out from the data file.
func TestExampleQueries(t *testing.T) {
	src, err := os.ReadFile("../../examples/social.gq")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.Open("../../examples/social.jsonl")
	if err != nil {
		t.Skipf("example data: %v", err)
	}
	defer data.Close()
	ctx := context.Background()
	g, err := graph.Init(ctx, mem.New(), socialSchema(t), graph.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	snap, _ := g.Snapshot(ctx, "main")
	cat, _ := snap.Catalog(ctx)
	spec, err := embed.SpecFromCatalog(cat)
	if err != nil {
		t.Fatal(err)
	}
	var embedded bytes.Buffer
	if _, err := embed.FillJSONL(ctx, data, &embedded, embed.Job{Spec: spec, Mode: embed.FillMissing}, embed.Builtin{}); err != nil {
		t.Fatal(err)
	}
	if _, err := load.Run(ctx, g, &embedded, load.Options{Mode: load.Append}); err != nil {
		t.Fatal(err)
	}
	params := map[string]map[string]any{
		"city_adults":        {"city": "Berlin", "min": 30},
		"friends_of_friends": {"h": "alice"},
		"staff":              {"slug": "acme"},
		"search_posts":       {"q": "graphs and data"},
		"fuzzy_posts":        {"q": "sourdoh recipes"},
		"similar_posts":      {"text": "type: Post\ntext: Commit graphs make audits easy"},
		"hybrid_posts":       {"q": "graphs"},
	}
	want := map[string]string{
		// Berlin: bob 29, carol 36, erin 50, xavier 42, zoe 56, emil 51.
		"city_adults": "zoe,Zoe Okafor,56 | emil,Emil Rossi,51 | erin,Erin Ng,50 | xavier,Xavier Smith,42 | carol,Carol Kim,36",
		// "graph" and "data" are each in one post; "and" is a stop word.
		"search_posts": "Branches for data are underrated,2.2728760710813796 | Commit graphs make audits easy,1.8153353149270663",
		"fuzzy_posts":  "Tried a new sourdough recipe",
	}
	snap, _ = g.Snapshot(ctx, "main")
	prog, err := gq.Compile(string(src), cat)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range prog.Plans {
		if p.Read == nil {
			continue
		}
		t.Run(p.Name, func(t *testing.T) {
			r, err := Run(ctx, snap, string(src), p.Name, params[p.Name])
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Rows) == 0 {
				t.Fatalf("%s returned nothing on the example data", p.Name)
			}
			if w, ok := want[p.Name]; ok && rowsText(r) != w {
				t.Fatalf("got  %s\nwant %s", rowsText(r), w)
			}
			// The built-in embedder gives a post's own embedded text its
			// own vector: distance 0.
			if p.Name == "similar_posts" && fmt.Sprint(r.Rows[0]) != "[Commit graphs make audits easy 0]" {
				t.Fatalf("similar_posts: the post's own text is not first at distance 0: %v", r.Rows)
			}
		})
	}
}
