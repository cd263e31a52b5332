package client_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/client"
)

// TestBlob reads Blob values through the client against the real server:
// a whole value, a range, HEAD, If-None-Match, an old snapshot, an
// external value (the 302 is the answer, not followed) and a range past
// the end (ErrRange with the value's length).
func TestBlob(t *testing.T) {
	dir := t.TempDir()
	url := filepath.Join(dir, "g")
	schema := filepath.Join(dir, "docs.pg")
	os.WriteFile(schema, []byte("node Doc {\n  slug: String @key\n  body: Blob?\n}\n"), 0o644)
	og(t, "init", "--schema", schema, url)
	payload := bytes.Repeat([]byte("0123456789abcdef"), 40000) // 640000 bytes
	data := filepath.Join(dir, "d.jsonl")
	os.WriteFile(data, []byte(fmt.Sprintf(`{"type":"Doc","data":{"slug":"a","body":"base64:%s"}}`+"\n"+`{"type":"Doc","data":{"slug":"ext","body":"https://cdn.example.com/x.bin"}}`+"\n",
		base64.StdEncoding.EncodeToString(payload))), 0o644)
	og(t, "load", "--data", data, "--mode", "merge", "--external-blob-base", "https://cdn.example.com/", "--store", url)
	s := serve(t, nil, "--store", url)
	c := newClient(t, s.base, "")
	g := c.Graph("default")
	ctx := ctxT(t)
	ref := client.BlobRef{Entity: "node", Type: "Doc", ID: "a", Property: "body"}
	sum := sha256.Sum256(payload)
	etag := `"` + hex.EncodeToString(sum[:]) + `"`

	b, err := g.Blob(ctx, ref, client.BlobOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(b.Body)
	b.Close()
	if err != nil || !bytes.Equal(got, payload) || b.Size != int64(len(payload)) || b.ETag != etag || b.Snapshot == "" {
		t.Fatalf("whole value: %d bytes, size %d, etag %s, snapshot %q, %v", len(got), b.Size, b.ETag, b.Snapshot, err)
	}
	before := b.Snapshot

	b, err = g.Blob(ctx, ref, client.BlobOptions{Offset: 100003, Length: 20})
	if err != nil {
		t.Fatal(err)
	}
	got, _ = io.ReadAll(b.Body)
	b.Close()
	if !bytes.Equal(got, payload[100003:100023]) || b.Offset != 100003 || b.Length != 20 || b.Size != int64(len(payload)) {
		t.Fatalf("range: %q offset %d length %d size %d", got, b.Offset, b.Length, b.Size)
	}

	h, err := g.BlobHead(ctx, ref, client.BlobOptions{})
	if err != nil || h.Size != int64(len(payload)) || h.ETag != etag {
		t.Fatalf("head: %+v %v", h, err)
	}
	h.Close()
	nm, err := g.Blob(ctx, ref, client.BlobOptions{IfNoneMatch: etag})
	if err != nil || !nm.NotModified {
		t.Fatalf("If-None-Match the current ETag: %+v %v", nm, err)
	}
	nm.Close()

	ext, err := g.Blob(ctx, client.BlobRef{Entity: "node", Type: "Doc", ID: "ext", Property: "body"}, client.BlobOptions{})
	if err != nil || ext.URI != "https://cdn.example.com/x.bin" {
		t.Fatalf("external value: %+v %v", ext, err)
	}
	ext.Close()

	_, err = g.Blob(ctx, ref, client.BlobOptions{Offset: int64(len(payload)) + 5})
	var e *client.Error
	if !errors.As(err, &e) || !errors.Is(err, client.ErrRange) || e.Details.BlobRange == nil || e.Details.BlobRange.Length != int64(len(payload)) {
		t.Fatalf("a range past the end: %v", err)
	}

	// A new value on main; the old commit still reads the old one.
	if _, err := g.Mutate(ctx, api.MutateRequest{Query: `query up($b: Blob) { update Doc set { body: $b } where slug = "a" }`, Params: map[string]any{"b": "base64:bmV3"}}); err != nil {
		t.Fatal(err)
	}
	b, err = g.Blob(ctx, ref, client.BlobOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, _ = io.ReadAll(b.Body)
	b.Close()
	if string(got) != "new" || b.Snapshot == before {
		t.Fatalf("after the update: %q at %s", got, b.Snapshot)
	}
	b, err = g.Blob(ctx, ref, client.BlobOptions{Snapshot: before})
	if err != nil {
		t.Fatal(err)
	}
	got, _ = io.ReadAll(b.Body)
	b.Close()
	if !bytes.Equal(got, payload) || b.Snapshot != before {
		t.Fatalf("at the old commit: %d bytes at %s", len(got), b.Snapshot)
	}
}
