package server

import (
	"net/http"
	"sync"
	"time"

	"github.com/omnigraph-go/omnigraph/api"
)

// Limits bound what the server admits.
type Limits struct {
	// WritesPerActor bounds one actor's in-flight writes (default 16).
	WritesPerActor int
	// WritesPerGraph bounds a graph's in-flight writes (default 64).
	WritesPerGraph int
	// RetryAfter is the Retry-After of a 429, in seconds (default 1).
	RetryAfter int
	// BodyBytes bounds a JSON request body (default 1 MiB).
	BodyBytes int64
	// LoadBytes bounds a load/ndjson body (default 32 MiB).
	LoadBytes int64
	// BodyTimeout bounds reading a JSON body (default 30 s); LoadTimeout a
	// load/ndjson body (default 10 min). A slow client is cut off, not held.
	BodyTimeout, LoadTimeout time.Duration
}

// Default limits.
const (
	DefaultWritesPerActor = 16
	DefaultWritesPerGraph = 64
	DefaultRetryAfter     = 1
	DefaultBodyBytes      = 1 << 20
	DefaultLoadBytes      = 32 << 20
)

func (l Limits) withDefaults() Limits {
	if l.WritesPerActor <= 0 {
		l.WritesPerActor = DefaultWritesPerActor
	}
	if l.WritesPerGraph <= 0 {
		l.WritesPerGraph = DefaultWritesPerGraph
	}
	if l.RetryAfter <= 0 {
		l.RetryAfter = DefaultRetryAfter
	}
	if l.BodyBytes <= 0 {
		l.BodyBytes = DefaultBodyBytes
	}
	if l.LoadBytes <= 0 {
		l.LoadBytes = DefaultLoadBytes
	}
	if l.BodyTimeout <= 0 {
		l.BodyTimeout = 30 * time.Second
	}
	if l.LoadTimeout <= 0 {
		l.LoadTimeout = 10 * time.Minute
	}
	return l
}

// admission counts in-flight writes per actor and per graph. Admission
// never waits: beyond a bound the write is refused with 429, before any
// engine work. Closing it refuses every later write and read (the server
// is stopping).
type admission struct {
	mu       sync.Mutex
	limits   Limits
	perActor map[string]int
	perGraph map[string]int
	closed   bool
}

func newAdmission(l Limits) *admission {
	return &admission{limits: l, perActor: map[string]int{}, perGraph: map[string]int{}}
}

// admit takes a write slot for actor on graph; release gives it back.
func (a *admission) admit(actor, graphID string) (release func(), f *Failure) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, stopping()
	}
	if a.perActor[actor] >= a.limits.WritesPerActor {
		return nil, a.busy("actor %q has %d writes in flight, the most this server admits; retry after the Retry-After seconds", actor, a.limits.WritesPerActor)
	}
	if a.perGraph[graphID] >= a.limits.WritesPerGraph {
		return nil, a.busy("graph %q has %d writes in flight, the most this server admits; retry after the Retry-After seconds", graphID, a.limits.WritesPerGraph)
	}
	a.perActor[actor]++
	a.perGraph[graphID]++
	var once sync.Once
	return func() {
		once.Do(func() {
			a.mu.Lock()
			defer a.mu.Unlock()
			if a.perActor[actor]--; a.perActor[actor] == 0 {
				delete(a.perActor, actor)
			}
			if a.perGraph[graphID]--; a.perGraph[graphID] == 0 {
				delete(a.perGraph, graphID)
			}
		})
	}, nil
}

func (a *admission) busy(format string, args ...any) *Failure {
	f := fail(http.StatusTooManyRequests, api.CodeTooManyRequests, format, args...)
	f.RetryAfter = a.limits.RetryAfter
	return f
}

func (a *admission) close() {
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
}

func (a *admission) isClosed() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.closed
}

func stopping() *Failure {
	return &Failure{Status: http.StatusServiceUnavailable, Body: api.ErrorOutput{
		Error: "the server is stopping and admits no new requests; retry against another server or after it restarts",
		Class: "server_stopping",
	}}
}
