package table

import (
	"errors"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/omnigraph-go/omnigraph/backend"
)

// MainBranch is the implicit root branch of every dataset. It has no ref
// object; its identifier is the dataset identifier minted at Create.
const MainBranch = "main"

// Operation names recorded in Transaction.Operation.
const (
	OpCreate      = "Create"
	OpAppend      = "Append"
	OpDelete      = "Delete"
	OpOverwrite   = "Overwrite"
	OpMerge       = "Merge"  // merge-insert (upsert by key)
	OpUpdate      = "Update" // StageChanges combining deletes, upserts and appends
	OpRestore     = "Restore"
	OpCreateIndex = "CreateIndex"
	OpCompact     = "Compact"
	OpBranch      = "Branch" // first version of a branch: a shallow clone of its parent
)

// Errors, classified with errors.Is.
var (
	// ErrConflict: Commit lost the race for ReadVersion+1 (someone else
	// committed first). It also matches backend.ErrPrecondition.
	ErrConflict = errors.New("table: commit conflict: version already exists")
	// ErrExists: Create found a dataset already at the path. Also matches
	// backend.ErrPrecondition.
	ErrExists = errors.New("table: dataset already exists")
	// ErrNotFound: the dataset, version, branch or ref does not exist. Also
	// matches backend.ErrNotFound.
	ErrNotFound = errors.New("table: not found")
	// ErrBranchExists: CreateBranch found a live branch of that name.
	ErrBranchExists = errors.New("table: branch already exists")
	// ErrBranchNameConflict: the name is a path ancestor or descendant of a
	// live branch name ("review" vs "review/2026-07").
	ErrBranchNameConflict = errors.New("table: branch name overlaps a live branch")
	// ErrInvalid: bad input (schema mismatch, null key, unknown column, bad
	// name). Nothing was written.
	ErrInvalid = errors.New("table: invalid argument")
	// ErrNothingStaged: Commit was handed an Empty staged transaction.
	ErrNothingStaged = errors.New("table: nothing staged")
	// ErrCorrupt: a stored manifest, deletion vector or index cannot be decoded.
	ErrCorrupt = errors.New("table: corrupt object")
)

// Transaction is the exact identity of the write that produced a version.
type Transaction struct {
	// ReadVersion is the version the write was staged against; the version it
	// produced is ReadVersion+1 (0 for Create).
	ReadVersion uint64 `json:"read_version"`
	// UUID is minted at stage time and identifies the write exactly.
	UUID string `json:"uuid"`
	// Operation is one of the Op* constants.
	Operation string `json:"operation"`
	// RestoreTarget is the version a Restore copied (0 otherwise), so a
	// compensating restore can be recognised by its exact target.
	RestoreTarget uint64 `json:"restore_target,omitempty"`
}

// Scalar is a typed statistics or predicate value. Kind is one of "int",
// "uint", "float", "string", "bool"; the matching field holds the value.
type Scalar struct {
	Kind  string  `json:"k"`
	Int   int64   `json:"i,omitempty"`
	Uint  uint64  `json:"u,omitempty"`
	Float float64 `json:"f,omitempty"`
	Str   string  `json:"s,omitempty"`
	Bool  bool    `json:"b,omitempty"`
}

// ColumnStats are one fragment's statistics for one column. Min and Max are
// nil when the column type has no ordering statistics or every value is null.
type ColumnStats struct {
	Column    string  `json:"column"`
	Min       *Scalar `json:"min,omitempty"`
	Max       *Scalar `json:"max,omitempty"`
	NullCount int64   `json:"nulls"`
}

// DeletionFile is a fragment's deletion vector: a roaring bitmap of deleted
// row offsets. It is cumulative: it holds every deletion of the fragment.
type DeletionFile struct {
	Path  string `json:"path"`
	Count int64  `json:"count"`
}

