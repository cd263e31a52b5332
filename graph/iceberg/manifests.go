package iceberg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	ice "github.com/apache/iceberg-go"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/table"
)

// planned is one manifest entry to write.
type planned struct {
	status ice.ManifestEntryStatus
	file   liveFile
	// stats are the entry's column statistics (nil: none, as for an
	// entry that records a file's removal).
	stats *fileStats
}

// writeSnapshotFiles writes what a new snapshot needs: a position-delete
// file for each deletion vector its parent did not have, one data manifest
// and (when there are any) one delete manifest, each listing every live
// file (ADDED when new, EXISTING with the snapshot and sequence number that
// added it) and every file the parent had and this version dropped
// (DELETED), and the manifest list. Every live entry carries its column
// statistics (stats.go), from what the table's manifest and the sync state
// already hold: they cost no request. It returns the live files and the
// snapshot summary.
//
// One manifest per content per snapshot keeps a sync to one PUT per
// manifest whatever the history; its size follows the table's live files,
// which compaction keeps few, like the table's own version manifest.
func (s *syncer) writeSnapshotFiles(ctx context.Context, t *tableSync, m *metadata, sn *snapshot, base string, o op, tm *table.Manifest, parentFiles []liveFile) ([]liveFile, map[string]string, error) {
	parent := make(map[string]liveFile, len(parentFiles))
	for _, f := range parentFiles {
		parent[f.Key] = f
	}
	seen := map[string]bool{}
	var data, dels []planned
	var files []liveFile
	var liveRows, posDeletes int64
	schema := m.schema(sn.SchemaID)
	ids := columnIDs(schema, m.Schemas)
	add := func(f liveFile, stats *fileStats) {
		seen[f.Key] = true
		st := ice.EntryStatusADDED
		if p, ok := parent[f.Key]; ok && p.Deletes == f.Deletes {
			f.Snapshot, f.Seq, st = p.Snapshot, p.Seq, ice.EntryStatusEXISTING
		} else {
			f.Snapshot, f.Seq = sn.SnapshotID, sn.SequenceNumber
		}
		files = append(files, f)
		if f.Deletes {
			dels = append(dels, planned{st, f, stats})
		} else {
			data = append(data, planned{st, f, stats})
		}
	}
	for _, fr := range tm.Fragments {
		key := o.pin.Path + "/" + fr.Path
		ds := dataStats(schema, ids, fr)
		add(liveFile{Key: key, Rows: fr.Rows, Size: fr.Size}, &ds)
		liveRows += fr.LiveRows()
		if fr.Deletion == nil {
			continue
		}
		dkey := t.id.deletesKey(fr.Deletion.Path)
		posDeletes += fr.Deletion.Count
		f, ok := parent[dkey]
		if !ok || !f.Deletes {
			df, err := s.writeDeletes(ctx, o.pin.Path, key, dkey, fr)
			if err != nil {
				return nil, nil, err
			}
			f = df
		}
		st := deleteStats(join(s.loc, key), f.Rows, f.PosLo, f.PosEnd)
		add(f, &st)
	}
	var removedData, removedDels int
	for _, f := range parentFiles {
		if seen[f.Key] {
			continue
		}
		if f.Deletes {
			dels = append(dels, planned{ice.EntryStatusDELETED, f, nil})
			removedDels++
		} else {
			data = append(data, planned{ice.EntryStatusDELETED, f, nil})
			removedData++
		}
	}
	var mfs []ice.ManifestFile
	for _, part := range []struct {
		entries []planned
		suffix  string
		content ice.ManifestContent
	}{{data, "-data.avro", ice.ManifestContentData}, {dels, "-deletes.avro", ice.ManifestContentDeletes}} {
		if len(part.entries) == 0 {
			continue
		}
		mf, err := s.writeManifest(ctx, base+part.suffix, part.content, schema, sn, part.entries)
		if err != nil {
			return nil, nil, err
		}
		mfs = append(mfs, mf)
	}
	var list bytes.Buffer
	seq := sn.SequenceNumber
	if err := ice.WriteManifestList(2, &list, sn.SnapshotID, sn.ParentSnapshotID, &seq, 0, mfs); err != nil {
		return nil, nil, fmt.Errorf("manifest list: %w", err)
	}
	if _, err := s.putOnce(ctx, base+".avro", list.Bytes()); err != nil {
		return nil, nil, err
	}
	var addedData, addedDels, liveData, liveDels int
	for _, p := range data {
		switch p.status {
		case ice.EntryStatusADDED:
			addedData++
			liveData++
		case ice.EntryStatusEXISTING:
			liveData++
		}
	}
	for _, p := range dels {
		switch p.status {
		case ice.EntryStatusADDED:
			addedDels++
			liveDels++
		case ice.EntryStatusEXISTING:
			liveDels++
		}
	}
	// The summary keeps what engines use (the operation, the live row and
	// file counts) and the graph commit; every field costs each sync bytes
	// in the metadata file, so counts that are zero are left out.
	summary := map[string]string{
		"operation":        operation(tm.Transaction.Operation, addedData, removedData, addedDels, removedDels),
		SummaryCommitID:    o.entry.Head,
		"total-records":    strconv.FormatInt(liveRows, 10),
		"total-data-files": strconv.Itoa(liveData),
	}
	for k, v := range map[string]int64{"total-delete-files": int64(liveDels), "total-position-deletes": posDeletes} {
		if v > 0 {
			summary[k] = strconv.FormatInt(v, 10)
		}
	}
	return files, summary, nil
}

