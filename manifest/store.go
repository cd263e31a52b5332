package manifest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"

	"github.com/oklog/ulid/v2"

	"github.com/omnigraph-go/omnigraph/backend"
)

// Errors, classified with errors.Is.
var (
	// ErrBranchNotFound: the branch has no live incarnation.
	ErrBranchNotFound = errors.New("branch not found")
	// ErrHeadMoved: the version key a publish needed is taken: another writer
	// published first, or the incarnation was deleted. Nothing was written.
	ErrHeadMoved = errors.New("branch head moved")
	// ErrBranchExists: a live branch already has the name.
	ErrBranchExists = errors.New("branch already exists")
	// ErrBranchOverlap: the name is a path ancestor or descendant of a live
	// branch name.
	ErrBranchOverlap = errors.New("branch name overlaps a live branch")
	// ErrCommitNotFound: no manifest version records the commit.
	ErrCommitNotFound = errors.New("commit not found")
)

// Ref is what one List reveals about a branch head: no GET is needed to know
// whether the branch exists, its incarnation and head version.
type Ref struct {
	Branch string
	// Exists is false when the name never had an incarnation.
	Exists bool
	// Deleted: the newest incarnation ended with a tombstone.
	Deleted bool
	// Incarnation and Version are the newest key's (for a deleted branch,
	// Version is the tombstone's).
	Incarnation uint64
	Version     uint64
	// Key is the newest version's object key; ETag its version token.
	Key  string
	ETag string
}

// Live reports that the branch exists and is not deleted.
func (r Ref) Live() bool { return r.Exists && !r.Deleted }

// Store reads and writes __manifest through a StorageAdapter. It holds no
// graph state: caching is the caller's business.
type Store struct {
	s     backend.StorageAdapter
	sleep Sleeper      // nil: real time
	log   *slog.Logger // nil: slog.Default() at each use
}

// New returns a Store over s (the graph root). Its re-issue pauses use real
// time and it logs to slog.Default().
func New(s backend.StorageAdapter) *Store { return &Store{s: s} }

// SetSleeper replaces the clock of the pauses between re-issues of a
// manifest create (tests pass one that returns at once); nil restores real
// time. Call it before the store is shared.
func (m *Store) SetSleeper(s Sleeper) { m.sleep = s }

// SetLogger sets where the publish events go; nil means slog.Default() at
// the time of each event. Call it before the store is shared.
func (m *Store) SetLogger(l *slog.Logger) { m.log = l }

func (m *Store) logger() *slog.Logger {
	if m.log != nil {
		return m.log
	}
	return slog.Default()
}

// Adapter returns the storage the store uses.
func (m *Store) Adapter() backend.StorageAdapter { return m.s }

// Probe returns the branch's newest version key with exactly one List of at
// most one key. It is the freshness probe of a warm handle.
func (m *Store) Probe(ctx context.Context, branch string) (Ref, error) {
	if err := ValidateBranchName(branch); err != nil {
		return Ref{}, err
	}
	page, err := m.s.List(ctx, VersionsPrefix(branch), backend.ListOptions{MaxKeys: 1})
	if err != nil {
		return Ref{}, fmt.Errorf("read head of branch %q: %w", branch, err)
	}
	if len(page.Objects) == 0 {
		return Ref{Branch: branch}, nil
	}
	return refOf(branch, page.Objects[0])
}

func refOf(branch string, a backend.Attrs) (Ref, error) {
	b, inc, v, err := ParseVersionKey(a.Key)
	if err != nil {
		return Ref{}, err
	}
	if b != branch {
		return Ref{}, fmt.Errorf("%w: key %q listed for branch %q", ErrCorrupt, a.Key, branch)
	}
	return Ref{Branch: branch, Exists: true, Deleted: a.Size == 0, Incarnation: inc, Version: v, Key: a.Key, ETag: a.Version}, nil
}

// Read fetches the entry a live Ref points at: one GET.
func (m *Store) Read(ctx context.Context, r Ref) (*Entry, error) {
	if !r.Live() {
		return nil, fmt.Errorf("%w: %q", ErrBranchNotFound, r.Branch)
	}
	return m.get(ctx, r.Key)
}

