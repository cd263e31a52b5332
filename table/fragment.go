package table

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/omnigraph-go/omnigraph/backend"
)

// rowGroupRows bounds a Parquet row group, so a point lookup reads one group
// of the columns it needs rather than the whole file.
const rowGroupRows = 16 * 1024

// writerProps are the Parquet properties of every fragment: zstd, row groups
// of rowGroupRows, and no dictionary for plain (the key column and any other
// column of unique values: a dictionary of distinct values only costs time
// and space).
func writerProps(plain []string) *parquet.WriterProperties {
	opts := []parquet.WriterProperty{
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithMaxRowGroupLength(rowGroupRows),
		parquet.WithAllocator(memory.DefaultAllocator),
	}
	for _, c := range plain {
		opts = append(opts, parquet.WithDictionaryFor(c, false))
	}
	return parquet.NewWriterProperties(opts...)
}

// encodeParquet writes recs (all of schema s) as one zstd Parquet file;
// keyColumn is written without a dictionary.
func encodeParquet(s *arrow.Schema, keyColumn string, recs []arrow.Record) ([]byte, error) {
	var buf bytes.Buffer
	ps := parquetSchema(s)
	w, err := pqarrow.NewFileWriter(ps, &buf, writerProps(append([]string{keyColumn}, distinctColumns(s, recs)...)), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return nil, fmt.Errorf("parquet writer: %w", err)
	}
	for _, r := range recs {
		if r.NumRows() == 0 {
			continue
		}
		// WriteBuffered fills row groups up to rowGroupRows across
		// records; Write would start a row group per record, and a
		// compaction of N one-row fragments would write N row groups
		// (about 1.2 KB of page headers and statistics each).
		pr := toParquet(ps, r)
		err := w.WriteBuffered(pr)
		pr.Release()
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("parquet write: %w", err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("parquet close: %w", err)
	}
	return buf.Bytes(), nil
}

// distinctColumns names the string columns of recs whose values are
// (nearly) all distinct in a sample of the first rows, as a column of
// unique values is: a compaction writes them without a dictionary, as the
// load path writes its unique columns (a dictionary of distinct strings
// made a rewritten 100k-row fragment 2.5x the size of the loaded one).
func distinctColumns(s *arrow.Schema, recs []arrow.Record) []string {
	const sample, minSample = 2048, 64
	var out []string
	for c := 0; c < s.NumFields(); c++ {
		if !isStringType(s.Field(c).Type) {
			continue
		}
		seen := map[string]struct{}{}
		n := 0
		for _, r := range recs {
			sa, ok := r.Column(c).(stringArray)
			if !ok {
				break
			}
			for j := 0; j < sa.Len() && n < sample; j++ {
				if !sa.IsNull(j) {
					seen[sa.Value(j)] = struct{}{}
					n++
				}
			}
			if n >= sample {
				break
			}
		}
		if n >= minSample && len(seen)*10 >= n*9 {
			out = append(out, s.Field(c).Name)
		}
	}
	return out
}

// writeFragment stages recs as a new fragment file under root (a branch
// root) with a fresh unique name. The Put of a fresh name never overwrites.
// A fragment of at most inlineKeyRows rows carries its sorted keys in the
// manifest (Fragment.Keys), so a key check never reads it.
func writeFragment(ctx context.Context, store backend.StorageAdapter, path, root string, s *arrow.Schema, keyColumn string, recs []arrow.Record) (Fragment, string, error) {
	id := newUUID()
	rel := strings.TrimPrefix(root, path+"/") + dirData + "/" + id + ".parquet"
	// Blob values go to the blob area first (the fragment names them):
	// a crash in between leaves unreferenced pieces, never a row whose
	// bytes are missing.
	recs, blobs, _, err := prepareBlobs(ctx, store, path, s, recs)
	if err != nil {
		return Fragment{}, "", err
	}
	defer releaseAll(recs)
	data, err := encodeParquet(s, keyColumn, recs)
	if err != nil {
		return Fragment{}, "", err
	}
	key := path + "/" + rel
	if _, err := store.Put(ctx, key, data); err != nil {
		return Fragment{}, "", fmt.Errorf("write fragment: %w", err)
	}
	var rows int64
	for _, r := range recs {
		rows += r.NumRows()
	}
	f := Fragment{ID: id, Path: rel, Rows: rows, Size: int64(len(data)), Stats: computeStats(s, recs), Blobs: blobs}
	if idx := s.FieldIndices(keyColumn); rows <= inlineKeyRows && len(idx) == 1 {
		f.Keys = sortedKeys(recs, idx[0])
	}
	return f, key, nil
}

// inlineKeyRows bounds the fragments whose keys the manifest carries: the
// small fragments many one-row commits leave until a compaction folds them
// into the key index.
const inlineKeyRows = 64

func sortedKeys(recs []arrow.Record, col int) []string {
	keys := []string{}
	for _, r := range recs {
		sa, ok := r.Column(col).(stringArray)
		if !ok {
			return nil
		}
		for j := 0; j < sa.Len(); j++ {
			keys = append(keys, sa.Value(j))
		}
	}
	sort.Strings(keys)
	return keys
}

// mayHoldKey reports whether fragment f can hold a row whose key is one of
// keys (sorted), by its inline keys when it has them; ok is false when it
// has none (statistics decide).
func (f Fragment) mayHoldKey(keys []string) (may, ok bool) {
	if f.Keys == nil {
		return false, false
	}
	for _, k := range keys {
		i := sort.SearchStrings(f.Keys, k)
		if i < len(f.Keys) && f.Keys[i] == k {
			return true, true
		}
	}
	return false, true
}

// computeStats returns min/max/null counts of every column of recs.
func computeStats(s *arrow.Schema, recs []arrow.Record) []ColumnStats {
	out := make([]ColumnStats, s.NumFields())
	for i, f := range s.Fields() {
		st := ColumnStats{Column: f.Name}
		ordered := scalarKindOf(f.Type) != ""
		unordered := false
		for _, r := range recs {
			col := r.Column(i)
			st.NullCount += int64(col.NullN())
			if !ordered {
				continue
			}
			if sa, ok := col.(stringArray); ok {
				// Strings without building a Scalar per row.
				lo, hi, any := "", "", false
				for j := 0; j < sa.Len(); j++ {
					if sa.IsNull(j) {
						continue
					}
					v := sa.Value(j)
					if !any || v < lo {
						lo = v
					}
					if !any || v > hi {
						hi = v
					}
					any = true
				}
				if any {
					mergeStat(&st, Scalar{Kind: "string", Str: lo}, Scalar{Kind: "string", Str: hi})
				}
				continue
			}
			for j := 0; j < col.Len(); j++ {
				v, ok := scalarAt(col, j)
				if !ok {
					continue
				}
				if v.Kind == "float" && (math.IsNaN(v.Float) || math.IsInf(v.Float, 0)) {
					// JSON cannot hold them and NaN has no order: no min/max
					// for this column (pushdown then reads the fragment).
					unordered = true
					continue
				}
				mergeStat(&st, v, v)
			}
		}
		if unordered {
			st.Min, st.Max = nil, nil
		}
		out[i] = st
	}
	return out
}

func mergeStat(st *ColumnStats, lo, hi Scalar) {
	if st.Min == nil {
		l, h := lo, hi
		st.Min, st.Max = &l, &h
		return
	}
	if c, ok := compareScalars(lo, *st.Min); ok && c < 0 {
		l := lo
		st.Min = &l
	}
	if c, ok := compareScalars(hi, *st.Max); ok && c > 0 {
		h := hi
		st.Max = &h
	}
}

func statsMap(f Fragment) map[string]ColumnStats {
	m := make(map[string]ColumnStats, len(f.Stats))
	for _, s := range f.Stats {
		m[s.Column] = s
	}
	return m
}

// rangedFile reads an object with GetRange requests, so the Parquet reader
// fetches only the footer and the column chunks it needs.
type rangedFile struct {
	ctx   context.Context
	store backend.StorageAdapter
	key   string
	size  int64
	pos   int64
}

func (r *rangedFile) ReadAt(p []byte, off int64) (int, error) {
	if off >= r.size {
		return 0, io.EOF
	}
	b, err := r.store.GetRange(r.ctx, r.key, off, int64(len(p)))
	if err != nil {
		return 0, err
	}
	n := copy(p, b)
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (r *rangedFile) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
		r.pos = offset
	case io.SeekCurrent:
		r.pos += offset
	case io.SeekEnd:
		r.pos = r.size + offset
	}
	return r.pos, nil
}

