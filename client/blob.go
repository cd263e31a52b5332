package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/omnigraph-go/omnigraph/api"
)

// BlobRef names one Blob value: the property of one node or edge.
type BlobRef struct {
	Entity   string // "node" or "edge"
	Type     string
	ID       string // a node's key, an edge's id
	Property string
}

// BlobOptions choose the snapshot a blob read sees (a branch head, default
// main, or the commit in Snapshot), an optional byte range and an
// optional validator.
type BlobOptions struct {
	Branch   string
	Snapshot string
	// Offset and Length ask for one byte range (Range: bytes=...); Length
	// 0 reads to the end. A range past the end fails with ErrRange.
	Offset, Length int64
	// IfNoneMatch is an ETag the caller holds: when it is still the
	// value's, the answer is NotModified with no bytes.
	IfNoneMatch string
}

// Blob is the answer of a blob read. Close it when done.
type Blob struct {
	// Snapshot is the graph commit read.
	Snapshot string
	// URI is set for an external value (the server answered 302; the
	// client does not follow it): fetch the bytes from there.
	URI string
	// ETag is a managed value's strong validator (its quoted SHA-256).
	ETag string
	// Size is the whole value's size; Offset and Length the range Body
	// holds (the whole value unless a range was asked for).
	Size, Offset, Length int64
	// NotModified: IfNoneMatch named the current ETag; Body is empty.
	NotModified bool
	// Body is the bytes (empty for a HEAD, an external value or
	// NotModified), read as they arrive.
	Body io.ReadCloser
}

// Close ends the read.
func (b *Blob) Close() error { return b.Body.Close() }

// Blob is GET blob: the bytes of one Blob value (or a range of them),
// streamed. An external value answers with URI set and no bytes.
func (g *Graph) Blob(ctx context.Context, ref BlobRef, opts BlobOptions) (*Blob, error) {
	return g.blob(ctx, "getBlob", ref, opts)
}

// BlobHead is HEAD blob: a Blob value's size, ETag and snapshot (or its
// URI), without its bytes.
func (g *Graph) BlobHead(ctx context.Context, ref BlobRef, opts BlobOptions) (*Blob, error) {
	opts.Offset, opts.Length = 0, 0
	return g.blob(ctx, "headBlob", ref, opts)
}

func (g *Graph) blob(ctx context.Context, op string, ref BlobRef, opts BlobOptions) (*Blob, error) {
	if opts.Offset < 0 || opts.Length < 0 {
		return nil, fmt.Errorf("omnigraph %s: offset and length must not be negative", op)
	}
	c := g.call(op)
	c.query = url.Values{"entity": {ref.Entity}, "type": {ref.Type}, "id": {ref.ID}, "property": {ref.Property}}
	if opts.Branch != "" {
		c.query.Set("branch", opts.Branch)
	}
	if opts.Snapshot != "" {
		c.query.Set("snapshot", opts.Snapshot)
	}
	c.header = http.Header{}
	if opts.Offset > 0 || opts.Length > 0 {
		r := fmt.Sprintf("bytes=%d-", opts.Offset)
		if opts.Length > 0 {
			r += strconv.FormatInt(opts.Offset+opts.Length-1, 10)
		}
		c.header.Set("Range", r)
	}
	if opts.IfNoneMatch != "" {
		c.header.Set("If-None-Match", opts.IfNoneMatch)
	}
	// An external value's 302 is the answer, not a place to go: its URI
	// is often not HTTP (s3://...), and the graph never proxies it.
	c.answers = []int{http.StatusFound, http.StatusNotModified}
	resp, err := g.c.send(ctx, c)
	if err != nil {
		return nil, err
	}
	b := &Blob{Snapshot: resp.Header.Get(api.HeaderSnapshotID), ETag: resp.Header.Get("ETag"), Body: resp.Body}
	switch resp.StatusCode {
	case http.StatusFound:
		b.URI = resp.Header.Get("Location")
		_, _ = io.Copy(io.Discard, resp.Body)
	case http.StatusNotModified:
		b.NotModified = true
	case http.StatusPartialContent:
		var last int64
		if _, err := fmt.Sscanf(resp.Header.Get("Content-Range"), "bytes %d-%d/%d", &b.Offset, &last, &b.Size); err != nil {
			resp.Body.Close()
			return nil, fmt.Errorf("omnigraph %s: the answer's Content-Range %q cannot be read", op, resp.Header.Get("Content-Range"))
		}
		b.Length = last - b.Offset + 1
	default:
		b.Size, b.Length = resp.ContentLength, resp.ContentLength
	}
	return b, nil
}
