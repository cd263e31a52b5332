package table

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow"
)

// newStage starts a staged write against this version.
func (ds *Dataset) newStage() (*Staged, *Manifest) {
	return &Staged{store: ds.store, cache: ds.cache, Path: ds.path, Branch: ds.m.Branch}, ds.m.clone()
}

func (ds *Dataset) root() string { return branchRoot(ds.path, ds.m.Branch) }

func emptyStage(ds *Dataset, op string) *Staged {
	return &Staged{store: ds.store, cache: ds.cache, Path: ds.path, Branch: ds.m.Branch, ReadVersion: ds.m.Version, Operation: op, empty: true}
}

// StageAppend stages recs as one new fragment (one Put). Appending no rows
// is an Empty stage. Keys are not checked for uniqueness; use
// StageMergeInsert to upsert.
func (ds *Dataset) StageAppend(ctx context.Context, recs ...arrow.Record) (*Staged, error) {
	if err := validateRecords(ds.schema, ds.m.KeyColumn, recs); err != nil {
		return nil, err
	}
	if rows(recs) == 0 {
		return emptyStage(ds, OpAppend), nil
	}
	st, m := ds.newStage()
	f, key, err := writeFragment(ctx, ds.store, ds.path, ds.root(), ds.schema, ds.m.KeyColumn, recs)
	if err != nil {
		return nil, err
	}
	m.Fragments = append(m.Fragments, f)
	st.Files = append(st.Files, key)
	st.finish(m, ds.m.Version, OpAppend)
	return st, nil
}

// StageDelete stages deletion vectors for the live rows pred matches (the
// zero Predicate matches every row). A predicate matching no live row
// returns an Empty stage (nothing written). A fragment whose rows are all
// deleted is dropped from the manifest.
func (ds *Dataset) StageDelete(ctx context.Context, pred Predicate) (*Staged, error) {
	return ds.StageChanges(ctx, Changes{Delete: &pred})
}

// StageOverwrite stages a version holding exactly recs (no records: an
// empty, zero-fragment version). The schema stays the dataset's; use
// StageOverwriteWithSchema to change it. Indexes are dropped.
func (ds *Dataset) StageOverwrite(ctx context.Context, recs ...arrow.Record) (*Staged, error) {
	return ds.StageOverwriteWithSchema(ctx, ds.schema, recs...)
}

// StageOverwriteWithSchema is StageOverwrite with a new schema, which must
// still hold the key column as a string column.
func (ds *Dataset) StageOverwriteWithSchema(ctx context.Context, schema *arrow.Schema, recs ...arrow.Record) (*Staged, error) {
	if schema == nil {
		return nil, errorf(ErrInvalid, "overwrite: nil schema")
	}
	if err := checkKeyColumn(schema, ds.m.KeyColumn); err != nil {
		return nil, err
	}
	if err := validateRecords(schema, ds.m.KeyColumn, recs); err != nil {
		return nil, err
	}
	sb, err := encodeSchema(schema)
	if err != nil {
		return nil, err
	}
	st, m := ds.newStage()
	m.Schema = sb
	m.Fragments = []Fragment{}
	m.Indexes = nil
	if rows(recs) > 0 {
		f, key, err := writeFragment(ctx, ds.store, ds.path, ds.root(), schema, ds.m.KeyColumn, recs)
		if err != nil {
			return nil, err
		}
		m.Fragments = append(m.Fragments, f)
		st.Files = append(st.Files, key)
	}
	st.finish(m, ds.m.Version, OpOverwrite)
	return st, nil
}

// StageMergeInsert stages an upsert by key: live rows whose key appears in
// recs are deleted and recs are added; within recs the last row of a key
// wins. No rows is an Empty stage.
func (ds *Dataset) StageMergeInsert(ctx context.Context, recs ...arrow.Record) (*Staged, error) {
	st, err := ds.StageChanges(ctx, Changes{Upsert: recs})
	if err == nil && !st.Empty() {
		st.Operation = OpMerge
		st.Manifest.Transaction.Operation = OpMerge
	}
	return st, err
}

