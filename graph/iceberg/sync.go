package iceberg

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	ice "github.com/apache/iceberg-go"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/manifest"
	"github.com/omnigraph-go/omnigraph/table"
)

// Options shape one Sync.
type Options struct {
	// Location is the graph root as engines address it (see Location).
	Location string
	// Branches to bring up to date; nil means every live branch, and then
	// the refs of deleted branches are dropped too.
	Branches []string
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Expire, when set, also expires every snapshot whose table version
	// the retention does not keep (cleanup sets it before it deletes).
	Expire *Retention
	// MetadataCompression is the codec of the metadata files: CodecNone
	// (plain JSON), CodecGzip, or "" to keep each table's (CodecNone for a
	// new table, and for one whose files predate the choice). A table's
	// codec is recorded in its metadata (write.metadata.compression-codec)
	// and applies from the file after the one that records it.
	MetadataCompression string
}

// Retention is what cleanup keeps: a snapshot survives expiry only if the
// table version it shows is kept, so cleanup never deletes a file that a
// retained snapshot references.
type Retention struct {
	// Kept reports whether cleanup keeps a table version.
	Kept func(path, branch string, version uint64) bool
	// Entries are the manifest versions cleanup walked, by commit id.
	Entries map[string]*manifest.Entry
}

// TableResult is one table after a sync.
type TableResult struct {
	Table Ident `json:"table"`
	// MetadataLocation is the table's current metadata file (a URI).
	MetadataLocation string `json:"metadata_location"`
	// MetadataVersion is N of v<N>.metadata.json (or v<N>.gz.metadata.json).
	MetadataVersion int `json:"metadata_version"`
	// Added counts the snapshots this sync added; Expired those it expired.
	Added   int `json:"snapshots_added"`
	Expired int `json:"snapshots_expired"`
	// gz: metadata file MetadataVersion is gzip-compressed.
	gz bool
}

// Result is what a sync did.
type Result struct {
	Tables []TableResult `json:"tables"`
	// Branches lists the branches brought up to date.
	Branches []string `json:"branches"`
}

// ErrConflict: another sync kept publishing first; run again.
var ErrConflict = errors.New("iceberg: another sync kept publishing the same table first; run the sync again")

// maxAttempts bounds the re-applies of one table's changes after losing the
// put-if-absent of its next metadata file.
const maxAttempts = 8

// op is one change to apply to a table's metadata: the table as a branch
// shows it at a graph commit (or, with drop, the branch no longer has it).
type op struct {
	branch string
	inc    uint64
	// seq orders the op in the branch's own life: the manifest version, or
	// 0 for a commit the branch inherited from its parent at the fork.
	seq   uint64
	entry *manifest.Entry
	pin   manifest.TablePin
	drop  bool
}

// tableSync is one table's pending work.
type tableSync struct {
	id  Ident
	key string
	// hint is the metadata version a cursor remembered (0: unknown), and
	// hintGz whether that file is gzip-compressed.
	hint   int
	hintGz bool
	ops    []op
	res    TableResult
}

type syncer struct {
	g     *graph.Graph
	store backend.StorageAdapter
	loc   string
	now   func() time.Time
	opts  Options

	tables map[string]*tableSync
	order  []string
	// cursors to write once every table is published.
	cursors []*cursor
	// files of snapshots read back from manifests, by table and id.
	known map[string][]liveFile
}

// cursor remembers how far a branch was synced: its life and version, the
// table pins of that version, and each table's metadata version.
type cursor struct {
	GraphID     string              `json:"graph_id"`
	Branch      string              `json:"branch"`
	Incarnation uint64              `json:"incarnation"`
	Version     uint64              `json:"version"`
	Pins        []pin               `json:"-"`
	Tables      map[string]tablePos `json:"tables"`
	etag        string
}

type tablePos struct {
	Path     string `json:"path"`
	Branch   string `json:"branch"`
	Version  uint64 `json:"v"`
	Metadata int    `json:"metadata"`
	// Gzip: metadata file Metadata is gzip-compressed. A cursor written
	// before plain JSON was the default lacks it; its table's file is then
	// found with one more GET.
	Gzip bool `json:"gz,omitempty"`
}

