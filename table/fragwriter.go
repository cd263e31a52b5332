package table

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// FragmentWriter encodes the rows of one future fragment as they arrive,
// so a bulk writer holds compressed Parquet, not rows. Write makes each
// call row groups of its own (at most rowGroupRows rows each); Append adds
// rows to the open row group, which EndRowGroup ends (a bulk writer whose
// batches of rows are not row-group sized). Nothing is stored until the
// writer is staged (StageAppendFragments), and a writer can be staged
// again by a later attempt (each staging Puts its bytes under a new name).
//
// The Parquet writer is made by the first batch of rows: the plain columns
// given, and any string column whose values are (nearly) all distinct in
// that batch (distinctColumns, as a compaction decides), are written
// without a dictionary.
type FragmentWriter struct {
	schema    *arrow.Schema
	key       string
	buf       bytes.Buffer
	w         *pqarrow.FileWriter
	rows      int64
	stats     []ColumnStats
	unordered []bool
	keys      []string
	closed    bool
	plain     []string
	pschema   *arrow.Schema   // the schema as written (parquetSchema)
	blobs     map[string]bool // store keys of the stored Blob values written
	// endGroup: the next Append starts a new row group.
	endGroup bool
	// track, when set, holds the writer's rows' dense endpoints
	// (Endpoints.Track).
	track *trackedEnds
}

// NewFragmentWriter starts a fragment of schema s whose key column is
// keyColumn. The key column and the plain columns (columns of unique
// values) are written without a dictionary.
func NewFragmentWriter(s *arrow.Schema, keyColumn string, plain ...string) (*FragmentWriter, error) {
	if err := checkKeyColumn(s, keyColumn); err != nil {
		return nil, err
	}
	fw := &FragmentWriter{schema: s, key: keyColumn, unordered: make([]bool, s.NumFields()), plain: plain}
	fw.pschema = parquetSchema(s)
	return fw, nil
}

// open makes the Parquet writer, first is the first batch of rows (nil
// for a writer closed without any).
func (fw *FragmentWriter) open(first arrow.Record) error {
	plain := append([]string{fw.key}, fw.plain...)
	if first != nil {
		plain = append(plain, distinctColumns(fw.schema, []arrow.Record{first})...)
	}
	w, err := pqarrow.NewFileWriter(fw.pschema, &fw.buf, writerProps(plain), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return fmt.Errorf("parquet writer: %w", err)
	}
	fw.w = w
	return nil
}

// Write encodes rec (of the writer's schema, every key non-null) as row
// groups of its own.
func (fw *FragmentWriter) Write(rec arrow.Record) error {
	return fw.write(rec, false)
}

// Append adds rec's rows (of the writer's schema, every key non-null) to
// the open row group, starting one when there is none; a row group that
// reaches rowGroupRows rows is ended and the rest go to the next.
func (fw *FragmentWriter) Append(rec arrow.Record) error {
	return fw.write(rec, true)
}

// EndRowGroup ends the open row group: the next Append starts a new one.
func (fw *FragmentWriter) EndRowGroup() { fw.endGroup = true }

func (fw *FragmentWriter) write(rec arrow.Record, buffered bool) error {
	if fw.closed {
		return errorf(ErrInvalid, "fragment writer is closed")
	}
	if err := validateRecords(fw.schema, fw.key, []arrow.Record{rec}); err != nil {
		return err
	}
	n := rec.NumRows()
	if n == 0 {
		return nil
	}
	if fw.blobs == nil {
		fw.blobs = map[string]bool{}
	}
	if err := checkBlobs(fw.schema, rec, fw.blobs); err != nil {
		return err
	}
	if fw.w == nil {
		if err := fw.open(rec); err != nil {
			return err
		}
	}
	pr := toParquet(fw.pschema, rec)
	var err error
	switch {
	case !buffered:
		err = fw.w.Write(pr)
		fw.endGroup = true // an Append after it must not add to its last group
	case fw.endGroup:
		fw.endGroup = false
		if err = fw.w.NewBufferedRowGroupChecked(); err == nil {
			err = fw.w.WriteBuffered(pr)
		}
	default:
		err = fw.w.WriteBuffered(pr)
	}
	pr.Release()
	if err != nil {
		return fmt.Errorf("parquet write: %w", err)
	}
	st := computeStats(fw.schema, []arrow.Record{rec})
	for i := range st {
		// A column with values but no min/max in this record holds NaN
		// or infinities: it has no statistics in the whole fragment.
		if st[i].Min == nil && st[i].NullCount < n && scalarKindOf(fw.schema.Field(i).Type) != "" {
			fw.unordered[i] = true
		}
	}
	if fw.stats == nil {
		fw.stats = st
	} else {
		for i := range st {
			fw.stats[i].NullCount += st[i].NullCount
			if st[i].Min != nil {
				mergeStat(&fw.stats[i], *st[i].Min, *st[i].Max)
			}
		}
	}
	if fw.rows+n <= inlineKeyRows {
		fw.keys = append(fw.keys, sortedKeys([]arrow.Record{rec}, fw.schema.FieldIndices(fw.key)[0])...)
	} else {
		fw.keys = nil
	}
	fw.rows += n
	return nil
}

