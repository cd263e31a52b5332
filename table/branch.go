package table

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/omnigraph-go/omnigraph/backend"
)

// validateBranchName checks a branch name: a valid relative key path, and
// not "main" unless allowMain.
func validateBranchName(name string, allowMain bool) error {
	if name == MainBranch {
		if allowMain {
			return nil
		}
		return errorf(ErrInvalid, "branch %q is the implicit root branch; pick another name", name)
	}
	if err := backend.ValidateKey(name); err != nil {
		return fmt.Errorf("%w: branch name %q: %w", ErrInvalid, name, err)
	}
	if strings.HasPrefix(name, MainBranch+"/") {
		return errorf(ErrInvalid, "branch %q would nest under the root branch %q; pick another name", name, MainBranch)
	}
	return nil
}

// pathOverlap reports whether a is b, or a path ancestor or descendant of b.
func pathOverlap(a, b string) bool {
	return a == b || strings.HasPrefix(a, b+"/") || strings.HasPrefix(b, a+"/")
}

// CreateBranch forks branch name from fromBranch at fromVersion (0: its
// newest version). It checks names are path-prefix-disjoint (one List of the
// refs), reads the parent manifest (one GET), creates the ref with
// PutIfAbsent, reclaims any version residue of a dead same-name branch, and
// writes the branch's first version (a shallow clone sharing every parent
// file) with PutIfAbsent. On backend.ErrUnknown from the ref create the
// returned Ref carries the minted ID, so the caller can ReadRef and compare.
func CreateBranch(ctx context.Context, store backend.StorageAdapter, path, name, fromBranch string, fromVersion uint64) (Ref, error) {
	if err := validatePath(path); err != nil {
		return Ref{}, err
	}
	if err := validateBranchName(name, false); err != nil {
		return Ref{}, err
	}
	if err := validateBranchName(fromBranch, true); err != nil {
		return Ref{}, err
	}
	names, err := branchNames(ctx, store, path)
	if err != nil {
		return Ref{}, err
	}
	for _, other := range names {
		if other == name {
			return Ref{}, fmt.Errorf("%w: %q (delete it first or pick another name)", ErrBranchExists, name)
		}
		if pathOverlap(other, name) {
			return Ref{}, fmt.Errorf("%w: %q and live branch %q are path ancestor and descendant; names must be prefix-disjoint, pick another name", ErrBranchNameConflict, name, other)
		}
	}
	var parent *Dataset
	if fromVersion == 0 {
		parent, err = Open(ctx, store, path, fromBranch)
	} else {
		parent, err = OpenVersion(ctx, store, path, fromBranch, fromVersion)
	}
	if err != nil {
		return Ref{}, fmt.Errorf("create branch %q: parent %q: %w", name, fromBranch, err)
	}
	ref := Ref{Name: name, ParentBranch: fromBranch, ParentVersion: parent.Version(), ID: newUUID(), CreatedAt: now()}
	data, err := json.Marshal(ref)
	if err != nil {
		return Ref{}, err
	}
	if _, err := store.PutIfAbsent(ctx, refKey(path, name), data); err != nil {
		if isConflict(err) {
			return Ref{}, fmt.Errorf("%w: %q was created concurrently: %w", ErrBranchExists, name, err)
		}
		return ref, fmt.Errorf("create branch %q ref: %w", name, err)
	}
	// A deleted branch of the same name may have left its version line.
	if err := store.DeletePrefix(ctx, versionsPrefix(path, name)); err != nil {
		return ref, fmt.Errorf("create branch %q: reclaim old versions: %w", name, err)
	}
	m := parent.m.clone()
	m.Branch, m.BranchID = name, ref.ID
	m.Transaction = Transaction{ReadVersion: parent.Version(), UUID: newUUID(), Operation: OpBranch}
	m.CreatedAt = now()
	b, err := encodeManifest(m)
	if err != nil {
		return ref, err
	}
	if _, err := store.PutIfAbsent(ctx, versionKey(path, name, m.Version), b); err != nil {
		// The ref exists; Open falls back to the parent version until the
		// first commit, so the branch is usable either way.
		return ref, fmt.Errorf("create branch %q first version: %w", name, err)
	}
	return ref, nil
}

