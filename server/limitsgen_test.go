package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/counter"
	"github.com/omnigraph-go/omnigraph/backend/local"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/mutate"
)

// The tests in this file are generated from the route table (Routes) and
// the MCP tool table (mcpTools), like those of routegen_test.go: what
// each entry declares (its admission class, whether it streams, its
// answer cap) is checked on every entry, with the examples of
// routeExample and toolExample.

// Small limits keep the generated tests fast; every bound a test waits
// for is many times the deadline it checks (the machine is loaded).
const (
	testBodyTimeout = 300 * time.Millisecond
	testStreamIdle  = 300 * time.Millisecond
	// heldBound is how long a test waits before it calls a connection
	// held: far past every deadline above.
	heldBound = 20 * time.Second
)

// serveReal serves fx behind the http.Server omnigraph serve runs
// (HTTPServer), not httptest's defaults.
func (fx *fixture) serveReal(t *testing.T, cfg Config) (*Server, string) {
	t.Helper()
	s, _ := fx.serve(t, cfg)
	hs := httptest.NewUnstartedServer(nil)
	hs.Config = s.HTTPServer()
	hs.Start()
	t.Cleanup(hs.Close)
	return s, hs.URL
}

// trickle sends a request head announcing a 100,000-byte body, then the
// body one byte every gap (gap 0: one byte, then nothing), and returns
// the status line of the answer (if any came) and whether the server
// closed the connection within heldBound.
func trickle(t *testing.T, base, method, path, token string, gap time.Duration) (status string, cut bool) {
	t.Helper()
	addr := strings.TrimPrefix(base, "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	head := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100000\r\n", method, path, addr)
	if token != "" {
		head += "Authorization: Bearer " + token + "\r\n"
	}
	if _, err := io.WriteString(c, head+"\r\n "); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer func() { close(stop); wg.Wait() }()
	if gap > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(gap)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					if _, err := c.Write([]byte(" ")); err != nil {
						return
					}
				}
			}
		}()
	}
	_ = c.SetReadDeadline(time.Now().Add(heldBound))
	br := bufio.NewReader(c)
	line, _ := br.ReadString('\n')
	_, err = io.Copy(io.Discard, br)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return strings.TrimSpace(line), false
	}
	return strings.TrimSpace(line), true
}

// TestTrickledBodyIsCutOnEveryRoute: a body sent a byte at a time is cut
// within the body deadline on every route of the table, before its
// token is checked (no token: 401) and after (a valid token), and on the
// paths outside the table (an unknown route, an unknown graph, the
// Iceberg catalog, the console's files). On a route that reads a
// streamed body, progress keeps the body alive, so there the test stops
// sending (a stalled stream is cut within StreamIdle).
func TestTrickledBodyIsCutOnEveryRoute(t *testing.T) {
	fx := newFixture(t)
	tokens, secrets := tokensFor(t, "alice")
	_, base := fx.serveReal(t, Config{Tokens: tokens, UI: true, Limits: Limits{BodyTimeout: testBodyTimeout, StreamIdle: testStreamIdle}})
	token := secrets["alice"]
	type target struct {
		name, method, path string
		stream             bool
	}
	var targets []target
	for _, rt := range Routes() {
		ex, ok := routeExample(t, fx, rt)
		if !ok {
			t.Fatalf("route %s %s has no example in routeExample: add one", rt.Method, rt.Path)
		}
		path := ex.path
		if len(ex.query) > 0 {
			path += "?" + ex.query.Encode()
		}
		targets = append(targets, target{rt.OperationID, rt.Method, path, rt.Stream})
	}
	targets = append(targets,
		target{"unknown route", "POST", "/nowhere", false},
		target{"unknown graph", "POST", "/graphs/nope/query", false},
		target{"iceberg", "POST", IcebergPrefix + "/v1/config", false},
		target{"iceberg oauth", "POST", IcebergPrefix + "/v1/oauth/tokens", false},
		target{"console", "GET", "/ui/", false})
	for _, tg := range targets {
		for _, withToken := range []bool{false, true} {
			name := tg.name + "/no_token"
			tok := ""
			if withToken {
				name, tok = tg.name+"/token", token
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				gap := 50 * time.Millisecond
				if tg.stream && withToken {
					gap = 0
				}
				status, cut := trickle(t, base, tg.method, tg.path, tok, gap)
				if !cut {
					t.Fatalf("%s %s: the connection was still held after %s (answer %q); the body deadline is %s", tg.method, tg.path, heldBound, status, testBodyTimeout)
				}
			})
		}
	}
}

