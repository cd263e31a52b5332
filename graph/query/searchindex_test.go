package query

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/counter"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/load"
	"github.com/omnigraph-go/omnigraph/graph/merge"
	"github.com/omnigraph-go/omnigraph/graph/optimize"
	"github.com/omnigraph-go/omnigraph/graph/schema"
	"github.com/omnigraph-go/omnigraph/index/fulltext"
	"github.com/omnigraph-go/omnigraph/index/vector"
)

const idxSchema = `
node Doc {
    slug: String @key
    tag: String
    title: String @index
    body: String? @index
    v: Vector(4)? @index
}
`

const idxQueries = `
query find($q: String) { match { $d: Doc  search($d.body, $q) } return { $d.slug } }
query find_tag($q: String, $t: String) { match { $d: Doc  search($d.body, $q)  $d.tag = $t } return { $d.slug, $d.title } }
query both($q: String, $r: String) { match { $d: Doc  search($d.body, $q)  match_text($d.title, $r) } return { $d.slug } }
query fz($q: String) { match { $d: Doc  fuzzy($d.body, $q, 1) } return { $d.slug } }
query phrase($q: String) { match { $d: Doc  match_text($d.title, $q) } return { $d.slug } order { $d.slug desc } limit 7 }
query scored($q: String) { match { $d: Doc } return { $d.slug, bm25($d.body, $q) as s } order { $d.slug } }
query ranked($q: String, $k: I64) { match { $d: Doc } return { $d.slug, bm25($d.body, $q) as s } order { bm25($d.body, $q) } limit $k }
query ranked_t($q: String) { match { $d: Doc } return { $d } order { bm25($d.title, $q), $d.tag } limit 5 }
query ranked_f($q: String, $t: String) { match { $d: Doc  $d.tag = $t } return { $d.slug } order { bm25($d.body, $q) } limit 4 }
query ranked_s($q: String) { match { $d: Doc  search($d.title, $q) } return { $d.slug } order { bm25($d.body, $q) } limit 4 }
query near($v: Vector(4), $k: I64) { match { $d: Doc } return { $d.slug, nearest($d.v, $v) as dist } order { nearest($d.v, $v) } limit $k }
query fused($q: String, $v: Vector(4)) { match { $d: Doc } return { $d.slug, rrf(bm25($d.body, $q), nearest($d.v, $v)) as r } order { rrf(bm25($d.body, $q), nearest($d.v, $v)) } limit 6 }
query fused2($q: String) { match { $d: Doc } return { $d.slug } order { rrf(bm25($d.body, $q), bm25($d.title, $q)) } limit 5 }
`

var idxWords = strings.Fields("apple pear plum fig kiwi grape lemon lime apples running runner ran")

// idxDocs renders n random Doc lines with slugs from start: small
// vocabularies so terms repeat and scores tie; some bodies NULL; vectors on
// a small grid so distances tie.
func idxDocs(rng *rand.Rand, start, n int) string {
	var b strings.Builder
	for i := start; i < start+n; i++ {
		words := func(k int) string {
			ws := make([]string, k)
			for j := range ws {
				ws[j] = idxWords[rng.IntN(len(idxWords))]
			}
			return strings.Join(ws, " ")
		}
		body := fmt.Sprintf("%q", words(1+rng.IntN(5)))
		if rng.IntN(8) == 0 {
			body = "null"
		}
		v := "null"
		if rng.IntN(10) != 0 {
			v = fmt.Sprintf("[%d,%d,%d,%d]", rng.IntN(4), rng.IntN(4), rng.IntN(3), rng.IntN(2))
		}
		fmt.Fprintf(&b, `{"type":"Doc","data":{"slug":"d%04d","tag":"t%d","title":%q,"body":%s,"v":%s}}`+"\n",
			i, rng.IntN(3), words(1+rng.IntN(3)), body, v)
	}
	return b.String()
}

type idxCase struct {
	name   string
	params map[string]any
}

