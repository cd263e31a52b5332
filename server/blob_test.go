package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/local"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/load"
	"github.com/omnigraph-go/omnigraph/table"
)

const blobSchema = `
node Doc {
  slug: String @key
  body: Blob?
}
edge Cites: Doc -> Doc {
  note: Blob?
}
`

// pieceReads counts the reads of blob area objects.
type pieceReads struct {
	backend.StorageAdapter
	n atomic.Int64
}

func (p *pieceReads) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if strings.Contains(key, "/_blobs/") {
		p.n.Add(1)
	}
	return p.StorageAdapter.GetRange(ctx, key, off, n)
}

func (p *pieceReads) Get(ctx context.Context, key string) ([]byte, backend.Attrs, error) {
	if strings.Contains(key, "/_blobs/") {
		p.n.Add(1)
	}
	return p.StorageAdapter.Get(ctx, key)
}

func blobBytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31 + i/997)
	}
	return b
}

// blobGraph is a graph holding Doc "big" (a stored value of two pieces),
// "small" (inline), "none" (null), "ext" (external) and edge "c1".
func blobGraph(t *testing.T) (*graph.Graph, *pieceReads, []byte, []byte) {
	t.Helper()
	ctx := context.Background()
	st, err := local.New(filepath.Join(t.TempDir(), "g"))
	if err != nil {
		t.Fatal(err)
	}
	store := &pieceReads{StorageAdapter: st}
	g, err := graph.Init(ctx, store, blobSchema, graph.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g.Close()
	pol, _ := graph.NewExternalBlobPolicy([]string{"https://cdn.example.com/"})
	g, err = graph.Open(ctx, store, graph.OpenOptions{ExternalBlobs: pol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	big, small := blobBytes(table.BlobPieceSize+1000), []byte("hello, blob")
	data := fmt.Sprintf(`{"type":"Doc","data":{"slug":"big","body":"base64:%s"}}
{"type":"Doc","data":{"slug":"small","body":"base64:%s"}}
{"type":"Doc","data":{"slug":"none"}}
{"type":"Doc","data":{"slug":"ext","body":"https://cdn.example.com/x.bin"}}
{"edge":"Cites","from":"big","to":"small","data":{"id":"c1","note":"base64:%s"}}
`, base64.StdEncoding.EncodeToString(big), base64.StdEncoding.EncodeToString(small), base64.StdEncoding.EncodeToString(small))
	if _, err := load.Run(ctx, g, strings.NewReader(data), load.Options{Mode: load.Merge}); err != nil {
		t.Fatal(err)
	}
	return g, store, big, small
}

// get sends a request without following redirects; it returns the status,
// the body and the headers.
func get(t *testing.T, method, url, token string, hdr ...string) (int, []byte, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header
}

func sel(slug string) string {
	return "/graphs/default/blob?entity=node&type=Doc&property=body&id=" + slug
}

// TestServerBlob pins GET and HEAD of /blob: the bytes with their length,
// ETag and snapshot; one range as 206 (across a piece boundary too);
// unsatisfiable ranges as 416 with blob_range; ignored range forms;
// If-None-Match, If-Match and If-Range; HEAD without reading a byte; the
// 302 of an external value; edges; snapshots; and the errors of bad
// selectors, all as JSON envelopes.
func TestServerBlob(t *testing.T) {
	ctx := context.Background()
	g, store, big, small := blobGraph(t)
	_, base := newTestServer(t, g, Config{})
	head, _ := g.Snapshot(ctx, "main")
	etag := table.InlineBlob(big).ETag()

	st, b, h := get(t, "GET", base+sel("big"), "")
	if st != 200 || !bytes.Equal(b, big) || h.Get("ETag") != etag || h.Get("Content-Length") != fmt.Sprint(len(big)) ||
		h.Get("Accept-Ranges") != "bytes" || h.Get("Content-Type") != "application/octet-stream" || h.Get(api.HeaderSnapshotID) != head.CommitID() {
		t.Fatalf("GET big: %d, %d bytes, headers %v", st, len(b), h)
	}
	st, b, _ = get(t, "GET", base+sel("small"), "")
	if st != 200 || !bytes.Equal(b, small) {
		t.Fatalf("GET small: %d %q", st, b)
	}
	st, b, _ = get(t, "GET", base+"/graphs/default/blob?entity=edge&type=Cites&id=c1&property=note", "")
	if st != 200 || !bytes.Equal(b, small) {
		t.Fatalf("GET edge note: %d %q", st, b)
	}

	pb := int64(table.BlobPieceSize)
	for _, tc := range []struct {
		rng        string
		start, end int64 // [start, end)
	}{
		{"bytes=0-9", 0, 10},
		{fmt.Sprintf("bytes=%d-%d", pb-5, pb+4), pb - 5, pb + 5},
		{"bytes=-7", int64(len(big)) - 7, int64(len(big))},
		{fmt.Sprintf("bytes=%d-", len(big)-3), int64(len(big)) - 3, int64(len(big))},
		{fmt.Sprintf("bytes=10-%d", len(big)+100), 10, int64(len(big))},
	} {
		st, b, h := get(t, "GET", base+sel("big"), "", "Range", tc.rng)
		want := fmt.Sprintf("bytes %d-%d/%d", tc.start, tc.end-1, len(big))
		if st != 206 || !bytes.Equal(b, big[tc.start:tc.end]) || h.Get("Content-Range") != want || h.Get("Content-Length") != fmt.Sprint(tc.end-tc.start) {
			t.Fatalf("Range %s: %d, %d bytes, Content-Range %q (want %q)", tc.rng, st, len(b), h.Get("Content-Range"), want)
		}
	}
	for _, rng := range []string{fmt.Sprintf("bytes=%d-", len(big)), fmt.Sprintf("bytes=%d-%d", len(big)+5, len(big)+9), "bytes=-0"} {
		st, b, h := get(t, "GET", base+sel("big"), "", "Range", rng)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		br, _ := m["blob_range"].(map[string]any)
		if st != 416 || h.Get("Content-Range") != fmt.Sprintf("bytes */%d", len(big)) || br == nil || br["length"] != float64(len(big)) {
			t.Fatalf("Range %s: %d %s, Content-Range %q", rng, st, b, h.Get("Content-Range"))
		}
	}
	for _, rng := range []string{"bytes=0-1,5-6", "items=0-1", "bytes=x-y", "bytes=9-3"} {
		if st, b, _ := get(t, "GET", base+sel("big"), "", "Range", rng); st != 200 || len(b) != len(big) {
			t.Fatalf("Range %q (ignored): %d, %d bytes", rng, st, len(b))
		}
	}
	// Conditionals.
	if st, b, _ := get(t, "GET", base+sel("big"), "", "If-None-Match", etag); st != 304 || len(b) != 0 {
		t.Fatalf("If-None-Match current: %d", st)
	}
	if st, _, _ := get(t, "GET", base+sel("big"), "", "If-None-Match", `"other", W/`+etag); st != 304 {
		t.Fatalf("If-None-Match weak: %d", st)
	}
	if st, b, _ := get(t, "GET", base+sel("big"), "", "If-None-Match", `"other"`); st != 200 || len(b) != len(big) {
		t.Fatalf("If-None-Match other: %d", st)
	}
	if st, b, h := get(t, "GET", base+sel("big"), "", "If-Match", `"other"`); st != 412 || h.Get("ETag") != etag || !strings.Contains(string(b), "If-Match does not name") {
		t.Fatalf("If-Match other: %d %s", st, b)
	}
	if st, _, _ := get(t, "GET", base+sel("big"), "", "If-Match", "W/"+etag); st != 412 {
		t.Fatalf("If-Match weak: %d, want 412 (strong comparison)", st)
	}
	if st, b, _ := get(t, "GET", base+sel("big"), "", "If-Match", "*", "Range", "bytes=0-0"); st != 206 || len(b) != 1 {
		t.Fatalf("If-Match *: %d", st)
	}
	if st, b, _ := get(t, "GET", base+sel("big"), "", "If-Range", `"stale"`, "Range", "bytes=0-0"); st != 200 || len(b) != len(big) {
		t.Fatalf("If-Range stale: %d, %d bytes", st, len(b))
	}
	if st, b, _ := get(t, "GET", base+sel("big"), "", "If-Range", etag, "Range", "bytes=0-0"); st != 206 || len(b) != 1 {
		t.Fatalf("If-Range current: %d, %d bytes", st, len(b))
	}
	// HEAD: the full representation's headers, no byte read (Range ignored).
	before := store.n.Load()
	st, b, h = get(t, "HEAD", base+sel("big"), "", "Range", "bytes=0-0")
	if st != 200 || len(b) != 0 || h.Get("Content-Length") != fmt.Sprint(len(big)) || h.Get("ETag") != etag {
		t.Fatalf("HEAD: %d %v", st, h)
	}
	if n := store.n.Load() - before; n != 0 {
		t.Fatalf("HEAD read %d blob pieces, want 0", n)
	}
	// A one-byte range reads one piece; the whole value its two.
	before = store.n.Load()
	get(t, "GET", base+sel("big"), "", "Range", "bytes=5-5")
	if n := store.n.Load() - before; n != 1 {
		t.Fatalf("a one-byte range read %d pieces, want 1", n)
	}
	// External: 302, never proxied.
	st, _, h = get(t, "GET", base+sel("ext"), "")
	if st != 302 || h.Get("Location") != "https://cdn.example.com/x.bin" || h.Get("Cache-Control") != "no-store" || h.Get(api.HeaderSnapshotID) == "" {
		t.Fatalf("external: %d %v", st, h)
	}
	if st, _, _ = get(t, "HEAD", base+sel("ext"), ""); st != 302 {
		t.Fatalf("HEAD external: %d", st)
	}
	// A snapshot keeps its value after an update.
	if _, err := load.Run(ctx, g, strings.NewReader(`{"type":"Doc","data":{"slug":"small","body":"base64:bmV3"}}`), load.Options{Mode: load.Merge}); err != nil {
		t.Fatal(err)
	}
	if st, b, _ := get(t, "GET", base+sel("small"), ""); st != 200 || string(b) != "new" {
		t.Fatalf("after the update: %d %q", st, b)
	}
	if st, b, h := get(t, "GET", base+sel("small")+"&snapshot="+head.CommitID(), ""); st != 200 || !bytes.Equal(b, small) || h.Get(api.HeaderSnapshotID) != head.CommitID() {
		t.Fatalf("at the old snapshot: %d %q", st, b)
	}
	if st, b, _ := get(t, "GET", base+sel("small")+"&branch=main", ""); st != 200 || string(b) != "new" {
		t.Fatalf("branch=main: %d %q", st, b)
	}
	// Errors, each a JSON envelope.
	for _, tc := range []struct {
		path   string
		status int
		code   string
	}{
		{sel("none"), 404, "not_found"},
		{sel("nobody"), 404, "not_found"},
		{sel("big") + "&branch=nope", 404, "not_found"},
		{sel("big") + "&snapshot=01KA3Q8J5YV9H0M3WQ8X2C4T7B", 404, "not_found"},
		{sel("big") + "&snapshot=01NOPE", 400, "bad_request"},
		{sel("big") + "&branch=main&snapshot=x", 400, "bad_request"},
		{"/graphs/default/blob?entity=node&type=Doc&id=big", 400, "bad_request"},
		{"/graphs/default/blob?entity=thing&type=Doc&id=big&property=body", 400, "bad_request"},
		{"/graphs/default/blob?entity=node&type=Nope&id=big&property=body", 400, "bad_request"},
		{"/graphs/default/blob?entity=node&type=Doc&id=big&property=slug", 400, "bad_request"},
		{"/graphs/default/blob?entity=edge&type=Doc&id=big&property=body", 400, "bad_request"},
		{"/graphs/nope/blob?entity=node&type=Doc&id=big&property=body", 404, "not_found"},
	} {
		st, b, _ := get(t, "GET", base+tc.path, "")
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil || st != tc.status || m["code"] != tc.code {
			t.Fatalf("%s: %d %s, want %d %s", tc.path, st, b, tc.status, tc.code)
		}
	}
}

// TestServerBlobDamage: a value whose first piece is gone is a 500 with
// the blob_integrity class and no storage key; one whose later piece is
// gone is cut after its first bytes (the client sees a short body).
func TestServerBlobDamage(t *testing.T) {
	ctx := context.Background()
	g, store, big, _ := blobGraph(t)
	_, base := newTestServer(t, g, Config{})
	objs, err := backend.ListAll(ctx, store, "nodes/Doc/_blobs/")
	if err != nil || len(objs) != 2 {
		t.Fatalf("pieces %v %v", objs, err)
	}
	if err := store.Delete(ctx, objs[1].Key); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", base+sel("big"), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, rerr := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || rerr == nil || len(b) >= len(big) {
		t.Fatalf("a cut answer: %d, %d bytes, %v", resp.StatusCode, len(b), rerr)
	}
	if err := store.Delete(ctx, objs[0].Key); err != nil {
		t.Fatal(err)
	}
	st, b, _ := get(t, "GET", base+sel("big"), "")
	if st != 500 || !strings.Contains(string(b), `"failure_class":"blob_integrity"`) || strings.Contains(string(b), "_blobs") {
		t.Fatalf("missing first piece: %d %s", st, b)
	}
}

// TestServerBlobAuth: the route needs a token (401) and the read action
// on the branch (403), like every read; a snapshot read needs read on the
// whole graph.
func TestServerBlobAuth(t *testing.T) {
	g, _, _, _ := blobGraph(t)
	tokens, secrets := tokensFor(t, "alice", "rita")
	pol, err := ParsePolicy("p.cedar", []byte(`@id("alice") permit (principal == Omnigraph::Actor::"alice", action, resource);`))
	if err != nil {
		t.Fatal(err)
	}
	_, base := newTestServer(t, g, Config{Tokens: tokens, Policy: pol})
	if st, _, _ := get(t, "GET", base+sel("small"), ""); st != 401 {
		t.Fatalf("no token: %d", st)
	}
	if st, _, _ := get(t, "HEAD", base+sel("small"), ""); st != 401 {
		t.Fatalf("HEAD, no token: %d", st)
	}
	if st, b, _ := get(t, "GET", base+sel("small"), secrets["rita"]); st != 403 || !strings.Contains(string(b), "forbidden") {
		t.Fatalf("denied: %d %s", st, b)
	}
	if st, b, _ := get(t, "GET", base+sel("small"), secrets["alice"]); st != 200 || string(b) != "hello, blob" {
		t.Fatalf("allowed: %d %q", st, b)
	}
}

// TestMCPBlobTools: blob_stat and blob_read through the SDK client.
func TestMCPBlobTools(t *testing.T) {
	g, _, big, small := blobGraph(t)
	_, base := newTestServer(t, g, Config{})
	cs, err := mcpConnect(t, base, "")
	if err != nil {
		t.Fatal(err)
	}
	res := callTool(t, cs, "blob_stat", map[string]any{"entity": "node", "type": "Doc", "id": "big", "property": "body"})
	if st := structured(t, res); res.IsError || st["kind"] != "managed" || st["size"] != float64(len(big)) || st["etag"] != table.InlineBlob(big).ETag() {
		t.Fatalf("blob_stat: %v", st)
	}
	res = callTool(t, cs, "blob_read", map[string]any{"entity": "node", "type": "Doc", "id": "big", "property": "body", "offset": table.BlobPieceSize - 2, "length": 4})
	rd := structured(t, res)
	got, _ := base64.StdEncoding.DecodeString(fmt.Sprint(rd["data_base64"]))
	if res.IsError || !bytes.Equal(got, big[table.BlobPieceSize-2:table.BlobPieceSize+2]) || rd["length"] != 4.0 {
		t.Fatalf("blob_read: %v", rd)
	}
	res = callTool(t, cs, "blob_read", map[string]any{"entity": "edge", "type": "Cites", "id": "c1", "property": "note"})
	rd = structured(t, res)
	if got, _ := base64.StdEncoding.DecodeString(fmt.Sprint(rd["data_base64"])); res.IsError || !bytes.Equal(got, small) {
		t.Fatalf("blob_read of the edge: %v", rd)
	}
	res = callTool(t, cs, "blob_read", map[string]any{"entity": "node", "type": "Doc", "id": "big", "property": "body"})
	if rd := structured(t, res); res.IsError || rd["length"] != float64(maxToolRead) {
		t.Fatalf("blob_read default length: %v", rd["length"])
	}
	res = callTool(t, cs, "blob_read", map[string]any{"entity": "node", "type": "Doc", "id": "ext", "property": "body"})
	if rd := structured(t, res); res.IsError || rd["uri"] != "https://cdn.example.com/x.bin" || rd["data_base64"] != nil {
		t.Fatalf("blob_read of an external value: %v", rd)
	}
	res = callTool(t, cs, "blob_read", map[string]any{"entity": "node", "type": "Doc", "id": "big", "property": "body", "offset": len(big) + 1})
	if te := structured(t, res); !res.IsError || te["status"] != 416.0 || te["blob_range"] == nil {
		t.Fatalf("blob_read past the end: %v", te)
	}
	res = callTool(t, cs, "blob_stat", map[string]any{"entity": "node", "type": "Doc", "id": "none", "property": "body"})
	if te := structured(t, res); !res.IsError || te["status"] != 404.0 {
		t.Fatalf("blob_stat of a null value: %v", te)
	}
}
