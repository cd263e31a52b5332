package server

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
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
