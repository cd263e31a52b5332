// Package cleanup reclaims storage a graph no longer needs: table versions
// beyond the retention and files no kept version references (fragments of
// killed writes, replaced fragments, deleted branches' table trees).
//
// Retention is graph-level: per live branch, the newest Keep manifest
// versions (or those newer than OlderThan), plus its genesis (the fork
// point, which a merge base and its inheritance read) and every merged
// parent its merge commits name (the base of that source's next merge).
// A kept merge of a branch deleted since keeps that branch's commits it
// brought in readable the same way: from the merged commit down its line,
// the newest Keep versions (or those within OlderThan, and the merged
// commit itself), and so on through their own merges (deadRetained).
// Every table version
// one of those manifest versions pins is kept, and so is every table
// branch's newest version and every version a table fork was made from.
// The table forks of deleted branches that no kept version pins are
// reclaimed whole (branch delete leaves those of a merged branch to
// cleanup).
// Older manifest versions stay listed in history, but time travel to them
// fails once their tables are gone. main's manifest history beyond the
// retention is pruned too (history.go): the commits move to an archive,
// the versions' objects are emptied.
//
// Cleanup refuses while a recovery intent is pending or a table has drifted
// from its pin (seed 000: "cleanup refuses pending sidecars"): recovery may
// need the versions it would delete. It only deletes, one object at a time,
// never a key a kept version names, so a crash part-way leaves a graph
// every live branch reads as before, with more garbage for the next run.
package cleanup

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/manifest"
	"github.com/omnigraph-go/omnigraph/recovery"
	"github.com/omnigraph-go/omnigraph/table"
)

// Options shape one cleanup. Exactly one of Keep and OlderThan is set.
type Options struct {
	// Keep retains the newest Keep manifest versions of every live branch.
	Keep int
	// OlderThan retains the manifest versions committed within this
	// duration (and always the head).
	OlderThan time.Duration
	// Confirm deletes; without it Run only reports what it would delete.
	Confirm bool
	// Grace keeps unreferenced files younger than this (default 0: the
	// caller holds the cluster lock, so no writer is staging files). Temp
	// residue is always spared for backend.TempGrace at least: a process
	// that does not hold the lock may still be staging one (its lock
	// record's temp).
	Grace time.Duration
	// Now is the clock (zero: time.Now()).
	Now time.Time
	// BeforeDelete, when set, runs before each delete (tests inject crashes).
	BeforeDelete func(key string) error
	// Retained, when set, runs with Confirm once the retention is known and
	// before anything is deleted; an error stops the cleanup there. kept
	// says whether a table version stays; entries are the manifest
	// versions walked, by commit id. The Iceberg export expires its
	// snapshots here, so no retained snapshot names a file cleanup deletes,
	// and deletes its own files no retained snapshot needs (reported as
	// Result.Iceberg).
	// Grace and now are the cleanup's: the hook spares files younger than
	// grace. (Plain types: operations never import each other.)
	Retained func(ctx context.Context, g *graph.Graph, kept func(path, branch string, version uint64) bool, entries map[string]*manifest.Entry, grace time.Duration, now time.Time) (objects int, bytes int64, err error)
}

// ErrRefused: cleanup would run while recovery may still need history.
var ErrRefused = errors.New("cleanup refused")

// TableResult is what cleanup removed from one table.
type TableResult struct {
	Table    string `json:"table"`
	Versions int    `json:"versions"`
	Files    int    `json:"files"`
	// Branches counts the table forks of deleted branches reclaimed
	// (their refs; their versions and files count above).
	Branches int   `json:"branches,omitempty"`
	Objects  int   `json:"objects"`
	Bytes    int64 `json:"bytes"`
}