// StageChanges stages deletes, upserts and appends as ONE version (see
// Changes for the order). It writes at most one fragment and one deletion
// file per touched fragment. A change that alters nothing is Empty. The
// operation recorded is Delete, Merge or Append when only that kind is
// present, Update otherwise.
func (ds *Dataset) StageChanges(ctx context.Context, ch Changes) (*Staged, error) {
	key := ds.m.KeyColumn
	if err := validateRecords(ds.schema, key, ch.Upsert); err != nil {
		return nil, fmt.Errorf("upsert: %w", err)
	}
	if err := validateRecords(ds.schema, key, ch.Append); err != nil {
		return nil, fmt.Errorf("append: %w", err)
	}
	if ch.Delete != nil {
		if err := ch.Delete.validate(ds.schema); err != nil {
			return nil, err
		}
	}
	op := changesOp(ch)

	// Rows to delete, all evaluated against this version.
	del := map[string]*roaring.Bitmap{}
	merge := func(m map[string]*roaring.Bitmap) {
		for id, bm := range m {
			if cur := del[id]; cur != nil {
				cur.Or(bm)
			} else {
				del[id] = bm
			}
		}
	}
	if ch.Delete != nil {
		m, err := ds.matchRows(ctx, *ch.Delete, nil, nil)
		if err != nil {
			return nil, err
		}
		merge(m)
	}
	upserts, upKeys, err := dedupLastWins(ch.Upsert, ds.schema.FieldIndices(key)[0])
	if err != nil {
		return nil, err
	}
	defer releaseAll(upserts)
	keys := append(append([]string(nil), ch.DeleteKeys...), upKeys...)
	if len(keys) > 0 {
		m, err := ds.locateKeys(ctx, keys)
		if err != nil {
			return nil, err
		}
		merge(m)
	}
	adds := append(append([]arrow.Record(nil), upserts...), ch.Append...)
	deleting := false
	for _, bm := range del {
		if !bm.IsEmpty() {
			deleting = true
		}
	}
	if !deleting && rows(adds) == 0 {
		return emptyStage(ds, op), nil
	}
	st, m := ds.newStage()
	if err := ds.applyDeletes(ctx, st, m, del); err != nil {
		return nil, err
	}
	if rows(adds) > 0 {
		f, k, err := writeFragment(ctx, ds.store, ds.path, ds.root(), ds.schema, ds.m.KeyColumn, adds)
		if err != nil {
			return nil, err
		}
		m.Fragments = append(m.Fragments, f)
		st.Files = append(st.Files, k)
	}
	st.finish(m, ds.m.Version, op)
	return st, nil
}

func changesOp(ch Changes) string {
	kinds := 0
	op := OpUpdate
	if ch.Delete != nil || len(ch.DeleteKeys) > 0 {
		kinds++
		op = OpDelete
	}
	if len(ch.Upsert) > 0 {
		kinds++
		op = OpMerge
	}
	if len(ch.Append) > 0 {
		kinds++
		op = OpAppend
	}
	if kinds != 1 {
		return OpUpdate
	}
	return op
}

// dedupLastWins keeps, for every key, only its last row across recs. It
// returns new records (caller releases) and the distinct keys.
func dedupLastWins(recs []arrow.Record, keyIdx int) ([]arrow.Record, []string, error) {
	type pos struct{ rec, row int }
	last := map[string]pos{}
	var order []string
	for ri, r := range recs {
		sa, ok := r.Column(keyIdx).(stringArray)
		if !ok {
			return nil, nil, errorf(ErrInvalid, "key column is not a string column")
		}
		for j := 0; j < sa.Len(); j++ {
			k := sa.Value(j)
			if _, seen := last[k]; !seen {
				order = append(order, k)
			}
			last[k] = pos{ri, j}
		}
	}
	var out []arrow.Record
	for ri, r := range recs {
		sa := r.Column(keyIdx).(stringArray)
		var sel []int
		for j := 0; j < sa.Len(); j++ {
			if last[sa.Value(j)] == (pos{ri, j}) {
				sel = append(sel, j)
			}
		}
		if len(sel) == 0 {
			continue
		}
		t, err := takeRows(r, sel)
		if err != nil {
			releaseAll(out)
			return nil, nil, err
		}
		out = append(out, t)
	}
	return out, order, nil
}

