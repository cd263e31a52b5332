package table

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/omnigraph-go/omnigraph/backend"
)

// Dataset is one version of a dataset on one branch. It is immutable and
// safe for concurrent use; a write produces a new *Dataset.
type Dataset struct {
	store  backend.StorageAdapter
	path   string
	m      *Manifest
	schema *arrow.Schema

	// cache holds decoded immutable objects (fragments, deletion vectors,
	// key index directories and pages); shared with every version derived
	// from this one by a commit, and with any handle given it by WithCache.
	cache *Cache
}

func newDataset(store backend.StorageAdapter, path string, m *Manifest, cache *Cache) (*Dataset, error) {
	s, err := decodeSchema(m.Schema)
	if err != nil {
		return nil, err
	}
	if cache == nil {
		cache = NewCache(0)
	}
	return &Dataset{store: store, path: path, m: m, schema: s, cache: cache}, nil
}

// WithCache returns this version reading through cache c, which it then
// shares with every version committed from it. Share one Cache between the
// versions of the tables of one store, so a read of a new version decodes
// only the files that version added. No I/O.
func (ds *Dataset) WithCache(c *Cache) *Dataset {
	if c == nil || c == ds.cache {
		return ds
	}
	return &Dataset{store: ds.store, path: ds.path, m: ds.m, schema: ds.schema, cache: c}
}

// Cache is the object cache this version reads through.
func (ds *Dataset) Cache() *Cache { return ds.cache }

// Path is the dataset's key prefix in its store.
func (ds *Dataset) Path() string { return ds.path }

// Version is the version this handle reads.
func (ds *Dataset) Version() uint64 { return ds.m.Version }

// Branch is the branch this handle reads.
func (ds *Dataset) Branch() string { return ds.m.Branch }

// BranchID identifies the branch incarnation (compare with Ref.ID to detect
// a branch deleted and recreated under the same name).
func (ds *Dataset) BranchID() string { return ds.m.BranchID }

// DatasetID is minted at Create and shared by every branch.
func (ds *Dataset) DatasetID() string { return ds.m.DatasetID }

// KeyColumn is the primary-key column.
func (ds *Dataset) KeyColumn() string { return ds.m.KeyColumn }

// Schema is the dataset's Arrow schema at this version.
func (ds *Dataset) Schema() *arrow.Schema { return ds.schema }

// Manifest returns a copy of this version's manifest.
func (ds *Dataset) Manifest() *Manifest { return ds.m.clone() }

// Transaction is the exact identity of the write that produced this version.
func (ds *Dataset) Transaction() Transaction { return ds.m.Transaction }

// RowCount is the number of live rows (deleted rows excluded). No I/O.
func (ds *Dataset) RowCount() int64 { return ds.m.LiveRows() }

// Store is the adapter this dataset reads and writes through.
func (ds *Dataset) Store() backend.StorageAdapter { return ds.store }

// Create makes an empty dataset (version 1 on branch "main") at path. The
// version is created with PutIfAbsent; an existing dataset is ErrExists.
// keyColumn must be a string column of schema.
func Create(ctx context.Context, store backend.StorageAdapter, path string, schema *arrow.Schema, keyColumn string) (*Dataset, error) {
	st, err := StageCreate(ctx, store, path, schema, keyColumn)
	if err != nil {
		return nil, err
	}
	return Commit(ctx, st)
}

// StageCreate stages version 1 of a new dataset holding recs (which may be
// none), with a pre-minted uuid and ReadVersion 0. It refuses a path that
// already holds versions (one List); Commit's PutIfAbsent is the real fence.
func StageCreate(ctx context.Context, store backend.StorageAdapter, path string, schema *arrow.Schema, keyColumn string, recs ...arrow.Record) (*Staged, error) {
	if err := validatePath(path); err != nil {
		return nil, err
	}
	if schema == nil {
		return nil, errorf(ErrInvalid, "create %s: nil schema", path)
	}
	if err := checkKeyColumn(schema, keyColumn); err != nil {
		return nil, err
	}
	if err := validateRecords(schema, keyColumn, recs); err != nil {
		return nil, err
	}
	if _, ok, err := latestVersion(ctx, store, path, MainBranch); err != nil {
		return nil, err
	} else if ok {
		return nil, fmt.Errorf("%w: %s already holds versions; open it instead: %w", ErrExists, path, backend.ErrPrecondition)
	}
	sb, err := encodeSchema(schema)
	if err != nil {
		return nil, err
	}
	id := newUUID()
	m := &Manifest{
		FormatVersion: formatVersion,
		DatasetID:     id,
		Branch:        MainBranch,
		BranchID:      id,
		KeyColumn:     keyColumn,
		Schema:        sb,
		Fragments:     []Fragment{},
	}
	st := &Staged{store: store, Path: path, Branch: MainBranch}
	if rows(recs) > 0 {
		f, key, err := writeFragment(ctx, store, path, branchRoot(path, MainBranch), schema, keyColumn, recs)
		if err != nil {
			return nil, err
		}
		m.Fragments = append(m.Fragments, f)
		st.Files = append(st.Files, key)
	}
	st.finish(m, 0, OpCreate)
	return st, nil
}

