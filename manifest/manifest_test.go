package manifest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/mem"
)

// counting counts List and Get requests and can lose the answer of the next
// PutIfAbsent (applied or not).
type counting struct {
	backend.StorageAdapter
	lists, gets, puts atomic.Int64
	loseNext          atomic.Int32 // 1: apply then lose; 2: lose without applying
}

func (c *counting) List(ctx context.Context, p string, o backend.ListOptions) (backend.ListPage, error) {
	c.lists.Add(1)
	return c.StorageAdapter.List(ctx, p, o)
}

func (c *counting) Get(ctx context.Context, k string) ([]byte, backend.Attrs, error) {
	c.gets.Add(1)
	return c.StorageAdapter.Get(ctx, k)
}

func (c *counting) PutIfAbsent(ctx context.Context, k string, d []byte) (backend.Attrs, error) {
	c.puts.Add(1)
	switch c.loseNext.Swap(0) {
	case 1:
		_, _ = c.StorageAdapter.PutIfAbsent(ctx, k, d)
		return backend.Attrs{}, backend.NewError("put-if-absent", k, backend.KindUnknown, errors.New("connection reset"))
	case 2:
		return backend.Attrs{}, backend.NewError("put-if-absent", k, backend.KindUnknown, errors.New("connection reset"))
	}
	return c.StorageAdapter.PutIfAbsent(ctx, k, d)
}

func (c *counting) reset() { c.lists.Store(0); c.gets.Store(0); c.puts.Store(0) }

func newStore(t *testing.T) (*Store, *counting) {
	t.Helper()
	c := &counting{StorageAdapter: mem.New()}
	return New(c), c
}

func commitEntry(branch string, inc, v uint64, parent string) *Entry {
	id := fmt.Sprintf("C-%s-%d-%d", branch, inc, v)
	parents := []string{}
	if parent != "" {
		parents = []string{parent}
	}
	return &Entry{
		Stamp: StampCurrent, Kind: KindCommit, GraphID: "G", Branch: branch, Incarnation: inc, BranchID: "B",
		Version: v, SchemaIdentity: "S",
		Tables: []TablePin{{Key: "node:A", Path: "nodes/A", Branch: "main", Version: v}},
		Head:   id, Commit: &Commit{ID: id, Parents: parents, Actor: "t", TimeMicros: int64(v)},
	}
}

// chain publishes versions 1..n of branch (incarnation inc) as commits.
func chain(t *testing.T, m *Store, branch string, inc uint64, n int) *Entry {
	t.Helper()
	ctx := context.Background()
	var last *Entry
	for v := uint64(1); v <= uint64(n); v++ {
		parent := ""
		if last != nil {
			parent = last.Head
		}
		e := commitEntry(branch, inc, v, parent)
		if err := m.Publish(ctx, e); err != nil {
			t.Fatalf("publish %s v%d: %v", branch, v, err)
		}
		last = e
	}
	return last
}

func fork(branch string, inc uint64, from *Entry) *Entry {
	return &Entry{
		Stamp: StampCurrent, Kind: KindFork, GraphID: "G", Branch: branch, Incarnation: inc, BranchID: "F",
		Version: 1, SchemaIdentity: from.SchemaIdentity, Tables: from.Tables, Head: from.Head,
		Fork: &ForkPoint{Branch: from.Branch, Incarnation: from.Incarnation, Version: from.Version, Head: from.Head},
	}
}

func TestInvOrdersNewestFirst(t *testing.T) {
	for _, pair := range [][2]uint64{{1, 2}, {9, 10}, {99, 100}, {0, 1 << 40}} {
		if !(Inv(pair[1]) < Inv(pair[0])) {
			t.Errorf("Inv(%d)=%s should sort before Inv(%d)=%s", pair[1], Inv(pair[1]), pair[0], Inv(pair[0]))
		}
		got, err := ParseInv(Inv(pair[1]))
		if err != nil || got != pair[1] {
			t.Errorf("ParseInv(Inv(%d)) = %d, %v", pair[1], got, err)
		}
	}
}

func TestParseVersionKey(t *testing.T) {
	for _, b := range []string{"main", "review/2026-07", "a/b/c", "__schema_apply_lock__"} {
		k := VersionKey(b, 3, 42)
		if err := backend.ValidateKey(k); err != nil {
			t.Fatalf("key %q invalid: %v", k, err)
		}
		gb, gi, gv, err := ParseVersionKey(k)
		if err != nil || gb != b || gi != 3 || gv != 42 {
			t.Errorf("ParseVersionKey(%q) = %q %d %d %v", k, gb, gi, gv, err)
		}
	}
}