func idxCases(rng *rand.Rand) []idxCase {
	var cs []idxCase
	w := func() string { return idxWords[rng.IntN(len(idxWords))] }
	vec := func() []any { return []any{rng.IntN(4), rng.IntN(4), rng.IntN(3), rng.IntN(2)} }
	for i := 0; i < 3; i++ {
		q := w() + " " + w()
		cs = append(cs,
			idxCase{"find", map[string]any{"q": q}},
			idxCase{"find_tag", map[string]any{"q": q, "t": "t1"}},
			idxCase{"both", map[string]any{"q": w(), "r": w()}},
			idxCase{"fz", map[string]any{"q": w() + "x"}},
			idxCase{"phrase", map[string]any{"q": q}},
			idxCase{"scored", map[string]any{"q": q}},
			idxCase{"ranked", map[string]any{"q": q, "k": 1 + rng.IntN(12)}},
			idxCase{"ranked", map[string]any{"q": w(), "k": 3}},
			idxCase{"ranked_t", map[string]any{"q": q}},
			idxCase{"ranked_f", map[string]any{"q": q, "t": "t2"}},
			idxCase{"ranked_s", map[string]any{"q": q}},
			idxCase{"near", map[string]any{"v": vec(), "k": 1 + rng.IntN(10)}},
			idxCase{"fused", map[string]any{"q": q, "v": vec()}},
			idxCase{"fused2", map[string]any{"q": q}},
		)
	}
	cs = append(cs, idxCase{"find", map[string]any{"q": "the of"}}, idxCase{"ranked", map[string]any{"q": "zebra", "k": 5}})
	return cs
}

