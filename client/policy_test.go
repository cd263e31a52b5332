package client

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/api"
)

// The retry rules, against a scripted server (the answers the real server
// gives for these cases are covered against the binary in the other
// tests) and a recorded sleep instead of the clock.

type script struct {
	answers []func(w http.ResponseWriter, r *http.Request)
	n       atomic.Int32
	bodies  []string
}

func (s *script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	i := int(s.n.Add(1)) - 1
	b, _ := io.ReadAll(r.Body)
	s.bodies = append(s.bodies, string(b))
	s.answers[min(i, len(s.answers)-1)](w, r)
}

func status(code int, retryAfter string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		io.WriteString(w, `{"error":"scripted","code":"too_many_requests"}`)
	}
}

func okJSON(body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}
}

func scripted(t *testing.T, answers ...func(http.ResponseWriter, *http.Request)) (*Client, *script, *[]time.Duration) {
	t.Helper()
	s := &script{answers: answers}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	c, err := New(srv.URL, WithRetries(3, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var waits []time.Duration
	c.sleep = func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return ctx.Err()
	}
	return c, s, &waits
}

func TestRetryRules(t *testing.T) {
	ctx := context.Background()
	mutate := api.MutateRequest{Query: "mutation m() { insert P { name: \"x\" } }"}
	changed := okJSON(`{"branch":"main","affected_nodes":1,"affected_edges":0,"commit":null}`)

	t.Run("503 with Retry-After is waited for and sent again", func(t *testing.T) {
		c, s, waits := scripted(t, status(503, "2"), changed)
		if _, err := c.Graph("g").Mutate(ctx, mutate); err != nil {
			t.Fatal(err)
		}
		if s.n.Load() != 2 || len(*waits) != 1 || (*waits)[0] != 2*time.Second || s.bodies[0] != s.bodies[1] {
			t.Fatalf("sends %d, waits %v, bodies %q", s.n.Load(), *waits, s.bodies)
		}
	})
	t.Run("a Retry-After beyond the longest wait is not waited for", func(t *testing.T) {
		c, s, waits := scripted(t, status(429, "60"), changed)
		_, err := c.Graph("g").Mutate(ctx, mutate)
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, ErrTooManyRequests) || e.RetryAfter != time.Minute || s.n.Load() != 1 || len(*waits) != 0 {
			t.Fatalf("%v, sends %d, waits %v", err, s.n.Load(), *waits)
		}
	})
	t.Run("attempts are bounded", func(t *testing.T) {
		c, s, waits := scripted(t, status(429, "1"))
		_, err := c.Graph("g").Mutate(ctx, mutate)
		if !errors.Is(err, ErrTooManyRequests) || s.n.Load() != 3 || len(*waits) != 2 {
			t.Fatalf("%v, sends %d, waits %v", err, s.n.Load(), *waits)
		}
	})
	t.Run("a 503 without Retry-After and a 500 are never sent again", func(t *testing.T) {
		for _, code := range []int{503, 500} {
			c, s, _ := scripted(t, status(code, ""), changed)
			if _, err := c.Graph("g").Mutate(ctx, mutate); err == nil || s.n.Load() != 1 {
				t.Fatalf("%d: %v, sends %d", code, err, s.n.Load())
			}
		}
	})
	t.Run("a streamed body partly sent is not sent again", func(t *testing.T) {
		// The scripted server reads the whole body before refusing, so
		// 100-continue does not hold it back.
		c, s, _ := scripted(t, status(429, "1"), okJSON(`{"branch":"main","mode":"merge","nodes":0,"edges":0,"types":{},"total_entities":0,"branch_created":false,"commit":null}`))
		_, err := c.Graph("g").Load(ctx, io.MultiReader(strings.NewReader("{}\n")), LoadOptions{})
		if err == nil || !strings.Contains(err.Error(), "cannot be read again") || s.n.Load() != 1 {
			t.Fatalf("%v, sends %d", err, s.n.Load())
		}
	})
	t.Run("a streamed body that can seek back is sent again whole", func(t *testing.T) {
		c, s, _ := scripted(t, status(429, "1"), okJSON(`{"branch":"main","mode":"merge","nodes":1,"edges":0,"types":{},"total_entities":1,"branch_created":false,"commit":null}`))
		r := strings.NewReader("{\"type\":\"P\",\"data\":{}}\n")
		if _, err := c.Graph("g").Load(ctx, r, LoadOptions{}); err != nil || s.n.Load() != 2 || s.bodies[0] != s.bodies[1] || s.bodies[1] == "" {
			t.Fatalf("%v, sends %d, bodies %q", err, s.n.Load(), s.bodies)
		}
	})
	t.Run("a wait cut by the context ends with the refusal", func(t *testing.T) {
		c, s, _ := scripted(t, status(429, "1"), changed)
		cctx, cancel := context.WithCancel(ctx)
		c.sleep = func(context.Context, time.Duration) error { cancel(); return context.Canceled }
		if _, err := c.Graph("g").Mutate(cctx, mutate); !errors.Is(err, ErrTooManyRequests) || s.n.Load() != 1 {
			t.Fatalf("%v, sends %d", err, s.n.Load())
		}
	})
}

