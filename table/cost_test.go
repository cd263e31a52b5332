package table

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/counter"
	"github.com/omnigraph-go/omnigraph/backend/fault"
	"github.com/omnigraph-go/omnigraph/backend/mem"
)

// meter wraps a store and adds up bytes moved, split by what the object is:
// fragment data (data/), version manifests (_versions/) or anything else.
type meter struct {
	backend.StorageAdapter
	mu                          sync.Mutex
	fragRead, manWritten, wrote int64
}

func (m *meter) add(p *int64, n int) {
	m.mu.Lock()
	*p += int64(n)
	m.mu.Unlock()
}

func isFragmentKey(k string) bool { return strings.Contains(k, "/data/") }

func (m *meter) Get(ctx context.Context, key string) ([]byte, backend.Attrs, error) {
	b, a, err := m.StorageAdapter.Get(ctx, key)
	if isFragmentKey(key) {
		m.add(&m.fragRead, len(b))
	}
	return b, a, err
}

func (m *meter) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	b, err := m.StorageAdapter.GetRange(ctx, key, off, n)
	if isFragmentKey(key) {
		m.add(&m.fragRead, len(b))
	}
	return b, err
}

func (m *meter) written(key string, n int) {
	m.add(&m.wrote, n)
	if strings.Contains(key, "/_versions/") {
		m.add(&m.manWritten, n)
	}
}

func (m *meter) Put(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	m.written(key, len(data))
	return m.StorageAdapter.Put(ctx, key, data)
}

func (m *meter) PutIfAbsent(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	m.written(key, len(data))
	return m.StorageAdapter.PutIfAbsent(ctx, key, data)
}

func (m *meter) reset() {
	m.mu.Lock()
	m.fragRead, m.manWritten, m.wrote = 0, 0, 0
	m.mu.Unlock()
}

// meteredStore is counter(meter(mem)): requests and round trips on the
// counter, bytes on the meter.
func meteredStore() (backend.StorageAdapter, *counter.Counter, *meter) {
	m := &meter{StorageAdapter: mem.New()}
	c := counter.New(m)
	return c, c, m
}

