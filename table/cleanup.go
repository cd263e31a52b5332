package table

import (
	"context"
	"fmt"
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
			if !ok {
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
		if strings.HasPrefix(rel, "_refs/") || referenced[rel] || referenced[blobEntryOf(rel)] {
			continue
		}
		if nowT.Sub(o.ModTime) < opts.Grace {
			continue
		}
		if i := strings.Index(rel, "_versions/"); i >= 0 && (i == 0 || rel[i-1] == '/') {
			// A version manifest: main's and live branches' were handled
			// above; this one belongs to a branch with no ref.
			branch := MainBranch
			if strings.HasPrefix(rel, "tree/") && i > len("tree/") {
				branch = rel[len("tree/") : i-1]
			}
			if live[branch] {
				continue
			}
			if err := del(o); err != nil {
				return res, fmt.Errorf("cleanup: delete dead branch version: %w", err)
			}
			res.VersionsDeleted++
			res.BytesFreed += o.Size
			continue
		}
		if !isDataFile(rel) {
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

// isDataFile recognises fragment, deletion and index files by their
// directory, at the dataset root or under a branch tree.
func isDataFile(rel string) bool {
	if blobEntryOf(rel) != "" {
		return true // a piece of a stored Blob value (blob.go)
	}
	for _, d := range []string{"data/", "_deletions/", "_indices/"} {
		if strings.HasPrefix(rel, d) || (strings.HasPrefix(rel, "tree/") && strings.Contains(rel, "/"+d)) {
			return true
		}
	}
	return false
}