// Sync brings the Iceberg metadata of every node and edge table up to date
// with the graph's branches (see the package comment). It writes only under
// Prefix, never the graph's own keys, so it runs beside writers; g may be a
// read-only handle.
func Sync(ctx context.Context, g *graph.Graph, opts Options) (*Result, error) {
	if opts.Location == "" {
		return nil, fmt.Errorf("%w: the Iceberg location of the graph root is not set (give the store URL, or --location)", graph.ErrInvalidInput)
	}
	switch opts.MetadataCompression {
	case "", CodecNone, CodecGzip:
	default:
		return nil, fmt.Errorf("%w: metadata compression %q: give %q or %q", graph.ErrInvalidInput, opts.MetadataCompression, CodecNone, CodecGzip)
	}
	s := &syncer{g: g, store: g.Store(), loc: strings.TrimSuffix(opts.Location, "/"), now: opts.Now, opts: opts,
		tables: map[string]*tableSync{}, known: map[string][]liveFile{}}
	if s.now == nil {
		s.now = time.Now
	}
	branches := opts.Branches
	all := branches == nil
	if all {
		refs, err := g.Manifest().Branches(ctx)
		if err != nil {
			return nil, err
		}
		for _, r := range refs {
			if !manifest.IsInternalBranch(r.Branch) {
				branches = append(branches, r.Branch)
			}
		}
	}
	res := &Result{}
	for _, b := range branches {
		if err := s.branch(ctx, b); err != nil {
			return nil, fmt.Errorf("sync branch %q: %w", b, err)
		}
		res.Branches = append(res.Branches, b)
	}
	if all {
		if err := s.deadBranches(ctx, branches); err != nil {
			return nil, err
		}
	}
	if opts.Expire != nil {
		s.expireAll()
	}
	for _, k := range s.order {
		t := s.tables[k]
		if len(t.ops) == 0 && opts.Expire == nil {
			continue
		}
		if err := s.publish(ctx, t); err != nil {
			return nil, fmt.Errorf("sync table %s: %w", t.id, err)
		}
		if t.res.MetadataVersion > 0 {
			res.Tables = append(res.Tables, t.res)
		}
	}
	for _, c := range s.cursors {
		for k, p := range c.Tables {
			if t := s.tables[k]; t != nil && t.res.MetadataVersion > 0 {
				p.Metadata, p.Gzip = t.res.MetadataVersion, t.res.gz
				c.Tables[k] = p
			}
		}
		if err := s.writeCursor(ctx, c); err != nil {
			return nil, err
		}
	}
	sort.Slice(res.Tables, func(i, j int) bool { return res.Tables[i].Table.String() < res.Tables[j].Table.String() })
	return res, nil
}

// table returns the pending work of a table key, creating it.
func (s *syncer) table(key string) (*tableSync, bool) {
	if t := s.tables[key]; t != nil {
		return t, true
	}
	id, ok := IdentOf(key)
	if !ok {
		return nil, false
	}
	t := &tableSync{id: id, key: key}
	t.res.Table = id
	s.tables[key] = t
	s.order = append(s.order, key)
	return t, true
}

