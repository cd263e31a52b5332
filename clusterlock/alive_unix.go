//go:build unix

package clusterlock

import (
	"errors"
	"syscall"
)

// processAlive reports whether pid names a live process on this host. A
// process we may not signal (EPERM) exists; only ESRCH proves it is gone.
func processAlive(pid int) bool {
	if pid <= 0 {
		return true // nothing to prove: never call a holder gone on bad data
	}
	err := syscall.Kill(pid, 0)
	return err == nil || !errors.Is(err, syscall.ESRCH)
}
