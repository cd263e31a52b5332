package server

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/blob"
)

// GET and HEAD /graphs/{id}/blob?entity=&type=&id=&property=[&branch=|&snapshot=]
// deliver one Blob value (graph/blob). A managed value answers with its
// bytes (application/octet-stream, the exact Content-Length, Accept-Ranges,
// a strong ETag: the digest of the bytes), one byte range as 206, and
// honours If-Match (412), If-None-Match (304) and If-Range. An external
// value answers 302 to its URI, never proxied (Cache-Control: no-store).
// Every answer names the commit it read in Omnigraph-Snapshot-Id. The
// bytes are streamed a piece at a time (table.BlobPieceSize, the next one
// fetched while the current one is sent), so a response holds at most two
// pieces whatever the value's size. HEAD reads no bytes.

// BlobStatInput selects one Blob value (the blob_stat tool).
type BlobStatInput struct {
	Entity   string `json:"entity" jsonschema:"node or edge"`
	Type     string `json:"type" jsonschema:"the node or edge type"`
	ID       string `json:"id" jsonschema:"the entity id"`
	Property string `json:"property" jsonschema:"the Blob property"`
	Branch   string `json:"branch,omitempty" jsonschema:"the branch to read (default main)"`
	Snapshot string `json:"snapshot,omitempty" jsonschema:"a graph commit id to read instead of a branch head"`
}

// BlobReadInput reads a range of one Blob value (the blob_read tool).
type BlobReadInput struct {
	BlobStatInput
	Offset int64 `json:"offset,omitempty" jsonschema:"the first byte (default 0)"`
	Length int64 `json:"length,omitempty" jsonschema:"how many bytes (default and at most 1048576; read a larger value in several calls)"`
}

// BlobReadOutput is one range of a Blob value, base64-encoded.
type BlobReadOutput struct {
	blob.Info
	Offset int64 `json:"offset"`
	Length int64 `json:"length"`
	// Data is the range, standard base64 (absent for an external value:
	// fetch uri).
	Data string `json:"data_base64,omitempty"`
}

// maxToolRead bounds one blob_read call: MCP messages are JSON.
const maxToolRead = 1 << 20

// openBlob authorizes the read and resolves the cell: the shared start of
// the route and the tools.
func (r *request) openBlob(in BlobStatInput) (*blob.Cell, error) {
	if in.Branch != "" && in.Snapshot != "" {
		return nil, badRequest("read either a branch or a snapshot, not both")
	}
	for _, p := range []struct{ name, v string }{{"entity", in.Entity}, {"type", in.Type}, {"id", in.ID}, {"property", in.Property}} {
		if p.v == "" {
			return nil, badRequest("%s is required: a blob is selected by entity (node or edge), type, id and property", p.name)
		}
	}
	// A snapshot may be of any branch: reading one needs read on the
	// whole graph.
	branch := orMain(in.Branch)
	if in.Snapshot != "" {
		branch = ""
	}
	if err := r.authorize(ActionRead, branch, ""); err != nil {
		return nil, err
	}
	// A value may be large: its read holds a read slot until answered.
	if err := r.admitRead(); err != nil {
		return nil, err
	}
	var snap *graph.Snapshot
	var err error
	if in.Snapshot != "" {
		snap, err = r.g.SnapshotAt(r.Context(), in.Snapshot)
		if err == nil {
			err = r.authorizeCommit(ActionRead, in.Snapshot, snap.Branch())
		}
	} else {
		snap, err = r.g.Snapshot(r.Context(), in.Branch)
	}
	if err != nil {
		return nil, err
	}
	return blob.Open(r.Context(), snap, blob.Selector{Entity: in.Entity, Type: in.Type, ID: in.ID, Property: in.Property})
}

func (r *request) opBlobStat(in BlobStatInput) (blob.Info, error) {
	c, err := r.openBlob(in)
	if err != nil {
		return blob.Info{}, err
	}
	return c.Info(), nil
}

func (r *request) opBlobRead(in BlobReadInput) (BlobReadOutput, error) {
	if in.Offset < 0 || in.Length < 0 {
		return BlobReadOutput{}, badRequest("offset and length must not be negative")
	}
	if in.Length == 0 || in.Length > maxToolRead {
		in.Length = maxToolRead
	}
	c, err := r.openBlob(in.BlobStatInput)
	if err != nil {
		return BlobReadOutput{}, err
	}
	out := BlobReadOutput{Info: c.Info(), Offset: in.Offset}
	if c.Value.External() {
		return out, nil
	}
	off, n, err := c.Range(in.Offset, in.Length)
	if err != nil {
		return BlobReadOutput{}, err
	}
	var b strings.Builder
	b.Grow(int(n) * 4 / 3)
	enc := base64.NewEncoder(base64.StdEncoding, &b)
	if err := c.Read(r.Context(), enc, off, n); err != nil {
		return BlobReadOutput{}, err
	}
	if err := enc.Close(); err != nil {
		return BlobReadOutput{}, err
	}
	out.Offset, out.Length, out.Data = off, n, b.String()
	return out, nil
}

