package graph

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// The process-local write queue (seed 000: "process-local branch/table
// queues reduce retries but are not distributed authority").
//
// A data write (mutation, load, merge into its target) waits its turn on
// its branch's queue before it captures its authority token and holds its
// place until its commit is answered. So two writes from one process never
// prepare against the same head: the second prepares against what the
// first published, and neither invalidates the other. A strict update or
// delete then conflicts only with a write it does not queue behind (another
// process, or a writer outside the queue: schema apply, branch delete), and
// an insert re-prepares only for those.
//
// The queue is FIFO, per root and branch, and shared by every handle of one
// root in one process (the root object, as the gates are). It is above the
// gates in the lock order: a queued write takes the schema, branch and
// table gates inside its turn, and nothing that holds a gate waits on the
// queue. It is not authority: the manifest compare-and-swap still decides.

// ErrWithdrawn matches a write that gave up waiting for its turn in its
// branch's write queue (its context, or its wait context, ended): it had
// prepared nothing and wrote nothing. The error wraps the context's.
var ErrWithdrawn = errors.New("write withdrawn while queued")

// writeQueues holds one FIFO per branch with a write in its turn or waiting.
// A branch's entry is removed when its last writer leaves, so the map's
// size follows the writes in flight.
type writeQueues struct {
	mu       sync.Mutex
	branches map[string]*branchQueue
}

// branchQueue is one branch's queue: whether a write holds its turn, and
// the waiters in arrival order (each is granted by closing its channel).
type branchQueue struct {
	busy    bool
	waiting []chan struct{}
}

func newWriteQueues() *writeQueues {
	return &writeQueues{branches: map[string]*branchQueue{}}
}

// enter waits for the turn of branch: at once when the branch is idle,
// otherwise after every write that arrived before. It gives up when ctx or
// wait ends (holding nothing). leave must be called exactly once after a
// nil error.
func (q *writeQueues) enter(ctx, wait context.Context, branch string) error {
	q.mu.Lock()
	b := q.branches[branch]
	if b == nil {
		b = &branchQueue{}
		q.branches[branch] = b
	}
	if !b.busy {
		b.busy = true
		q.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	b.waiting = append(b.waiting, ch)
	q.mu.Unlock()

	var done <-chan struct{}
	if wait != nil {
		done = wait.Done()
	}
	var err error
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-done:
		err = wait.Err()
	}
	q.mu.Lock()
	for i, c := range b.waiting {
		if c == ch {
			b.waiting = append(b.waiting[:i], b.waiting[i+1:]...)
			q.mu.Unlock()
			return err
		}
	}
	q.mu.Unlock()
	// Granted while giving up: pass the turn on.
	q.leave(branch)
	return err
}

// leave ends the current turn of branch and grants the next waiter.
func (q *writeQueues) leave(branch string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	b := q.branches[branch]
	if b == nil {
		return
	}
	if len(b.waiting) > 0 {
		next := b.waiting[0]
		b.waiting = b.waiting[1:]
		close(next) // busy stays set: the turn passes
		return
	}
	delete(q.branches, branch)
}

// depth is the number of writes of branch in their turn or waiting.
func (q *writeQueues) depth(branch string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	b := q.branches[branch]
	if b == nil {
		return 0
	}
	n := len(b.waiting)
	if b.busy {
		n++
	}
	return n
}

// queueTurn marks a context that holds the turn of one branch of one root,
// so a write that runs inside another's turn (a nested call on the same
// branch) does not wait for itself.
type queueTurn struct {
	q      *writeQueues
	branch string
	parent *queueTurn
}

type queueTurnKey struct{}

type queueWaitKey struct{}

// WithQueueWait returns ctx carrying wait, a context that bounds only the
// time a write spends waiting for its turn in the branch queue (see
// EnterWriteQueue). A server passes its client's request context here
// while running the write itself on a context the client cannot cancel:
// a client that goes away while its write waits withdraws it (nothing was
// prepared), one that goes away after the turn came does not cut the write
// between its effects.
func WithQueueWait(ctx, wait context.Context) context.Context {
	return context.WithValue(ctx, queueWaitKey{}, wait)
}

// EnterWriteQueue waits for branch's turn in this process's write queue
// ("" is the handle's branch) and returns a context that holds it, and the
// function that ends the turn (call it once, after the write's commit was
// answered). A ctx that already holds the turn of branch returns at once.
// Waiting gives up when ctx ends, or the wait context of WithQueueWait.
//
// Mutations, loads and merges enter it themselves; a caller enters it to
// keep several writes in one turn, or to stop waiting on its own terms.
func (g *Graph) EnterWriteQueue(ctx context.Context, branch string) (context.Context, func(), error) {
	if branch == "" {
		branch = g.current
	}
	for t, _ := ctx.Value(queueTurnKey{}).(*queueTurn); t != nil; t = t.parent {
		if t.q == g.queues && t.branch == branch {
			return ctx, func() {}, nil
		}
	}
	g.proc.hookQueue(ctx, branch)
	wait, _ := ctx.Value(queueWaitKey{}).(context.Context)
	if err := g.queues.enter(ctx, wait, branch); err != nil {
		return nil, nil, fmt.Errorf("%w: the write waited for its turn on branch %q and was withdrawn (nothing was written): %w", ErrWithdrawn, branch, err)
	}
	parent, _ := ctx.Value(queueTurnKey{}).(*queueTurn)
	var once sync.Once
	return context.WithValue(ctx, queueTurnKey{}, &queueTurn{q: g.queues, branch: branch, parent: parent}),
		func() { once.Do(func() { g.queues.leave(branch) }) }, nil
}

// QueuedWrites is the number of this process's writes of branch that hold
// or wait for its turn in the write queue ("" is the handle's branch).
func (g *Graph) QueuedWrites(branch string) int {
	if branch == "" {
		branch = g.current
	}
	return g.queues.depth(branch)
}