// branch queues the ops that bring one branch's refs up to its head: the
// commits since its cursor, or (no cursor, or a new life of the name) its
// whole first-parent history.
func (s *syncer) branch(ctx context.Context, name string) error {
	man := s.g.Manifest()
	r, err := man.Probe(ctx, name)
	if err != nil {
		return err
	}
	if !r.Live() {
		return fmt.Errorf("%w: %q", manifest.ErrBranchNotFound, name)
	}
	head, err := man.Read(ctx, r)
	if err != nil {
		return err
	}
	cur, err := s.readCursor(ctx, name)
	if err != nil {
		return err
	}
	next := &cursor{GraphID: head.GraphID, Branch: name, Incarnation: head.Incarnation, Version: head.Version, Tables: map[string]tablePos{}}
	if cur != nil {
		next.etag = cur.etag
	}
	if cur != nil && (cur.GraphID != head.GraphID || cur.Incarnation != head.Incarnation || cur.Version > head.Version) {
		cur = nil // another life of the name (or another graph, or unreadable): start over
	}
	for _, p := range head.Tables {
		next.Tables[p.Key] = tablePos{Path: p.Path, Branch: p.Branch, Version: p.Version}
	}
	if cur != nil && cur.Version == head.Version {
		// Up to date: nothing to read or write for this branch.
		for k, p := range cur.Tables {
			if t, ok := s.table(k); ok && t.hint == 0 {
				t.hint, t.hintGz = p.Metadata, p.Gzip
			}
		}
		return nil
	}
	var entries []*manifest.Entry
	prev := map[string]manifest.TablePin{}
	if cur != nil {
		for k, p := range cur.Tables {
			prev[k] = manifest.TablePin{Key: k, Path: p.Path, Branch: p.Branch, Version: p.Version}
			if t, ok := s.table(k); ok && t.hint == 0 {
				t.hint, t.hintGz = p.Metadata, p.Gzip
			}
		}
		entries = make([]*manifest.Entry, head.Version-cur.Version)
		entries[len(entries)-1] = head
		if err := s.readVersions(ctx, head, cur.Version+1, entries); err != nil {
			return err
		}
	} else {
		if err := man.History(ctx, head, func(e *manifest.Entry) (bool, error) {
			entries = append(entries, e)
			return true, nil
		}); err != nil {
			return err
		}
		slices.Reverse(entries)
	}
	for _, e := range entries {
		if e.Pruned {
			continue // its tables are gone: no snapshot can show them
		}
		seq := uint64(0)
		if e.Branch == name && e.Incarnation == head.Incarnation {
			seq = e.Version
		}
		now := map[string]manifest.TablePin{}
		for _, p := range e.Tables {
			now[p.Key] = p
			if old, ok := prev[p.Key]; ok && old == p {
				continue
			}
			if t, ok := s.table(p.Key); ok {
				t.ops = append(t.ops, op{branch: name, inc: head.Incarnation, seq: seq, entry: e, pin: p})
			}
		}
		for k := range prev {
			if _, ok := now[k]; !ok {
				if t, ok := s.table(k); ok {
					t.ops = append(t.ops, op{branch: name, inc: head.Incarnation, seq: seq, entry: e, drop: true})
				}
			}
		}
		prev = now
	}
	s.cursors = append(s.cursors, next)
	return nil
}

// readVersions fills entries[i] with version from+i of head's life (the
// last slot, head itself, is already set), in parallel.
func (s *syncer) readVersions(ctx context.Context, head *manifest.Entry, from uint64, entries []*manifest.Entry) error {
	n := len(entries) - 1
	errs := make(chan error, n)
	sem := make(chan struct{}, 16)
	for i := 0; i < n; i++ {
		sem <- struct{}{}
		go func(i int) {
			defer func() { <-sem }()
			e, err := s.g.Manifest().ReadVersion(ctx, head.Branch, head.Incarnation, from+uint64(i))
			if errors.Is(err, manifest.ErrCleanedUp) {
				e, err = &manifest.Entry{Pruned: true}, nil
			}
			entries[i] = e
			errs <- err
		}(i)
	}
	var first error
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// deadBranches queues the removal of the refs of branches that have a
// cursor but are no longer live, and deletes their cursors afterwards.
func (s *syncer) deadBranches(ctx context.Context, live []string) error {
	objs, err := backend.ListAll(ctx, s.store, Prefix+"_sync/")
	if err != nil {
		return fmt.Errorf("list sync cursors: %w", err)
	}
	for _, o := range objs {
		name := strings.TrimSuffix(strings.TrimPrefix(o.Key, Prefix+"_sync/"), ".json")
		if slices.Contains(live, name) {
			continue
		}
		cur, err := s.readCursor(ctx, name)
		if err != nil || cur == nil || cur.Branch != name {
			continue
		}
		for k := range cur.Tables {
			if t, ok := s.table(k); ok {
				t.ops = append(t.ops, op{branch: name, inc: cur.Incarnation, drop: true})
			}
		}
		s.cursors = append(s.cursors, &cursor{Branch: name, etag: "delete"})
	}
	return nil
}

func (s *syncer) readCursor(ctx context.Context, branch string) (*cursor, error) {
	b, a, err := s.store.Get(ctx, cursorKey(branch))
	if backend.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the sync cursor of %q: %w", branch, err)
	}
	var c cursor
	if err := json.Unmarshal(b, &c); err != nil || c.Branch != branch {
		// Unreadable: sync from scratch, and replace it (by its version).
		return &cursor{etag: a.Version}, nil
	}
	c.etag = a.Version
	return &c, nil
}

