package iceberg

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
)

// Reclaimed is what Collect deleted (or, dry, would delete).
type Reclaimed struct {
	Objects int   `json:"objects"`
	Bytes   int64 `json:"bytes"`
}

// CollectOptions shape one Collect.
type CollectOptions struct {
	// Grace spares files younger than this (an engine may be planning a
	// scan from the metadata that named them).
	Grace time.Duration
	// Now is the clock (zero: time.Now()).
	Now time.Time
	// DryRun counts without deleting.
	DryRun bool
	// BeforeDelete, when set, runs before each delete (tests inject crashes).
	BeforeDelete func(key string) error
}

// Collect deletes the Iceberg files no retained snapshot needs, so the
// _iceberg/ prefix stays the size of the retention, not of history:
//
//   - manifest lists, manifests and position-delete files that no snapshot
//     of the table's newest metadata names (those of expired snapshots, and
//     the staged files of a sync that stopped before its publish);
//   - metadata files older than the newest metadataLogMax + 1 (the newest
//     one's metadata log names the rest).
//
// The caller holds the cluster lock, and every sync runs under it too, so
// no sync is staging files Collect could take for garbage. It only deletes,
// so a crash part-way leaves a table every engine reads as before.
func Collect(ctx context.Context, store backend.StorageAdapter, opts CollectOptions) (Reclaimed, error) {
	var out Reclaimed
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	for _, ns := range []string{NamespaceNodes, NamespaceEdges} {
		objs, err := backend.ListAll(ctx, store, Prefix+ns+"/")
		if err != nil {
			return out, fmt.Errorf("list the Iceberg metadata: %w", err)
		}
		byTable := map[string][]backend.Attrs{}
		for _, o := range objs {
			name, _, ok := strings.Cut(strings.TrimPrefix(o.Key, Prefix+ns+"/"), "/")
			if ok {
				byTable[name] = append(byTable[name], o)
			}
		}
		names := make([]string, 0, len(byTable))
		for n := range byTable {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			r, err := collectTable(ctx, store, Ident{Namespace: ns, Name: n}, byTable[n], opts)
			out.Objects += r.Objects
			out.Bytes += r.Bytes
			if err != nil {
				return out, fmt.Errorf("collect the Iceberg files of %s: %w", Ident{Namespace: ns, Name: n}, err)
			}
		}
	}
	return out, nil
}

// collectTable collects one table's files (objs: every object under its
// directory).
func collectTable(ctx context.Context, store backend.StorageAdapter, id Ident, objs []backend.Attrs, opts CollectOptions) (Reclaimed, error) {
	var out Reclaimed
	m, n, err := latest(ctx, store, id, 0, false)
	if err != nil || m == nil {
		// No metadata file at all: a sync stopped before its first publish;
		// its next run reuses what it staged, so leave it.
		return out, err
	}
	keep, err := referenced(ctx, store, id, m, objs)
	if err != nil {
		return out, err
	}
	for _, o := range objs {
		if v, _, ok := parseMetadataName(o.Key); ok {
			if v >= n-metadataLogMax {
				continue
			}
		} else if keep[o.Key] || !collectable(o.Key, id) {
			continue
		}
		if opts.Grace > 0 && opts.Now.Sub(o.ModTime) < opts.Grace {
			continue
		}
		if !opts.DryRun {
			if opts.BeforeDelete != nil {
				if err := opts.BeforeDelete(o.Key); err != nil {
					return out, err
				}
			}
			if err := store.Delete(ctx, o.Key); err != nil && !backend.IsNotFound(err) {
				return out, fmt.Errorf("delete %s: %w", describe(o.Key), err)
			}
		}
		out.Objects++
		out.Bytes += o.Size
	}
	return out, nil
}

// collectable reports whether key is a kind of file Collect may delete when
// unreferenced: a snapshot's manifest list or manifests, or a
// position-delete file (never the version hint or anything unknown).
func collectable(key string, id Ident) bool {
	rest := strings.TrimPrefix(key, id.dir())
	switch {
	case strings.HasPrefix(rest, "metadata/snap-") && strings.HasSuffix(rest, ".avro"):
		return true
	case strings.HasPrefix(rest, "data/") && strings.HasSuffix(rest, ".parquet"):
		return true
	}
	return false
}

// referenced returns the keys of the files m's snapshots name: each
// snapshot's manifest list and manifests (named after it) and its
// position-delete files (from the refs' state for a ref's head, else read
// back from its delete manifest, which only a snapshot with deletes has).
func referenced(ctx context.Context, store backend.StorageAdapter, id Ident, m *metadata, objs []backend.Attrs) (map[string]bool, error) {
	present := make(map[string]bool, len(objs))
	for _, o := range objs {
		present[o.Key] = true
	}
	loc := strings.TrimSuffix(strings.TrimSuffix(m.Location, "/"), "/"+strings.TrimSuffix(id.dir(), "/"))
	s := &syncer{store: store, loc: loc, known: map[string][]liveFile{}}
	t := &tableSync{id: id, key: id.Key()}
	keep := map[string]bool{}
	for i := range m.Snapshots {
		sn := &m.Snapshots[i]
		lk, ok := strings.CutPrefix(sn.ManifestList, loc+"/")
		if !ok {
			return nil, fmt.Errorf("%w: snapshot %d of %s names a manifest list outside the graph root", ErrCorrupt, sn.SnapshotID, id)
		}
		base := strings.TrimSuffix(lk, ".avro")
		keep[lk], keep[base+"-data.avro"], keep[base+"-deletes.avro"] = true, true, true
		if !present[base+"-deletes.avro"] {
			continue
		}
		files, err := s.filesOf(ctx, t, m, sn)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			if f.Deletes {
				keep[f.Key] = true
			}
		}
	}
	return keep, nil
}
