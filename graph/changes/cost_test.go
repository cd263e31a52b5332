package changes_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/changes"
	"github.com/omnigraph-go/omnigraph/graph/mutate"
	"github.com/omnigraph-go/omnigraph/graph/optimize"
	"github.com/omnigraph-go/omnigraph/internal/testenv"
)

// payload counts the bytes of object bodies read.
type payload struct {
	backend.StorageAdapter
	read atomic.Int64
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

func insertPerson(t *testing.T, g *graph.Graph, i int) {
	t.Helper()
	src := fmt.Sprintf(`query q() { insert Person { handle: "p%05d", name: "P %d", age: %d } }`, i, i, i%90)
	if _, err := mutate.Query(context.Background(), g, src, "", mutate.Options{Branch: "main"}); err != nil {
		t.Fatalf("insert %d: %v", i, err)
	}
}

// pollCost builds a graph of depth one-row commits (each followed by the
// automatic compaction the CLI and the server run) on a memory store,
// takes a cursor at its head, copies it to the S3 emulator, adds one
// one-row commit there, and measures one poll from the cursor on a cold
// handle through the counting wire proxy: requests and bytes read.
func pollCost(t *testing.T, url string, proxy *testenv.Proxy, depth int) (int, int64) {
	t.Helper()
	ctx := context.Background()
	m := mem.New()
	g, err := graph.Init(ctx, m, schemaV1, graph.InitOptions{Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < depth; i++ {
		insertPerson(t, g, i)
		if _, err := optimize.Auto(ctx, g, optimize.AutoOptions{Branch: "main"}); err != nil {
			t.Fatal(err)
		}
	}
	p, err := changes.Poll(ctx, g, changes.Request{})
	if err != nil {
		t.Fatal(err)
	}
	cursor := p.Cursor
	g.Close()
	dst := testenv.Open(t, url)
	t0 := time.Now()
	n := testenv.CopyStore(t, m, dst, 48)
	t.Logf("depth %d: copied %d objects in %v", depth, n, time.Since(t0))
	w, err := graph.Open(ctx, dst, graph.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	insertPerson(t, w, depth)
	w.Close()

	counted := &payload{StorageAdapter: testenv.Open(t, url)}
	r, err := graph.Open(ctx, counted, graph.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	proxy.Reset()
	counted.read.Store(0)
	page, err := changes.Poll(ctx, r, changes.Request{Cursor: cursor})
	if err != nil {
		t.Fatal(err)
	}
	reqs, in := proxy.Count(nil), counted.read.Load()
	if got := renderBlocks(page); len(page.Blocks) != 1 || len(got) != 1 || got[0] != fmt.Sprintf("insert node Person p%05d {age=%d,handle=p%05d,name=P %d}", depth, depth%90, depth, depth) || !page.CaughtUp {
		t.Fatalf("depth %d: the poll found %v", depth, got)
	}
	return reqs, in
}

// TestPollCostFlatWithHistory: on the S3 emulator, through the counting
// wire proxy, a poll that reads one new one-row commit from its cursor
// costs the same requests after 10 and after 2,000 commits, and about the
// same bytes: O(changes since the cursor), never O(history).
func TestPollCostFlatWithHistory(t *testing.T) {
	url := testenv.S3(t)
	endpoint := os.Getenv("AWS_ENDPOINT_URL_S3")
	if endpoint == "" {
		endpoint = os.Getenv("AWS_ENDPOINT_URL")
	}
	proxy := testenv.NewProxy(t, endpoint)
	t.Setenv("AWS_ENDPOINT_URL_S3", proxy.URL)
	shallowReqs, shallowBytes := pollCost(t, url, proxy, 10)
	deepReqs, deepBytes := pollCost(t, testenv.S3(t), proxy, 2000)
	t.Logf("one new commit from a cursor: depth 10 = %d requests, %d bytes read; depth 2000 = %d requests, %d bytes read", shallowReqs, shallowBytes, deepReqs, deepBytes)
	if deepReqs != shallowReqs {
		t.Errorf("requests: %d at depth 2000, %d at depth 10; want the same", deepReqs, shallowReqs)
	}
	if deepReqs > 12 {
		t.Errorf("requests: %d, want <= 12", deepReqs)
	}
	// The compacted table's manifest lists a few more fragments at depth;
	// the bytes stay within a small factor, far from the 200x of history.
	if deepBytes > 2*shallowBytes+8<<10 {
		t.Errorf("bytes read: %d at depth 2000, %d at depth 10", deepBytes, shallowBytes)
	}
}
