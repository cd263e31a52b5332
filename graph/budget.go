package graph

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"time"

	"github.com/omnigraph-go/omnigraph/backend/meter"
)

// Budgets. One query (a read, or the read phase of a mutation) runs under a
// Budget: the rows its operators produce, the bytes it materialises (an
// upper-bound estimate), its wall time and the bytes it reads from storage.
// The executor charges a Meter as it works, inside every operator, so a
// query is stopped where it goes over, not by a timer around it; the
// storage bytes are charged by the handle's store (backend/meter, installed
// by Open and Init). Going over cancels the query's context, so every loop
// and every storage read of it stops, and the query answers a
// *BudgetExceeded: which budget, its limit, how far the query got.

// Budget bounds one query. A zero field is unlimited.
type Budget struct {
	// Rows bounds the rows the query's operators produce, in total: every
	// scan, expansion, anti-join probe, projection and group adds the rows
	// it outputs.
	Rows int64
	// Memory bounds the bytes the query materialises: an upper-bound
	// estimate of the match rows it allocates, its output rows and the
	// table data it holds.
	Memory int64
	// Time bounds the query's wall time (waiting for a Lane included).
	Time time.Duration
	// ReadBytes bounds the bytes the query reads from storage.
	ReadBytes int64
	// Lane, when set, is where a heavy query waits for one of a few shared
	// slots: a query becomes heavy when it has done HeavyWork units of work
	// (rows produced or examined) or when the planner estimates it will.
	// Cheap queries never wait for it.
	Lane Lane
	// HeavyWork is the threshold of Lane (<= 0: DefaultHeavyWork).
	HeavyWork int64
}

// DefaultHeavyWork is the work after which a query needs a Lane slot.
const DefaultHeavyWork = 100_000

// Lane admits a bounded number of heavy queries at a time. Acquire waits
// for a slot until ctx is done (then it returns ctx's error); release gives
// the slot back.
type Lane interface {
	Acquire(ctx context.Context) (release func(), err error)
}

// Resource names a budget; the names are those of the server's
// resource_limit detail.
type Resource string

// The budgets of a query.
const (
	ResourceRows      Resource = "query_rows"
	ResourceMemory    Resource = "query_memory_bytes"
	ResourceTime      Resource = "query_time_ms"
	ResourceReadBytes Resource = "query_read_bytes"
)

// ErrBudgetExceeded is matched (errors.Is) by every *BudgetExceeded.
var ErrBudgetExceeded = errors.New("the query exceeded its budget")

// Usage is what a query had used when it finished or was stopped.
type Usage struct {
	Rows      int64         // rows produced by its operators
	Memory    int64         // bytes materialised (upper-bound estimate)
	ReadBytes int64         // bytes read from storage
	Elapsed   time.Duration // wall time
}

// BudgetExceeded is a query refused by its budget. Nothing it did stays
// behind: it wrote nothing, and no partial result is cached.
type BudgetExceeded struct {
	Resource Resource
	// Limit is the budget, in the resource's unit (rows, bytes, ms).
	Limit int64
	// Reached is how far the query had got in that unit when it was
	// stopped; with Estimated, the planner's estimate.
	Reached int64
	// Estimated: refused before it started, on the planner's estimate.
	Estimated bool
	// Step is the plan step that went over, when known.
	Step string
	// Usage is everything the query had used when it was stopped.
	Usage Usage
}

func (e *BudgetExceeded) Error() string {
	unit := e.Resource.unit()
	where := ""
	if e.Step != "" {
		where = " at step " + e.Step
	}
	if e.Estimated {
		return fmt.Sprintf("query budget: the planner estimates %d %s%s, over the budget of %d %s; the query was not run",
			e.Reached, unit, where, e.Limit, unit)
	}
	return fmt.Sprintf("query budget: the query went over its budget of %d %s%s and was stopped (it had produced %d rows, materialised about %d bytes and read %d bytes from storage in %s)",
		e.Limit, unit, where, e.Usage.Rows, e.Usage.Memory, e.Usage.ReadBytes, e.Usage.Elapsed.Round(time.Millisecond))
}

// Is makes errors.Is(err, ErrBudgetExceeded) hold.
func (e *BudgetExceeded) Is(target error) bool { return target == ErrBudgetExceeded }

func (r Resource) unit() string {
	switch r {
	case ResourceRows:
		return "rows"
	case ResourceTime:
		return "ms"
	}
	return "bytes"
}

