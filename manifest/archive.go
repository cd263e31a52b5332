package manifest

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/omnigraph-go/omnigraph/backend"
)

// Pruned history.
//
// Cleanup prunes manifest versions beyond its retention: each pruned
// version's object is overwritten with zero bytes (never deleted, so its
// key stays taken and a late or stale publish of that version still fails
// its PutIfAbsent), and its commit (id, parents, actor, time) moves first
// into the incarnation's archive, one compact gzip-compressed object:
//
//	__manifest/archive/<name>/.v/<inv incarnation>
//
// A zero-byte object below a branch's head is a pruned version; the head
// is never pruned, so a zero-byte head is still a deletion. History lists
// a pruned version's commit from the archive (its Entry has Pruned set and
// no tables); reading its tables (ReadVersion, FindCommit, time travel)
// is ErrCleanedUp.

// ErrCleanedUp: the manifest version (or commit) was pruned by cleanup:
// its commit is still listed in history, but its tables are gone.
var ErrCleanedUp = errors.New("history cleaned up")

// archiveDir holds the archives of pruned versions.
const archiveDir = Dir + dirArchive + "/"

// ArchiveKey is where the pruned commits of one incarnation are kept.
func ArchiveKey(branch string, incarnation uint64) string {
	return archiveDir + branch + "/" + versionsMarker + "/" + Inv(incarnation)
}

// archivedCommit is one pruned version's commit.
type archivedCommit struct {
	Version    uint64
	ID         string
	Parents    []string
	Actor      string
	TimeMicros int64
}

// archive is the stored archive of one incarnation, commits by version.
type archive struct {
	Branch      string
	Incarnation uint64
	CleanedUS   int64
	Commits     []archivedCommit
	// Merged keeps the merged locations (Entry.Merged) of the pruned
	// merge commits, by version.
	Merged map[uint64]ForkPoint
}

func (a *archive) find(v uint64) (archivedCommit, bool) {
	i := sort.Search(len(a.Commits), func(i int) bool { return a.Commits[i].Version >= v })
	if i < len(a.Commits) && a.Commits[i].Version == v {
		return a.Commits[i], true
	}
	return archivedCommit{}, false
}

// entry is the hollow Entry of an archived commit: its commit, no tables.
func (a *archive) entry(c archivedCommit) *Entry {
	e := &Entry{
		Stamp: StampCurrent, Kind: KindCommit, Branch: a.Branch, Incarnation: a.Incarnation,
		Version: c.Version, Head: c.ID, Pruned: true,
		Commit: &Commit{ID: c.ID, Parents: append([]string{}, c.Parents...), Actor: c.Actor, TimeMicros: c.TimeMicros},
	}
	if m, ok := a.Merged[c.Version]; ok && len(c.Parents) == 2 && c.Parents[1] == m.Head {
		e.Merged = &m
	}
	return e
}

// The archive's bytes are gzip over a compact layout (a commit costs ~20
// bytes, most of them its id's randomness):
//
//	magic, a JSON header (branch, incarnation, cleaned_us, actors), the
//	commit count, then per commit in version order: the version's delta,
//	the id, the parents (each "the commit before" or an id), the actor's
//	index in the header and the time's zigzag delta.
//
// An id is 16 bytes when it is a ULID in canonical form, else its string.
const archiveMagic = "OGARC1\n"

type archiveHeader struct {
	Branch      string   `json:"branch"`
	Incarnation uint64   `json:"incarnation"`
	CleanedUS   int64    `json:"cleaned_us"`
	Actors      []string `json:"actors"`
	// Merged: the merged locations of pruned merge commits (an addition
	// older readers ignore).
	Merged []archivedMerge `json:"merged,omitempty"`
}

// archivedMerge is the merged location of one pruned merge commit.
type archivedMerge struct {
	Version uint64    `json:"version"`
	Merged  ForkPoint `json:"merged"`
}

func putUvarint(b *bytes.Buffer, v uint64) {
	var tmp [binary.MaxVarintLen64]byte
	b.Write(tmp[:binary.PutUvarint(tmp[:], v)])
}

func putID(b *bytes.Buffer, id string) {
	if u, err := ulid.ParseStrict(id); err == nil && u.String() == id {
		b.WriteByte(0)
		b.Write(u[:])
		return
	}
	b.WriteByte(1)
	putUvarint(b, uint64(len(id)))
	b.WriteString(id)
}

