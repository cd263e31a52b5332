// Package manifest holds the __manifest control dataset: the versioned record
// of which version of every table makes up each graph commit, on each graph
// branch. It imports only package backend, so both the graph engine and the
// recovery sweep can use it.
//
// # Layout
//
// Every version of a branch is one immutable JSON object (an Entry):
//
//	__manifest/branches/<name>/.v/<inv incarnation>/<inv version>
//
// <name> is the branch name with its slashes kept as path segments
// ("review/2026-07" is branches/review/2026-07/.v/...). The ".v" marker sorts
// before every branch-name component (components start with a letter, digit
// or underscore), so one List of branches/<name>/ sees the branch's own
// versions first and its path descendants after them, and never a sibling.
//
// <inv n> is MaxUint64-n as 20 zero-padded digits, so ascending key order is
// newest first: the first key of a one-key List is the head of the newest
// incarnation. An incarnation is one life of a branch name: deleting a branch
// ends it, creating the name again starts incarnation+1.
//
// Version 1 of an incarnation is its genesis: the initial commit of main, or
// the fork point of a named branch. Later versions are commits. A deletion is
// a zero-byte object at the next version key (a tombstone); List reports sizes,
// so a reader learns that a branch is deleted without a GET.
//
// # The compare-and-swap
//
// Publishing version v+1 of incarnation g is exactly one PutIfAbsent of
// key(g, v+1). It fails if anyone else published v+1 first (the exact-head
// check), and it fails if the incarnation was deleted at or before v+1,
// because the tombstone occupies a key a stale writer would need. A stale
// writer of a deleted-and-recreated branch still names the old incarnation in
// its key, so it can never land in the new one (the branch-identity check).
// Creating a branch is one PutIfAbsent of the genesis key of the next
// incarnation: two racing creators of one name collide on that key.
package manifest
