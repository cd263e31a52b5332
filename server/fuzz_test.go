package server

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend/local"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/mutate"
)

// FuzzRoutes sends any body, query string and extra header to any route
// of the table (and to paths beside it) and checks that the server never
// answers 500, never panics (a panic would stop it: OnFatal), and that
// no answer outgrows its bounds: the body limit and the answer cap are
// small here, so an answer past them means an unbounded one. Seeded with
// the example of every route; make test runs it for a few seconds, make
// soak longer:
//
//	go test ./server -run '^$' -fuzz FuzzRoutes -fuzztime 60s
func FuzzRoutes(f *testing.F) {
	ctx := context.Background()
	st, err := local.New(filepath.Join(f.TempDir(), "g"))
	if err != nil {
		f.Fatal(err)
	}
	g := testGraphOn(f, st)
	res, err := mutate.Query(ctx, g, `mutation m() { insert Person { name: "ann" } }`, "", mutate.Options{})
	if err != nil {
		f.Fatal(err)
	}
	first := res.Commit.ID
	if _, err := g.CreateBranch(ctx, "feature", "main"); err != nil {
		f.Fatal(err)
	}
	const answerCap = 256 << 10
	var fatal sync.Map
	s, err := New(Config{Graphs: []Graph{{ID: "default", G: g}}, UI: true,
		Limits: Limits{BodyBytes: 64 << 10, LoadBytes: 64 << 10, AnswerBytes: answerCap, BodyTimeout: testBodyTimeout, StreamIdle: testStreamIdle,
			RefusalDelay: time.Millisecond, Query: graph.Budget{Time: 2 * time.Second}},
		OnFatal: func(reason string) { fatal.Store(reason, true) }})
	if err != nil {
		f.Fatal(err)
	}
	h := s.Handler()
	routes := Routes()
	paths := make([]string, len(routes))
	for i, rt := range routes {
		p := rt.Path
		p = strings.ReplaceAll(p, "{graph_id}", "default")
		p = strings.ReplaceAll(p, "{commit_id}", first)
		p = strings.ReplaceAll(p, "{branch}", "feature")
		p = strings.ReplaceAll(p, "{name}", "nope")
		paths[i] = p
	}
	for i, rt := range routes {
		body := ""
		if rt.Request != "" {
			body = `{"query":"query q() { match { $p: Person } return { $p.name } }","branch":"main","from":"main","to":"feature","source":"feature","name":"x"}`
		}
		f.Add(uint8(i), "", body, "Content-Type", "application/json")
		f.Add(uint8(i), "branch=main&limit=1", "", "Range", "bytes=0-")
	}
	f.Add(uint8(0), "", `[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`, "Accept", "application/json, text/event-stream")
	f.Fuzz(func(t *testing.T, i uint8, query, body, hk, hv string) {
		rt := routes[int(i)%len(routes)]
		path := paths[int(i)%len(routes)]
		if int(i) >= len(routes)*2 {
			path = "/graphs/default/" + strings.TrimLeft(query, "/")
		}
		req := httptest.NewRequest(rt.Method, "http://127.0.0.1/", strings.NewReader(body))
		req.URL.Path = path // as the server would receive it, unparsed
		req.URL.RawQuery = strings.Map(func(r rune) rune {
			if r <= ' ' || r == '#' || r == 0x7f {
				return -1
			}
			return r
		}, query)
		req.Host = "127.0.0.1" // open mode: loopback names only
		if rt.Request != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if rt.OperationID == "mcp" {
			req.Header.Set("Accept", "application/json, text/event-stream")
		}
		if k := textproto.CanonicalMIMEHeaderKey(hk); validHeader(k, hv) {
			req.Header.Set(k, hv)
		}
		w := httptest.NewRecorder()
		func() {
			defer func() {
				if p := recover(); p != nil && p != http.ErrAbortHandler {
					t.Fatalf("%s %s: panic %v", rt.Method, path, p)
				}
			}()
			h.ServeHTTP(w, req)
		}()
		if w.Code >= 500 && w.Code != http.StatusServiceUnavailable {
			t.Fatalf("%s %s?%s (%q: %q) body %q: status %d %s", rt.Method, path, req.URL.RawQuery, hk, hv, body, w.Code, w.Body.String())
		}
		fatal.Range(func(k, _ any) bool {
			t.Fatalf("the server stopped (%v) after %s %s body %q", k, rt.Method, path, body)
			return false
		})
		if rt.Answer != "stream" && rt.OperationID != "openapi" && w.Body.Len() > answerCap+4096 {
			t.Fatalf("%s %s: a %d-byte answer past the %d-byte cap", rt.Method, path, w.Body.Len(), answerCap)
		}
		if bytes.Contains(w.Body.Bytes(), []byte("goroutine ")) {
			t.Fatalf("%s %s: a stack in the answer", rt.Method, path)
		}
	})
}

// validHeader reports whether k: v is a header net/http would send.
func validHeader(k, v string) bool {
	if k == "" || k == "Host" || k == "Content-Length" || k == "Transfer-Encoding" {
		return false
	}
	for _, r := range k {
		if r <= ' ' || r >= 0x7f || strings.ContainsRune("()<>@,;:\\\"/[]?={}", r) {
			return false
		}
	}
	for _, r := range v {
		if r < ' ' && r != '\t' || r == 0x7f {
			return false
		}
	}
	return true
}