// applyDeletes merges newly deleted offsets into m's deletion vectors,
// writing one cumulative deletion file per touched fragment and dropping
// fragments with no live row left.
func (ds *Dataset) applyDeletes(ctx context.Context, st *Staged, m *Manifest, del map[string]*roaring.Bitmap) error {
	rel := strings.TrimPrefix(ds.root(), ds.path+"/")
	kept := m.Fragments[:0]
	for _, f := range m.Fragments {
		bm := del[f.ID]
		if bm == nil || bm.IsEmpty() {
			kept = append(kept, f)
			continue
		}
		old, err := ds.deletions(ctx, f)
		if err != nil {
			return err
		}
		if old != nil {
			bm = roaring.Or(bm, old)
		}
		n := int64(bm.GetCardinality())
		if n >= f.Rows {
			continue // every row deleted: the fragment leaves the version
		}
		bm.RunOptimize()
		data, err := bm.ToBytes()
		if err != nil {
			return fmt.Errorf("encode deletion vector: %w", err)
		}
		p := rel + dirDeletions + "/" + f.ID + "-" + newUUID() + ".bin"
		if _, err := ds.store.Put(ctx, ds.path+"/"+p, data); err != nil {
			return fmt.Errorf("write deletion vector: %w", err)
		}
		st.Files = append(st.Files, ds.path+"/"+p)
		f.Deletion = &DeletionFile{Path: p, Count: n}
		kept = append(kept, f)
	}
	m.Fragments = kept
	return nil
}

// StageRestore stages a new version whose content (schema, fragments,
// deletions, indexes) equals version v of this branch. It writes no file;
// the transaction records RestoreTarget = v.
func (ds *Dataset) StageRestore(ctx context.Context, v uint64) (*Staged, error) {
	if v == 0 || v > ds.m.Version {
		return nil, errorf(ErrInvalid, "restore to version %d: must be between 1 and %d", v, ds.m.Version)
	}
	old, err := readManifest(ctx, ds.store, ds.path, ds.m.Branch, v)
	if err != nil {
		return nil, err
	}
	st, m := ds.newStage()
	m.Schema, m.Fragments, m.Indexes = old.Schema, old.Fragments, old.Indexes
	m.KeyColumn = old.KeyColumn
	st.finish(m, ds.m.Version, OpRestore)
	st.Manifest.Transaction.RestoreTarget = v
	return st, nil
}

// StageCreateIndex stages a key index (sorted value -> fragment, offset) on
// a string column over every fragment of this version, replacing an older
// index on that column. Fragments appended later are scanned by lookups
// until the index is rebuilt.
func (ds *Dataset) StageCreateIndex(ctx context.Context, column string) (*Staged, error) {
	idx := ds.schema.FieldIndices(column)
	if len(idx) == 0 {
		return nil, errorf(ErrInvalid, "create index: no column %q", column)
	}
	if !isStringType(ds.schema.Field(idx[0]).Type) {
		return nil, errorf(ErrInvalid, "create index: key index needs a string column, %q is %s", column, ds.schema.Field(idx[0]).Type)
	}
	st, m := ds.newStage()
	ix, key, err := buildKeyIndex(ctx, ds, ds.root(), m, column, idx[0])
	if err != nil {
		return nil, err
	}
	st.Files = append(st.Files, key)
	replaceIndex(m, ix)
	st.finish(m, ds.m.Version, OpCreateIndex)
	return st, nil
}

func replaceIndex(m *Manifest, ix Index) {
	out := m.Indexes[:0]
	for _, o := range m.Indexes {
		if !(o.Kind == ix.Kind && o.Column == ix.Column) {
			out = append(out, o)
		}
	}
	m.Indexes = append(out, ix)
}

