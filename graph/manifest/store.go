package manifest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

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
// key is ErrNotFound-classified.
func (m *Store) ReadVersion(ctx context.Context, branch string, incarnation, version uint64) (*Entry, error) {
	return m.get(ctx, VersionKey(branch, incarnation, version))
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
// of keys is fetched with concurrent GETs.
func (m *Store) Versions(ctx context.Context, branch string, incarnation, from uint64, fn func(*Entry) (bool, error)) error {
	prefix := IncarnationPrefix(branch, incarnation)
	opts := backend.ListOptions{StartAfter: VersionKey(branch, incarnation, from+1), MaxKeys: 256}
	for {
		page, err := m.s.List(ctx, prefix, opts)
		if err != nil {
			return fmt.Errorf("list history of %q: %w", branch, err)
		}
		keys := make([]string, 0, len(page.Objects))
		for _, o := range page.Objects {
			if o.Size > 0 {
				keys = append(keys, o.Key)
			}
		}
		entries, err := m.getMany(ctx, keys)
		if err != nil {
			return err
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
// newest first: the commits of e's incarnation down from e.Version, then,
// through the fork point, the parent branch's commits from the fork version
// down. It stops when fn returns false.
func (m *Store) History(ctx context.Context, e *Entry, fn func(*Entry) (bool, error)) error {
	branch, inc, from := e.Branch, e.Incarnation, e.Version
	for {
		var fork *ForkPoint
		err := m.Versions(ctx, branch, inc, from, func(v *Entry) (bool, error) {
			if v.Kind == KindFork {
				fork = v.Fork
				return false, nil
			}
			return fn(v)
		})
		if err != nil {
			return err
		}
		if fork == nil {
			return nil
		}
		branch, inc, from = fork.Branch, fork.Incarnation, fork.Version
	}
}

// FindCommit returns the version that recorded commit id. It scans every
// version of every branch (deleted ones included) and belongs off hot paths.
func (m *Store) FindCommit(ctx context.Context, id string) (*Entry, error) {
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
	return nil, fmt.Errorf("%w: %q", ErrCommitNotFound, id)
}

// Exists reports whether the store holds any manifest version (a graph).
func (m *Store) Exists(ctx context.Context) (bool, error) {
	page, err := m.s.List(ctx, Dir, backend.ListOptions{MaxKeys: 1})
	if err != nil {
		return false, err
	}
	return len(page.Objects) > 0, nil
}
