package manifest

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
)

// Pruned history.
//
// Cleanup prunes manifest versions beyond its retention: each pruned
// version's object is overwritten with zero bytes (never deleted, so its
// key stays taken and a late or stale publish of that version still fails
// its PutIfAbsent), and its commit (id, parents, actor, time) moves first
// into the incarnation's archive, one gzip-compressed JSON object:
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
const archiveDir = Dir + "archive/"

// ArchiveKey is where the pruned commits of one incarnation are kept.
func ArchiveKey(branch string, incarnation uint64) string {
	return archiveDir + branch + "/" + versionsMarker + "/" + Inv(incarnation)
}

// archivedCommit is one pruned version's commit.
type archivedCommit struct {
	Version    uint64   `json:"v"`
	ID         string   `json:"id"`
	Parents    []string `json:"p,omitempty"`
	Actor      string   `json:"a,omitempty"`
	TimeMicros int64    `json:"t"`
}

// archive is the stored archive of one incarnation, commits by version.
type archive struct {
	Branch      string           `json:"branch"`
	Incarnation uint64           `json:"incarnation"`
	CleanedUS   int64            `json:"cleaned_us"`
	Commits     []archivedCommit `json:"commits"`
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
	return &Entry{
		Stamp: StampCurrent, Kind: KindCommit, Branch: a.Branch, Incarnation: a.Incarnation,
		Version: c.Version, Head: c.ID, Pruned: true,
		Commit: &Commit{ID: c.ID, Parents: append([]string{}, c.Parents...), Actor: c.Actor, TimeMicros: c.TimeMicros},
	}
}

func encodeArchive(a *archive) ([]byte, error) {
	raw, err := json.Marshal(a)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func decodeArchive(data []byte) (*archive, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: the archive of pruned history: %v", ErrCorrupt, err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("%w: the archive of pruned history: %v", ErrCorrupt, err)
	}
	var a archive
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, fmt.Errorf("%w: the archive of pruned history: %v", ErrCorrupt, err)
	}
	return &a, nil
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
