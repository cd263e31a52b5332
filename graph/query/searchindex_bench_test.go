package query

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/load"
	"github.com/omnigraph-go/omnigraph/graph/schema"
	"github.com/omnigraph-go/omnigraph/index/vector"
)

const benchIdxSchema = `
node Doc {
    slug: String @key
    body: String @index
    v: Vector(32) @index
}
`

const benchIdxQueries = `
query b($q: String) { match { $d: Doc } return { $d.slug } order { bm25($d.body, $q) } limit 10 }
query s($q: String) { match { $d: Doc  search($d.body, $q) } return { $d.slug } order { $d.slug } limit 10 }
query n($v: Vector(32)) { match { $d: Doc } return { $d.slug } order { nearest($d.v, $v) } limit 10 }
`

// BenchmarkSearchIndex prints, on 100k documents (32-dimensional vectors
// around 256 seeded centres, overlapping: spread ±2, noise σ 1.5; bodies
// of 5 words from 5,000), the warm
// latency of a bm25 top 10, a search() filter and a nearest top 10 through
// the persisted indexes and as scans (the same handle, rows cached), their
// ratio, and the vector index's recall@10 against the exact scan.
func BenchmarkSearchIndex(b *testing.B) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(100, 19))
	g, err := graph.Init(ctx, mem.New(), benchIdxSchema, graph.InitOptions{Actor: "b"})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	const n, dim = 100_000, 32
	cs := centres(rng, 256, dim)
	var sb strings.Builder
	for i := 0; i < n; i++ {
		c := cs[rng.IntN(len(cs))]
		parts := make([]string, dim)
		for k := range parts {
			parts[k] = fmt.Sprintf("%.4f", c[k]+rng.NormFloat64()*1.5)
		}
		fmt.Fprintf(&sb, `{"type":"Doc","data":{"slug":"d%06d","body":"w%d w%d w%d w%d w%d","v":[%s]}}`+"\n", i,
			rng.IntN(5000), rng.IntN(5000), rng.IntN(500), rng.IntN(50), rng.IntN(5000), strings.Join(parts, ","))
	}
	if _, err := load.Run(ctx, g, strings.NewReader(sb.String()), load.Options{Mode: load.Overwrite}); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if _, err := schema.EnsureIndices(ctx, g, schema.IndexOptions{}); err != nil {
		b.Fatal(err)
	}
	b.Logf("ensure-indices over %d docs: %v", n, time.Since(start).Round(time.Millisecond))
	vecs := make([][]any, 20)
	for i := range vecs {
		c := cs[rng.IntN(len(cs))]
		vecs[i] = make([]any, dim)
		for k := range vecs[i] {
			vecs[i][k] = c[k] + rng.NormFloat64()*1.5
		}
	}
	params := map[string][]map[string]any{}
	for i := 0; i < 20; i++ {
		params["b"] = append(params["b"], map[string]any{"q": fmt.Sprintf("w%d w%d", rng.IntN(500), rng.IntN(50))})
		params["s"] = append(params["s"], map[string]any{"q": fmt.Sprintf("w%d", rng.IntN(5000))})
		params["n"] = append(params["n"], map[string]any{"v": vecs[i]})
	}
	timed := func(name string, indexes bool) (time.Duration, [][]string) {
		useSearchIndexes = indexes
		defer func() { useSearchIndexes = true }()
		var answers [][]string
		run := func() {
			answers = answers[:0]
			for _, p := range params[name] {
				res, err := Head(ctx, g, "main", benchIdxQueries, name, p)
				if err != nil {
					b.Fatal(err)
				}
				var ids []string
				for _, r := range res.Rows {
					ids = append(ids, r[0].(string))
				}
				answers = append(answers, ids)
			}
		}
		run() // warm: the cached rows or index
		t0 := time.Now()
		run()
		return time.Since(t0) / time.Duration(len(params[name])), answers
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, name := range []string{"b", "s", "n"} {
			label := map[string]string{"b": "bm25", "s": "search", "n": "nearest"}[name]
			idx, got := timed(name, true)
			scan, want := timed(name, false)
			hit, total := 0, 0
			for q := range want {
				for _, w := range want[q] {
					total++
					for _, x := range got[q] {
						if x == w {
							hit++
							break
						}
					}
				}
			}
			recall := float64(hit) / float64(max(total, 1))
			b.ReportMetric(float64(idx.Microseconds())/1000, label+"-index-ms")
			b.ReportMetric(float64(scan.Microseconds())/1000, label+"-scan-ms")
			b.ReportMetric(float64(scan)/float64(max(idx, 1)), label+"-x-faster")
			if name == "n" {
				b.ReportMetric(recall, "ann-recall@10")
			}
			agree := fmt.Sprintf("same rows as the scan: %.3f", recall)
			if name == "n" {
				agree = fmt.Sprintf("ANN recall@10 %.3f (%d probes)", recall, vector.NProbe)
			}
			fmt.Printf("search index bench: %s top 10 over %d docs: index %v, scan %v (%.1fx), %s\n",
				label, n, idx.Round(time.Microsecond), scan.Round(time.Microsecond), float64(scan)/float64(max(idx, 1)), agree)
		}
	}
}
