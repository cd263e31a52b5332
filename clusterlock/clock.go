package clusterlock

import (
	"context"
	"time"
)

// Clock is the time source of every timer in this package. Tests pass a fake
// one; nil means the system clock.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// Sleep waits d, or until ctx ends, in which case it returns ctx.Err().
	// A d of zero or less returns at once (still nil unless ctx has ended).
	Sleep(ctx context.Context, d time.Duration) error
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now implements Clock.
func (SystemClock) Now() time.Time { return time.Now() }

// Sleep implements Clock.
func (SystemClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