// writeCursor stores a branch's cursor. It is only a shortcut (the table
// metadata holds the truth), so a lost race or a failure costs the next
// sync more reads, never a wrong answer.
func (s *syncer) writeCursor(ctx context.Context, c *cursor) error {
	key := cursorKey(c.Branch)
	if c.etag == "delete" {
		return s.store.Delete(ctx, key)
	}
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	switch {
	case c.etag != "" && s.store.Capabilities().ConditionalUpdate:
		_, err = s.store.PutIfMatch(ctx, key, b, c.etag)
	case c.etag == "":
		_, err = s.store.PutIfAbsent(ctx, key, b)
	default:
		_, err = s.store.Put(ctx, key, b)
	}
	if errors.Is(err, backend.ErrPrecondition) {
		return nil // another sync moved it
	}
	if err != nil {
		return fmt.Errorf("write the sync cursor of %q: %w", c.Branch, err)
	}
	return nil
}

// newUUID returns a random RFC 4122 version-4 UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// publish applies a table's ops to its newest metadata and writes the next
// metadata file with put-if-absent; losing that race re-reads and
// re-applies (the ops are idempotent), up to maxAttempts times.
func (s *syncer) publish(ctx context.Context, t *tableSync) error {
	hint := t.hint
	for attempt := 0; attempt < maxAttempts; attempt++ {
		m, n, err := latest(ctx, s.store, t.id, hint, t.hintGz)
		if err != nil {
			return err
		}
		if m == nil {
			codec := s.opts.MetadataCompression
			if codec == "" {
				codec = CodecNone
			}
			m = newMetadata(newUUID(), join(s.loc, strings.TrimSuffix(t.id.dir(), "/")), s.g.ID(), t.key, codec)
		}
		if m.Properties[graphProperty] != "" && m.Properties[graphProperty] != s.g.ID() {
			return fmt.Errorf("%w: %s holds the metadata of another graph; remove the %s prefix of this store to start over", ErrCorrupt, t.id, Prefix)
		}
		added, expired, changed, err := s.apply(ctx, t, m)
		if err != nil {
			return err
		}
		t.res.Added, t.res.Expired = added, expired
		if !changed {
			if n > 0 {
				t.res.MetadataVersion, t.res.gz = n, m.gz
				t.res.MetadataLocation = join(s.loc, t.id.metadataKey(n, m.gz))
			}
			return nil
		}
		// This file's name and codec are what the file it extends says;
		// the option (or, without one, plain JSON for a table whose files
		// predate the property) is recorded for the files after it.
		gz := m.nextGzip()
		if c := s.opts.MetadataCompression; c != "" {
			m.Properties[codecProperty] = c
		} else if _, ok := m.Properties[codecProperty]; !ok {
			m.Properties[codecProperty] = CodecNone
		}
		nowMS := s.now().UnixMilli()
		m.LastUpdatedMS = max(m.LastUpdatedMS, nowMS)
		if n > 0 {
			m.MetadataLog = append(m.MetadataLog, metadataLog{TimestampMS: m.LastUpdatedMS, MetadataFile: join(s.loc, t.id.metadataKey(n, m.gz))})
			if len(m.MetadataLog) > metadataLogMax {
				m.MetadataLog = m.MetadataLog[len(m.MetadataLog)-metadataLogMax:]
			}
		}
		b, err := m.encode(gz)
		if err != nil {
			return err
		}
		key := t.id.metadataKey(n+1, gz)
		_, err = s.store.PutIfAbsent(ctx, key, b)
		if errors.Is(err, backend.ErrUnknown) {
			// The answer was lost: the file is ours only if it holds our bytes.
			got, _, gerr := s.store.Get(ctx, key)
			switch {
			case gerr == nil && bytes.Equal(got, b):
				err = nil
			case gerr == nil || backend.IsNotFound(gerr):
				err = backend.ErrPrecondition
			default:
				return fmt.Errorf("publish metadata v%d: the answer was lost and reading it back failed: %w", n+1, gerr)
			}
		}
		if errors.Is(err, backend.ErrPrecondition) {
			hint = 0 // someone else published: find the newest and re-apply
			continue
		}
		if err != nil {
			return fmt.Errorf("publish metadata v%d: %w", n+1, err)
		}
		t.res.MetadataVersion, t.res.gz = n+1, gz
		t.res.MetadataLocation = join(s.loc, key)
		// The hint only speeds up readers (they probe past it); a failure
		// leaves it one behind, and the next sync rewrites it.
		_, _ = s.store.Put(ctx, t.id.hintKey(), []byte(strconv.Itoa(n+1)))
		return nil
	}
	return ErrConflict
}

