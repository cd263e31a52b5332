package backend

import (
	"context"
	"time"
)

// TempGrace is the youngest temp residue a sweep may remove, whatever grace
// its caller asks for. A temp object lives from the moment a write stages
// it until the write publishes it (one object's write and fsync), and a
// sweep that removed one in flight would fail that write: another process's
// lock acquisition (its lock record's temp), a server's commit. The sweep
// cannot see which writes are in flight in other processes, so only age
// tells residue from a live write; half an hour is far beyond any single
// write and still reclaims a crash's residue at the next cleanup.
const TempGrace = 30 * time.Minute

// TempSweeper is implemented by stores whose writes stage a temp object
// (name#<digits>) before publishing it, so a process killed mid-write can
// leave one behind, and by the wrappers that forward a sweep to such a
// store. Temp names are never listed, so only the store itself can find
// them.
//
// SweepTemp removes (or with dryRun only counts) the temp residue under
// prefix that was last changed before olderThan. ok is false when no store
// below stages temp objects (the cloud stores write atomically and leave
// none). A sweep deletes, so it is a write: a wrapper implements SweepTemp
// by applying its own rule for a write (a lease guard refuses once the lease
// is lost, a poison set refuses a prefix holding a poisoned key, a fault
// injector counts and fails it like any write) and then forwards it with
// SweepTempBelow. A wrapper without the method hides the store below: its
// residue stays (space, never correctness).
type TempSweeper interface {
	SweepTemp(ctx context.Context, prefix string, olderThan time.Time, dryRun bool) (res TempSwept, ok bool, err error)
}

// TempSwept is what one sweep found.
type TempSwept struct {
	Objects int
	Bytes   int64
}

// SweepTemp sweeps s's temp residue under prefix that is older than grace
// at now, and never younger than TempGrace (a grace of 0 means TempGrace).
// It goes through every wrapper of s (each applies its rule for a write;
// see TempSweeper). ok is false when no store below s stages temp objects.
func SweepTemp(ctx context.Context, s StorageAdapter, prefix string, now time.Time, grace time.Duration, dryRun bool) (res TempSwept, ok bool, err error) {
	return SweepTempBelow(ctx, s, prefix, now.Add(-max(grace, TempGrace)), dryRun)
}

// SweepTempBelow is how a wrapper forwards a sweep to the store it wraps,
// after its own checks: s's SweepTemp, or ok=false when s does not sweep.
func SweepTempBelow(ctx context.Context, s StorageAdapter, prefix string, olderThan time.Time, dryRun bool) (res TempSwept, ok bool, err error) {
	if x, can := s.(TempSweeper); can {
		return x.SweepTemp(ctx, prefix, olderThan, dryRun)
	}
	return TempSwept{}, false, nil
}

var _ TempSweeper = (*prefixed)(nil)

// SweepTemp implements TempSweeper: the prefix is added to the sweep's.
func (p *prefixed) SweepTemp(ctx context.Context, prefix string, olderThan time.Time, dryRun bool) (TempSwept, bool, error) {
	return SweepTempBelow(ctx, p.inner, p.prefix+prefix, olderThan, dryRun)
}