// handleBlob serves GET and HEAD of one Blob value.
func handleBlob(r *request) (int, any, error) {
	q := r.URL.Query()
	c, err := r.openBlob(BlobStatInput{Entity: q.Get("entity"), Type: q.Get("type"), ID: q.Get("id"), Property: q.Get("property"), Branch: q.Get("branch"), Snapshot: q.Get("snapshot")})
	if err != nil {
		return 0, nil, err
	}
	h := r.w.Header()
	h.Set(api.HeaderSnapshotID, c.Snapshot().CommitID())
	if c.Value.External() {
		h.Set("Location", c.Value.URI)
		h.Set("Cache-Control", "no-store")
		r.w.WriteHeader(http.StatusFound)
		return 0, nil, nil
	}
	etag, size := c.Value.ETag(), c.Value.Size
	h.Set("ETag", etag)
	h.Set("Accept-Ranges", "bytes")
	if im := r.Header.Values("If-Match"); len(im) > 0 && !etagMatch(im, etag, true) {
		return 0, nil, &Failure{Status: http.StatusPreconditionFailed, Body: api.ErrorOutput{
			Error: "If-Match does not name the value's current ETag " + etag + "; read it again",
		}}
	}
	if inm := r.Header.Values("If-None-Match"); len(inm) > 0 && etagMatch(inm, etag, false) {
		r.w.WriteHeader(http.StatusNotModified)
		return 0, nil, nil
	}
	off, n, status := int64(0), size, http.StatusOK
	if rh := r.Header.Get("Range"); rh != "" && r.Method == http.MethodGet && ifRangeHolds(r.Header.Get("If-Range"), etag) {
		start, end, ok := parseRange(rh, size)
		switch {
		case !ok:
			// Several ranges, another unit or bad syntax: the whole value.
		case start < 0:
			h.Set("Content-Range", fmt.Sprintf("bytes */%d", size))
			return 0, nil, &blob.RangeError{Start: -start - 1, End: end, Length: size}
		default:
			off, n, status = start, end-start, http.StatusPartialContent
			h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, end-1, size))
		}
	}
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Length", strconv.FormatInt(n, 10))
	if r.Method == http.MethodHead {
		r.w.WriteHeader(status)
		return 0, nil, nil
	}
	bw := &blobWriter{w: r.w, status: status}
	if err := c.Read(r.Context(), bw, off, n); err != nil {
		if !bw.started {
			h.Del("Content-Range")
			h.Del("Content-Length")
			h.Del("Content-Type")
			return 0, nil, err
		}
		f := MapError(err, r.graphID)
		r.s.log.Warn("blob answer cut after its first bytes", "graph", r.graphID, "status", f.Status, "failure_class", f.Body.Class)
		if sw, ok := r.w.(*statusWriter); ok {
			sw.class = "blob_cut"
		}
		panic(http.ErrAbortHandler)
	}
	bw.start()
	return 0, nil, nil
}

// blobWriter sends the answer's status with its first bytes, so a failure
// before any byte is an ordinary error answer.
type blobWriter struct {
	w       http.ResponseWriter
	status  int
	started bool
}

func (b *blobWriter) start() {
	if !b.started {
		b.started = true
		b.w.WriteHeader(b.status)
	}
}

func (b *blobWriter) Write(p []byte) (int, error) {
	b.start()
	return b.w.Write(p)
}

// etagMatch compares an ETag with the entity tags of If-Match (strong:
// weak tags never match) or If-None-Match (weak comparison); "*" matches.
func etagMatch(headers []string, etag string, strong bool) bool {
	for _, h := range headers {
		for _, t := range strings.Split(h, ",") {
			t = strings.TrimSpace(t)
			switch {
			case t == "*":
				return true
			case strings.HasPrefix(t, "W/"):
				if !strong && t[2:] == etag {
					return true
				}
			case t == etag:
				return true
			}
		}
	}
	return false
}

// ifRangeHolds: no If-Range, or one naming the current (strong) ETag.
func ifRangeHolds(ifRange, etag string) bool {
	return ifRange == "" || strings.TrimSpace(ifRange) == etag
}

// parseRange reads one byte range ("bytes=a-b", "bytes=a-", "bytes=-n")
// of a size-byte value: [start, end) and ok, or ok false when the header
// is not one byte range (then it is ignored). An unsatisfiable range has
// start = -(first byte asked)-1.
func parseRange(h string, size int64) (start, end int64, ok bool) {
	spec, found := strings.CutPrefix(h, "bytes=")
	if !found || strings.Contains(spec, ",") {
		return 0, 0, false
	}
	a, b, found := strings.Cut(strings.TrimSpace(spec), "-")
	if !found {
		return 0, 0, false
	}
	// A position past 64 bits saturates (RFC 9110 14.1.1: a recipient
	// must handle a position larger than it can represent): as the
	// largest one, which is past the end of any value.
	num := func(s string) (int64, bool) {
		if s == "" || strings.TrimLeft(s, "0123456789") != "" {
			return 0, false
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if errors.Is(err, strconv.ErrRange) {
			return math.MaxInt64, true
		}
		return v, err == nil
	}
	switch {
	case a == "":
		n, ok := num(b)
		if !ok {
			return 0, 0, false
		}
		if n == 0 {
			return -size - 1, size, true
		}
		return max(0, size-n), size, true
	default:
		first, ok := num(a)
		if !ok {
			return 0, 0, false
		}
		last := size - 1
		if b != "" {
			l, ok := num(b)
			if !ok || l < first {
				return 0, 0, false
			}
			last = min(l, size-1)
		}
		if first >= size {
			// Unsatisfiable: start encoded as -first-1 (first < MaxInt64
			// keeps it negative), end saturated.
			if first == math.MaxInt64 {
				first--
			}
			return -first - 1, first + 1, true
		}
		return first, last + 1, true
	}
}