// operation names a snapshot's Iceberg operation: a compaction is a
// replace (same rows, other files); otherwise what the files did.
func operation(tableOp string, addedData, removedData, addedDels, removedDels int) string {
	switch {
	case tableOp == table.OpCompact:
		return "replace"
	case removedData == 0 && addedDels == 0 && removedDels == 0:
		return "append"
	case addedData == 0:
		return "delete"
	}
	return "overwrite"
}

// writeManifest writes one manifest (put-if-absent) and returns its entry
// for the manifest list.
func (s *syncer) writeManifest(ctx context.Context, key string, content ice.ManifestContent, schema *ice.Schema, sn *snapshot, entries []planned) (ice.ManifestFile, error) {
	spec := ice.NewPartitionSpec()
	var buf bytes.Buffer
	w, err := ice.NewManifestWriter(2, &buf, spec, schema, sn.SnapshotID, ice.WithManifestWriterContent(content))
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	for _, p := range entries {
		kind := ice.EntryContentData
		if p.file.Deletes {
			kind = ice.EntryContentPosDeletes
		}
		b, err := ice.NewDataFileBuilder(spec, kind, join(s.loc, p.file.Key), ice.ParquetFile, nil, nil, nil, p.file.Rows, p.file.Size)
		if err != nil {
			return nil, fmt.Errorf("manifest entry: %w", err)
		}
		if st := p.stats; st != nil {
			b.ValueCounts(st.values).NullValueCounts(st.nulls).LowerBoundValues(st.lower).UpperBoundValues(st.upper)
		}
		snap, seq := p.file.Snapshot, p.file.Seq
		e := ice.NewManifestEntry(p.status, &snap, &seq, &seq, b.Build())
		switch p.status {
		case ice.EntryStatusADDED:
			err = w.Add(e)
		case ice.EntryStatusEXISTING:
			err = w.Existing(e)
		default:
			err = w.Delete(e)
		}
		if err != nil {
			return nil, fmt.Errorf("manifest entry: %w", err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	mf, err := w.ToManifestFile(join(s.loc, key), int64(buf.Len()))
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	size, err := s.putOnce(ctx, key, buf.Bytes())
	if err != nil {
		return nil, err
	}
	if size != int64(buf.Len()) {
		// A crashed run of the same snapshot wrote it first: the list
		// must state the stored file's length.
		mf, err = w.ToManifestFile(join(s.loc, key), size)
		if err != nil {
			return nil, fmt.Errorf("manifest: %w", err)
		}
	}
	return mf, nil
}

// putOnce creates key with put-if-absent and returns the stored length:
// when the key exists (an earlier run of the same snapshot or deletion
// vector wrote it; names are unique to their content), the stored one is
// kept and its length returned.
func (s *syncer) putOnce(ctx context.Context, key string, b []byte) (int64, error) {
	_, err := s.store.PutIfAbsent(ctx, key, b)
	if err == nil {
		return int64(len(b)), nil
	}
	if errors.Is(err, backend.ErrPrecondition) || errors.Is(err, backend.ErrUnknown) {
		a, serr := s.store.Stat(ctx, key)
		if serr == nil {
			return a.Size, nil
		}
		if !errors.Is(err, backend.ErrUnknown) || !backend.IsNotFound(serr) {
			return 0, fmt.Errorf("write %s: %w", describe(key), serr)
		}
		// Lost answer and nothing stored: send it once more.
		if _, err = s.store.PutIfAbsent(ctx, key, b); err == nil {
			return int64(len(b)), nil
		}
	}
	return 0, fmt.Errorf("write %s: %w", describe(key), err)
}

// describe names an Iceberg file for messages by its kind, not its key.
func describe(key string) string {
	switch {
	case strings.HasSuffix(key, ".parquet"):
		return "a position-delete file"
	case strings.HasSuffix(key, "-data.avro"), strings.HasSuffix(key, "-deletes.avro"):
		return "a manifest"
	case strings.HasSuffix(key, ".avro"):
		return "a manifest list"
	}
	return "an Iceberg metadata file"
}

// writeDeletes writes the position-delete file of fragment fr's deletion
// vector (one GET of the vector, one put-if-absent) and returns it as a
// live file (without its snapshot), its pos bounds included.
func (s *syncer) writeDeletes(ctx context.Context, tablePath, dataKey, key string, fr table.Fragment) (liveFile, error) {
	rows, err := table.DeletedRows(ctx, s.store, tablePath, fr)
	if err != nil {
		return liveFile{}, err
	}
	b, err := positionDeletes(join(s.loc, dataKey), rows)
	if err != nil {
		return liveFile{}, err
	}
	size, err := s.putOnce(ctx, key, b)
	if err != nil {
		return liveFile{}, err
	}
	f := liveFile{Key: key, Deletes: true, Rows: fr.Deletion.Count, Size: size}
	if len(rows) > 0 {
		// rows ascend (positionDeletes writes them so).
		f.PosLo, f.PosEnd = int64(rows[0]), int64(rows[len(rows)-1])+1
	}
	return f, nil
}

// filesOf returns the live files of an existing snapshot: from a ref's
// state when a ref's head is that snapshot, else read back from its
// manifests (a branch whose first sync starts from a shared commit).
func (s *syncer) filesOf(ctx context.Context, t *tableSync, m *metadata, sn *snapshot) ([]liveFile, error) {
	for _, r := range m.state.Refs {
		if r.Snapshot == sn.SnapshotID {
			return append([]liveFile(nil), r.Files...), nil
		}
	}
	ck := t.key + "#" + strconv.FormatInt(sn.SnapshotID, 10)
	if f, ok := s.known[ck]; ok {
		return f, nil
	}
	root := s.loc + "/"
	rel := func(uri string) (string, error) {
		if !strings.HasPrefix(uri, root) {
			return "", fmt.Errorf("%w: snapshot %d of %s names a file outside the graph root", ErrCorrupt, sn.SnapshotID, t.id)
		}
		return strings.TrimPrefix(uri, root), nil
	}
	lk, err := rel(sn.ManifestList)
	if err != nil {
		return nil, err
	}
	lb, _, err := s.store.Get(ctx, lk)
	if err != nil {
		return nil, fmt.Errorf("read a manifest list of %s: %w", t.id, err)
	}
	mfs, err := ice.ReadManifestList(bytes.NewReader(lb))
	if err != nil {
		return nil, fmt.Errorf("%w: manifest list of snapshot %d of %s: %v", ErrCorrupt, sn.SnapshotID, t.id, err)
	}
	var out []liveFile
	for _, mf := range mfs {
		mk, err := rel(mf.FilePath())
		if err != nil {
			return nil, err
		}
		mb, _, err := s.store.Get(ctx, mk)
		if err != nil {
			return nil, fmt.Errorf("read a manifest of %s: %w", t.id, err)
		}
		entries, err := ice.ReadManifest(mf, bytes.NewReader(mb), true)
		if err != nil {
			return nil, fmt.Errorf("%w: manifest of snapshot %d of %s: %v", ErrCorrupt, sn.SnapshotID, t.id, err)
		}
		for _, e := range entries {
			df := e.DataFile()
			k, err := rel(df.FilePath())
			if err != nil {
				return nil, err
			}
			f := liveFile{Key: k, Deletes: df.ContentType() == ice.EntryContentPosDeletes,
				Snapshot: e.SnapshotID(), Seq: e.SequenceNum(), Rows: df.Count(), Size: df.FileSizeBytes()}
			if f.Deletes {
				f.PosLo, f.PosEnd = posBounds(df)
			}
			out = append(out, f)
		}
	}
	s.known[ck] = out
	return out, nil
}