// Hint is the part of a refusal that says what to narrow (each surface adds
// how to raise its own limit).
func (r Resource) Hint() string {
	switch r {
	case ResourceRows, ResourceMemory:
		return "narrow the query: pin a key, add a filter or a limit, join disconnected patterns by an edge, or shorten a traversal's hop range"
	case ResourceTime:
		return "narrow the query (a key, a filter, fewer hops), or run it when the server is less busy"
	}
	return "narrow the query to fewer node and edge types, or add filters a search index can serve"
}

// errTimeBudget is the cause of a query context whose time budget passed.
var errTimeBudget = errors.New("the query's time budget passed")

// pollEvery is how much work passes between two looks at the context.
const pollEvery = 4096

// Meter accounts one query's work against its Budget. The executor calls
// Charge and Work from one goroutine; storage reads are charged separately
// (and concurrently) by the store. A nil *Meter charges nothing.
type Meter struct {
	b      Budget
	ctx    context.Context
	cancel context.CancelCauseFunc
	stop   context.CancelFunc
	start  time.Time
	reads  *meter.Reads

	rows, bytes, work  int64
	rowLimit, memLimit int64
	nextPoll           int64
	heavyAt            int64
	heavy              bool
	release            func()
	step               fmt.Stringer
	failed             *BudgetExceeded
}

// StartBudget begins metering a query: the returned context carries the
// storage allowance and the time budget, and is cancelled when any budget
// is exceeded. Call Stop when the query is done.
func StartBudget(ctx context.Context, b Budget) (context.Context, *Meter) {
	m := &Meter{b: b, start: time.Now(), reads: meter.NewReads(b.ReadBytes)}
	m.rowLimit, m.memLimit = limitOr(b.Rows), limitOr(b.Memory)
	m.heavyAt = math.MaxInt64
	if b.Lane != nil {
		m.heavyAt = b.HeavyWork
		if m.heavyAt <= 0 {
			m.heavyAt = DefaultHeavyWork
		}
	}
	m.nextPoll = pollEvery
	ctx, m.cancel = context.WithCancelCause(ctx)
	m.stop = func() {}
	if b.Time > 0 {
		ctx, m.stop = context.WithDeadlineCause(ctx, m.start.Add(b.Time), errTimeBudget)
	}
	m.ctx = context.WithValue(meter.With(ctx, m.reads), meterKey{}, m)
	return m.ctx, m
}

type meterKey struct{}

// MeterOf is the Meter of the query whose context ctx is (nil: none), for
// code below the executor that materialises rows for it (a mutation's
// scans in graph/change). It must be charged from the query's goroutine.
func MeterOf(ctx context.Context) *Meter {
	m, _ := ctx.Value(meterKey{}).(*Meter)
	return m
}

func limitOr(n int64) int64 {
	if n <= 0 {
		return math.MaxInt64
	}
	return n
}

// Stop releases the query's context and its Lane slot.
func (m *Meter) Stop() {
	if m == nil {
		return
	}
	m.stop()
	m.cancel(context.Canceled)
	if m.release != nil {
		m.release()
		m.release = nil
	}
}

// Budget is the budget m enforces.
func (m *Meter) Budget() Budget {
	if m == nil {
		return Budget{}
	}
	return m.b
}

// Usage reports what the query has used so far.
func (m *Meter) Usage() Usage {
	if m == nil {
		return Usage{}
	}
	return Usage{Rows: m.rows, Memory: m.bytes, ReadBytes: m.reads.Bytes(), Elapsed: time.Since(m.start)}
}

// Step names the plan step now running, for the refusal's message (only
// rendered when one is written).
func (m *Meter) Step(s fmt.Stringer) {
	if m != nil {
		m.step = s
	}
}

// Charge records rows produced and bytes materialised. It returns a
// *BudgetExceeded once either budget is passed, and looks at the context
// (cancellation, the time budget) every so much work.
func (m *Meter) Charge(rows, bytes int64) error {
	if m == nil {
		return nil
	}
	m.rows += rows
	m.bytes += bytes
	m.work += rows
	if m.rows > m.rowLimit || m.bytes > m.memLimit || m.work >= m.nextPoll {
		return m.check()
	}
	return nil
}

// Work records work that produces no row (rows examined by a filter, nodes
// visited by a traversal) and polls like Charge.
func (m *Meter) Work(n int64) error {
	if m == nil {
		return nil
	}
	m.work += n
	if m.work >= m.nextPoll {
		return m.check()
	}
	return nil
}

// Poll looks at the context now.
func (m *Meter) Poll() error {
	if m == nil {
		return nil
	}
	return m.check()
}

