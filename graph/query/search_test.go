package query

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend/counter"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/load"
	"github.com/omnigraph-go/omnigraph/graph/merge"
	"github.com/omnigraph-go/omnigraph/index/embed"
	"github.com/omnigraph-go/omnigraph/lang/gq"
)

const searchSchema = `
node Doc {
    slug: String @key
    status: String
    body: String? @index
    v: Vector(2)?
}
edge Cites: Doc -> Doc
`

// Bodies analyse to: d1 [appl, pie] (2), d2 [appl, appl, tart] (3),
// d3 [banana, bread] (2), d4 NULL; avgdl = 7/3 over the 3 non-NULL bodies.
const searchData = `{"type":"Doc","data":{"slug":"d1","status":"hit","body":"Apple pie","v":[1,0]}}
{"type":"Doc","data":{"slug":"d2","status":"miss","body":"apples, apple tart","v":[0,1]}}
{"type":"Doc","data":{"slug":"d3","status":"hit","body":"banana bread","v":[3,4]}}
{"type":"Doc","data":{"slug":"d4","status":"hit"}}
{"edge":"Cites","from":"d1","to":"d2"}
{"edge":"Cites","from":"d1","to":"d3"}`

const searchQueries = `
query find($q: String) { match { $d: Doc  search($d.body, $q) } return { $d.slug } }
query fz($q: String, $e: I64) { match { $d: Doc  fuzzy($d.body, $q, $e) } return { $d.slug } }
query phrase($q: String) { match { $d: Doc  match_text($d.body, $q) } return { $d.slug } }
query scored($q: String) {
    match { $d: Doc }
    return { $d.slug, bm25($d.body, $q) as s }
    order { $d.slug }
}
query ranked($q: String) {
    match { $d: Doc }
    return { $d.slug, bm25($d.body, $q) }
    order { bm25($d.body, $q) }
    limit 10
}
query near($q: Vector(2)) {
    match { $d: Doc }
    return { $d.slug, nearest($d.v, $q) as dist }
    order { nearest($d.v, $q) }
    limit 2
}
query near_hit($q: Vector(2)) {
    match { $d: Doc  $d.status = "hit" }
    return { $d.slug }
    order { nearest($d.v, $q) }
    limit 2
}
query near_cited($q: Vector(2)) {
    match { $a: Doc  $a cites $d }
    return { $d.slug }
    order { nearest($d.v, $q) }
    limit 1
}
query lit() {
    match { $d: Doc }
    return { $d.slug }
    order { nearest($d.v, [0, 1]) }
    limit 1
}
query no_apple() { match { $d: Doc  not { $d cites $e  search($e.body, "apple") } } return { $d.slug } }
query fused($q: Vector(2), $t: String) {
    match { $d: Doc }
    return { $d.slug, rrf(nearest($d.v, $q), bm25($d.body, $t), 10) as r }
    order { rrf(nearest($d.v, $q), bm25($d.body, $t), 10) }
    limit 3
}
`

func bm25(idf float64, tf, dl int, avgdl float64) float64 {
	f := float64(tf)
	return idf * f * 2.2 / (f + 1.2*(0.25+0.75*float64(dl)/avgdl))
}