// finish stamps the staged manifest as version read+1 with a fresh uuid.
func (st *Staged) finish(m *Manifest, read uint64, op string) {
	st.ReadVersion = read
	st.UUID = newUUID()
	st.Operation = op
	m.Version = read + 1
	m.Transaction = Transaction{ReadVersion: read, UUID: st.UUID, Operation: op}
	m.CreatedAt = now()
	st.Manifest = m
}

// Open opens the newest version of branch: one List request and one GET.
// A branch whose own version line is still empty (its creation was
// interrupted after the ref) opens at the ref's parent version.
func Open(ctx context.Context, store backend.StorageAdapter, path, branch string) (*Dataset, error) {
	if err := validatePath(path); err != nil {
		return nil, err
	}
	if err := validateBranchName(branch, true); err != nil {
		return nil, err
	}
	v, ok, err := latestVersion(ctx, store, path, branch)
	if err != nil {
		return nil, err
	}
	if !ok {
		if branch == MainBranch {
			return nil, fmt.Errorf("%w: no dataset at %s (create it first): %w", ErrNotFound, path, backend.ErrNotFound)
		}
		return openFromRef(ctx, store, path, branch)
	}
	return OpenVersion(ctx, store, path, branch, v)
}

// openFromRef opens a branch with no own versions at its ref's fork point.
func openFromRef(ctx context.Context, store backend.StorageAdapter, path, branch string) (*Dataset, error) {
	ref, err := ReadRef(ctx, store, path, branch)
	if err != nil {
		return nil, err
	}
	m, err := readManifest(ctx, store, path, ref.ParentBranch, ref.ParentVersion)
	if err != nil {
		return nil, err
	}
	m.Branch, m.BranchID = branch, ref.ID
	return newDataset(store, path, m, nil)
}

// OpenVersion opens version v of branch with exactly one GET and no List.
func OpenVersion(ctx context.Context, store backend.StorageAdapter, path, branch string, v uint64) (*Dataset, error) {
	if err := validatePath(path); err != nil {
		return nil, err
	}
	if err := validateBranchName(branch, true); err != nil {
		return nil, err
	}
	m, err := readManifest(ctx, store, path, branch, v)
	if err != nil {
		return nil, err
	}
	return newDataset(store, path, m, nil)
}

// ReadManifest reads version v of branch (one GET).
func ReadManifest(ctx context.Context, store backend.StorageAdapter, path, branch string, v uint64) (*Manifest, error) {
	if err := validatePath(path); err != nil {
		return nil, err
	}
	return readManifest(ctx, store, path, branch, v)
}

// LatestVersion returns the newest version of branch with one List request.
// A branch with an empty own line reports its ref's parent version (one GET
// more). A missing dataset is ErrNotFound.
func LatestVersion(ctx context.Context, store backend.StorageAdapter, path, branch string) (uint64, error) {
	if err := validatePath(path); err != nil {
		return 0, err
	}
	if err := validateBranchName(branch, true); err != nil {
		return 0, err
	}
	v, ok, err := latestVersion(ctx, store, path, branch)
	if err != nil || ok {
		return v, err
	}
	if branch == MainBranch {
		return 0, fmt.Errorf("%w: no dataset at %s: %w", ErrNotFound, path, backend.ErrNotFound)
	}
	ref, err := ReadRef(ctx, store, path, branch)
	if err != nil {
		return 0, err
	}
	return ref.ParentVersion, nil
}

// Exists reports whether a dataset has been created at path (one List).
func Exists(ctx context.Context, store backend.StorageAdapter, path string) (bool, error) {
	if err := validatePath(path); err != nil {
		return false, err
	}
	_, ok, err := latestVersion(ctx, store, path, MainBranch)
	return ok, err
}

// Drop deletes every object of the dataset at path, all branches included.
// It is idempotent. Only use it on a dataset nothing references.
func Drop(ctx context.Context, store backend.StorageAdapter, path string) error {
	if err := validatePath(path); err != nil {
		return err
	}
	return store.DeletePrefix(ctx, path+"/")
}

