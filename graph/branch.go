package graph

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/manifest"
	"github.com/omnigraph-go/omnigraph/recovery"
	"github.com/omnigraph-go/omnigraph/table"
)

// BranchInfo describes one live graph branch.
type BranchInfo struct {
	Name        string `json:"name"`
	Incarnation uint64 `json:"incarnation"`
	Version     uint64 `json:"version"`
}

// CreateBranch creates branch name from the head of from (default main). It
// is logically atomic: the branch exists exactly when its genesis manifest
// version does, and that is one PutIfAbsent, so a name never half-exists.
// main, internal names ("__..."), names with upper-case letters (names are
// unique ignoring case), names already live, and names that are a path
// ancestor or descendant of a live name are refused. Tables are not
// copied: each is forked on the branch's first write to it.
//
// Cost on a handle that knows from's head: a freshness probe of from and
// the name check (two Lists, in parallel) and the create: three requests,
// two round trips. Cold: one more GET.
func (g *Graph) CreateBranch(ctx context.Context, name, from string) (*Snapshot, error) {
	if err := checkUserBranch(name, "create"); err != nil {
		return nil, err
	}
	if err := checkLowercase(name); err != nil {
		return nil, err
	}
	if err := checkLayoutWords(name); err != nil {
		return nil, err
	}
	snap, err := g.createBranch(ctx, name, from)
	if err != nil {
		return nil, err
	}
	// Only a fork of main can race a schema apply: a fork of another
	// branch X exists only while X does (checkSourceSurvived), and an apply
	// refuses while X exists.
	if from == "" || from == manifest.MainBranch {
		if err := g.checkSchemaUnlocked(ctx, snap.entry); err != nil {
			return nil, err
		}
	}
	return snap, nil
}

// ErrSchemaLocked: a schema apply holds the internal
// manifest.SchemaApplyLockBranch, so branches cannot be created and another
// apply cannot start.
var ErrSchemaLocked = errors.New("a schema apply is in progress")

// checkSchemaUnlocked closes the race of a branch create with a schema
// apply: the apply takes its lock branch and then refuses while other
// branches exist; the create publishes and then probes the lock. Whichever
// runs second sees the other, so no branch forks from the schema an apply
// is replacing. A create that sees the lock withdraws its branch.
func (g *Graph) checkSchemaUnlocked(ctx context.Context, child *manifest.Entry) error {
	r, err := g.man.Probe(ctx, manifest.SchemaApplyLockBranch)
	if err == nil && !r.Live() {
		return nil
	}
	withdraw := g.man.Tombstone(ctx, manifest.Ref{Branch: child.Branch, Incarnation: child.Incarnation, Version: child.Version, Exists: true})
	g.forget(child.Branch)
	if err != nil || withdraw != nil {
		return fmt.Errorf("creating branch %q: could not confirm that no schema apply is running (%v), and withdrawing the new branch failed (%v); check with 'omnigraph branch list' and delete %q if it is listed",
			child.Branch, err, withdraw, child.Branch)
	}
	return fmt.Errorf("%w: branch %q was not created; create it after the apply finishes (if no apply is running, one was interrupted: run 'omnigraph schema apply' again to finish it)", ErrSchemaLocked, child.Branch)
}

// SchemaLockHeld reports whether the schema-apply lock branch is live (one
// List): an apply is running, or one was interrupted.
func (g *Graph) SchemaLockHeld(ctx context.Context) (bool, error) {
	r, err := g.man.Probe(ctx, manifest.SchemaApplyLockBranch)
	if err != nil {
		return false, err
	}
	return r.Live(), nil
}

