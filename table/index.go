package table

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/omnigraph-go/omnigraph/backend"
)

// Key index file (_indices/<uuid>/key.idx):
//
//	directory: magic, fragment ids, and per page its first key, byte
//	           offset, length and entry count (DirLen bytes, recorded in
//	           the manifest so one ranged GET fetches it)
//	pages:     sorted entries (key, fragment ordinal, row offset)
//
// A lookup reads the directory (cached per handle) and the one or two pages
// that can hold the key, never the whole index.
//
// Version 2 (keyIndexMagic) stores each page compressed: its entries as
// five streams (the length of the prefix each key shares with the one
// before it, the length of the rest, the rests, the fragment ordinals,
// and each row offset as a zigzag delta from the entry before), then the
// page zstd-compressed. Sorted keys share long prefixes and rows loaded in
// key order differ by one, so a page of 4,096 entries is a few KB instead
// of ~50 KB. Version 1 (keyIndexMagicV1: the entries uncompressed, one
// after another) is still read.
const (
	keyIndexMagic   = "OGKIDX2\n"
	keyIndexMagicV1 = "OGKIDX1\n"
	keyIndexPage    = 4096
)

var (
	zstdOnce sync.Once
	zstdEnc  *zstd.Encoder
	zstdDec  *zstd.Decoder
)

// zstdCodec returns the process's shared encoder and decoder (both safe
// for concurrent EncodeAll / DecodeAll).
func zstdCodec() (*zstd.Encoder, *zstd.Decoder) {
	zstdOnce.Do(func() {
		var err error
		if zstdEnc, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1)); err != nil {
			panic(err)
		}
		if zstdDec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(256<<20)); err != nil {
			panic(err)
		}
	})
	return zstdEnc, zstdDec
}

type keyEntry struct {
	key  string
	frag uint32
	row  uint32
}

type keyPage struct {
	first       string
	off, length int64
	count       int
}

type keyDir struct {
	frags []string
	pages []keyPage
	// v1: pages are stored uncompressed (an index written before v2).
	v1 bool
}

func putUvarint(b *bytes.Buffer, v uint64) {
	var tmp [binary.MaxVarintLen64]byte
	b.Write(tmp[:binary.PutUvarint(tmp[:], v)])
}

func putString(b *bytes.Buffer, s string) {
	putUvarint(b, uint64(len(s)))
	b.WriteString(s)
}

// encodeKeyIndex sorts entries and lays out the directory and pages. It
// returns the file and the directory length.
func encodeKeyIndex(frags []string, entries []keyEntry) ([]byte, int64) {
	sort.Slice(entries, func(i, j int) bool {
		a, b := entries[i], entries[j]
		if a.key != b.key {
			return a.key < b.key
		}
		if a.frag != b.frag {
			return a.frag < b.frag
		}
		return a.row < b.row
	})
	var pages bytes.Buffer
	var dir []keyPage
	enc, _ := zstdCodec()
	for lo := 0; lo < len(entries); lo += keyIndexPage {
		hi := min(lo+keyIndexPage, len(entries))
		start := pages.Len()
		pages.Write(enc.EncodeAll(encodeKeyPage(entries[lo:hi]), nil))
		dir = append(dir, keyPage{first: entries[lo].key, off: int64(start), length: int64(pages.Len() - start), count: hi - lo})
	}
	return keyIndexFile(keyIndexMagic, frags, dir, pages.Bytes())
}

// keyIndexFile lays out a key index file: magic, the fragment list and the
// page directory (the part a reader fetches first: dirLen bytes), then the
// pages.
func keyIndexFile(magic string, frags []string, dir []keyPage, pages []byte) (data []byte, dirLen int64) {
	var head bytes.Buffer
	head.WriteString(magic)
	putUvarint(&head, uint64(len(frags)))
	for _, f := range frags {
		putString(&head, f)
	}
	putUvarint(&head, uint64(len(dir)))
	for _, p := range dir {
		putString(&head, p.first)
		putUvarint(&head, uint64(p.off))
		putUvarint(&head, uint64(p.length))
		putUvarint(&head, uint64(p.count))
	}
	dirLen = int64(head.Len())
	head.Write(pages)
	return head.Bytes(), dirLen
}

