package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is a tiny OTLP/HTTP trace receiver: it decodes each POST
// /v1/traces (protobuf) and keeps the span names by service name.
type otlpReceiver struct {
	mu    sync.Mutex
	spans map[string][]string // service.name -> span names
	posts int
}

func (rc *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != "POST" || r.URL.Path != "/v1/traces" {
		http.NotFound(w, r)
		return
	}
	b, err := io.ReadAll(r.Body)
	var req coltrace.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(b, &req)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.posts++
	for _, rs := range req.GetResourceSpans() {
		svc := ""
		for _, a := range rs.GetResource().GetAttributes() {
			if a.GetKey() == "service.name" {
				svc = a.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				rc.spans[svc] = append(rc.spans[svc], sp.GetName())
			}
		}
	}
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// TestServeTracesProcess: the real binary, given the standard OTLP
// environment, exports its spans to an OTLP/HTTP receiver: the request's
// span under its route name and its storage spans, under OTEL_SERVICE_NAME;
// the batch still held is flushed on SIGTERM.
func TestServeTracesProcess(t *testing.T) {
	rc := &otlpReceiver{spans: map[string][]string{}}
	col := httptest.NewServer(rc)
	defer col.Close()
	dir := filepath.Join(t.TempDir(), "graph")
	mustCLI(t, "init", "--schema", writeSchema(t), dir)
	base, cmd, wait := startServeEnv(t, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + col.URL, "OTEL_SERVICE_NAME=omnigraph-e2e"}, "--store", dir)
	if st, m := httpJSON(t, "GET", base+"/graphs/default/branches", "", ""); st != 200 {
		t.Fatalf("branches: %d %v", st, m)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := wait(); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	names := strings.Join(rc.spans["omnigraph-e2e"], " ")
	if !strings.Contains(" "+names+" ", " listBranches ") || !strings.Contains(names, "storage.") || !strings.Contains(names, "graph.open_recover") {
		t.Fatalf("after %d exports, spans of service omnigraph-e2e: %q; want listBranches, graph.open_recover and storage spans (all: %v)", rc.posts, names, rc.spans)
	}
}

// TestTracingWanted: the standard variables switch tracing on; an
// exporter serve cannot run is a clear refusal.
func TestTracingWanted(t *testing.T) {
	for _, c := range []struct {
		env     map[string]string
		on, bad bool
	}{
		{env: nil},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, on: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, on: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, on: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, bad: true},
	} {
		on, err := tracingWanted(func(k string) string { return c.env[k] })
		if on != c.on || (err != nil) != c.bad {
			t.Errorf("%v: on %v, err %v; want on %v, an error %v", c.env, on, err, c.on, c.bad)
		}
	}
}

// TestServeRefusesUnknownTraceExporter: an exporter serve cannot run is a
// usage error before the lock is taken.
func TestServeRefusesUnknownTraceExporter(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "graph")
	mustCLI(t, "init", "--schema", writeSchema(t), dir)
	_, _, _, code, errs := tryServe(t, []string{"OTEL_TRACES_EXPORTER=zipkin"}, "--store", dir)
	if code != exitUsage || !strings.Contains(errs, "OTEL_TRACES_EXPORTER") {
		t.Fatalf("OTEL_TRACES_EXPORTER=zipkin: exit %d, %s", code, errs)
	}
	if st := lockStatus(t, dir); st.Held {
		t.Fatalf("a refused serve must not take the lock: %+v", st)
	}
}
