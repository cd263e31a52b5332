package table

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/omnigraph-go/omnigraph/backend"
)

// Cleanup deletes old versions and unreferenced files of the dataset at
// path, across every live branch:
//
//   - per branch, versions beyond the newest opts.RetainVersions and older
//     than opts.OlderThan (the head, and any version a live branch was
//     forked from, are always kept);
//   - version lines of branches with no ref (deleted or half-created),
//     older than opts.Grace;
//   - data, deletion, index and blob area files no kept version of any
//     live branch references, older than opts.Grace, so files an in-flight writer has
//     staged but not committed survive.
//
// Cleanup is idempotent; a crash part-way leaves only more garbage.
func Cleanup(ctx context.Context, store backend.StorageAdapter, path string, opts CleanupOptions) (CleanupResult, error) {
	var res CleanupResult
	if err := validatePath(path); err != nil {
		return res, err
	}
	if opts.RetainVersions < 1 {
		opts.RetainVersions = 1
	}
	nowT := opts.Now
	if nowT.IsZero() {
		nowT = now()
	}
	del := func(o backend.Attrs) error {
		if opts.DryRun {
			return nil
		}
		if opts.BeforeDelete != nil {
			if err := opts.BeforeDelete(o.Key); err != nil {
				return err
			}
		}
		return store.Delete(ctx, o.Key)
	}
	refs, err := ListBranches(ctx, store, path)
	if err != nil {
		return res, err
	}
	live := map[string]bool{MainBranch: true}
	forks := map[string]map[uint64]bool{}
	for _, r := range refs {
		if opts.Drop != nil && opts.Drop(r) && nowT.Sub(r.CreatedAt) >= opts.Grace {
			if err := del(backend.Attrs{Key: refKey(path, r.Name)}); err != nil {
				return res, fmt.Errorf("cleanup: delete the ref of branch %q: %w", r.Name, err)
			}
			res.BranchesDropped++
			continue
		}
		live[r.Name] = true
		if forks[r.ParentBranch] == nil {
			forks[r.ParentBranch] = map[uint64]bool{}
		}
		forks[r.ParentBranch][r.ParentVersion] = true
	}
	referenced := map[string]bool{}
	for b := range live {
		objs, err := backend.ListAll(ctx, store, versionsPrefix(path, b))
		if err != nil {
			return res, fmt.Errorf("cleanup: list versions of %q: %w", b, err)
		}
		// Keys sort newest first.
		for i, o := range objs {
			v, ok := parseVersionKey(o.Key)
			if !ok || strings.Contains(strings.TrimPrefix(o.Key, versionsPrefix(path, b)), "/") {
				// Not a version of b (a key of a legacy branch nested
				// under b's versions directory is its own branch's).
				continue
			}
			keep := i < opts.RetainVersions || forks[b][v] ||
				(opts.OlderThan > 0 && nowT.Sub(o.ModTime) < opts.OlderThan)
			if opts.Keep != nil {
				keep = i == 0 || forks[b][v] || opts.Keep(b, v)
			}
			if !keep {
				if err := del(o); err != nil {
					return res, fmt.Errorf("cleanup: delete version %d of %q: %w", v, b, err)
				}
				res.VersionsDeleted++
				res.BytesFreed += o.Size
				continue
			}
			m, err := readManifest(ctx, store, path, b, v)
			if backend.IsNotFound(err) {
				continue
			}
			if err != nil {
				return res, err
			}
			for _, f := range m.Fragments {
				referenced[f.Path] = true
				if f.Deletion != nil {
					referenced[f.Deletion.Path] = true
				}
				for _, b := range f.Blobs {
					referenced[b] = true
				}
			}
			for _, ix := range m.Indexes {
				referenced[ix.Path] = true
			}
		}
	}
	objs, err := backend.ListAll(ctx, store, path+"/")
	if err != nil {
		return res, fmt.Errorf("cleanup: list files: %w", err)
	}
	for _, o := range objs {
		rel := strings.TrimPrefix(o.Key, path+"/")
		if strings.HasPrefix(rel, dirRefs+"/") || referenced[rel] || referenced[blobEntryOf(rel)] {
			continue
		}
		if nowT.Sub(o.ModTime) < opts.Grace {
			continue
		}
		_, rest, ok := ownerOf(rel, live)
		switch {
		case blobEntryOf(rel) != "":
			// A piece of a stored Blob value no kept version references
			// (blob.go): reclaimed like a fragment.
		case ok && strings.HasPrefix(rest, dirVersions+"/"):
			// A live branch's version: the first pass decided it.
			continue
		case ok && !isFileDir(rest):
			continue // not a file of the layout: leave it alone
		case !ok && deadVersion(rel):
			// A version manifest of a branch with no ref.
			if err := del(o); err != nil {
				return res, fmt.Errorf("cleanup: delete dead branch version: %w", err)
			}
			res.VersionsDeleted++
			res.BytesFreed += o.Size
			continue
		case !ok && !deadFile(rel):
			continue
		}
		if err := del(o); err != nil {
			return res, fmt.Errorf("cleanup: delete file: %w", err)
		}
		res.FilesDeleted++
		res.BytesFreed += o.Size
	}
	return res, nil
}

// ownerOf returns the live branch whose root holds rel (a key relative to
// the dataset path) and the key relative to that root. Keys outside tree/
// are main's. Under tree/ the owner is found by each live branch's own
// root, never by the first layout word in the key: a branch name may
// itself contain one ("feat/_versions/x", made before such names were
// refused). Live names are path-prefix-disjoint, so at most one root
// holds a layout path; of overlapping legacy names the longest wins.
// ok is false for a key under tree/ that no live branch owns (the residue
// of a deleted branch).
func ownerOf(rel string, live map[string]bool) (owner, rest string, ok bool) {
	inTree, found := strings.CutPrefix(rel, dirTree+"/")
	if !found {
		return MainBranch, rel, true
	}
	for i := len(inTree) - 1; i > 0; i-- {
		if inTree[i] != '/' {
			continue
		}
		b, r := inTree[:i], inTree[i+1:]
		if b != MainBranch && live[b] && (strings.HasPrefix(r, dirVersions+"/") || isFileDir(r)) {
			return b, r, true
		}
	}
	return "", "", false
}

// deadVersion recognises a version manifest under tree/ (of a branch with
// no ref): a version file name directly in a versions directory.
func deadVersion(rel string) bool {
	i := strings.LastIndexByte(rel, '/')
	if i < 0 || !strings.HasPrefix(rel, dirTree+"/") {
		return false
	}
	_, ok := parseVersionKey(rel)
	parent := rel[:i]
	return ok && strings.HasSuffix(parent, "/"+dirVersions)
}

// deadFile recognises a fragment, deletion vector or index file under
// tree/ whose branch has no ref: a file directory among its components.
// Cleanup deletes it only when no kept version references it (a live
// branch forked from a deleted one shares its files).
func deadFile(rel string) bool {
	if !strings.HasPrefix(rel, dirTree+"/") {
		return false
	}
	comps := strings.Split(rel, "/")
	return slices.ContainsFunc(comps[1:len(comps)-1], func(c string) bool { return slices.Contains(fileDirs, c) })
}