// TransactionAt returns the exact transaction that produced version v of
// this handle's branch (one GET).
func (ds *Dataset) TransactionAt(ctx context.Context, v uint64) (Transaction, error) {
	if v == ds.m.Version {
		return ds.m.Transaction, nil
	}
	m, err := readManifest(ctx, ds.store, ds.path, ds.m.Branch, v)
	if err != nil {
		return Transaction{}, err
	}
	return m.Transaction, nil
}

// Commit makes a staged transaction visible with exactly one PutIfAbsent of
// version ReadVersion+1: no List, no GET, no retry. Losing the race is
// ErrConflict (also backend.ErrPrecondition; ErrExists too for a Create). A
// lost answer is returned as backend.ErrUnknown: call ResolveCommit, never
// Commit again. On success it returns the new version's handle.
func Commit(ctx context.Context, st *Staged) (*Dataset, error) {
	if st.Empty() {
		return nil, ErrNothingStaged
	}
	data, err := encodeManifest(st.Manifest)
	if err != nil {
		return nil, err
	}
	v := st.ReadVersion + 1
	if _, err := st.store.PutIfAbsent(ctx, versionKey(st.Path, st.Branch, v), data); err != nil {
		if isConflict(err) {
			if st.Operation == OpCreate {
				return nil, fmt.Errorf("%w: %w: %s: %w", ErrExists, ErrConflict, st.Path, err)
			}
			return nil, fmt.Errorf("%w: %s branch %q version %d was committed by another writer: %w", ErrConflict, st.Path, st.Branch, v, err)
		}
		return nil, fmt.Errorf("commit %s branch %q version %d: %w", st.Path, st.Branch, v, err)
	}
	return newDataset(st.store, st.Path, st.Manifest, st.cache)
}

// ResolveCommit learns the outcome of a Commit whose answer was lost: it
// reads version ReadVersion+1 (one GET) and reports whether it carries the
// staged uuid. Absent or another uuid is (false, nil).
func ResolveCommit(ctx context.Context, store backend.StorageAdapter, st *Staged) (bool, error) {
	if st.Empty() {
		return false, ErrNothingStaged
	}
	m, err := readManifest(ctx, store, st.Path, st.Branch, st.ReadVersion+1)
	if err != nil {
		if backend.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	return m.Transaction.UUID == st.UUID && m.Transaction.ReadVersion == st.ReadVersion, nil
}

func rows(recs []arrow.Record) int64 {
	var n int64
	for _, r := range recs {
		n += r.NumRows()
	}
	return n
}

func checkKeyColumn(s *arrow.Schema, key string) error {
	seen := map[string]bool{}
	for _, f := range s.Fields() {
		if seen[f.Name] {
			return errorf(ErrInvalid, "column %q appears twice in the schema; column names must be unique", f.Name)
		}
		seen[f.Name] = true
	}
	idx := s.FieldIndices(key)
	if len(idx) != 1 {
		return errorf(ErrInvalid, "key column %q must appear exactly once in the schema", key)
	}
	if !isStringType(s.Field(idx[0]).Type) {
		return errorf(ErrInvalid, "key column %q must be a string column, not %s", key, s.Field(idx[0]).Type)
	}
	return nil
}

// sameSchema compares field names, types and nullability (not metadata).
func sameSchema(a, b *arrow.Schema) bool {
	if a.NumFields() != b.NumFields() {
		return false
	}
	for i := range a.Fields() {
		fa, fb := a.Field(i), b.Field(i)
		if fa.Name != fb.Name || fa.Nullable != fb.Nullable || !arrow.TypeEqual(fa.Type, fb.Type) {
			return false
		}
	}
	return true
}

// validateRecords checks every record has the schema and a non-null key.
func validateRecords(s *arrow.Schema, key string, recs []arrow.Record) error {
	ki := s.FieldIndices(key)[0]
	for i, r := range recs {
		if r == nil {
			return errorf(ErrInvalid, "record %d is nil", i)
		}
		if !sameSchema(s, r.Schema()) {
			return errorf(ErrInvalid, "record %d has schema %s, the dataset has %s", i, r.Schema(), s)
		}
		if n := r.Column(ki).NullN(); n > 0 {
			return errorf(ErrInvalid, "record %d has %d null values in key column %q; every row needs a key", i, n, key)
		}
	}
	return nil
}

// WithStore returns this version read and staged through s, a wrapper of
// the store it was opened on (the write pipeline's, which holds new data
// files until the commit round trip). The cache is shared.
func (ds *Dataset) WithStore(s backend.StorageAdapter) *Dataset {
	c := *ds
	c.store = s
	return &c
}
