package server

import (
	"context"
	"log/slog"
	"runtime/debug"
	"sort"
	"sync"
	"time"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/optimize"
)

// compactor runs the automatic compaction of one served graph
// (optimize.Auto) after its writes, on one background goroutine, so a
// write's response never waits for it. Requests coalesce per branch: a
// burst of writes costs one check. Auto yields to any concurrent write it
// races (one attempt), and its failures are logged, never reported to a
// client: the writes it follows were already acknowledged. A failure that
// is a stop cause of a client's write (a panic, RecoveryRequired, an
// opaque failure: StopCause) stops the server the same way.
type compactor struct {
	g         *graph.Graph
	graphID   string
	threshold int
	log       *slog.Logger
	stop      func(cause string)

	mu      sync.Mutex
	pending map[string]bool
	wake    chan struct{}
	ctx     context.Context
	cancel  context.CancelFunc
	done    chan struct{}
	running bool
	runs    int // finished checks, for tests
	last    compactionRun
	// observed gets each finished run's outcome and duration (the
	// metrics); nil: none.
	observed func(outcome string, d time.Duration)
}

// observe makes f get each finished run's outcome and duration.
func (c *compactor) observe(f func(outcome string, d time.Duration)) {
	c.mu.Lock()
	c.observed = f
	c.mu.Unlock()
}

// compactionRun is the last finished check, as the status route shows it.
type compactionRun struct {
	branch  string
	at      time.Time
	outcome string // "compacted", "nothing_to_do", "yielded", "failed", "cancelled"
}

func newCompactor(g *graph.Graph, graphID string, threshold int, log *slog.Logger, stop func(cause string)) *compactor {
	ctx, cancel := context.WithCancel(context.Background())
	c := &compactor{g: g, graphID: graphID, threshold: threshold, log: log, stop: stop, pending: map[string]bool{},
		wake: make(chan struct{}, 1), ctx: ctx, cancel: cancel, done: make(chan struct{})}
	go c.loop()
	return c
}

// after asks for a check of branch once the current one finishes.
func (c *compactor) after(branch string) {
	c.mu.Lock()
	c.pending[branch] = true
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// close stops the compactor, cancelling a run in flight (it is a write
// through the pipeline: a cancelled one recovers like any other), and
// waits for the goroutine.
func (c *compactor) close() {
	c.cancel()
	<-c.done
}

// idle reports the finished checks and whether none is pending or
// running (tests).
func (c *compactor) idle() (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runs, len(c.pending) == 0 && !c.running
}

func (c *compactor) loop() {
	defer close(c.done)
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-c.wake:
		}
		// Take the requests before running: a write that lands during a
		// run asks again, and the wake it leaves brings the loop back.
		c.mu.Lock()
		branches := make([]string, 0, len(c.pending))
		for b := range c.pending {
			branches = append(branches, b)
		}
		clear(c.pending)
		c.running = true
		c.mu.Unlock()
		sort.Strings(branches)
		for _, b := range branches {
			c.run(b)
			c.mu.Lock()
			c.runs++
			c.mu.Unlock()
		}
		c.mu.Lock()
		c.running = false
		c.mu.Unlock()
	}
}

func (c *compactor) run(branch string) {
	outcome := "failed"
	start := time.Now()
	defer func() {
		c.mu.Lock()
		c.last = compactionRun{branch: branch, at: time.Now(), outcome: outcome}
		observed := c.observed
		c.mu.Unlock()
		if observed != nil {
			observed(outcome, time.Since(start))
		}
	}()
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("automatic optimize panicked", "graph", c.graphID, "branch", branch, "stack", string(debug.Stack()))
			c.cancel()
			c.stop("panic")
		}
	}()
	res, err := optimize.Auto(c.ctx, c.g, optimize.AutoOptions{Branch: branch, Threshold: c.threshold})
	switch {
	case err != nil && c.ctx.Err() != nil:
		outcome = "cancelled"
	case err != nil && graph.IsRetryable(err):
		outcome = "yielded"
		c.log.Debug("automatic optimize yielded to a concurrent write", "graph", c.graphID, "branch", branch)
	case err != nil:
		outcome = "failed"
		f := MapError(err, c.graphID)
		c.log.Warn("automatic optimize failed; the writes it followed succeeded", "graph", c.graphID, "branch", branch, "failure_class", f.Body.Class)
		if cause := StopCause(err, f); cause != "" {
			c.cancel()
			c.stop(cause)
		}
	case res != nil && res.Commit != nil:
		outcome = "compacted"
		c.log.Info("automatic optimize", "graph", c.graphID, "branch", branch, "commit", res.Commit.ID, "tables", len(res.Tables))
	default:
		outcome = "nothing_to_do"
	}
}

// state is what the compactor is doing and did last (the status route).
func (c *compactor) state() (running bool, pending int, runs int, last compactionRun) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.running, len(c.pending), c.runs, c.last
}