func encodeArchive(a *archive) ([]byte, error) {
	h := archiveHeader{Branch: a.Branch, Incarnation: a.Incarnation, CleanedUS: a.CleanedUS}
	for _, c := range a.Commits {
		if m, ok := a.Merged[c.Version]; ok {
			h.Merged = append(h.Merged, archivedMerge{Version: c.Version, Merged: m})
		}
	}
	actor := map[string]int{}
	for _, c := range a.Commits {
		if _, ok := actor[c.Actor]; !ok {
			actor[c.Actor] = len(h.Actors)
			h.Actors = append(h.Actors, c.Actor)
		}
	}
	head, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	var raw bytes.Buffer
	raw.WriteString(archiveMagic)
	putUvarint(&raw, uint64(len(head)))
	raw.Write(head)
	putUvarint(&raw, uint64(len(a.Commits)))
	var prevV uint64
	var prevT int64
	prevID := ""
	for _, c := range a.Commits {
		putUvarint(&raw, c.Version-prevV)
		putID(&raw, c.ID)
		putUvarint(&raw, uint64(len(c.Parents)))
		for _, p := range c.Parents {
			if p == prevID {
				raw.WriteByte(0)
				continue
			}
			raw.WriteByte(1)
			putID(&raw, p)
		}
		putUvarint(&raw, uint64(actor[c.Actor]))
		d := c.TimeMicros - prevT
		putUvarint(&raw, uint64(d<<1)^uint64(d>>63))
		prevV, prevT, prevID = c.Version, c.TimeMicros, c.ID
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(raw.Bytes()); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// archiveReader reads the compact layout; the first error sticks.
type archiveReader struct {
	b   []byte
	err error
}

func (r *archiveReader) fail() {
	if r.err == nil {
		r.err = errors.New("truncated")
	}
}

func (r *archiveReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *archiveReader) bytes(n uint64) []byte {
	if r.err != nil || uint64(len(r.b)) < n {
		r.fail()
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *archiveReader) id() string {
	switch t := r.bytes(1); {
	case t == nil:
		return ""
	case t[0] == 0:
		var u ulid.ULID
		copy(u[:], r.bytes(16))
		return u.String()
	default:
		return string(r.bytes(r.uvarint()))
	}
}

func decodeArchive(data []byte) (*archive, error) {
	bad := func(err error) error {
		return fmt.Errorf("%w: the archive of pruned history: %v", ErrCorrupt, err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, bad(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, bad(err)
	}
	if !bytes.HasPrefix(raw, []byte(archiveMagic)) {
		return nil, bad(errors.New("bad magic"))
	}
	r := &archiveReader{b: raw[len(archiveMagic):]}
	var h archiveHeader
	if hb := r.bytes(r.uvarint()); r.err == nil {
		if err := json.Unmarshal(hb, &h); err != nil {
			return nil, bad(err)
		}
	}
	a := &archive{Branch: h.Branch, Incarnation: h.Incarnation, CleanedUS: h.CleanedUS}
	for _, m := range h.Merged {
		if a.Merged == nil {
			a.Merged = map[uint64]ForkPoint{}
		}
		a.Merged[m.Version] = m.Merged
	}
	n := r.uvarint()
	var prevV uint64
	var prevT int64
	prevID := ""
	for i := uint64(0); i < n && r.err == nil; i++ {
		c := archivedCommit{Version: prevV + r.uvarint(), ID: r.id()}
		np := r.uvarint()
		for j := uint64(0); j < np && r.err == nil; j++ {
			if t := r.bytes(1); t != nil && t[0] == 0 {
				c.Parents = append(c.Parents, prevID)
			} else {
				c.Parents = append(c.Parents, r.id())
			}
		}
		ai := r.uvarint()
		if r.err == nil && ai >= uint64(len(h.Actors)) {
			return nil, bad(errors.New("actor out of range"))
		}
		if r.err == nil {
			c.Actor = h.Actors[ai]
		}
		z := r.uvarint()
		c.TimeMicros = prevT + (int64(z>>1) ^ -int64(z&1))
		a.Commits = append(a.Commits, c)
		prevV, prevT, prevID = c.Version, c.TimeMicros, c.ID
	}
	if r.err != nil {
		return nil, bad(r.err)
	}
	return a, nil
}

// readArchive returns the archive of one incarnation (empty when nothing
// of it was pruned): one GET.
func (m *Store) readArchive(ctx context.Context, branch string, incarnation uint64) (*archive, error) {
	data, _, err := m.s.Get(ctx, ArchiveKey(branch, incarnation))
	if errors.Is(err, backend.ErrNotFound) {
		return &archive{Branch: branch, Incarnation: incarnation}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the archive of pruned history: %w", err)
	}
	a, err := decodeArchive(data)
	if err != nil {
		return nil, err
	}
	if a.Branch != branch || a.Incarnation != incarnation {
		return nil, fmt.Errorf("%w: the archive of %q incarnation %d holds %q incarnation %d", ErrCorrupt, branch, incarnation, a.Branch, a.Incarnation)
	}
	return a, nil
}

// cleanedUp is the error of reading pruned version v.
func (a *archive) cleanedUp(v uint64) error {
	when := ""
	if a.CleanedUS > 0 {
		when = " on " + time.UnixMicro(a.CleanedUS).UTC().Format(time.RFC3339)
	}
	return fmt.Errorf("%w: version %d of branch %q was removed by cleanup%s (it was older than the retention); its commit is still listed by 'omnigraph commit list', but its data can no longer be read", ErrCleanedUp, v, a.Branch, when)
}

// PruneOptions shape one Prune.
type PruneOptions struct {
	// Now stamps the archive (zero: time.Now()).
	Now time.Time
	// BeforeWrite, when set, runs before each write (tests inject crashes).
	BeforeWrite func(key string) error
}

// Prune removes the given commit versions of one live incarnation: their
// commits are added to the incarnation's archive (one Put), then each
// version's object is overwritten with zero bytes (one Put each). The
// caller (cleanup) chooses versions no reader needs any more: never the
// head, never the genesis (version 1). Versions already pruned are
// skipped. A crash part-way leaves every version either whole or pruned
// with its commit archived.
func (m *Store) Prune(ctx context.Context, entries []*Entry, opts PruneOptions) error {
	if len(entries) == 0 {
		return nil
	}
	branch, inc := entries[0].Branch, entries[0].Incarnation
	for _, e := range entries {
		if e.Branch != branch || e.Incarnation != inc {
			return fmt.Errorf("prune: versions of more than one incarnation (%q %d and %q %d)", branch, inc, e.Branch, e.Incarnation)
		}
		if e.Version <= 1 || e.Kind != KindCommit || e.Commit == nil {
			return fmt.Errorf("prune: version %d of %q is a genesis or no commit", e.Version, branch)
		}
	}
	a, err := m.readArchive(ctx, branch, inc)
	if err != nil {
		return err
	}
	byV := map[uint64]archivedCommit{}
	for _, c := range a.Commits {
		byV[c.Version] = c
	}
	var todo []*Entry
	for _, e := range entries {
		if e.Pruned {
			continue
		}
		byV[e.Version] = archivedCommit{Version: e.Version, ID: e.Commit.ID, Parents: append([]string(nil), e.Commit.Parents...), Actor: e.Commit.Actor, TimeMicros: e.Commit.TimeMicros}
		if e.Merged != nil {
			if a.Merged == nil {
				a.Merged = map[uint64]ForkPoint{}
			}
			a.Merged[e.Version] = *e.Merged
		}
		todo = append(todo, e)
	}
	if len(todo) == 0 {
		return nil
	}
	a.Commits = a.Commits[:0]
	for _, c := range byV {
		a.Commits = append(a.Commits, c)
	}
	sort.Slice(a.Commits, func(i, j int) bool { return a.Commits[i].Version < a.Commits[j].Version })
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	a.CleanedUS = now.UnixMicro()
	data, err := encodeArchive(a)
	if err != nil {
		return err
	}
	write := func(key string, data []byte) error {
		if opts.BeforeWrite != nil {
			if err := opts.BeforeWrite(key); err != nil {
				return err
			}
		}
		_, err := m.s.Put(ctx, key, data)
		return err
	}
	// The archive first: a pruned version's commit is always archived.
	if err := write(ArchiveKey(branch, inc), data); err != nil {
		return fmt.Errorf("write the archive of pruned history: %w", err)
	}
	for _, e := range todo {
		if err := write(e.Key(), []byte{}); err != nil {
			return fmt.Errorf("prune manifest version: %w", err)
		}
	}
	return nil
}

// PrunedSize is what one pruned version costs before pruning: its encoded
// bytes.
func PrunedSize(e *Entry) int64 {
	data, err := Encode(e)
	if err != nil {
		return 0
	}
	return int64(len(data))
}