// TestSearchGolden checks every search function on a small graph against
// answers worked by hand, BM25 against its formula.
func TestSearchGolden(t *testing.T) {
	g, _ := compatGraph(t, searchSchema, searchData)
	for _, tc := range []struct {
		name   string
		params map[string]any
		want   string
	}{
		{"find", map[string]any{"q": "APPLE"}, "d1,d2"},
		{"find", map[string]any{"q": "bread or pie"}, "d1,d3"}, // any term; "or" is a stop word
		{"find", map[string]any{"q": "the"}, ""},               // only stop words: no term
		{"fz", map[string]any{"q": "banan", "e": 1}, "d3"},
		{"fz", map[string]any{"q": "aple", "e": 0}, ""},
		{"fz", map[string]any{"q": "aple", "e": 1}, "d1,d2"},
		{"fz", map[string]any{"q": "tert", "e": 1}, "d2"},
		{"phrase", map[string]any{"q": "tart apples"}, "d1,d2"}, // terms, not the phrase, as in the original
		{"phrase", map[string]any{"q": "tart"}, "d2"},
		{"near", map[string]any{"q": []any{1, 0}}, "d1,d2"},        // d1 0, d2 √2, d3 √20; d4 NULL left out
		{"near_hit", map[string]any{"q": []any{0, 1}}, "d1,d3"},    // filters before top-k: d2 is nearest but a miss
		{"near_cited", map[string]any{"q": []any{0, 1.1}}, "d2"},   // ranks a traversal's destination
		{"ranked", map[string]any{"q": "bread apple"}, "d3,d2,d1"}, // see the scores below
		{"lit", nil, "d2"},
		{"no_apple", nil, "d2,d3,d4"}, // d1 cites d2 (apples)
	} {
		if got := slugs(t, g, searchQueries, tc.name, tc.params); got != tc.want {
			t.Errorf("%s %v = [%s], want [%s]", tc.name, tc.params, got, tc.want)
		}
	}

	// bm25 by the formula: N = 3, avgdl = 7/3; "appl" in 2 docs, "bread" in 1.
	avg := 7.0 / 3
	idfApple, idfBread := math.Log(1+(3-2+0.5)/(2+0.5)), math.Log(1+(3-1+0.5)/(1+0.5))
	want := map[string]float64{"d1": bm25(idfApple, 1, 2, avg), "d2": bm25(idfApple, 2, 3, avg), "d3": bm25(idfBread, 1, 2, avg), "d4": 0}
	for _, q := range []string{"apple bread", "bread apple"} {
		res, err := Head(context.Background(), g, "", searchQueries, "scored", map[string]any{"q": q})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Rows) != 4 {
			t.Fatalf("scored: %d rows", len(res.Rows))
		}
		for _, r := range res.Rows {
			slug := r[0].(string)
			w := want[slug]
			if got := r[1].(float64); math.Abs(got-w) > 1e-12 {
				t.Errorf("bm25(%s, %q) = %v, want %v", slug, q, got, w)
			}
		}
	}
	// ranked keeps rows holding a term (not d4), best first: d3 (the rarer
	// term) > d2 (apple twice) > d1.
	if !(want["d3"] > want["d2"] && want["d2"] > want["d1"]) {
		t.Fatalf("hand scores do not give d3,d2,d1: %v", want)
	}

	// nearest's value is the Euclidean distance.
	res, err := Head(context.Background(), g, "", searchQueries, "near", map[string]any{"q": []any{1, 0}})
	if err != nil {
		t.Fatal(err)
	}
	if d := res.Rows[1][1].(float64); math.Abs(d-math.Sqrt2) > 1e-9 || res.Rows[0][1].(float64) != 0 {
		t.Errorf("distances %v", res.Rows)
	}

	// rrf with k = 10, each arm its 3 best: nearest [1,0] ranks d1, d2, d3;
	// bm25 "bread" ranks d3 only. d1: 1/11; d3: 1/13 + 1/11; d2: 1/12.
	res, err = Head(context.Background(), g, "", searchQueries, "fused", map[string]any{"q": []any{1, 0}, "t": "bread"})
	if err != nil {
		t.Fatal(err)
	}
	got := ""
	for _, r := range res.Rows {
		got += fmt.Sprintf("%s=%.6f ", r[0], r[1])
	}
	if wantRRF := fmt.Sprintf("d3=%.6f d1=%.6f d2=%.6f ", 1.0/13+1.0/11, 1.0/11, 1.0/12); got != wantRRF {
		t.Errorf("fused = %s, want %s", got, wantRRF)
	}
}

