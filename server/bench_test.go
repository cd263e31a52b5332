package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/load"
	"github.com/omnigraph-go/omnigraph/graph/query"
)

// benchGraph is a local graph of n people.
func benchGraph(b *testing.B, n int) *graph.Graph {
	b.Helper()
	g := testGraph(b)
	var in strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&in, `{"type":"Person","data":{"name":"p%06d","age":%d}}`+"\n", i, i%90)
	}
	if _, err := load.Run(context.Background(), g, strings.NewReader(in.String()), load.Options{Mode: load.Append}); err != nil {
		b.Fatal(err)
	}
	return g
}

const pointRead = `query q($n: String) { match { $p: Person { name: $n } } return { $p.name, $p.age } }`

// BenchmarkPointReadsHTTPvsInProcess prints issue 17's ratio: 32
// concurrent clients doing point reads through HTTP against the same reads
// in process (32 goroutines on the handle), on a 100,000-person graph,
// as reads per second and their ratio, with peak heap; then a mixed run
// (one writer per 8 readers) through HTTP with p50/p99 latency and the
// count of errors other than 409/429 (which should be zero).
func BenchmarkPointReadsHTTPvsInProcess(b *testing.B) {
	const people, clients, perClient = 100_000, 32, 200
	g := benchGraph(b, people)
	_, base := newTestServer(b, g, Config{})
	ctx := context.Background()
	name := func(i int) string { return fmt.Sprintf("p%06d", (i*7919)%people) }

	run := func(read func(i int) error) (float64, error) {
		var wg sync.WaitGroup
		var firstErr atomic.Value
		start := time.Now()
		for c := 0; c < clients; c++ {
			wg.Add(1)
			go func(c int) {
				defer wg.Done()
				for i := 0; i < perClient; i++ {
					if err := read(c*perClient + i); err != nil {
						firstErr.CompareAndSwap(nil, err)
						return
					}
				}
			}(c)
		}
		wg.Wait()
		if err, _ := firstErr.Load().(error); err != nil {
			return 0, err
		}
		return float64(clients*perClient) / time.Since(start).Seconds(), nil
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	httpRead := func(i int) error {
		body, _ := json.Marshal(map[string]any{"query": pointRead, "params": map[string]any{"n": name(i)}})
		resp, err := client.Post(base+"/graphs/default/query", "application/json", bytes.NewReader(body))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || !bytes.Contains(b, []byte(name(i))) {
			return fmt.Errorf("HTTP read: %d %s", resp.StatusCode, b)
		}
		return nil
	}
	inProc := func(i int) error {
		r, err := query.Head(ctx, g, "main", pointRead, "", map[string]any{"n": name(i)})
		if err != nil {
			return err
		}
		if len(r.Rows) != 1 {
			return fmt.Errorf("in-process read: %d rows", len(r.Rows))
		}
		return nil
	}
	for i := 0; i < b.N; i++ {
		// Warm both paths with a whole run each (caches, connections).
		if _, err := run(inProc); err != nil {
			b.Fatal(err)
		}
		if _, err := run(httpRead); err != nil {
			b.Fatal(err)
		}
		var ms runtime.MemStats
		local, err := run(inProc)
		if err != nil {
			b.Fatal(err)
		}
		remote, err := run(httpRead)
		if err != nil {
			b.Fatal(err)
		}
		runtime.ReadMemStats(&ms)
		b.ReportMetric(remote/local, "http/in-process")
		b.Logf("point reads, %d clients x %d: in process %.0f/s, HTTP %.0f/s, ratio %.2f (issue 17: >= 0.5); heap in use %d MiB",
			clients, perClient, local, remote, remote/local, ms.HeapInuse>>20)

		// Mixed: every 8th client writes.
		var mu sync.Mutex
		var lat []time.Duration
		var other, refused atomic.Int64
		var wg sync.WaitGroup
		for c := 0; c < clients; c++ {
			wg.Add(1)
			go func(c int) {
				defer wg.Done()
				for j := 0; j < perClient/4; j++ {
					start := time.Now()
					var resp *http.Response
					var err error
					if c%8 == 0 {
						body := fmt.Sprintf(`{"query":"mutation m() { insert Person { name: \"w%d-%d-%d\" } }"}`, i, c, j)
						resp, err = client.Post(base+"/graphs/default/mutate", "application/json", strings.NewReader(body))
					} else {
						body, _ := json.Marshal(map[string]any{"query": pointRead, "params": map[string]any{"n": name(c*perClient + j)}})
						resp, err = client.Post(base+"/graphs/default/query", "application/json", bytes.NewReader(body))
					}
					d := time.Since(start)
					switch {
					case err != nil:
						other.Add(1)
					case resp.StatusCode == 409 || resp.StatusCode == 429:
						refused.Add(1)
					case resp.StatusCode != 200:
						other.Add(1)
					}
					if resp != nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
					mu.Lock()
					lat = append(lat, d)
					mu.Unlock()
				}
			}(c)
		}
		wg.Wait()
		sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
		p := func(q float64) time.Duration { return lat[int(q*float64(len(lat)-1))] }
		b.Logf("mixed run (1 writer per 8 clients): %d requests, p50 %v, p99 %v, %d refused with 409/429, %d other errors",
			len(lat), p(0.5), p(0.99), refused.Load(), other.Load())
		if other.Load() != 0 {
			b.Fatalf("%d errors other than 409/429 in the mixed run", other.Load())
		}
	}
}
