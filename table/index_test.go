package table

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/file"
)

func lookupRows(t *testing.T, ds *Dataset, ids ...string) []string {
	t.Helper()
	rec, err := ds.Lookup(context.Background(), ids...)
	if err != nil {
		t.Fatalf("lookup: %v", err)
	}
	defer rec.Release()
	if !sameSchema(rec.Schema(), ds.Schema()) {
		t.Fatalf("lookup schema = %s", rec.Schema())
	}
	return renderRecs([]arrow.Record{rec})
}

func TestKeyIndexLookup(t *testing.T) {
	ctx := context.Background()
	store, cnt := countedStore()
	ds := mustCreate(t, store)
	// Three fragments; the second spans several row groups and index pages.
	ds = mustAppend(t, ds, people("a", 0, 10))
	ds = mustAppend(t, ds, people("b", 0, 150_000))
	ds = mustAppend(t, ds, people("c", 0, 10))

	noIndex := lookupRows(t, ds, "b100000", "a000003", "missing")
	want := render([]person{{"a000003", "name-3", 3}, {"b100000", "name-100000", 100000}})
	if !equalRows(noIndex, want) {
		t.Fatalf("lookup without index = %v", noIndex)
	}

	st, err := ds.StageCreateIndex(ctx, "id")
	if err != nil {
		t.Fatal(err)
	}
	if st.Operation != OpCreateIndex || len(st.Files) != 1 {
		t.Fatalf("staged index: %+v", st)
	}
	ds = mustCommit(t, st, nil)
	ix := ds.Manifest().Indexes
	if len(ix) != 1 || ix[0].Entries != 150_020 || len(ix[0].Fragments) != 3 {
		t.Fatalf("index = %+v", ix)
	}

	// Indexed lookup reads the index directory, one page, and the footer and
	// one row group of the fragment holding the key: never a whole fragment.
	fresh, err := OpenVersion(ctx, store, testPath, MainBranch, ds.Version())
	if err != nil {
		t.Fatal(err)
	}
	cnt.Reset()
	if got := lookupRows(t, fresh, "b100000"); !equalRows(got, render([]person{{"b100000", "name-100000", 100000}})) {
		t.Fatalf("indexed lookup = %v", got)
	}
	c := cnt.Snapshot()
	if c.List != 0 || c.Get > 8 {
		t.Fatalf("indexed lookup requests: %s (want no List, <= 8 ranged GETs)", c)
	}
	fragSize := ds.Manifest().Fragments[1].Size
	t.Logf("indexed lookup: %s (fragment is %d bytes)", c, fragSize)

	// Later appends are not covered: lookups scan them.
	ds = mustAppend(t, ds, []person{{"d1", "late", 5}, {"a000004", "dup", 44}})
	if got := lookupRows(t, ds, "d1", "a000004"); !equalRows(got, render([]person{{"d1", "late", 5}, {"a000004", "dup", 44}, {"a000004", "name-4", 4}})) {
		t.Fatalf("lookup over uncovered fragment = %v", got)
	}
	// Deletion vectors hide indexed rows.
	ds = mc(t)(ds.StageDelete(ctx, In("id", "b100000", "a000004")))
	if got := lookupRows(t, ds, "b100000", "a000004", "b000001"); !equalRows(got, render([]person{{"b000001", "name-1", 1}})) {
		t.Fatalf("lookup after delete = %v", got)
	}
	// Compaction rewrites fragments and rebuilds the index in one version.
	ds = mc(t)(ds.StageCompact(ctx, CompactOptions{TargetRows: 1 << 20}))
	if ds.Transaction().Operation != OpCompact {
		t.Fatalf("op = %s", ds.Transaction().Operation)
	}
	m := ds.Manifest()
	if len(m.Fragments) != 1 || m.Fragments[0].Deletion != nil || len(m.Indexes) != 1 || len(m.Indexes[0].Fragments) != 1 {
		t.Fatalf("after compaction: %d fragments, indexes %+v", len(m.Fragments), m.Indexes)
	}
	if ds.RowCount() != 150_019 { // 150,022 rows, 3 deleted
		t.Fatalf("rows after compaction = %d", ds.RowCount())
	}
	for _, id := range []string{"a000000", "b149999", "c000009", "d1"} {
		if got := lookupRows(t, ds, id); len(got) != 1 {
			t.Fatalf("lookup %s after compaction = %v", id, got)
		}
	}
	if got := lookupRows(t, ds, "b100000"); len(got) != 0 {
		t.Fatalf("deleted row came back: %v", got)
	}
}