// TestSearchChecks: the original's type-check rules for search calls.
func TestSearchChecks(t *testing.T) {
	g, _ := compatGraph(t, searchSchema, searchData)
	for _, tc := range []struct {
		q    string
		code gq.Code
	}{
		{`query q($v: Vector(2)) { match { $d: Doc } return { $d.slug } order { nearest($d.v, $v) } }`, gq.CodeLimit},
		{`query q($v: Vector(2)) { match { $d: Doc } return { $d.slug } order { rrf(nearest($d.v, $v), bm25($d.body, "x")) } }`, gq.CodeRRF}, // T21
		// T21 through an alias (issue 26 item 19): was accepted.
		{`query q($v: Vector(2)) { match { $d: Doc } return { $d.slug, rrf(nearest($d.v, $v), bm25($d.body, "x")) as score } order { score desc } }`, gq.CodeRRF},
		{`query q($v: Vector(2)) { match { $d: Doc } return { rrf(nearest($d.v, $v), bm25($d.body, "x"), 10) as fused, $d.slug } order { $d.slug, fused } }`, gq.CodeRRF},
		{`query q($v: Vector(3)) { match { $d: Doc } return { $d.slug } order { nearest($d.v, $v) } limit 1 }`, gq.CodeHops},
		{`query q() { match { $d: Doc } return { $d.slug } order { nearest($d.v, "text") } limit 1 }`, gq.CodeHops}, // no @embed
		{`query q() { match { $d: Doc } return { $d.slug } order { nearest($d.body, [1, 2]) } limit 1 }`, gq.CodeHops},
		{`query q() { match { $d: Doc  search($d.v, "x") } return { $d.slug } }`, gq.CodeTypeMismatch},
		{`query q($n: I64) { match { $d: Doc  search($d.body, $n) } return { $d.slug } }`, gq.CodeTypeMismatch},
		{`query q() { match { $d: Doc  bm25($d.body, "x") } return { $d.slug } }`, gq.CodeTypeMismatch},
		{`query q() { match { $d: Doc } return { $d.slug, search($d.body, "x") } }`, gq.CodeTypeMismatch},
		{`query q($v: Vector(2)) { match { $d: Doc } return { $d.slug } order { rrf(nearest($d.v, $v), $d.slug) } limit 1 }`, gq.CodeRRF},
		{`query q($v: Vector(2)) { match { $d: Doc } return { $d.slug } order { rrf(nearest($d.v, $v), bm25($d.body, "x"), 0) } limit 1 }`, gq.CodeRRF},
		{`query q($v: Vector(2)) { match { $d: Doc  $d cites $e } return { $d.slug } order { rrf(nearest($d.v, $v), bm25($e.body, "x")) } limit 1 }`, gq.CodeRRF},
		{`query q() { match { $a: Doc  $a $c:cites $b  search($c.x, "x") } return { $a.slug } }`, gq.CodeUnknownProperty},
		{`query q($v: Vector(2)) { match { $d: Doc } return { $d.slug as s } order { nearest($d.v, $v), s } limit 1 }`, gq.CodeColumn}, // T18
	} {
		_, err := Head(context.Background(), g, "", tc.q, "", nil)
		var e *gq.Error
		if !errors.As(err, &e) || e.Code != tc.code {
			t.Errorf("%s\n  = %v, want %s", tc.q, err, tc.code)
		}
	}
	// With a limit, ordering by the alias of rrf() runs.
	r, err := Head(context.Background(), g, "", `query q($v: Vector(2)) { match { $d: Doc } return { $d.slug, rrf(nearest($d.v, $v), bm25($d.body, "x")) as score } order { score desc } limit 2 }`, "", map[string]any{"v": []any{1.0, 0.0}})
	if err != nil || len(r.Rows) != 2 {
		t.Fatalf("rrf alias order with a limit: %v %v", r, err)
	}
}

// TestSearchBoundK: rrf's k from a parameter must be positive.
func TestSearchBoundK(t *testing.T) {
	g, _ := compatGraph(t, searchSchema, searchData)
	q := `query q($v: Vector(2), $k: I64) { match { $d: Doc } return { $d.slug } order { rrf(nearest($d.v, $v), bm25($d.body, "apple"), $k) } limit 2 }`
	if got := slugs(t, g, q, "", map[string]any{"v": []any{0, 1}, "k": 1}); got != "d2,d1" { // d2: 1/2 + 1/2; d1: 1/3 + 1/3
		t.Errorf("k=1: %s", got)
	}
	_, err := Head(context.Background(), g, "", q, "", map[string]any{"v": []any{0, 1}, "k": 0})
	if !errors.Is(err, gq.ErrInvalidQuery) || !strings.Contains(err.Error(), "greater than 0") {
		t.Errorf("k=0: %v", err)
	}
}

