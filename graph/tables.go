package graph

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/lang/pg"
	"github.com/omnigraph-go/omnigraph/manifest"
	"github.com/omnigraph-go/omnigraph/table"
)

// idColumn is every table's key column.
const idColumn = pg.ColID

// tableBranch is the table branch a graph branch incarnation forks tables
// into: "<branch>@<incarnation>". '@' never appears in graph branch names, so
// the mapping is one-to-one, and a recreated branch never meets the table
// forks of an earlier incarnation (they are unreachable garbage for cleanup).
// main's tables live on the table's own main branch.
// TableBranchOf is the table branch incarnation incarnation of graph branch
// branch writes its tables on ("main" for main, else "<branch>@<g>").
func TableBranchOf(branch string, incarnation uint64) string { return tableBranch(branch, incarnation) }

// IsBranchFork reports whether a table branch name is a graph branch
// incarnation's fork of a table ("<branch>@<g>").
func IsBranchFork(name string) bool {
	i := strings.LastIndexByte(name, '@')
	if i <= 0 || i == len(name)-1 {
		return false
	}
	_, err := strconv.ParseUint(name[i+1:], 10, 64)
	return err == nil && manifest.ValidateBranchName(name[:i]) == nil
}

func tableBranch(branch string, incarnation uint64) string {
	if branch == manifest.MainBranch {
		return table.MainBranch
	}
	return branch + "@" + strconv.FormatUint(incarnation, 10)
}

