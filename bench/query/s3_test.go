package query

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/s3"
	"github.com/omnigraph-go/omnigraph/conformance/wire"
	"github.com/omnigraph-go/omnigraph/graph"
)

// byteMeter adds up the bytes read through it.
type byteMeter struct {
	backend.StorageAdapter
	read atomic.Int64
}

func (m *byteMeter) Get(ctx context.Context, key string) ([]byte, backend.Attrs, error) {
	b, a, err := m.StorageAdapter.Get(ctx, key)
	m.read.Add(int64(len(b)))
	return b, a, err
}

func (m *byteMeter) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	b, err := m.StorageAdapter.GetRange(ctx, key, off, n)
	m.read.Add(int64(len(b)))
	return b, err
}

// each runs fn on every item, 16 at a time, and returns the first error.
func each[T any](items []T, fn func(T) error) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	sem := make(chan struct{}, 16)
	for _, it := range items {
		wg.Add(1)
		sem <- struct{}{}
		go func(it T) {
			defer wg.Done()
			defer func() { <-sem }()
			if err := fn(it); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}(it)
	}
	wg.Wait()
	return first
}

// BenchmarkColdTwoHopS3 runs the 2-hop query cold on the S3 emulator
// (versitygw, scripts/emulators.sh; skipped without it) behind the wire
// proxy answering every request 20 ms late: the fixture's graph is copied
// into a fresh prefix, a new handle (its own process scope: empty caches)
// runs the query, and the bench reports its wall time, requests, serial
// round trips and bytes read. DuckDB, which reads no object store here (its
// httpfs extension is not in the bindings), gets the same Parquet files
// through the same proxy (one GET each, all at once) into a temporary
// directory and runs the same SQL over them: its wall time is the download
// and the query, its bytes the files'. x-duckdb is omnigraph's time over
// DuckDB's. Same answer or the bench fails.
func BenchmarkColdTwoHopS3(b *testing.B) {
	if os.Getenv("AWS_ENDPOINT_URL_S3") == "" && os.Getenv("AWS_ENDPOINT_URL") == "" {
		b.Skip("S3 is not configured; start the emulators (scripts/emulators.sh start; eval \"$(scripts/emulators.sh env)\")")
	}
	f := setup(b)
	b.StopTimer()
	ctx := context.Background()
	bucket := "omnigraph-bench"
	cfg, err := s3.ConfigFromEnv(bucket)
	if err != nil {
		b.Fatal(err)
	}
	cfg.KeyAndChildCoexist = false // versitygw's posix backend
	direct, err := s3.New(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := direct.CreateBucket(ctx); err != nil {
		b.Fatal(err)
	}
	prefix := fmt.Sprintf("twohop-%d/", time.Now().UnixNano())
	defer func() { _ = direct.DeletePrefix(context.Background(), prefix) }()
	// The graph's objects, as its store lists them (no local lock files).
	local, err := backend.Open(ctx, f.dir)
	if err != nil {
		b.Fatal(err)
	}
	objects, err := backend.ListAll(ctx, local, "")
	if err != nil {
		b.Fatal(err)
	}
	root := backend.WithPrefix(direct, prefix)
	if err := each(objects, func(o backend.Attrs) error {
		data, _, err := local.Get(ctx, o.Key)
		if err == nil {
			_, err = root.Put(ctx, o.Key, data)
		}
		return err
	}); err != nil {
		b.Fatal(err)
	}
	p := wire.NewProxy(b, cfg.Endpoint)
	pcfg := cfg
	pcfg.Endpoint = p.URL
	proxied, err := s3.New(ctx, pcfg)
	if err != nil {
		b.Fatal(err)
	}
	const latency = 20 * time.Millisecond
	slow := func() {
		p.Reset()
		p.Arm(wire.Rule{Times: 1 << 30, Forward: true, Rewrite: func(http.Header) { time.Sleep(latency) }})
	}
	want, err := f.runSQL(twoHopSQL)
	if err != nil {
		b.Fatal(err)
	}
	var og, dk time.Duration
	var ogBytes, dkBytes int64
	var reqs, rts int
	for i := 0; i < b.N; i++ {
		meter := &byteMeter{StorageAdapter: backend.WithPrefix(proxied, prefix)}
		slow()
		t0 := time.Now()
		g, err := graph.Open(ctx, meter, graph.OpenOptions{ReadOnly: true, Process: graph.NewProcess()})
		if err != nil {
			b.Fatal(err)
		}
		ours, err := gqRows(g, twoHopGQ)
		og += time.Since(t0)
		g.Close()
		if err != nil {
			b.Fatal(err)
		}
		if ours != want {
			b.Fatalf("answers differ: omnigraph %q, duckdb %q", ours, want)
		}
		seen := p.Requests()
		reqs, rts = len(seen), wire.RoundTrips(seen)
		ogBytes = meter.read.Load()

		// DuckDB: download the view's files through the proxy, then query.
		slow()
		tmp := b.TempDir()
		views := map[string]string{}
		t0 = time.Now()
		var got atomic.Int64
		for view, list := range f.views {
			var local []string
			var keys []string
			for _, q := range strings.Split(list, ",") {
				abs := strings.Trim(q, "'")
				rel, _ := filepath.Rel(f.dir, abs)
				keys = append(keys, filepath.ToSlash(rel))
				local = append(local, "'"+filepath.Join(tmp, strings.ReplaceAll(rel, "/", "_"))+"'")
			}
			if err := each(keys, func(k string) error {
				data, _, err := backend.WithPrefix(proxied, prefix).Get(ctx, k)
				if err != nil {
					return err
				}
				got.Add(int64(len(data)))
				return os.WriteFile(filepath.Join(tmp, strings.ReplaceAll(filepath.FromSlash(k), "/", "_")), data, 0o644)
			}); err != nil {
				b.Fatal(err)
			}
			views[view] = strings.Join(local, ",")
		}
		db, err := openDuck(views)
		if err != nil {
			b.Fatal(err)
		}
		theirs, err := sqlRows(db, twoHopSQL)
		dk += time.Since(t0)
		db.Close()
		if err != nil || theirs != want {
			b.Fatalf("duckdb over the downloaded files: %q %v, want %q", theirs, err, want)
		}
		dkBytes = got.Load()
	}
	p.Reset()
	n := float64(b.N)
	b.ReportMetric(float64(og.Nanoseconds())/n/1e6, "omnigraph-ms")
	b.ReportMetric(float64(dk.Nanoseconds())/n/1e6, "duckdb-ms")
	b.ReportMetric(float64(og)/float64(dk), "x-duckdb")
	b.ReportMetric(float64(ogBytes)/(1<<20), "omnigraph-MiB-read")
	b.ReportMetric(float64(dkBytes)/(1<<20), "duckdb-MiB-read")
	b.ReportMetric(float64(reqs), "omnigraph-requests")
	b.ReportMetric(float64(rts), "omnigraph-round-trips")
	b.ReportMetric(0, "ns/op")
	b.Logf("cold 2-hop on S3 at %v a request, %d nodes / %d edges: omnigraph %.0f ms, %d requests in %d round trips, %.2f MiB read; "+
		"duckdb (download + query) %.0f ms, %.2f MiB read; ratio %.2f",
		latency, f.nodes, f.edges, float64(og.Nanoseconds())/n/1e6, reqs, rts, float64(ogBytes)/(1<<20),
		float64(dk.Nanoseconds())/n/1e6, float64(dkBytes)/(1<<20), float64(og)/float64(dk))
}