// Result is what cleanup removed, or with Confirm unset would remove.
type Result struct {
	Preview bool          `json:"preview"`
	Tables  []TableResult `json:"tables"`
	// Orphans are whole tables no kept manifest version pins (a dropped
	// or replaced type's old table beyond the retention, the new table of
	// an interrupted schema apply).
	Orphans []TableResult `json:"orphan_tables"`
	// Temp is the residue of writes killed between staging and
	// publishing (name#<digits>), on stores that stage temp objects.
	Temp TempResult `json:"temp_residue"`
	// Iceberg is the Iceberg export's files the Retained hook deleted
	// (expired snapshots' manifests, old metadata files); only with Confirm.
	Iceberg TempResult `json:"iceberg"`
	Objects int        `json:"objects"`
	Bytes   int64      `json:"bytes"`
	// KeptManifestVersions counts the manifest versions whose tables are
	// kept, over every live branch.
	KeptManifestVersions int `json:"kept_manifest_versions"`
	// History is the manifest history cleanup pruned: versions whose
	// commits stay listed (from the archive) but whose data is gone. Their
	// bytes count in Bytes; their objects stay (emptied), so they do not
	// count in Objects.
	History HistoryResult `json:"manifest_history"`
}

// HistoryResult is the manifest history cleanup pruned.
type HistoryResult struct {
	// Versions pruned (their objects emptied, their commits archived).
	Versions int `json:"versions"`
	// Bytes the pruned versions held.
	Bytes int64 `json:"bytes"`
	// Branches whose history was pruned, sorted.
	Branches []string `json:"branches,omitempty"`
}

// TempResult counts what cleanup removed outside the tables: temp residue, Iceberg files.
type TempResult struct {
	Objects int   `json:"objects"`
	Bytes   int64 `json:"bytes"`
}