// TestSearchSnapshots: search reads the snapshot like any query: a branch
// sees its own rows (and its own BM25 statistics), main at a past commit
// sees the rows of then, and after a merge main sees the merged rows.
func TestSearchSnapshots(t *testing.T) {
	ctx := context.Background()
	g, first := compatGraph(t, searchSchema, searchData)
	if _, err := g.CreateBranch(ctx, "feature", "main"); err != nil {
		t.Fatal(err)
	}
	if _, err := load.Run(ctx, g, strings.NewReader(`{"type":"Doc","data":{"slug":"d5","status":"hit","body":"apple crumble","v":[1,0.1]}}`+"\n"), load.Options{Branch: "feature", Mode: load.Merge}); err != nil {
		t.Fatal(err)
	}
	on := func(branch, name string, params map[string]any) string {
		s, err := g.Snapshot(ctx, branch)
		if err != nil {
			t.Fatal(err)
		}
		return runSlugs(t, s, name, params)
	}
	apple := map[string]any{"q": "apple"}
	if got := on("feature", "find", apple); got != "d1,d2,d5" {
		t.Errorf("feature find = %s", got)
	}
	if got := on("main", "find", apple); got != "d1,d2" {
		t.Errorf("main find = %s", got)
	}
	if got := on("feature", "near", map[string]any{"q": []any{1, 0}}); got != "d1,d5" {
		t.Errorf("feature near = %s", got)
	}
	// The past: main's first commit, after later writes on main.
	if _, err := load.Run(ctx, g, strings.NewReader(`{"type":"Doc","data":{"slug":"d6","status":"hit","body":"apple apple apple","v":[1,0]}}`+"\n"), load.Options{Mode: load.Merge}); err != nil {
		t.Fatal(err)
	}
	if got := on("main", "ranked", apple); got != "d6,d2,d1" {
		t.Errorf("main ranked = %s", got)
	}
	past, err := g.SnapshotAt(ctx, first.Commit.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got := runSlugs(t, past, "ranked", apple); got != "d2,d1" {
		t.Errorf("past ranked = %s", got)
	}
	if _, err := merge.Run(ctx, g, "feature", "main", merge.Options{}); err != nil {
		t.Fatal(err)
	}
	if got := on("main", "find", apple); got != "d1,d2,d5,d6" {
		t.Errorf("merged find = %s", got)
	}
	if got := on("main", "near", map[string]any{"q": []any{1, 0}}); got != "d6,d1" { // d1, d6 at 0: greater id first
		t.Errorf("merged near = %s", got)
	}
}

func runSlugs(t *testing.T, s *graph.Snapshot, name string, params map[string]any) string {
	t.Helper()
	res, err := Run(context.Background(), s, searchQueries, name, params)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var out []string
	for _, r := range res.Rows {
		out = append(out, r[0].(string))
	}
	return strings.Join(out, ",")
}

// The original's tests/search.rs MOCK_SEARCH_SCHEMA and seed data: vectors
// made by the mock embedder, queried with text.
const mockSchema = `
node Doc {
    slug: String @key
    title: String @index
    embedding: Vector(4) @embed("title", model="test-model-a") @index
}
`

const mockQueries = `
query vector_search_vector($q: Vector(4)) {
    match { $d: Doc }
    return { $d.slug, $d.title }
    order { nearest($d.embedding, $q) }
    limit 3
}
query vector_search_string($q: String) {
    match { $d: Doc }
    return { $d.slug, $d.title }
    order { nearest($d.embedding, $q) }
    limit 3
}
query vector_search_literal() {
    match { $d: Doc }
    return { $d.slug, $d.title }
    order { nearest($d.embedding, "alpha") }
    limit 3
}
query hybrid_search_string($vq: String, $tq: String) {
    match { $d: Doc }
    return { $d.slug, $d.title }
    order { rrf(nearest($d.embedding, $vq), bm25($d.title, $tq)) }
    limit 3
}
`

func vecJSON(v []float32) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf("%.8f", x)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// TestSearchEmbeddedQuery: nearest($d.embedding, "text") embeds the text
// with the configured embedder (the original's mock tests), and a recorded
// model other than the embedder's is refused naming both.
func TestSearchEmbeddedQuery(t *testing.T) {
	var data []string
	for _, d := range [][2]string{{"alpha-doc", "alpha guide"}, {"beta-doc", "beta guide"}, {"gamma-doc", "gamma handbook"}} {
		word := strings.Fields(d[1])[0]
		data = append(data, fmt.Sprintf(`{"type":"Doc","data":{"slug":%q,"title":%q,"embedding":%s}}`, d[0], d[1], vecJSON(embed.Mock(word, 4))))
	}
	g, _ := compatGraph(t, mockSchema, strings.Join(data, "\n"))
	t.Setenv("OMNIGRAPH_EMBEDDINGS_MOCK", "1")
	t.Setenv("OMNIGRAPH_EMBED_PROVIDER", "")
	t.Setenv("OMNIGRAPH_EMBED_MODEL", "test-model-a")
	explicit := slugs(t, g, mockQueries, "vector_search_vector", map[string]any{"q": []any{float64(embed.Mock("alpha", 4)[0]), float64(embed.Mock("alpha", 4)[1]), float64(embed.Mock("alpha", 4)[2]), float64(embed.Mock("alpha", 4)[3])}})
	text := slugs(t, g, mockQueries, "vector_search_string", map[string]any{"q": "alpha"})
	if !strings.HasPrefix(text, "alpha-doc,") || text != explicit {
		t.Errorf("string %s, explicit %s", text, explicit)
	}
	if got := slugs(t, g, mockQueries, "vector_search_literal", nil); !strings.HasPrefix(got, "alpha-doc,") {
		t.Errorf("literal = %s", got)
	}
	if got := slugs(t, g, mockQueries, "hybrid_search_string", map[string]any{"vq": "alpha", "tq": "alpha"}); !strings.HasPrefix(got, "alpha-doc,") {
		t.Errorf("hybrid = %s", got)
	}
	t.Setenv("OMNIGRAPH_EMBED_MODEL", "test-model-b")
	_, err := Head(context.Background(), g, "", mockQueries, "vector_search_string", map[string]any{"q": "alpha"})
	if !errors.Is(err, embed.ErrEmbed) || !strings.Contains(err.Error(), "test-model-a") || !strings.Contains(err.Error(), "test-model-b") {
		t.Errorf("model mismatch: %v", err)
	}
	// An explicit vector needs no embedder at all.
	t.Setenv("OMNIGRAPH_EMBEDDINGS_MOCK", "")
	t.Setenv("OMNIGRAPH_EMBED_PROVIDER", "openai")
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OMNIGRAPH_EMBED_API_KEY", "")
	if got := slugs(t, g, mockQueries, "vector_search_vector", map[string]any{"q": []any{1, 0, 0, 0}}); strings.Count(got, ",") != 2 {
		t.Errorf("explicit vector without an embedder = %s", got)
	}
	_, err = Head(context.Background(), g, "", mockQueries, "vector_search_string", map[string]any{"q": "alpha"})
	if !errors.Is(err, embed.ErrEmbed) || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Errorf("no key: %v", err)
	}
}

