// Package query benchmarks the graph read path against DuckDB running the
// equivalent SQL over the very Parquet files the graph tables hold, in the
// same run. It is its own module so DuckDB (cgo) stays out of the main one.
//
//	cd bench/query && go test -run '^$' -bench . -benchtime 5x
//
// Data (100k nodes, 1M edges by default; BENCH_NODES / BENCH_EDGES
// override) is generated into a temporary directory and removed afterwards.
package query

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/omnigraph-go/omnigraph/backend"
	_ "github.com/omnigraph-go/omnigraph/backend/all"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/table"
)

const benchSchema = `
node Person {
  handle: String @key
  age: I32?
  city: String?
}
edge Knows: Person -> Person
`

// The two workloads, as .gq and as the equivalent SQL.
const (
	twoHopGQ = `query q() {
  match { $a: Person { age: 42 }  $a knows{2,2} $b }
  return { count($b) as n }
}`
	twoHopSQL = `SELECT count(*) FROM (
  SELECT DISTINCT e1.src, e2.dst
  FROM person p JOIN knows e1 ON e1.src = p.id JOIN knows e2 ON e2.src = e1.dst
  JOIN person b ON b.id = e2.dst
  WHERE p.age = 42)`
	aggGQ = `query q() {
  match { $p: Person  $p.age >= 50  $p.city starts_with "c1" }
  return { $p.city, count($p) as n, avg($p.age) as mean }
  order { $p.city }
}`
	aggSQL = `SELECT city, count(*), avg(age) FROM person
  WHERE age >= 50 AND starts_with(city, 'c1') GROUP BY city ORDER BY city`
)

type fixture struct {
	dir   string
	g     *graph.Graph
	db    *sql.DB
	nodes int
	edges int
}

var (
	fixOnce sync.Once
	fix     *fixture
	fixErr  error
	// cold holds each workload's first (cold-cache) omnigraph time: the
	// testing package calls a benchmark more than once.
	cold = map[string]time.Duration{}
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func TestMain(m *testing.M) {
	code := m.Run()
	if fix != nil {
		fix.db.Close()
		os.RemoveAll(fix.dir)
	}
	os.Exit(code)
}

func setup(b *testing.B) *fixture {
	fixOnce.Do(func() { fix, fixErr = build(envInt("BENCH_NODES", 100_000), envInt("BENCH_EDGES", 1_000_000)) })
	if fixErr != nil {
		b.Fatal(fixErr)
	}
	return fix
}

// build generates the graph through the write pipeline (one commit) and
// points DuckDB views at the Parquet fragments of the pinned versions.
func build(nodes, edges int) (*fixture, error) {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "omnigraph-bench-")
	if err != nil {
		return nil, err
	}
	store, err := backend.Open(ctx, dir)
	if err != nil {
		return nil, err
	}
	g, err := graph.Init(ctx, store, benchSchema, graph.InitOptions{Actor: "bench"})
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(1, 2))
	id := func(i int) string { return fmt.Sprintf("p%06d", i) }

	pb := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "handle", Type: arrow.BinaryTypes.String},
		{Name: "age", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "city", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil))
	for i := 0; i < nodes; i++ {
		pb.Field(0).(*array.StringBuilder).Append(id(i))
		pb.Field(1).(*array.StringBuilder).Append(id(i))
		pb.Field(2).(*array.Int32Builder).Append(int32(rng.IntN(100)))
		pb.Field(3).(*array.StringBuilder).Append(fmt.Sprintf("c%02d", rng.IntN(50)))
	}
	persons := pb.NewRecordBatch()
	var knows []arrow.Record
	eb := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "src", Type: arrow.BinaryTypes.String},
		{Name: "dst", Type: arrow.BinaryTypes.String},
	}, nil))
	for i := 0; i < edges; i++ {
		eb.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("k%07d", i))
		eb.Field(1).(*array.StringBuilder).Append(id(rng.IntN(nodes)))
		eb.Field(2).(*array.StringBuilder).Append(id(rng.IntN(nodes)))
		if (i+1)%250_000 == 0 || i == edges-1 {
			knows = append(knows, eb.NewRecordBatch())
		}
	}
	w, err := g.BeginWrite(ctx, "main", graph.WriteOptions{Kind: graph.KindLoad})
	if err != nil {
		return nil, err
	}
	stage := func(key string, recs ...arrow.Record) error {
		return w.Stage(ctx, key, func(ctx context.Context, base *table.Dataset) (*table.Staged, error) {
			return base.StageAppend(ctx, recs...)
		})
	}
	if err := stage(graph.NodeTableKey("Person"), persons); err != nil {
		return nil, err
	}
	if err := stage(graph.EdgeTableKey("Knows"), knows...); err != nil {
		return nil, err
	}
	if _, err := w.Commit(ctx); err != nil {
		return nil, err
	}
	snap, err := g.Snapshot(ctx, "main")
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return nil, err
	}
	for view, key := range map[string]string{"person": graph.NodeTableKey("Person"), "knows": graph.EdgeTableKey("Knows")} {
		ds, err := snap.OpenTable(ctx, key)
		if err != nil {
			return nil, err
		}
		var files []string
		for _, f := range ds.Manifest().Fragments {
			if f.Deletion != nil {
				return nil, fmt.Errorf("fragment %s has deletions; the SQL would not see them", f.ID)
			}
			files = append(files, "'"+filepath.Join(dir, ds.Path(), f.Path)+"'")
		}
		q := fmt.Sprintf("CREATE VIEW %s AS SELECT * FROM read_parquet([%s])", view, strings.Join(files, ","))
		if _, err := db.Exec(q); err != nil {
			return nil, fmt.Errorf("%s: %w", q, err)
		}
	}
	return &fixture{dir: dir, g: g, db: db, nodes: nodes, edges: edges}, nil
}

