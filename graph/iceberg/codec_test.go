package iceberg_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/iceberg"
)

// metadataFiles lists the metadata file names of one table, in order.
func metadataFiles(t *testing.T, st backend.StorageAdapter, ns, name string) []string {
	t.Helper()
	objs, err := backend.ListAll(context.Background(), st, iceberg.Prefix+ns+"/"+name+"/metadata/v")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range objs {
		if strings.HasSuffix(o.Key, ".metadata.json") {
			out = append(out, o.Key[strings.LastIndexByte(o.Key, '/')+1:])
		}
	}
	slices.Sort(out)
	return out
}

// TestMetadataCodec: metadata files are plain JSON (v<N>.metadata.json)
// by default; gzip is an option that applies from the file after the one
// that records it (write.metadata.compression-codec), so every sync that
// extends v<N> names v<N+1> alike; a table whose gzip files predate the
// property moves to plain JSON by itself; iceberg-go reads the table
// through every change; an unknown codec is refused with nothing written.
func TestMetadataCodec(t *testing.T) {
	ctx := context.Background()
	r := newLocalRig(t)
	r.init(testSchema)
	loadData(t, r.g, "main", testSeed)
	r.remember("main")

	if _, err := iceberg.Sync(ctx, r.g, iceberg.Options{Location: r.loc, MetadataCompression: "zstd"}); !errors.Is(err, graph.ErrInvalidInput) || !strings.Contains(err.Error(), `"gzip"`) {
		t.Fatalf("sync with codec zstd: %v, want invalid input naming the codecs", err)
	}
	if objs, _ := backend.ListAll(ctx, r.store, iceberg.Prefix); len(objs) != 0 {
		t.Fatalf("a refused sync wrote %d objects", len(objs))
	}

	person := func() string {
		t.Helper()
		b, _, err := r.store.Get(ctx, iceberg.Prefix+"nodes/Person/metadata/version-hint.text")
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	newest := func() (string, []byte) {
		t.Helper()
		files := metadataFiles(t, r.store, "nodes", "Person")
		n := person()
		for _, f := range files {
			if f == "v"+n+".metadata.json" || f == "v"+n+".gz.metadata.json" {
				b, _, err := r.store.Get(ctx, iceberg.Prefix+"nodes/Person/metadata/"+f)
				if err != nil {
					t.Fatal(err)
				}
				return f, b
			}
		}
		t.Fatalf("no metadata file v%s in %v", n, files)
		return "", nil
	}
	insert := func(i int) {
		t.Helper()
		mutateQ(t, r.g, "main", fmt.Sprintf(`query q() { insert Person { handle: "c%d", name: "C" } }`, i))
	}

	res := r.sync()
	for _, tb := range res.Tables {
		if !strings.HasSuffix(tb.MetadataLocation, fmt.Sprintf("/v%d.metadata.json", tb.MetadataVersion)) {
			t.Fatalf("default sync wrote %s", tb.MetadataLocation)
		}
	}
	name, b := newest()
	if name != "v1.metadata.json" || b[0] != '{' {
		t.Fatalf("default: newest Person file %s starts %q, want plain JSON v1.metadata.json", name, b[:2])
	}
	var props struct {
		Properties map[string]string `json:"properties"`
	}
	if err := json.Unmarshal(b, &props); err != nil || props.Properties["write.metadata.compression-codec"] != "none" {
		t.Fatalf("v1 codec property %q (%v), want none", props.Properties["write.metadata.compression-codec"], err)
	}
	r.check("plain", "main")

	// gzip: v2 (extending plain v1) stays plain and records gzip; v3 is gzip.
	gzSync := func() {
		t.Helper()
		if _, err := iceberg.Sync(ctx, r.g, iceberg.Options{Location: r.loc, MetadataCompression: iceberg.CodecGzip}); err != nil {
			t.Fatal(err)
		}
	}
	insert(1)
	gzSync()
	if name, b := newest(); name != "v2.metadata.json" || b[0] != '{' {
		t.Fatalf("first gzip sync wrote %s", name)
	}
	insert(2)
	r.remember("main")
	gzSync()
	name, b = newest()
	if name != "v3.gz.metadata.json" || b[0] != 0x1f {
		t.Fatalf("second gzip sync wrote %s starting %x", name, b[:2])
	}
	r.check("gzip", "main")
	// Without an option the table keeps gzip.
	insert(3)
	r.sync()
	if name, _ := newest(); name != "v4.gz.metadata.json" {
		t.Fatalf("a sync without an option wrote %s, want the table's gzip", name)
	}
	tb, err := iceberg.Load(ctx, r.store, iceberg.Ident{Namespace: "nodes", Name: "Person"})
	if err != nil || !strings.HasSuffix(tb.MetadataLocation, "/metadata/v4.gz.metadata.json") {
		t.Fatalf("catalog load of a gzip table: %v %v", tb, err)
	}

	// A table written before the property (gzip files without it): strip
	// it from v4, as an older build wrote it; the next sync still names
	// its file .gz and records none, and the one after is plain.
	_, b = newest()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(zr)
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	delete(doc["properties"].(map[string]any), "write.metadata.compression-codec")
	raw, _ = json.Marshal(doc)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(raw)
	zw.Close()
	if _, err := r.store.Put(ctx, iceberg.Prefix+"nodes/Person/metadata/v4.gz.metadata.json", buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	insert(4)
	r.sync()
	if name, _ := newest(); name != "v5.gz.metadata.json" {
		t.Fatalf("the sync extending an old gzip file wrote %s, want v5.gz.metadata.json", name)
	}
	insert(5)
	r.sync()
	if name, b := newest(); name != "v6.metadata.json" || b[0] != '{' {
		t.Fatalf("the next sync wrote %s, want plain v6.metadata.json", name)
	}
	r.check("back to plain", "main")
	for _, c := range r.commits {
		r.checkCommit("back to plain", c)
	}
	if got := metadataFiles(t, r.store, "nodes", "Person"); !slices.Equal(got, []string{"v1.metadata.json", "v2.metadata.json", "v3.gz.metadata.json", "v4.gz.metadata.json", "v5.gz.metadata.json", "v6.metadata.json"}) {
		t.Fatalf("Person metadata files %v", got)
	}
}