// encodeKeyPage lays out one page's entries (sorted) as its five streams,
// each preceded by its length.
func encodeKeyPage(entries []keyEntry) []byte {
	var shared, rest, suffix, frags, rows bytes.Buffer
	prev, prow := "", int64(0)
	for _, e := range entries {
		n := 0
		for n < len(prev) && n < len(e.key) && prev[n] == e.key[n] {
			n++
		}
		putUvarint(&shared, uint64(n))
		putUvarint(&rest, uint64(len(e.key)-n))
		suffix.WriteString(e.key[n:])
		putUvarint(&frags, uint64(e.frag))
		d := int64(e.row) - prow
		putUvarint(&rows, uint64(d<<1)^uint64(d>>63))
		prev, prow = e.key, int64(e.row)
	}
	var out bytes.Buffer
	for _, b := range []*bytes.Buffer{&shared, &rest, &suffix, &frags, &rows} {
		putUvarint(&out, uint64(b.Len()))
		out.Write(b.Bytes())
	}
	return out.Bytes()
}

// decodeKeyPageV2 is the inverse of encodeKeyPage.
func decodeKeyPageV2(b []byte, count int) ([]keyEntry, error) {
	r := &byteReader{b: b}
	var streams [5]*byteReader
	for i := range streams {
		n := r.uvarint()
		if r.err != nil || uint64(len(r.b)) < n {
			return nil, errorf(ErrCorrupt, "key index: truncated page")
		}
		streams[i] = &byteReader{b: r.b[:n]}
		r.b = r.b[n:]
	}
	shared, rest, suffix, frags, rows := streams[0], streams[1], streams[2], streams[3], streams[4]
	out := make([]keyEntry, 0, count)
	prev, prow := "", int64(0)
	for i := 0; i < count; i++ {
		n, m := shared.uvarint(), rest.uvarint()
		if shared.err != nil || rest.err != nil || n > uint64(len(prev)) || m > uint64(len(suffix.b)) {
			return nil, errorf(ErrCorrupt, "key index: bad page entry")
		}
		key := prev[:n] + string(suffix.b[:m])
		suffix.b = suffix.b[m:]
		f := frags.uvarint()
		z := rows.uvarint()
		if frags.err != nil || rows.err != nil {
			return nil, errorf(ErrCorrupt, "key index: bad page entry")
		}
		row := prow + (int64(z>>1) ^ -int64(z&1))
		out = append(out, keyEntry{key: key, frag: uint32(f), row: uint32(row)})
		prev, prow = key, row
	}
	return out, nil
}

type byteReader struct {
	b   []byte
	err error
}