func TestKeyIndexDuplicatesAcrossPages(t *testing.T) {
	// Many equal keys spill across page boundaries; every copy is found.
	entries := make([]keyEntry, 0, 3*keyIndexPage)
	for i := 0; i < 3*keyIndexPage; i++ {
		k := fmt.Sprintf("k%05d", i)
		if i >= keyIndexPage-10 && i < 2*keyIndexPage+10 {
			k = "same"
		}
		entries = append(entries, keyEntry{key: k, frag: 0, row: uint32(i)})
	}
	data, dirLen := encodeKeyIndex([]string{"f"}, entries)
	store := newStore()
	ctx := context.Background()
	if _, err := store.Put(ctx, "t/idx", data); err != nil {
		t.Fatal(err)
	}
	ds := &Dataset{store: store, path: "t", m: &Manifest{}}
	hits, err := ds.indexLookup(ctx, &Index{UUID: "u", Path: "idx", DirLen: dirLen}, []string{"same", "k00000", "nope"})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(hits["f"]); n != keyIndexPage+20+1 {
		t.Fatalf("hits = %d, want %d", n, keyIndexPage+21)
	}
}

func TestCompactSmallFragments(t *testing.T) {
	ctx := context.Background()
	store := newStore()
	ds := mustCreate(t, store)
	var all []person
	for i := 0; i < 6; i++ {
		b := people("p", i*10, 10)
		all = append(all, b...)
		ds = mustAppend(t, ds, b)
	}
	ds = mc(t)(ds.StageDelete(ctx, Eq("age", 15)))
	all = append(all[:15], all[16:]...)
	ds = mc(t)(ds.StageCompact(ctx, CompactOptions{TargetRows: 25}))
	m := ds.Manifest()
	if len(m.Fragments) != 3 {
		t.Fatalf("fragments = %d, want 3 (59 rows at 25 per fragment)", len(m.Fragments))
	}
	if got := rowsOf(t, ds); !equalRows(got, render(all)) {
		t.Fatalf("rows changed by compaction")
	}
	// Nothing left to do: Empty.
	st, err := ds.StageCompact(ctx, CompactOptions{TargetRows: 10})
	if err != nil || !st.Empty() {
		t.Fatalf("second compaction: empty=%v err=%v", st.Empty(), err)
	}
	same, err := ds.Compact(ctx, CompactOptions{TargetRows: 10})
	if err != nil || same.Version() != ds.Version() {
		t.Fatalf("Compact with nothing to do: %v", err)
	}
}

// TestCompactWritesFewRowGroups pins the compaction output rule: rows
// rewritten from many small fragments go into row groups of up to
// rowGroupRows, not one row group per source fragment, so compacting 300
// one-row fragments writes one row group and a small file (one row group
// per source fragment cost about 1.2 KB each: 350 KB here).
func TestCompactWritesFewRowGroups(t *testing.T) {
	ctx := context.Background()
	store := newStore()
	ds := mustCreate(t, store)
	var all []person
	for i := 0; i < 300; i++ {
		b := people("p", i, 1)
		all = append(all, b...)
		ds = mustAppend(t, ds, b)
	}
	ds = mc(t)(ds.StageCompact(ctx, CompactOptions{}))
	m := ds.Manifest()
	if len(m.Fragments) != 1 {
		t.Fatalf("fragments = %d, want 1", len(m.Fragments))
	}
	f := m.Fragments[0]
	data, _, err := store.Get(ctx, testPath+"/"+f.Path)
	if err != nil {
		t.Fatal(err)
	}
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	if n := pf.NumRowGroups(); n != 1 {
		t.Fatalf("the compacted fragment has %d row groups, want 1", n)
	}
	if f.Size > 32<<10 {
		t.Fatalf("the compacted fragment of 300 small rows is %d bytes, want under 32 KiB", f.Size)
	}
	if got := rowsOf(t, ds); !equalRows(got, render(all)) {
		t.Fatalf("rows changed by compaction")
	}
}

// TestVersionManifestCompressedAndPlainRead pins the version manifest
// encoding: written gzip-compressed (a table of 32 one-row fragments stays
// under 6 KiB where its JSON is about 23 KB), and a plain-JSON manifest,
// as earlier builds wrote, still reads the same.
func TestVersionManifestCompressedAndPlainRead(t *testing.T) {
	store := newStore()
	ds := mustCreate(t, store)
	for i := 0; i < 32; i++ {
		ds = mustAppend(t, ds, people("p", i, 1))
	}
	m := ds.Manifest()
	enc, err := encodeManifest(m)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if enc[0] != 0x1f || len(enc) > 6<<10 || len(enc) >= len(plain) {
		t.Fatalf("encoded manifest: %d bytes (plain JSON %d), want gzip under 6 KiB", len(enc), len(plain))
	}
	for name, b := range map[string][]byte{"gzip": enc, "plain": plain} {
		got, err := decodeManifest(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		again, _ := json.Marshal(got)
		if !bytes.Equal(again, plain) {
			t.Fatalf("%s manifest decodes differently", name)
		}
	}
	if _, err := decodeManifest(enc[:len(enc)/2]); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a truncated manifest: %v, want ErrCorrupt", err)
	}
}

