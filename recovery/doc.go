// Package recovery holds the write-recovery protocol of a graph: the sidecar
// intents a writer makes durable before its first table effect
// (__recovery/<operation id>.json), the sweep that resolves the intents an
// interrupted writer left behind, and the recovery audit log
// (_graph_commit_recoveries/).
//
// A writer runs four phases (see docs/dev/recovery.md):
//
//	A  Arm:     one PutIfAbsent of the sidecar naming every planned table
//	            effect with its exact transaction identity, and the exact
//	            manifest version the write will publish;
//	B  effects: the table commits;
//	C  publish: the manifest version (the visibility fence);
//	D  Disarm:  one Delete of the sidecar (a failure is only a warning).
//
// The sweep compares each sidecar with the live table HEADs and the current
// manifest and either rolls the write forward (publishing the exact planned
// version, original commit id and actor), rolls it back (restoring each
// moved table to its pin and publishing that with actor
// omnigraph:recovery), or fails closed with the sidecar kept. Every
// completed recovery appends exactly one audit record.
//
// The package does not import package graph (graph imports it): it works
// through backend.StorageAdapter, package table and the manifest types, and
// takes what it needs of the engine (manifest access, the process-local
// gates) as parameters.
package recovery