// metadataLogMax bounds the metadata log each file carries.
const metadataLogMax = 10

// latest reads a table's newest metadata file: the version a cursor
// remembered when given (one GET, by the name gz says; a newer one makes
// the publish lose its put-if-absent, and the retry looks for the newest),
// else through the version hint and a probe past it, else by listing. It
// returns nil and 0 when the table has none.
func latest(ctx context.Context, store backend.StorageAdapter, id Ident, hint int, gz bool) (*metadata, int, error) {
	if hint > 0 {
		return readMetadata(ctx, store, id, hint, gz)
	}
	n, gz, err := newestVersion(ctx, store, id)
	if err != nil || n == 0 {
		return nil, 0, err
	}
	return readMetadata(ctx, store, id, n, gz)
}

// getMetadata GETs metadata file n by the name gz says, then by the other
// name (a cursor or hint does not always know the codec). It answers
// not found only when neither exists.
func getMetadata(ctx context.Context, store backend.StorageAdapter, id Ident, n int, gz bool) ([]byte, error) {
	b, _, err := store.Get(ctx, id.metadataKey(n, gz))
	if backend.IsNotFound(err) {
		b, _, err = store.Get(ctx, id.metadataKey(n, !gz))
	}
	return b, err
}

// readMetadata reads metadata file n. A missing one (cleanup removed an
// old version) falls back to the newest.
func readMetadata(ctx context.Context, store backend.StorageAdapter, id Ident, n int, gz bool) (*metadata, int, error) {
	b, err := getMetadata(ctx, store, id, n, gz)
	if backend.IsNotFound(err) {
		m, mgz, err := newestVersion(ctx, store, id)
		if err != nil || m == 0 || m == n {
			return nil, 0, err
		}
		return readMetadata(ctx, store, id, m, mgz)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read metadata of %s: %w", id, err)
	}
	m, err := decodeMetadata(b)
	if err != nil {
		return nil, 0, fmt.Errorf("metadata v%d of %s: %w", n, id, err)
	}
	return m, n, nil
}

// existsVersion probes metadata file n under either name (plain first),
// and reports which one exists.
func existsVersion(ctx context.Context, store backend.StorageAdapter, id Ident, n int) (ok, gz bool, err error) {
	for _, gz := range []bool{false, true} {
		ok, err := exists(ctx, store, id.metadataKey(n, gz))
		if ok || err != nil {
			return ok, gz, err
		}
	}
	return false, false, nil
}

