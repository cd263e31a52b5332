// Package plant holds the switches of bugs planted on purpose, so that the
// simulation's meta-test (sim, TestPlantedBugsAreCaught) can prove its
// oracle catches them. Every switch is off unless a test turns it on; the
// engine only reads them, at the one line each bug lives on. It imports
// nothing, and nothing but the engine's seams and that test uses it.
package plant

import "sync/atomic"

// Bug names one planted bug.
type Bug int

// The planted bugs, one per seam.
const (
	// PublishTwice: a publish re-issued after a lost answer that finds its
	// version taken reports a lost race instead of reading the bytes back,
	// so the writer re-prepares and publishes again
	// (manifest/publish.go).
	PublishTwice Bug = iota
	// SkipPreArmCheck: the pre-arm check of table heads against their pins
	// always passes (graph/write.go checkHeads).
	SkipPreArmCheck
	// RollForwardUnconfirmed: recovery rolls an intent forward when any of
	// its tables moved, not only when every one did (recovery/classify.go).
	RollForwardUnconfirmed
	// MergeDropDelete: a merge drops the source's deletes
	// (graph/merge/merge.go apply).
	MergeDropDelete
	numBugs
)

var on [numBugs]atomic.Bool

// On reports whether bug b is planted.
func On(b Bug) bool { return on[b].Load() }

// Set plants (or removes) bug b and returns the function that restores the
// previous setting. Tests only.
func Set(b Bug, v bool) (restore func()) {
	old := on[b].Swap(v)
	return func() { on[b].Store(old) }
}
