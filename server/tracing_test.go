package server

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/backend/local"
	"github.com/omnigraph-go/omnigraph/backend/tracing"
)

// tracedServer is a server tracing into an in-memory recorder, its graph's
// store wrapped as serve wraps it; dir is the store's root (which no span
// may name).
func tracedServer(t *testing.T, cfg Config) (rec *tracetest.SpanRecorder, base, dir string) {
	t.Helper()
	rec = tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	dir = filepath.Join(t.TempDir(), "g")
	store, err := local.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	g := testGraphOn(t, tracing.Wrap(store, tp))
	cfg.TracerProvider = tp
	_, base = newTestServer(t, g, cfg)
	return rec, base, dir
}

func attrOf(attrs []attribute.KeyValue, k string) (attribute.Value, bool) {
	for _, a := range attrs {
		if string(a.Key) == k {
			return a.Value, true
		}
	}
	return attribute.Value{}, false
}

// send makes one request with the given headers and returns the answer.
func sendTraced(t *testing.T, method, url string, hdr map[string]string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestTraceRequestSpan: a request makes a server span named by its
// route's operation id with its status, actor and graph, and its storage
// requests are child spans (op and outcome, never a key or a path).
func TestTraceRequestSpan(t *testing.T) {
	rec, base, dir := tracedServer(t, Config{})
	rec.Reset() // the spans of opening the graph
	if code, b := sendTraced(t, "GET", base+"/graphs/default/snapshot?branch=main", nil); code != 200 {
		t.Fatalf("snapshot: %d %s", code, b)
	}
	var root sdktrace.ReadOnlySpan
	var storage []sdktrace.ReadOnlySpan
	for _, sp := range rec.Ended() {
		switch {
		case sp.Name() == "getSnapshot":
			root = sp
		case strings.HasPrefix(sp.Name(), "storage."):
			storage = append(storage, sp)
		}
		for _, a := range sp.Attributes() {
			if strings.Contains(a.Value.Emit(), dir) {
				t.Errorf("span %s attribute %s names the store's path: %s", sp.Name(), a.Key, a.Value.Emit())
			}
		}
	}
	if root == nil {
		t.Fatalf("no getSnapshot span among %d", len(rec.Ended()))
	}
	want := map[string]string{"http.response.status_code": "200", "omnigraph.actor": "anonymous", "omnigraph.graph": "default", "omnigraph.branch": "main"}
	for k, v := range want {
		if got, ok := attrOf(root.Attributes(), k); !ok || got.Emit() != v {
			t.Errorf("span attribute %s = %q (set %v), want %q", k, got.Emit(), ok, v)
		}
	}
	if len(storage) == 0 {
		t.Fatal("the snapshot made no storage span")
	}
	for _, sp := range storage {
		if sp.SpanContext().TraceID() != root.SpanContext().TraceID() {
			t.Errorf("storage span %s is in trace %s, not the request's %s", sp.Name(), sp.SpanContext().TraceID(), root.SpanContext().TraceID())
		}
		if o, ok := attrOf(sp.Attributes(), "storage.outcome"); !ok || o.Emit() == "" {
			t.Errorf("storage span %s has no outcome", sp.Name())
		}
	}
}

// TestTraceparentContinued: a client's W3C traceparent is continued, the
// request span is its child, in the client's trace.
func TestTraceparentContinued(t *testing.T) {
	rec, base, _ := tracedServer(t, Config{})
	const traceID, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	if code, b := sendTraced(t, "GET", base+"/graphs/default/branches", map[string]string{"traceparent": "00-" + traceID + "-" + parent + "-01"}); code != 200 {
		t.Fatalf("branches: %d %s", code, b)
	}
	for _, sp := range rec.Ended() {
		if sp.Name() != "listBranches" {
			continue
		}
		if got := sp.SpanContext().TraceID().String(); got != traceID {
			t.Fatalf("trace id %s, want the client's %s", got, traceID)
		}
		if got := sp.Parent().SpanID().String(); got != parent || !sp.Parent().IsRemote() {
			t.Fatalf("parent %s (remote %v), want the client's span %s", got, sp.Parent().IsRemote(), parent)
		}
		return
	}
	t.Fatal("no listBranches span")
}

// TestTraceIDInErrorAndLog: the trace id is in the error envelope and in
// the request's log line, whether the server traces (its own trace) or not
// (a client's traceparent).
func TestTraceIDInErrorAndLog(t *testing.T) {
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	for _, traced := range []bool{false, true} {
		t.Run(map[bool]string{false: "off", true: "on"}[traced], func(t *testing.T) {
			var logs bytes.Buffer
			cfg := Config{Logger: slog.New(slog.NewJSONHandler(&logs, nil))}
			var base string
			if traced {
				_, base, _ = tracedServer(t, cfg)
			} else {
				_, base = newTestServer(t, testGraph(t), cfg)
			}
			hdr := map[string]string{"traceparent": "00-" + traceID + "-00f067aa0ba902b7-01"}
			code, b := sendTraced(t, "GET", base+"/graphs/default/snapshot?branch=nope", hdr)
			if code != http.StatusNotFound {
				t.Fatalf("unknown branch: %d %s", code, b)
			}
			var out api.ErrorOutput
			if err := json.Unmarshal(b, &out); err != nil {
				t.Fatal(err)
			}
			if out.TraceID != traceID {
				t.Errorf("envelope trace_id %q, want %q: %s", out.TraceID, traceID, b)
			}
			found := false
			for _, line := range strings.Split(logs.String(), "\n") {
				var rec map[string]any
				if json.Unmarshal([]byte(line), &rec) != nil || rec["msg"] != "request" || rec["route"] != "getSnapshot" {
					continue
				}
				found = true
				if rec["trace_id"] != traceID {
					t.Errorf("request log line trace_id %v, want %s: %s", rec["trace_id"], traceID, line)
				}
			}
			if !found {
				t.Fatalf("no request log line for getSnapshot:\n%s", logs.String())
			}
			// Without a traceparent and with tracing off, no trace id.
			if !traced {
				_, b := sendTraced(t, "GET", base+"/graphs/default/snapshot?branch=nope", nil)
				if strings.Contains(string(b), "trace_id") {
					t.Errorf("tracing off, no traceparent, yet a trace_id: %s", b)
				}
			}
		})
	}
}

// TestTracePhases: a query's read and a mutation's plan and its stage and
// publish are child spans of the request span, and the write's storage
// requests are children of its write span.
func TestTracePhases(t *testing.T) {
	rec, base, _ := tracedServer(t, Config{})
	c := &client{t: t, base: base}
	if st, m := c.json("POST", "/graphs/default/mutate", `{"query":"mutation m() { insert Person { name: \"ada\", age: 3 } }"}`); st != 200 {
		t.Fatalf("mutate: %d %v", st, m)
	}
	if st, m := c.json("POST", "/graphs/default/query", `{"query":"query q() { match { $p: Person } return { $p.name } }"}`); st != 200 {
		t.Fatalf("query: %d %v", st, m)
	}
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, sp := range rec.Ended() {
		byName[sp.Name()] = sp
	}
	for phase, route := range map[string]string{"mutate.plan": "mutate", "write.stage_publish": "mutate", "query.read": "query"} {
		sp, root := byName[phase], byName[route]
		if sp == nil || root == nil {
			t.Fatalf("no %s span or %s span", phase, route)
		}
		if sp.Parent().SpanID() != root.SpanContext().SpanID() {
			t.Errorf("%s is not a child of the %s request span", phase, route)
		}
	}
	write := byName["write.stage_publish"].SpanContext().SpanID()
	n := 0
	for _, sp := range rec.Ended() {
		if strings.HasPrefix(sp.Name(), "storage.put") && sp.Parent().SpanID() == write {
			n++
		}
	}
	if n == 0 {
		t.Error("no storage put span under the write span")
	}
}