// newestVersion finds the newest metadata version and whether it is
// gzip-compressed: the hint, then a probe of each next version until one
// is missing; without a hint, a listing.
func newestVersion(ctx context.Context, store backend.StorageAdapter, id Ident) (int, bool, error) {
	n := 0
	b, _, err := store.Get(ctx, id.hintKey())
	switch {
	case err == nil:
		n, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	case !backend.IsNotFound(err):
		return 0, false, fmt.Errorf("read version hint of %s: %w", id, err)
	}
	if n > 0 {
		ok, gz, err := existsVersion(ctx, store, id, n)
		if err != nil {
			return 0, false, err
		}
		if ok {
			for {
				ok, ngz, err := existsVersion(ctx, store, id, n+1)
				if err != nil {
					return 0, false, err
				}
				if !ok {
					return n, gz, nil
				}
				n, gz = n+1, ngz
			}
		}
	}
	objs, err := backend.ListAll(ctx, store, id.metadataDir()+"v")
	if err != nil {
		return 0, false, fmt.Errorf("list metadata of %s: %w", id, err)
	}
	n = 0
	gz := false
	for _, o := range objs {
		if v, vgz, ok := parseMetadataName(o.Key); ok && v > n {
			n, gz = v, vgz
		}
	}
	return n, gz, nil
}

// apply applies t's ops (and expiry) to m. It reports the snapshots added
// and expired and whether m changed.
func (s *syncer) apply(ctx context.Context, t *tableSync, m *metadata) (added, expired int, changed bool, err error) {
	// A ref already synced in this life of its branch has applied every
	// commit the branch inherited (ops with seq 0): they come first.
	before := map[string]uint64{}
	for b, rs := range m.state.Refs {
		before[b] = rs.Incarnation
	}
	for _, o := range t.ops {
		rs := m.state.Refs[o.branch]
		if rs != nil && rs.Incarnation != o.inc {
			rs = nil // an earlier life of the branch name: replaced
		}
		if !o.drop && o.seq == 0 {
			if inc, ok := before[o.branch]; ok && inc == o.inc {
				continue
			}
		} else if !o.drop && rs != nil && o.seq <= rs.Version {
			continue // applied by an earlier sync
		}
		if o.drop {
			if _, ok := m.Refs[o.branch]; ok || m.state.Refs[o.branch] != nil {
				if rs == nil && m.state.Refs[o.branch] != nil && o.seq != 0 {
					continue // a newer life of the name holds the ref
				}
				delete(m.Refs, o.branch)
				delete(m.state.Refs, o.branch)
				if o.branch == table.MainBranch {
					m.CurrentSnapshotID = -1
				}
				changed = true
			}
			continue
		}
		if rs != nil && rs.Pin == pinOf(o.pin) {
			rs.Version = o.seq
			continue
		}
		snap, files, isNew, err := s.snapshotFor(ctx, t, m, rs, o)
		if err != nil {
			return 0, 0, false, err
		}
		if snap == nil {
			continue // the table version is gone (cleaned up)
		}
		if isNew {
			added++
		}
		m.Refs[o.branch] = ref{SnapshotID: snap.SnapshotID, Type: "branch"}
		m.state.Refs[o.branch] = &refState{Incarnation: o.inc, Version: o.seq, Snapshot: snap.SnapshotID, Pin: pinOf(o.pin), Files: files}
		if o.branch == table.MainBranch {
			m.CurrentSnapshotID = snap.SnapshotID
			m.CurrentSchemaID = snap.SchemaID
			m.SnapshotLog = append(m.SnapshotLog, snapshotLog{TimestampMS: snap.TimestampMS, SnapshotID: snap.SnapshotID})
		}
		changed = true
	}
	if s.opts.Expire != nil {
		n := expire(t.key, m, s.opts.Expire)
		expired += n
		changed = changed || n > 0
	}
	if changed {
		if cur := m.schema(m.CurrentSchemaID); cur != nil {
			nm, err := nameMapping(cur, m.Schemas)
			if err != nil {
				return 0, 0, false, err
			}
			m.Properties[nameMappingProperty] = nm
		}
	}
	return added, expired, changed, nil
}

func pinOf(p manifest.TablePin) pin { return pin{Path: p.Path, Branch: p.Branch, Version: p.Version} }

