package server

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/local"
	"github.com/omnigraph-go/omnigraph/backend/s3"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/internal/testenv"
)

// writerRun is one measured run of concurrent HTTP writers.
type writerRun struct {
	clients  int
	work     string
	commits  int
	errors   int
	elapsed  time.Duration
	p50, p99 time.Duration
}

func (r writerRun) perSecond() float64 { return float64(r.commits) / r.elapsed.Seconds() }

// servedOn is a fresh graph of testSchema on store, opened as serve opens
// it (the only writer of its root), behind a test server.
func servedOn(b *testing.B, store backend.StorageAdapter, people int) (*graph.Graph, string) {
	b.Helper()
	ctx := context.Background()
	g, err := graph.Init(ctx, store, testSchema, graph.InitOptions{})
	if err != nil {
		b.Fatal(err)
	}
	g.Close()
	if g, err = graph.Open(ctx, store, graph.OpenOptions{ExclusiveWriter: true, AlwaysProbe: true}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { g.Close() })
	_, base := newTestServer(b, g, Config{Limits: Limits{WritesPerActor: 64}})
	if people > 0 {
		var in strings.Builder
		for i := 0; i < people; i++ {
			fmt.Fprintf(&in, `{"type":"Person","data":{"name":"u%03d"}}`+"\n", i)
		}
		resp, err := http.Post(base+"/graphs/default/load/ndjson?mode=append", "application/x-ndjson", strings.NewReader(in.String()))
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("seed load: %v %v", resp, err)
		}
		resp.Body.Close()
	}
	return g, base
}

// runWriters sends total one-row mutations from clients HTTP clients, each
// sending its next as soon as its last is answered. work is "insert" (a
// new Person each) or "update" (each client its own, distinct Person).
func runWriters(b *testing.B, base string, clients, total int, work string) writerRun {
	b.Helper()
	ctx := context.Background()
	each := total / clients
	var mu sync.Mutex
	var lat []time.Duration
	out := writerRun{clients: clients, work: work}
	var wg sync.WaitGroup
	start := time.Now()
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				body := insertBody(fmt.Sprintf("w%02d-%d-%d", clients, c, i))
				if work == "update" {
					body = updateBody(fmt.Sprintf("u%03d", c), i)
				}
				t0 := time.Now()
				st, _, _, err := postMutation(ctx, base, "", body)
				d := time.Since(t0)
				mu.Lock()
				lat = append(lat, d)
				if err != nil || st != 200 {
					out.errors++
				} else {
					out.commits++
				}
				mu.Unlock()
			}
		}(c)
	}
	wg.Wait()
	out.elapsed = time.Since(start)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	out.p50, out.p99 = lat[len(lat)/2], lat[(len(lat)*99)/100]
	return out
}

func printWriters(b *testing.B, title string, runs []writerRun) {
	b.Helper()
	var t strings.Builder
	fmt.Fprintf(&t, "\n%s\n| clients | work | commits/s | errors | p50 / p99 |\n|---|---|---|---|---|\n", title)
	one := map[string]writerRun{}
	for _, r := range runs {
		if r.clients == 1 {
			one[r.work] = r
		}
		fmt.Fprintf(&t, "| %d | %s | %.1f | %d | %s / %s |\n", r.clients, r.work, r.perSecond(), r.errors,
			r.p50.Round(100*time.Microsecond), r.p99.Round(100*time.Microsecond))
	}
	for _, r := range runs {
		if o, ok := one[r.work]; ok && r.clients == 16 {
			b.ReportMetric(r.perSecond()/o.perSecond(), r.work+"-16/1")
		}
		if o, ok := one[r.work]; ok && r.clients > 1 {
			bound := time.Duration(1.5 * float64(r.clients) * float64(o.p50))
			fmt.Fprintf(&t, "%s, %d clients: %.2fx one client's commits/s (target >= 0.9); p99 %s, bound 1.5 x clients x one-client p50 = %s\n",
				r.work, r.clients, r.perSecond()/o.perSecond(), r.p99.Round(time.Millisecond), bound.Round(time.Millisecond))
		}
	}
	fmt.Print(t.String()) // stdout: the table is longer than a benchmark's log keeps
}

