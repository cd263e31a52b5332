package table

// Blob columns and the blob area of a dataset.
//
// A Blob cell is one Arrow struct (BlobType) with three logical states
// beside null (the struct's own validity, never a field heuristic):
//
//   - inline: the bytes are in the row ("data"), at most BlobInlineMax;
//   - stored: the bytes are in the dataset's blob area ("ref" names them),
//     written before the fragment that references them;
//   - external: a URI the graph does not own ("uri"); no bytes.
//
// The blob area holds each stored value as pieces of at most
// BlobPieceSize bytes, <dataset>/_blobs/<uuid>/<8-digit piece>, each a
// fresh unique object written once, so reading any range costs one ranged
// GET per piece it touches and never holds more than a piece. Every
// fragment lists the stored blobs its rows reference (Fragment.Blobs);
// Cleanup keeps a blob while any kept version names it, so old snapshots
// read their blobs, and a crash between writing pieces and committing
// leaves only unreferenced pieces that Cleanup reclaims after its grace.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/omnigraph-go/omnigraph/backend"
)

const (
	// BlobInlineMax is the largest value kept in the row itself; larger
	// values go to the blob area.
	BlobInlineMax = 64 << 10
	// BlobPieceSize is the size of every piece of a stored value but the
	// last, and so the most one read of a blob holds.
	BlobPieceSize = 4 << 20
	// blobAreaDir is the blob area under a dataset's path.
	blobAreaDir = dirBlobs + "/"
)

// The fields of BlobType, in order.
const (
	blobSize = iota
	blobSHA256
	blobData
	blobRef
	blobURI
)

var blobType = arrow.StructOf(
	arrow.Field{Name: "size", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	arrow.Field{Name: "sha256", Type: arrow.BinaryTypes.String, Nullable: true},
	arrow.Field{Name: "data", Type: arrow.BinaryTypes.Binary, Nullable: true},
	arrow.Field{Name: "ref", Type: arrow.BinaryTypes.String, Nullable: true},
	arrow.Field{Name: "uri", Type: arrow.BinaryTypes.String, Nullable: true},
)

// BlobType is the Arrow type of a Blob column: struct<size int64, sha256
// utf8, data binary, ref utf8, uri utf8>. size and sha256 (lower-case hex)
// describe every managed value; data holds an inline value's bytes; ref
// names a stored value's pieces (the store key prefix, relative to the
// graph's root); uri is an external reference, whose size and digest are
// unknown (null).
func BlobType() *arrow.StructType { return blobType }

// IsBlobType reports whether t is BlobType.
func IsBlobType(t arrow.DataType) bool { return arrow.TypeEqual(t, blobType) }

// Blob is the value of one Blob cell (NULL is a nil any, never a Blob).
type Blob struct {
	// Size is the value's length in bytes (managed values).
	Size int64
	// SHA256 is the lower-case hex digest of the bytes (managed values).
	SHA256 string
	// Data holds an inline value's bytes (non-nil, maybe empty).
	Data []byte
	// Ref names a stored value: the store key prefix of its pieces.
	Ref string
	// URI is an external reference; the graph holds no bytes.
	URI string
}

// InlineBlob is the managed value holding data.
func InlineBlob(data []byte) Blob {
	if data == nil {
		data = []byte{}
	}
	sum := sha256.Sum256(data)
	return Blob{Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:]), Data: data}
}

// ExternalBlob is a reference to uri.
func ExternalBlob(uri string) Blob { return Blob{URI: uri} }

// External reports whether b is an external reference.
func (b Blob) External() bool { return b.URI != "" }

// Stored reports whether b's bytes are in a blob area.
func (b Blob) Stored() bool { return b.Ref != "" }

// ETag is the strong HTTP validator of a managed value: its digest. Equal
// bytes have equal tags at every snapshot; an external value has none.
func (b Blob) ETag() string {
	if b.External() {
		return ""
	}
	return `"` + b.SHA256 + `"`
}

// Same reports whether a and b hold the same value: the same URI, or
// managed bytes of the same length and digest (wherever they are stored).
func (a Blob) Same(b Blob) bool {
	if a.External() || b.External() {
		return a.URI == b.URI
	}
	return a.Size == b.Size && a.SHA256 == b.SHA256
}

