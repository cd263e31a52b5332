package query

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/table"
)

const benchQuerySchema = `
node Person {
  handle: String @key
  age: I32?
  city: String?
}
edge Knows: Person -> Person
`

// benchGraph builds nodes persons and edges random knows-edges in a memory
// store (one commit).
func benchGraph(b *testing.B, nodes, edges int) *graph.Graph {
	b.Helper()
	ctx := context.Background()
	g, err := graph.Init(ctx, mem.New(), benchQuerySchema, graph.InitOptions{})
	if err != nil {
		b.Fatal(err)
	}
	cat, _ := g.Schema(ctx, "main")
	person, _ := cat.Node("Person")
	knows, _ := cat.Edge("Knows")
	rng := rand.New(rand.NewPCG(1, 2))
	id := func(i int) string { return fmt.Sprintf("p%06d", i) }
	prow := make([]map[string]any, nodes)
	for i := range prow {
		prow[i] = map[string]any{"id": id(i), "handle": id(i), "age": int32(rng.IntN(100)), "city": fmt.Sprintf("c%02d", rng.IntN(50))}
	}
	erow := make([]map[string]any, edges)
	for i := range erow {
		erow[i] = map[string]any{"id": fmt.Sprintf("k%07d", i), "src": id(rng.IntN(nodes)), "dst": id(rng.IntN(nodes))}
	}
	w, err := g.BeginWrite(ctx, "main", graph.WriteOptions{Kind: graph.KindLoad})
	if err != nil {
		b.Fatal(err)
	}
	for key, rec := range map[string]arrow.Record{
		graph.NodeTableKey("Person"): testRecord(b, person.ArrowSchema(), prow),
		graph.EdgeTableKey("Knows"):  testRecord(b, knows.ArrowSchema(), erow),
	} {
		if err := w.Stage(ctx, key, func(ctx context.Context, base *table.Dataset) (*table.Staged, error) {
			return base.StageAppend(ctx, rec)
		}); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := w.Commit(ctx); err != nil {
		b.Fatal(err)
	}
	return g
}

// BenchmarkQueryWarm measures warm (cached) query execution on 20k nodes /
// 200k edges; bench/query compares the full-size workloads with DuckDB.
func BenchmarkQueryWarm(b *testing.B) {
	g := benchGraph(b, 20_000, 200_000)
	ctx := context.Background()
	for _, q := range []struct{ name, src string }{
		{"two-hop", `query q() { match { $a: Person { age: 42 }  $a knows{2,2} $b } return { count($b) as n } }`},
		{"filtered-aggregate", `query q() { match { $p: Person  $p.age >= 50  $p.city starts_with "c1" } return { $p.city, count($p) as n, avg($p.age) as mean } order { $p.city } }`},
		{"point-lookup", `query q() { match { $p: Person { handle: "p000042" }  $p knows $f } return { $f.handle, $f.age } }`},
	} {
		b.Run(q.name, func(b *testing.B) {
			if _, err := Head(ctx, g, "main", q.src, "", nil); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := Head(ctx, g, "main", q.src, "", nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		// Under a budget (as the CLI and the server run): the planner's
		// estimate and the meter's checks added.
		b.Run(q.name+"/budgeted", func(b *testing.B) {
			budget := Options{Budget: graph.Budget{Rows: 20_000_000, Memory: 4 << 30, Time: time.Minute, ReadBytes: 64 << 30}}
			for i := 0; i < b.N; i++ {
				s, err := g.Snapshot(ctx, "main")
				if err != nil {
					b.Fatal(err)
				}
				if _, err := RunWith(ctx, s, q.src, "", nil, budget); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkQueryCold measures a 2-hop query on a fresh handle: reading the
// Person and Knows tables (20k nodes / 200k edges) and building the
// traversal index.
func BenchmarkQueryCold(b *testing.B) {
	g := benchGraph(b, 20_000, 200_000)
	ctx := context.Background()
	const src = `query q() { match { $a: Person { age: 42 }  $a knows{2,2} $b } return { count($b) as n } }`
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h, err := graph.Open(ctx, g.Store(), graph.OpenOptions{ReadOnly: true})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Head(ctx, h, "main", src, "", nil); err != nil {
			b.Fatal(err)
		}
	}
}
