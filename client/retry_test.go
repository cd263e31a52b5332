package client_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/client"
)

// holdWrite starts a streamed load whose body stays open, so the server
// holds one of the actor's write slots until release is called (the body
// then ends and the load commits). It returns once the server reads the
// body: the slot is taken.
func holdWrite(t *testing.T, g *client.Graph) (release func() error) {
	t.Helper()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := g.Load(ctxT(t), pr, client.LoadOptions{Mode: "merge"})
		done <- err
	}()
	// The server reads the body only after admission (100-continue): this
	// write returns once the slot is taken.
	if _, err := io.WriteString(pw, `{"type":"Person","data":{"handle":"held","name":"Held"}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	var err error
	return func() error {
		once.Do(func() {
			pw.Close()
			err = <-done
		})
		return err
	}
}

// TestRetryAfter429: with one write slot per actor held by a streamed
// load, a mutation is refused 429 with Retry-After; the client waits the
// time the server asks for and sends it again, and it lands once. Without
// retries the same refusal is ErrTooManyRequests with RetryAfter.
func TestRetryAfter429(t *testing.T) {
	ctx := ctxT(t)
	url := exampleGraph(t, filepath.Join(t.TempDir(), "graph"))
	s := serve(t, nil, "--store", url, "--max-writes-per-actor", "1")

	noRetry := newClient(t, s.base, "", client.WithRetries(1, time.Minute)).Graph("default")
	release := holdWrite(t, noRetry)
	_, err := noRetry.Mutate(ctx, api.MutateRequest{Query: `mutation m() { insert Person { handle: "refused", name: "R" } }`})
	e := wantError(t, "a write beyond the actor's slots", err, client.ErrTooManyRequests, 429, api.CodeTooManyRequests)
	if e.RetryAfter != time.Second {
		t.Fatalf("Retry-After %v, want 1s", e.RetryAfter)
	}
	if err := release(); err != nil {
		t.Fatalf("the held load: %v", err)
	}

	var retries []client.Retry
	var c *client.Client
	var releaseNext func() error
	c = newClient(t, s.base, "", client.WithRetryHook(func(r client.Retry) {
		retries = append(retries, r)
		// The retry is about to wait: free the slot meanwhile.
		if err := releaseNext(); err != nil {
			t.Errorf("the held load: %v", err)
		}
	}))
	g := c.Graph("default")
	releaseNext = holdWrite(t, g)
	out, err := g.Mutate(ctx, api.MutateRequest{Query: `mutation m() { insert Person { handle: "retried", name: "Retried" } }`})
	if err != nil || out.Commit == nil {
		t.Fatalf("the retried write: %v", err)
	}
	if len(retries) == 0 || retries[0].Operation != "mutate" || retries[0].Wait != time.Second || !errors.Is(retries[0].Err, client.ErrTooManyRequests) {
		t.Fatalf("retries %+v", retries)
	}
	for h, want := range map[string]int{"retried": 1, "refused": 0, "held": 1} {
		if n := count(ctx, t, g, "main", `$p: Person { handle: "`+h+`" }`); n != want {
			t.Fatalf("%s is stored %d times, want %d", h, n, want)
		}
	}
}

// lines is a reader of n generated Person lines, made as it is read: the
// test holds no copy of the batch either.
type lines struct {
	n, i int
	buf  []byte
	read int64
}

func (l *lines) Read(p []byte) (int, error) {
	for len(l.buf) == 0 {
		if l.i == l.n {
			return 0, io.EOF
		}
		l.buf = fmt.Appendf(l.buf[:0], `{"type":"Person","data":{"handle":"bulk-%06d","name":"Bulk Person %06d","age":%d,"city":"City %03d","email":"bulk%06d@example.com","interests":["graphs","object stores","streaming loads"]}}`+"\n", l.i, l.i, l.i%100, l.i%500, l.i)
		l.i++
	}
	n := copy(p, l.buf)
	l.buf = l.buf[n:]
	l.read += int64(n)
	return n, nil
}

// TestStreamedLoad100k streams 100,000 lines (about 20 MB) through Load
// from a generating reader and measures the client's heap while it runs:
// the client holds a buffer, not the batch (its live heap grows by far
// less than the bytes sent). The server's peak RSS is logged.
func TestStreamedLoad100k(t *testing.T) {
	ctx := ctxT(t)
	url := exampleGraph(t, filepath.Join(t.TempDir(), "graph"))
	s := serve(t, nil, "--store", url, "--max-load-bytes", strconv.Itoa(64<<20))
	g := newClient(t, s.base, "").Graph("default")

	// A collection at every 1% of growth keeps garbage out of the samples:
	// what stays in use is what the client holds.
	defer debug.SetGCPercent(debug.SetGCPercent(1))
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	src := &lines{n: 100_000}
	out, err := g.Load(ctx, src, client.LoadOptions{Mode: "append"})
	close(stop)
	<-sampled
	if err != nil {
		t.Fatal(err)
	}
	if out.Nodes != 100_000 || out.Types["Person"] != 100_000 {
		t.Fatalf("load: %+v", out)
	}
	if n := count(ctx, t, g, "main", `$p: Person $p.handle >= "bulk-" $p.handle < "bulk."`); n != 100_000 {
		t.Fatalf("%d bulk rows, want 100000", n)
	}
	grew := int64(peak.Load()) - int64(base.HeapInuse)
	t.Logf("client: sent %d bytes; heap in use grew by at most %d KiB (from %d KiB); server peak RSS %s",
		src.read, max(grew, 0)>>10, base.HeapInuse>>10, peakRSS(s.cmd.Process.Pid))
	if src.read < 15<<20 {
		t.Fatalf("the batch was only %d bytes", src.read)
	}
	if grew > 8<<20 {
		t.Fatalf("the client's heap grew by %d MiB while streaming %d MiB: it buffers the batch", grew>>20, src.read>>20)
	}
}

// peakRSS is a process's peak resident set (VmHWM), or "unknown".
func peakRSS(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "unknown"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