// ReadVersion fetches one exact version: one GET. A tombstone or a missing
// key is ErrNotFound-classified; a version cleanup pruned is ErrCleanedUp
// (one more GET, of the archive).
func (m *Store) ReadVersion(ctx context.Context, branch string, incarnation, version uint64) (*Entry, error) {
	e, err := m.readVersion(ctx, branch, incarnation, version)
	if err != nil {
		return nil, err
	}
	if e.Pruned {
		a, err := m.readArchive(ctx, branch, incarnation)
		if err != nil {
			return nil, err
		}
		return nil, a.cleanedUp(version)
	}
	return e, nil
}

// readVersion is ReadVersion that returns a pruned version's hollow entry
// (Pruned set) from the archive.
func (m *Store) readVersion(ctx context.Context, branch string, incarnation, version uint64) (*Entry, error) {
	var arc *archive
	return m.readVersionWith(ctx, branch, incarnation, version, &arc)
}

// readVersionWith is readVersion with the incarnation's archive read at
// most once into *arc.
func (m *Store) readVersionWith(ctx context.Context, branch string, incarnation, version uint64, arc **archive) (*Entry, error) {
	key := VersionKey(branch, incarnation, version)
	data, _, err := m.s.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("read manifest version: %w", err)
	}
	if len(data) > 0 {
		return Decode(key, data)
	}
	if *arc == nil {
		if *arc, err = m.readArchive(ctx, branch, incarnation); err != nil {
			return nil, err
		}
	}
	a := *arc
	if c, ok := a.find(version); ok {
		return a.entry(c), nil
	}
	return nil, fmt.Errorf("manifest version %s is a deletion marker: %w", Describe(key), backend.ErrNotFound)
}

func (m *Store) get(ctx context.Context, key string) (*Entry, error) {
	data, _, err := m.s.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("read manifest version: %w", err)
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("manifest version %s is a deletion marker: %w", key, backend.ErrNotFound)
	}
	return Decode(key, data)
}

// Head reads a branch head: one List and one GET. A missing or deleted
// branch is ErrBranchNotFound.
func (m *Store) Head(ctx context.Context, branch string) (*Entry, error) {
	r, err := m.Probe(ctx, branch)
	if err != nil {
		return nil, err
	}
	if !r.Live() {
		return nil, fmt.Errorf("%w: %q", ErrBranchNotFound, branch)
	}
	return m.Read(ctx, r)
}

// Tombstone deletes incarnation r.Incarnation of a live branch whose head is
// r.Version, with a PutIfAbsent of a zero-byte object at the next version
// key, re-issued like Publish's. A publish that won that key first makes it
// ErrHeadMoved.
func (m *Store) Tombstone(ctx context.Context, r Ref) error {
	if !r.Live() {
		return fmt.Errorf("%w: %q", ErrBranchNotFound, r.Branch)
	}
	return m.create(ctx, VersionKey(r.Branch, r.Incarnation, r.Version+1), r.Branch, r.Version+1, []byte{})
}

// CheckNewName verifies that branch may be created: no live branch has the
// name, and none is a path ancestor or descendant of it. It returns the Ref
// of the name (the next incarnation is Ref.Incarnation+1). For a name without
// slashes and without history this is one List.
func (m *Store) CheckNewName(ctx context.Context, branch string) (Ref, error) {
	if err := ValidateBranchName(branch); err != nil {
		return Ref{}, err
	}
	comps := strings.Split(branch, "/")
	ancestors := make([]string, 0, len(comps)-1)
	for i := 1; i < len(comps); i++ {
		ancestors = append(ancestors, strings.Join(comps[:i], "/"))
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		firstEr error
		self    Ref
	)
	fail := func(err error) {
		mu.Lock()
		if firstEr == nil {
			firstEr = err
		}
		mu.Unlock()
	}
	for _, a := range ancestors {
		wg.Add(1)
		go func(a string) {
			defer wg.Done()
			r, err := m.Probe(ctx, a)
			if err != nil {
				fail(err)
			} else if r.Live() {
				fail(fmt.Errorf("%w: %q is live; choose a sibling name or delete %q first", ErrBranchOverlap, a, a))
			}
		}(a)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		var err error
		self, err = m.selfAndDescendants(ctx, branch)
		if err != nil {
			fail(err)
		}
	}()
	wg.Wait()
	if firstEr != nil {
		return Ref{}, firstEr
	}
	return self, nil
}

