package iceberg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/table"
)

// ErrNoTable: the table has no Iceberg metadata (no sync has written it).
var ErrNoTable = errors.New("iceberg: table has no Iceberg metadata; run 'omnigraph iceberg sync'")

// Table is a table's newest metadata as a catalog serves it.
type Table struct {
	Ident Ident
	// MetadataLocation is the URI of the metadata file read.
	MetadataLocation string
	m                *metadata
}

// Load reads a table's newest metadata: the version hint, that version,
// and a probe that no newer one exists (more probes only while a sync
// left the hint behind), so a cold load costs three requests whatever the
// history (four when the table's metadata is gzip-compressed: the plain
// name is tried first).
func Load(ctx context.Context, store backend.StorageAdapter, id Ident) (*Table, error) {
	n := 0
	b, _, err := store.Get(ctx, id.hintKey())
	switch {
	case err == nil:
		n, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	case !backend.IsNotFound(err):
		return nil, fmt.Errorf("read the version hint of %s: %w", id, err)
	}
	var data []byte
	if n > 0 {
		data, err = getMetadata(ctx, store, id, n, false)
		if backend.IsNotFound(err) {
			n = 0
		} else if err != nil {
			return nil, fmt.Errorf("read metadata of %s: %w", id, err)
		}
	}
	if n == 0 {
		var gz bool
		if n, gz, err = newestVersion(ctx, store, id); err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, fmt.Errorf("%w: %s", ErrNoTable, id)
		}
		if data, err = getMetadata(ctx, store, id, n, gz); err != nil {
			return nil, fmt.Errorf("read metadata of %s: %w", id, err)
		}
	}
	m, err := decodeMetadata(data)
	if err != nil {
		return nil, fmt.Errorf("metadata v%d of %s: %w", n, id, err)
	}
	for {
		// The next file's name is what this one's codec property says.
		next := id.metadataKey(n+1, m.nextGzip())
		ok, err := exists(ctx, store, next)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		if data, _, err = store.Get(ctx, next); err != nil {
			return nil, fmt.Errorf("read metadata of %s: %w", id, err)
		}
		n++
		if m, err = decodeMetadata(data); err != nil {
			return nil, fmt.Errorf("metadata v%d of %s: %w", n, id, err)
		}
	}
	name := id.metadataKey(n, m.gz)
	return &Table{Ident: id, MetadataLocation: m.Location + "/metadata/" + name[strings.LastIndexByte(name, '/')+1:], m: m}, nil
}

// Branches lists the table's refs (graph branch names), sorted.
func (t *Table) Branches() []string {
	out := make([]string, 0, len(t.m.Refs))
	for b := range t.m.Refs {
		out = append(out, b)
	}
	sort.Strings(out)
	return out
}

// JSON renders the metadata a catalog answers with: only the refs of the
// branches visible says the caller may read, only the snapshots those refs
// reach (with refsOnly, only their heads), and without the sync's own
// bookkeeping. main's ref, when hidden, leaves no current snapshot.
func (t *Table) JSON(visible func(branch string) bool, refsOnly bool) (json.RawMessage, error) {
	m := *t.m
	m.state = nil
	m.Properties = maps.Clone(t.m.Properties)
	delete(m.Properties, stateProperty)
	m.Refs = map[string]ref{}
	keep := map[int64]bool{}
	parent := map[int64]int64{}
	for _, s := range t.m.Snapshots {
		if s.ParentSnapshotID != nil {
			parent[s.SnapshotID] = *s.ParentSnapshotID
		}
	}
	for b, r := range t.m.Refs {
		if !visible(b) {
			continue
		}
		m.Refs[b] = r
		for id, ok := r.SnapshotID, true; ok && !keep[id]; id, ok = parent[id] {
			keep[id] = true
			if refsOnly {
				break
			}
		}
	}
	if _, ok := m.Refs[table.MainBranch]; !ok {
		m.CurrentSnapshotID = -1
	}
	m.Snapshots = nil
	for _, s := range t.m.Snapshots {
		if keep[s.SnapshotID] {
			m.Snapshots = append(m.Snapshots, s)
		}
	}
	if m.Snapshots == nil {
		m.Snapshots = []snapshot{}
	}
	m.SnapshotLog = []snapshotLog{}
	for _, l := range t.m.SnapshotLog {
		if keep[l.SnapshotID] {
			m.SnapshotLog = append(m.SnapshotLog, l)
		}
	}
	return json.Marshal(&m)
}

// exists probes one object with one request (Stat: a HEAD on the cloud
// stores; Exists may also list a "directory" when the key is missing).
func exists(ctx context.Context, store backend.StorageAdapter, key string) (bool, error) {
	_, err := store.Stat(ctx, key)
	switch {
	case err == nil:
		return true, nil
	case backend.IsNotFound(err):
		return false, nil
	}
	return false, err
}
