package clusterlock

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Lease bounds, in whole seconds.
const (
	EnvLeaseSeconds     = "OMNIGRAPH_CLUSTER_LEASE_SECONDS"
	MinLeaseSeconds     = 2
	MaxLeaseSeconds     = 600
	DefaultLeaseSeconds = 30
)

// DefaultLease is the lease when nothing sets one.
const DefaultLease = DefaultLeaseSeconds * time.Second

// ParseLeaseSeconds parses the value of OMNIGRAPH_CLUSTER_LEASE_SECONDS: a
// whole number of seconds from 2 to 600. Empty means DefaultLease.
func ParseLeaseSeconds(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return DefaultLease, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < MinLeaseSeconds || n > MaxLeaseSeconds {
		return 0, fmt.Errorf("%s=%q: must be a whole number of seconds from %d to %d (default %d)",
			EnvLeaseSeconds, v, MinLeaseSeconds, MaxLeaseSeconds, DefaultLeaseSeconds)
	}
	return time.Duration(n) * time.Second, nil
}

// LeaseFromEnv reads OMNIGRAPH_CLUSTER_LEASE_SECONDS through getenv (pass
// os.Getenv).
func LeaseFromEnv(getenv func(string) string) (time.Duration, error) {
	return ParseLeaseSeconds(getenv(EnvLeaseSeconds))
}

func validLease(d time.Duration) error {
	if d%time.Second != 0 || d < MinLeaseSeconds*time.Second || d > MaxLeaseSeconds*time.Second {
		return fmt.Errorf("cluster lock lease %s: must be whole seconds from %d to %d", d, MinLeaseSeconds, MaxLeaseSeconds)
	}
	return nil
}

// Lease timings, all derived from the lease L.
func heartbeatInterval(l time.Duration) time.Duration { return l / 3 }
func lapseAfter(l time.Duration) time.Duration        { return 2 * l / 3 }
func takeoverSilence(l time.Duration) time.Duration   { return 3 * l / 2 }

// LeasedScheme reports whether a server on a store URL with this scheme
// takes a leased lock: S3 and GCS. Local roots and Azure take unleased locks
// (docs/dev/cluster-lock.md says why). This is policy, not a capability
// check; AcquireLeased also requires conditional create and update.
func LeasedScheme(scheme string) bool {
	switch strings.ToLower(scheme) {
	case "s3", "gs":
		return true
	}
	return false
}