// ReadRef reads the ref of branch name (one GET). A missing ref is
// ErrNotFound.
func ReadRef(ctx context.Context, store backend.StorageAdapter, path, name string) (Ref, error) {
	if err := validateBranchName(name, false); err != nil {
		return Ref{}, err
	}
	b, _, err := store.Get(ctx, refKey(path, name))
	if err != nil {
		if backend.IsNotFound(err) {
			return Ref{}, fmt.Errorf("%w: branch %q: %w", ErrNotFound, name, err)
		}
		return Ref{}, fmt.Errorf("read branch %q: %w", name, err)
	}
	var r Ref
	if err := json.Unmarshal(b, &r); err != nil {
		return Ref{}, errorf(ErrCorrupt, "ref of branch %q: %v", name, err)
	}
	return r, nil
}

// branchNames lists live branch names (refs only; "main" is implicit).
func branchNames(ctx context.Context, store backend.StorageAdapter, path string) ([]string, error) {
	prefix := refsPrefix(path)
	objs, err := backend.ListAll(ctx, store, prefix)
	if err != nil {
		return nil, fmt.Errorf("list branches: %w", err)
	}
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, strings.TrimPrefix(o.Key, prefix))
	}
	return out, nil
}

// ListBranches returns the refs of every live branch except "main", sorted
// by name (one List plus one GET per branch).
func ListBranches(ctx context.Context, store backend.StorageAdapter, path string) ([]Ref, error) {
	if err := validatePath(path); err != nil {
		return nil, err
	}
	names, err := branchNames(ctx, store, path)
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	out := make([]Ref, 0, len(names))
	for _, n := range names {
		r, err := ReadRef(ctx, store, path, n)
		if backend.IsNotFound(err) {
			continue // deleted concurrently
		}
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// DeleteBranch removes branch name. If expectID is non-empty the ref must
// carry that ID (a different one is ErrConflict: the branch was deleted and
// recreated). The ref is deleted first, which is the logical delete; the
// files the branch owned alone (its version line and every data, deletion
// and index file under its tree) are then removed best-effort, see
// ReclaimBranch (Cleanup reclaims any residue).
func DeleteBranch(ctx context.Context, store backend.StorageAdapter, path, name, expectID string) error {
	if err := validatePath(path); err != nil {
		return err
	}
	ref, err := ReadRef(ctx, store, path, name)
	if err != nil {
		return err
	}
	if expectID != "" && ref.ID != expectID {
		return fmt.Errorf("%w: branch %q has identifier %s, expected %s (deleted and recreated)", ErrConflict, name, ref.ID, expectID)
	}
	if err := store.Delete(ctx, refKey(path, name)); err != nil {
		return fmt.Errorf("delete branch %q: %w", name, err)
	}
	_ = ReclaimBranch(ctx, store, path, name)
	return nil
}

// ReclaimBranch deletes the files of a branch that has no ref (deleted, or
// half-created): everything under its tree, version line and data, deletion
// and index files alike. A branch's own writes land only under its tree, so
// those files are its alone, unless a live branch was forked from it (its
// shallow clone shares them): then only the version line is deleted and
// the rest is left to Cleanup, which follows references. A live ref of name
// itself is ErrConflict.
func ReclaimBranch(ctx context.Context, store backend.StorageAdapter, path, name string) error {
	if err := validatePath(path); err != nil {
		return err
	}
	if err := validateBranchName(name, false); err != nil {
		return err
	}
	// Most tables were never forked by the branch: one List says so.
	page, err := store.List(ctx, branchRoot(path, name), backend.ListOptions{MaxKeys: 1})
	if err != nil {
		return fmt.Errorf("reclaim branch %q: %w", name, err)
	}
	if len(page.Objects) == 0 {
		return nil
	}
	refs, err := ListBranches(ctx, store, path)
	if err != nil {
		return err
	}
	for _, r := range refs {
		if r.Name == name {
			return fmt.Errorf("%w: branch %q is live; delete it instead", ErrConflict, name)
		}
		if r.ParentBranch == name {
			// A live child shares the files.
			if err := store.DeletePrefix(ctx, versionsPrefix(path, name)); err != nil {
				return fmt.Errorf("reclaim branch %q: %w", name, err)
			}
			return nil
		}
	}
	if err := store.DeletePrefix(ctx, branchRoot(path, name)); err != nil {
		return fmt.Errorf("reclaim branch %q: %w", name, err)
	}
	return nil
}
