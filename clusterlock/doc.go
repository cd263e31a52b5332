// Package clusterlock is the writer fence of a graph root: one lock record at
// __cluster/lock.json that a writing process creates before it writes and
// removes when it is done.
//
// Two kinds of lock share the record:
//
//   - An unleased lock (Acquire) is held by a CLI write or maintenance
//     command for its duration. It never expires: a holder that dies leaves
//     it, and only the exact-id Unlock removes it.
//   - A leased lock (AcquireLeased) is held by a server for its lifetime on a
//     store with conditional update (S3, GCS). The owner proves it is alive
//     with heartbeat objects under __cluster/lease/; a starting server takes
//     over a lock whose heartbeats have been silent for a lease and a half.
//     The owner stops writing (Lease.Lost, Lease.Guard) when no heartbeat is
//     answered for two thirds of a lease or a successor claims the lock.
//
// The package reaches storage only through backend.StorageAdapter. Every
// timer runs on a Clock, so tests drive it with a fake one. Errors are
// classified with errors.Is (ErrLockHeld, ErrWrongID, ErrNotHeld,
// ErrLeaseLost, ErrPoisoned) and their messages never name a storage key.
// The protocol and its safety argument are in docs/dev/cluster-lock.md.
package clusterlock