// costAt builds a dataset with one 2,000-row base fragment (even keys) and
// then depth-1 one-row commits, each a real table commit.
func costAt(t *testing.T, depth int, compactEvery int) (store backend.StorageAdapter, cnt *counter.Counter, mt *meter, ds *Dataset) {
	t.Helper()
	store, cnt, mt = meteredStore()
	ds = mustCreate(t, store)
	base := make([]person, 2000)
	for i := range base {
		base[i] = person{id: fmt.Sprintf("k%06d", 2*i), name: "base", age: int64(i)}
	}
	ds = mustAppend(t, ds, base)
	for i := 0; ds.Version() < uint64(depth); i++ {
		ds = mustAppend(t, ds, people("h", i, 1))
		if compactEvery > 0 && i%compactEvery == compactEvery-1 {
			var err error
			if ds, err = ds.Compact(context.Background(), CompactOptions{IndexKey: true}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return store, cnt, mt, ds
}

type costSample struct {
	commitBytes, manifestBytes   int64
	coldScan, uniqCheck          counter.Counts
	scanFragBytes, uniqFragBytes int64
	fragments                    int
}

func measureCost(t *testing.T, store backend.StorageAdapter, cnt *counter.Counter, mt *meter, ds *Dataset) costSample {
	t.Helper()
	ctx := context.Background()
	var s costSample
	s.fragments = len(ds.Manifest().Fragments)

	// One more one-row commit: bytes written.
	mt.reset()
	ds = mustAppend(t, ds, people("z", 0, 1))
	s.commitBytes, s.manifestBytes = mt.wrote, mt.manWritten

	// A cold scan: a fresh handle of the version, no cache.
	cold, err := OpenVersion(ctx, store, testPath, MainBranch, ds.Version())
	if err != nil {
		t.Fatal(err)
	}
	cnt.Reset()
	mt.reset()
	recs, err := cold.Scan(ctx, ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := countRows(recs); int64(n) != ds.RowCount() {
		t.Fatalf("cold scan returned %d rows, want %d", n, ds.RowCount())
	}
	releaseAll(recs)
	s.coldScan, s.scanFragBytes = cnt.Snapshot(), mt.fragRead

	// A keyed insert whose key lies inside the base fragment's key range:
	// the uniqueness check (merge-insert staging) on a fresh handle.
	fresh, err := OpenVersion(ctx, store, testPath, MainBranch, ds.Version())
	if err != nil {
		t.Fatal(err)
	}
	rec := record(t, []person{{id: "k000101", name: "new", age: 1}})
	defer rec.Release()
	cnt.Reset()
	mt.reset()
	st, err := fresh.StageMergeInsert(ctx, rec)
	if err != nil {
		t.Fatal(err)
	}
	s.uniqCheck, s.uniqFragBytes = cnt.Snapshot(), mt.fragRead
	if st.Empty() {
		t.Fatal("merge-insert of a new key staged nothing")
	}
	return s
}

func countRows(recs []arrow.Record) int {
	n := 0
	for _, r := range recs {
		n += int(r.NumRows())
	}
	return n
}

// TestCostProfile records what one-row commits cost as history grows
// (bytes written per commit, a cold scan, a keyed insert's uniqueness
// check). It asserts nothing about growth itself; the budget tests do. Run
// with -v to print the profile.
func TestCostProfile(t *testing.T) {
	for _, c := range []struct{ depth, compactEvery int }{{10, 0}, {1000, 0}, {2000, 32}} {
		depth := c.depth
		store, cnt, mt, ds := costAt(t, depth, c.compactEvery)
		s := measureCost(t, store, cnt, mt, ds)
		t.Logf("depth %d, compaction every %d commits: fragments=%d commit_bytes=%d manifest_bytes=%d cold_scan={%s} scan_fragment_bytes=%d uniq_check={%s} uniq_fragment_bytes=%d",
			depth, c.compactEvery, s.fragments, s.commitBytes, s.manifestBytes, s.coldScan, s.scanFragBytes, s.uniqCheck, s.uniqFragBytes)
		if c.compactEvery == 0 {
			continue // the uncompacted rows are the "before" of the table
		}
		// Issue 14's bounds, on a compacted history of real one-row commits:
		// a commit writes at most 16 KiB, a cold scan's requests are bounded
		// by the (compacted) fragment count, and the key check reads no
		// fragment bytes.
		if s.commitBytes > 16<<10 {
			t.Errorf("depth %d: a one-row commit wrote %d bytes, budget 16 KiB", depth, s.commitBytes)
		}
		if s.coldScan.Total > s.fragments+4 {
			t.Errorf("depth %d: cold scan of %d fragments cost %d requests", depth, s.fragments, s.coldScan.Total)
		}
		if s.uniqFragBytes != 0 {
			t.Errorf("depth %d: the uniqueness check read %d fragment bytes, want 0", depth, s.uniqFragBytes)
		}
	}
}

// latentStore is counter(fault(meter(mem))) with a per-request latency, so
// requests sent together overlap and the counter's round trips measure the
// critical path.
func latentStore(d time.Duration) (backend.StorageAdapter, *counter.Counter, *meter, *fault.Injector) {
	m := &meter{StorageAdapter: mem.New()}
	inj := fault.New(m)
	inj.Latency(d)
	c := counter.New(inj)
	return c, c, m, inj
}

// TestColdScanReadsFragmentsInParallel pins the parallel-read rule: a cold
// scan of F fragments sends its fragment GETs up to 16 at a time, so its
// serial round trips are at most F/16 + 3, and it reads each fragment once.
func TestColdScanReadsFragmentsInParallel(t *testing.T) {
	ctx := context.Background()
	store, cnt, _, inj := latentStore(0)
	ds := mustCreate(t, store)
	const F = 160
	for i := 0; i < F; i++ {
		ds = mustAppend(t, ds, people("p", i, 1))
	}
	inj.Latency(20 * time.Millisecond) // so scheduling delays cannot split a parallel round
	cold, err := OpenVersion(ctx, store, testPath, MainBranch, ds.Version())
	if err != nil {
		t.Fatal(err)
	}
	cnt.Reset()
	got := rowsOf(t, cold)
	c := cnt.Snapshot()
	if !equalRows(got, render(people("p", 0, F))) {
		t.Fatalf("cold scan rows differ: %d rows", len(got))
	}
	if c.Get != F || c.Total != F {
		t.Fatalf("cold scan of %d fragments: %s, want exactly %d GETs", F, c, F)
	}
	if max := F/16 + 3; c.RoundTrips > max {
		t.Fatalf("cold scan of %d fragments: %d serial round trips, budget %d (%s)", F, c.RoundTrips, max, c)
	}
	t.Logf("cold scan of %d fragments: %s", F, c)
}

// TestWarmReadAfterWriteFetchesOnlyNewFragment pins the immutable-object
// cache rule: versions share the cache of the handle they were derived from
// (or were given with WithCache), so after a one-row write a scan of the new
// version fetches only the new fragment, and opening the new version on a
// handle that shares the cache costs its manifest GET plus that fragment.
func TestWarmReadAfterWriteFetchesOnlyNewFragment(t *testing.T) {
	ctx := context.Background()
	store, cnt, mt := meteredStore()
	ds := mustCreate(t, store)
	for i := 0; i < 50; i++ {
		ds = mustAppend(t, ds, people("p", i, 1))
	}
	_ = rowsOf(t, ds) // warm
	ds = mustAppend(t, ds, people("p", 50, 1))
	cnt.Reset()
	mt.reset()
	got := rowsOf(t, ds)
	c := cnt.Snapshot()
	if !equalRows(got, render(people("p", 0, 51))) {
		t.Fatalf("warm scan rows differ: %d rows", len(got))
	}
	if c.Total > 3 || c.Get != 1 {
		t.Fatalf("warm read after a one-row write: %s, want only the new fragment's GET (budget 3)", c)
	}
	newest := ds.Manifest().Fragments[len(ds.Manifest().Fragments)-1]
	if mt.fragRead != newest.Size {
		t.Fatalf("warm read read %d fragment bytes, want only the new fragment's %d", mt.fragRead, newest.Size)
	}

	// Another handle of the next version, given the same cache.
	next := mustAppend(t, ds, people("p", 51, 1))
	cnt.Reset()
	other, err := OpenVersion(ctx, store, testPath, MainBranch, next.Version())
	if err != nil {
		t.Fatal(err)
	}
	got = rowsOf(t, other.WithCache(ds.Cache()))
	if c := cnt.Snapshot(); c.Total > 3 || c.Get != 2 {
		t.Fatalf("open + read of the next version with a shared cache: %s, want manifest + new fragment (budget 3)", c)
	}
	if !equalRows(got, render(people("p", 0, 52))) {
		t.Fatalf("shared-cache scan rows differ: %d rows", len(got))
	}
}

// TestCacheBudget pins the memory bound: a cache never holds more than its
// limit, evicts least recently used objects, and reads stay correct.
func TestCacheBudget(t *testing.T) {
	store, cnt, _ := meteredStore()
	ds := mustCreate(t, store)
	for i := 0; i < 20; i++ {
		ds = mustAppend(t, ds, people("p", i*100, 100))
	}
	c := NewCache(4 << 10)
	small := ds.WithCache(c)
	for i := 0; i < 2; i++ {
		if got := rowsOf(t, small); len(got) != 2000 {
			t.Fatalf("scan with a small cache: %d rows", len(got))
		}
	}
	st := c.Stats()
	if st.Bytes > st.Limit || st.Evictions == 0 {
		t.Fatalf("cache stats %+v: want bytes <= limit and evictions", st)
	}
	t.Setenv(CacheBytesEnv, "12345")
	if got := NewCache(0).Stats().Limit; got != 12345 {
		t.Fatalf("%s=12345: limit %d", CacheBytesEnv, got)
	}
	_ = cnt
}

// TestCompactBoundsManifestAndKeyChecksReadNoFragment pins two rules: a
// compaction with IndexKey folds many one-row fragments into one fragment
// covered by the key index (the manifest then no longer grows with the
// history it had), with the same rows; and a keyed insert whose key lies
// inside existing fragments' key ranges checks uniqueness without reading
// any fragment byte, both right after the compaction and after more
// one-row commits (their inline keys answer).
func TestCompactBoundsManifestAndKeyChecksReadNoFragment(t *testing.T) {
	ctx := context.Background()
	store, cnt, mt, ds := costAt(t, 300, 0)
	want := rowsOf(t, ds)
	before := len(ds.Manifest().Fragments)
	ds, err := ds.Compact(ctx, CompactOptions{IndexKey: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := rowsOf(t, ds); !equalRows(got, want) {
		t.Fatalf("compaction changed the rows: %d vs %d", len(got), len(want))
	}
	if n := len(ds.Manifest().Fragments); n != 1 || !ds.KeyIndexCovers() {
		t.Fatalf("after compaction: %d fragments (was %d), index covers=%v", n, before, ds.KeyIndexCovers())
	}
	if again, err := ds.Compact(ctx, CompactOptions{IndexKey: true}); err != nil || again != ds {
		t.Fatalf("a second compaction must be a no-op: %v", err)
	}
	for i := 0; i < 20; i++ {
		ds = mustAppend(t, ds, people("q", i, 1))
	}
	s := measureCost(t, store, cnt, mt, ds)
	t.Logf("after compaction + 20 commits: fragments=%d commit_bytes=%d cold_scan={%s} uniq_check={%s} uniq_fragment_bytes=%d", s.fragments, s.commitBytes, s.coldScan, s.uniqCheck, s.uniqFragBytes)
	if s.uniqFragBytes != 0 {
		t.Fatalf("uniqueness check read %d fragment bytes, want 0", s.uniqFragBytes)
	}
	if s.uniqCheck.Total > 4 {
		t.Fatalf("uniqueness check cost %s, want index directory + page + the new fragment's put", s.uniqCheck)
	}
	if s.commitBytes > 16<<10 {
		t.Fatalf("one-row commit wrote %d bytes, budget 16 KiB", s.commitBytes)
	}
}
