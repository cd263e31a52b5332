package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
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

// BenchmarkPointReadsUnderHostileQueries prints issue 27's ratio: the
// p50 and p99 latency of normal point reads over HTTP (2 clients of one
// actor, 100,000 people) on a quiet server and with 8 clients of another
// actor sending over-budget queries without pause: six run a fuzzy scan of
// every name that its time budget (300 ms) stops, one a cross product
// refused on its estimate, one a cross product whose estimate the filters
// fool, stopped exactly when it would allocate its rows. Quiet and hostile
// runs alternate three times (the machine is shared) and the medians are
// compared. Target: p99 within 3x of the quiet run. It also prints how the
// hostile queries were answered and the peak heap.
// OMNIGRAPH_BENCH_HEAVY_WORK sets Limits.HeavyWork.
func BenchmarkPointReadsUnderHostileQueries(b *testing.B) {
	const people, clients, perClient, hostiles, rounds = 100_000, 2, 500, 8, 3
	g := benchGraph(b, people)
	f := &TokensFile{Version: TokensFormat}
	normal, _ := f.Add("normal", time.Now())
	hostile, _ := f.Add("hostile", time.Now())
	pf, err := ParseTokens(f.Encode())
	if err != nil {
		b.Fatal(err)
	}
	hw, _ := strconv.ParseInt(os.Getenv("OMNIGRAPH_BENCH_HEAVY_WORK"), 10, 64)
	_, base := newTestServer(b, g, Config{Tokens: NewTokens(pf), Limits: Limits{Query: graph.Budget{Memory: 256 << 20}, HeavyWork: hw},
		Actors: map[string]ActorLimits{"hostile": {Budget: graph.Budget{Time: 300 * time.Millisecond}}}})
	name := func(i int) string { return fmt.Sprintf("p%06d", (i*7919)%people) }
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients + hostiles}}
	send := func(ctx context.Context, token, body string) (int, error) {
		req, err := http.NewRequestWithContext(ctx, "POST", base+"/graphs/default/query", strings.NewReader(body))
		if err != nil {
			return 0, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	// reads runs the normal clients and returns their sorted latencies.
	reads := func() ([]time.Duration, error) {
		var mu sync.Mutex
		var lat []time.Duration
		var firstErr atomic.Value
		var wg sync.WaitGroup
		for c := 0; c < clients; c++ {
			wg.Add(1)
			go func(c int) {
				defer wg.Done()
				for j := 0; j < perClient; j++ {
					body, _ := json.Marshal(map[string]any{"query": pointRead, "params": map[string]any{"n": name(c*perClient + j)}})
					start := time.Now()
					st, err := send(context.Background(), normal, string(body))
					d := time.Since(start)
					if err == nil && st != 200 {
						err = fmt.Errorf("point read: status %d", st)
					}
					if err != nil {
						firstErr.CompareAndSwap(nil, err)
						return
					}
					mu.Lock()
					lat = append(lat, d)
					mu.Unlock()
				}
			}(c)
		}
		wg.Wait()
		if err, _ := firstErr.Load().(error); err != nil {
			return nil, err
		}
		sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
		return lat, nil
	}
	pct := func(lat []time.Duration, q float64) time.Duration { return lat[int(q*float64(len(lat)-1))] }
	median := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	fuzzy := `query q() { match { $p: Person  fuzzy($p.name, "aaaaaaaa bbbbbbbb cccccccc dddddddd eeeeeeee ffffffff gggggggg hhhhhhhh", 3) } return { count($p) as n } }`
	hostileQueries := []string{fuzzy, fuzzy, fuzzy, fuzzy, fuzzy, fuzzy,
		`query q() { match { $a: Person  $b: Person  $c: Person  $d: Person  $e: Person } return { count($a) as n } }`,
		`query q() { match { $a: Person  $b: Person  $a.age >= 0  $a.age <= 90  $a.name >= "p"  $b.age >= 0  $b.age <= 90  $b.name >= "p" } return { count($a) as n } }`,
	}
	switch os.Getenv("OMNIGRAPH_BENCH_HOSTILE") {
	case "fuzzy":
		hostileQueries = slices.Repeat([]string{fuzzy}, hostiles)
	case "cheap":
		hostileQueries = slices.Repeat(hostileQueries[6:], hostiles/2)
	}
	for i := 0; i < b.N; i++ {
		if _, err := reads(); err != nil { // warm caches and connections
			b.Fatal(err)
		}
		var q50, q99, h50, h99 []time.Duration
		answers := map[int]int{}
		var ms runtime.MemStats
		for r := 0; r < rounds; r++ {
			quiet, err := reads()
			if err != nil {
				b.Fatal(err)
			}
			q50, q99 = append(q50, pct(quiet, 0.5)), append(q99, pct(quiet, 0.99))
			ctx, stop := context.WithCancel(context.Background())
			var hwg sync.WaitGroup
			var mu sync.Mutex
			for h := 0; h < hostiles; h++ {
				hwg.Add(1)
				go func(h int) {
					defer hwg.Done()
					body, _ := json.Marshal(map[string]string{"query": hostileQueries[h]})
					for ctx.Err() == nil {
						st, err := send(ctx, hostile, string(body))
						if err != nil {
							continue
						}
						mu.Lock()
						answers[st]++
						mu.Unlock()
					}
				}(h)
			}
			time.Sleep(200 * time.Millisecond) // let them start
			loaded, err := reads()
			runtime.ReadMemStats(&ms)
			stop()
			hwg.Wait()
			if err != nil {
				b.Fatal(err)
			}
			h50, h99 = append(h50, pct(loaded, 0.5)), append(h99, pct(loaded, 0.99))
		}
		ratio50 := float64(median(h50)) / float64(median(q50))
		ratio99 := float64(median(h99)) / float64(median(q99))
		b.ReportMetric(ratio99, "p99-hostile/quiet")
		b.ReportMetric(ratio50, "p50-hostile/quiet")
		b.Logf("point reads (%d clients x %d, median of %d rounds): quiet p50 %v p99 %v; with %d clients of over-budget queries p50 %v p99 %v; ratio p50 %.2f, p99 %.2f (target p99 <= 3); hostile answers by status %v; heap %d MiB",
			clients, perClient, rounds, median(q50), median(q99), hostiles, median(h50), median(h99), ratio50, ratio99, answers, ms.HeapSys>>20)
	}
}
