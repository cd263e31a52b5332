package clusterlock

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
)

// fakeClock is a Clock that moves only when a test advances it.
type fakeClock struct {
	mu       sync.Mutex
	now      time.Time
	sleepers map[*sleeper]bool
	changed  chan struct{} // closed and replaced whenever sleepers change
}

type sleeper struct {
	until time.Time
	ch    chan struct{}
}

var epoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func newFakeClock() *fakeClock {
	return &fakeClock{now: epoch, sleepers: map[*sleeper]bool{}, changed: make(chan struct{})}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) notify() {
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	c.mu.Lock()
	s := &sleeper{until: c.now.Add(d), ch: make(chan struct{})}
	c.sleepers[s] = true
	c.notify()
	c.mu.Unlock()
	select {
	case <-s.ch:
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		if c.sleepers[s] {
			delete(c.sleepers, s)
			c.notify()
		}
		c.mu.Unlock()
		return ctx.Err()
	}
}

// Advance moves the clock and wakes every sleeper that is due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for s := range c.sleepers {
		if !s.until.After(c.now) {
			delete(c.sleepers, s)
			close(s.ch)
		}
	}
	c.notify()
}

// waitSleepers blocks until at least want() goroutines sleep, or done is
// closed (reports false). A goroutine that never sleeps is a bug; the hang
// guard fails the test instead of hanging it.
func (c *fakeClock) waitSleepers(t testing.TB, want func() int, done <-chan struct{}) bool {
	t.Helper()
	guard := time.NewTimer(20 * time.Second)
	defer guard.Stop()
	for {
		c.mu.Lock()
		n, ch := len(c.sleepers), c.changed
		c.mu.Unlock()
		if n >= want() && want() > 0 {
			return true
		}
		select {
		case <-done:
			return false
		case <-ch:
		case <-guard.C:
			t.Fatalf("hang guard: %d goroutines asleep, want %d", n, want())
		}
	}
}

// drive advances the clock by step each time want() goroutines sleep, until
// done is closed; it returns how far the clock moved.
func (c *fakeClock) drive(t testing.TB, step time.Duration, want func() int, done <-chan struct{}) time.Duration {
	t.Helper()
	start := c.Now()
	for i := 0; ; i++ {
		if i > 100000 {
			t.Fatal("drive: too many steps")
		}
		if !c.waitSleepers(t, want, done) {
			return c.Now().Sub(start)
		}
		select {
		case <-done:
			return c.Now().Sub(start)
		default:
		}
		c.Advance(step)
	}
}

func constant(n int) func() int { return func() int { return n } }

// logCapture collects a test's log lines and, when the test ends, asserts
// that none carries a storage key, a local path or a secret.
type logCapture struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logCapture) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logCapture) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

const testSecret = "s3cr3t-AKIAEXAMPLE"

// testStoreURL carries a secret that must never reach a log line.
const testStoreURL = "s3://bucket/graph?secret_access_key=" + testSecret

// captureLogs returns a JSON logger for a fault test. forbidden extra
// strings (a temp dir) are checked along with the lock's keys and the secret.
func captureLogs(t *testing.T, forbidden ...string) (*slog.Logger, *logCapture) {
	t.Helper()
	c := &logCapture{}
	t.Cleanup(func() {
		out := c.String()
		for _, bad := range append([]string{"__cluster", "lock.json", "/lease/", ".json", testSecret, "secret_access_key", "s3://", "fault: injected"}, forbidden...) {
			if bad != "" && strings.Contains(out, bad) {
				t.Errorf("log output carries %q (a key, path, secret or error text):\n%s", bad, out)
			}
		}
	})
	return slog.New(slog.NewJSONHandler(c, &slog.HandlerOptions{Level: slog.LevelDebug})), c
}

// cutStore fails every request under a prefix while cut is set, without
// reaching the store: the wire to those keys is cut.
type cutStore struct {
	backend.StorageAdapter
	prefix string
	mu     sync.Mutex
	cut    bool
	kind   backend.Kind
}

func (c *cutStore) set(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cut = on
}

func (c *cutStore) check(op, key string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cut && strings.HasPrefix(key, c.prefix) {
		return backend.NewError(op, key, c.kind, context.DeadlineExceeded)
	}
	return nil
}

func (c *cutStore) PutIfAbsent(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	if err := c.check("put-if-absent", key); err != nil {
		return backend.Attrs{}, err
	}
	return c.StorageAdapter.PutIfAbsent(ctx, key, data)
}

func (c *cutStore) List(ctx context.Context, prefix string, o backend.ListOptions) (backend.ListPage, error) {
	if err := c.check("list", prefix); err != nil {
		return backend.ListPage{}, err
	}
	return c.StorageAdapter.List(ctx, prefix, o)
}