func (r *byteReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errorf(ErrCorrupt, "key index: bad varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *byteReader) str() string {
	n := r.uvarint()
	if r.err != nil {
		return ""
	}
	if uint64(len(r.b)) < n {
		r.err = errorf(ErrCorrupt, "key index: truncated string")
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func decodeKeyDir(b []byte) (*keyDir, error) {
	d := &keyDir{}
	switch {
	case bytes.HasPrefix(b, []byte(keyIndexMagic)):
	case bytes.HasPrefix(b, []byte(keyIndexMagicV1)):
		d.v1 = true
	default:
		return nil, errorf(ErrCorrupt, "key index: bad magic")
	}
	r := &byteReader{b: b[len(keyIndexMagic):]}
	nf := r.uvarint()
	for i := uint64(0); i < nf && r.err == nil; i++ {
		d.frags = append(d.frags, r.str())
	}
	np := r.uvarint()
	for i := uint64(0); i < np && r.err == nil; i++ {
		p := keyPage{first: r.str()}
		p.off = int64(r.uvarint())
		p.length = int64(r.uvarint())
		p.count = int(r.uvarint())
		d.pages = append(d.pages, p)
	}
	return d, r.err
}

func decodeKeyPage(b []byte, count int) ([]keyEntry, error) {
	r := &byteReader{b: b}
	out := make([]keyEntry, 0, count)
	for i := 0; i < count && r.err == nil; i++ {
		e := keyEntry{key: r.str()}
		e.frag = uint32(r.uvarint())
		e.row = uint32(r.uvarint())
		out = append(out, e)
	}
	return out, r.err
}

// keyIndex returns the key index on column, if this version has one.
func (ds *Dataset) keyIndex(column string) *Index {
	for i := range ds.m.Indexes {
		if ix := &ds.m.Indexes[i]; ix.Kind == "key" && ix.Column == column {
			return ix
		}
	}
	return nil
}

// loadKeyDir fetches the index directory (one ranged GET), once per cache:
// index files are immutable.
func (ds *Dataset) loadKeyDir(ctx context.Context, ix *Index) (*keyDir, error) {
	key := ds.path + "/" + ix.Path
	if v, ok := ds.cache.get(key); ok {
		return v.(*keyDir), nil
	}
	b, err := ds.store.GetRange(ctx, key, 0, ix.DirLen)
	if err != nil {
		return nil, fmt.Errorf("read key index: %w", err)
	}
	d, err := decodeKeyDir(b)
	if err != nil {
		return nil, err
	}
	ds.cache.put(key, d, int64(len(b))*2+64)
	return d, nil
}

// loadKeyPage fetches page p of the index (one ranged GET), once per cache.
func (ds *Dataset) loadKeyPage(ctx context.Context, ix *Index, d *keyDir, pg keyPage) ([]keyEntry, error) {
	key := fmt.Sprintf("%s/%s#%d", ds.path, ix.Path, pg.off)
	if v, ok := ds.cache.get(key); ok {
		return v.([]keyEntry), nil
	}
	b, err := ds.store.GetRange(ctx, ds.path+"/"+ix.Path, ix.DirLen+pg.off, pg.length)
	if err != nil {
		return nil, fmt.Errorf("read key index page: %w", err)
	}
	var entries []keyEntry
	if d.v1 {
		entries, err = decodeKeyPage(b, pg.count)
	} else {
		_, dec := zstdCodec()
		raw, derr := dec.DecodeAll(b, nil)
		if derr != nil {
			return nil, errorf(ErrCorrupt, "key index: page: %v", derr)
		}
		entries, err = decodeKeyPageV2(raw, pg.count)
	}
	if err != nil {
		return nil, err
	}
	size := int64(len(b))
	for _, e := range entries {
		size += int64(len(e.key)) + 32
	}
	ds.cache.put(key, entries, size)
	return entries, nil
}

// indexLookup returns fragment id -> physical row offsets of the keys
// according to the index (deletions not applied). Pages are fetched with
// one ranged GET each, shared by keys on the same page.
func (ds *Dataset) indexLookup(ctx context.Context, ix *Index, keys []string) (map[string][]int64, error) {
	d, err := ds.loadKeyDir(ctx, ix)
	if err != nil {
		return nil, err
	}
	want := map[int][]string{}
	for _, k := range keys {
		// Pages that may hold k: from the last page whose first key is < k
		// (equal keys can spill over a page boundary) to the last page whose
		// first key is <= k.
		hi := sort.Search(len(d.pages), func(i int) bool { return d.pages[i].first > k }) - 1
		if hi < 0 {
			continue
		}
		lo := sort.Search(len(d.pages), func(i int) bool { return d.pages[i].first >= k }) - 1
		lo = max(lo, 0)
		for p := lo; p <= hi; p++ {
			want[p] = append(want[p], k)
		}
	}
	out := map[string][]int64{}
	pages := make([]int, 0, len(want))
	for p := range want {
		pages = append(pages, p)
	}
	sort.Ints(pages)
	for _, p := range pages {
		pg := d.pages[p]
		entries, err := ds.loadKeyPage(ctx, ix, d, pg)
		if err != nil {
			return nil, err
		}
		for _, k := range want[p] {
			i := sort.Search(len(entries), func(i int) bool { return entries[i].key >= k })
			for ; i < len(entries) && entries[i].key == k; i++ {
				e := entries[i]
				if int(e.frag) >= len(d.frags) {
					return nil, errorf(ErrCorrupt, "key index: fragment ordinal %d out of range", e.frag)
				}
				id := d.frags[e.frag]
				out[id] = append(out[id], int64(e.row))
			}
		}
	}
	for id := range out {
		rows := out[id]
		sort.Slice(rows, func(i, j int) bool { return rows[i] < rows[j] })
		out[id] = dedupInt64(rows)
	}
	return out, nil
}

func dedupInt64(s []int64) []int64 {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// buildKeyIndex reads column of every fragment of m (through ds's cache,
// up to readParallelism fragments at a time) and writes a new key index
// file under root. Deleted rows are indexed too; lookups apply the deletion
// vectors current at their version.
func buildKeyIndex(ctx context.Context, ds *Dataset, root string, m *Manifest, column string, colIdx int) (Index, string, error) {
	frags := make([]string, 0, len(m.Fragments))
	for _, f := range m.Fragments {
		frags = append(frags, f.ID)
	}
	per := make([][]keyEntry, len(m.Fragments))
	err := eachFragment(ctx, m.Fragments, func(ctx context.Context, fi int, f Fragment) error {
		d, err := ds.fragmentData(ctx, f)
		if err != nil {
			return err
		}
		var off int64
		for _, r := range d.recs {
			sa, ok := r.Column(colIdx).(stringArray)
			if !ok {
				return errorf(ErrInvalid, "key index on %q: column is not a string column", column)
			}
			for j := 0; j < sa.Len(); j++ {
				if !sa.IsNull(j) {
					per[fi] = append(per[fi], keyEntry{key: sa.Value(j), frag: uint32(fi), row: uint32(off + int64(j))})
				}
			}
			off += r.NumRows()
		}
		return nil
	})
	if err != nil {
		return Index{}, "", err
	}
	var entries []keyEntry
	for _, e := range per {
		entries = append(entries, e...)
	}
	return writeKeyIndex(ctx, ds.store, ds.path, root, column, frags, entries)
}

// writeKeyIndex encodes entries over frags and Puts the file under a fresh
// name.
func writeKeyIndex(ctx context.Context, store backend.StorageAdapter, path, root, column string, frags []string, entries []keyEntry) (Index, string, error) {
	data, dirLen := encodeKeyIndex(frags, entries)
	id := newUUID()
	rel := strings.TrimPrefix(root, path+"/") + dirIndices + "/" + id + "/key.idx"
	key := path + "/" + rel
	if _, err := store.Put(ctx, key, data); err != nil {
		return Index{}, "", fmt.Errorf("write key index: %w", err)
	}
	return Index{UUID: id, Kind: "key", Column: column, Path: rel, Size: int64(len(data)), DirLen: dirLen, Entries: int64(len(entries)), Fragments: frags}, key, nil
}

// WarmKeyIndexes reads the directory of each key index of this version
// into the cache (one ranged GET each), so the first key lookup reads only
// its page.
func (ds *Dataset) WarmKeyIndexes(ctx context.Context) error {
	for i := range ds.m.Indexes {
		if ix := &ds.m.Indexes[i]; ix.Kind == "key" {
			if _, err := ds.loadKeyDir(ctx, ix); err != nil {
				return err
			}
		}
	}
	return nil
}
