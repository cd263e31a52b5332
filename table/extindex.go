package table

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/omnigraph-go/omnigraph/backend"
)

// Caller-built indexes. A package above this one (the full-text and vector
// index formats, index/...) builds the bytes of an index over one version's
// rows; the table stores them as an index file beside the fragments
// (_indices/<uuid>/<kind>.idx under the branch root), records it in the
// version's manifest with the fragments it covers (their live row counts
// and deletion files as the builder saw them), and carries the entry into
// later versions like any index: appends leave it covering fewer
// fragments, deletes leave covered fragments with a newer deletion file,
// compaction and overwrite drop it. What the bytes mean is the caller's;
// a reader consults Indexes, reads the file with ReadIndex and treats what
// the entry does not cover (FragmentCoverage) by its own scan.

// IndexFile is an index a caller built over the rows of one version.
type IndexFile struct {
	// Kind names the format ("fulltext", "ivf"); it is the file's name.
	Kind string
	// Columns are the columns indexed.
	Columns []string
	// Data is the file. DirLen, when > 0, is the length of a directory at
	// its start that a reader fetches first with one ranged read.
	Data   []byte
	DirLen int64
	// Entries counts what the file indexes (rows, documents).
	Entries int64
}

// IndexesOf returns this version's index entries of one kind (copies).
// No I/O.
func (ds *Dataset) IndexesOf(kind string) []Index {
	var out []Index
	for _, ix := range ds.m.Indexes {
		if ix.Kind == kind {
			ix.Columns = slices.Clone(ix.Columns)
			ix.Fragments = slices.Clone(ix.Fragments)
			ix.Rows = slices.Clone(ix.Rows)
			ix.Deletions = slices.Clone(ix.Deletions)
			out = append(out, ix)
		}
	}
	return out
}

// IndexOn returns this version's index entry of kind on the one column
// column, if it has one (a copy). No I/O.
func (ds *Dataset) IndexOn(kind, column string) (Index, bool) {
	for _, ix := range ds.IndexesOf(kind) {
		if len(ix.Columns) == 1 && ix.Columns[0] == column {
			return ix, true
		}
	}
	return Index{}, false
}

// CoveredOn reports whether ds has an index of kind on column covering
// every fragment as it is. No I/O.
func (ds *Dataset) CoveredOn(kind, column string) bool {
	ix, ok := ds.IndexOn(kind, column)
	return ok && ds.IndexCovers(ix)
}

// FragmentCoverage matches this version's fragments with what ix covers:
// for each fragment of the version, in order, the ordinal of that fragment
// in ix.Fragments (-1: not covered, read it) and whether its deletion file
// changed since the index was built (then the caller must drop the rows
// DeletedRows lists). No I/O.
func (ds *Dataset) FragmentCoverage(ix Index) (ordinal []int, newerDeletions []bool) {
	at := make(map[string]int, len(ix.Fragments))
	for i, id := range ix.Fragments {
		at[id] = i
	}
	ordinal = make([]int, len(ds.m.Fragments))
	newerDeletions = make([]bool, len(ds.m.Fragments))
	for i, f := range ds.m.Fragments {
		o, ok := at[f.ID]
		if !ok {
			ordinal[i] = -1
			continue
		}
		ordinal[i] = o
		if o >= len(ix.Deletions) || ix.Deletions[o] != deletionPath(f) {
			newerDeletions[i] = f.Deletion != nil
		}
	}
	return ordinal, newerDeletions
}

// Fragments returns the ids of this version's fragments, in order. No I/O.
func (ds *Dataset) Fragments() []string {
	out := make([]string, len(ds.m.Fragments))
	for i, f := range ds.m.Fragments {
		out[i] = f.ID
	}
	return out
}

// DeletedRows returns the physical rows deleted from this version's
// fragment i (nil when none): one GET of its deletion file, cached.
func (ds *Dataset) DeletedRows(ctx context.Context, i int) (*roaring.Bitmap, error) {
	return ds.deletions(ctx, ds.m.Fragments[i])
}

// ReadIndex reads part of ix's file (length < 0: from off to the end; one
// request) and decodes it with decode, which also returns the decoded
// value's estimated size; the decoded value is kept in the object cache
// (index files are immutable), so a later read of the same part costs no
// request. A file that is gone is ErrNotFound; one that decode refuses
// should be reported as ErrCorrupt: the caller then ignores the index.
func (ds *Dataset) ReadIndex(ctx context.Context, ix Index, off, length int64, decode func([]byte) (any, int64, error)) (any, error) {
	key := ds.path + "/" + ix.Path
	ck := fmt.Sprintf("%s#%d+%d", key, off, length)
	if v, ok := ds.cache.get(ck); ok {
		return v, nil
	}
	var b []byte
	var err error
	if off == 0 && length < 0 {
		b, _, err = ds.store.Get(ctx, key)
	} else {
		if length < 0 {
			length = ix.Size - off
		}
		b, err = ds.store.GetRange(ctx, key, off, length)
	}
	if err != nil {
		if backend.IsNotFound(err) {
			return nil, fmt.Errorf("%w: index file: %w", ErrNotFound, err)
		}
		return nil, fmt.Errorf("read %s index: %w", ix.Kind, err)
	}
	v, size, err := decode(b)
	if err != nil {
		return nil, err
	}
	ds.cache.put(ck, v, size)
	return v, nil
}