// Run cleans the graph's tables. g must be a read-write handle (its open
// ran the recovery sweep); the caller holds the cluster lock.
func Run(ctx context.Context, g *graph.Graph, opts Options) (*Result, error) {
	if (opts.Keep > 0) == (opts.OlderThan > 0) {
		return nil, fmt.Errorf("%w: give exactly one of a version count to keep (--keep N, N >= 1) or an age (--older-than DURATION)", graph.ErrInvalidInput)
	}
	if opts.Confirm && g.ReadOnly() {
		return nil, graph.ErrReadOnly
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	pending, err := g.PendingRecovery(ctx)
	if err != nil {
		return nil, err
	}
	if len(pending) > 0 {
		return nil, fmt.Errorf("%w: %d recovery intent(s) are pending (operation %s); recovery may need the table history cleanup would delete: run 'omnigraph repair' to see them and 'omnigraph repair --confirm' to resolve them, then clean up", ErrRefused, len(pending), pending[0].Sidecar.Intent.OperationID)
	}
	drift, err := recovery.FindDrift(ctx, g.Store(), g.Manifest())
	if err != nil {
		return nil, err
	}
	if len(drift) > 0 {
		return nil, fmt.Errorf("%w: %d table(s) were changed outside any commit (first: %s); run 'omnigraph repair' and 'omnigraph repair --confirm' first", ErrRefused, len(drift), drift[0].Key)
	}
	ret, err := retained(ctx, g.Manifest(), opts, now)
	if err != nil {
		return nil, err
	}
	if ret.prune, err = sparedBySidecars(ctx, g.Store(), ret.prune); err != nil {
		return nil, err
	}
	keep, paths, names, kept := ret.keep, ret.paths, ret.names, ret.kept
	res := &Result{Preview: !opts.Confirm, KeptManifestVersions: kept}
	if opts.Confirm && opts.Retained != nil {
		isKept := func(path, branch string, v uint64) bool { return keep[path][branch][v] }
		n, size, err := opts.Retained(ctx, g, isKept, ret.entries, opts.Grace, now)
		if err != nil {
			return nil, err
		}
		res.Iceberg = TempResult{Objects: n, Bytes: size}
		res.Objects += n
		res.Bytes += size
	}
	for _, path := range paths {
		tk := keep[path]
		r, err := table.Cleanup(ctx, g.Store(), path, table.CleanupOptions{
			Keep: func(branch string, v uint64) bool { return tk[branch][v] },
			// A fork of a deleted graph branch that no kept version pins.
			Drop: func(r table.Ref) bool {
				return graph.IsBranchFork(r.Name) && !ret.live[r.Name] && len(tk[r.Name]) == 0
			},
			Grace:        opts.Grace,
			Now:          now,
			DryRun:       !opts.Confirm,
			BeforeDelete: opts.BeforeDelete,
		})
		if err != nil {
			return res, fmt.Errorf("clean up table %s: %w", names[path], err)
		}
		tr := TableResult{Table: names[path], Versions: r.VersionsDeleted, Files: r.FilesDeleted, Branches: r.BranchesDropped,
			Objects: r.VersionsDeleted + r.FilesDeleted + r.BranchesDropped, Bytes: r.BytesFreed}
		res.Tables = append(res.Tables, tr)
		res.Objects += tr.Objects
		res.Bytes += tr.Bytes
	}
	orphans, err := orphanTables(ctx, g.Store(), keep)
	if err != nil {
		return res, err
	}
	for _, path := range orphans {
		tr, err := dropOrphan(ctx, g.Store(), path, opts, now)
		if err != nil {
			return res, err
		}
		if tr.Objects == 0 {
			continue
		}
		res.Orphans = append(res.Orphans, tr)
		res.Objects += tr.Objects
		res.Bytes += tr.Bytes
	}
	if err := pruneHistory(ctx, g.Manifest(), ret.prune, opts, now, res); err != nil {
		return res, err
	}
	swept, _, err := backend.SweepTemp(ctx, g.Store(), "", now, opts.Grace, !opts.Confirm)
	if err != nil {
		return res, fmt.Errorf("sweep the residue of interrupted writes: %w", err)
	}
	res.Temp = TempResult{Objects: swept.Objects, Bytes: swept.Bytes}
	res.Objects += swept.Objects
	res.Bytes += swept.Bytes
	return res, nil
}

// orphanTables lists the table paths on the store (nodes/<T> and
// edges/<T>, with any suffix a schema apply gave them) that no kept
// manifest version pins. It costs one List per table on the store: each
// listing skips the rest of the table it found.
func orphanTables(ctx context.Context, store backend.StorageAdapter, keep map[string]map[string]map[uint64]bool) ([]string, error) {
	var out []string
	for _, root := range graph.TableDirs() {
		opts := backend.ListOptions{MaxKeys: 1}
		for {
			page, err := store.List(ctx, root, opts)
			if err != nil {
				return nil, fmt.Errorf("list the tables: %w", err)
			}
			if len(page.Objects) == 0 {
				break
			}
			rest := strings.TrimPrefix(page.Objects[0].Key, root)
			name, _, found := strings.Cut(rest, "/")
			if !found {
				// An object directly under nodes/ is no table's; step past it.
				opts.StartAfter = page.Objects[0].Key
				continue
			}
			path := root + name
			if keep[path] == nil {
				out = append(out, path)
			}
			// '0' sorts right after '/': skip every key under path/.
			opts.StartAfter = path + "0"
		}
	}
	return out, nil
}

// orphanName names an orphan table by its type, as table keys do
// ("node:Person"), never by its storage path.
func orphanName(path string) string {
	kind, name, _ := strings.Cut(path, "/")
	typ, suffix, replaced := strings.Cut(name, ".")
	out := strings.TrimSuffix(kind, "s") + ":" + typ
	if replaced && suffix != "" {
		out += " (a replaced copy)"
	}
	return out
}

// dropOrphan deletes (or counts) every object of an orphan table. A table
// with an object younger than the grace is left whole: a writer may still
// be creating it. A crash part-way leaves a smaller orphan for the next run.
func dropOrphan(ctx context.Context, store backend.StorageAdapter, path string, opts Options, now time.Time) (TableResult, error) {
	objs, err := backend.ListAll(ctx, store, path+"/")
	if err != nil {
		return TableResult{}, fmt.Errorf("list an unreferenced table: %w", err)
	}
	tr := TableResult{Table: orphanName(path)}
	for _, o := range objs {
		if opts.Grace > 0 && now.Sub(o.ModTime) < opts.Grace {
			return TableResult{Table: tr.Table}, nil
		}
	}
	for _, o := range objs {
		if opts.Confirm {
			if opts.BeforeDelete != nil {
				if err := opts.BeforeDelete(o.Key); err != nil {
					return tr, err
				}
			}
			if err := store.Delete(ctx, o.Key); err != nil {
				return tr, fmt.Errorf("delete an unreferenced table's object: %w", err)
			}
		}
		tr.Objects++
		tr.Files++
		tr.Bytes += o.Size
	}
	return tr, nil
}

// retention is what cleanup keeps and prunes.
type retention struct {
	// keep: per table path, per table branch, the table versions kept
	// manifest versions pin.
	keep  map[string]map[string]map[uint64]bool
	paths []string          // table paths, sorted
	names map[string]string // table path -> table key, for messages
	kept  int               // manifest versions whose tables are kept
	// prune: per live incarnation, the manifest versions to prune.
	prune [][]*manifest.Entry
	// live holds the table branch of every live graph branch incarnation.
	live map[string]bool
	// entries: every manifest version walked, by commit id.
	entries map[string]*manifest.Entry
}

// retained walks every live branch's manifest history and returns what
// the kept manifest versions pin, and which versions to prune (see
// history.go).
func retained(ctx context.Context, man *manifest.Store, opts Options, now time.Time) (*retention, error) {
	refs, err := man.Branches(ctx)
	if err != nil {
		return nil, err
	}
	names := map[string]string{} // table path -> manifest key, for messages
	keep := map[string]map[string]map[uint64]bool{}
	pin := func(e *manifest.Entry) {
		for _, p := range e.Tables {
			names[p.Path] = p.Key
			if keep[p.Path] == nil {
				keep[p.Path] = map[string]map[uint64]bool{}
			}
			if keep[p.Path][p.Branch] == nil {
				keep[p.Path][p.Branch] = map[uint64]bool{}
			}
			keep[p.Path][p.Branch][p.Version] = true
		}
	}
	kept := 0
	// byID holds every version walked, by commit id; merged the second
	// parents of their merge commits.
	byID := map[string]*manifest.Entry{}
	var merged []string
	var keptMerges []*manifest.Entry
	pinned := map[*manifest.Entry]bool{}
	live := map[string]bool{}
	h := newHistory()
	for _, r := range refs {
		if !r.Live() {
			continue
		}
		live[graph.TableBranchOf(r.Branch, r.Incarnation)] = true
		n := 0
		inc := h.add(r)
		err := man.Versions(ctx, r.Branch, r.Incarnation, r.Version, func(e *manifest.Entry) (bool, error) {
			inc.entries = append(inc.entries, e)
			if e.Commit != nil {
				byID[e.Commit.ID] = e
				if len(e.Commit.Parents) > 1 {
					merged = append(merged, e.Commit.Parents[1:]...)
				}
			}
			n++
			within := n == 1 || (opts.Keep > 0 && n <= opts.Keep)
			if opts.OlderThan > 0 && e.Commit != nil && now.Sub(time.UnixMicro(e.Commit.TimeMicros)) < opts.OlderThan {
				within = true
			}
			if within {
				inc.floor = min(inc.floor, e.Version)
			}
			// The genesis (version 1: main's initial commit, a named
			// branch's fork point) is always kept: a fork's inheritance
			// and its merge base read it.
			if within || e.Version == 1 {
				pin(e)
				pinned[e] = true
				kept++
				if within && e.Commit != nil && len(e.Commit.Parents) > 1 {
					keptMerges = append(keptMerges, e)
				}
			}
			return true, nil
		})
		if err != nil {
			return nil, err
		}
	}
	// A merged parent (the source head a merge recorded) is the base of
	// that source's next merge: keep its tables however old it is. One on
	// a deleted branch is no base any more (a branch with descendants
	// cannot be deleted).
	for _, id := range merged {
		if e := byID[id]; e != nil && !pinned[e] {
			pin(e)
			pinned[e] = true
			kept++
		}
	}
	n, err := deadRetained(ctx, man, keptMerges, byID, opts, now, pin)
	if err != nil {
		return nil, err
	}
	kept += n
	prune, err := h.prunable(ctx, man, byID, pinned)
	if err != nil {
		return nil, err
	}
	paths := make([]string, 0, len(keep))
	for p := range keep {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return &retention{keep: keep, paths: paths, names: names, kept: kept, prune: prune, live: live, entries: byID}, nil
}

// deadRetained pins the commits of deleted branches that the kept merges
// brought in: from each merged commit down its own line (never into the
// branch it was forked from, which is walked as a live branch or reached
// the same way), the newest Keep versions, or with OlderThan those
// within it, and always the merged commit itself; then the same for the
// merges among them. It returns how many versions it pinned. Merges that
// record where their second parent was published cost one GET each.
func deadRetained(ctx context.Context, man *manifest.Store, merges []*manifest.Entry, byID map[string]*manifest.Entry, opts Options, now time.Time, pin func(*manifest.Entry)) (int, error) {
	var todo []*manifest.Entry
	next := func(e *manifest.Entry) error {
		if byID[e.Commit.Parents[1]] != nil {
			return nil // on a live branch: kept as a merged parent
		}
		p, err := man.MergedParent(ctx, e)
		if errors.Is(err, manifest.ErrCommitNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if !p.Pruned {
			todo = append(todo, p)
		}
		return nil
	}
	for _, e := range merges {
		if err := next(e); err != nil {
			return 0, err
		}
	}
	seen := map[string]bool{}
	kept := 0
	for len(todo) > 0 {
		p := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		n := 0
		var follow []*manifest.Entry
		err := man.HistoryN(ctx, p, opts.Keep, func(e *manifest.Entry) (bool, error) {
			if e.Branch != p.Branch || e.Incarnation != p.Incarnation || e.Pruned || seen[e.Commit.ID] {
				return false, nil
			}
			n++
			within := n == 1 || (opts.Keep > 0 && n <= opts.Keep) ||
				(opts.OlderThan > 0 && now.Sub(time.UnixMicro(e.Commit.TimeMicros)) < opts.OlderThan)
			if !within {
				return false, nil
			}
			seen[e.Commit.ID] = true
			pin(e)
			kept++
			if len(e.Commit.Parents) > 1 {
				follow = append(follow, e)
			}
			return true, nil
		})
		if err != nil {
			return 0, err
		}
		for _, e := range follow {
			if err := next(e); err != nil {
				return 0, err
			}
		}
	}
	return kept, nil
}

// Describe renders a result for people: one line per table that had
// something to remove, then the total.
func Describe(r *Result) string {
	var b strings.Builder
	verb := "removed"
	if r.Preview {
		verb = "would remove"
	}
	for _, t := range r.Tables {
		if t.Objects == 0 {
			continue
		}
		forks := ""
		if t.Branches > 0 {
			forks = fmt.Sprintf(", the forks of %d deleted branches", t.Branches)
		}
		fmt.Fprintf(&b, "%s: %s %d objects (%d versions, %d files%s), %d bytes\n", t.Table, verb, t.Objects, t.Versions, t.Files, forks, t.Bytes)
	}
	for _, t := range r.Orphans {
		fmt.Fprintf(&b, "unreferenced table %s: %s %d objects, %d bytes\n", t.Table, verb, t.Objects, t.Bytes)
	}
	if r.Temp.Objects > 0 {
		fmt.Fprintf(&b, "residue of interrupted writes: %s %d objects, %d bytes\n", verb, r.Temp.Objects, r.Temp.Bytes)
	}
	if r.Iceberg.Objects > 0 {
		fmt.Fprintf(&b, "Iceberg metadata of expired snapshots: %s %d objects, %d bytes\n", verb, r.Iceberg.Objects, r.Iceberg.Bytes)
	}
	if r.History.Versions > 0 {
		fmt.Fprintf(&b, "manifest history of %s: %s the data of %d versions, %d bytes (their commits stay listed)\n", strings.Join(r.History.Branches, ", "), verb, r.History.Versions, r.History.Bytes)
	}
	fmt.Fprintf(&b, "%s %d objects, %d bytes in total (keeping the tables of %d manifest versions)\n", verb, r.Objects, r.Bytes, r.KeptManifestVersions)
	if r.Preview {
		b.WriteString("preview only: nothing was deleted; run again with --confirm to delete\n")
	}
	return b.String()
}
