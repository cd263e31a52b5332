package server

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/local"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/query"
)

// fatals records the causes OnFatal was told.
type fatals struct {
	mu     sync.Mutex
	causes []string
}

func (f *fatals) on(cause string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.causes = append(f.causes, cause)
}

func (f *fatals) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fmt.Sprint(f.causes)
}

// twoGraphServer serves two fresh local graphs, "default" and "other",
// from one server; it returns the default graph's store, so a test can
// reopen it as a restarted process would.
func twoGraphServer(t *testing.T, cfg Config) (*Server, string, *graph.Graph, backend.StorageAdapter) {
	t.Helper()
	ctx := context.Background()
	open := func(name string) (*graph.Graph, backend.StorageAdapter) {
		store, err := local.New(filepath.Join(t.TempDir(), name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := graph.Init(ctx, store, testSchema, graph.InitOptions{}); err != nil {
			t.Fatal(err)
		}
		g, err := graph.Open(ctx, store, graph.OpenOptions{ExclusiveWriter: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Close() })
		return g, store
	}
	g, store := open("default")
	other, _ := open("other")
	cfg.Graphs = []Graph{{ID: "default", G: g}, {ID: "other", G: other}}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return s, hs.URL, g, store
}

// restartedNames opens the store as a restarted server does (a read-write
// open in a fresh process scope, which resolves every pending recovery
// intent) and counts the Person names on main. It also checks that no
// intent is left pending.
func restartedNames(t *testing.T, store backend.StorageAdapter) map[string]int {
	t.Helper()
	ctx := context.Background()
	g, err := graph.Open(ctx, store, graph.OpenOptions{ExclusiveWriter: true, Process: graph.NewProcess()})
	if err != nil {
		t.Fatalf("the restart's read-write open: %v", err)
	}
	defer g.Close()
	if pend, err := g.PendingRecovery(ctx); err != nil || len(pend) != 0 {
		t.Fatalf("after the restart's open: %d intents pending, %v", len(pend), err)
	}
	r, err := query.Head(ctx, g, "main", `query q() { match { $p: Person } return { $p.name } }`, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, row := range r.Rows {
		got[fmt.Sprint(row[0])]++
	}
	return got
}

// mustStopped checks that the server stopped for cause: OnFatal was told
// once, and every later request on every graph, read or write, is 503
// server_stopping without reaching the engine.
func mustStopped(t *testing.T, base string, f *fatals, cause string) {
	t.Helper()
	if got := f.String(); got != "["+cause+"]" {
		t.Fatalf("OnFatal causes %s, want [%s]", got, cause)
	}
	c := &client{t: t, base: base}
	for _, p := range []string{"/graphs/default/branches", "/graphs/other/branches"} {
		st, m := c.json("GET", p, "")
		mustStatus(t, "GET "+p+" after the stop", st, 503, m)
		if m["failure_class"] != "server_stopping" {
			t.Fatalf("GET %s after the stop: %v", p, m)
		}
	}
	st, m := c.json("POST", "/graphs/other/mutate", `{"query":"mutation m() { insert Person { name: \"late\" } }"}`)
	mustStatus(t, "a write on the other graph after the stop", st, 503, m)
	// The liveness probe says so too, with the cause (issue 26 item 6).
	st, m = c.json("GET", "/healthz", "")
	mustStatus(t, "healthz after the stop", st, 503, m)
	if m["failure_class"] != "server_stopping" || m["stop_reason"] != cause {
		t.Fatalf("healthz after the stop: %v, want stop_reason %s", m, cause)
	}
}

// TestServerStopsOnRecoveryRequired pins seed 001's stop cause "a
// publication adopted in storage but not in memory (RecoveryRequired)"
// on the handler: a write whose table commits landed but whose publish
// did not (the post-Phase-B failpoint) answers 503 recovery_required with
// its operation id, and the server closes admission for every graph and
// tells OnFatal "recovery_required" (serve exits 2). The restarted
// server's read-write open resolves the intent: the write is there at
// most once, nothing is left pending, and the other graph got nothing.
func TestServerStopsOnRecoveryRequired(t *testing.T) {
	for _, via := range []string{"http", "mcp"} {
		t.Run(via, func(t *testing.T) {
			var f fatals
			_, base, g, store := twoGraphServer(t, Config{OnFatal: f.on})
			c := &client{t: t, base: base}
			st, m := c.json("POST", "/graphs/default/mutate", `{"query":"mutation m() { insert Person { name: \"before\" } }"}`)
			mustStatus(t, "a write before the failure", st, 200, m)
			if got := f.String(); got != "[]" {
				t.Fatalf("a good write stopped the server: %s", got)
			}
			clear := graph.Failpoints.Set(g.ID(), graph.FailpointPostPhaseB, func() error { return errors.New("injected: stopped after the table commits") })
			defer clear()
			var te map[string]any
			if via == "http" {
				st, te = c.json("POST", "/graphs/default/mutate", `{"query":"mutation m() { insert Person { name: \"rr\" } }"}`)
				mustStatus(t, "the write that needs recovery", st, 503, te)
			} else {
				cs, err := mcpConnect(t, base, "")
				if err != nil {
					t.Fatal(err)
				}
				res := callTool(t, cs, "graph_mutate", map[string]any{"query": `mutation m() { insert Person { name: "rr" } }`})
				if te = structured(t, res); !res.IsError || te["status"] != 503.0 {
					t.Fatalf("graph_mutate that needs recovery: %v", te)
				}
			}
			rr, _ := te["recovery_required"].(map[string]any)
			if rr == nil || rr["operation_id"] == "" || te["failure_class"] != "recovery_required" {
				t.Fatalf("503 without recovery_required.operation_id: %v", te)
			}
			mustStopped(t, base, &f, StopRecoveryRequired)
			clear()
			got := restartedNames(t, store)
			if got["before"] != 1 || got["rr"] > 1 || got["late"] != 0 {
				t.Fatalf("people after the restart: %v", got)
			}
		})
	}
}

// TestServerStopsOnOpaqueWriteFailure pins seed 001's stop cause "an
// opaque execution failure": a write that fails with an error carrying
// no typed evidence (neither an engine error nor a classified storage
// failure) answers 500 internal with outcome_unknown (where to check),
// and the server stops as for RecoveryRequired, on a route and on an MCP
// tool alike. A read's failure, a refused write (4xx) and a write whose
// outcome is unknown but scoped to its own keys (500 outcome_unknown)
// stop nothing.
func TestServerStopsOnOpaqueWriteFailure(t *testing.T) {
	for _, via := range []string{"http", "mcp"} {
		t.Run(via, func(t *testing.T) {
			var f fatals
			_, base, g, store := twoGraphServer(t, Config{OnFatal: f.on})
			c := &client{t: t, base: base}
			// Failures that must not stop the server.
			st, m := c.json("POST", "/graphs/default/mutate", `{"query":"mutation m() { insert Nobody { name: \"x\" } }"}`)
			mustStatus(t, "a refused write", st, 400, m)
			st, m = c.json("POST", "/graphs/default/query", `{"query":"query q() { match { $p: Nobody } return { $p.name } }"}`)
			mustStatus(t, "a failed read", st, 400, m)
			clearUnknown := graph.Failpoints.Set(g.ID(), graph.FailpointPostPhaseA, func() error {
				return fmt.Errorf("publish: %w", backend.ErrUnknown)
			})
			st, m = c.json("POST", "/graphs/default/mutate", `{"query":"mutation m() { insert Person { name: \"unknown\" } }"}`)
			clearUnknown()
			mustStatus(t, "a write with a scoped unknown outcome", st, 500, m)
			if m["outcome_unknown"] == nil || m["failure_class"] != "outcome_unknown" {
				t.Fatalf("scoped unknown outcome: %v", m)
			}
			st, m = c.json("POST", "/graphs/default/mutate", `{"query":"mutation m() { insert Person { name: \"ok\" } }"}`)
			mustStatus(t, "a write after the scoped failures", st, 200, m)
			if got := f.String(); got != "[]" {
				t.Fatalf("scoped failures stopped the server: %s", got)
			}

			clear := graph.Failpoints.Set(g.ID(), graph.FailpointPostPhaseA, func() error { return errors.New("injected: opaque") })
			defer clear()
			var te map[string]any
			if via == "http" {
				st, te = c.json("POST", "/graphs/default/mutate", `{"query":"mutation m() { insert Person { name: \"opaque\" } }"}`)
				mustStatus(t, "the opaque failure", st, 500, te)
			} else {
				cs, err := mcpConnect(t, base, "")
				if err != nil {
					t.Fatal(err)
				}
				res := callTool(t, cs, "graph_mutate", map[string]any{"query": `mutation m() { insert Person { name: "opaque" } }`})
				if te = structured(t, res); !res.IsError || te["status"] != 500.0 {
					t.Fatalf("graph_mutate failing opaquely: %v", te)
				}
			}
			ou, _ := te["outcome_unknown"].(map[string]any)
			if te["code"] != "internal" || te["failure_class"] != "internal" || ou == nil || ou["check"] != "GET /graphs/default/commits" {
				t.Fatalf("opaque failure answer: %v", te)
			}
			if s := fmt.Sprint(te); containsAny(s, "injected", "__manifest", "_sidecar") {
				t.Fatalf("the answer carries the engine's text: %v", te)
			}
			mustStopped(t, base, &f, StopOpaqueFailure)
			clear()
			got := restartedNames(t, store)
			if got["ok"] != 1 || got["unknown"] > 1 || got["opaque"] > 1 {
				t.Fatalf("people after the restart: %v", got)
			}
		})
	}
}

func containsAny(s string, subs ...string) bool {
	return slices.ContainsFunc(subs, func(sub string) bool { return strings.Contains(s, sub) })
}

// TestServerStopsOnRoutePanic: a panic inside a route's engine work (on
// the request's goroutine) is contained by the route's wrap: 500
// outcome_unknown of class panic, and the server stops as for the other
// causes. TestMCPToolPanic covers a tool.
func TestServerStopsOnRoutePanic(t *testing.T) {
	var f fatals
	_, base, g, store := twoGraphServer(t, Config{OnFatal: f.on})
	clear := graph.Failpoints.Set(g.ID(), graph.FailpointPostPhaseB, func() error { panic("injected") })
	defer clear()
	st, m := (&client{t: t, base: base}).json("POST", "/graphs/default/mutate", `{"query":"mutation m() { insert Person { name: \"p\" } }"}`)
	mustStatus(t, "the panicking write", st, 500, m)
	if m["failure_class"] != "panic" || m["outcome_unknown"] == nil || strings.Contains(fmt.Sprint(m), "injected") {
		t.Fatalf("panic answer: %v", m)
	}
	mustStopped(t, base, &f, "panic")
	clear()
	if got := restartedNames(t, store); got["p"] > 1 {
		t.Fatalf("people after the restart: %v", got)
	}
}

// TestAdmittedWriteOutlivesItsClient: an admitted write runs to its end
// when its client goes away mid-write (its request context is cancelled
// after its intent is armed, before its table commits): it lands, once,
// and nothing stops the server, so a client that disconnects cannot leave
// a write needing recovery. The server's Close is what cancels a write
// still in flight.
func TestAdmittedWriteOutlivesItsClient(t *testing.T) {
	var f fatals
	s, _, g, _ := twoGraphServer(t, Config{OnFatal: f.on})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clear := graph.Failpoints.Set(g.ID(), graph.FailpointPostPhaseA, func() error {
		cancel() // the client is gone
		return nil
	})
	defer clear()
	hr := httptest.NewRequestWithContext(ctx, "POST", "/graphs/default/mutate", nil)
	r := &request{Request: hr, s: s, graphID: "default", g: g}
	out, err := r.opMutate(api.MutateRequest{Query: `mutation m() { insert Person { name: "gone" } }`}, "")
	if err != nil || out.Commit == nil {
		t.Fatalf("the write whose client went away: %+v, %v", out, err)
	}
	if ctx.Err() == nil {
		t.Fatal("the failpoint did not cancel the client's context")
	}
	clear()
	cs, err := g.Commits(context.Background(), "main", 0)
	if err != nil || len(cs) != 2 || cs[0].ID != out.Commit.GraphCommitID {
		t.Fatalf("commits: %v, %v", cs, err)
	}
	if got := f.String(); got != "[]" {
		t.Fatalf("a departed client stopped the server: %s", got)
	}

	// Close cancels a write still in flight.
	ctx2 := context.Background()
	clear = graph.Failpoints.Set(g.ID(), graph.FailpointPostPhaseA, func() error {
		s.Close()
		return nil
	})
	defer clear()
	r = &request{Request: httptest.NewRequestWithContext(ctx2, "POST", "/graphs/default/mutate", nil), s: s, graphID: "default", g: g}
	if _, err := r.opMutate(api.MutateRequest{Query: `mutation m() { insert Person { name: "cut" } }`}, ""); !errors.Is(err, context.Canceled) {
		t.Fatalf("a write in flight at Close: %v, want it cancelled", err)
	}
}