// TestSearchEdgeFanout is the original's nearest_rank_survives_bound_edge_fanout
// and rrf_rank_preserves_every_bound_edge_row_once.
func TestSearchEdgeFanout(t *testing.T) {
	g, _ := compatGraph(t, `
node RankedDoc {
    slug: String @key
    embedding: Vector(4)
}

edge RankedLink: RankedDoc -> RankedDoc {
    label: String
}
`, `{"type":"RankedDoc","data":{"slug":"rank-1","embedding":[0.0,0.0,0.0,0.0]}}
{"type":"RankedDoc","data":{"slug":"rank-2","embedding":[1.0,0.0,0.0,0.0]}}
{"type":"RankedDoc","data":{"slug":"rank-3","embedding":[2.0,0.0,0.0,0.0]}}
{"type":"RankedDoc","data":{"slug":"sink","embedding":[9.0,0.0,0.0,0.0]}}
{"edge":"RankedLink","from":"rank-3","to":"sink","data":{"id":"edge-c","label":"C"}}
{"edge":"RankedLink","from":"rank-2","to":"sink","data":{"id":"edge-b","label":"B"}}
{"edge":"RankedLink","from":"rank-1","to":"sink","data":{"id":"edge-a2","label":"A2"}}
{"edge":"RankedLink","from":"rank-1","to":"sink","data":{"id":"edge-a1","label":"A1"}}`)
	q := `
query nearest_edges($q: Vector(4)) {
    match {
        $d: RankedDoc
        $d $w:rankedLink $target
    }
    return { $d.slug, $w.label }
    order { nearest($d.embedding, $q) }
    limit 4
}

query rrf_edges($q1: Vector(4), $q2: Vector(4)) {
    match {
        $d: RankedDoc
        $d $w:rankedLink $target
    }
    return { $d.slug, $w.label }
    order { rrf(nearest($d.embedding, $q1), nearest($d.embedding, $q2)) }
    limit 4
}`
	zero := []any{0, 0, 0, 0}
	want := `{"d.slug":"rank-1","w.label":"A1"} | {"d.slug":"rank-1","w.label":"A2"} | {"d.slug":"rank-2","w.label":"B"} | {"d.slug":"rank-3","w.label":"C"}`
	if got := rowsJSON(t, g, q, "nearest_edges", map[string]any{"q": zero}); got != want {
		t.Errorf("nearest_edges = %s", got)
	}
	if got := rowsJSON(t, g, q, "rrf_edges", map[string]any{"q1": zero, "q2": zero}); got != want {
		t.Errorf("rrf_edges = %s", got)
	}
}