// encodeKeyIndexV1 writes the version 1 layout (uncompressed pages), as
// indexes written before version 2 are stored.
func encodeKeyIndexV1(frags []string, entries []keyEntry) ([]byte, int64) {
	sort.Slice(entries, func(i, j int) bool {
		if entries[i].key != entries[j].key {
			return entries[i].key < entries[j].key
		}
		return entries[i].row < entries[j].row
	})
	var pages bytes.Buffer
	var dir []keyPage
	for lo := 0; lo < len(entries); lo += keyIndexPage {
		hi := min(lo+keyIndexPage, len(entries))
		start := pages.Len()
		for _, e := range entries[lo:hi] {
			putString(&pages, e.key)
			putUvarint(&pages, uint64(e.frag))
			putUvarint(&pages, uint64(e.row))
		}
		dir = append(dir, keyPage{first: entries[lo].key, off: int64(start), length: int64(pages.Len() - start), count: hi - lo})
	}
	return keyIndexFile(keyIndexMagicV1, frags, dir, pages.Bytes())
}

// TestKeyIndexV2RoundTripAndV1StillRead: random keys (shared prefixes,
// duplicates, empty), fragment ordinals and unordered rows spanning pages
// come back exactly from the compressed version 2 pages, and an index in
// the version 1 layout answers the same lookups.
func TestKeyIndexV2RoundTripAndV1StillRead(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	frags := []string{"f0", "f1", "f2"}
	var entries []keyEntry
	want := map[string]map[string][]int64{}
	for i := 0; i < 3*keyIndexPage+17; i++ {
		k := fmt.Sprintf("k%0*d", 1+rng.Intn(6), rng.Intn(300))
		if i%97 == 0 {
			k = ""
		}
		e := keyEntry{key: k, frag: uint32(rng.Intn(3)), row: uint32(rng.Intn(1 << 30))}
		entries = append(entries, e)
		if want[k] == nil {
			want[k] = map[string][]int64{}
		}
		want[k][frags[e.frag]] = append(want[k][frags[e.frag]], int64(e.row))
	}
	keys := []string{"nope", "k9999999", ""}
	for k := range want {
		if len(keys) < 60 {
			keys = append(keys, k)
		}
	}
	for _, layout := range []string{"v2", "v1"} {
		var data []byte
		var dirLen int64
		if layout == "v2" {
			data, dirLen = encodeKeyIndex(frags, append([]keyEntry(nil), entries...))
		} else {
			data, dirLen = encodeKeyIndexV1(frags, append([]keyEntry(nil), entries...))
		}
		store := newStore()
		ctx := context.Background()
		if _, err := store.Put(ctx, "t/idx", data); err != nil {
			t.Fatal(err)
		}
		ds := &Dataset{store: store, path: "t", m: &Manifest{}}
		for _, k := range keys {
			hits, err := ds.indexLookup(ctx, &Index{UUID: layout, Path: "idx", DirLen: dirLen}, []string{k})
			if err != nil {
				t.Fatalf("%s: %v", layout, err)
			}
			for _, f := range frags {
				w := append([]int64(nil), want[k][f]...)
				sort.Slice(w, func(i, j int) bool { return w[i] < w[j] })
				w = dedupInt64(w)
				if fmt.Sprint(hits[f]) != fmt.Sprint(w) && !(len(hits[f]) == 0 && len(w) == 0) {
					t.Fatalf("%s: key %q in %s: rows %v, want %v", layout, k, f, hits[f], w)
				}
			}
		}
	}
}

// TestKeyIndexV2IsCompact: 101,000 sorted keys loaded in key order (rows
// one apart), as a bulk load writes them, take a few bytes each at most:
// the uncompressed layout took ~12 bytes per entry (1.2 MB).
func TestKeyIndexV2IsCompact(t *testing.T) {
	var entries []keyEntry
	for i := 0; i < 100_000; i++ {
		entries = append(entries, keyEntry{key: fmt.Sprintf("b%06d", i), row: uint32(i)})
	}
	for i := 0; i < 1000; i++ {
		entries = append(entries, keyEntry{key: fmt.Sprintf("c%05d", i), frag: 1, row: uint32(i)})
	}
	v1, _ := encodeKeyIndexV1([]string{"a", "b"}, append([]keyEntry(nil), entries...))
	v2, _ := encodeKeyIndex([]string{"a", "b"}, entries)
	t.Logf("101,000 keys: version 1 %d bytes, version 2 %d bytes", len(v1), len(v2))
	if len(v2) > 32<<10 || len(v2)*30 > len(v1) {
		t.Fatalf("version 2 index is %d bytes (version 1: %d)", len(v2), len(v1))
	}
}