// selfAndDescendants scans branches/<branch>/: the name's own versions come
// first, then its path descendants'.
func (m *Store) selfAndDescendants(ctx context.Context, branch string) (Ref, error) {
	self := Ref{Branch: branch}
	err := m.scanHeads(ctx, BranchDir(branch), func(r Ref) (bool, error) {
		switch {
		case r.Branch == branch:
			self = r
			if r.Live() {
				return false, fmt.Errorf("%w: %q; pick another name or delete it first", ErrBranchExists, branch)
			}
		case r.Live():
			return false, fmt.Errorf("%w: %q is live; choose a sibling name or delete %q first", ErrBranchOverlap, r.Branch, r.Branch)
		}
		return true, nil
	})
	if err != nil {
		return Ref{}, err
	}
	return self, nil
}

// scanHeads calls fn with the newest key of every branch name under prefix,
// in name order. Each name's versions are contiguous and newest first, so it
// skips the rest of them with StartAfter: the cost follows the number of
// names, not the history depth.
func (m *Store) scanHeads(ctx context.Context, prefix string, fn func(Ref) (bool, error)) error {
	opts := backend.ListOptions{MaxKeys: 100}
	last := ""
	for {
		page, err := m.s.List(ctx, prefix, opts)
		if err != nil {
			return fmt.Errorf("list branches: %w", err)
		}
		for _, o := range page.Objects {
			name, _, _, err := ParseVersionKey(o.Key)
			if err != nil {
				return err
			}
			if name == last {
				continue
			}
			last = name
			r, err := refOf(name, o)
			if err != nil {
				return err
			}
			if more, err := fn(r); err != nil || !more {
				return err
			}
		}
		if !page.Truncated || len(page.Objects) == 0 {
			return nil
		}
		opts.StartAfter = page.Objects[len(page.Objects)-1].Key
		if skip := skipVersions(last); skip > opts.StartAfter {
			opts.StartAfter = skip
		}
	}
}

// Branches returns the Ref of every branch name that has a live incarnation,
// internal ones included, sorted by name. It reads one key per name (plus
// List pages), never the history.
func (m *Store) Branches(ctx context.Context) ([]Ref, error) {
	var out []Ref
	err := m.scanHeads(ctx, branchesDir, func(r Ref) (bool, error) {
		if r.Live() {
			out = append(out, r)
		}
		return true, nil
	})
	return out, err
}

// Versions calls fn for each version of one incarnation from version `from`
// down to 1, newest first, until fn returns false or an error. Each List page
// of keys is fetched with concurrent GETs. A version cleanup pruned is its
// commit from the archive (Entry.Pruned set, no tables).
func (m *Store) Versions(ctx context.Context, branch string, incarnation, from uint64, fn func(*Entry) (bool, error)) error {
	return m.versions(ctx, branch, incarnation, from, func() int { return maxVersionPage }, fn)
}

// maxVersionPage is the most version keys Versions lists (and GETs) at once.
const maxVersionPage = 256

// versions is Versions with the size of the next page asked of want: a
// caller that needs only N more entries lists and GETs only N keys.
func (m *Store) versions(ctx context.Context, branch string, incarnation, from uint64, want func() int, fn func(*Entry) (bool, error)) error {
	if from == 0 {
		return nil
	}
	prefix := IncarnationPrefix(branch, incarnation)
	opts := backend.ListOptions{StartAfter: VersionKey(branch, incarnation, from+1)}
	var arc *archive // read at the first pruned version met
	for {
		opts.MaxKeys = min(max(want(), 1), maxVersionPage)
		page, err := m.s.List(ctx, prefix, opts)
		if err != nil {
			return fmt.Errorf("list history of %q: %w", branch, err)
		}
		keys := make([]string, 0, len(page.Objects))
		var pruned []string // zero-byte versions below the head
		for _, o := range page.Objects {
			if o.Size > 0 {
				keys = append(keys, o.Key)
			} else {
				pruned = append(pruned, o.Key)
			}
		}
		entries, err := m.getMany(ctx, keys)
		if err != nil {
			return err
		}
		if len(pruned) > 0 {
			if arc == nil {
				if arc, err = m.readArchive(ctx, branch, incarnation); err != nil {
					return err
				}
			}
			for _, k := range pruned {
				_, _, v, err := ParseVersionKey(k)
				if err != nil {
					return err
				}
				if c, ok := arc.find(v); ok {
					entries = append(entries, arc.entry(c))
				}
			}
			// newest first, as listed
			sort.Slice(entries, func(i, j int) bool { return entries[i].Version > entries[j].Version })
		}
		for _, e := range entries {
			more, err := fn(e)
			if err != nil || !more {
				return err
			}
		}
		if !page.Truncated || len(page.Objects) == 0 {
			return nil
		}
		opts.StartAfter = page.Objects[len(page.Objects)-1].Key
	}
}