// View is the staged version as a read-only dataset (its fragments are
// written; it is not committed): what a builder of an index for this stage
// reads.
func (st *Staged) View() (*Dataset, error) {
	if st.Empty() {
		return nil, ErrNothingStaged
	}
	s, err := decodeSchema(st.Manifest.Schema)
	if err != nil {
		return nil, err
	}
	c := st.cache
	if c == nil {
		c = NewCache(0)
	}
	return &Dataset{store: st.store, path: st.Path, m: st.Manifest, schema: s, cache: c}, nil
}

// AddIndexFile writes f (one Put) and records it in the staged version as
// covering every fragment of that version as it is, replacing an index of
// the same kind on the same columns. Build f from View.
func (st *Staged) AddIndexFile(ctx context.Context, f IndexFile) error {
	if st.Empty() {
		return ErrNothingStaged
	}
	if f.Kind == "" || f.Kind == "key" || f.Kind == AdjacencyKind || strings.ContainsAny(f.Kind, "/.") || len(f.Columns) == 0 {
		return errorf(ErrInvalid, "index file: bad kind %q or no columns", f.Kind)
	}
	m := st.Manifest
	id := newUUID()
	rel := strings.TrimPrefix(branchRoot(st.Path, st.Branch), st.Path+"/") + dirIndices + "/" + id + "/" + f.Kind + ".idx"
	key := st.Path + "/" + rel
	if _, err := st.store.Put(ctx, key, f.Data); err != nil {
		return fmt.Errorf("write %s index: %w", f.Kind, err)
	}
	ix := Index{UUID: id, Kind: f.Kind, Column: f.Columns[0], Columns: slices.Clone(f.Columns), Path: rel, Size: int64(len(f.Data)),
		DirLen: f.DirLen, Entries: f.Entries, Version: m.Version}
	for _, fr := range m.Fragments {
		ix.Fragments = append(ix.Fragments, fr.ID)
		ix.Rows = append(ix.Rows, fr.LiveRows())
		ix.Deletions = append(ix.Deletions, deletionPath(fr))
	}
	out := m.Indexes[:0]
	for _, o := range m.Indexes {
		if !(o.Kind == f.Kind && slices.Equal(o.Columns, f.Columns)) {
			out = append(out, o)
		}
	}
	m.Indexes = append(out, ix)
	st.Files = append(st.Files, key)
	return nil
}

