// Package iceberg makes every node and edge table of a graph an Apache
// Iceberg table (format v2) over the graph's own Parquet files, so Spark,
// Trino, PyIceberg or DuckDB read exactly what `omnigraph query` reads
// (docs/iceberg.md).
//
// The mapping: one Iceberg table per graph table key (namespace nodes or
// edges, named by the type); one snapshot per graph commit that changed
// the table, its summary naming the commit (SummaryCommitID); one branch
// ref per graph branch; a deletion vector becomes a position-delete file;
// a compaction is a replace snapshot; field ids survive @rename_from
// renames, and schema.name-mapping.default resolves the Parquet columns
// (which carry no field ids) by name. Every manifest entry carries column
// statistics (value and null counts, lower and upper bounds) taken from
// the fragment statistics the table's Parquet writer already recorded, so
// engines prune files by value at no extra request. Metadata files are
// plain JSON unless the table's codec is gzip.
//
// The rules Sync keeps:
//
//   - It reads the graph through its manifest and tables only and writes
//     only under Prefix, through the graph's StorageAdapter: it never
//     touches a writer's keys. Its callers hold the cluster lock (the
//     CLI's, serve's), so cleanup never deletes a file a sync is naming.
//   - The metadata file v<N+1> is created with put-if-absent, and only
//     after every file it names exists, so a sync that stops anywhere
//     leaves nothing a reader sees; a loser of the put-if-absent re-reads
//     the newest metadata and re-applies its changes (they are
//     idempotent: each ref remembers the graph version it shows).
//   - Cost follows the commits since the branch's cursor, not history:
//     an incremental sync of one commit reads the head, the cursor, and
//     per changed table its new version and its metadata file, and writes
//     one or two manifests, a manifest list, the metadata and the version
//     hint (TestSyncCostFlatWithHistory).
//   - Cleanup (CleanupHook) expires every snapshot whose table version it
//     deletes before it deletes anything, then deletes the Iceberg files no
//     retained snapshot names and all but the newest metadata files
//     (Collect), so the prefix is bounded by the retention.
package iceberg