// StageCompact stages a compaction: fragments with deletions or fewer live
// rows than opts.TargetRows are rewritten (deleted rows dropped) into
// fragments of up to TargetRows rows; key indexes are rebuilt in the same
// version. With fewer than two small fragments and no deletions it is an
// Empty stage.
func (ds *Dataset) StageCompact(ctx context.Context, opts CompactOptions) (*Staged, error) {
	target := opts.TargetRows
	if target <= 0 {
		target = 1 << 20
	}
	var cand []Fragment
	hasDel := false
	for _, f := range ds.m.Fragments {
		if f.Deletion != nil || f.LiveRows() < target {
			cand = append(cand, f)
			hasDel = hasDel || f.Deletion != nil
		}
	}
	if opts.TierRatio > 0 {
		cand = smallestTier(cand, opts.TierRatio)
	}
	needIndex := opts.IndexKey && len(ds.m.Fragments) > 0 && !ds.KeyIndexCovers()
	adj := opts.Adjacency
	wantAdj := adj[0] != "" && adj[1] != ""
	needAdj := wantAdj && len(ds.m.Fragments) > 0 && !ds.AdjacencyCovers(adj[0], adj[1])
	if len(cand) < 2 && !hasDel {
		if !needIndex && !needAdj {
			return emptyStage(ds, OpCompact), nil
		}
		cand = nil // only the key index is built
	}
	all, _ := fieldIndices(ds.schema, nil)
	st, m := ds.newStage()
	isCand := map[string]bool{}
	for _, f := range cand {
		isCand[f.ID] = true
	}
	var newFrags []Fragment
	var pending []arrow.Record
	flush := func() error {
		defer func() { releaseAll(pending); pending = nil }()
		if rows(pending) == 0 {
			return nil
		}
		// One record: the pending slices (one per source fragment, often
		// one row each) would otherwise be encoded, and cached, one by one.
		if len(pending) > 1 {
			one, err := concatRecords(ds.schema, pending)
			if err != nil {
				return err
			}
			releaseAll(pending)
			pending = []arrow.Record{one}
		}
		f, key, err := writeFragment(ctx, ds.store, ds.path, ds.root(), ds.schema, ds.m.KeyColumn, pending)
		if err != nil {
			return err
		}
		newFrags = append(newFrags, f)
		st.Files = append(st.Files, key)
		// The rewritten rows are already decoded: seed the cache, so the
		// index rebuild and the next read do not fetch the new file.
		for _, r := range pending {
			r.Retain()
		}
		d := &decodedFragment{recs: append([]arrow.Record(nil), pending...)}
		ds.cache.put(key, d, d.bytes())
		return nil
	}
	// The candidates are read a wave at a time (eachFragment: 16 in
	// flight), then appended in manifest order.
	for lo := 0; lo < len(cand); lo += readParallelism {
		wave := cand[lo:min(lo+readParallelism, len(cand))]
		read := make([][]arrow.Record, len(wave))
		err := eachFragment(ctx, wave, func(ctx context.Context, i int, f Fragment) error {
			recs, _, err := ds.readMatching(ctx, f, nil, all, nil, Predicate{}, nil)
			read[i] = recs
			return err
		})
		if err != nil {
			for _, recs := range read {
				releaseAll(recs)
			}
			releaseAll(pending)
			return nil, err
		}
		for w, recs := range read {
			for i, r := range recs {
				// Split r so no rewritten fragment exceeds target rows.
				for off := int64(0); off < r.NumRows(); {
					n := min(target-rows(pending), r.NumRows()-off)
					pending = append(pending, r.NewSlice(off, off+n))
					off += n
					if rows(pending) >= target {
						if err := flush(); err != nil {
							releaseAll(recs[i:])
							for _, rest := range read[w+1:] {
								releaseAll(rest)
							}
							return nil, err
						}
					}
				}
				r.Release()
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	// Rewritten fragments take the place of the first candidate.
	var frags []Fragment
	placed := false
	for _, f := range m.Fragments {
		if !isCand[f.ID] {
			frags = append(frags, f)
			continue
		}
		if !placed {
			frags = append(frags, newFrags...)
			placed = true
		}
	}
	m.Fragments = frags
	if m.Fragments == nil {
		m.Fragments = []Fragment{}
	}
	old := m.Indexes
	m.Indexes = nil
	if opts.IndexKey && ds.keyIndex(ds.m.KeyColumn) == nil {
		old = append(old, Index{Kind: "key", Column: ds.m.KeyColumn})
	}
	for _, ix := range old {
		col := ds.schema.FieldIndices(ix.Column)
		if ix.Kind != "key" || len(col) == 0 {
			continue
		}
		// A tiered run that wrote only small fragments keeps the index:
		// their keys are inline (a key check reads them, not the file), and
		// entries of the fragments it replaced are never consulted. Only a
		// run that writes a larger fragment rebuilds it (O(table rows)).
		if opts.TierRatio > 0 && ix.Path != "" && keysReachable(ix, m) {
			m.Indexes = append(m.Indexes, ix)
			continue
		}
		nix, key, err := buildKeyIndex(ctx, ds, ds.root(), m, ix.Column, col[0])
		if err != nil {
			return nil, err
		}
		st.Files = append(st.Files, key)
		m.Indexes = append(m.Indexes, nix)
	}
	// Adjacency indexes are rebuilt over the new fragments (the rewritten
	// ones are in the cache, the kept ones are taken from the old index).
	var adjs [][2]string
	for _, ix := range old {
		if ix.Kind == AdjacencyKind && len(ix.Columns) == 2 {
			adjs = append(adjs, [2]string{ix.Columns[0], ix.Columns[1]})
		}
	}
	if wantAdj && !slices.Contains(adjs, adj) {
		adjs = append(adjs, adj)
	}
	// Caller-built indexes (full-text, vector) are dropped, except by a
	// tiered run that wrote only small fragments: their readers scan what
	// an index does not cover (the new small fragment) and ignore its
	// entries of the fragments the run replaced, so the answers stay the
	// same, and rebuilding one costs O(table rows) a run.
	if opts.TierRatio > 0 && smallOutput(newFrags) {
		for _, ix := range old {
			if ix.Kind != "key" && ix.Kind != AdjacencyKind {
				m.Indexes = append(m.Indexes, ix)
			}
		}
	}
	m.Version = ds.m.Version + 1
	for _, cols := range adjs {
		if len(m.Fragments) == 0 {
			break
		}
		prev := (&Manifest{Indexes: old}).adjacencyIndex(cols[0], cols[1])
		// A tiered run that wrote only small fragments keeps the index
		// too: a traversal patches it with the fragments it does not cover
		// (adjacencyPlan), and rebuilding it costs O(table edges) a run.
		if opts.TierRatio > 0 && prev != nil && smallOutput(newFrags) {
			m.Indexes = append(m.Indexes, *prev)
			continue
		}
		nix, key, err := buildAdjacencyIndex(ctx, ds, ds.root(), m, prev, cols[0], cols[1], nil)
		if err != nil {
			return nil, err
		}
		st.Files = append(st.Files, key)
		m.Indexes = append(m.Indexes, nix)
	}
	st.finish(m, ds.m.Version, OpCompact)
	return st, nil
}

// smallOutput reports whether a compaction wrote only small fragments
// (at most inlineKeyRows rows each, so their keys are inline).
func smallOutput(frags []Fragment) bool {
	for _, f := range frags {
		if f.Rows > inlineKeyRows {
			return false
		}
	}
	return true
}

// keysReachable reports whether a key check on m finds every key without
// reading a file the key index ix does not cover: each fragment is
// covered by ix or carries its keys inline.
func keysReachable(ix Index, m *Manifest) bool {
	covered := make(map[string]bool, len(ix.Fragments))
	for _, id := range ix.Fragments {
		covered[id] = true
	}
	for _, f := range m.Fragments {
		if !covered[f.ID] && f.Keys == nil {
			return false
		}
	}
	return true
}

// smallestTier is the size-tiered choice of CompactOptions.TierRatio among
// the candidates, kept in manifest order: every fragment with deletions,
// the two with the fewest live rows, and each next one by size while its
// live rows are at most ratio times the rows chosen so far.
func smallestTier(cand []Fragment, ratio float64) []Fragment {
	if len(cand) < 2 {
		return cand
	}
	bySize := slices.Clone(cand)
	slices.SortStableFunc(bySize, func(a, b Fragment) int { return cmp.Compare(a.LiveRows(), b.LiveRows()) })
	pick := map[string]bool{}
	var total int64
	for i, f := range bySize {
		if i >= 2 && float64(f.LiveRows()) > ratio*float64(total) {
			break
		}
		pick[f.ID] = true
		total += f.LiveRows()
	}
	var out []Fragment
	for _, f := range cand {
		if pick[f.ID] || f.Deletion != nil {
			out = append(out, f)
		}
	}
	return out
}

// KeyIndexCovers reports whether this version has a key index on its key
// column covering every fragment (an insert then checks key uniqueness
// without reading fragment data). No I/O.
func (ds *Dataset) KeyIndexCovers() bool {
	ix := ds.keyIndex(ds.m.KeyColumn)
	if ix == nil {
		return false
	}
	covered := make(map[string]bool, len(ix.Fragments))
	for _, id := range ix.Fragments {
		covered[id] = true
	}
	for _, f := range ds.m.Fragments {
		if !covered[f.ID] {
			return false
		}
	}
	return true
}

// SmallFragments counts the fragments with fewer live rows than target
// (<= 0: the compaction default) or with deletions: what a compaction
// would rewrite. No I/O.
func (ds *Dataset) SmallFragments(target int64) int {
	if target <= 0 {
		target = 1 << 20
	}
	n := 0
	for _, f := range ds.m.Fragments {
		if f.Deletion != nil || f.LiveRows() < target {
			n++
		}
	}
	return n
}

// Compact stages and commits a compaction. Nothing to do returns ds itself.
func (ds *Dataset) Compact(ctx context.Context, opts CompactOptions) (*Dataset, error) {
	st, err := ds.StageCompact(ctx, opts)
	if err != nil {
		return nil, err
	}
	if st.Empty() {
		return ds, nil
	}
	return Commit(ctx, st)
}