// StageIndexes stages a version of this one with the same rows and the
// index files build returns, built from this version (build receives it).
// No file: an Empty stage.
func (ds *Dataset) StageIndexes(ctx context.Context, build func(*Dataset) ([]IndexFile, error)) (*Staged, error) {
	files, err := build(ds)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return emptyStage(ds, OpCreateIndex), nil
	}
	st, m := ds.newStage()
	st.finish(m, ds.m.Version, OpCreateIndex)
	for _, f := range files {
		if err := st.AddIndexFile(ctx, f); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// IndexCovers reports whether ix covers every fragment of this version as
// it is (no fragment added, no newer deletion file). No I/O.
func (ds *Dataset) IndexCovers(ix Index) bool {
	ord, newer := ds.FragmentCoverage(ix)
	for i := range ord {
		if ord[i] < 0 || newer[i] {
			return false
		}
	}
	return true
}

// RowAt names one row of a version: its fragment (index in the version's
// fragment list) and physical row.
type RowAt struct {
	Fragment int
	Row      uint32
}

// tailBytes is how much of a fragment's end RowsAt fetches for its footer
// (a larger footer costs one more request).
const tailBytes = 64 << 10

// RowsAt returns the live rows at the given places as one record with the
// full schema (in fragment order, then physical order): what an index that
// records physical rows fetches instead of looking keys up. Per fragment
// holding a row it costs one ranged GET of the file's tail (its footer,
// cached) and one ranged GET per row group holding a row (the span of
// that row group's column chunks), in parallel across fragments.
func (ds *Dataset) RowsAt(ctx context.Context, at []RowAt) (arrow.Record, error) {
	byFrag := map[int][]int64{}
	for _, a := range at {
		if a.Fragment < 0 || a.Fragment >= len(ds.m.Fragments) {
			return nil, errorf(ErrInvalid, "RowsAt: fragment %d of %d", a.Fragment, len(ds.m.Fragments))
		}
		byFrag[a.Fragment] = append(byFrag[a.Fragment], int64(a.Row))
	}
	var read []Fragment
	var offs [][]int64
	for i, f := range ds.m.Fragments {
		if o := byFrag[i]; len(o) > 0 {
			slices.Sort(o)
			read = append(read, f)
			offs = append(offs, slices.Compact(o))
		}
	}
	all, _ := fieldIndices(ds.schema, nil)
	parts := make([][]arrow.Record, len(read))
	err := eachFragment(ctx, read, func(ctx context.Context, i int, f Fragment) error {
		pf := &prefetchedFile{rangedFile: rangedFile{ctx: ctx, store: ds.store, key: ds.path + "/" + f.Path, size: f.Size}}
		if err := pf.tail(ds.cache); err != nil {
			return err
		}
		ff, err := openParquet(pf)
		if err != nil {
			return err
		}
		starts := ff.rowGroupStarts()
		want := map[int64]bool{}
		var rgs []int
		for _, o := range offs[i] {
			want[o] = true
			g := sort.Search(len(starts), func(i int) bool { return starts[i] > o }) - 1
			if g >= 0 && (len(rgs) == 0 || rgs[len(rgs)-1] != g) {
				rgs = append(rgs, g)
			}
		}
		if err := pf.rowGroups(ff, rgs); err != nil {
			return err
		}
		recs, _, err := ds.readMatching(ctx, f, ff, all, rgs, Predicate{}, func(p int64) bool { return want[p] })
		parts[i] = recs
		return err
	})
	var out []arrow.Record
	for _, p := range parts {
		out = append(out, p...)
	}
	defer releaseAll(out)
	if err != nil {
		return nil, err
	}
	return concatRecords(ds.schema, out)
}

// prefetchedFile is a rangedFile that serves reads from ranges fetched
// ahead (the footer, whole row groups) and falls back to a ranged GET.
type prefetchedFile struct {
	rangedFile
	mu     sync.Mutex
	ranges []fetchedRange
}

type fetchedRange struct {
	off int64
	b   []byte
}

func (p *prefetchedFile) ReadAt(b []byte, off int64) (int, error) {
	p.mu.Lock()
	for _, r := range p.ranges {
		if off >= r.off && off+int64(len(b)) <= r.off+int64(len(r.b)) {
			n := copy(b, r.b[off-r.off:])
			p.mu.Unlock()
			return n, nil
		}
	}
	p.mu.Unlock()
	return p.rangedFile.ReadAt(b, off)
}

func (p *prefetchedFile) Read(b []byte) (int, error) {
	n, err := p.ReadAt(b, p.pos)
	p.pos += int64(n)
	return n, err
}

func (p *prefetchedFile) fetch(off, n int64) ([]byte, error) {
	b, err := p.store.GetRange(p.ctx, p.key, off, n)
	if err != nil {
		return nil, fmt.Errorf("read fragment: %w", err)
	}
	return b, nil
}

// tail fetches the file's last tailBytes (cached in c: files are immutable).
func (p *prefetchedFile) tail(c *Cache) error {
	off := max(p.size-tailBytes, 0)
	key := fmt.Sprintf("%s#tail%d", p.key, off)
	if v, ok := c.get(key); ok {
		p.ranges = append(p.ranges, fetchedRange{off, v.([]byte)})
		return nil
	}
	b, err := p.fetch(off, p.size-off)
	if err != nil {
		return err
	}
	c.put(key, b, int64(len(b))+64)
	p.ranges = append(p.ranges, fetchedRange{off, b})
	return nil
}

// rowGroups fetches the column-chunk span of each row group in rgs (one
// ranged GET each, in parallel).
func (p *prefetchedFile) rowGroups(ff *fragmentFile, rgs []int) error {
	md := ff.fr.ParquetReader().MetaData()
	errs := make([]error, len(rgs))
	var wg sync.WaitGroup
	for i, g := range rgs {
		rg := md.RowGroup(g)
		lo, hi := int64(-1), int64(0)
		for c := 0; c < rg.NumColumns(); c++ {
			cc, err := rg.ColumnChunk(c)
			if err != nil {
				return fmt.Errorf("%w: parquet: %v", ErrCorrupt, err)
			}
			start := cc.DataPageOffset()
			if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 && cc.DictionaryPageOffset() < start {
				start = cc.DictionaryPageOffset()
			}
			if lo < 0 || start < lo {
				lo = start
			}
			hi = max(hi, start+cc.TotalCompressedSize())
		}
		if lo < 0 || hi <= lo || hi > p.size {
			continue // leave it to ranged reads
		}
		wg.Add(1)
		go func(i int, lo, hi int64) {
			defer wg.Done()
			b, err := p.fetch(lo, hi-lo)
			if err != nil {
				errs[i] = err
				return
			}
			p.mu.Lock()
			p.ranges = append(p.ranges, fetchedRange{lo, b})
			p.mu.Unlock()
		}(i, lo, hi)
	}
	wg.Wait()
	return errors.Join(errs...)
}
