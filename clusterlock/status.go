package clusterlock

import "time"

// LastAnswered is the send time of the newest answered heartbeat (the
// acquisition's first one before any other): what the server's lease-age
// metric measures from.
func (l *Lease) LastAnswered() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.answered
}

// Duration is the lease's length.
func (l *Lease) Duration() time.Duration { return l.lease }
