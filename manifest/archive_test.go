package manifest

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/omnigraph-go/omnigraph/backend"
)

// ulidChain publishes versions 1..n of main as commits with ULID ids whose
// times rise with the version (as writers mint them), and returns them.
func ulidChain(t *testing.T, m *Store, n int) []*Entry {
	t.Helper()
	ctx := context.Background()
	src := rand.New(rand.NewSource(7))
	var out []*Entry
	for v := uint64(1); v <= uint64(n); v++ {
		e := commitEntry("main", 1, v, "")
		id := ulid.MustNew(uint64(1_700_000_000_000+v*10), src).String()
		e.Head, e.Commit.ID = id, id
		if len(out) > 0 {
			e.Commit.Parents = []string{out[len(out)-1].Commit.ID}
		}
		if err := m.Publish(ctx, e); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// TestPruneKeepsHistoryListedAndReadsSayCleanedUp: after versions 2..17 of
// 20 are pruned, Versions and History list every commit (the pruned ones
// from the archive, with their ids, parents, actor and time, marked
// Pruned and without tables), their objects hold zero bytes, reading one
// (ReadVersion, FindCommit) is ErrCleanedUp, a kept commit is still found
// by its id across the pruned range, a publish of a pruned version's key
// still loses its PutIfAbsent, and pruning again changes nothing.
func TestPruneKeepsHistoryListedAndReadsSayCleanedUp(t *testing.T) {
	ctx := context.Background()
	m, c := newStore(t)
	all := ulidChain(t, m, 20)
	prune := append([]*Entry(nil), all[1:17]...)
	writes := 0
	err := m.Prune(ctx, prune, PruneOptions{Now: time.UnixMicro(42), BeforeWrite: func(string) error { writes++; return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if writes != 17 { // the archive, then 16 versions
		t.Fatalf("%d writes, want 17", writes)
	}
	for _, e := range prune {
		data, _, err := c.StorageAdapter.Get(ctx, e.Key())
		if err != nil || len(data) != 0 {
			t.Fatalf("version %d holds %d bytes (%v), want an emptied object", e.Version, len(data), err)
		}
	}
	var got []*Entry
	err = m.Versions(ctx, "main", 1, 20, func(e *Entry) (bool, error) { got = append(got, e); return true, nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 20 {
		t.Fatalf("Versions listed %d versions, want 20", len(got))
	}
	for i, e := range got {
		want := all[19-i]
		if e.Version != want.Version || e.Commit.ID != want.Commit.ID || e.Commit.Actor != "t" || e.Commit.TimeMicros != want.Commit.TimeMicros || len(e.Commit.Parents) != len(want.Commit.Parents) {
			t.Fatalf("version %d listed as %+v %+v, want %+v", want.Version, e, e.Commit, want.Commit)
		}
		if len(want.Commit.Parents) == 1 && e.Commit.Parents[0] != want.Commit.Parents[0] {
			t.Fatalf("version %d's parent %s, want %s", e.Version, e.Commit.Parents[0], want.Commit.Parents[0])
		}
		pruned := e.Version >= 2 && e.Version <= 17
		if e.Pruned != pruned || pruned != (len(e.Tables) == 0) {
			t.Fatalf("version %d: pruned %v with %d tables", e.Version, e.Pruned, len(e.Tables))
		}
	}
	var hist []string
	if err := m.History(ctx, all[19], func(e *Entry) (bool, error) { hist = append(hist, e.Commit.ID); return true, nil }); err != nil || len(hist) != 20 {
		t.Fatalf("History listed %d commits (%v), want 20", len(hist), err)
	}
	_, err = m.ReadVersion(ctx, "main", 1, 9)
	if !errors.Is(err, ErrCleanedUp) || errors.Is(err, backend.ErrNotFound) {
		t.Fatalf("reading a pruned version: %v, want ErrCleanedUp (not a missing version)", err)
	}
	_, err = m.FindCommit(ctx, all[8].Commit.ID)
	if !errors.Is(err, ErrCleanedUp) || !errors.Is(err, ErrCommitNotFound) {
		t.Fatalf("finding a pruned commit: %v, want ErrCleanedUp and ErrCommitNotFound", err)
	}
	for _, v := range []int{0, 17, 18, 19} {
		c.reset()
		e, err := m.FindCommit(ctx, all[v].Commit.ID)
		// a binary search over 20 versions, the archive read once
		if g := c.gets.Load(); g > 8 {
			t.Fatalf("finding kept commit %d took %d GETs", v+1, g)
		}
		if err != nil || e.Version != all[v].Version || e.Pruned || len(e.Tables) != 1 {
			t.Fatalf("finding kept commit %d: %+v, %v", v+1, e, err)
		}
	}
	// A stale or late publish of a pruned version still loses the CAS.
	if err := m.Publish(ctx, commitEntry("main", 1, 9, "")); !errors.Is(err, ErrHeadMoved) {
		t.Fatalf("publishing a pruned version: %v, want ErrHeadMoved", err)
	}
	if h, err := m.Head(ctx, "main"); err != nil || h.Version != 20 {
		t.Fatalf("head after pruning: %+v, %v", h, err)
	}
	writes = 0
	if err := m.Prune(ctx, got[3:19], PruneOptions{BeforeWrite: func(string) error { writes++; return nil }}); err != nil || writes != 0 {
		t.Fatalf("pruning pruned versions again: %d writes, %v", writes, err)
	}
	// Pruning refuses the genesis.
	if err := m.Prune(ctx, []*Entry{all[0]}, PruneOptions{}); err == nil {
		t.Fatal("pruned the genesis")
	}
}

// TestPruneCrashLeavesEveryVersionWholeOrArchived: a crash at each write of
// a Prune leaves every version listed with its commit, and a second Prune
// finishes the job.
func TestPruneCrashLeavesEveryVersionWholeOrArchived(t *testing.T) {
	ctx := context.Background()
	crash := errors.New("crash")
	for k := 1; k <= 6; k++ {
		m, _ := newStore(t)
		all := ulidChain(t, m, 8)
		n := 0
		err := m.Prune(ctx, all[1:6], PruneOptions{BeforeWrite: func(string) error {
			if n++; n == k {
				return crash
			}
			return nil
		}})
		if !errors.Is(err, crash) {
			t.Fatalf("k=%d: %v", k, err)
		}
		var ids []string
		err = m.Versions(ctx, "main", 1, 8, func(e *Entry) (bool, error) { ids = append(ids, e.Commit.ID); return true, nil })
		if err != nil || len(ids) != 8 {
			t.Fatalf("k=%d: %d versions listed after the crash (%v)", k, len(ids), err)
		}
		for i, id := range ids {
			if id != all[7-i].Commit.ID {
				t.Fatalf("k=%d: version %d lists commit %s, want %s", k, 8-i, id, all[7-i].Commit.ID)
			}
		}
		if err := m.Prune(ctx, all[1:6], PruneOptions{}); err != nil {
			t.Fatalf("k=%d: the second prune: %v", k, err)
		}
		if _, err := m.ReadVersion(ctx, "main", 1, 4); !errors.Is(err, ErrCleanedUp) {
			t.Fatalf("k=%d: version 4 after the second prune: %v", k, err)
		}
	}
}

// TestArchiveRoundTripIsCompact: the archive layout keeps every field of
// every commit (ULID and other ids, no parents, a first parent that is
// the commit before, merges, several actors, a clock going back), and
// 1,000 linear ULID commits take under 24 bytes each.
func TestArchiveRoundTripIsCompact(t *testing.T) {
	src := rand.New(rand.NewSource(1))
	id := func(ms uint64) string { return ulid.MustNew(ms, src).String() }
	a := &archive{Branch: "review/2026-07", Incarnation: 3, CleanedUS: 99, Commits: []archivedCommit{
		{Version: 2, ID: "not-a-ulid", Actor: "alice", TimeMicros: 50},
		{Version: 3, ID: id(10), Parents: []string{"not-a-ulid"}, Actor: "bob", TimeMicros: 40},
		{Version: 7, ID: id(11), Parents: []string{"elsewhere", id(12)}, Actor: "", TimeMicros: 1 << 50},
		{Version: 8, ID: strings.ToLower(id(13)), Parents: []string{}, Actor: "alice", TimeMicros: -5},
	}}
	a.Commits[3].Parents = nil
	data, err := encodeArchive(a)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeArchive(data)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", a) {
		t.Fatalf("round trip:\n%+v\nwant\n%+v", got, a)
	}
	big := &archive{Branch: "main", Incarnation: 1}
	prev := ""
	for v := uint64(2); v < 1002; v++ {
		c := archivedCommit{Version: v, ID: id(1_700_000_000_000 + v*37), Actor: "cli", TimeMicros: int64(1_700_000_000_000_000 + v*37_000 + v%7)}
		if prev != "" {
			c.Parents = []string{prev}
		}
		big.Commits = append(big.Commits, c)
		prev = c.ID
	}
	data, err = encodeArchive(big)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 24*1000 {
		t.Fatalf("1,000 commits archive to %d bytes", len(data))
	}
	if _, err := decodeArchive(data[:len(data)/2]); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a truncated archive: %v", err)
	}
	t.Logf("1,000 commits: %d bytes", len(data))
}
