package server

import (
	"net/http"
	"sync"
	"time"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/graph"
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
	// BodyTimeout bounds reading a JSON body (default 30 s). A slow client
	// is cut off, not held.
	BodyTimeout time.Duration
	// StreamIdle bounds a stream by its progress, not its total time: a
	// streamed body (load, load/ndjson, MCP) that sends no byte, or an
	// export answer that takes no byte, for this long is cut (default
	// DefaultStreamIdle).
	StreamIdle time.Duration
	// WriteTimeout bounds sending a non-streaming answer, from its first
	// byte (default DefaultWriteTimeout).
	WriteTimeout time.Duration
	// AnswerBytes caps a JSON answer (a route's or an MCP tool's; default
	// DefaultAnswerBytes): a larger one is refused with 413
	// resource_limit answer_bytes. Streamed answers are bounded by their
	// reader's progress instead.
	AnswerBytes int64

	// ReadsPerActor bounds one actor's in-flight reads (query, export,
	// commit changes; default DefaultReadsPerActor); Reads the server's
	// (default DefaultReads). More get 429.
	ReadsPerActor, Reads int
	// HeavyReads is how many heavy queries run at once (default
	// DefaultHeavyReads: half the cores); the others wait, within their
	// time budget. HeavyWork is the work (rows produced or examined) after
	// which a query is heavy (default graph.DefaultHeavyWork).
	HeavyReads int
	HeavyWork  int64
	// RefusalDelay: a query refused by its budget is answered no sooner
	// than this after it started (holding its read slot, using no CPU), so
	// a client that resends refused queries without pause cannot flood
	// the server with cheap refusals (default DefaultRefusalDelay).
	RefusalDelay time.Duration
	// Query is the budget of each query and of each mutation's read phase;
	// unset fields take the defaults (DefaultQueryRows...).
	Query graph.Budget
}

// Default limits.
const (
	DefaultWritesPerActor = 16
	DefaultWritesPerGraph = 64
	DefaultRetryAfter     = 1
	DefaultBodyBytes      = 1 << 20
	DefaultLoadBytes      = 32 << 20
	DefaultAnswerBytes    = 64 << 20
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
	if l.StreamIdle <= 0 {
		l.StreamIdle = DefaultStreamIdle
	}
	if l.WriteTimeout <= 0 {
		l.WriteTimeout = DefaultWriteTimeout
	}
	if l.AnswerBytes <= 0 {
		l.AnswerBytes = DefaultAnswerBytes
	}
	if l.ReadsPerActor <= 0 {
		l.ReadsPerActor = DefaultReadsPerActor
	}
	if l.Reads <= 0 {
		l.Reads = DefaultReads
	}
	if l.HeavyReads <= 0 {
		l.HeavyReads = DefaultHeavyReads()
	}
	if l.RefusalDelay <= 0 {
		l.RefusalDelay = DefaultRefusalDelay
	}
	l.Query = queryDefaults(l.Query)
	return l
}

// admission counts in-flight writes per actor and per graph, and in-flight
// reads per actor and in all. Admission never waits: beyond a bound the
// request is refused with 429, before any engine work. Closing it refuses
// every later write and read (the server is stopping).
type admission struct {
	mu       sync.Mutex
	limits   Limits
	perActor map[string]int
	perGraph map[string]int
	// readsOf counts each actor's reads, reads all of them; actorReads
	// holds per-actor bounds that differ from the server's.
	readsOf    map[string]int
	reads      int
	actorReads map[string]int
	closed     bool
	// reason is why admission closed (the first cause; StopReason*).
	reason string
}

func newAdmission(l Limits, actors map[string]ActorLimits) *admission {
	a := &admission{limits: l, perActor: map[string]int{}, perGraph: map[string]int{}, readsOf: map[string]int{}, actorReads: map[string]int{}}
	for actor, al := range actors {
		if al.Reads > 0 {
			a.actorReads[actor] = al.Reads
		}
	}
	return a
}

// admitRead takes a read slot of actor and of the server; release gives it
// back.
func (a *admission) admitRead(actor string) (release func(), f *Failure) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, stopping(a.reason)
	}
	bound := a.limits.ReadsPerActor
	if n, ok := a.actorReads[actor]; ok {
		bound = n
	}
	if a.readsOf[actor] >= bound {
		return nil, a.busy("actor %q has %d reads in flight, the most this server admits; retry after the Retry-After seconds", actor, bound)
	}
	if a.reads >= a.limits.Reads {
		return nil, a.busy("this server has %d reads in flight, the most it admits; retry after the Retry-After seconds", a.limits.Reads)
	}
	a.readsOf[actor]++
	a.reads++
	var once sync.Once
	return func() {
		once.Do(func() {
			a.mu.Lock()
			defer a.mu.Unlock()
			if a.readsOf[actor]--; a.readsOf[actor] == 0 {
				delete(a.readsOf, actor)
			}
			a.reads--
		})
	}, nil
}

// inFlightReads is the number of reads holding a slot (tests).
func (a *admission) inFlightReads() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.reads
}

// admit takes a write slot for actor on graph; release gives it back.
func (a *admission) admit(actor, graphID string) (release func(), f *Failure) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, stopping(a.reason)
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

// close closes admission for reason; the first reason stays.
func (a *admission) close(reason string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.closed {
		a.closed, a.reason = true, reason
	}
}

// closedFor reports whether admission is closed, and why.
func (a *admission) closedFor() (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.reason, a.closed
}

func (a *admission) isClosed() bool {
	_, closed := a.closedFor()
	return closed
}

// Why admission closed: the stop causes (StopCause, the handler's panic,
// the caller's lease loss) and an ordered shutdown.
const (
	StopShutdown  = "shutdown"
	StopPanic     = "panic"
	StopLeaseLost = "lease_lost"
)

// stopReasonText says why the server stops, for the 503 message.
func stopReasonText(reason string) string {
	switch reason {
	case StopShutdown:
		return "it was told to shut down and is finishing the requests in flight"
	case StopPanic:
		return "a request failed inside the server"
	case StopRecoveryRequired:
		return "a write needs a recovery that only a restart performs"
	case StopOpaqueFailure:
		return "a write failed with no evidence of what it did"
	case StopLeaseLost:
		return "it lost the graph's writer lock"
	case "":
		return "no reason was given"
	}
	return reason
}

// stopping is the answer of every request once admission closed, /healthz
// included: 503 server_stopping with the reason (stop_reason and in
// words).
func stopping(reason string) *Failure {
	return &Failure{Status: http.StatusServiceUnavailable, Body: api.ErrorOutput{
		Error:      "the server is stopping (" + stopReasonText(reason) + ") and admits no new requests; retry against another server or after it restarts",
		Class:      "server_stopping",
		StopReason: reason,
	}}
}