func (r *rangedFile) Read(p []byte) (int, error) {
	n, err := r.ReadAt(p, r.pos)
	r.pos += int64(n)
	return n, err
}

// fragmentFile is an open Parquet fragment.
type fragmentFile struct {
	fr *pqarrow.FileReader
}

func openParquet(src parquet.ReaderAtSeeker) (*fragmentFile, error) {
	pr, err := file.NewParquetReader(src)
	if err != nil {
		return nil, fmt.Errorf("%w: parquet: %v", ErrCorrupt, err)
	}
	// Parallel: the columns of a row group decode at once (a cold query
	// reading a few columns of one fragment uses every core).
	fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: rowGroupRows, Parallel: true}, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("%w: parquet: %v", ErrCorrupt, err)
	}
	return &fragmentFile{fr: fr}, nil
}

// loadFragment GETs a whole fragment (one request) and opens it.
func loadFragment(ctx context.Context, store backend.StorageAdapter, path string, f Fragment) (*fragmentFile, error) {
	b, _, err := store.Get(ctx, path+"/"+f.Path)
	if err != nil {
		return nil, fmt.Errorf("read fragment %s: %w", f.ID, err)
	}
	return openParquet(bytes.NewReader(b))
}

// openFragmentRanged opens a fragment for ranged reads.
func openFragmentRanged(ctx context.Context, store backend.StorageAdapter, path string, f Fragment) (*fragmentFile, error) {
	return openParquet(&rangedFile{ctx: ctx, store: store, key: path + "/" + f.Path, size: f.Size})
}