func TestValidateBranchName(t *testing.T) {
	tests := []struct {
		name string
		in   string
		ok   bool
	}{
		{"simple", "feature", true},
		{"slash", "review/2026-07", true},
		{"dots and dashes", "v1.2-rc_3", true},
		{"internal", "__schema_apply_lock__", true},
		{"empty", "", false},
		{"leading slash", "/x", false},
		{"trailing slash", "x/", false},
		{"double slash", "a//b", false},
		{"dot component", "a/./b", false},
		{"leading dot", ".hidden", false},
		{"leading dash", "-x", false},
		{"space", "a b", false},
		{"at sign", "a@1", false},
		{"hash", "a#1", false},
		{"too long", strings.Repeat("a", 201), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateBranchName(tt.in)
			if (err == nil) != tt.ok {
				t.Fatalf("ValidateBranchName(%q) = %v, want ok=%v", tt.in, err, tt.ok)
			}
		})
	}
}

func TestHeadIsOneListOneGetAtAnyDepth(t *testing.T) {
	for _, depth := range []int{10, 1000} {
		t.Run(fmt.Sprint(depth), func(t *testing.T) {
			ctx := context.Background()
			m, c := newStore(t)
			chain(t, m, "main", 1, depth)
			c.reset()
			e, err := m.Head(ctx, "main")
			if err != nil {
				t.Fatal(err)
			}
			if e.Version != uint64(depth) {
				t.Fatalf("head version %d, want %d", e.Version, depth)
			}
			if l, g := c.lists.Load(), c.gets.Load(); l != 1 || g != 1 {
				t.Fatalf("head read cost %d lists %d gets, want 1 and 1", l, g)
			}
			c.reset()
			next := commitEntry("main", 1, uint64(depth)+1, e.Head)
			if err := m.Publish(ctx, next); err != nil {
				t.Fatal(err)
			}
			if p, l, g := c.puts.Load(), c.lists.Load(), c.gets.Load(); p != 1 || l != 0 || g != 0 {
				t.Fatalf("publish cost %d puts %d lists %d gets, want exactly one conditional put", p, l, g)
			}
		})
	}
}

func TestPublishIsACompareAndSwap(t *testing.T) {
	ctx := context.Background()
	m, _ := newStore(t)
	head := chain(t, m, "main", 1, 3)

	// Same next version twice: exactly one winner among racers.
	const racers = 8
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < racers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			e := commitEntry("main", 1, 4, head.Head)
			e.Commit.ID = fmt.Sprintf("racer-%d", i)
			e.Head = e.Commit.ID
			err := m.Publish(ctx, e)
			switch {
			case err == nil:
				wins.Add(1)
			case !errors.Is(err, ErrHeadMoved):
				t.Errorf("racer %d: %v, want ErrHeadMoved", i, err)
			}
		}(i)
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d racers won version 4, want exactly 1", wins.Load())
	}
	// A writer behind the head cannot publish over an existing version.
	if err := m.Publish(ctx, commitEntry("main", 1, 2, "x")); !errors.Is(err, ErrHeadMoved) {
		t.Fatalf("stale publish: %v, want ErrHeadMoved", err)
	}
}

func TestTombstoneFencesStaleWritersAcrossIncarnations(t *testing.T) {
	ctx := context.Background()
	m, c := newStore(t)
	main := chain(t, m, "main", 1, 2)
	if err := m.Publish(ctx, fork("feature", 1, main)); err != nil {
		t.Fatal(err)
	}
	r, err := m.Probe(ctx, "feature")
	if err != nil || !r.Live() || r.Incarnation != 1 || r.Version != 1 {
		t.Fatalf("probe after create: %+v %v", r, err)
	}
	if err := m.Tombstone(ctx, r); err != nil {
		t.Fatal(err)
	}
	c.reset()
	r2, err := m.Probe(ctx, "feature")
	if err != nil || !r2.Exists || !r2.Deleted || r2.Live() {
		t.Fatalf("probe after delete: %+v %v", r2, err)
	}
	if c.gets.Load() != 0 {
		t.Fatalf("knowing a branch is deleted cost %d GETs, want 0", c.gets.Load())
	}
	if _, err := m.Head(ctx, "feature"); !errors.Is(err, ErrBranchNotFound) {
		t.Fatalf("head of deleted branch: %v", err)
	}
	// A writer that prepared against feature@1 before the delete.
	stale := commitEntry("feature", 1, 2, main.Head)
	if err := m.Publish(ctx, stale); !errors.Is(err, ErrHeadMoved) {
		t.Fatalf("stale publish after delete: %v, want ErrHeadMoved", err)
	}
	// Recreate: the name check hands out the next incarnation.
	ref, err := m.CheckNewName(ctx, "feature")
	if err != nil || ref.Incarnation != 1 {
		t.Fatalf("CheckNewName of a deleted name: %+v %v", ref, err)
	}
	if err := m.Publish(ctx, fork("feature", 2, main)); err != nil {
		t.Fatal(err)
	}
	// The stale writer of incarnation 1 still cannot land anything, at any
	// version it could have prepared against (heads 0 and 1: the tombstone
	// is version 2, which no writer ever sees as a live head).
	for v := uint64(1); v <= 2; v++ {
		if err := m.Publish(ctx, commitEntry("feature", 1, v, "x")); !errors.Is(err, ErrHeadMoved) {
			t.Fatalf("stale incarnation publish at v%d: %v", v, err)
		}
	}
	h, err := m.Head(ctx, "feature")
	if err != nil || h.Incarnation != 2 || h.Kind != KindFork {
		t.Fatalf("head after recreate: %+v %v", h, err)
	}
}

