package backend

import (
	"context"
	"time"
)

// TempSweeper is implemented by stores whose writes stage a temp object
// (name#<digits>) before publishing it, so a process killed mid-write can
// leave one behind. Temp names are never listed, so only the store itself
// can find them.
//
// SweepTemp removes (or with dryRun only counts) the temp residue under
// prefix that was last changed before olderThan; residue of a write still
// in flight is younger than that and stays.
type TempSweeper interface {
	SweepTemp(ctx context.Context, prefix string, olderThan time.Time, dryRun bool) (TempSwept, error)
}

// TempSwept is what one sweep found.
type TempSwept struct {
	Objects int
	Bytes   int64
}

// SweepTemp sweeps s's temp residue under prefix, looking through
// wrappers (an Unwrap() StorageAdapter method) and key prefixes for a
// TempSweeper. ok is false when no store below s stages temp objects (the
// cloud stores write atomically and leave none).
func SweepTemp(ctx context.Context, s StorageAdapter, prefix string, olderThan time.Time, dryRun bool) (res TempSwept, ok bool, err error) {
	for s != nil {
		switch x := s.(type) {
		case TempSweeper:
			res, err = x.SweepTemp(ctx, prefix, olderThan, dryRun)
			return res, true, err
		case *prefixed:
			prefix = x.prefix + prefix
			s = x.inner
		case interface{ Unwrap() StorageAdapter }:
			s = x.Unwrap()
		default:
			return TempSwept{}, false, nil
		}
	}
	return TempSwept{}, false, nil
}