// TestEarlyRefusalClosesTheConnection: an error answered before the body
// was read says Connection: close.
func TestEarlyRefusalClosesTheConnection(t *testing.T) {
	fx := newFixture(t)
	tokens, _ := tokensFor(t, "alice")
	_, base := fx.serveReal(t, Config{Tokens: tokens})
	for _, path := range []string{"/graphs/default/query", "/nowhere"} {
		req, err := http.NewRequest("POST", base+path, strings.NewReader(`{"query":"x"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode < 400 || !resp.Close {
			t.Errorf("POST %s: status %d, Connection: close %v; want an error that closes the connection", path, resp.StatusCode, resp.Close)
		}
	}
}

// lockedBuffer is a log sink tests read while the server writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestLimitListener: past max connections Accept waits, with a warning,
// until one closes.
func TestLimitListener(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	ln := LimitListener(inner, 1, slog.New(slog.NewTextHandler(&logs, nil)))
	defer ln.Close()
	for range 2 {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	first, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			c = nil
		}
		accepted <- c
	}()
	deadline := time.Now().Add(heldBound)
	for !strings.Contains(logs.String(), "connection limit is reached") {
		if time.Now().After(deadline) {
			t.Fatalf("no warning once the limit was reached; log: %s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The warning is written before Accept waits, and only a closed
	// connection frees the slot: the second cannot have been accepted.
	select {
	case <-accepted:
		t.Fatal("a second connection was accepted past the limit of 1")
	default:
	}
	first.Close()
	first.Close() // a second Close frees nothing more
	select {
	case c := <-accepted:
		if c == nil {
			t.Fatal("Accept failed once the slot was free")
		}
		c.Close()
	case <-time.After(heldBound):
		t.Fatal("the second connection was not accepted once the first closed")
	}
	if n := len(ln.(*limitListener).slots); n != 0 {
		t.Errorf("%d slots held after every connection closed, want 0", n)
	}
}

// readTools are the MCP tools that take a read slot (their class), and
// the stored read query.
func readTools(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, mt := range mcpTools() {
		switch mt.class.admission {
		case api.AdmitRead:
			out = append(out, mt.tool.Name)
		case api.AdmitWrite, api.AdmitPerCall:
		default:
			t.Fatalf("tool %s declares no admission class", mt.tool.Name)
		}
	}
	return append(out, "people")
}

// TestEveryReadRouteAndToolAnswers429WhileSlotsAreHeld: with its actor's
// read slots held, every route declared AdmitRead and every reading MCP
// tool is refused with 429 and Retry-After before any storage request;
// once the slots are free, the same request answers as it should.
func TestEveryReadRouteAndToolAnswers429WhileSlotsAreHeld(t *testing.T) {
	fx := newFixture(t)
	tokens, secrets := tokensFor(t, "alice")
	s, base := fx.serve(t, Config{Tokens: tokens, Limits: Limits{ReadsPerActor: 2}})
	token := secrets["alice"]
	hold := func() func() {
		var rel []func()
		for range 2 {
			r, f := s.adm.admitRead("alice")
			if f != nil {
				t.Fatalf("hold a slot: %v", f.Body.Error)
			}
			rel = append(rel, r)
		}
		return func() {
			for _, r := range rel {
				r()
			}
		}
	}
	n := 0
	for _, rt := range Routes() {
		if rt.Admission != api.AdmitRead {
			continue
		}
		n++
		ex, ok := routeExample(t, fx, rt)
		if !ok {
			t.Fatalf("route %s %s has no example in routeExample: add one", rt.Method, rt.Path)
		}
		release := hold()
		fx.store.Reset()
		a := send(t, base, token, rt.Method, ex, nil)
		reqs := fx.store.Snapshot().Total
		release()
		if a.status != 429 || a.header.Get("Retry-After") == "" {
			t.Errorf("%s with the actor's read slots held: status %d %s, want 429 with Retry-After", rt.OperationID, a.status, a.raw)
		}
		if reqs != 0 {
			t.Errorf("%s: %d storage requests before the 429, want 0", rt.OperationID, reqs)
		}
		if a := send(t, base, token, rt.Method, ex, nil); a.status != ex.want {
			t.Errorf("%s once the slots are free: status %d %s, want %d", rt.OperationID, a.status, a.raw, ex.want)
		}
	}
	if n < 15 {
		t.Fatalf("only %d routes declare AdmitRead", n)
	}
	for _, name := range readTools(t) {
		args, ok := toolExample(fx, name)
		if !ok {
			t.Fatalf("tool %s has no example in toolExample: add one", name)
		}
		release := hold()
		res, isErr, rpcErr, a := mcpCall(t, base, token, name, args, nil)
		release()
		if rpcErr != nil || !isErr || res["status"] != 429.0 || res["retry_after_seconds"] == nil {
			t.Errorf("tool %s with the actor's read slots held: %s, want an error result with status 429", name, a.raw)
		}
		if _, isErr, rpcErr, a := mcpCall(t, base, token, name, args, nil); rpcErr != nil || (isErr && name != "blob_read" && name != "blob_stat") {
			t.Errorf("tool %s once the slots are free: %s", name, a.raw)
		}
	}
	if got := s.adm.inFlightReads(); got != 0 {
		t.Errorf("%d read slots held after every answer, want 0", got)
	}
}

// TestEveryAnswerOverItsCapIs413: with a small answer cap, every read
// route declared AnswerJSON whose answer is larger is refused with 413
// resource_limit answer_bytes, and so is every reading tool's result.
// A write's answer is never refused (the write has landed).
func TestEveryAnswerOverItsCapIs413(t *testing.T) {
	fx := newFixture(t)
	const limit = 20
	_, base := fx.serve(t, Config{Limits: Limits{AnswerBytes: limit}})
	for _, rt := range Routes() {
		if rt.Answer != api.AnswerJSON || rt.Writes() {
			continue
		}
		ex, ok := routeExample(t, fx, rt)
		if !ok {
			t.Fatalf("route %s %s has no example in routeExample: add one", rt.Method, rt.Path)
		}
		if ex.want != 200 || rt.Method == "HEAD" {
			continue // an error envelope is no answer to cap
		}
		a := send(t, base, "", rt.Method, ex, nil)
		rl, _ := a.body["resource_limit"].(map[string]any)
		if a.status != 413 || rl["resource"] != "answer_bytes" || rl["limit"] != float64(limit) {
			t.Errorf("%s under a %d-byte answer cap: status %d %.300s, want 413 answer_bytes", rt.OperationID, limit, a.status, a.raw)
		}
	}
	for _, name := range readTools(t) {
		if name == "blob_read" || name == "blob_stat" {
			continue // the example is refused (not a Blob)
		}
		args, _ := toolExample(fx, name)
		res, isErr, rpcErr, a := mcpCall(t, base, "", name, args, nil)
		rl, _ := res["resource_limit"].(map[string]any)
		if rpcErr != nil || !isErr || res["status"] != 413.0 || rl["resource"] != "answer_bytes" {
			t.Errorf("tool %s under a %d-byte answer cap: %.300s, want an error result with status 413 answer_bytes", name, limit, a.raw)
		}
	}
	// A write is answered whatever its size.
	a := send(t, base, "", "POST", sample{path: "/graphs/default/mutate", ctype: "application/json", body: jsonBody(map[string]any{"query": exMutate})}, nil)
	if a.status != 200 {
		t.Errorf("mutate under the answer cap: status %d %s, want 200", a.status, a.raw)
	}
}

// stalledWriter is a client that stops reading: a write blocks until the
// write deadline the server set passes (none set: until heldBound, and
// the write reports held).
type stalledWriter struct {
	header   http.Header
	mu       sync.Mutex
	deadline time.Time
	held     bool
}

func (w *stalledWriter) Header() http.Header { return w.header }
func (w *stalledWriter) WriteHeader(int)     {}
func (w *stalledWriter) Flush()              {}
func (w *stalledWriter) SetReadDeadline(time.Time) error {
	return nil
}

func (w *stalledWriter) SetWriteDeadline(t time.Time) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.deadline = t
	return nil
}

func (w *stalledWriter) Write(p []byte) (int, error) {
	end := time.Now().Add(heldBound)
	for time.Now().Before(end) {
		w.mu.Lock()
		d := w.deadline
		w.mu.Unlock()
		if !d.IsZero() && time.Now().After(d) {
			return 0, os.ErrDeadlineExceeded
		}
		time.Sleep(5 * time.Millisecond)
	}
	w.mu.Lock()
	w.held = true
	w.mu.Unlock()
	return 0, os.ErrDeadlineExceeded
}

// TestStalledReaderIsCutOnEveryStreamingRoute: on every route declared
// AnswerStream, a reader that stops reading is cut within the progress
// deadline (StreamIdle) and its read slot is free.
func TestStalledReaderIsCutOnEveryStreamingRoute(t *testing.T) {
	g, _, _, _ := blobGraph(t)
	s, _ := newTestServer(t, g, Config{Limits: Limits{StreamIdle: testStreamIdle}})
	examples := map[string]func() *http.Request{
		"export": func() *http.Request { return httptest.NewRequest("GET", "/graphs/default/export?branch=main", nil) },
		"getBlob": func() *http.Request {
			return httptest.NewRequest("GET", "/graphs/default/blob?entity=node&type=Doc&property=body&id=big", nil)
		},
		"captureChangeBaseline": func() *http.Request {
			r := httptest.NewRequest("POST", "/graphs/default/changes/baseline", strings.NewReader(`{"branch":"main"}`))
			r.Header.Set("Content-Type", "application/json")
			return r
		},
	}
	n := 0
	for _, rt := range Routes() {
		if rt.Answer != api.AnswerStream {
			continue
		}
		n++
		mk, ok := examples[rt.OperationID]
		if !ok {
			t.Fatalf("streaming route %s has no example here: add one", rt.OperationID)
		}
		w := &stalledWriter{header: http.Header{}}
		req := mk()
		req.Host = "127.0.0.1" // open mode serves loopback names only
		func() {
			defer func() {
				if p := recover(); p != nil && p != http.ErrAbortHandler {
					panic(p)
				}
			}()
			s.Handler().ServeHTTP(w, req)
		}()
		if w.held {
			t.Errorf("%s: a stalled reader was held %s; the progress deadline is %s", rt.OperationID, heldBound, testStreamIdle)
		}
		if got := s.adm.inFlightReads(); got != 0 {
			t.Errorf("%s: %d read slots held once the stalled reader was cut, want 0", rt.OperationID, got)
		}
	}
	if n != len(examples) {
		t.Errorf("%d streaming routes, %d examples", n, len(examples))
	}
}

// stallStore is a store whose reads wait for their context while stall
// is set: a read that would take for ever.
type stallStore struct {
	backend.StorageAdapter
	stall atomic.Bool
}

func (s *stallStore) wait(ctx context.Context) error {
	if !s.stall.Load() {
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}

func (s *stallStore) Get(ctx context.Context, key string) ([]byte, backend.Attrs, error) {
	if err := s.wait(ctx); err != nil {
		return nil, backend.Attrs{}, err
	}
	return s.StorageAdapter.Get(ctx, key)
}

func (s *stallStore) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if err := s.wait(ctx); err != nil {
		return nil, err
	}
	return s.StorageAdapter.GetRange(ctx, key, off, n)
}

// TestEveryBudgetedRouteStopsAtItsTimeBudget: every route declared
// Budget (and every budgeted tool) whose storage reads never end is
// answered 413 resource_limit query_time_ms once the query time budget
// has passed, with its read slot free; one served from the handle's
// caches answers as usual. Either way none is held.
func TestEveryBudgetedRouteStopsAtItsTimeBudget(t *testing.T) {
	st, err := local.New(filepath.Join(t.TempDir(), "g"))
	if err != nil {
		t.Fatal(err)
	}
	store := &stallStore{StorageAdapter: st}
	fx := &fixture{g: testGraphOn(t, store), store: counter.New(st)}
	ctx := context.Background()
	res, err := mutate.Query(ctx, fx.g, `mutation m() { insert Person { name: "ann" } }`, "", mutate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fx.first = res.Commit.ID
	if _, err := fx.g.CreateBranch(ctx, "feature", "main"); err != nil {
		t.Fatal(err)
	}
	if _, err := mutate.Query(ctx, fx.g, `mutation m() { insert Person { name: "bob" } }`, "", mutate.Options{Branch: "feature"}); err != nil {
		t.Fatal(err)
	}
	s, base := fx.serve(t, Config{Limits: Limits{Query: graph.Budget{Time: 200 * time.Millisecond}, RefusalDelay: time.Millisecond}})
	store.stall.Store(true)
	defer store.stall.Store(false)
	// No answer may take longer than heldBound: a held request fails the
	// test instead of hanging it.
	saved := http.DefaultClient.Timeout
	http.DefaultClient.Timeout = heldBound
	defer func() { http.DefaultClient.Timeout = saved }()
	stopped := 0
	for _, rt := range Routes() {
		if !rt.Budget {
			continue
		}
		ex, _ := routeExample(t, fx, rt)
		a := send(t, base, "", rt.Method, ex, nil)
		rl, _ := a.body["resource_limit"].(map[string]any)
		switch {
		case a.status == 413 && rl["resource"] == string(graph.ResourceTime):
			stopped++
		case a.status != ex.want:
			t.Errorf("%s with storage reads that never end: status %d %.300s, want 413 %s (or %d from the caches)", rt.OperationID, a.status, a.raw, graph.ResourceTime, ex.want)
		}
	}
	for _, mt := range mcpTools() {
		if !mt.class.budget {
			continue
		}
		args, _ := toolExample(fx, mt.tool.Name)
		res, isErr, rpcErr, a := mcpCall(t, base, "", mt.tool.Name, args, nil)
		rl, _ := res["resource_limit"].(map[string]any)
		switch {
		case rpcErr == nil && isErr && res["status"] == 413.0 && rl["resource"] == string(graph.ResourceTime):
			stopped++
		case rpcErr != nil || isErr:
			t.Errorf("tool %s with storage reads that never end: %.300s, want an error result 413 %s (or its result from the caches)", mt.tool.Name, a.raw, graph.ResourceTime)
		}
	}
	// diff, merge preview, a commit's changes (route and tool) and the
	// query (route and tool) read storage.
	if stopped < 5 {
		t.Errorf("%d budgeted routes and tools were stopped by the budget, want at least 5", stopped)
	}
	if got := s.adm.inFlightReads(); got != 0 {
		t.Errorf("%d read slots held after every answer, want 0", got)
	}
}