// leaves maps field indices of the file's schema to Parquet leaf columns.
func (ff *fragmentFile) leaves(fields []int) []int {
	var out []int
	var walk func(sf pqarrow.SchemaField)
	walk = func(sf pqarrow.SchemaField) {
		if sf.IsLeaf() {
			out = append(out, sf.ColIndex)
		}
		for _, c := range sf.Children {
			walk(c)
		}
	}
	for _, i := range fields {
		walk(ff.fr.Manifest.Fields[i])
	}
	return out
}

// rowGroupStarts returns the first row offset of every row group.
func (ff *fragmentFile) rowGroupStarts() []int64 {
	md := ff.fr.ParquetReader().MetaData()
	starts := make([]int64, md.NumRowGroups())
	var n int64
	for i := range starts {
		starts[i] = n
		n += md.RowGroup(i).NumRows()
	}
	return starts
}

// read returns the given fields (by index in the file schema) of the given
// row groups (nil: all) as records, concatenated in row order.
func (ff *fragmentFile) read(ctx context.Context, fields, rowGroups []int) ([]arrow.Record, error) {
	if ff.fr.ParquetReader().NumRowGroups() == 0 {
		return nil, nil
	}
	rr, err := ff.fr.GetRecordReader(ctx, ff.leaves(fields), rowGroups)
	if err != nil {
		return nil, fmt.Errorf("read parquet: %w", err)
	}
	defer rr.Release()
	var out []arrow.Record
	for rr.Next() {
		out = append(out, fromParquet(rr.RecordBatch()))
	}
	if err := rr.Err(); err != nil && err != io.EOF {
		releaseAll(out)
		return nil, fmt.Errorf("read parquet: %w", err)
	}
	return out, nil
}

func releaseAll(recs []arrow.Record) {
	for _, r := range recs {
		r.Release()
	}
}

// takeRows builds a record of the selected rows (ascending) of rec.
func takeRows(rec arrow.Record, rows []int) (arrow.Record, error) {
	if len(rows) == int(rec.NumRows()) {
		rec.Retain()
		return rec, nil
	}
	// Contiguous runs become slices, then each column is concatenated.
	type run struct{ lo, hi int }
	var runs []run
	for _, r := range rows {
		if n := len(runs); n > 0 && runs[n-1].hi == r {
			runs[n-1].hi++
			continue
		}
		runs = append(runs, run{r, r + 1})
	}
	cols := make([]arrow.Array, rec.NumCols())
	for c := range cols {
		parts := make([]arrow.Array, len(runs))
		for i, rn := range runs {
			parts[i] = array.NewSlice(rec.Column(c), int64(rn.lo), int64(rn.hi))
		}
		var err error
		if len(parts) == 0 {
			cols[c] = array.MakeArrayOfNull(memory.DefaultAllocator, rec.Schema().Field(c).Type, 0)
		} else {
			cols[c], err = array.Concatenate(parts, memory.DefaultAllocator)
		}
		for _, p := range parts {
			p.Release()
		}
		if err != nil {
			for _, a := range cols[:c] {
				a.Release()
			}
			return nil, fmt.Errorf("select rows: %w", err)
		}
	}
	out := array.NewRecordBatch(rec.Schema(), cols, int64(len(rows)))
	for _, a := range cols {
		a.Release()
	}
	return out, nil
}