// getMany GETs keys with bounded concurrency, keeping their order.
func (m *Store) getMany(ctx context.Context, keys []string) ([]*Entry, error) {
	out := make([]*Entry, len(keys))
	errs := make([]error, len(keys))
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i, k := range keys {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int, k string) {
			defer wg.Done()
			defer func() { <-sem }()
			out[i], errs[i] = m.get(ctx, k)
		}(i, k)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// History calls fn for each commit reachable from e by first parents,
// newest first: e itself, the commits of e's incarnation below e.Version,
// then, through the fork point, the parent branch's commits from the fork
// version down. It stops when fn returns false.
func (m *Store) History(ctx context.Context, e *Entry, fn func(*Entry) (bool, error)) error {
	return m.HistoryN(ctx, e, 0, fn)
}

// HistoryN is History for a caller that wants at most n commits (n <= 0:
// all): it lists and GETs about n version keys, not a page of the history,
// so `commit list --limit N` costs O(N) requests at any depth. e is not
// read again.
func (m *Store) HistoryN(ctx context.Context, e *Entry, n int, fn func(*Entry) (bool, error)) error {
	got := 0
	call := func(v *Entry) (bool, error) {
		got++
		more, err := fn(v)
		return more && (n <= 0 || got < n), err
	}
	want := func() int {
		if n <= 0 {
			return maxVersionPage
		}
		return n - got
	}
	branch, inc, from := e.Branch, e.Incarnation, e.Version
	var fork *ForkPoint
	switch e.Kind {
	case KindFork:
		fork = e.Fork
	default:
		more, err := call(e)
		if err != nil || !more {
			return err
		}
		from--
	}
	for {
		if fork == nil {
			err := m.versions(ctx, branch, inc, from, want, func(v *Entry) (bool, error) {
				if v.Kind == KindFork {
					fork = v.Fork
					return false, nil
				}
				return call(v)
			})
			if err != nil || fork == nil {
				return err
			}
		}
		branch, inc, from = fork.Branch, fork.Incarnation, fork.Version
		fork = nil
	}
}

// FindCommit returns the version that recorded commit id.
//
// Commit ids are ULIDs minted when the write began, and a write that loses
// the race for its version re-prepares with a new id, so along one branch
// incarnation the ids' timestamps rise with the version (up to clock skew
// between writers). FindCommit therefore binary-searches each live branch's
// versions by that timestamp: about log2(depth) GETs per live branch plus
// one List per 100 branch names, whatever the depth. When that misses (an
// id that is not a ULID, a commit on a deleted incarnation, skewed clocks)
// it falls back to scanning every version of every branch, which costs
// O(history) and belongs off hot paths.
func (m *Store) FindCommit(ctx context.Context, id string) (*Entry, error) {
	e, err := m.FindCommitEntry(ctx, id)
	return m.whole(ctx, id, e, err)
}

// FindCommitEntry is FindCommit that returns a commit cleanup pruned as
// its entry from the archive (Pruned set, no tables), for a caller that
// only shows the commit.
func (m *Store) FindCommitEntry(ctx context.Context, id string) (*Entry, error) {
	if u, err := ulid.ParseStrict(id); err == nil {
		var live []Ref
		err := m.scanHeads(ctx, branchesDir, func(r Ref) (bool, error) {
			if r.Live() {
				live = append(live, r)
			}
			return true, nil
		})
		if err != nil {
			return nil, fmt.Errorf("find commit: %w", err)
		}
		for _, r := range live {
			e, err := m.searchIncarnation(ctx, r, id, u.Time())
			if err != nil || e != nil {
				return e, err
			}
		}
	}
	return m.scanForCommit(ctx, id)
}

// MergedParent returns the entry of e's second parent (a merge commit's
// merged source head), a pruned one as its hollow entry from the archive
// (Pruned set): one GET when e records where it was published (Merged),
// else found by id (FindCommitEntry, which costs the whole history when
// that branch was deleted). nil, nil when e is not a merge.
func (m *Store) MergedParent(ctx context.Context, e *Entry) (*Entry, error) {
	if e.Commit == nil || len(e.Commit.Parents) < 2 {
		return nil, nil
	}
	id := e.Commit.Parents[1]
	if l := e.Merged; l != nil {
		p, err := m.readVersion(ctx, l.Branch, l.Incarnation, l.Version)
		if err == nil && p.Kind == KindCommit && p.Commit.ID == id {
			return p, nil
		}
		if err != nil && !backend.IsNotFound(err) {
			return nil, err
		}
	}
	return m.FindCommitEntry(ctx, id)
}

// whole turns a pruned commit FindCommit found into ErrCleanedUp (and
// ErrCommitNotFound: its data cannot be read).
func (m *Store) whole(ctx context.Context, id string, e *Entry, err error) (*Entry, error) {
	if err != nil || !e.Pruned {
		return e, err
	}
	a, err := m.readArchive(ctx, e.Branch, e.Incarnation)
	if err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("commit %s: %w (%w)", id, ErrCommitNotFound, a.cleanedUp(e.Version))
}

// idTime is the millisecond timestamp of an entry's commit id; a fork (no
// commit) sorts first, an id that is not a ULID last.
func idTime(e *Entry) uint64 {
	if e.Kind != KindCommit || e.Commit == nil {
		return 0
	}
	u, err := ulid.ParseStrict(e.Commit.ID)
	if err != nil {
		return ^uint64(0)
	}
	return u.Time()
}

// searchIncarnation finds id on the live incarnation r by its timestamp t:
// the first version whose id time is >= t, then the versions after it that
// share t. nil, nil: not found there.
func (m *Store) searchIncarnation(ctx context.Context, r Ref, id string, t uint64) (*Entry, error) {
	read := map[uint64]*Entry{}
	var arc *archive // read once, at the first pruned version probed
	at := func(v uint64) (*Entry, error) {
		if e, ok := read[v]; ok {
			return e, nil
		}
		e, err := m.readVersionWith(ctx, r.Branch, r.Incarnation, v, &arc)
		if err != nil {
			return nil, fmt.Errorf("find commit: %w", err)
		}
		read[v] = e
		return e, nil
	}
	lo, hi := uint64(1), r.Version+1 // first version with time >= t is in [lo, hi]
	for lo < hi {
		mid := lo + (hi-lo)/2
		e, err := at(mid)
		if err != nil {
			return nil, err
		}
		if idTime(e) < t {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	for v := lo; v <= r.Version; v++ {
		e, err := at(v)
		if err != nil {
			return nil, err
		}
		if idTime(e) != t {
			return nil, nil
		}
		if e.Kind == KindCommit && e.Commit.ID == id {
			return e, nil
		}
	}
	return nil, nil
}

// scanForCommit reads every version of every branch (deleted ones
// included) looking for id.
func (m *Store) scanForCommit(ctx context.Context, id string) (*Entry, error) {
	all, err := backend.ListAll(ctx, m.s, branchesDir)
	if err != nil {
		return nil, fmt.Errorf("find commit: %w", err)
	}
	const batch = 64
	for start := 0; start < len(all); start += batch {
		end := min(start+batch, len(all))
		keys := make([]string, 0, end-start)
		for _, o := range all[start:end] {
			if o.Size > 0 {
				keys = append(keys, o.Key)
			}
		}
		entries, err := m.getMany(ctx, keys)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if e.Kind == KindCommit && e.Commit.ID == id {
				return e, nil
			}
		}
	}
	// The archives of pruned history.
	arcs, err := backend.ListAll(ctx, m.s, archiveDir)
	if err != nil {
		return nil, fmt.Errorf("find commit: %w", err)
	}
	for _, o := range arcs {
		data, _, err := m.s.Get(ctx, o.Key)
		if err != nil {
			return nil, fmt.Errorf("find commit: %w", err)
		}
		a, err := decodeArchive(data)
		if err != nil {
			return nil, err
		}
		for _, c := range a.Commits {
			if c.ID == id {
				return a.entry(c), nil
			}
		}
	}
	return nil, CommitNotFound(id)
}

// CommitNotFound is the error of a commit id no manifest version records:
// one constructor, so a caller that must answer exactly as an unknown id
// (the server, for a commit the policy hides) says the same words.
func CommitNotFound(id string) error {
	return fmt.Errorf("%w: %q", ErrCommitNotFound, id)
}

// Exists reports whether the store holds any manifest version (a graph).
func (m *Store) Exists(ctx context.Context) (bool, error) {
	page, err := m.s.List(ctx, Dir, backend.ListOptions{MaxKeys: 1})
	if err != nil {
		return false, err
	}
	return len(page.Objects) > 0, nil
}
