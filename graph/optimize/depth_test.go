package optimize_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/counter"
	"github.com/omnigraph-go/omnigraph/backend/fault"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/backend/s3"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/optimize"
	"github.com/omnigraph-go/omnigraph/graph/query"
	"github.com/omnigraph-go/omnigraph/internal/testenv"
)

// putMeter adds up the bytes written through it.
type putMeter struct {
	backend.StorageAdapter
	written atomic.Int64
}

func (m *putMeter) Put(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	m.written.Add(int64(len(data)))
	return m.StorageAdapter.Put(ctx, key, data)
}

func (m *putMeter) PutIfAbsent(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	m.written.Add(int64(len(data)))
	return m.StorageAdapter.PutIfAbsent(ctx, key, data)
}

func (m *putMeter) PutIfMatch(ctx context.Context, key string, data []byte, v string) (backend.Attrs, error) {
	m.written.Add(int64(len(data)))
	return m.StorageAdapter.PutIfMatch(ctx, key, data, v)
}

// depthRig is a graph of one-row commits written the way the CLI and the
// server write them: a warm writer handle under the writer lock, with the
// automatic compaction after every write.
type depthRig struct {
	g     *graph.Graph
	meter *putMeter
	fault *fault.Injector
	count *counter.Counter
	next  int
	// latency sets the per-request latency of the measured requests: the
	// fault injector's on the in-memory store, the proxy's on S3.
	latency func(time.Duration)
	// everyCommit, when set, runs after each commit that builds the depth.
	everyCommit func()
}

func newDepthRig(tb testing.TB, depth int) *depthRig {
	tb.Helper()
	return newDepthRigOn(tb, mem.New(), nil, nil, depth)
}

// newDepthRigOn builds the history on store; latency nil means the fault
// injector's.
func newDepthRigOn(tb testing.TB, store backend.StorageAdapter, latency func(time.Duration), everyCommit func(), depth int) *depthRig {
	tb.Helper()
	ctx := context.Background()
	r := &depthRig{meter: &putMeter{StorageAdapter: store}, everyCommit: everyCommit}
	r.fault = fault.New(r.meter)
	r.count = counter.New(r.fault)
	r.latency = latency
	if r.latency == nil {
		r.latency = r.fault.Latency
	}
	if _, err := graph.Init(ctx, r.count, schema(tb), graph.InitOptions{Actor: "tester"}); err != nil {
		tb.Fatal(err)
	}
	g, err := graph.Open(ctx, r.count, graph.OpenOptions{Actor: "tester", ExclusiveWriter: true})
	if err != nil {
		tb.Fatal(err)
	}
	r.g = g
	for i := 1; i < depth; i++ { // Init made the first commit
		r.insert(tb)
		if r.everyCommit != nil {
			r.everyCommit()
		}
	}
	return r
}

// insert writes one person as its own commit, then runs the automatic
// compaction as the CLI does after a write.
func (r *depthRig) insert(tb testing.TB) {
	tb.Helper()
	mut(tb, r.g, `mutation m($h: String, $a: I32) { insert Person { handle: $h, name: "P", age: $a } }`,
		map[string]any{"h": fmt.Sprintf("p%06d", r.next), "a": r.next % 60})
	r.next++
	if _, err := optimize.Auto(context.Background(), r.g, optimize.AutoOptions{}); err != nil {
		tb.Fatalf("auto optimize: %v", err)
	}
}

const depthAggregate = `query q() { match { $p: Person } return { count($p) as people, max($p.age) as oldest } }`

// coldRead opens a fresh read-only handle in a fresh process scope and
// runs the aggregate, returning its answer.
func (r *depthRig) coldRead(tb testing.TB) string {
	tb.Helper()
	ctx := context.Background()
	g, err := graph.Open(ctx, r.count, graph.OpenOptions{ReadOnly: true, Process: graph.NewProcess()})
	if err != nil {
		tb.Fatal(err)
	}
	defer g.Close()
	res, err := query.Head(ctx, g, "main", depthAggregate, "", nil)
	if err != nil {
		tb.Fatal(err)
	}
	return fmt.Sprint(res.Rows)
}

type depthCost struct {
	cold        counter.Counts
	warm        counter.Counts
	commitBytes int64
	answer      string
}

