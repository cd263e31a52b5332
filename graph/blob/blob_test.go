package blob_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/blob"
	"github.com/omnigraph-go/omnigraph/graph/cleanup"
	"github.com/omnigraph-go/omnigraph/graph/export"
	"github.com/omnigraph-go/omnigraph/graph/load"
	"github.com/omnigraph-go/omnigraph/graph/merge"
	"github.com/omnigraph-go/omnigraph/graph/mutate"
	"github.com/omnigraph-go/omnigraph/graph/optimize"
	"github.com/omnigraph-go/omnigraph/graph/query"
	"github.com/omnigraph-go/omnigraph/table"
)

const schema = `node Doc {
  slug: String @key
  body: Blob?
  title: String?
}
node Tag {
  name: String @key
}
edge Tagged: Doc -> Tag {
  note: Blob?
}
`

// bytesOf returns n deterministic pseudo-random bytes.
func bytesOf(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed+1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func b64(b []byte) string { return "base64:" + base64.StdEncoding.EncodeToString(b) }

func newGraph(t *testing.T, policy ...string) (*graph.Graph, backend.StorageAdapter) {
	t.Helper()
	ctx := context.Background()
	store := mem.New()
	g, err := graph.Init(ctx, store, schema, graph.InitOptions{Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	g.Close()
	pol, err := graph.NewExternalBlobPolicy(policy)
	if err != nil {
		t.Fatal(err)
	}
	g, err = graph.Open(ctx, store, graph.OpenOptions{ExternalBlobs: pol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g, store
}

func loadLines(t *testing.T, g *graph.Graph, mode load.Mode, lines ...string) *load.Result {
	t.Helper()
	res, err := load.Run(context.Background(), g, strings.NewReader(strings.Join(lines, "\n")+"\n"), load.Options{Mode: mode})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return res
}

func docLine(slug string, body any) string {
	v := "null"
	switch x := body.(type) {
	case []byte:
		v = fmt.Sprintf("%q", b64(x))
	case string:
		v = fmt.Sprintf("%q", x)
	}
	return fmt.Sprintf(`{"type":"Doc","data":{"slug":%q,"body":%s}}`, slug, v)
}

// read returns the whole value of a cell at snap.
func read(t *testing.T, snap *graph.Snapshot, sel blob.Selector) []byte {
	t.Helper()
	ctx := context.Background()
	c, err := blob.Open(ctx, snap, sel)
	if err != nil {
		t.Fatalf("open %+v: %v", sel, err)
	}
	var buf bytes.Buffer
	if err := c.Read(ctx, &buf, 0, c.Value.Size); err != nil {
		t.Fatalf("read %+v: %v", sel, err)
	}
	return buf.Bytes()
}

func head(t *testing.T, g *graph.Graph, branch string) *graph.Snapshot {
	t.Helper()
	s, err := g.Snapshot(context.Background(), branch)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func doc(slug string) blob.Selector {
	return blob.Selector{Entity: blob.Node, Type: "Doc", ID: slug, Property: "body"}
}

// pieces counts the objects of every blob area.
func pieces(t *testing.T, store backend.StorageAdapter) int {
	t.Helper()
	objs, err := backend.ListAll(context.Background(), store, "")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, o := range objs {
		if strings.Contains(o.Key, "/_blobs/") {
			n++
		}
	}
	return n
}

// TestBlobLifecycle carries managed values through every writer and
// reader: load (inline, stored, empty, null, on an edge), reads and stat,
// an update whose old value old snapshots still read, a branch write
// merged back, optimize, export into a rebuilt graph, and cleanup, which
// keeps what retained versions reference and reclaims the rest.
func TestBlobLifecycle(t *testing.T) {
	ctx := context.Background()
	g, store := newGraph(t)
	small, big := bytesOf(1, 10), bytesOf(2, table.BlobInlineMax*3)
	note := bytesOf(3, table.BlobPieceSize+10)
	loadLines(t, g, load.Merge,
		docLine("a", small), docLine("b", big), docLine("c", nil), docLine("d", []byte{}),
		`{"type":"Tag","data":{"name":"t"}}`,
		fmt.Sprintf(`{"edge":"Tagged","from":"b","to":"t","data":{"id":"e1","note":%q}}`, b64(note)),
	)
	s1 := head(t, g, "main")
	for sel, want := range map[blob.Selector][]byte{
		doc("a"): small, doc("b"): big, doc("d"): {},
		{Entity: blob.Edge, Type: "Tagged", ID: "e1", Property: "note"}: note,
	} {
		if got := read(t, s1, sel); !bytes.Equal(got, want) {
			t.Fatalf("%+v: read %d bytes, want %d equal", sel, len(got), len(want))
		}
	}
	c, err := blob.Open(ctx, s1, doc("b"))
	if err != nil {
		t.Fatal(err)
	}
	info := c.Info()
	if info.Kind != "managed" || *info.Size != int64(len(big)) || info.ETag != table.InlineBlob(big).ETag() || info.Snapshot != s1.CommitID() || info.Branch != "main" {
		t.Fatalf("stat %+v", info)
	}
	// Ranges: a middle slice; a length past the end is cut; an offset
	// past the end is refused.
	off, n, err := c.Range(100, 50)
	var buf bytes.Buffer
	if err != nil || c.Read(ctx, &buf, off, n) != nil || !bytes.Equal(buf.Bytes(), big[100:150]) {
		t.Fatalf("range read: %v", err)
	}
	if _, n, err := c.Range(int64(len(big))-5, 1000); err != nil || n != 5 {
		t.Fatalf("range past the end: %d %v, want 5 bytes", n, err)
	}
	var re *blob.RangeError
	if _, _, err := c.Range(int64(len(big)), 1); !errors.As(err, &re) || re.Length != int64(len(big)) {
		t.Fatalf("range at the end: %v, want a RangeError", err)
	}
	// Selectors.
	for _, tc := range []struct {
		sel  blob.Selector
		want error
	}{
		{doc("c"), blob.ErrNotFound},
		{doc("nobody"), blob.ErrNotFound},
		{blob.Selector{Entity: "vertex", Type: "Doc", ID: "a", Property: "body"}, graph.ErrInvalidInput},
		{blob.Selector{Entity: blob.Node, Type: "Nope", ID: "a", Property: "body"}, graph.ErrInvalidInput},
		{blob.Selector{Entity: blob.Node, Type: "Doc", ID: "a", Property: "title"}, graph.ErrInvalidInput},
		{blob.Selector{Entity: blob.Node, Type: "Doc", ID: "a", Property: "nope"}, graph.ErrInvalidInput},
		{blob.Selector{Entity: blob.Edge, Type: "Doc", ID: "a", Property: "body"}, graph.ErrInvalidInput},
		{blob.Selector{Entity: blob.Node, Type: "Doc", ID: "", Property: "body"}, graph.ErrInvalidInput},
	} {
		if _, err := blob.Open(ctx, s1, tc.sel); !errors.Is(err, tc.want) {
			t.Fatalf("%+v: %v, want %v", tc.sel, err, tc.want)
		}
	}

	// An update: the head reads the new value, the old snapshot the old.
	big2 := bytesOf(4, table.BlobInlineMax*2)
	if _, err := mutate.Query(ctx, g, `query up($s: String, $b: Blob) { update Doc set { body: $b } where slug = $s }`, "up",
		mutate.Options{Params: map[string]any{"s": "b", "b": b64(big2)}}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(read(t, head(t, g, "main"), doc("b")), big2) {
		t.Fatal("the head does not read the updated value")
	}
	old, err := g.SnapshotAt(ctx, s1.CommitID())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(read(t, old, doc("b")), big) {
		t.Fatal("the old snapshot does not read its value")
	}
	// T24: a query cannot return a Blob.
	if _, err := query.Head(ctx, g, "main", `query q() { match { $d: Doc } return { $d.body } }`, "", nil); err == nil || !strings.Contains(err.Error(), "blob API") {
		t.Fatalf("query returning a Blob: %v, want the T24 refusal", err)
	}

	// A branch write merged back.
	if _, err := g.CreateBranch(ctx, "review", "main"); err != nil {
		t.Fatal(err)
	}
	big3 := bytesOf(5, table.BlobInlineMax+1)
	loadLines2 := func(branch string, lines ...string) {
		if _, err := load.Run(ctx, g, strings.NewReader(strings.Join(lines, "\n")), load.Options{Mode: load.Merge, Branch: branch}); err != nil {
			t.Fatal(err)
		}
	}
	loadLines2("review", docLine("e", big3))
	if _, err := blob.Open(ctx, head(t, g, "main"), doc("e")); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("main sees the branch's value before the merge: %v", err)
	}
	if _, err := merge.Run(ctx, g, "review", "main", merge.Options{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(read(t, head(t, g, "main"), doc("e")), big3) {
		t.Fatal("main does not read the merged value")
	}
	if err := g.DeleteBranch(ctx, "review"); err != nil {
		t.Fatal(err)
	}

	// Optimize rewrites the fragments; the values stay.
	if _, err := optimize.Run(ctx, g, optimize.Options{}); err != nil {
		t.Fatal(err)
	}
	s2 := head(t, g, "main")
	want := map[string][]byte{"a": small, "b": big2, "d": {}, "e": big3}
	for slug, w := range want {
		if !bytes.Equal(read(t, s2, doc(slug)), w) {
			t.Fatalf("after optimize %s reads wrong bytes", slug)
		}
	}

	// Export streams stored values; a rebuilt graph reads the same bytes.
	var exp bytes.Buffer
	res, err := export.Run(ctx, s2, &exp, export.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g2, err := graph.Init(ctx, mem.New(), res.Schema, graph.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer g2.Close()
	if _, err := load.Run(ctx, g2, bytes.NewReader(exp.Bytes()), load.Options{Mode: load.Overwrite}); err != nil {
		t.Fatal(err)
	}
	for slug, w := range want {
		if !bytes.Equal(read(t, head(t, g2, "main"), doc(slug)), w) {
			t.Fatalf("rebuilt graph: %s reads wrong bytes", slug)
		}
	}
	if !bytes.Equal(read(t, head(t, g2, "main"), blob.Selector{Entity: blob.Edge, Type: "Tagged", ID: "e1", Property: "note"}), note) {
		t.Fatal("rebuilt graph: the edge value differs")
	}
	if _, err := blob.Open(ctx, head(t, g2, "main"), doc("c")); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("rebuilt graph: the null value became %v", err)
	}

	// Cleanup keeping one version: the head's values stay, the replaced
	// ones (big, held only by old versions) go.
	before := pieces(t, store)
	if _, err := cleanup.Run(ctx, g, cleanup.Options{Keep: 1, Confirm: true}); err != nil {
		t.Fatal(err)
	}
	after := pieces(t, store)
	if after >= before {
		t.Fatalf("cleanup reclaimed no blob pieces (%d before, %d after)", before, after)
	}
	s3 := head(t, g, "main")
	for slug, w := range want {
		if !bytes.Equal(read(t, s3, doc(slug)), w) {
			t.Fatalf("after cleanup %s reads wrong bytes", slug)
		}
	}
	if !bytes.Equal(read(t, s3, blob.Selector{Entity: blob.Edge, Type: "Tagged", ID: "e1", Property: "note"}), note) {
		t.Fatal("after cleanup the edge value differs")
	}
	// Exactly the live stored values remain: b's new value, e's and the note.
	if after != 1+1+2 {
		t.Fatalf("%d pieces left, want 4 (the stored values the head references)", after)
	}
}

// TestExternalBlobPolicy: an external reference is refused by default and
// outside the allowed bases, with nothing written; inside them it is
// stored as a reference that stat reports and reads refuse.
func TestExternalBlobPolicy(t *testing.T) {
	ctx := context.Background()
	up := `query up($s: String, $b: Blob) { insert Doc { slug: $s, body: $b } }`
	g, _ := newGraph(t)
	if _, err := load.Run(ctx, g, strings.NewReader(docLine("x", "s3://media/public/x.png")), load.Options{Mode: load.Merge}); !errors.Is(err, graph.ErrInvalidInput) || !strings.Contains(err.Error(), "not allowed") {
		t.Fatalf("default policy load: %v, want a refusal", err)
	}
	if _, err := mutate.Query(ctx, g, up, "up", mutate.Options{Params: map[string]any{"s": "x", "b": "s3://media/public/x.png"}}); !errors.Is(err, graph.ErrInvalidInput) {
		t.Fatalf("default policy mutate: %v, want a refusal", err)
	}
	if cs, _ := g.Commits(ctx, "main", 0); len(cs) != 1 {
		t.Fatalf("%d commits after refusals, want only the genesis", len(cs))
	}

	g, _ = newGraph(t, "s3://media/public/", "https://cdn.example.com/a")
	for _, uri := range []string{
		"s3://media/private/x.png", "s3://media/publicity/x", "s3://other/public/x",
		"https://cdn.example.com.evil.org/a/x", "https://cdn.example.com/ab/x", "https://cdn.example.com/a/../b/x",
		"http://cdn.example.com/a/x", "https://cdn.example.com/a/%2e%2e/x", "file:///etc/passwd", "omnigraph-spooled://x/0",
	} {
		_, err := mutate.Query(ctx, g, up, "up", mutate.Options{Params: map[string]any{"s": "x", "b": uri}})
		if !errors.Is(err, graph.ErrInvalidInput) {
			t.Fatalf("%s: %v, want a refusal", uri, err)
		}
	}
	loadLines(t, g, load.Merge, docLine("x", "s3://media/public/x.png"))
	if _, err := mutate.Query(ctx, g, up, "up", mutate.Options{Params: map[string]any{"s": "y", "b": "https://CDN.example.com/a/y.png"}}); err != nil {
		t.Fatal(err)
	}
	s := head(t, g, "main")
	c, err := blob.Open(ctx, s, doc("x"))
	if err != nil {
		t.Fatal(err)
	}
	if info := c.Info(); info.Kind != "external" || info.URI != "s3://media/public/x.png" || info.Size != nil || info.ETag != "" {
		t.Fatalf("stat of an external value: %+v", info)
	}
	if err := c.Read(ctx, &bytes.Buffer{}, 0, 1); !errors.Is(err, blob.ErrExternal) {
		t.Fatalf("read of an external value: %v, want ErrExternal", err)
	}
	// Export writes the reference; it loads back into a graph allowing it.
	var exp bytes.Buffer
	if _, err := export.Run(ctx, s, &exp, export.Options{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(exp.String(), `"body":"s3://media/public/x.png"`) {
		t.Fatalf("export of an external value:\n%s", exp.String())
	}
	// A policy base that is not an object store or web location.
	for _, base := range []string{"file:///tmp/", "s3://", "s3://b/x?y", "s3://u:p@b/", "s3://b/../c/", "relative/path"} {
		if _, err := graph.NewExternalBlobPolicy([]string{base}); !errors.Is(err, graph.ErrInvalidInput) {
			t.Fatalf("base %q: %v, want refused", base, err)
		}
	}
}

// TestBlobMergeSameBytes: two branches that stored the same bytes apart
// agree (no conflict); different bytes on both sides conflict.
func TestBlobMergeSameBytes(t *testing.T) {
	ctx := context.Background()
	g, _ := newGraph(t)
	loadLines(t, g, load.Merge, docLine("a", []byte("v0")))
	for _, b := range []string{"x", "y"} {
		if _, err := g.CreateBranch(ctx, b, "main"); err != nil {
			t.Fatal(err)
		}
	}
	same := bytesOf(7, table.BlobInlineMax+3)
	for _, b := range []string{"x", "y"} {
		if _, err := load.Run(ctx, g, strings.NewReader(docLine("a", same)), load.Options{Mode: load.Merge, Branch: b}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := merge.Run(ctx, g, "x", "main", merge.Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := merge.Run(ctx, g, "y", "main", merge.Options{}); err != nil {
		t.Fatalf("merging the same bytes stored apart: %v", err)
	}
	if _, err := g.CreateBranch(ctx, "z", "main"); err != nil {
		t.Fatal(err)
	}
	for b, v := range map[string][]byte{"z": bytesOf(8, 100), "main": bytesOf(9, 100)} {
		if _, err := load.Run(ctx, g, strings.NewReader(docLine("a", v)), load.Options{Mode: load.Merge, Branch: b}); err != nil {
			t.Fatal(err)
		}
	}
	var mc *merge.MergeConflicts
	if _, err := merge.Run(ctx, g, "z", "main", merge.Options{}); !errors.As(err, &mc) {
		t.Fatalf("divergent Blob values: %v, want a merge conflict", err)
	}
}