func TestCheckNewName(t *testing.T) {
	ctx := context.Background()
	m, c := newStore(t)
	main := chain(t, m, "main", 1, 1)
	for _, b := range []string{"feature", "review/2026-07", "feature-2"} {
		if err := m.Publish(ctx, fork(b, 1, main)); err != nil {
			t.Fatal(err)
		}
	}
	// Give feature-2 (a sibling that shares a prefix) a deep history: it
	// must not cost the check of "feature" anything.
	f2 := fork("feature-2", 1, main)
	for v := uint64(2); v <= 300; v++ {
		e := commitEntry("feature-2", 1, v, f2.Head)
		if err := m.Publish(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		in   string
		want error
	}{
		{"existing", "feature", ErrBranchExists},
		{"existing main", "main", ErrBranchExists},
		{"ancestor of live", "review", ErrBranchOverlap},
		{"descendant of live", "feature/x", ErrBranchOverlap},
		{"descendant of main", "main/x", ErrBranchOverlap},
		{"deep descendant of live", "review/2026-07/a/b", ErrBranchOverlap},
		{"sibling", "review2", nil},
		{"fresh", "hotfix", nil},
		{"fresh nested", "team/alice", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.reset()
			_, err := m.CheckNewName(ctx, tt.in)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("CheckNewName(%q) = %v, want %v", tt.in, err, tt.want)
			}
			if c.gets.Load() != 0 {
				t.Fatalf("name check made %d GETs", c.gets.Load())
			}
			if want := int64(strings.Count(tt.in, "/") + 1); tt.want == nil && c.lists.Load() != want {
				t.Fatalf("name check made %d Lists, want %d", c.lists.Load(), want)
			}
		})
	}
}

func TestBranchesSkipsHistory(t *testing.T) {
	ctx := context.Background()
	m, c := newStore(t)
	main := chain(t, m, "main", 1, 500)
	for _, b := range []string{"a", "b/c", "gone"} {
		if err := m.Publish(ctx, fork(b, 1, main)); err != nil {
			t.Fatal(err)
		}
	}
	r, _ := m.Probe(ctx, "gone")
	if err := m.Tombstone(ctx, r); err != nil {
		t.Fatal(err)
	}
	c.reset()
	refs, err := m.Branches(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range refs {
		names = append(names, r.Branch)
	}
	if got := strings.Join(names, ","); got != "a,b/c,main" {
		t.Fatalf("branches = %s", got)
	}
	if c.gets.Load() != 0 || c.lists.Load() > 6 {
		t.Fatalf("listing 4 names cost %d lists %d gets", c.lists.Load(), c.gets.Load())
	}
}

func TestHistoryFollowsTheForkPoint(t *testing.T) {
	ctx := context.Background()
	m, _ := newStore(t)
	chain(t, m, "main", 1, 5)
	at3, err := m.ReadVersion(ctx, "main", 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	f := fork("dev", 1, at3)
	if err := m.Publish(ctx, f); err != nil {
		t.Fatal(err)
	}
	d2 := commitEntry("dev", 1, 2, f.Head)
	if err := m.Publish(ctx, d2); err != nil {
		t.Fatal(err)
	}
	var ids []string
	if err := m.History(ctx, d2, func(e *Entry) (bool, error) { ids = append(ids, e.Commit.ID); return true, nil }); err != nil {
		t.Fatal(err)
	}
	want := "C-dev-1-2,C-main-1-3,C-main-1-2,C-main-1-1"
	if got := strings.Join(ids, ","); got != want {
		t.Fatalf("history = %s, want %s", got, want)
	}
	e, err := m.FindCommit(ctx, "C-main-1-2")
	if err != nil || e.Version != 2 || e.Branch != "main" {
		t.Fatalf("FindCommit: %+v %v", e, err)
	}
	if _, err := m.FindCommit(ctx, "nope"); !errors.Is(err, ErrCommitNotFound) {
		t.Fatalf("FindCommit of unknown id: %v", err)
	}
}

func TestDecodeChecksStampFirst(t *testing.T) {
	e := commitEntry("main", 1, 1, "")
	for _, tt := range []struct {
		name  string
		stamp int
		want  string
	}{
		{"older", StampCurrent - 1, "export"},
		{"newer", StampCurrent + 1, "upgrade omnigraph"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			raw, _ := json.Marshal(map[string]any{"stamp": tt.stamp, "something": "from another version"})
			_, err := Decode(e.Key(), raw)
			var se *StampError
			if !errors.As(err, &se) || !errors.Is(err, ErrStamp) || se.Found != tt.stamp {
				t.Fatalf("Decode = %v, want a StampError", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("message %q should say %q", err, tt.want)
			}
		})
	}
	data, err := Encode(e)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Decode(VersionKey("main", 1, 2), data); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("entry under the wrong key: %v, want ErrCorrupt", err)
	}
}