func measureDepth(tb testing.TB, r *depthRig) depthCost {
	tb.Helper()
	var c depthCost
	ctx := context.Background()
	// Round trips are counted from overlap: a latency well above the
	// scheduling delays of a loaded machine keeps requests sent together
	// overlapping. Only the counted reads run with it.
	const latency = 20 * time.Millisecond
	r.fault.Latency(latency)
	r.count.Reset()
	c.answer = r.coldRead(tb)
	c.cold = r.count.Snapshot()
	r.fault.Latency(0)
	// The largest one-row commit over a whole compaction cycle (the table
	// manifest is largest just before the automatic run).
	for i := 0; i <= optimize.DefaultAutoThreshold; i++ {
		before := r.meter.written.Load()
		mut(tb, r.g, `mutation m($h: String) { insert Person { handle: $h, name: "W", age: 1 } }`, map[string]any{"h": fmt.Sprintf("w%06d", r.next)})
		r.next++
		c.commitBytes = max(c.commitBytes, r.meter.written.Load()-before)
		if _, err := optimize.Auto(ctx, r.g, optimize.AutoOptions{}); err != nil {
			tb.Fatal(err)
		}
	}
	if _, err := query.Head(ctx, r.g, "main", depthAggregate, "", nil); err != nil {
		tb.Fatal(err)
	}
	mut(tb, r.g, `mutation m($h: String) { insert Person { handle: $h, name: "W", age: 1 } }`, map[string]any{"h": fmt.Sprintf("w%06d", r.next)})
	r.next++
	r.fault.Latency(latency)
	defer r.fault.Latency(0)
	r.count.Reset()
	if _, err := query.Head(ctx, r.g, "main", depthAggregate, "", nil); err != nil {
		tb.Fatal(err)
	}
	c.warm = r.count.Snapshot() // a warm read after a one-row write, on the writer's handle
	return c
}

// TestCostFlatWithDepth pins issue 14's graph-level bounds on real one-row
// commits written with the automatic compaction on: a cold aggregate read
// (fresh process: open + query) after 2,000 commits costs no more requests
// and serial round trips than the same read after 10 (the issue allows
// 1.5x), and at most 4 round trips; a one-row
// commit writes at most 16 KiB at either depth; a warm read after a
// one-row write costs at most 3 requests; and the answers are right.
func TestCostFlatWithDepth(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 2,000 commits")
	}
	shallow := measureDepth(t, newDepthRig(t, 10))
	deep := measureDepth(t, newDepthRig(t, 2000))
	for _, x := range []struct {
		depth int
		c     depthCost
	}{{10, shallow}, {2000, deep}} {
		t.Logf("depth %d: cold aggregate %s; warm read after a write %s; one-row commit wrote %d bytes; answer %s",
			x.depth, x.c.cold, x.c.warm, x.c.commitBytes, x.c.answer)
		if x.c.commitBytes > 16<<10 {
			t.Errorf("depth %d: a one-row commit wrote %d bytes, budget 16 KiB", x.depth, x.c.commitBytes)
		}
		if x.c.warm.Total > 3 {
			t.Errorf("depth %d: a warm read after a one-row write cost %s, budget 3 requests", x.depth, x.c.warm)
		}
	}
	// Init's commit plus depth-1 inserts: depth-1 people, ages i%60.
	if want := "[[9 8]]"; shallow.answer != want {
		t.Errorf("depth 10 answer %s, want %s", shallow.answer, want)
	}
	if want := "[[1999 59]]"; deep.answer != want {
		t.Errorf("depth 2000 answer %s, want %s", deep.answer, want)
	}
	// The budget is 1.5x. Automatic compaction keeps a table under
	// DefaultAutoThreshold small fragments at rest at any depth, and the
	// depth-10 table already holds threshold-1 of them, so the deep read
	// costs no more than the shallow one; the version manifest and the
	// schema are read in one round (query.Run opens the named tables while
	// the schema loads).
	if deep.cold.Total > shallow.cold.Total || deep.cold.RoundTrips > shallow.cold.RoundTrips {
		t.Errorf("cold aggregate: depth 2000 %s against depth 10 %s, budget 1.0x", deep.cold, shallow.cold)
	}
	if deep.cold.RoundTrips > 4 {
		t.Errorf("cold aggregate at depth 2000: %s, budget 4 round trips (list, graph manifest, schema with table manifest, fragments)", deep.cold)
	}
}

// benchDepth is the deep history of BenchmarkCostAtDepth:
// OMNIGRAPH_BENCH_DEPTH, default 10,000.
func benchDepth() int {
	if n, err := strconv.Atoi(os.Getenv("OMNIGRAPH_BENCH_DEPTH")); err == nil && n > 10 {
		return n
	}
	return 10_000
}

// storeBytes is the total size of every object in the store.
func storeBytes(tb testing.TB, s backend.StorageAdapter) int64 {
	tb.Helper()
	all, err := backend.ListAll(context.Background(), s, "")
	if err != nil {
		tb.Fatal(err)
	}
	var n int64
	for _, a := range all {
		n += a.Size
	}
	return n
}

// BenchmarkCostAtDepth prints issue 14's ratios with 20 ms on every storage
// request: the wall time of a one-row insert and of a cold aggregate read
// (fresh process) at depth 10 and at depth OMNIGRAPH_BENCH_DEPTH (default
// 10,000), their ratios (flat history: about 1), and the bytes on the store
// per one-row commit at both depths. The history is built with no latency
// (real one-row table commits with the automatic compaction, about a
// minute for 10,000); only the measured requests wait.
func BenchmarkCostAtDepth(b *testing.B) {
	deep := benchDepth()
	for i := 0; i < b.N; i++ {
		s := measureAtDepth(b, newDepthRig(b, 10), 10)
		d := measureAtDepth(b, newDepthRig(b, deep), deep)
		reportDepth(b, "in-memory store, latency injected in front of it", s, d, deep)
	}
}