// TestSearchWarmBudget counts storage requests (backend/counter): a bm25
// top-10, a nearest top-10 and an rrf of both, repeated on a warm read-only
// handle, cost the same small number of requests for 200 and for 4,000
// documents (the branch freshness probe: no table reads), and the same
// answers. Measured: 1 request each.
func TestSearchWarmBudget(t *testing.T) {
	ctx := context.Background()
	q := `
query b($q: String) { match { $d: Doc } return { $d.slug } order { bm25($d.body, $q) } limit 10 }
query n($v: Vector(2)) { match { $d: Doc } return { $d.slug } order { nearest($d.v, $v) } limit 10 }
query r($q: String, $v: Vector(2)) { match { $d: Doc } return { $d.slug } order { rrf(bm25($d.body, $q), nearest($d.v, $v)) } limit 10 }
`
	params := map[string]map[string]any{"b": {"q": "apple"}, "n": {"v": []any{1, 0}}, "r": {"q": "apple", "v": []any{1, 0}}}
	costs := map[int][]int{}
	for _, n := range []int{200, 4000} {
		cnt := counter.New(mem.New())
		w, err := graph.Init(ctx, cnt, searchSchema, graph.InitOptions{Actor: "t"})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		words := []string{"apple", "pear", "plum", "fig", "kiwi"}
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, `{"type":"Doc","data":{"slug":"d%05d","status":"hit","body":"%s %s","v":[%d,%d]}}`+"\n", i, words[i%5], words[(i/5)%5], i%7, i%11)
		}
		if _, err := load.Run(ctx, w, strings.NewReader(b.String()), load.Options{Mode: load.Overwrite}); err != nil {
			t.Fatal(err)
		}
		w.Close()
		g, err := graph.Open(ctx, cnt, graph.OpenOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"b", "n", "r"} {
			first, err := Head(ctx, g, "main", q, name, params[name])
			if err != nil {
				t.Fatal(err)
			}
			if len(first.Rows) != 10 {
				t.Fatalf("%s: %d rows", name, len(first.Rows))
			}
			cnt.Reset()
			again, err := Head(ctx, g, "main", q, name, params[name])
			if err != nil {
				t.Fatal(err)
			}
			c := cnt.Snapshot()
			costs[n] = append(costs[n], c.Total)
			if c.Total > 2 {
				t.Errorf("%d docs, %s: warm repeat cost %s, budget 2", n, name, c)
			}
			if rowsText(again) != rowsText(first) {
				t.Errorf("%s: warm answer differs", name)
			}
		}
		g.Close()
	}
	if fmt.Sprint(costs[200]) != fmt.Sprint(costs[4000]) {
		t.Errorf("warm cost depends on table size: %v", costs)
	}
	t.Logf("warm repeat requests (bm25, nearest, rrf): 200 docs %v, 4000 docs %v", costs[200], costs[4000])
}

// BenchmarkSearchScan times warm bm25, nearest and search top-10 queries
// over 100k documents (exact scans: no index).
func BenchmarkSearchScan(b *testing.B) {
	ctx := context.Background()
	g, err := graph.Init(ctx, mem.New(), searchSchema, graph.InitOptions{Actor: "b"})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	words := strings.Fields("apple pear plum fig kiwi grape lemon lime mango peach cherry melon berry olive")
	var sb strings.Builder
	for i := 0; i < 100_000; i++ {
		fmt.Fprintf(&sb, `{"type":"Doc","data":{"slug":"d%06d","status":"hit","body":"%s %s %s pie","v":[%d,%d]}}`+"\n", i, words[i%14], words[(i/14)%14], words[(i/196)%14], i%101, i%97)
	}
	if _, err := load.Run(ctx, g, strings.NewReader(sb.String()), load.Options{Mode: load.Overwrite}); err != nil {
		b.Fatal(err)
	}
	q := `
query b($q: String) { match { $d: Doc } return { $d.slug } order { bm25($d.body, $q) } limit 10 }
query n($v: Vector(2)) { match { $d: Doc } return { $d.slug } order { nearest($d.v, $v) } limit 10 }
query s($q: String) { match { $d: Doc  search($d.body, $q) } return { $d.slug } limit 10 }
`
	for _, tc := range []struct {
		name   string
		params map[string]any
	}{{"b", map[string]any{"q": "mango cherry"}}, {"n", map[string]any{"v": []any{3, 4}}}, {"s", map[string]any{"q": "olive"}}} {
		b.Run(map[string]string{"b": "bm25", "n": "nearest", "s": "search"}[tc.name], func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := Head(ctx, g, "main", q, tc.name, tc.params); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
