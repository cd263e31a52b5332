package table

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/omnigraph-go/omnigraph/backend"
)

// deletions returns the fragment's deletion vector (nil when it has none).
// Deletion files are immutable: each is fetched once per cache.
func (ds *Dataset) deletions(ctx context.Context, f Fragment) (*roaring.Bitmap, error) {
	if f.Deletion == nil {
		return nil, nil
	}
	key := ds.path + "/" + f.Deletion.Path
	var b []byte
	if v, ok := ds.cache.get(key); ok {
		b = v.([]byte)
	} else {
		var err error
		b, _, err = ds.store.Get(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("read deletion vector of fragment %s: %w", f.ID, err)
		}
		ds.cache.put(key, b, int64(len(b))+64)
	}
	return decodeDeletions(f, b)
}

// decodeDeletions is the one decoder of a stored deletion vector.
func decodeDeletions(f Fragment, b []byte) (*roaring.Bitmap, error) {
	bm := roaring.New()
	if err := bm.UnmarshalBinary(b); err != nil {
		return nil, errorf(ErrCorrupt, "deletion vector of fragment %s: %v", f.ID, err)
	}
	return bm, nil
}

// DeletedRows reads fragment f's deletion vector from the dataset at path
// (one GET) and returns the deleted row offsets, ascending; nil when f has
// none. Exporters that map deletion vectors to another format use it.
func DeletedRows(ctx context.Context, store backend.StorageAdapter, path string, f Fragment) ([]uint32, error) {
	if f.Deletion == nil {
		return nil, nil
	}
	b, _, err := store.Get(ctx, path+"/"+f.Deletion.Path)
	if err != nil {
		return nil, fmt.Errorf("read deletion vector of fragment %s: %w", f.ID, err)
	}
	bm, err := decodeDeletions(f, b)
	if err != nil {
		return nil, err
	}
	return bm.ToArray(), nil
}

// fragmentData returns fragment f decoded whole (every column, every row
// group): from the cache, or with one GET. Fragments are immutable, so one
// decoded copy serves every version that references the file.
func (ds *Dataset) fragmentData(ctx context.Context, f Fragment) (*decodedFragment, error) {
	key := ds.path + "/" + f.Path
	if v, ok := ds.cache.get(key); ok {
		return v.(*decodedFragment), nil
	}
	ff, err := loadFragment(ctx, ds.store, ds.path, f)
	if err != nil {
		return nil, err
	}
	all := make([]int, len(ff.fr.Manifest.Fields))
	for i := range all {
		all[i] = i
	}
	recs, err := ff.read(ctx, all, nil)
	if err != nil {
		return nil, err
	}
	d := &decodedFragment{recs: recs}
	ds.cache.put(key, d, d.bytes())
	return d, nil
}

// readParallelism bounds the fragment reads one scan keeps in flight.
const readParallelism = 16

