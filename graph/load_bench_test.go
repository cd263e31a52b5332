package graph_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/load"
)

// BenchmarkOneRowInsertLatency: a one-row insert on a warm handle with a
// fixed latency on every storage request. Wall time per insert is about
// round trips x latency; both are reported.
func BenchmarkOneRowInsertLatency(b *testing.B) {
	const latency = 10 * time.Millisecond
	r := newInsertRig(b, 10)
	r.insert(b, "w-warm")
	r.fault.Latency(latency)
	defer r.fault.Latency(0)
	var rts, reqs int
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		r.count.Reset()
		r.insert(b, fmt.Sprintf("x%09d", i))
		c := r.count.Snapshot()
		rts += c.RoundTrips
		reqs += c.Total
	}
	wall := time.Since(start)
	b.StopTimer()
	perOp := wall / time.Duration(b.N)
	b.ReportMetric(float64(rts)/float64(b.N), "roundtrips/op")
	b.ReportMetric(float64(reqs)/float64(b.N), "requests/op")
	b.ReportMetric(float64(perOp)/float64(latency), "wall/latency")
	b.Logf("one-row insert at %v per request: %.1f requests, %.1f round trips, wall %v (%.2f x latency)",
		latency, float64(reqs)/float64(b.N), float64(rts)/float64(b.N), perOp, float64(perOp)/float64(latency))
}

const benchLoadSchema = `
node Item {
  key: String @key
  n: I64
  label: String
}
edge Link: Item -> Item {
  w: F64
}
`

// benchLoadSize is the node count of the load benchmark (edges are twice
// that): OMNIGRAPH_BENCH_LOAD_NODES, default 200,000 (1,000,000 takes a few
// minutes and several GiB on a small machine).
func benchLoadSize() int {
	if s := os.Getenv("OMNIGRAPH_BENCH_LOAD_NODES"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			return n
		}
	}
	return 200_000
}

func benchKey(i int) string { return "item-" + strconv.Itoa(i) }

// BenchmarkLoadThroughput loads N nodes and 2N edges of NDJSON as one
// commit and compares its rows/s with writing the same rows straight to
// Parquet with pqarrow in the same run (the ratio is load / baseline).
func BenchmarkLoadThroughput(b *testing.B) {
	n := benchLoadSize()
	var data bytes.Buffer
	for i := 0; i < n; i++ {
		fmt.Fprintf(&data, `{"type":"Item","data":{"key":%q,"n":%d,"label":"label %d"}}`+"\n", benchKey(i), i, i%97)
	}
	for i := 0; i < 2*n; i++ {
		fmt.Fprintf(&data, `{"edge":"Link","from":%q,"to":%q,"data":{"w":%d.5}}`+"\n", benchKey(i%n), benchKey((i*7+1)%n), i%10)
	}
	rows := float64(3 * n)
	ctx := context.Background()
	var loadSec, pqSec float64
	for it := 0; it < b.N; it++ {
		g, err := graph.Init(ctx, mem.New(), benchLoadSchema, graph.InitOptions{})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		phases := map[string]time.Duration{}
		last, lastPhase := start, "parse"
		progress := func(phase string, _ int64) {
			if phase != lastPhase {
				now := time.Now()
				phases[lastPhase] += now.Sub(last)
				last, lastPhase = now, phase
			}
		}
		res, err := load.Run(ctx, g, bytes.NewReader(data.Bytes()), load.Options{Mode: load.Append, Progress: progress})
		phases[lastPhase] += time.Since(last)
		b.Logf("phases: parse %v, validate %v, write+commit %v", phases["parse"], phases["validate"], phases["write"])
		if err != nil || res.Nodes != n || res.Edges != 2*n {
			b.Fatalf("load: %+v %v", res, err)
		}
		loadSec += time.Since(start).Seconds()

		start = time.Now()
		if err := benchParquetBaseline(n); err != nil {
			b.Fatal(err)
		}
		pqSec += time.Since(start).Seconds()
	}
	loadRate := rows * float64(b.N) / loadSec
	pqRate := rows * float64(b.N) / pqSec
	b.ReportMetric(loadRate, "load_rows/s")
	b.ReportMetric(pqRate, "parquet_rows/s")
	b.ReportMetric(loadRate/pqRate, "ratio")
	b.Logf("%d nodes + %d edges: load %.0f rows/s, straight pqarrow %.0f rows/s, ratio %.3f",
		n, 2*n, loadRate, pqRate, loadRate/pqRate)
}

// benchParquetBaseline builds the same rows as Arrow records (no JSON, no
// validation) and writes them with pqarrow, one file per type.
func benchParquetBaseline(n int) error {
	alloc := memory.DefaultAllocator
	nodeSchema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "key", Type: arrow.BinaryTypes.String},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64},
		{Name: "label", Type: arrow.BinaryTypes.String},
	}, nil)
	nb := array.NewRecordBuilder(alloc, nodeSchema)
	defer nb.Release()
	for i := 0; i < n; i++ {
		k := benchKey(i)
		nb.Field(0).(*array.StringBuilder).Append(k)
		nb.Field(1).(*array.StringBuilder).Append(k)
		nb.Field(2).(*array.Int64Builder).Append(int64(i))
		nb.Field(3).(*array.StringBuilder).Append("label " + strconv.Itoa(i%97))
	}
	edgeSchema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "src", Type: arrow.BinaryTypes.String},
		{Name: "dst", Type: arrow.BinaryTypes.String},
		{Name: "w", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	eb := array.NewRecordBuilder(alloc, edgeSchema)
	defer eb.Release()
	for i := 0; i < 2*n; i++ {
		eb.Field(0).(*array.StringBuilder).Append("edge-" + strconv.Itoa(i))
		eb.Field(1).(*array.StringBuilder).Append(benchKey(i % n))
		eb.Field(2).(*array.StringBuilder).Append(benchKey((i*7 + 1) % n))
		eb.Field(3).(*array.Float64Builder).Append(float64(i%10) + 0.5)
	}
	for _, rec := range []arrow.Record{nb.NewRecordBatch(), eb.NewRecordBatch()} {
		var buf bytes.Buffer
		tbl := array.NewTableFromRecords(rec.Schema(), []arrow.Record{rec})
		err := pqarrow.WriteTable(tbl, &buf, 1<<20, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
		tbl.Release()
		rec.Release()
		if err != nil {
			return err
		}
	}
	return nil
}