// Without returns a closed writer holding this closed writer's rows except
// those drop picks (by row number in the file, from 0), in order. It
// decodes the file, so it is for rare repairs (a load file that gives an
// edge id twice keeps its last line), not the common path. With nothing
// dropped it returns fw itself.
func (fw *FragmentWriter) Without(drop func(row int64) bool) (*FragmentWriter, error) {
	if !fw.closed {
		return nil, errorf(ErrInvalid, "fragment writer is not closed")
	}
	pr, err := file.NewParquetReader(bytes.NewReader(fw.buf.Bytes()))
	if err != nil {
		return nil, fmt.Errorf("read back a fragment: %w", err)
	}
	defer pr.Close()
	fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: rowGroupRows}, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("read back a fragment: %w", err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		return nil, fmt.Errorf("read back a fragment: %w", err)
	}
	defer tbl.Release()
	out, err := NewFragmentWriter(fw.schema, fw.key, fw.plain...)
	if err != nil {
		return nil, err
	}
	tr := array.NewTableReader(tbl, rowGroupRows)
	defer tr.Release()
	var row int64
	dropped := false
	for tr.Next() {
		rec := fromParquet(tr.RecordBatch())
		var start int64
		flush := func(end int64) error {
			if end <= start {
				return nil
			}
			part := rec.NewSlice(start, end)
			defer part.Release()
			// The file's schema carries Parquet field ids; write with ours.
			same := array.NewRecordBatch(fw.schema, part.Columns(), part.NumRows())
			defer same.Release()
			return out.Write(same)
		}
		for i := int64(0); i < rec.NumRows(); i++ {
			if drop(row + i) {
				dropped = true
				if err := flush(i); err != nil {
					return nil, err
				}
				start = i + 1
			}
		}
		err := flush(rec.NumRows())
		row += rec.NumRows()
		rec.Release()
		if err != nil {
			return nil, err
		}
	}
	if err := tr.Err(); err != nil {
		return nil, err
	}
	if err := out.Close(); err != nil {
		return nil, err
	}
	if !dropped {
		return fw, nil
	}
	return out, nil
}

// KeepLast drops, across the closed writers fws taken in order as one
// sequence of rows, every row whose key is in dups except the last row of
// that key. Writers holding none of the dropped rows are returned as they
// are.
func KeepLast(fws []*FragmentWriter, dups map[string]bool) ([]*FragmentWriter, error) {
	if len(dups) == 0 {
		return fws, nil
	}
	type pos struct{ w, row int }
	last := map[string]pos{}
	seen := make([][]pos, len(fws)) // the rows of listed keys in each writer
	keys := make([][]string, len(fws))
	for i, fw := range fws {
		col, err := fw.keyColumn()
		if err != nil {
			return nil, err
		}
		for r, k := range col {
			if dups[k] {
				last[k] = pos{i, r}
				seen[i] = append(seen[i], pos{i, r})
				keys[i] = append(keys[i], k)
			}
		}
	}
	out := make([]*FragmentWriter, len(fws))
	for i, fw := range fws {
		drop := map[int64]bool{}
		for j, p := range seen[i] {
			if last[keys[i][j]] != p {
				drop[int64(p.row)] = true
			}
		}
		if len(drop) == 0 {
			out[i] = fw
			continue
		}
		nw, err := fw.Without(func(row int64) bool { return drop[row] })
		if err != nil {
			return nil, err
		}
		out[i] = nw
	}
	return out, nil
}

// keyColumn decodes the key column of a closed writer's file.
func (fw *FragmentWriter) keyColumn() ([]string, error) {
	pr, err := file.NewParquetReader(bytes.NewReader(fw.buf.Bytes()))
	if err != nil {
		return nil, fmt.Errorf("read back a fragment: %w", err)
	}
	defer pr.Close()
	fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: rowGroupRows}, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("read back a fragment: %w", err)
	}
	idx := fw.schema.FieldIndices(fw.key)[0]
	cr, err := fr.GetColumn(context.Background(), idx)
	if err != nil {
		return nil, fmt.Errorf("read back a fragment's keys: %w", err)
	}
	groups := make([]int, pr.NumRowGroups())
	for i := range groups {
		groups[i] = i
	}
	col, err := fr.ReadColumn(groups, cr)
	if err != nil {
		return nil, fmt.Errorf("read back a fragment's keys: %w", err)
	}
	defer col.Release()
	var out []string
	for _, ch := range col.Chunks() {
		sa, ok := ch.(*array.String)
		if !ok {
			return nil, errorf(ErrInvalid, "key column %s is not a string column", fw.key)
		}
		for i := 0; i < sa.Len(); i++ {
			out = append(out, sa.Value(i))
		}
	}
	return out, nil
}