// runGQ runs a query on a fresh capture of main and returns its rows as text.
func (f *fixture) runGQ(src string) (string, error) {
	res, err := f.g.Query(context.Background(), "main", src, "", nil)
	if err != nil {
		return "", err
	}
	var rows []string
	for _, r := range res.Rows {
		rows = append(rows, fmtRow(r))
	}
	return strings.Join(rows, "\n"), nil
}

func (f *fixture) runSQL(q string) (string, error) {
	rows, err := f.db.Query(q)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return "", err
		}
		out = append(out, fmtRow(vals))
	}
	return strings.Join(out, "\n"), rows.Err()
}

func fmtRow(vals []any) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		switch x := v.(type) {
		case float64:
			parts[i] = strconv.FormatFloat(x, 'f', 6, 64)
		case int64:
			parts[i] = strconv.FormatInt(x, 10)
		case uint64:
			parts[i] = strconv.FormatUint(x, 10)
		case int32:
			parts[i] = strconv.FormatInt(int64(x), 10)
		default:
			parts[i] = fmt.Sprint(x)
		}
	}
	return strings.Join(parts, ",")
}

// compare times both engines on one workload in the same run and reports
// omnigraph's time per query, DuckDB's, and their ratio; it fails when the
// two answers differ. The first omnigraph run (cold: reads the tables and
// builds the traversal index) is reported separately from warm runs.
func compare(b *testing.B, gqSrc, sqlSrc string) {
	f := setup(b)
	b.StopTimer()
	coldStart := time.Now()
	ours, err := f.runGQ(gqSrc)
	if err != nil {
		b.Fatal(err)
	}
	if _, ok := cold[gqSrc]; !ok {
		cold[gqSrc] = time.Since(coldStart)
	}
	theirs, err := f.runSQL(sqlSrc)
	if err != nil {
		b.Fatal(err)
	}
	if ours != theirs {
		b.Fatalf("answers differ:\nomnigraph:\n%s\nduckdb:\n%s", ours, theirs)
	}
	const reps = 5
	var og, dk time.Duration
	for i := 0; i < b.N; i++ {
		for r := 0; r < reps; r++ {
			t0 := time.Now()
			if _, err := f.runGQ(gqSrc); err != nil {
				b.Fatal(err)
			}
			og += time.Since(t0)
			t0 = time.Now()
			if _, err := f.runSQL(sqlSrc); err != nil {
				b.Fatal(err)
			}
			dk += time.Since(t0)
		}
	}
	n := float64(b.N * reps)
	b.ReportMetric(float64(og.Nanoseconds())/n/1e6, "omnigraph-ms")
	b.ReportMetric(float64(dk.Nanoseconds())/n/1e6, "duckdb-ms")
	b.ReportMetric(float64(og)/float64(dk), "x-duckdb")
	b.ReportMetric(float64(cold[gqSrc].Nanoseconds())/1e6, "omnigraph-cold-ms")
	b.ReportMetric(0, "ns/op")
	if b.N == 1 {
		b.Logf("%d nodes, %d edges; answer %q", f.nodes, f.edges, firstLine(ours))
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " ..."
	}
	return s
}

func BenchmarkTwoHop(b *testing.B) { compare(b, twoHopGQ, twoHopSQL) }

func BenchmarkFilteredAggregate(b *testing.B) { compare(b, aggGQ, aggSQL) }