// Fragment is one immutable Parquet data file.
type Fragment struct {
	// ID is unique within the dataset (every branch); it is the file's uuid.
	ID string `json:"id"`
	// Path is relative to the dataset path.
	Path string `json:"path"`
	// Rows is the physical row count of the file.
	Rows int64 `json:"rows"`
	// Size is the file's length in bytes (ranged reads need it).
	Size     int64         `json:"size"`
	Deletion *DeletionFile `json:"deletion,omitempty"`
	Stats    []ColumnStats `json:"stats,omitempty"`
	// Keys, on a small fragment (see inlineKeyRows), are its rows' keys
	// sorted (deleted rows included): a key check consults them instead of
	// reading the file.
	Keys []string `json:"keys,omitempty"`
	// Blobs are the blob area entries ("_blobs/<uuid>", sorted) the
	// fragment's rows reference (deleted rows included): Cleanup keeps
	// them while a kept version lists the fragment (blob.go).
	Blobs []string `json:"blobs,omitempty"`
}

// LiveRows is Rows minus deleted rows.
func (f Fragment) LiveRows() int64 {
	if f.Deletion == nil {
		return f.Rows
	}
	return f.Rows - f.Deletion.Count
}

// Index describes a built index. A key index maps each value of Column to
// (fragment, row offset); it covers the fragments listed in Fragments, and
// lookups scan any fragment it does not cover. An adjacency index (Kind
// AdjacencyKind, see adjacency.go) groups the rows by the two endpoint
// Columns; it covers Fragments as they were at Version (Rows live rows and
// deletion file Deletions each), and a load reads any fragment it does not
// cover as it is now.
type Index struct {
	UUID      string   `json:"uuid"`
	Kind      string   `json:"kind"` // "key" or AdjacencyKind
	Column    string   `json:"column"`
	Columns   []string `json:"columns,omitempty"`
	Path      string   `json:"path"`
	Size      int64    `json:"size"`
	DirLen    int64    `json:"dir_len"`
	Entries   int64    `json:"entries"`
	Fragments []string `json:"fragments"`
	Version   uint64   `json:"version,omitempty"`
	Rows      []int64  `json:"rows,omitempty"`
	Deletions []string `json:"deletions,omitempty"`
}

// Manifest is one immutable version of a dataset on one branch.
type Manifest struct {
	FormatVersion int    `json:"format_version"`
	DatasetID     string `json:"dataset_id"`
	Version       uint64 `json:"version"`
	Branch        string `json:"branch"`
	// BranchID identifies this incarnation of the branch: a branch deleted
	// and recreated under the same name gets a new BranchID.
	BranchID  string `json:"branch_id"`
	KeyColumn string `json:"key_column"`
	// Schema is the Arrow schema in IPC encoding; use Dataset.Schema.
	Schema      []byte      `json:"schema"`
	Fragments   []Fragment  `json:"fragments"`
	Indexes     []Index     `json:"indexes,omitempty"`
	Transaction Transaction `json:"transaction"`
	CreatedAt   time.Time   `json:"created_at"`
}

// LiveRows is the number of rows a scan of this version returns.
func (m *Manifest) LiveRows() int64 {
	var n int64
	for _, f := range m.Fragments {
		n += f.LiveRows()
	}
	return n
}

// Staged is a staged transaction: its files are written, nothing is visible.
// Commit makes it visible; dropping it leaves only unreferenced files that
// Cleanup reclaims after its grace period.
type Staged struct {
	Path        string
	Branch      string
	ReadVersion uint64
	UUID        string
	Operation   string
	// Manifest is the complete manifest of version ReadVersion+1 (nil when
	// Empty).
	Manifest *Manifest
	// Files lists the keys (relative to the store) this stage wrote.
	Files []string

	store backend.StorageAdapter
	cache *Cache // the staging version's, inherited by the committed one
	empty bool
	// tracked holds, per fragment id, the endpoints its writer interned
	// (FragmentWriter.TrackEndpoints), for AddAdjacencyIndex.
	tracked map[string]*trackedEnds
}

// Empty reports that the stage changes nothing (a delete predicate that
// matched no live row, a compaction with nothing to do). Committing it is
// ErrNothingStaged; callers skip it.
func (s *Staged) Empty() bool { return s == nil || s.empty }

// SetUUID rebinds the staged transaction to a pre-minted identity before
// Commit (staged files do not depend on it). The uuid must be non-empty.
func (s *Staged) SetUUID(uuid string) error {
	if s.Empty() {
		return ErrNothingStaged
	}
	if uuid == "" {
		return errorf(ErrInvalid, "SetUUID: empty uuid; pass the pre-minted transaction id")
	}
	s.UUID = uuid
	s.Manifest.Transaction.UUID = uuid
	return nil
}