// LockSchema takes the schema-apply lock: it creates the internal branch
// manifest.SchemaApplyLockBranch from main (one conditional create), so of
// racing applies exactly one proceeds; the others get ErrSchemaLocked.
// breakStale is for a caller that knows no other apply can be running (it
// holds the graph's cluster lock): a lock branch it finds was left by an
// interrupted apply, and is deleted first. unlock deletes the branch.
func (g *Graph) LockSchema(ctx context.Context, breakStale bool) (unlock func(context.Context) error, err error) {
	if g.readOnly {
		return nil, ErrReadOnly
	}
	_, err = g.createBranch(ctx, manifest.SchemaApplyLockBranch, manifest.MainBranch)
	if errors.Is(err, manifest.ErrBranchExists) && breakStale {
		if derr := g.deleteBranch(ctx, manifest.SchemaApplyLockBranch); derr != nil && !errors.Is(derr, manifest.ErrBranchNotFound) {
			return nil, fmt.Errorf("remove the lock of an interrupted schema apply: %w", derr)
		}
		_, err = g.createBranch(ctx, manifest.SchemaApplyLockBranch, manifest.MainBranch)
	}
	if errors.Is(err, manifest.ErrBranchExists) {
		return nil, fmt.Errorf("%w: another schema apply holds the lock; wait for it to finish", ErrSchemaLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("take the schema-apply lock: %w", err)
	}
	return func(ctx context.Context) error {
		if err := g.deleteBranch(ctx, manifest.SchemaApplyLockBranch); err != nil && !errors.Is(err, manifest.ErrBranchNotFound) {
			return fmt.Errorf("release the schema-apply lock: %w", err)
		}
		return nil
	}, nil
}

// createBranch is CreateBranch without the user-name rules, for internal
// branches such as manifest.SchemaApplyLockBranch (main stays refused by
// the name check: it always exists).
func (g *Graph) createBranch(ctx context.Context, name, from string) (*Snapshot, error) {
	if g.readOnly {
		return nil, ErrReadOnly
	}
	if from == "" {
		from = manifest.MainBranch
	}
	if err := manifest.ValidateBranchName(name); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidBranch, err)
	}
	if err := manifest.ValidateBranchName(from); err != nil {
		return nil, fmt.Errorf("%w: --from: %v", ErrInvalidBranch, err)
	}
	// The source's gate too (main is never deleted): a delete of the
	// source in this process holds it from its first check to its last,
	// so a create from it and its delete never interleave here (between
	// processes the publish-then-probe protocol below, with the delete's
	// tombstone-then-list, still guarantees no child is left pinned to
	// reclaimed forks, though both may succeed).
	gated := []string{name}
	if from != manifest.MainBranch {
		gated = append(gated, from)
	}
	h, err := g.gates.acquire(ctx, false, gated, nil)
	if err != nil {
		return nil, err
	}
	defer h.release()
	var (
		wg          sync.WaitGroup
		src         *manifest.Entry
		self        manifest.Ref
		srcE, selfE error
	)
	wg.Add(2)
	go func() { defer wg.Done(); src, srcE = g.head(ctx, from) }()
	go func() { defer wg.Done(); self, selfE = g.man.CheckNewName(ctx, name) }()
	wg.Wait()
	// The name first: a create whose name is taken and whose source is
	// gone is refused as "exists" whichever the checks saw first, the
	// order the simulation's model states (seed 774312538708: the source
	// deleted concurrently answered "not found" instead).
	if selfE != nil {
		return nil, selfE
	}
	if srcE != nil {
		return nil, fmt.Errorf("branch create --from %s: %w", from, srcE)
	}
	e := &manifest.Entry{
		Stamp:          manifest.StampCurrent,
		Kind:           manifest.KindFork,
		GraphID:        src.GraphID,
		Branch:         name,
		Incarnation:    self.Incarnation + 1,
		BranchID:       newID(),
		Version:        1,
		SchemaIdentity: src.SchemaIdentity,
		Tables:         append([]manifest.TablePin(nil), src.Tables...),
		Head:           src.Head,
		Fork: &manifest.ForkPoint{
			Branch:      src.Branch,
			Incarnation: src.Incarnation,
			Version:     src.Version,
			Head:        src.Head,
		},
	}
	if err := g.man.Publish(ctx, e); err != nil {
		switch {
		case errors.Is(err, manifest.ErrHeadMoved):
			return nil, fmt.Errorf("%w: %q was created concurrently", manifest.ErrBranchExists, name)
		case errors.Is(err, backend.ErrUnknown):
			return nil, fmt.Errorf("creating branch %q: the storage answer was lost, so it may or may not exist; check with 'omnigraph branch list': %w", name, err)
		}
		return nil, err
	}
	if from != manifest.MainBranch {
		if err := g.checkSourceSurvived(ctx, e, src); err != nil {
			return nil, err
		}
	}
	g.remember(e, "")
	return &Snapshot{g: g, entry: e}, nil
}