// eachFragment runs fn for every fragment, readParallelism at a time: each
// wave is sent together and the next starts when it has finished, so a
// cold read of F fragments costs about F/16 serial round trips. It returns
// the first error in fragment order.
func eachFragment(ctx context.Context, frags []Fragment, fn func(ctx context.Context, i int, f Fragment) error) error {
	if len(frags) == 1 {
		return fn(ctx, 0, frags[0])
	}
	errs := make([]error, len(frags))
	for lo := 0; lo < len(frags); lo += readParallelism {
		hi := min(lo+readParallelism, len(frags))
		var wg sync.WaitGroup
		for i := lo; i < hi; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				errs[i] = fn(ctx, i, frags[i])
			}(i)
		}
		wg.Wait()
		for _, err := range errs[lo:hi] {
			if err != nil {
				return err
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// fieldIndices resolves column names against the schema (nil: all).
func fieldIndices(s *arrow.Schema, cols []string) ([]int, error) {
	if cols == nil {
		out := make([]int, s.NumFields())
		for i := range out {
			out[i] = i
		}
		return out, nil
	}
	out := make([]int, len(cols))
	for i, c := range cols {
		idx := s.FieldIndices(c)
		if len(idx) == 0 {
			return nil, errorf(ErrInvalid, "no column %q in the schema (columns: %v)", c, fieldNames(s))
		}
		out[i] = idx[0]
	}
	return out, nil
}

func fieldNames(s *arrow.Schema) []string {
	out := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		out[i] = f.Name
	}
	return out
}

// neededFields is the sorted union of the projection and the filter columns.
func neededFields(s *arrow.Schema, proj []int, filter Predicate) []int {
	set := map[int]bool{}
	for _, i := range proj {
		set[i] = true
	}
	cols := map[string]bool{}
	filter.columns(cols)
	for c := range cols {
		if idx := s.FieldIndices(c); len(idx) > 0 {
			set[idx[0]] = true
		}
	}
	out := make([]int, 0, len(set))
	for i := range set {
		out = append(out, i)
	}
	sort.Ints(out)
	return out
}

// physicalMapper maps the i-th row read from a set of row groups to its
// physical offset in the fragment.
func physicalMapper(starts []int64, total int64, rgs []int) func(int64) int64 {
	if rgs == nil {
		return func(i int64) int64 { return i }
	}
	type span struct{ logical, physical, n int64 }
	var spans []span
	var l int64
	for _, g := range rgs {
		end := total
		if g+1 < len(starts) {
			end = starts[g+1]
		}
		spans = append(spans, span{l, starts[g], end - starts[g]})
		l += end - starts[g]
	}
	return func(i int64) int64 {
		k := sort.Search(len(spans), func(k int) bool { return spans[k].logical+spans[k].n > i })
		if k == len(spans) {
			return -1
		}
		return spans[k].physical + i - spans[k].logical
	}
}

// readMatching reads fields (sorted dataset field indices) of fragment f
// and keeps live rows that match filter and, when keep is non-nil, whose
// physical offset keep accepts. With ff nil the fields come from the cache
// (one GET of the file on a miss, sent together with the deletion
// vector's; only those columns are decoded, see fragmentColumns);
// otherwise only row groups rgs (nil: all) are read through ff. It returns
// the kept rows as records of the fields plus their physical offsets.
func (ds *Dataset) readMatching(ctx context.Context, f Fragment, ff *fragmentFile, fields, rgs []int, filter Predicate, keep func(int64) bool) ([]arrow.Record, [][]int64, error) {
	var del *roaring.Bitmap
	var recs []arrow.Record
	var phys func(int64) int64
	if ff == nil {
		var derr error
		done := make(chan struct{})
		go func() {
			defer close(done)
			del, derr = ds.deletions(ctx, f)
		}()
		cols, err := ds.fragmentColumns(ctx, f, fields)
		<-done
		if err != nil {
			return nil, nil, err
		}
		if derr != nil {
			releaseAll(cols)
			return nil, nil, derr
		}
		recs = cols
		phys = func(i int64) int64 { return i }
	} else {
		var err error
		if del, err = ds.deletions(ctx, f); err != nil {
			return nil, nil, err
		}
		if recs, err = ff.read(ctx, fields, rgs); err != nil {
			return nil, nil, err
		}
		phys = physicalMapper(ff.rowGroupStarts(), f.Rows, rgs)
	}
	defer releaseAll(recs)
	sub := schemaOf(ds.schema, fields)
	var outRecs []arrow.Record
	var outOffs [][]int64
	var base int64
	for _, r := range recs {
		r.Retain()
		r = relabel(sub, r)
		test, err := filter.compile(r)
		if err != nil {
			r.Release()
			releaseAll(outRecs)
			return nil, nil, err
		}
		var sel []int
		var offs []int64
		for i := 0; i < int(r.NumRows()); i++ {
			p := phys(base + int64(i))
			if del != nil && del.Contains(uint32(p)) {
				continue
			}
			if keep != nil && !keep(p) {
				continue
			}
			if test(i) {
				sel = append(sel, i)
				offs = append(offs, p)
			}
		}
		base += r.NumRows()
		if len(sel) > 0 {
			t, err := takeRows(r, sel)
			if err != nil {
				r.Release()
				releaseAll(outRecs)
				return nil, nil, err
			}
			outRecs = append(outRecs, t)
			outOffs = append(outOffs, offs)
		}
		r.Release()
	}
	return outRecs, outOffs, nil
}

func schemaOf(s *arrow.Schema, fields []int) *arrow.Schema {
	fs := make([]arrow.Field, len(fields))
	for i, f := range fields {
		fs[i] = s.Field(f)
	}
	return arrow.NewSchema(fs, nil)
}

// relabel gives a record read from Parquet the dataset's own field
// definitions (dropping reader metadata). It consumes r's reference.
func relabel(s *arrow.Schema, r arrow.Record) arrow.Record {
	out := array.NewRecordBatch(s, r.Columns(), r.NumRows())
	r.Release()
	return out
}

// project picks columns (dataset field indices, output order) from a record
// holding the sorted fields.
func project(s *arrow.Schema, fields, proj []int, r arrow.Record) arrow.Record {
	pos := map[int]int{}
	for i, f := range fields {
		pos[f] = i
	}
	cols := make([]arrow.Array, len(proj))
	for i, p := range proj {
		cols[i] = r.Column(pos[p])
	}
	return array.NewRecordBatch(schemaOf(s, proj), cols, r.NumRows())
}

// Scan returns the live rows of this version that match opts.Filter, with
// opts.Columns. Fragments whose statistics rule the filter out are not read;
// each read fragment costs one GET (plus one for its deletion vector). The
// caller releases the records.
func (ds *Dataset) Scan(ctx context.Context, opts ScanOptions) ([]arrow.Record, error) {
	proj, err := fieldIndices(ds.schema, opts.Columns)
	if err != nil {
		return nil, err
	}
	if err := opts.Filter.validate(ds.schema); err != nil {
		return nil, err
	}
	fields := neededFields(ds.schema, proj, opts.Filter)
	var only map[string]bool
	if opts.Fragments != nil {
		only = make(map[string]bool, len(opts.Fragments))
		for _, id := range opts.Fragments {
			only[id] = true
		}
	}
	var read []Fragment
	for _, f := range ds.m.Fragments {
		if only != nil && !only[f.ID] {
			continue
		}
		if opts.Filter.mayMatch(statsMap(f), f.Rows) {
			read = append(read, f)
		}
	}
	parts := make([][]arrow.Record, len(read))
	err = eachFragment(ctx, read, func(ctx context.Context, i int, f Fragment) error {
		recs, _, err := ds.readMatching(ctx, f, nil, fields, nil, opts.Filter, nil)
		if err != nil {
			return err
		}
		for _, r := range recs {
			parts[i] = append(parts[i], project(ds.schema, fields, proj, r))
			r.Release()
		}
		return nil
	})
	var out []arrow.Record
	for _, p := range parts {
		out = append(out, p...)
	}
	if err != nil {
		releaseAll(out)
		return nil, err
	}
	return out, nil
}

// ScanRecord is Scan concatenated into one record (possibly zero rows).
func (ds *Dataset) ScanRecord(ctx context.Context, opts ScanOptions) (arrow.Record, error) {
	proj, err := fieldIndices(ds.schema, opts.Columns)
	if err != nil {
		return nil, err
	}
	recs, err := ds.Scan(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer releaseAll(recs)
	return concatRecords(schemaOf(ds.schema, proj), recs)
}

// concatRecords joins records of schema s into one.
func concatRecords(s *arrow.Schema, recs []arrow.Record) (arrow.Record, error) {
	if len(recs) == 1 {
		recs[0].Retain()
		return recs[0], nil
	}
	cols := make([]arrow.Array, s.NumFields())
	var n int64
	for _, r := range recs {
		n += r.NumRows()
	}
	for c := range cols {
		if len(recs) == 0 {
			cols[c] = array.MakeArrayOfNull(memory.DefaultAllocator, s.Field(c).Type, 0)
			continue
		}
		parts := make([]arrow.Array, len(recs))
		for i, r := range recs {
			parts[i] = r.Column(c)
		}
		a, err := array.Concatenate(parts, memory.DefaultAllocator)
		if err != nil {
			for _, x := range cols[:c] {
				x.Release()
			}
			return nil, fmt.Errorf("concatenate: %w", err)
		}
		cols[c] = a
	}
	out := array.NewRecordBatch(s, cols, n)
	for _, a := range cols {
		a.Release()
	}
	return out, nil
}

// Lookup returns the live rows whose key is one of ids, as one record with
// the full schema. With a key index it reads the index directory and pages
// by ranged GET and, per fragment holding a hit, only the Parquet footer and
// the row groups holding the hits; fragments the index does not cover (and
// every fragment when there is no index) are scanned with statistics pruning.
func (ds *Dataset) Lookup(ctx context.Context, ids ...string) (arrow.Record, error) {
	all, _ := fieldIndices(ds.schema, nil)
	if len(ids) == 0 {
		return concatRecords(ds.schema, nil)
	}
	var out []arrow.Record
	defer func() { releaseAll(out) }()
	filter := In(ds.m.KeyColumn, ids...)
	sortedIDs := append([]string(nil), ids...)
	sort.Strings(sortedIDs)
	hits, covered, err := ds.indexHits(ctx, ids)
	if err != nil {
		return nil, err
	}
	var read []Fragment
	for _, f := range ds.m.Fragments {
		if covered[f.ID] && len(hits[f.ID]) > 0 || !covered[f.ID] && mayHoldKeys(f, sortedIDs, filter) {
			read = append(read, f)
		}
	}
	parts := make([][]arrow.Record, len(read))
	err = eachFragment(ctx, read, func(ctx context.Context, i int, f Fragment) error {
		if !covered[f.ID] {
			recs, _, err := ds.readMatching(ctx, f, nil, all, nil, filter, nil)
			parts[i] = recs
			return err
		}
		offs := hits[f.ID]
		ff, err := openFragmentRanged(ctx, ds.store, ds.path, f)
		if err != nil {
			return err
		}
		starts := ff.rowGroupStarts()
		var rgs []int
		want := map[int64]bool{}
		for _, o := range offs {
			want[o] = true
			g := sort.Search(len(starts), func(i int) bool { return starts[i] > o }) - 1
			if len(rgs) == 0 || rgs[len(rgs)-1] != g {
				rgs = append(rgs, g)
			}
		}
		recs, _, err := ds.readMatching(ctx, f, ff, all, rgs, filter, func(p int64) bool { return want[p] })
		parts[i] = recs
		return err
	})
	for _, p := range parts {
		out = append(out, p...)
	}
	if err != nil {
		return nil, err
	}
	return concatRecords(ds.schema, out)
}

// indexHits consults the key index: physical offsets per covered fragment,
// and which fragments of this version it covers.
func (ds *Dataset) indexHits(ctx context.Context, ids []string) (map[string][]int64, map[string]bool, error) {
	ix := ds.keyIndex(ds.m.KeyColumn)
	if ix == nil {
		return nil, nil, nil
	}
	covered := map[string]bool{}
	for _, id := range ix.Fragments {
		covered[id] = true
	}
	hits, err := ds.indexLookup(ctx, ix, ids)
	if err != nil {
		return nil, nil, err
	}
	return hits, covered, nil
}

// matchRows returns, per fragment id, the live row offsets matching pred.
// With keys (sorted) set, pred is the key filter In(key, keys...) and
// fragments whose inline keys hold none of them are not read.
func (ds *Dataset) matchRows(ctx context.Context, pred Predicate, skip map[string]bool, keys []string) (map[string]*roaring.Bitmap, error) {
	fields := neededFields(ds.schema, nil, pred)
	if len(fields) == 0 {
		fields = []int{ds.schema.FieldIndices(ds.m.KeyColumn)[0]}
	}
	var read []Fragment
	for _, f := range ds.m.Fragments {
		if skip[f.ID] {
			continue
		}
		if keys != nil && mayHoldKeys(f, keys, pred) || keys == nil && pred.mayMatch(statsMap(f), f.Rows) {
			read = append(read, f)
		}
	}
	found := make([]*roaring.Bitmap, len(read))
	err := eachFragment(ctx, read, func(ctx context.Context, i int, f Fragment) error {
		recs, offs, err := ds.readMatching(ctx, f, nil, fields, nil, pred, nil)
		releaseAll(recs)
		if err != nil {
			return err
		}
		for _, os := range offs {
			for _, o := range os {
				if found[i] == nil {
					found[i] = roaring.New()
				}
				found[i].Add(uint32(o))
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := map[string]*roaring.Bitmap{}
	for i, bm := range found {
		if bm != nil {
			out[read[i].ID] = bm
		}
	}
	return out, nil
}

// mayHoldKeys reports whether fragment f can hold one of keys (sorted):
// by its inline keys, else by filter (the key filter) on its statistics.
func mayHoldKeys(f Fragment, keys []string, filter Predicate) bool {
	if may, ok := f.mayHoldKey(keys); ok {
		return may
	}
	return filter.mayMatch(statsMap(f), f.Rows)
}

// locateKeys returns, per fragment id, the live row offsets whose key is in
// keys: by the key index where it covers, by scanning elsewhere.
func (ds *Dataset) locateKeys(ctx context.Context, keys []string) (map[string]*roaring.Bitmap, error) {
	if len(keys) == 0 {
		return map[string]*roaring.Bitmap{}, nil
	}
	hits, covered, err := ds.indexHits(ctx, keys)
	if err != nil {
		return nil, err
	}
	sorted := append([]string(nil), keys...)
	sort.Strings(sorted)
	out, err := ds.matchRows(ctx, In(ds.m.KeyColumn, keys...), covered, sorted)
	if err != nil {
		return nil, err
	}
	for _, f := range ds.m.Fragments {
		if !covered[f.ID] || len(hits[f.ID]) == 0 {
			continue
		}
		del, err := ds.deletions(ctx, f)
		if err != nil {
			return nil, err
		}
		for _, o := range hits[f.ID] {
			if del != nil && del.Contains(uint32(o)) {
				continue
			}
			bm := out[f.ID]
			if bm == nil {
				bm = roaring.New()
				out[f.ID] = bm
			}
			bm.Add(uint32(o))
		}
	}
	return out, nil
}

// liveColumns returns the given fields (dataset field indices, in this
// order) of fragment f's live rows. A fragment decoded whole in the cache
// is used as it is; otherwise the file is fetched (one GET, together with
// its deletion vector) and only those columns are decoded, and cached
// under their own key.
func (ds *Dataset) liveColumns(ctx context.Context, f Fragment, fields []int) ([]arrow.Record, error) {
	var del *roaring.Bitmap
	var derr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		del, derr = ds.deletions(ctx, f)
	}()
	recs, err := ds.fragmentColumns(ctx, f, fields)
	<-done
	if err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, derr
	}
	if del == nil {
		return recs, nil
	}
	var out []arrow.Record
	var base int64
	for _, r := range recs {
		var sel []int
		for i := 0; i < int(r.NumRows()); i++ {
			if !del.Contains(uint32(base + int64(i))) {
				sel = append(sel, i)
			}
		}
		base += r.NumRows()
		t, err := takeRows(r, sel)
		r.Release()
		if err != nil {
			releaseAll(out)
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// fragmentColumns returns fields of every row of f (deleted rows
// included), as records shared read-only with the cache.
func (ds *Dataset) fragmentColumns(ctx context.Context, f Fragment, fields []int) ([]arrow.Record, error) {
	whole := ds.path + "/" + f.Path
	pick := func(recs []arrow.Record, idx []int) []arrow.Record {
		out := make([]arrow.Record, len(recs))
		for i, r := range recs {
			cols := make([]arrow.Array, len(idx))
			for j, c := range idx {
				cols[j] = r.Column(c)
			}
			out[i] = array.NewRecordBatch(schemaOf(ds.schema, fields), cols, r.NumRows())
		}
		return out
	}
	if v, ok := ds.cache.get(whole); ok {
		return pick(v.(*decodedFragment).recs, fields), nil
	}
	if len(fields) == ds.schema.NumFields() && slices.IsSorted(fields) {
		d, err := ds.fragmentData(ctx, f)
		if err != nil {
			return nil, err
		}
		return pick(d.recs, fields), nil
	}
	// Decoded in file order; pos maps each wanted field to its column.
	sorted := slices.Sorted(slices.Values(fields))
	sorted = slices.Compact(sorted)
	pos := make([]int, len(fields))
	for i, fi := range fields {
		pos[i], _ = slices.BinarySearch(sorted, fi)
	}
	key := fmt.Sprintf("%s#cols%v", whole, sorted)
	if v, ok := ds.cache.get(key); ok {
		return pick(v.(*decodedFragment).recs, pos), nil
	}
	ff, err := loadFragment(ctx, ds.store, ds.path, f)
	if err != nil {
		return nil, err
	}
	recs, err := ff.read(ctx, sorted, nil)
	if err != nil {
		return nil, err
	}
	d := &decodedFragment{recs: recs}
	ds.cache.put(key, d, d.bytes())
	return pick(recs, pos), nil
}