func (m *Meter) check() error {
	if m.failed != nil {
		return m.failed
	}
	switch {
	case m.rows > m.rowLimit:
		return m.refuse(ResourceRows, m.b.Rows, m.rows)
	case m.bytes > m.memLimit:
		return m.refuse(ResourceMemory, m.b.Memory, m.bytes)
	}
	m.nextPoll = m.work + pollEvery
	if err := m.ctx.Err(); err != nil {
		return m.Err(err)
	}
	if !m.heavy && m.work >= m.heavyAt {
		return m.becomeHeavy()
	}
	if m.release != nil {
		// A heavy query steps aside at each poll (every few thousand rows,
		// well under the scheduler's 10 ms time slice), so a cheap query
		// that became runnable behind it on the same core runs first.
		runtime.Gosched()
	}
	return nil
}

// becomeHeavy waits for a Lane slot (once).
func (m *Meter) becomeHeavy() error {
	m.heavy = true
	release, err := m.b.Lane.Acquire(m.ctx)
	if err != nil {
		return m.Err(err)
	}
	m.release = release
	return nil
}

// Estimate applies the planner's estimate before the query starts: over
// the row or memory budget it is refused (Estimated) at the named step;
// over the heavy threshold it waits for a Lane slot first.
func (m *Meter) Estimate(rows, bytes int64, step fmt.Stringer) error {
	if m == nil {
		return nil
	}
	m.step = step
	switch {
	case rows > m.rowLimit:
		return m.refuseEstimate(ResourceRows, m.b.Rows, rows)
	case bytes > m.memLimit:
		return m.refuseEstimate(ResourceMemory, m.b.Memory, bytes)
	}
	m.step = nil
	if !m.heavy && rows >= m.heavyAt {
		return m.becomeHeavy()
	}
	return nil
}

func (m *Meter) refuseEstimate(r Resource, limit, est int64) error {
	m.failed = &BudgetExceeded{Resource: r, Limit: limit, Reached: est, Estimated: true, Step: m.stepText(), Usage: m.Usage()}
	m.cancel(m.failed)
	return m.failed
}

// Refuse stops the query on a budget the caller measured itself (a step
// that would produce more rows than the budget allows, known before it
// allocates them): reached is the rows or bytes it would have reached.
func (m *Meter) Refuse(r Resource, reached int64) error {
	if m == nil {
		return nil
	}
	limit := m.b.Rows
	if r == ResourceMemory {
		limit = m.b.Memory
	}
	return m.refuse(r, limit, reached)
}

// Fits reports whether rows more rows and bytes more bytes stay within the
// budget (the check a step makes before it allocates them).
func (m *Meter) Fits(rows, bytes int64) (Resource, int64, bool) {
	if m == nil {
		return "", 0, true
	}
	if rows > m.rowLimit-m.rows {
		return ResourceRows, satAdd(m.rows, rows), false
	}
	if bytes > m.memLimit-m.bytes {
		return ResourceMemory, satAdd(m.bytes, bytes), false
	}
	return "", 0, true
}

func satAdd(a, b int64) int64 {
	if b > math.MaxInt64-a {
		return math.MaxInt64
	}
	return a + b
}

func (m *Meter) stepText() string {
	if m.step == nil {
		return ""
	}
	return m.step.String()
}

func (m *Meter) refuse(r Resource, limit, reached int64) error {
	if m.failed == nil {
		m.failed = &BudgetExceeded{Resource: r, Limit: limit, Reached: reached, Step: m.stepText(), Usage: m.Usage()}
		m.cancel(m.failed)
	}
	return m.failed
}

// Err is the one verdict on a query's error: the *BudgetExceeded when a
// budget stopped it (rows, memory, time or storage bytes; also when the
// error is a loop's or a storage read's reaction to the cancellation),
// err itself otherwise (the caller's own cancellation, a storage failure,
// a query error).
func (m *Meter) Err(err error) error {
	if m == nil || err == nil {
		return err
	}
	if m.failed != nil {
		return m.failed
	}
	if errors.Is(err, meter.ErrExceeded) {
		return m.refuse(ResourceReadBytes, m.b.ReadBytes, m.reads.Bytes())
	}
	if m.ctx.Err() != nil {
		switch cause := context.Cause(m.ctx); {
		case errors.Is(cause, errTimeBudget):
			return m.refuse(ResourceTime, m.b.Time.Milliseconds(), time.Since(m.start).Milliseconds())
		case errors.Is(cause, ErrBudgetExceeded):
			var be *BudgetExceeded
			if errors.As(cause, &be) {
				return be
			}
		}
	}
	return err
}