// checkSourceSurvived closes the race of a create --from X with a delete of
// X: the delete tombstones X and then looks for children before it
// reclaims X's table forks, and the create, after publishing the child,
// probes X. Whichever runs second sees the other: either the delete sees
// the child and keeps the forks, or the create sees the tombstone and
// withdraws the child (tombstones it) before anyone was told it exists, so
// no live branch is left pinned to reclaimed data. main is never deleted,
// so a create from main skips the probe.
func (g *Graph) checkSourceSurvived(ctx context.Context, child, src *manifest.Entry) error {
	r, err := g.man.Probe(ctx, src.Branch)
	if err == nil && r.Live() && r.Incarnation == src.Incarnation {
		return nil
	}
	withdraw := g.man.Tombstone(ctx, manifest.Ref{Branch: child.Branch, Incarnation: child.Incarnation, Version: child.Version, Exists: true})
	if err != nil || withdraw != nil {
		return fmt.Errorf("creating branch %q: could not confirm that %q still exists (%v), and withdrawing the new branch failed (%v); check with 'omnigraph branch list' and delete %q if it is listed",
			child.Branch, src.Branch, err, withdraw, child.Branch)
	}
	return fmt.Errorf("%w: %q was deleted while branch %q was being created from it; nothing was created", manifest.ErrBranchNotFound, src.Branch, child.Branch)
}

// checkLowercase makes new branch names unique ignoring case, with no I/O
// and no race: a new name may not contain an upper-case letter. Branch
// names are storage paths, and a case-insensitive filesystem cannot keep
// "Feature" beside "feature" (or "MAIN" beside "main"). Branches made by
// older binaries with upper-case names still open, read, write and delete.
func checkLowercase(name string) error {
	if low := strings.ToLower(name); low != name {
		return fmt.Errorf("%w: branch names are lower-case, so they stay unique on case-insensitive storage; use %q", ErrInvalidBranch, low)
	}
	return nil
}

// LayoutWords returns every directory or object name the storage layouts
// use, derived from their own constants: the graph root's, the table
// layout's (package table), the manifest's and recovery's. A new branch
// name may not have one as a component (checkLayoutWords).
func LayoutWords() []string {
	words := []string{nodesDir, edgesDir, strings.TrimSuffix(ProbeDir, "/"), RootKey}
	words = append(words, table.LayoutWords()...)
	words = append(words, manifest.LayoutWords()...)
	words = append(words, recovery.LayoutWords()...)
	slices.Sort(words)
	return slices.Compact(words)
}

// checkLayoutWords refuses a new branch name with a component that is a
// word of a storage layout ("feat/_versions/x", "data/x"). Branch names
// become key paths inside table directories, so such a component can read
// as part of the layout to anything that parses keys (cleanup once took
// "feat" for the branch of every key of "feat/_versions/x" and deleted
// its versions). Branches made before the refusal keep working: only
// create checks it, and what parses keys matches by each live branch's
// own prefix.
func checkLayoutWords(name string) error {
	words := LayoutWords()
	for _, c := range strings.Split(name, "/") {
		if slices.Contains(words, c) {
			return fmt.Errorf("%w: branch name %q has the component %q, a name the storage layout uses (reserved: %s); choose another word for it",
				ErrInvalidBranch, name, c, strings.Join(words, ", "))
		}
	}
	return nil
}

// checkUserBranch refuses names users may not create or delete.
func checkUserBranch(name, op string) error {
	if err := manifest.ValidateBranchName(name); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidBranch, err)
	}
	switch {
	case name == manifest.MainBranch:
		return fmt.Errorf("%w: cannot %s %q: it always exists; pick another name", ErrInvalidBranch, op, name)
	case manifest.IsInternalBranch(name):
		return fmt.Errorf("%w: %q is an internal name (names starting with \"__\" are reserved)", ErrInvalidBranch, name)
	}
	return nil
}

