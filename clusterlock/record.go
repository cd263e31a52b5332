package clusterlock

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
)

// Keys of the lock, relative to the graph root. They never appear in a
// message or a log line.
const (
	// LockKey is the lock record.
	LockKey = "__cluster/lock.json"
	// LeasePrefix holds the heartbeat objects of leased locks, one folder per
	// lock id: __cluster/lease/<lock id>/<seq>.json.
	LeasePrefix = "__cluster/lease/"
)

// Record format versions. An unleased record is version 2; a leased one is
// version 3, so a binary that knows only version 2 refuses it as held rather
// than treating it as a lock it could remove. A released record (tombstone)
// is version 2 with Released set.
const (
	FormatUnleased = 2
	FormatLeased   = 3
)

// Owner identifies the process that holds a lock.
type Owner struct {
	Host    string `json:"host"`
	PID     int    `json:"pid"`
	Version string `json:"binary_version"`
	// Instance names the kernel instance and pid namespace the pid belongs
	// to (on Linux, the boot id and the pid namespace), empty where the
	// platform does not tell. A pid is only judged where Host and Instance
	// both match (holderGone).
	Instance string `json:"instance,omitempty"`
}

// Record is the lock record stored at LockKey.
type Record struct {
	FormatVersion int       `json:"format_version"`
	LockID        string    `json:"lock_id"`
	Operation     string    `json:"operation"`
	Owner         Owner     `json:"owner"`
	CreatedAt     time.Time `json:"created_at"`
	// LeaseSeconds is set on leased (version 3) records only.
	LeaseSeconds int `json:"lease_seconds,omitempty"`
	// Released marks a tombstone: the lock LockID was released at
	// ReleasedAt and the lock is free. Stores with conditional update
	// release by replacing the record with a tombstone (see Lock.Release).
	Released   bool       `json:"released,omitempty"`
	ReleasedAt *time.Time `json:"released_at,omitempty"`
}

// Leased reports whether the record is a leased lock.
func (r Record) Leased() bool { return r.LeaseSeconds > 0 }

// Lease is the lease the owner recorded.
func (r Record) Lease() time.Duration { return time.Duration(r.LeaseSeconds) * time.Second }

// errFormat is a lock record this binary does not understand: it is treated
// as held and never overwritten.
type errFormat struct{ version int }

func (e errFormat) Error() string {
	return fmt.Sprintf("cluster lock record has format version %d, which this binary does not know; use the binary that wrote it", e.version)
}

func decodeRecord(b []byte) (Record, error) {
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return Record{}, fmt.Errorf("cluster lock record is not valid JSON: %w", err)
	}
	switch r.FormatVersion {
	case 1, FormatUnleased:
		if r.LeaseSeconds != 0 {
			return Record{}, fmt.Errorf("cluster lock record of format %d carries a lease", r.FormatVersion)
		}
	case FormatLeased:
		if r.LeaseSeconds < MinLeaseSeconds || r.LeaseSeconds > MaxLeaseSeconds {
			return Record{}, fmt.Errorf("leased cluster lock record has lease %d s, outside %d-%d", r.LeaseSeconds, MinLeaseSeconds, MaxLeaseSeconds)
		}
	default:
		return r, errFormat{r.FormatVersion}
	}
	if r.LockID == "" {
		return Record{}, fmt.Errorf("cluster lock record has no lock id")
	}
	return r, nil
}

func encodeRecord(r Record) []byte {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		panic(err) // a struct of strings, ints and times always encodes
	}
	return append(b, '\n')
}

func tombstone(id string, at time.Time) Record {
	at = at.UTC()
	return Record{FormatVersion: FormatUnleased, LockID: id, Released: true, ReleasedAt: &at, CreatedAt: at}
}

// NewLockID returns a fresh lock id (a ULID).
func NewLockID() string { return ulid.Make().String() }

// ThisOwner describes the calling process, with binary version v.
func ThisOwner(v string) Owner {
	host, err := os.Hostname()
	if err != nil {
		host = ""
	}
	return Owner{Host: host, PID: os.Getpid(), Version: v, Instance: processInstance()}
}

func (o Owner) String() string {
	var b strings.Builder
	if o.Host != "" {
		fmt.Fprintf(&b, "host %s ", o.Host)
	}
	fmt.Fprintf(&b, "pid %d", o.PID)
	if o.Version != "" {
		fmt.Fprintf(&b, ", omnigraph %s", o.Version)
	}
	return b.String()
}

func heartbeatPrefix(lockID string) string { return LeasePrefix + lockID + "/" }

func heartbeatKey(lockID string, seq uint64) string {
	return fmt.Sprintf("%s%012d.json", heartbeatPrefix(lockID), seq)
}

type heartbeat struct {
	LockID string    `json:"lock_id"`
	Seq    uint64    `json:"seq"`
	SentAt time.Time `json:"sent_at"`
}
