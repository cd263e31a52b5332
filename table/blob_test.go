package table

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/fault"
	"github.com/omnigraph-go/omnigraph/backend/mem"
)

const docPath = "nodes/Doc"

var docSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.BinaryTypes.String},
	{Name: "body", Type: BlobType(), Nullable: true},
}, nil)

// payload returns n deterministic pseudo-random bytes.
func payload(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// docRecord builds rows id -> value (nil: NULL; []byte: an inline value
// Prepare decides about; Blob: as given).
func docRecord(t testing.TB, ids []string, vals []any) arrow.Record {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, docSchema)
	defer b.Release()
	for i, id := range ids {
		b.Field(0).(*array.StringBuilder).Append(id)
		v := vals[i]
		if d, ok := v.([]byte); ok {
			v = InlineBlob(d)
		}
		if err := AppendBlob(b.Field(1).(*array.StructBuilder), v); err != nil {
			t.Fatal(err)
		}
	}
	return b.NewRecordBatch()
}

// docValues reads every live row of ds as id -> Blob (absent: NULL).
func docValues(t testing.TB, ds *Dataset) (map[string]Blob, int) {
	t.Helper()
	recs, err := ds.Scan(context.Background(), ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer releaseAll(recs)
	out := map[string]Blob{}
	n := 0
	for _, r := range recs {
		ids := r.Column(0).(*array.String)
		col := r.Column(1).(*array.Struct)
		for i := 0; i < ids.Len(); i++ {
			n++
			if v, ok := BlobAt(col, i); ok {
				out[ids.Value(i)] = v
			}
		}
	}
	return out, n
}

func readAll(t testing.TB, store backend.StorageAdapter, v Blob) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := ReadBlob(context.Background(), store, v, 0, v.Size, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func createDocs(t testing.TB, store backend.StorageAdapter, path string) *Dataset {
	t.Helper()
	ds, err := Create(context.Background(), store, path, docSchema, "id")
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// TestBlobValues: null, empty, small (inline) and large (stored, several
// pieces) values survive a commit and a fresh reopen byte for byte; only
// values above BlobInlineMax reach the blob area and the fragment lists
// exactly those; reads of any range match.
func TestBlobValues(t *testing.T) {
	ctx := context.Background()
	store := mem.New()
	ds := createDocs(t, store, docPath)
	small := payload(1, 100)
	edge := payload(2, BlobInlineMax)        // inline: exactly the limit
	over := payload(3, BlobInlineMax+1)      // stored: one piece
	big := payload(4, 2*BlobPieceSize+12345) // stored: three pieces
	ids := []string{"null", "empty", "small", "edge", "over", "big"}
	vals := []any{nil, []byte{}, small, edge, over, big}
	rec := docRecord(t, ids, vals)
	ds = mc(t)(ds.StageAppend(ctx, rec))
	rec.Release()

	// Restart: a fresh open of the store.
	ds = must(t)(Open(ctx, store, docPath, MainBranch))
	got, rows := docValues(t, ds)
	if rows != 6 || len(got) != 5 {
		t.Fatalf("read %d rows, %d non-null; want 6 and 5", rows, len(got))
	}
	if _, ok := got["null"]; ok {
		t.Fatal("NULL read back as a value")
	}
	if e := got["empty"]; e.Stored() || e.Size != 0 || e.Data == nil || len(e.Data) != 0 {
		t.Fatalf("empty value read back as %+v, want inline, zero bytes, not null", e)
	}
	want := map[string][]byte{"empty": {}, "small": small, "edge": edge, "over": over, "big": big}
	for id, w := range want {
		v := got[id]
		if v.Stored() != (len(w) > BlobInlineMax) {
			t.Fatalf("%s: stored=%v for %d bytes", id, v.Stored(), len(w))
		}
		if b := readAll(t, store, v); !bytes.Equal(b, w) {
			t.Fatalf("%s: read %d bytes, want %d equal bytes", id, len(b), len(w))
		}
		if v.ETag() != InlineBlob(w).ETag() {
			t.Fatalf("%s: etag %s, want the digest of the bytes", id, v.ETag())
		}
	}
	f := ds.Manifest().Fragments[0]
	if len(f.Blobs) != 2 || !strings.HasPrefix(f.Blobs[0], "_blobs/") {
		t.Fatalf("fragment blobs %v, want the two stored values", f.Blobs)
	}
	pieces := 0
	for _, k := range keysOf(t, store) {
		if strings.Contains(k, "/_blobs/") {
			pieces++
		}
	}
	if pieces != 4 { // over: 1, big: 3
		t.Fatalf("%d pieces in the blob area, want 4", pieces)
	}
	// Ranges: inside a piece, across a boundary, the tail, empty.
	for _, r := range [][2]int64{{0, 1}, {BlobPieceSize - 10, 20}, {2*BlobPieceSize + 12000, 345}, {17, 0}, {int64(len(big)), 0}} {
		var buf bytes.Buffer
		if err := ReadBlob(ctx, store, got["big"], r[0], r[1], &buf); err != nil {
			t.Fatalf("range %v: %v", r, err)
		}
		if !bytes.Equal(buf.Bytes(), big[r[0]:r[0]+r[1]]) {
			t.Fatalf("range %v: wrong bytes", r)
		}
	}
	for _, r := range [][2]int64{{-1, 1}, {0, int64(len(big)) + 1}, {int64(len(big)) + 1, 0}, {5, -1}} {
		if err := ReadBlob(ctx, store, got["big"], r[0], r[1], &bytes.Buffer{}); !errors.Is(err, ErrBlobRange) {
			t.Fatalf("range %v: %v, want ErrBlobRange", r, err)
		}
	}
}

// TestBlobReadCost: a range costs one ranged GET per piece it touches and
// nothing else; a whole read of an n-piece value costs n.
func TestBlobReadCost(t *testing.T) {
	ctx := context.Background()
	store, c := countedStore()
	w := NewBlobWriter(ctx, store, docPath)
	data := payload(9, 3*BlobPieceSize+1)
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	v, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Snapshot().Put; got != 4 {
		t.Fatalf("a 4-piece value took %d puts, want 4", got)
	}
	for _, tc := range []struct {
		off, n int64
		gets   int
	}{{0, 10, 1}, {BlobPieceSize - 1, 2, 2}, {0, v.Size, 4}, {3 * BlobPieceSize, 1, 1}, {5, 0, 0}} {
		c.Reset()
		if err := ReadBlob(ctx, store, v, tc.off, tc.n, &bytes.Buffer{}); err != nil {
			t.Fatal(err)
		}
		if s := c.Snapshot(); s.Get != tc.gets || s.List != 0 || s.Head != 0 {
			t.Fatalf("range %d+%d: %v, want %d gets only", tc.off, tc.n, s, tc.gets)
		}
	}
}

// TestBlobIntegrity: a missing piece, a short piece and changed bytes are
// ErrCorrupt, never wrong bytes reported as success.
func TestBlobIntegrity(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		damage func(store backend.StorageAdapter, key string)
	}{
		{"missing piece", func(s backend.StorageAdapter, k string) { _ = s.Delete(ctx, k) }},
		{"short piece", func(s backend.StorageAdapter, k string) { _, _ = s.Put(ctx, k, []byte("short")) }},
		{"changed bytes", func(s backend.StorageAdapter, k string) {
			b, _, _ := s.Get(ctx, k)
			b[7] ^= 0xff
			_, _ = s.Put(ctx, k, b)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := mem.New()
			w := NewBlobWriter(ctx, store, docPath)
			_, _ = w.Write(payload(5, BlobPieceSize+100))
			v, err := w.Close()
			if err != nil {
				t.Fatal(err)
			}
			tc.damage(store, w.Keys()[1])
			err = ReadBlob(ctx, store, v, 0, v.Size, &bytes.Buffer{})
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("read of a damaged value: %v, want ErrCorrupt", err)
			}
		})
	}
}

// TestBlobCleanupKeepsRetained: a stored value stays while any kept version
// references it (so old snapshots read it), and goes once none does; an
// abandoned writer's pieces are garbage that cleanup reclaims after its
// grace.
func TestBlobCleanupKeepsRetained(t *testing.T) {
	ctx := context.Background()
	store := mem.New()
	ds := createDocs(t, store, docPath)
	a, b := payload(11, BlobInlineMax*3), payload(12, BlobInlineMax*2)
	rec := docRecord(t, []string{"a", "b"}, []any{a, b})
	ds = mc(t)(ds.StageAppend(ctx, rec))
	rec.Release()
	v1 := ds.Version()
	// Replace a (an upsert: a deletion vector plus a new fragment), then
	// compact: the newest version no longer references a's old value.
	a2 := payload(13, BlobInlineMax*3)
	rec = docRecord(t, []string{"a"}, []any{a2})
	ds = mc(t)(ds.StageMergeInsert(ctx, rec))
	rec.Release()
	ds = mc(t)(ds.StageCompact(ctx, CompactOptions{}))
	// An abandoned upload: pieces nothing will ever reference.
	w := NewBlobWriter(ctx, store, docPath)
	_, _ = w.Write(payload(14, BlobInlineMax*2))
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	orphan := w.Keys()[0]

	old := must(t)(OpenVersion(ctx, store, docPath, MainBranch, v1))
	oldVals, _ := docValues(t, old)

	// Keep v1: its value of a survives, the orphan goes (grace 0).
	keep := func(_ string, v uint64) bool { return v == v1 }
	if _, err := Cleanup(ctx, store, docPath, CleanupOptions{Keep: keep}); err != nil {
		t.Fatal(err)
	}
	if ok, _ := store.Exists(ctx, orphan); ok {
		t.Fatal("an abandoned piece survived cleanup")
	}
	old = must(t)(OpenVersion(ctx, store, docPath, MainBranch, v1))
	if got := readAll(t, store, oldVals["a"]); !bytes.Equal(got, a) {
		t.Fatal("the retained version's value of a is gone")
	}
	// Keep only the head: a's first value goes, b and a2 stay.
	if _, err := Cleanup(ctx, store, docPath, CleanupOptions{RetainVersions: 1}); err != nil {
		t.Fatal(err)
	}
	if err := ReadBlob(ctx, store, oldVals["a"], 0, oldVals["a"].Size, &bytes.Buffer{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("read of a reclaimed value: %v, want ErrCorrupt (missing piece)", err)
	}
	head := must(t)(Open(ctx, store, docPath, MainBranch))
	vals, _ := docValues(t, head)
	if !bytes.Equal(readAll(t, store, vals["a"]), a2) || !bytes.Equal(readAll(t, store, vals["b"]), b) {
		t.Fatal("the head's values changed after cleanup")
	}
	if len(head.Manifest().Fragments) != 1 || len(head.Manifest().Fragments[0].Blobs) != 2 {
		t.Fatalf("compacted fragment lists %v, want the two live values", head.Manifest().Fragments)
	}
}

// TestBlobGrace: cleanup with a grace keeps young unreferenced pieces (an
// in-flight writer may commit them).
func TestBlobGrace(t *testing.T) {
	ctx := context.Background()
	store := mem.New()
	createDocs(t, store, docPath)
	w := NewBlobWriter(ctx, store, docPath)
	_, _ = w.Write(payload(15, BlobInlineMax+1))
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	res, err := Cleanup(ctx, store, docPath, CleanupOptions{Grace: 1 << 40})
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := store.Exists(ctx, w.Keys()[0]); !ok || res.FilesDeleted != 0 {
		t.Fatalf("a young staged piece was deleted (%+v)", res)
	}
}

// TestBlobForeignAreaCopied: rows whose values are stored in another
// dataset (a table a schema change replaced) are copied into this one's
// area when written, so dropping the other dataset loses nothing.
func TestBlobForeignAreaCopied(t *testing.T) {
	ctx := context.Background()
	store := mem.New()
	src := createDocs(t, store, "nodes/Old")
	data := payload(21, BlobPieceSize+7)
	rec := docRecord(t, []string{"x"}, []any{data})
	src = mc(t)(src.StageAppend(ctx, rec))
	rec.Release()
	recs, err := src.Scan(ctx, ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := StageCreate(ctx, store, "nodes/New", docSchema, "id", recs...)
	releaseAll(recs)
	dst := mustCommit(t, st, err)
	if err := Drop(ctx, store, "nodes/Old"); err != nil {
		t.Fatal(err)
	}
	vals, _ := docValues(t, dst)
	if !strings.HasPrefix(vals["x"].Ref, "nodes/New/_blobs/") {
		t.Fatalf("value stays stored at %s", vals["x"].Ref)
	}
	if !bytes.Equal(readAll(t, store, vals["x"]), data) {
		t.Fatal("copied value differs")
	}
}

// TestBlobFragmentWriter: the streaming writer refuses values it cannot
// hold (too large inline, stored elsewhere) and lists the stored ones.
func TestBlobFragmentWriter(t *testing.T) {
	ctx := context.Background()
	store := mem.New()
	ds := createDocs(t, store, docPath)
	fw, err := NewFragmentWriter(docSchema, "id")
	if err != nil {
		t.Fatal(err)
	}
	big := docRecord(t, []string{"b"}, []any{payload(1, BlobInlineMax+1)})
	defer big.Release()
	if err := fw.Write(big); !errors.Is(err, ErrInvalid) {
		t.Fatalf("inline value over the limit: %v, want ErrInvalid", err)
	}
	stored, _, err := PrepareBlob(ctx, store, docPath, InlineBlob(payload(2, BlobInlineMax+1)))
	if err != nil || !stored.Stored() {
		t.Fatalf("prepare: %+v %v", stored, err)
	}
	elsewhere, _, err := PrepareBlob(ctx, store, "nodes/Other", InlineBlob(payload(3, BlobInlineMax+1)))
	if err != nil {
		t.Fatal(err)
	}
	ok := docRecord(t, []string{"s", "i"}, []any{stored, []byte("x")})
	defer ok.Release()
	if err := fw.Write(ok); err != nil {
		t.Fatal(err)
	}
	_ = fw.Close()
	ds = mc(t)(ds.StageAppendFragments(ctx, fw))
	if bl := ds.Manifest().Fragments[0].Blobs; len(bl) != 1 || docPath+"/"+bl[0] != stored.Ref {
		t.Fatalf("fragment blobs %v, want [%s]", bl, stored.Ref)
	}
	fw2, _ := NewFragmentWriter(docSchema, "id")
	bad := docRecord(t, []string{"e"}, []any{elsewhere})
	defer bad.Release()
	if err := fw2.Write(bad); err != nil {
		t.Fatal(err)
	}
	_ = fw2.Close()
	if _, err := ds.StageAppendFragments(ctx, fw2); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a value stored in another dataset: %v, want ErrInvalid", err)
	}
}

// TestBlobCrashAtEveryWrite crashes an append of stored values at (and
// after) every write: the dataset then opens at the old version with no
// rows, or at the new one with every value readable; never a row whose
// bytes are missing. The pieces a crash leaves are reclaimed by cleanup.
func TestBlobCrashAtEveryWrite(t *testing.T) {
	ctx := context.Background()
	data := map[string][]byte{"a": payload(31, BlobPieceSize+1), "b": payload(32, BlobInlineMax+5), "c": payload(33, 10)}
	for _, mode := range []string{"at", "after"} {
		outcomes := map[bool]int{}
		for k := 1; ; k++ {
			base := mem.New()
			ds := createDocs(t, base, docPath)
			inj := fault.New(base)
			if mode == "at" {
				inj.CrashAtWrite(k)
			} else {
				inj.CrashAfterWrite(k)
			}
			ds = must(t)(OpenVersion(ctx, inj, docPath, MainBranch, ds.Version()))
			rec := docRecord(t, []string{"a", "b", "c"}, []any{data["a"], data["b"], data["c"]})
			st, err := ds.StageAppend(ctx, rec)
			rec.Release()
			if err == nil {
				_, err = Commit(ctx, st)
			}
			if !inj.Crashed() {
				if err != nil {
					t.Fatal(err)
				}
				break
			}
			got := must(t)(Open(ctx, base, docPath, MainBranch))
			vals, rows := docValues(t, got)
			landed := rows > 0
			outcomes[landed]++
			if landed {
				for id, w := range data {
					if !bytes.Equal(readAll(t, base, vals[id]), w) {
						t.Fatalf("%s %d: %s reads wrong bytes", mode, k, id)
					}
				}
			} else {
				if _, err := Cleanup(ctx, base, docPath, CleanupOptions{}); err != nil {
					t.Fatal(err)
				}
				for _, key := range keysOf(t, base) {
					if strings.Contains(key, "/_blobs/") {
						t.Fatalf("%s %d: piece %s survived cleanup", mode, k, key)
					}
				}
			}
		}
		if outcomes[false] == 0 {
			t.Fatalf("%s: no crash left the old version (%v)", mode, outcomes)
		}
	}
}

func TestBlobJSON(t *testing.T) {
	for _, tc := range []struct {
		v    Blob
		want string
	}{
		{InlineBlob([]byte("hi")), `{"kind":"managed","size":2,"sha256":"8f434346648f6b96df89dda901c5176b10a6d83961dd3c1ac88b59b2dc327aa4"}`},
		{InlineBlob(nil), `{"kind":"managed","size":0,"sha256":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}`},
		{Blob{Size: 9, SHA256: "ab", Ref: "nodes/X/_blobs/1"}, `{"kind":"managed","size":9,"sha256":"ab"}`},
		{ExternalBlob("s3://b/k"), `{"kind":"external","uri":"s3://b/k"}`},
	} {
		b, err := tc.v.MarshalJSON()
		if err != nil || string(b) != tc.want {
			t.Fatalf("%+v: %s %v, want %s", tc.v, b, err, tc.want)
		}
	}
}