// blobJSON is how a Blob value shows in JSON outputs (change images,
// diffs): what it is, never its bytes or where it is stored.
type blobJSON struct {
	Kind   string `json:"kind"`
	Size   *int64 `json:"size,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	URI    string `json:"uri,omitempty"`
}

// MarshalJSON renders the descriptor: {"kind":"managed","size":N,
// "sha256":H} or {"kind":"external","uri":U}.
func (b Blob) MarshalJSON() ([]byte, error) {
	if b.External() {
		return json.Marshal(blobJSON{Kind: "external", URI: b.URI})
	}
	n := b.Size
	return json.Marshal(blobJSON{Kind: "managed", Size: &n, SHA256: b.SHA256})
}

// AppendBlob appends v (a Blob, or nil for NULL) to a builder of BlobType.
func AppendBlob(sb *array.StructBuilder, v any) error {
	if v == nil {
		sb.AppendNull()
		return nil
	}
	b, ok := v.(Blob)
	if !ok {
		return fmt.Errorf("value %T does not fit a Blob column", v)
	}
	if sb.NumField() != len(blobType.Fields()) {
		return fmt.Errorf("builder of %s is not a Blob column", sb.Type())
	}
	sb.Append(true)
	size := sb.FieldBuilder(blobSize).(*array.Int64Builder)
	sum := sb.FieldBuilder(blobSHA256).(*array.StringBuilder)
	data := sb.FieldBuilder(blobData).(*array.BinaryBuilder)
	ref := sb.FieldBuilder(blobRef).(*array.StringBuilder)
	uri := sb.FieldBuilder(blobURI).(*array.StringBuilder)
	if b.External() {
		size.AppendNull()
		sum.AppendNull()
		data.AppendNull()
		ref.AppendNull()
		uri.Append(b.URI)
		return nil
	}
	size.Append(b.Size)
	sum.Append(b.SHA256)
	if b.Stored() {
		data.AppendNull()
		ref.Append(b.Ref)
	} else {
		d := b.Data
		if d == nil {
			d = []byte{}
		}
		data.Append(d)
		ref.AppendNull()
	}
	uri.AppendNull()
	return nil
}

// BlobAt returns row i of a Blob column; ok is false for NULL.
func BlobAt(a *array.Struct, i int) (Blob, bool) {
	if a.IsNull(i) {
		return Blob{}, false
	}
	str := func(f int) string {
		c := a.Field(f).(*array.String)
		if c.IsNull(i) {
			return ""
		}
		return c.Value(i)
	}
	if u := str(blobURI); u != "" {
		return Blob{URI: u}, true
	}
	b := Blob{SHA256: str(blobSHA256), Ref: str(blobRef)}
	if s := a.Field(blobSize).(*array.Int64); !s.IsNull(i) {
		b.Size = s.Value(i)
	}
	if b.Ref == "" {
		d := a.Field(blobData).(*array.Binary)
		b.Data = append([]byte{}, d.Value(i)...)
	}
	return b, true
}

// blobAreaOf is the key prefix of path's blob area.
func blobAreaOf(path string) string { return path + "/" + blobAreaDir }

// blobPieceKey names piece i of a stored value.
func blobPieceKey(ref string, i int64) string { return fmt.Sprintf("%s/%08d", ref, i) }

// blobReady reports whether v can be written into a fragment of the
// dataset at path as it is: an external reference; an inline value of at
// most BlobInlineMax bytes with its digest; or a value stored in path's
// own blob area. It is the one rule PrepareBlob enforces and the fragment
// writers check.
func blobReady(path string, v Blob) bool {
	switch {
	case v.External():
		return true
	case v.SHA256 == "":
		return false
	case v.Stored():
		return strings.HasPrefix(v.Ref, blobAreaOf(path)) && !strings.Contains(v.Ref[len(blobAreaOf(path)):], "/")
	}
	return len(v.Data) <= BlobInlineMax
}

// PrepareBlob makes v ready for a fragment of the dataset at path: an
// inline value larger than BlobInlineMax is written to the blob area, a
// value stored in another dataset's area (a table a schema change
// replaced) is copied into path's, a missing digest is computed. keys are
// the objects it wrote. A value already ready is returned as it is,
// without I/O.
func PrepareBlob(ctx context.Context, store backend.StorageAdapter, path string, v Blob) (Blob, []string, error) {
	if blobReady(path, v) {
		return v, nil, nil
	}
	w := NewBlobWriter(ctx, store, path)
	if v.Stored() {
		if err := ReadBlob(ctx, store, v, 0, v.Size, w); err != nil {
			w.Abort()
			return Blob{}, nil, fmt.Errorf("copy a stored blob into %s: %w", path, err)
		}
	} else if _, err := w.Write(v.Data); err != nil {
		return Blob{}, nil, err
	}
	out, err := w.Close()
	if err != nil {
		return Blob{}, nil, err
	}
	return out, w.Keys(), nil
}

// BlobWriter stores one value in a dataset's blob area as it is written,
// holding at most one piece. Close decides where the value lives: at most
// BlobInlineMax bytes stay inline (nothing is stored), more are stored.
// Pieces are fresh unique objects: a writer abandoned before its value is
// committed leaves garbage Cleanup reclaims, never a visible change.
type BlobWriter struct {
	ctx    context.Context
	store  backend.StorageAdapter
	path   string
	ref    string
	buf    []byte
	pieces int64
	size   int64
	sum    hash.Hash
	keys   []string
	err    error
	closed bool
}

// NewBlobWriter starts a value of the dataset at path.
func NewBlobWriter(ctx context.Context, store backend.StorageAdapter, path string) *BlobWriter {
	return &BlobWriter{ctx: ctx, store: store, path: path, sum: sha256.New()}
}

// Write adds p to the value; each full piece is stored (one Put).
func (w *BlobWriter) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if w.closed {
		return 0, errorf(ErrInvalid, "blob writer is closed")
	}
	n := len(p)
	w.sum.Write(p)
	w.size += int64(n)
	for len(p) > 0 {
		if w.buf == nil {
			w.buf = make([]byte, 0, min(BlobPieceSize, max(len(p), BlobInlineMax+1)))
		}
		room := BlobPieceSize - len(w.buf)
		k := min(room, len(p))
		w.buf = append(w.buf, p[:k]...)
		p = p[k:]
		if len(w.buf) == BlobPieceSize {
			if err := w.flush(); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

func (w *BlobWriter) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	if w.ref == "" {
		w.ref = blobAreaOf(w.path) + newUUID()
	}
	key := blobPieceKey(w.ref, w.pieces)
	if _, err := w.store.Put(w.ctx, key, w.buf); err != nil {
		w.err = fmt.Errorf("store a blob piece: %w", err)
		return w.err
	}
	w.keys = append(w.keys, key)
	w.pieces++
	w.buf = w.buf[:0]
	return nil
}

// Close ends the value and returns it: inline when it is at most
// BlobInlineMax bytes and nothing was stored, else stored.
func (w *BlobWriter) Close() (Blob, error) {
	if w.err != nil {
		return Blob{}, w.err
	}
	if w.closed {
		return Blob{}, errorf(ErrInvalid, "blob writer is closed")
	}
	w.closed = true
	digest := hex.EncodeToString(w.sum.Sum(nil))
	if w.pieces == 0 && len(w.buf) <= BlobInlineMax {
		return Blob{Size: w.size, SHA256: digest, Data: append([]byte{}, w.buf...)}, nil
	}
	if err := w.flush(); err != nil {
		return Blob{}, err
	}
	w.buf = nil
	return Blob{Size: w.size, SHA256: digest, Ref: w.ref}, nil
}

// Abort ends the writer without a value; pieces already stored stay as
// garbage for Cleanup.
func (w *BlobWriter) Abort() {
	w.closed = true
	w.buf = nil
}

// Keys are the objects the writer stored.
func (w *BlobWriter) Keys() []string { return slices.Clone(w.keys) }

// ErrBlobRange: a read asked for bytes outside the value.
var ErrBlobRange = errors.New("table: blob range outside the value")

// ReadBlob writes length bytes of managed value b from offset to w. An
// inline value is copied from the row; a stored one is read one piece at
// a time (one ranged GET per piece the range touches), the next piece
// fetched while the current one is written, so at most two pieces are
// held. A whole-value read checks the digest at the end; a piece of the
// wrong length, a missing piece or a digest mismatch is ErrCorrupt (the
// bytes already written to w cannot be taken back: the caller reports
// the failure). A range outside the value is ErrBlobRange.
func ReadBlob(ctx context.Context, store backend.StorageAdapter, b Blob, offset, length int64, w io.Writer) error {
	if b.External() {
		return errorf(ErrInvalid, "an external blob has no bytes in the graph")
	}
	if offset < 0 || length < 0 || offset > b.Size || length > b.Size-offset {
		return fmt.Errorf("%w: bytes %d..%d of a %d-byte value", ErrBlobRange, offset, offset+length, b.Size)
	}
	whole := offset == 0 && length == b.Size
	var sum hash.Hash
	if whole {
		sum = sha256.New()
		w = io.MultiWriter(w, sum)
	}
	if !b.Stored() {
		if int64(len(b.Data)) != b.Size {
			return errorf(ErrCorrupt, "inline blob holds %d bytes, its size says %d", len(b.Data), b.Size)
		}
		if _, err := w.Write(b.Data[offset : offset+length]); err != nil {
			return err
		}
	} else if err := readPieces(ctx, store, b, offset, length, w); err != nil {
		return err
	}
	if whole && hex.EncodeToString(sum.Sum(nil)) != b.SHA256 {
		return errorf(ErrCorrupt, "blob bytes do not match their sha256 digest")
	}
	return nil
}

// piece is one fetched piece (or its error).
type piece struct {
	data []byte
	err  error
}

func readPieces(ctx context.Context, store backend.StorageAdapter, b Blob, offset, length int64, w io.Writer) error {
	if length == 0 {
		return nil
	}
	first, last := offset/BlobPieceSize, (offset+length-1)/BlobPieceSize
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fetch := func(i int64) <-chan piece {
		ch := make(chan piece, 1)
		go func() {
			start := max(offset, i*BlobPieceSize)
			end := min(offset+length, (i+1)*BlobPieceSize)
			want := end - start
			data, err := store.GetRange(ctx, blobPieceKey(b.Ref, i), start-i*BlobPieceSize, want)
			switch {
			case backend.IsNotFound(err):
				err = errorf(ErrCorrupt, "a piece of a stored blob is missing (reclaimed by cleanup, or never written)")
			case err != nil:
				err = fmt.Errorf("read a blob piece: %w", err)
			case int64(len(data)) != want:
				err = errorf(ErrCorrupt, "a blob piece holds %d bytes where %d were expected", len(data), want)
			}
			ch <- piece{data, err}
		}()
		return ch
	}
	next := fetch(first)
	for i := first; i <= last; i++ {
		p := <-next
		if p.err != nil {
			return p.err
		}
		if i < last {
			next = fetch(i + 1)
		}
		if _, err := w.Write(p.data); err != nil {
			return err
		}
	}
	return nil
}

// blobColumns returns the indices of the Blob columns of s.
func blobColumns(s *arrow.Schema) []int {
	var out []int
	for i, f := range s.Fields() {
		if IsBlobType(f.Type) {
			out = append(out, i)
		}
	}
	return out
}

// prepareBlobs makes every Blob value of recs ready for a fragment of the
// dataset at path (PrepareBlob), rebuilding a column only when a value
// changed, and returns the records to write (retained: the caller
// releases them), the blob area entries their rows reference
// (Fragment.Blobs) and the objects it wrote.
func prepareBlobs(ctx context.Context, store backend.StorageAdapter, path string, s *arrow.Schema, recs []arrow.Record) ([]arrow.Record, []string, []string, error) {
	cols := blobColumns(s)
	out := make([]arrow.Record, len(recs))
	for i, r := range recs {
		r.Retain()
		out[i] = r
	}
	if len(cols) == 0 {
		return out, nil, nil, nil
	}
	var written []string
	refs := map[string]bool{}
	for ri, r := range out {
		var newCols []arrow.Array
		for _, c := range cols {
			col, ok := r.Column(c).(*array.Struct)
			if !ok {
				releaseAll(out)
				return nil, nil, nil, errorf(ErrInvalid, "column %s is not a Blob column", s.Field(c).Name)
			}
			var vals []any
			for j := 0; j < col.Len(); j++ {
				v, ok := BlobAt(col, j)
				if !ok {
					if vals != nil {
						vals = append(vals, nil)
					}
					continue
				}
				if !blobReady(path, v) {
					nv, keys, err := PrepareBlob(ctx, store, path, v)
					if err != nil {
						releaseAll(out)
						return nil, nil, nil, err
					}
					written = append(written, keys...)
					if vals == nil {
						vals = make([]any, 0, col.Len())
						for k := 0; k < j; k++ {
							if pv, ok := BlobAt(col, k); ok {
								vals = append(vals, pv)
							} else {
								vals = append(vals, nil)
							}
						}
					}
					v = nv
				}
				if v.Stored() {
					refs[strings.TrimPrefix(v.Ref, path+"/")] = true
				}
				if vals != nil {
					vals = append(vals, v)
				}
			}
			if vals == nil {
				continue
			}
			if newCols == nil {
				newCols = make([]arrow.Array, r.NumCols())
				for k := range newCols {
					newCols[k] = r.Column(k)
					newCols[k].Retain()
				}
			}
			b := array.NewStructBuilder(memory.DefaultAllocator, blobType)
			for _, v := range vals {
				if err := AppendBlob(b, v); err != nil {
					b.Release()
					releaseAll(out)
					return nil, nil, nil, err
				}
			}
			newCols[c].Release()
			newCols[c] = b.NewArray()
			b.Release()
		}
		if newCols != nil {
			nr := array.NewRecordBatch(r.Schema(), newCols, r.NumRows())
			for _, a := range newCols {
				a.Release()
			}
			r.Release()
			out[ri] = nr
		}
	}
	return out, sortedSet(refs), written, nil
}

// checkBlobs checks every Blob value of rec is ready for a fragment
// (external, or inline of at most BlobInlineMax bytes with its digest, or
// stored) and adds the stored ones to refs; the dataset is checked when
// the fragment is staged (checkBlobRefs).
func checkBlobs(s *arrow.Schema, rec arrow.Record, refs map[string]bool) error {
	for _, c := range blobColumns(s) {
		col, ok := rec.Column(c).(*array.Struct)
		if !ok {
			return errorf(ErrInvalid, "column %s is not a Blob column", s.Field(c).Name)
		}
		for j := 0; j < col.Len(); j++ {
			v, ok := BlobAt(col, j)
			if !ok {
				continue
			}
			switch {
			case v.External():
			case v.SHA256 == "":
				return errorf(ErrInvalid, "column %s: a Blob value without its digest", s.Field(c).Name)
			case v.Stored():
				refs[v.Ref] = true
			case len(v.Data) > BlobInlineMax:
				return errorf(ErrInvalid, "column %s: a %d-byte Blob value inline; store values over %d bytes first (PrepareBlob)", s.Field(c).Name, len(v.Data), BlobInlineMax)
			}
		}
	}
	return nil
}

// checkBlobRefs turns the store keys of stored values a fragment writer
// saw into the dataset-relative entries of Fragment.Blobs, refusing a
// value stored in another dataset's area.
func checkBlobRefs(path string, refs map[string]bool) ([]string, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	out := make([]string, 0, len(refs))
	for r := range refs {
		if !blobReady(path, Blob{Ref: r, SHA256: "x"}) {
			return nil, errorf(ErrInvalid, "a Blob value stored outside the blob area of %s; store it there first (PrepareBlob)", path)
		}
		out = append(out, strings.TrimPrefix(r, path+"/"))
	}
	sort.Strings(out)
	return out, nil
}

func sortedSet(m map[string]bool) []string {
	if len(m) == 0 {
		return nil
	}
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// blobEntryOf returns the Fragment.Blobs entry a blob area object belongs
// to ("_blobs/<uuid>" for "_blobs/<uuid>/<piece>"), or "" when rel is not
// in the blob area.
func blobEntryOf(rel string) string {
	if !strings.HasPrefix(rel, blobAreaDir) {
		return ""
	}
	i := strings.LastIndexByte(rel, '/')
	if i <= len(blobAreaDir) {
		return ""
	}
	return rel[:i]
}