// compareIndexScan runs every case on s through the indexes and as scans
// (on a fresh handle each way, so no cached rows carry over) and fails on
// any difference; it returns how many scan steps an index narrowed.
func compareIndexScan(t *testing.T, store backend.StorageAdapter, at func(*graph.Graph) *graph.Snapshot, cases []idxCase, where string) int64 {
	t.Helper()
	ctx := context.Background()
	run := func(indexes bool) []string {
		useSearchIndexes = indexes
		defer func() { useSearchIndexes = true }()
		g, err := graph.Open(ctx, store, graph.OpenOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		s := at(g)
		var out []string
		for _, c := range cases {
			res, err := Run(ctx, s, idxQueries, c.name, c.params)
			if err != nil {
				t.Fatalf("%s %s %v: %v", where, c.name, c.params, err)
			}
			out = append(out, rowsText(res))
		}
		return out
	}
	before := indexScans.Load()
	withIdx := run(true)
	used := indexScans.Load() - before
	scan := run(false)
	t.Logf("%s: %d of %d queries narrowed by an index", where, used, len(cases))
	nonEmpty := 0
	for i := range cases {
		if withIdx[i] != scan[i] {
			t.Errorf("%s: %s %v:\n index %s\n scan  %s", where, cases[i].name, cases[i].params, withIdx[i], scan[i])
		}
		if scan[i] != "" {
			nonEmpty++
		}
	}
	if nonEmpty < len(cases)/2 {
		t.Errorf("%s: only %d of %d cases return rows: the data does not exercise the queries", where, nonEmpty, len(cases))
	}
	return used
}

func ensureIndices(t *testing.T, g *graph.Graph, branch string) *schema.IndexResult {
	t.Helper()
	res, err := schema.EnsureIndices(context.Background(), g, schema.IndexOptions{Branch: branch})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestSearchIndexMatchesScan: with full-text and (exhaustively probed)
// vector indexes built by ensure-indices, every search query answers as
// its scan does, rank orders and scores included: on random data, after
// appends the index does not cover, deletes and updates, on a branch, at
// a past snapshot, after a merge, after optimize and with the index file
// gone.
// exactIndexGraph makes the vector index exact (every list probed, built
// from 50 vectors) until the test ends, and returns a new graph of
// idxSchema over a memory store with a seeded generator.
func exactIndexGraph(t *testing.T, seed uint64) (*mem.Store, *graph.Graph, *rand.Rand) {
	t.Helper()
	m, p := vector.MinRows, vector.NProbe
	t.Cleanup(func() { vector.MinRows, vector.NProbe = m, p })
	vector.MinRows, vector.NProbe = 50, 1<<20 // probe every list: exact
	store := mem.New()
	g, err := graph.Init(context.Background(), store, idxSchema, graph.InitOptions{Actor: "t"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return store, g, rand.New(rand.NewPCG(seed, 1))
}

func TestSearchIndexMatchesScan(t *testing.T) {
	ctx := context.Background()
	store, g, rng := exactIndexGraph(t, 19)
	for i := 0; i < 3; i++ {
		if _, err := load.Run(ctx, g, strings.NewReader(idxDocs(rng, i*100, 100)), load.Options{Mode: load.Merge}); err != nil {
			t.Fatal(err)
		}
	}
	res := ensureIndices(t, g, "main")
	kinds := map[string]bool{}
	for _, b := range res.Built {
		kinds[b.Kind+":"+b.Column] = true
	}
	if !kinds["fulltext:body"] || !kinds["fulltext:title"] || !kinds["ivf:v"] {
		t.Fatalf("ensure-indices built %+v", res.Built)
	}
	for _, p := range res.Pending {
		if p.Columns == "body" || p.Columns == "title" || p.Columns == "v" {
			t.Errorf("built index still pending: %+v", p)
		}
	}
	if again := ensureIndices(t, g, "main"); !again.NoOp {
		t.Errorf("second ensure-indices built %+v", again.Built)
	}
	cases := idxCases(rng)
	head := func(branch string) func(*graph.Graph) *graph.Snapshot {
		return func(g *graph.Graph) *graph.Snapshot {
			s, err := g.Snapshot(ctx, branch)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	}
	if used := compareIndexScan(t, store, head("main"), cases, "covered"); used < int64(len(cases))*3/4 {
		t.Errorf("indexes narrowed %d of %d queries", used, len(cases))
	}
	ps, err := g.Snapshot(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	past := ps.CommitID()
	// Appends (uncovered), updates (a newer deletion file on covered
	// fragments plus new rows) and deletes.
	if _, err := load.Run(ctx, g, strings.NewReader(idxDocs(rng, 300, 40)), load.Options{Mode: load.Merge}); err != nil {
		t.Fatal(err)
	}
	if _, err := load.Run(ctx, g, strings.NewReader(idxDocs(rng, 20, 30)), load.Options{Mode: load.Merge}); err != nil {
		t.Fatal(err)
	}
	qDelete(t, g, "main", graph.NodeTableKey("Doc"), "d0001", "d0002", "d0150", "d0310", "d0299")
	if used := compareIndexScan(t, store, head("main"), cases, "partial"); used < int64(len(cases))*3/4 {
		t.Error("a partial index was not used")
	}
	pastAt := func(g *graph.Graph) *graph.Snapshot {
		s, err := g.SnapshotAt(ctx, past)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	compareIndexScan(t, store, pastAt, cases, "past snapshot")
	// A branch: writes of its own, then its own indexes.
	if _, err := g.CreateBranch(ctx, "feature", "main"); err != nil {
		t.Fatal(err)
	}
	if _, err := load.Run(ctx, g, strings.NewReader(idxDocs(rng, 400, 60)), load.Options{Mode: load.Merge, Branch: "feature"}); err != nil {
		t.Fatal(err)
	}
	qDelete(t, g, "feature", graph.NodeTableKey("Doc"), "d0003", "d0404")
	compareIndexScan(t, store, head("feature"), cases, "branch")
	ensureIndices(t, g, "feature")
	compareIndexScan(t, store, head("feature"), cases, "branch indexed")
	if _, err := merge.Run(ctx, g, "feature", "main", merge.Options{}); err != nil {
		t.Fatal(err)
	}
	compareIndexScan(t, store, head("main"), cases, "merged")
	if _, err := optimize.Run(ctx, g, optimize.Options{}); err != nil {
		t.Fatal(err)
	}
	s, err := g.Snapshot(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	ds, err := s.OpenTable(ctx, graph.NodeTableKey("Doc"))
	if err != nil {
		t.Fatal(err)
	}
	if !fulltext.Covers(ds, "body") || !vector.Covers(ds, "v") {
		t.Fatal("optimize did not rebuild the search indexes over the compacted table")
	}
	if used := compareIndexScan(t, store, head("main"), cases, "optimized"); used < int64(len(cases))*3/4 {
		t.Errorf("after optimize indexes narrowed %d of %d queries", used, len(cases))
	}
	// A damaged vector list (its directory intact): the query scans.
	vx, _ := vector.Index(ds, "v")
	raw, _, err := store.Get(ctx, ds.Path()+"/"+vx.Path)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)-1] ^= 0xff
	if _, err := store.Put(ctx, ds.Path()+"/"+vx.Path, raw); err != nil {
		t.Fatal(err)
	}
	compareIndexScan(t, store, head("main"), cases, "damaged list")
	// Index files gone or damaged: ignored.
	ix, _ := fulltext.Index(ds, "body")
	if err := store.Delete(ctx, ds.Path()+"/"+ix.Path); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Put(ctx, ds.Path()+"/"+vx.Path, []byte("OGIVF01\ngarbage")); err != nil {
		t.Fatal(err)
	}
	compareIndexScan(t, store, head("main"), cases, "files gone")
}

// clusteredDocs renders n docs with dim-dimensional vectors drawn around
// 64 seeded cluster centres, and bodies from a vocabulary of 200 words.
func clusteredDocs(rng *rand.Rand, centres [][]float64, start, n int) string {
	return noisyDocs(rng, centres, start, n, 0.5)
}

// noisyDocs is clusteredDocs with noise sigma around the centres.
func noisyDocs(rng *rand.Rand, centres [][]float64, start, n int, sigma float64) string {
	var b strings.Builder
	dim := len(centres[0])
	for i := start; i < start+n; i++ {
		c := centres[rng.IntN(len(centres))]
		parts := make([]string, dim)
		for k := range parts {
			parts[k] = fmt.Sprintf("%.5f", c[k]+rng.NormFloat64()*sigma)
		}
		fmt.Fprintf(&b, `{"type":"Doc","data":{"slug":"d%06d","tag":"t%d","title":"w%d","body":"w%d w%d w%d","v":[%s]}}`+"\n",
			i, rng.IntN(3), rng.IntN(200), rng.IntN(200), rng.IntN(200), rng.IntN(50), strings.Join(parts, ","))
	}
	return b.String()
}

func centres(rng *rand.Rand, k, dim int) [][]float64 {
	out := make([][]float64, k)
	for i := range out {
		out[i] = make([]float64, dim)
		for j := range out[i] {
			out[i][j] = rng.Float64()*4 - 2
		}
	}
	return out
}

const annSchema = `
node Doc {
    slug: String @key
    tag: String
    title: String @index
    body: String? @index
    v: Vector(8)? @index
}
`

const annQueries = `
query near($v: Vector(8)) { match { $d: Doc } return { $d.slug } order { nearest($d.v, $v) } limit 10 }
query ranked($q: String) { match { $d: Doc } return { $d.slug } order { bm25($d.body, $q) } limit 10 }
query point($s: String) { match { $d: Doc  $d.slug = $s } return { $d.slug } }
`

// TestVectorIndexRecall: nearest through the IVF index (default probes)
// finds at least 90% of the exact top 10 on seeded datasets: 20,000
// vectors in separated clusters (8 dimensions) and in overlapping ones (24).
func TestVectorIndexRecall(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		dim   int
		sigma float64
	}{{8, 0.5}, {24, 1.3}} {
		rng := rand.New(rand.NewPCG(7, uint64(tc.dim)))
		cs := centres(rng, 256, tc.dim)
		g, err := graph.Init(ctx, mem.New(), strings.ReplaceAll(annSchema, "Vector(8)", fmt.Sprintf("Vector(%d)", tc.dim)), graph.InitOptions{Actor: "t"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := load.Run(ctx, g, strings.NewReader(noisyDocs(rng, cs, 0, 20000, tc.sigma)), load.Options{Mode: load.Overwrite}); err != nil {
			t.Fatal(err)
		}
		ensureIndices(t, g, "main")
		src := strings.ReplaceAll(annQueries, "Vector(8)", fmt.Sprintf("Vector(%d)", tc.dim))
		recall := annRecall(t, g, src, rng, cs, 40)
		t.Logf("%d dimensions, sigma %.1f: recall@10 = %.3f over 40 queries (20,000 vectors, %d probes)", tc.dim, tc.sigma, recall, vector.NProbe)
		if recall < 0.9 {
			t.Errorf("%d dimensions: recall@10 = %.3f, want >= 0.9", tc.dim, recall)
		}
		g.Close()
	}
}

// annRecall is the mean recall@10 of the index against the exact scan
// over queries near random cluster centres.
func annRecall(t testing.TB, g *graph.Graph, src string, rng *rand.Rand, cs [][]float64, queries int) float64 {
	total := 0.0
	for i := 0; i < queries; i++ {
		c := cs[rng.IntN(len(cs))]
		q := make([]any, len(c))
		for k := range q {
			q[k] = c[k] + rng.NormFloat64()*0.5
		}
		got := slugsOf(t, g, src, "near", map[string]any{"v": q}, true)
		want := slugsOf(t, g, src, "near", map[string]any{"v": q}, false)
		if len(want) != 10 {
			t.Fatalf("exact answer has %d rows", len(want))
		}
		hit := 0
		for _, w := range want {
			for _, x := range got {
				if x == w {
					hit++
					break
				}
			}
		}
		total += float64(hit) / 10
	}
	return total / float64(queries)
}

func slugsOf(t testing.TB, g *graph.Graph, src, name string, params map[string]any, indexes bool) []string {
	t.Helper()
	useSearchIndexes = indexes
	defer func() { useSearchIndexes = true }()
	before := indexScans.Load()
	res, err := Head(context.Background(), g, "main", src, name, params)
	if err != nil {
		t.Fatal(err)
	}
	if indexes && name != "point" && indexScans.Load() == before {
		t.Fatalf("%s did not use an index", name)
	}
	out := make([]string, len(res.Rows))
	for i, r := range res.Rows {
		out[i] = r[0].(string)
	}
	return out
}

// TestSearchIndexRequestBudget: a bm25 or nearest top 10 through the
// indexes costs a bounded number of store requests that does not grow
// with the table (asserted at 6,000 and 24,000 rows, loaded as 12 and 48
// fragments): on a warm handle (the snapshot, catalog and table manifest
// read by an earlier point query) and from a cold open. The index file is
// one GET (the vector index: its directory and NProbe lists), and each of
// the k rows costs at most two ranged GETs (its fragment's footer, its row
// group): 1 + 2k, whatever the table's size. A scan of the same query
// reads every fragment.
func TestSearchIndexRequestBudget(t *testing.T) {
	ctx := context.Background()
	type cost struct{ warmBM25, warmNear, repeat, cold, scanBM25 int }
	costs := map[int]cost{}
	for _, n := range []int{6000, 24000} {
		rng := rand.New(rand.NewPCG(3, uint64(n)))
		cs := centres(rng, 32, 8)
		cnt := counter.New(mem.New())
		w, err := graph.Init(ctx, cnt, annSchema, graph.InitOptions{Actor: "t"})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i += 500 {
			if _, err := load.Run(ctx, w, strings.NewReader(clusteredDocs(rng, cs, i, 500)), load.Options{Mode: load.Merge}); err != nil {
				t.Fatal(err)
			}
		}
		ensureIndices(t, w, "main")
		w.Close()
		open := func() *graph.Graph {
			g, err := graph.Open(ctx, cnt, graph.OpenOptions{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			return g
		}
		near := map[string]any{"v": []any{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8}}
		bm := map[string]any{"q": "w7 w12"}
		var c cost
		// Cold: open, then the query.
		cnt.Reset()
		g := open()
		slugsOf(t, g, annQueries, "ranked", bm, true)
		c.cold = cnt.Snapshot().Total
		g.Close()
		// Warm: a point query first, then each search once.
		g = open()
		slugsOf(t, g, annQueries, "point", map[string]any{"s": "d000001"}, true)
		cnt.Reset()
		want := slugsOf(t, g, annQueries, "ranked", bm, true)
		c.warmBM25 = cnt.Snapshot().Total
		cnt.Reset()
		slugsOf(t, g, annQueries, "near", near, true)
		c.warmNear = cnt.Snapshot().Total
		cnt.Reset()
		slugsOf(t, g, annQueries, "ranked", bm, true)
		c.repeat = cnt.Snapshot().Total
		g.Close()
		g = open()
		slugsOf(t, g, annQueries, "point", map[string]any{"s": "d000001"}, true)
		cnt.Reset()
		got := slugsOf(t, g, annQueries, "ranked", bm, false)
		c.scanBM25 = cnt.Snapshot().Total
		g.Close()
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%d rows: index answer %v, scan %v", n, want, got)
		}
		costs[n] = c
		t.Logf("%d rows: requests warm bm25 %d, warm nearest %d, repeat %d, cold open+bm25 %d; scan bm25 %d", n, c.warmBM25, c.warmNear, c.repeat, c.cold, c.scanBM25)
	}
	const k, probe = 10, 2 // probe: the branch freshness check
	bm25Budget := probe + 1 + 2*k
	nearBudget := probe + 1 + vector.NProbe + 2*k
	for n, c := range costs {
		if c.warmBM25 > bm25Budget || c.warmNear > nearBudget || c.cold > bm25Budget+12 || c.repeat > probe {
			t.Errorf("%d rows: %+v over budget (bm25 %d, nearest %d, cold %d, repeat %d)", n, c, bm25Budget, nearBudget, bm25Budget+12, probe)
		}
	}
	if big := costs[24000]; big.scanBM25 <= big.warmBM25 {
		t.Errorf("the scan (%d requests) is no dearer than the index (%d): the test does not measure the index", big.scanBM25, big.warmBM25)
	}
}

// TestSearchIndexConcurrent: queries through the indexes on one handle in
// parallel (sharing its cached searchers, index files and rows) answer as
// they do one at a time.
func TestSearchIndexConcurrent(t *testing.T) {
	defer func(m int) { vector.MinRows = m }(vector.MinRows)
	vector.MinRows = 50
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(5, 5))
	store := mem.New()
	g, err := graph.Init(ctx, store, idxSchema, graph.InitOptions{Actor: "t"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if _, err := load.Run(ctx, g, strings.NewReader(idxDocs(rng, i*200, 200)), load.Options{Mode: load.Merge}); err != nil {
			t.Fatal(err)
		}
	}
	ensureIndices(t, g, "main")
	if _, err := load.Run(ctx, g, strings.NewReader(idxDocs(rng, 400, 20)), load.Options{Mode: load.Merge}); err != nil {
		t.Fatal(err)
	}
	g.Close()
	cases := idxCases(rng)
	want := make([]string, len(cases))
	serial, err := graph.Open(ctx, store, graph.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		res, err := Head(ctx, serial, "main", idxQueries, c.name, c.params)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = rowsText(res)
	}
	serial.Close()
	shared, err := graph.Open(ctx, store, graph.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close()
	errs := make(chan error, 4*len(cases))
	for w := 0; w < 4; w++ {
		go func(w int) {
			for j := range cases {
				i := (j + w*7) % len(cases)
				res, err := Head(ctx, shared, "main", idxQueries, cases[i].name, cases[i].params)
				if err == nil && rowsText(res) != want[i] {
					err = fmt.Errorf("%s %v: %s, alone %s", cases[i].name, cases[i].params, rowsText(res), want[i])
				}
				errs <- err
			}
		}(w)
	}
	for range 4 * len(cases) {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestTieredCompactionKeepsSearchIndexes: the automatic (size-tiered)
// compaction after one-row writes rewrites only small fragments, so it
// carries the full-text and vector indexes instead of rebuilding them over
// the whole table (O(table rows) a run), and answers stay the scan's: the
// merged small fragment is scanned, the replaced fragments' entries are
// ignored.
func TestTieredCompactionKeepsSearchIndexes(t *testing.T) {
	ctx := context.Background()
	store, g, rng := exactIndexGraph(t, 23)
	if _, err := load.Run(ctx, g, strings.NewReader(idxDocs(rng, 0, 300)), load.Options{Mode: load.Merge}); err != nil {
		t.Fatal(err)
	}
	ensureIndices(t, g, "main")
	paths := func() (ft, ivf string, frags int) {
		s, err := g.Snapshot(ctx, "main")
		if err != nil {
			t.Fatal(err)
		}
		ds, err := s.OpenTable(ctx, graph.NodeTableKey("Doc"))
		if err != nil {
			t.Fatal(err)
		}
		a, okA := fulltext.Index(ds, "body")
		b, okB := vector.Index(ds, "v")
		if !okA || !okB {
			t.Fatalf("search indexes missing: fulltext %v, vector %v", okA, okB)
		}
		return a.Path, b.Path, len(ds.Fragments())
	}
	ft0, ivf0, _ := paths()
	compacted := false
	for i := 0; i < 14; i++ {
		// new docs (an update would leave a deletion file on the big
		// fragment, and the tier rewrites every fragment with deletions)
		doc := idxDocs(rng, 300+i, 1)
		if _, err := load.Run(ctx, g, strings.NewReader(doc), load.Options{Mode: load.Merge}); err != nil {
			t.Fatal(err)
		}
		_, _, before := paths()
		res, err := optimize.Auto(ctx, g, optimize.AutoOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if res != nil && !res.NoOp {
			ft, ivf, after := paths()
			if after >= before {
				t.Fatalf("the automatic run left %d fragments of %d", after, before)
			}
			if ft != ft0 || ivf != ivf0 {
				t.Fatalf("the tiered run rebuilt the search indexes: %s -> %s, %s -> %s", ft0, ft, ivf0, ivf)
			}
			compacted = true
		}
	}
	if !compacted {
		t.Fatal("no automatic compaction ran")
	}
	head := func(g *graph.Graph) *graph.Snapshot {
		s, err := g.Snapshot(ctx, "main")
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	cases := idxCases(rng)
	if used := compareIndexScan(t, store, head, cases, "after tiered compactions"); used < int64(len(cases))*3/4 {
		t.Errorf("indexes narrowed %d of %d queries after tiered compactions", used, len(cases))
	}
}
