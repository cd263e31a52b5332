// Package table holds versioned columnar datasets: the Lance-style substrate
// every node and edge type of a graph is stored in.
//
// A dataset lives under one key prefix of a backend.StorageAdapter and is a
// linear history of immutable versions per branch. Each version is one JSON
// manifest naming the schema, the Parquet fragments (with row counts and
// per-column min/max/null statistics), the deletion vectors (roaring bitmaps
// of row offsets), the indexes, and the exact transaction (read version, uuid,
// operation) that produced it.
//
// Every write is two-phase. A Stage* method writes new files under fresh
// unique names and returns a *Staged transaction with a pre-minted uuid; it
// changes nothing a reader can see. Commit then performs exactly one
// PutIfAbsent of version ReadVersion+1: that create is the commit, it has one
// winner, and it is never retried. A lost race is ErrConflict; a lost answer
// is backend.ErrUnknown, resolved by ResolveCommit comparing the uuid.
//
// On-disk layout (keys relative to the dataset path):
//
//	_versions/<20-digit MaxUint64-v>.json     manifests of branch "main"
//	tree/<branch>/_versions/<...>.json        manifests of another branch
//	_refs/branches/<branch>                   branch ref (parent, version, id)
//	data/<uuid>.parquet                       fragments written on main
//	tree/<branch>/data/<uuid>.parquet         fragments written on a branch
//	[tree/<branch>/]_deletions/<frag>-<uuid>.bin   deletion vectors
//	[tree/<branch>/]_indices/<uuid>/key.idx        key indexes
//
// Versions are named by MaxUint64-v so the first key of one List page is the
// newest version: Open costs one List and one GET, OpenVersion one GET. See
// docs/dev/tables.md for the full description.
package table