// Rows is how many rows were written.
func (fw *FragmentWriter) Rows() int64 { return fw.rows }

// Size is the encoded size so far (the file's size once closed).
func (fw *FragmentWriter) Size() int64 { return int64(fw.buf.Len()) }

// Close finishes the file. A closed writer accepts no more rows.
func (fw *FragmentWriter) Close() error {
	if fw.closed {
		return nil
	}
	fw.closed = true
	if fw.w == nil {
		if err := fw.open(nil); err != nil {
			return err
		}
	}
	if err := fw.w.Close(); err != nil {
		return fmt.Errorf("parquet close: %w", err)
	}
	return nil
}

func (fw *FragmentWriter) fragment(id, rel string, blobs []string) Fragment {
	stats := make([]ColumnStats, len(fw.stats))
	copy(stats, fw.stats)
	for i := range stats {
		if fw.unordered[i] {
			stats[i].Min, stats[i].Max = nil, nil
		}
	}
	f := Fragment{ID: id, Path: rel, Rows: fw.rows, Size: int64(fw.buf.Len()), Stats: stats, Blobs: blobs}
	if fw.rows <= inlineKeyRows {
		keys := append([]string{}, fw.keys...)
		sort.Strings(keys)
		f.Keys = keys
	}
	return f
}

// StageAppendFragments stages the closed writers' files as new fragments of
// one version (one Put each), like StageAppend. Writers with no rows are
// skipped; none with rows is an Empty stage.
func (ds *Dataset) StageAppendFragments(ctx context.Context, fws ...*FragmentWriter) (*Staged, error) {
	n, err := ds.checkWriters(fws)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return emptyStage(ds, OpAppend), nil
	}
	st, m := ds.newStage()
	if err := ds.putFragments(ctx, st, m, fws); err != nil {
		return nil, err
	}
	st.finish(m, ds.m.Version, OpAppend)
	return st, nil
}

// StageOverwriteFragments stages a version holding exactly the closed
// writers' rows (none: an empty, zero-fragment version), like
// StageOverwrite. Indexes are dropped.
func (ds *Dataset) StageOverwriteFragments(ctx context.Context, fws ...*FragmentWriter) (*Staged, error) {
	if _, err := ds.checkWriters(fws); err != nil {
		return nil, err
	}
	st, m := ds.newStage()
	m.Fragments = []Fragment{}
	m.Indexes = nil
	if err := ds.putFragments(ctx, st, m, fws); err != nil {
		return nil, err
	}
	st.finish(m, ds.m.Version, OpOverwrite)
	return st, nil
}

// checkWriters checks the writers fit the dataset and counts their rows.
func (ds *Dataset) checkWriters(fws []*FragmentWriter) (int64, error) {
	var n int64
	for _, fw := range fws {
		if !fw.closed {
			return 0, errorf(ErrInvalid, "stage a fragment writer: it is not closed")
		}
		if !sameSchema(ds.schema, fw.schema) {
			return 0, errorf(ErrInvalid, "fragment has schema %s, the dataset has %s", fw.schema, ds.schema)
		}
		if fw.key != ds.m.KeyColumn {
			return 0, errorf(ErrInvalid, "fragment key column %q, the dataset's is %q", fw.key, ds.m.KeyColumn)
		}
		n += fw.rows
	}
	return n, nil
}

// putFragments stores each writer with rows as a new fragment of m.
func (ds *Dataset) putFragments(ctx context.Context, st *Staged, m *Manifest, fws []*FragmentWriter) error {
	root := strings.TrimPrefix(ds.root(), ds.path+"/")
	for _, fw := range fws {
		if fw.rows == 0 {
			continue
		}
		blobs, err := checkBlobRefs(ds.path, fw.blobs)
		if err != nil {
			return err
		}
		id := newUUID()
		rel := root + dirData + "/" + id + ".parquet"
		key := ds.path + "/" + rel
		if _, err := ds.store.Put(ctx, key, fw.buf.Bytes()); err != nil {
			return fmt.Errorf("write fragment: %w", err)
		}
		m.Fragments = append(m.Fragments, fw.fragment(id, rel, blobs))
		st.Files = append(st.Files, key)
		if fw.track != nil && int64(len(fw.track.src)) == fw.rows {
			if st.tracked == nil {
				st.tracked = map[string]*trackedEnds{}
			}
			st.tracked[id] = fw.track
		}
	}
	return nil
}