// Branches lists the live public branches (internal ones such as
// __schema_apply_lock__ are hidden), sorted by name. The cost follows the
// number of branches, not their history.
func (g *Graph) Branches(ctx context.Context) ([]BranchInfo, error) {
	refs, err := g.man.Branches(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]BranchInfo, 0, len(refs))
	for _, r := range refs {
		if manifest.IsInternalBranch(r.Branch) {
			continue
		}
		out = append(out, BranchInfo{Name: r.Branch, Incarnation: r.Incarnation, Version: r.Version})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// DeleteBranch deletes a branch: one PutIfAbsent of a tombstone at its next
// version key, after which it is gone from every read, and a stale writer of
// it can never publish. It refuses main, the handle's current branch, and a
// branch that other live branches were forked from. The branch's table
// forks are reclaimed best-effort afterwards (cleanup is the backstop).
func (g *Graph) DeleteBranch(ctx context.Context, name string) error {
	if err := checkUserBranch(name, "delete"); err != nil {
		return err
	}
	return g.deleteBranch(ctx, name)
}

// deleteBranch is DeleteBranch without the user-name rules (internal
// branches); main is still refused.
func (g *Graph) deleteBranch(ctx context.Context, name string) error {
	if g.readOnly {
		return ErrReadOnly
	}
	if name == manifest.MainBranch {
		return fmt.Errorf("%w: main cannot be deleted", ErrInvalidBranch)
	}
	if name == g.current {
		return fmt.Errorf("%w: %q is the current branch of this handle; switch to another branch first", ErrInvalidBranch, name)
	}
	h, err := g.gates.acquire(ctx, false, []string{name}, nil)
	if err != nil {
		return err
	}
	defer h.release()
	r, err := g.man.Probe(ctx, name)
	if err != nil {
		return err
	}
	if !r.Live() {
		return fmt.Errorf("%w: %q", manifest.ErrBranchNotFound, name)
	}
	kids, err := g.children(ctx, name, r.Incarnation)
	if err != nil {
		return err
	}
	if len(kids) > 0 {
		return fmt.Errorf("%w: %q has branches forked from it (%v); delete those first", ErrHasDescendants, name, kids)
	}
	head, err := g.man.Read(ctx, r)
	if err != nil {
		return err
	}
	if err := g.man.Tombstone(ctx, r); err != nil {
		if errors.Is(err, manifest.ErrHeadMoved) {
			return fmt.Errorf("branch %q moved while it was being deleted; run the delete again: %w", name, err)
		}
		return err
	}
	g.forget(name)
	// A create --from this branch that read its head before the tombstone
	// may have published a child meanwhile; its forks must stay (the
	// creator withdraws the child when it sees the tombstone, see
	// checkSourceSurvived, and cleanup reclaims the forks then).
	if kids, err := g.children(ctx, name, r.Incarnation); err != nil || len(kids) > 0 {
		return nil
	}
	// A branch merged into a live one: its commits are in that branch's
	// history and stay readable until cleanup's retention drops them, so
	// its table forks are left to cleanup.
	if g.reachableFromLive(ctx, head) {
		return nil
	}
	reclaimTableForks(ctx, g.store, head, tableBranch(name, r.Incarnation))
	return nil
}

// children returns the live branches whose genesis forked from incarnation
// inc of branch. It reads each live branch's genesis: O(branches).
func (g *Graph) children(ctx context.Context, branch string, inc uint64) ([]string, error) {
	refs, err := g.man.Branches(ctx)
	if err != nil {
		return nil, err
	}
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		out  []string
		errs []error
	)
	sem := make(chan struct{}, 16)
	for _, r := range refs {
		if r.Branch == branch || r.Branch == manifest.MainBranch {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func(r manifest.Ref) {
			defer wg.Done()
			defer func() { <-sem }()
			e, err := g.man.ReadVersion(ctx, r.Branch, r.Incarnation, 1)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			if e.Fork != nil && e.Fork.Branch == branch && e.Fork.Incarnation == inc {
				out = append(out, r.Branch)
			}
		}(r)
	}
	wg.Wait()
	if len(errs) > 0 {
		return nil, errs[0]
	}
	sort.Strings(out)
	return out, nil
}
