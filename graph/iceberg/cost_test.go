package iceberg_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/iceberg"
	"github.com/omnigraph-go/omnigraph/graph/mutate"
	"github.com/omnigraph-go/omnigraph/graph/optimize"
	"github.com/omnigraph-go/omnigraph/internal/testenv"
	"github.com/omnigraph-go/omnigraph/server"
)

// payload counts the bytes of object bodies read and written.
type payload struct {
	backend.StorageAdapter
	read, written atomic.Int64
}

func (p *payload) Get(ctx context.Context, key string) ([]byte, backend.Attrs, error) {
	b, a, err := p.StorageAdapter.Get(ctx, key)
	p.read.Add(int64(len(b)))
	return b, a, err
}

func (p *payload) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	b, err := p.StorageAdapter.GetRange(ctx, key, off, n)
	p.read.Add(int64(len(b)))
	return b, err
}

func (p *payload) Put(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	p.written.Add(int64(len(data)))
	return p.StorageAdapter.Put(ctx, key, data)
}

func (p *payload) PutIfAbsent(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	p.written.Add(int64(len(data)))
	return p.StorageAdapter.PutIfAbsent(ctx, key, data)
}

func (p *payload) PutIfMatch(ctx context.Context, key string, data []byte, v string) (backend.Attrs, error) {
	p.written.Add(int64(len(data)))
	return p.StorageAdapter.PutIfMatch(ctx, key, data, v)
}

const costSchema = `
node Person {
  handle: String @key
  name: String
  age: I32?
}
node Company {
  slug: String @key
}
edge WorksAt: Person -> Company
`

func insertOne(t *testing.T, g *graph.Graph, i int) {
	t.Helper()
	src := fmt.Sprintf(`query q() { insert Person { handle: "p%05d", name: "P %d", age: %d } }`, i, i, i%90)
	if _, err := mutate.Query(context.Background(), g, src, "", mutate.Options{Branch: "main"}); err != nil {
		t.Fatalf("insert %d: %v", i, err)
	}
}

// TestSyncCostFlatWithHistory measures, on the S3 emulator through the
// counting wire proxy, an incremental sync of one one-row commit made
// after 1,000 one-row commits (each followed by automatic compaction, as
// the CLI and the server run it): at most 10 requests (column statistics
// add none), for the one table it changed (1,153 retained snapshots); of
// object bodies, with gzip-compressed metadata at most 64 KiB read and 64
// KiB written, with plain JSON metadata (the default) at most 640 KiB
// each way (measured: 515 KB read, 521 KB written: the metadata file
// every sync of the table reads and rewrites is about 450 bytes per
// retained snapshot uncompressed, against about 40 gzip-compressed). A
// cold loadTable of the REST catalog costs 3 requests (4 with gzip: the
// plain name is tried first). The history is built on a memory store and
// copied to the emulator (its metadata already names the emulator's
// files), so the test stays within seconds.
func TestSyncCostFlatWithHistory(t *testing.T) {
	for _, c := range []struct {
		codec         string
		maxBytes      int64
		loadTableReqs int
	}{
		{iceberg.CodecNone, 640 << 10, 3},
		{iceberg.CodecGzip, 64 << 10, 4},
	} {
		t.Run(c.codec, func(t *testing.T) { syncCost(t, c.codec, c.maxBytes, c.loadTableReqs) })
	}
}

func syncCost(t *testing.T, codec string, maxBytes int64, loadTableReqs int) {
	const commits = 1000
	ctx := context.Background()
	url := testenv.S3(t)
	loc, err := iceberg.Location(url)
	if err != nil {
		t.Fatal(err)
	}
	m := mem.New()
	g, err := graph.Init(ctx, m, costSchema, graph.InitOptions{Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < commits; i++ {
		insertOne(t, g, i)
		if _, err := optimize.Auto(ctx, g, optimize.AutoOptions{Branch: "main"}); err != nil {
			t.Fatalf("auto optimize: %v", err)
		}
	}
	if _, err := iceberg.Sync(ctx, g, iceberg.Options{Location: loc, MetadataCompression: codec}); err != nil {
		t.Fatalf("cold sync of %d commits: %v", commits, err)
	}
	g.Close()
	n := testenv.CopyStore(t, m, testenv.Open(t, url), 16)

	// One more one-row commit, on the emulator.
	w, err := graph.Open(ctx, testenv.Open(t, url), graph.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	insertOne(t, w, commits)
	w.Close()

	// The sync, cold process, through the counting proxy.
	endpoint := os.Getenv("AWS_ENDPOINT_URL_S3")
	if endpoint == "" {
		endpoint = os.Getenv("AWS_ENDPOINT_URL")
	}
	proxy := testenv.NewProxy(t, endpoint)
	t.Setenv("AWS_ENDPOINT_URL_S3", proxy.URL)
	bytes := &payload{StorageAdapter: testenv.Open(t, url)}
	r, err := graph.Open(ctx, bytes, graph.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	proxy.Reset()
	bytes.read.Store(0)
	bytes.written.Store(0)
	res, err := iceberg.Sync(ctx, r, iceberg.Options{Location: loc, Branches: []string{"main"}})
	if err != nil {
		t.Fatal(err)
	}
	reqs := proxy.Count(nil)
	in, out := bytes.read.Load(), bytes.written.Load()
	if len(res.Tables) != 1 || res.Tables[0].Table.Name != "Person" || res.Tables[0].Added != 1 {
		t.Fatalf("the sync of one Person commit changed %+v", res.Tables)
	}
	var metadataSize int64
	if a, err := bytes.Stat(ctx, strings.TrimPrefix(res.Tables[0].MetadataLocation, loc+"/")); err == nil {
		metadataSize = a.Size
	}
	t.Logf("after %d one-row commits (%d objects): incremental sync of one commit = %d requests, %d bytes read + %d bytes written (metadata file v%d: %d bytes)",
		commits, n, reqs, in, out, res.Tables[0].MetadataVersion, metadataSize)
	if reqs > 10 {
		t.Errorf("incremental sync of one commit: %d requests on the wire, want <= 10", reqs)
	}
	// The metadata file lists every retained snapshot (Iceberg keeps no
	// other index of them), so the sync reads it and writes the next one.
	// Cleanup's retention bounds it.
	if in > maxBytes || out > maxBytes {
		t.Errorf("incremental sync of one commit (%s metadata): %d bytes read, %d written, want each <= %d KiB", codec, in, out, maxBytes>>10)
	}

	// A cold loadTable on the REST catalog: O(1) requests.
	srv, err := server.New(server.Config{Graphs: []server.Graph{{ID: "default", G: r}}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer func() { hs.Close(); srv.Close() }()
	proxy.Reset()
	st, body := httpGet(t, hs.URL+"/iceberg/v1/default/namespaces/nodes/tables/Person")
	if st != 200 || !strings.Contains(body, `"metadata-location"`) {
		t.Fatalf("loadTable: %d %.200s", st, body)
	}
	t.Logf("cold loadTable after %d commits: %d requests, %d bytes answered", commits, proxy.Count(nil), len(body))
	if c := proxy.Count(nil); c != loadTableReqs {
		t.Errorf("cold loadTable (%s metadata): %d requests, want %d (hint, metadata, probe)", codec, c, loadTableReqs)
	}
}