// ScanOptions shape a Scan.
type ScanOptions struct {
	// Columns to return, in this order; nil means every column.
	Columns []string
	// Filter keeps rows it matches; the zero Predicate matches every row.
	// Fragments whose statistics prove no row can match are not read.
	Filter Predicate
	// Fragments, when non-nil, restricts the scan to the fragments with
	// these ids (a diff reads only the fragments two versions do not
	// share); others are not read.
	Fragments []string
}

// Changes is a combination of writes staged as one version by StageChanges.
// Deletes are evaluated against the read version (never against rows this
// same change adds); then Upsert replaces rows by key (last write wins within
// Upsert); then Append adds rows as they are.
type Changes struct {
	// DeleteKeys deletes the rows whose key is one of these.
	DeleteKeys []string
	// Delete, when non-nil, deletes the rows it matches.
	Delete *Predicate
	// Upsert rows replace live rows with the same key, or are added.
	Upsert []arrow.Record
	// Append rows are added without a key check.
	Append []arrow.Record
}

// CompactOptions tune Compact.
type CompactOptions struct {
	// TargetRows is the row count a rewritten fragment aims for; fragments
	// with fewer live rows, or with deletions, are rewritten. Default 1<<20.
	TargetRows int64
	// IndexKey also builds (or folds newer fragments into) the key index
	// on the key column, so it covers every fragment of the new version:
	// a compaction with nothing else to do still rebuilds a missing or
	// partial key index.
	IndexKey bool
	// Adjacency, when both are set, also builds (or rebuilds) the
	// adjacency index on these endpoint columns (source, destination), so
	// it covers the new version exactly; a compaction with nothing else
	// to do still builds a missing or stale one.
	Adjacency [2]string
	// TierRatio, when > 0, makes the compaction size-tiered: of the small
	// fragments it rewrites only the smallest ones, sorted by live rows,
	// the two smallest and each next one while it holds at most TierRatio
	// times the rows selected so far (and every fragment with deletions,
	// whatever its size). Each run still merges at least two fragments, so
	// a writer that compacts whenever a table holds N small fragments keeps
	// it under N, while a row is rewritten about log(table rows) times
	// instead of once per run (automatic compaction uses it). 0: every
	// small fragment is rewritten.
	TierRatio float64
}

// CleanupOptions bound what Cleanup may delete.
type CleanupOptions struct {
	// RetainVersions keeps at least this many newest versions per branch
	// (minimum and default 1: the head is never deleted).
	RetainVersions int
	// OlderThan: only versions whose manifest is older than this are
	// deleted (0: age does not protect a version).
	OlderThan time.Duration
	// Grace: unreferenced files younger than this are kept, because an
	// in-flight writer may have staged them and not committed yet.
	Grace time.Duration
	// Now is the clock (zero: time.Now()); tests pin it.
	Now time.Time
	// Keep, when set, decides which versions of a live branch survive
	// instead of RetainVersions and OlderThan (the graph's retention knows
	// which table versions its kept manifest versions pin). The newest
	// version of each branch and fork points are kept regardless.
	Keep func(branch string, version uint64) bool
	// Drop, when set, names branches to reclaim although they have a ref
	// (the forks of graph branches that were deleted and that no kept
	// version needs any more): their refs are deleted (when older than
	// Grace), and they are cleaned as branches with no ref.
	Drop func(ref Ref) bool
	// DryRun counts what would be removed and removes nothing.
	DryRun bool
	// BeforeDelete, when set, runs before each delete; an error stops the
	// cleanup there (tests inject crashes with it).
	BeforeDelete func(key string) error
}

// CleanupResult counts what Cleanup removed (or, with DryRun, would
// remove). BytesFreed counts version manifests and files.
type CleanupResult struct {
	VersionsDeleted int
	FilesDeleted    int
	// BranchesDropped counts the refs CleanupOptions.Drop named that were
	// deleted (their versions and files count above).
	BranchesDropped int
	BytesFreed      int64
}

// Ref is a branch ref object at _refs/branches/<name>.
type Ref struct {
	Name          string    `json:"name"`
	ParentBranch  string    `json:"parent_branch"`
	ParentVersion uint64    `json:"parent_version"`
	ID            string    `json:"id"`
	CreatedAt     time.Time `json:"created_at"`
}
