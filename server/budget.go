package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"time"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/graph"
)

// Resource governance of reads. Every query (the query route and the
// graph_query tool) and every mutation's read phase runs under a budget
// (graph.Budget: rows, memory, time, storage bytes) resolved by budgetFor:
// the server's defaults (Limits.Query), then the graph's overrides
// (Graph.Budget), then the actor's (Config.Actors). Reads that can be large
// (query, export, commit changes) take a read slot of their actor and of
// the server (429 past either, like writes, which keep their own slots). A
// query that turns heavy (graph.Budget.HeavyWork, or so estimated) waits
// for one of a few heavy slots (Limits.HeavyReads, fewer than the cores),
// so cheap reads always find a core however many heavy ones run.

// Default query budgets: what protects a 24 GB machine serving several
// graphs. At most HeavyReads queries hold their full memory budget at once
// (a query materialises little before it turns heavy), so the worst case
// is about HeavyReads x DefaultQueryMemory plus each graph's read caches.
const (
	DefaultQueryRows      = 10_000_000
	DefaultQueryMemory    = 1 << 30
	DefaultQueryTime      = 30 * time.Second
	DefaultQueryReadBytes = 4 << 30
	DefaultReadsPerActor  = 32
	DefaultReads          = 64
	// DefaultWriteTimeout bounds sending one non-streaming answer.
	DefaultWriteTimeout = 30 * time.Second
	// DefaultStreamIdle cuts a stream (an export answer, a load body) that
	// makes no progress for this long.
	DefaultStreamIdle = time.Minute
	// DefaultRefusalDelay is the least time to a budget refusal.
	DefaultRefusalDelay = 250 * time.Millisecond
)

// DefaultHeavyReads is the number of heavy queries that run at once:
// half the cores, at least one.
func DefaultHeavyReads() int { return max(1, runtime.GOMAXPROCS(0)/2) }

// ActorLimits override the server's for one actor (zero fields inherit).
type ActorLimits struct {
	// Budget overrides the query budget (fields > 0 win).
	Budget graph.Budget
	// Reads bounds the actor's in-flight reads.
	Reads int
}

// withDefaults fills the query budget's unset fields.
func queryDefaults(b graph.Budget) graph.Budget {
	if b.Rows <= 0 {
		b.Rows = DefaultQueryRows
	}
	if b.Memory <= 0 {
		b.Memory = DefaultQueryMemory
	}
	if b.Time <= 0 {
		b.Time = DefaultQueryTime
	}
	if b.ReadBytes <= 0 {
		b.ReadBytes = DefaultQueryReadBytes
	}
	return b
}

// overlay returns b with every field of o that is set (> 0) in its place.
func overlay(b, o graph.Budget) graph.Budget {
	if o.Rows > 0 {
		b.Rows = o.Rows
	}
	if o.Memory > 0 {
		b.Memory = o.Memory
	}
	if o.Time > 0 {
		b.Time = o.Time
	}
	if o.ReadBytes > 0 {
		b.ReadBytes = o.ReadBytes
	}
	return b
}

// budgetFor is the one verdict on a query's budget: the server's, then
// the graph's, then the actor's overrides. Server budgets are never
// unlimited: a limit can be raised, not switched off.
func (s *Server) budgetFor(graphID, actor string) graph.Budget {
	b := overlay(s.cfg.Limits.Query, s.graphBudget[graphID])
	if a, ok := s.cfg.Actors[actorOrAnon(actor)]; ok {
		b = overlay(b, a.Budget)
	}
	return b
}

// readBudget is the budget of a read: budgetFor with the heavy lane.
func (r *request) readBudget() graph.Budget {
	b := r.s.budgetFor(r.graphID, r.actor)
	b.Lane, b.HeavyWork = r.s.heavy, r.s.cfg.Limits.HeavyWork
	return b
}

// lane is the heavy-query lane: a counting semaphore. Waiting is bounded
// by the query's own time budget and ends with its client.
type lane struct{ slots chan struct{} }

func newLane(n int) *lane { return &lane{slots: make(chan struct{}, n)} }

// Acquire implements graph.Lane.
func (l *lane) Acquire(ctx context.Context) (func(), error) {
	select {
	case l.slots <- struct{}{}:
		return func() { <-l.slots }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// budgetFlags name the serve flag that raises each budget.
var budgetFlags = map[graph.Resource]string{
	graph.ResourceRows:      "--max-query-rows",
	graph.ResourceMemory:    "--max-query-memory",
	graph.ResourceTime:      "--query-timeout",
	graph.ResourceReadBytes: "--max-query-read-bytes",
}

// budgetFailure is the answer to a query stopped by its budget: 413 with
// resource_limit {resource, limit, actual, estimated}. The message says
// which budget, how far the query got, what to narrow and how the
// operator raises it.
func budgetFailure(be *graph.BudgetExceeded) *Failure {
	msg := fmt.Sprintf("%s; %s, or ask the operator to raise it (serve %s, or the graph's or actor's limits in --config)",
		be.Error(), be.Resource.Hint(), budgetFlags[be.Resource])
	return &Failure{Status: http.StatusRequestEntityTooLarge, Body: api.ErrorOutput{
		Error:         msg,
		Code:          api.CodeBadRequest,
		ResourceLimit: &api.ResourceLimit{Resource: string(be.Resource), Limit: be.Limit, Actual: be.Reached, Estimated: be.Estimated},
	}}
}

// slowRefusal holds a budget refusal until RefusalDelay has passed since
// the query started (or its client has gone), and returns err.
func (r *request) slowRefusal(start time.Time, err error) error {
	if _, ok := errBudget(err); !ok {
		return err
	}
	if d := r.s.cfg.Limits.RefusalDelay - time.Since(start); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
		}
	}
	return err
}

// errBudget finds a budget refusal in err.
func errBudget(err error) (*graph.BudgetExceeded, bool) {
	var be *graph.BudgetExceeded
	ok := errors.As(err, &be)
	return be, ok
}