// BenchmarkCostAtDepthS3 is BenchmarkCostAtDepth through the S3 emulator
// (versitygw, scripts/emulators.sh) behind the wire proxy, which holds
// each answer back 20 ms while the measured requests run. It skips when
// no S3 endpoint is configured. The deep history is
// OMNIGRAPH_BENCH_S3_DEPTH (default 1,000: each commit is a dozen real
// requests to the emulator, so 10,000 takes far longer to build); the
// output names the depth.
func BenchmarkCostAtDepthS3(b *testing.B) {
	if !testenv.S3Configured() {
		b.Skip("S3 is not configured; start the emulators: " + testenv.StartHint)
	}
	deep := 1000
	if n, err := strconv.Atoi(os.Getenv("OMNIGRAPH_BENCH_S3_DEPTH")); err == nil && n > 10 {
		deep = n
	}
	for i := 0; i < b.N; i++ {
		s := measureAtDepth(b, newS3DepthRig(b, 10), 10)
		d := measureAtDepth(b, newS3DepthRig(b, deep), deep)
		reportDepth(b, fmt.Sprintf("S3 emulator behind the latency proxy, deep history %d commits", deep), s, d, deep)
	}
}

// newS3DepthRig builds a depth-commit history in a fresh prefix of the S3
// test bucket, reached through a wire proxy whose latency the rig sets.
func newS3DepthRig(b *testing.B, depth int) *depthRig {
	bucket := testenv.S3Bucket(b)
	cfg, err := s3.ConfigFromEnv(bucket)
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
	store := backend.WithPrefix(st, prefix)
	b.Cleanup(func() { _ = st.DeletePrefix(context.Background(), prefix) })
	latency := func(d time.Duration) {
		p.Reset()
		if d > 0 {
			// Forwarded, then the answer is held back d.
			p.Arm(testenv.Rule{Times: 1 << 30, Forward: true, Rewrite: func(http.Header) { time.Sleep(d) }})
		}
	}
	// The proxy records every request; forget them as the history grows.
	return newDepthRigOn(b, store, latency, func() { p.Reset() }, depth)
}

type depthPoint struct {
	insert, cold   time.Duration
	reqs, rts      int
	bytesPerCommit float64
}

// measureAtDepth times, with 20 ms per request, five one-row inserts on the
// warm writer handle (after one that runs the automatic compaction) and a
// cold aggregate read in a fresh process scope.
func measureAtDepth(b *testing.B, r *depthRig, depth int) depthPoint {
	const latency = 20 * time.Millisecond
	var p depthPoint
	p.bytesPerCommit = float64(storeBytes(b, r.meter.StorageAdapter)) / float64(depth)
	r.latency(latency)
	defer r.latency(0)
	r.insert(b) // warm
	const n = 5
	start := time.Now()
	for i := 0; i < n; i++ {
		mut(b, r.g, `mutation m($h: String) { insert Person { handle: $h, name: "B", age: 2 } }`, map[string]any{"h": fmt.Sprintf("b%06d-%d", depth, i)})
	}
	p.insert = time.Since(start) / n
	r.count.Reset()
	start = time.Now()
	_ = r.coldRead(b)
	p.cold = time.Since(start)
	c := r.count.Snapshot()
	p.reqs, p.rts = c.Total, c.RoundTrips
	return p
}

func reportDepth(b *testing.B, where string, s, d depthPoint, deep int) {
	b.ReportMetric(float64(d.insert)/float64(s.insert), "insert-deep/shallow")
	b.ReportMetric(float64(d.cold)/float64(s.cold), "coldread-deep/shallow")
	b.ReportMetric(d.bytesPerCommit, "bytes/commit-deep")
	var sb strings.Builder
	fmt.Fprintf(&sb, "at 20ms per request (%s):\n", where)
	fmt.Fprintf(&sb, "  one-row insert: depth 10 %v, depth %d %v, ratio %.2f\n", s.insert, deep, d.insert, float64(d.insert)/float64(s.insert))
	fmt.Fprintf(&sb, "  cold aggregate read: depth 10 %v (%d requests, %d round trips), depth %d %v (%d requests, %d round trips), ratio %.2f\n",
		s.cold, s.reqs, s.rts, deep, d.cold, d.reqs, d.rts, float64(d.cold)/float64(s.cold))
	fmt.Fprintf(&sb, "  bytes on the store per commit: depth 10 %.0f, depth %d %.0f", s.bytesPerCommit, deep, d.bytesPerCommit)
	b.Log(sb.String())
}