// TestExportCut: an export whose body ends without the completeness
// trailer (or with a count that differs) ends its iteration with
// ErrExportCut; a complete one does not.
func TestExportCut(t *testing.T) {
	body := `{"type":"P","data":{"id":"a"}}` + "\n" + `{"type":"P","data":{"id":"b"}}` + "\n"
	for _, tc := range []struct {
		trailer string
		cut     bool
	}{{"2", false}, {"", true}, {"3", true}} {
		c, _, _ := scripted(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Trailer", api.TrailerExportEntities)
			w.Header().Set(api.HeaderGraphCommit, "C1")
			io.WriteString(w, body)
			if tc.trailer != "" {
				w.Header().Set(api.TrailerExportEntities, tc.trailer)
			}
		})
		exp, err := c.Graph("g").Export(context.Background(), ExportOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var ids []any
		var last error
		for r, err := range exp.Records() {
			if err != nil {
				last = err
				break
			}
			ids = append(ids, r.Data["id"])
		}
		if len(ids) != 2 || exp.Commit != "C1" || errors.Is(last, ErrExportCut) != tc.cut {
			t.Fatalf("trailer %q: ids %v, commit %q, end %v", tc.trailer, ids, exp.Commit, last)
		}
		// WriteTo: the same bytes and the same verdict.
		exp, err = c.Graph("g").Export(context.Background(), ExportOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		n, err := exp.WriteTo(&buf)
		if buf.String() != body || n != int64(len(body)) || errors.Is(err, ErrExportCut) != tc.cut || (!tc.cut && err != nil) {
			t.Fatalf("WriteTo, trailer %q: %d bytes %q, %v", tc.trailer, n, buf.String(), err)
		}
	}
}

// TestUnreachable: with nothing listening, a read (after its retries) and a
// write (never sent) both match ErrUnreachable, keep the transport failure
// for errors.As, and are not outcome unknown: nothing was done.
func TestUnreachable(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.URL
	srv.Close() // the port is now closed: every dial is refused
	c, err := New(addr, WithRetries(3, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var waits []time.Duration
	c.sleep = func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return ctx.Err()
	}
	g := c.Graph("g")
	_, rerr := g.Query(ctx, api.QueryRequest{Query: "query q() { match { $p: P } return { $p } }"})
	_, werr := g.Mutate(ctx, api.MutateRequest{Query: "mutation m() { insert P { name: \"x\" } }"})
	for name, err := range map[string]error{"read": rerr, "write": werr} {
		var op *net.OpError
		if !errors.Is(err, ErrUnreachable) || errors.Is(err, ErrOutcomeUnknown) || !errors.As(err, &op) {
			t.Errorf("%s with nothing listening: %v; want ErrUnreachable wrapping the dial error", name, err)
		}
	}
	if len(waits) != 2 {
		t.Errorf("the read waited %v before giving up, want 2 waits (3 attempts)", waits)
	}
}
