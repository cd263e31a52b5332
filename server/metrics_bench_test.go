package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/omnigraph-go/omnigraph/api"
	storemetrics "github.com/omnigraph-go/omnigraph/backend/metrics"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/query"
)

// BenchmarkMetricsCostOfPointRead prints what metrics add to a point
// read (issue 39: no measurable cost): in process, reads through a handle
// whose store records every request (backend/metrics) against a handle on
// the bare store, best of 3 alternating rounds each; and over HTTP, the
// cost of recording one request (what wrap adds) against one HTTP point
// read's time.
func BenchmarkMetricsCostOfPointRead(b *testing.B) {
	const people, reads = 100_000, 2_000
	g := benchGraph(b, people)
	ctx := context.Background()
	col, err := storemetrics.NewCollectors(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	gm, err := graph.Open(ctx, col.Wrap(g.Store()), graph.OpenOptions{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer gm.Close()
	gp, err := graph.Open(ctx, g.Store(), graph.OpenOptions{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer gp.Close()
	name := func(i int) string { return fmt.Sprintf("p%06d", (i*7919)%people) }
	run := func(h *graph.Graph) time.Duration {
		start := time.Now()
		for i := 0; i < reads; i++ {
			r, err := query.Head(ctx, h, "main", pointRead, "", map[string]any{"n": name(i)})
			if err != nil || len(r.Rows) != 1 {
				b.Fatalf("read: %v", err)
			}
		}
		return time.Since(start)
	}
	_, base := newTestServer(b, g, Config{})
	s, _ := New(Config{Graphs: []Graph{{ID: "default", G: g}}})
	for n := 0; n < b.N; n++ {
		run(gm)
		run(gp)
		best := func(h *graph.Graph) time.Duration {
			d := time.Duration(1 << 62)
			for k := 0; k < 3; k++ {
				d = min(d, run(h))
			}
			return d
		}
		with, without := best(gm), best(gp)
		b.ReportMetric(float64(with)/float64(without), "with/without")
		b.Logf("in-process point reads x %d: with storage metrics %v, without %v, ratio %.3f", reads, with, without, float64(with)/float64(without))

		// One HTTP point read, serially, against recording one request.
		start := time.Now()
		for i := 0; i < reads/4; i++ {
			body, _ := json.Marshal(map[string]any{"query": pointRead, "params": map[string]any{"n": name(i)}})
			resp, err := http.Post(base+"/graphs/default/query", "application/json", bytes.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		perRead := time.Since(start) / (reads / 4)
		rt := api.Route{OperationID: "query", Method: "POST"}
		w := &statusWriter{status: 200}
		start = time.Now()
		const records = 100_000
		for i := 0; i < records; i++ {
			s.metrics.request(rt, "POST", w, time.Millisecond)
		}
		perRecord := time.Since(start) / records
		b.ReportMetric(float64(perRecord)/float64(perRead), "record/http-read")
		b.Logf("HTTP point read %v; recording its metrics %v (%.2g of it)", perRead, perRecord, float64(perRecord)/float64(perRead))
	}
}