// snapshotFor returns the snapshot of o's commit: the existing one (a
// commit the branch shares with another) or a new one, written now. nil
// means the table version no longer exists.
func (s *syncer) snapshotFor(ctx context.Context, t *tableSync, m *metadata, rs *refState, o op) (*snapshot, []liveFile, bool, error) {
	commit := o.entry.Head
	if ex := m.byCommit(commit); ex != nil {
		files, err := s.filesOf(ctx, t, m, ex)
		return ex, files, false, err
	}
	ds, err := table.OpenVersion(ctx, s.store, o.pin.Path, o.pin.Branch, o.pin.Version)
	if errors.Is(err, table.ErrNotFound) {
		return nil, nil, false, nil
	}
	if err != nil {
		return nil, nil, false, err
	}
	tm := ds.Manifest()
	var parent *snapshot
	var parentFiles []liveFile
	if rs != nil {
		parent = m.snapshot(rs.Snapshot)
		parentFiles = rs.Files
	}
	schemaID, err := s.schemaFor(ctx, t, m, parent, o, ds)
	if err != nil {
		return nil, nil, false, err
	}
	seq := m.LastSequenceNumber + 1
	sn := &snapshot{SequenceNumber: seq, SnapshotID: seq, TimestampMS: o.entry.Commit.TimeMicros / 1000, SchemaID: schemaID}
	if parent != nil {
		id := parent.SnapshotID
		sn.ParentSnapshotID = &id
	}
	base := t.id.snapshotBase(seq, commit)
	files, summary, err := s.writeSnapshotFiles(ctx, t, m, sn, base, o, tm, parentFiles)
	if err != nil {
		return nil, nil, false, err
	}
	sn.Summary = summary
	sn.ManifestList = join(s.loc, base+".avro")
	m.Snapshots = append(m.Snapshots, *sn)
	m.LastSequenceNumber = seq
	return sn, files, true, nil
}

// schemaFor returns the id of the Iceberg schema of a table version: an
// existing schema with the same fields, or a new one evolved from the
// parent's (renames read from the commit's accepted schema, only when a
// column name is new).
func (s *syncer) schemaFor(ctx context.Context, t *tableSync, m *metadata, parent *snapshot, o op, ds *table.Dataset) (int, error) {
	var prev *ice.Schema
	if parent != nil {
		prev = m.schema(parent.SchemaID)
	}
	if prev == nil {
		prev = m.schema(m.CurrentSchemaID)
	}
	var renamed map[string]string
	if prev != nil {
		for _, name := range arrowNames(ds.Schema()) {
			if _, ok := prev.FindFieldByName(name); !ok {
				r, err := s.renames(ctx, t, o.entry)
				if err != nil {
					return 0, err
				}
				renamed = r
				break
			}
		}
	}
	fields, last, err := evolve(ds.Schema(), prev, m.LastColumnID, renamed)
	if err != nil {
		return 0, fmt.Errorf("schema of %s: %w", t.id, err)
	}
	for _, sc := range m.Schemas {
		if sameFields(sc.Fields(), fields) {
			return sc.ID, nil
		}
	}
	id := 0
	for _, sc := range m.Schemas {
		id = max(id, sc.ID+1)
	}
	m.Schemas = append(m.Schemas, ice.NewSchema(id, fields...))
	m.LastColumnID = last
	return id, nil
}

// renames maps each renamed property of the table's type (new name → old
// name) from the commit's accepted schema.
func (s *syncer) renames(ctx context.Context, t *tableSync, e *manifest.Entry) (map[string]string, error) {
	cat, err := s.g.SnapshotOf(e).Catalog(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	if t.id.Namespace == NamespaceNodes {
		if n, ok := cat.Node(t.id.Name); ok {
			for _, p := range n.Properties {
				if from := p.Annotations.Text("rename_from"); from != "" {
					out[p.Name] = from
				}
			}
		}
	} else if ed, ok := cat.Edge(t.id.Name); ok {
		for _, p := range ed.Properties {
			if from := p.Annotations.Text("rename_from"); from != "" {
				out[p.Name] = from
			}
		}
	}
	return out, nil
}