// BenchmarkConcurrentWriters prints issue 42's table on a local graph: 1,
// 4 and 16 HTTP clients sending one-row mutations to main as fast as
// answers come (240 writes a run, a fresh graph each run), inserting new
// people or updating each its own; commits/s, errors, p50/p99, and the
// ratio to one client measured in the same run.
//
// A local commit's cost is mostly its fsyncs, whose latency on a shared
// disk swings from run to run, so each configuration runs three times,
// interleaved with the others, and the median run (by commits/s) is shown.
func BenchmarkConcurrentWriters(b *testing.B) {
	const total, rounds = 240, 3
	for i := 0; i < b.N; i++ {
		type cfg struct {
			work    string
			clients int
		}
		var cfgs []cfg
		for _, work := range []string{"insert", "update"} {
			for _, clients := range []int{1, 4, 16} {
				cfgs = append(cfgs, cfg{work, clients})
			}
		}
		all := map[cfg][]writerRun{}
		for round := 0; round < rounds; round++ {
			for _, c := range cfgs {
				store, err := local.New(b.TempDir() + "/g")
				if err != nil {
					b.Fatal(err)
				}
				_, base := servedOn(b, store, 16)
				all[c] = append(all[c], runWriters(b, base, c.clients, total, c.work))
			}
		}
		var runs []writerRun
		for _, c := range cfgs {
			rs := all[c]
			sort.Slice(rs, func(i, j int) bool { return rs[i].perSecond() < rs[j].perSecond() })
			m := rs[len(rs)/2]
			for _, r := range rs {
				m.errors = max(m.errors, r.errors) // the worst run's errors
			}
			runs = append(runs, m)
		}
		printWriters(b, fmt.Sprintf("local graph, one served graph, one-row mutations to main (median of %d runs each; errors: the worst run)", rounds), runs)
	}
}

// BenchmarkConcurrentWritersS3 is the same on the S3 emulator behind the
// wire proxy holding every answer back 20 ms: commits/s at 1, 4 and 16
// clients, and commits per manifest round trip (the serial floor is one
// manifest put-if-absent per commit: 1/20 ms = 50 commits/s) with the
// round trips a commit takes on the wire.
func BenchmarkConcurrentWritersS3(b *testing.B) {
	if !testenv.S3Configured() {
		b.Skip("S3 is not configured; start the emulators: " + testenv.StartHint)
	}
	const total, latency = 48, 20 * time.Millisecond
	for i := 0; i < b.N; i++ {
		var runs []writerRun
		var notes []string
		for _, clients := range []int{1, 4, 16} {
			cfg, err := s3.ConfigFromEnv(testenv.S3Bucket(b))
			if err != nil {
				b.Fatal(err)
			}
			p := testenv.NewProxy(b, cfg.Endpoint)
			cfg.Endpoint = p.URL
			cfg.KeyAndChildCoexist = false // versitygw's posix backend (testenv.S3)
			st, err := s3.New(context.Background(), cfg)
			if err != nil {
				b.Fatal(err)
			}
			prefix := testenv.Prefix(b) + "/"
			b.Cleanup(func() { _ = st.DeletePrefix(context.Background(), prefix) })
			_, base := servedOn(b, backend.WithPrefix(st, prefix), 0)
			p.Reset()
			p.Arm(testenv.Rule{Times: 1 << 30, Forward: true, Rewrite: func(http.Header) { time.Sleep(latency) }})
			r := runWriters(b, base, clients, total, "insert")
			reqs := p.Requests()
			p.Reset()
			runs = append(runs, r)
			perManifestRT := r.perSecond() * latency.Seconds()
			notes = append(notes, fmt.Sprintf("%d clients: %.2f commits per manifest round trip (target >= 0.8 at 16); %.1f requests and %.1f serial round trips on the wire per commit",
				clients, perManifestRT, float64(len(reqs))/float64(max(r.commits, 1)), float64(testenv.RoundTrips(reqs))/float64(max(r.commits, 1))))
		}
		printWriters(b, fmt.Sprintf("S3 emulator behind the wire proxy (+%s per answer), inserts to main", latency), runs)
		fmt.Println(strings.Join(notes, "\n"))
	}
}