// createTables creates (or adopts, see createOrAdoptTable) one empty table
// per node and edge type, in parallel, and returns their pins sorted by key.
func createTables(ctx context.Context, store backend.StorageAdapter, cat *pg.Catalog) ([]manifest.TablePin, error) {
	type spec struct{ key, path string }
	var specs []spec
	schemas := map[string]func() (*table.Dataset, error){}
	for _, n := range cat.Nodes {
		k, p, s := NodeTableKey(n.Name), NodeTablePath(n.Name), n.ArrowSchema()
		specs = append(specs, spec{k, p})
		schemas[k] = func() (*table.Dataset, error) { return createOrAdoptTable(ctx, store, p, s) }
	}
	for _, e := range cat.Edges {
		k, p, s := EdgeTableKey(e.Name), EdgeTablePath(e.Name), e.ArrowSchema()
		specs = append(specs, spec{k, p})
		schemas[k] = func() (*table.Dataset, error) { return createOrAdoptTable(ctx, store, p, s) }
	}
	pins := make([]manifest.TablePin, len(specs))
	errs := make([]error, len(specs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, sp := range specs {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int, sp spec) {
			defer wg.Done()
			defer func() { <-sem }()
			ds, err := schemas[sp.key]()
			if err != nil {
				errs[i] = fmt.Errorf("create table %s: %w", sp.path, err)
				return
			}
			pins[i] = manifest.TablePin{Key: sp.key, Path: sp.path, Branch: ds.Branch(), Version: ds.Version()}
		}(i, sp)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	sort.Slice(pins, func(i, j int) bool { return pins[i].Key < pins[j].Key })
	return pins, nil
}

// adjacencyWriteRows: a write that leaves at least this many edge rows
// outside an edge table's adjacency index (the persisted traversal index,
// see table.Adjacency) builds a new one with the write, so the first
// traversal of the new version reads one file. Smaller writes leave the
// index to optimize; reads patch it with the rows it lacks meanwhile.
const adjacencyWriteRows = 1 << 16

// indexEdges adds the adjacency index to a staged edge-table write that
// leaves adjacencyWriteRows or more rows outside the current one.
func indexEdges(ctx context.Context, key string, st *table.Staged) error {
	if !strings.HasPrefix(key, edgeKeyPrefix) || st.Empty() {
		return nil
	}
	if st.AdjacencyUncovered(pg.ColSrc, pg.ColDst) < adjacencyWriteRows {
		return nil
	}
	if err := st.AddAdjacencyIndex(ctx, pg.ColSrc, pg.ColDst); err != nil {
		return fmt.Errorf("traversal index of table %s: %w", key, err)
	}
	return nil
}

// OpenTable opens one table at the snapshot's pin: one GET, no List. A
// commit of a deleted branch whose data cleanup removed is ErrCleanedUp
// (see removedData).
func (s *Snapshot) OpenTable(ctx context.Context, key string) (*table.Dataset, error) {
	pin, ok := s.entry.Pin(key)
	if !ok {
		return nil, fmt.Errorf("no table %q in this snapshot", key)
	}
	ds, err := s.g.openTable(ctx, pin.Path, pin.Branch, pin.Version)
	if err != nil && errors.Is(err, table.ErrNotFound) {
		return nil, s.removedData(ctx, err)
	}
	return ds, err
}

// Explain is what a read of the snapshot returns for its failure err: a
// definite not-found of a table version or file it pins (a table this
// handle opened before its branch was deleted, whose fragments the delete
// or cleanup then removed) is the removed-data error of OpenTable; any
// other error, and an unknown outcome, is err unchanged. Every reader of
// a snapshot (query, export, blob, diff) returns its errors through it.
func (s *Snapshot) Explain(ctx context.Context, err error) error {
	if err == nil || errors.Is(err, manifest.ErrCleanedUp) || errors.Is(err, backend.ErrUnknown) {
		return err
	}
	if !errors.Is(err, table.ErrNotFound) && !errors.Is(err, backend.ErrNotFound) {
		return err
	}
	return s.removedData(ctx, err)
}

// removedData explains a table version a snapshot pins that is not there.
// On a deleted branch (the snapshot's incarnation is no longer live) the
// commits other branches reach stay readable until cleanup's retention
// drops them; then their data is gone, as a pruned commit's is, and the
// error says so (manifest.ErrCleanedUp) without naming any table branch
// or version. On a live branch it is err unchanged: a real failure, or a
// branch deleted while it was read (IfBranchDeleted still sees it).
func (s *Snapshot) removedData(ctx context.Context, err error) error {
	r, perr := s.g.man.Probe(ctx, s.entry.Branch)
	if perr != nil || r.Live() && r.Incarnation == s.entry.Incarnation {
		return err
	}
	return &removedError{cause: err, msg: fmt.Sprintf("commit %s was made on branch %q, which has been deleted, and its data is gone: removed by cleanup "+
		"beyond the retention, or by the delete itself when no live branch's history reached it; the commit is still listed by 'omnigraph commit list', but its data can no longer be read",
		s.entry.Head, s.entry.Branch)}
}

// removedError is removedData's error: the message names the commit and
// its branch only; it matches manifest.ErrCleanedUp and the table's
// not-found error.
type removedError struct {
	msg   string
	cause error
}

func (e *removedError) Error() string   { return e.msg }
func (e *removedError) Unwrap() []error { return []error{manifest.ErrCleanedUp, e.cause} }

// TableStat is one table's pinned version and live row count.
type TableStat struct {
	Key     string `json:"table"`
	Path    string `json:"path,omitempty"`
	Branch  string `json:"table_branch"`
	Version uint64 `json:"version"`
	Rows    int64  `json:"rows"`
}

// TableStats opens every pinned table (one GET each, in parallel) and
// reports its version and live row count.
func (s *Snapshot) TableStats(ctx context.Context) ([]TableStat, error) {
	out := make([]TableStat, len(s.entry.Tables))
	errs := make([]error, len(s.entry.Tables))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i, p := range s.entry.Tables {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int, p manifest.TablePin) {
			defer wg.Done()
			defer func() { <-sem }()
			ds, err := s.OpenTable(ctx, p.Key)
			if err != nil {
				errs[i] = fmt.Errorf("open table %s at version %d: %w", p.Key, p.Version, err)
				return
			}
			out[i] = TableStat{Key: p.Key, Path: p.Path, Branch: p.Branch, Version: p.Version, Rows: ds.RowCount()}
		}(i, p)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// reclaimTableForks deletes, best-effort, every file the deleted branch
// incarnation owned alone: for each table of its head (whether the head
// pins the fork or not: a write that failed before publishing may have
// forked it), the table branch's ref and everything under its tree. Failures
// are left to cleanup: the forks are unreachable either way.
func reclaimTableForks(ctx context.Context, store backend.StorageAdapter, head *manifest.Entry, owned string) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, p := range head.Tables {
		wg.Add(1)
		sem <- struct{}{}
		go func(path string) {
			defer wg.Done()
			defer func() { <-sem }()
			_ = deleteTableBranch(ctx, store, path, owned)
		}(p.Path)
	}
	wg.Wait()
}
