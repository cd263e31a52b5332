// Package server is omnigraph's HTTP API: one or more graphs served under
// /graphs/{graph_id}/, bearer-token auth, per-actor admission and the one
// mapping from engine errors to answers (MapError). The route table
// (Routes) is what the server mounts and what the OpenAPI document
// (OpenAPI) describes. The caller (omnigraph serve) opens the graphs,
// holds the writer fence and owns the process lifecycle.
package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"runtime/debug"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/internal/buildinfo"
)

// Graph is one served graph.
type Graph struct {
	ID string
	G  *graph.Graph
	// StorageKind is the scheme of its storage URL ("file", "s3", ...),
	// which the status route shows; never the location.
	StorageKind string
	// Budget overrides the server's query budget for this graph (fields
	// > 0 win).
	Budget graph.Budget
	// IcebergLocation, when set, keeps the graph's Iceberg metadata
	// current in the background after each write (its root as engines
	// address it, iceberg.Location); the /iceberg catalog serves whatever
	// metadata the graph has either way.
	IcebergLocation string
	// Queries are the graph's stored queries (CompileQueries), nil for
	// none.
	Queries *StoredQueries
}

// Config configures a Server.
type Config struct {
	Graphs []Graph
	// Tokens verifies bearer secrets; nil is open mode (no auth; the
	// caller binds loopback only).
	Tokens *Tokens
	// Policy decides what each actor may do (403 otherwise); nil is
	// DefaultPolicy (everything an authenticated actor asks).
	Policy *Policy
	// ReadOnly: a replica; every write route answers 403.
	ReadOnly bool
	Limits   Limits
	// Actors override the limits for some actors (by actor id; in open
	// mode the actor is "anonymous").
	Actors map[string]ActorLimits
	// Logger gets one line per request and the server's events.
	Logger *slog.Logger
	// Version is reported by /healthz and the OpenAPI document ("":
	// Build.Version).
	Version string
	// Build is the build reported by /healthz (zero: the running
	// binary's, buildinfo.Read).
	Build buildinfo.Info
	// OnFatal is called (once per event) when the server must stop (seed
	// 001 "When the server stops"): a handler panicked ("panic"), a write
	// returned RecoveryRequired ("recovery_required": durable effects in
	// storage this process has not adopted), or a write failed opaquely
	// ("opaque_failure": no typed evidence of what it did). Admission is
	// already closed for every graph when it runs; the caller exits 2.
	OnFatal func(reason string)
	// AutoOptimize runs the automatic compaction (optimize.Auto) of a
	// graph's branch in the background after each write to it, as the CLI
	// does after its writes. Close stops it.
	AutoOptimize bool
	// AutoOptimizeThreshold is Auto's small-fragment threshold (<= 0: the
	// default, optimize.DefaultAutoThreshold).
	AutoOptimizeThreshold int
	// UI serves the web console (server/ui) at /ui/: public static
	// assets that call the authenticated routes with the user's token.
	UI bool
	// Registry gets the server's metrics (metrics.go) and is served at
	// GET /metrics; nil: a registry of the server's own (NewRegistry).
	Registry *prometheus.Registry
	// TracerProvider, when set, traces every request (tracing.go): a span
	// per request under its route name, its storage requests and engine
	// phases as children, a client's traceparent continued. Nil: no spans
	// (a client's trace id still reaches the log line and the error
	// envelope). The caller owns it (and flushes it on stop).
	TracerProvider trace.TracerProvider
}

// Server serves the API.
type Server struct {
	cfg    Config
	graphs map[string]*graph.Graph
	ids    []string
	adm    *admission
	// heavy is the lane heavy queries share (Limits.HeavyReads);
	// graphBudget each graph's budget overrides.
	heavy       *lane
	graphBudget map[string]graph.Budget
	mux         *http.ServeMux
	// handler is mux behind the open-mode guard.
	handler http.Handler
	mcp     map[string]http.Handler // per graph: its stored queries are its tools
	// queries are each graph's stored queries.
	queries map[string]*StoredQueries
	policy  *Policy
	log     *slog.Logger

	// storage is each graph's storage kind (Graph.StorageKind).
	storage map[string]string
	// compactors run each graph's automatic compaction (AutoOptimize).
	compactors map[string]*compactor
	// icebergSyncers keep graphs' Iceberg metadata current (IcebergLocation).
	icebergSyncers map[string]*icebergSyncer
	// writesCtx is cancelled by Close: the only cancellation an admitted
	// write sees (admitWrite).
	writesCtx    context.Context
	cancelWrites context.CancelFunc
	// metrics record every request (metrics.go).
	metrics *metrics
	// tracer makes the request spans; nil: tracing is off.
	tracer trace.Tracer
}

// graphIDRE is the rule for graph ids (upstream's).
var graphIDRE = regexp.MustCompile(`^[a-zA-Z0-9-]{1,64}$`)

// ValidGraphID checks a graph id.
func ValidGraphID(id string) error {
	if !graphIDRE.MatchString(id) {
		return fmt.Errorf("graph id %q: use 1 to 64 letters, digits or '-'", id)
	}
	return nil
}

// New builds a server.
func New(cfg Config) (*Server, error) {
	cfg.Limits = cfg.Limits.withDefaults()
	if err := checkAuthz(); err != nil { // a route or tool without its policy declaration
		return nil, err
	}
	if cfg.Build == (buildinfo.Info{}) {
		cfg.Build = buildinfo.Read()
	}
	if cfg.Version == "" {
		cfg.Version = cfg.Build.Version
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Policy == nil {
		cfg.Policy = DefaultPolicy()
	}
	s := &Server{cfg: cfg, graphs: map[string]*graph.Graph{}, storage: map[string]string{}, adm: newAdmission(cfg.Limits, cfg.Actors), mux: http.NewServeMux(), policy: cfg.Policy, log: cfg.Logger,
		heavy: newLane(cfg.Limits.HeavyReads), graphBudget: map[string]graph.Budget{},
		mcp: map[string]http.Handler{}, queries: map[string]*StoredQueries{}}
	s.writesCtx, s.cancelWrites = context.WithCancel(context.Background())
	if cfg.Registry == nil {
		cfg.Registry = NewRegistry()
	}
	m, err := newMetrics(cfg.Registry, s)
	if err != nil {
		return nil, err
	}
	s.metrics = m
	if cfg.TracerProvider != nil {
		s.tracer = cfg.TracerProvider.Tracer(tracerName)
	}
	for _, g := range cfg.Graphs {
		if err := ValidGraphID(g.ID); err != nil {
			return nil, err
		}
		if _, dup := s.graphs[g.ID]; dup {
			return nil, fmt.Errorf("graph id %q appears twice", g.ID)
		}
		s.graphs[g.ID] = g.G
		s.storage[g.ID] = g.StorageKind
		s.queries[g.ID] = g.Queries
		s.graphBudget[g.ID] = g.Budget
		s.ids = append(s.ids, g.ID)
	}
	if cfg.AutoOptimize && !cfg.ReadOnly {
		s.compactors = map[string]*compactor{}
		for _, g := range cfg.Graphs {
			id := g.ID
			s.compactors[id] = newCompactor(g.G, id, cfg.AutoOptimizeThreshold, cfg.Logger, func(cause string) { s.stop(cause, id) })
			s.compactors[id].observe(s.metrics.compaction)
		}
	}
	if !cfg.ReadOnly {
		s.icebergSyncers = map[string]*icebergSyncer{}
		for _, g := range cfg.Graphs {
			if g.IcebergLocation != "" {
				s.icebergSyncers[g.ID] = newIcebergSyncer(g.G, g.ID, g.IcebergLocation, cfg.Logger)
			}
		}
	}
	sort.Strings(s.ids)
	for _, id := range s.ids {
		s.mcp[id] = s.newMCP(id)
	}
	s.mountIceberg()
	for _, rt := range Routes() {
		s.mux.Handle(rt.Pattern(), s.wrap(rt))
	}
	// The MCP endpoint is POST only (stateless: no SSE stream to GET, no
	// session to DELETE).
	for _, m := range []string{"GET", "DELETE"} {
		s.mux.HandleFunc(m+" /graphs/{graph_id}/mcp", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", "POST")
			writeFailure(w, fail(http.StatusMethodNotAllowed, api.CodeMethodNotAllowed, "the MCP endpoint is stateless: POST JSON-RPC messages to it"))
		})
	}
	if cfg.UI {
		if err := s.mountUI(); err != nil {
			return nil, err
		}
	}
	s.mountMetrics()
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		defer s.metrics.request(api.Route{}, r.Method, &statusWriter{status: http.StatusNotFound}, 0)
		writeFailure(w, fail(http.StatusNotFound, api.CodeNotFound, "no such route: %s %s (see GET /openapi.json)", r.Method, r.URL.Path))
	})
	s.handler = s.openModeGuard(s.mux)
	return s, nil
}

// Handler is the server's HTTP handler: the routes behind the open-mode
// guard (origin.go). Each request starts with no write deadline: an
// answer's deadline is set when it starts (Limits.WriteTimeout) or, for a
// stream, by its progress (Limits.StreamIdle), and net/http does not reset
// it between the requests of one connection.
//
// A request's body is read within Limits.BodyTimeout from the start of the
// request, whatever route it reaches and before any token is checked: an
// answer written without reading the body (401, 404, the Iceberg catalog,
// the console's files) leaves net/http draining it, and a body trickled a
// byte at a time would hold the connection for ever. A route that reads a
// streamed body moves the deadline on with its progress (prepare); such an
// answer also closes the connection (Connection: close), so the client
// learns the rest of its body is not wanted.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		_ = rc.SetWriteDeadline(time.Time{})
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			// Lifted: net/http watches an idle connection for a disconnect
			// with a read this deadline would end (prepare says why).
			_ = rc.SetReadDeadline(time.Time{})
			s.handler.ServeHTTP(w, r)
			return
		}
		_ = rc.SetReadDeadline(time.Now().Add(s.cfg.Limits.BodyTimeout))
		body := &eofBody{ReadCloser: r.Body}
		r.Body = body
		s.handler.ServeHTTP(&earlyRefusal{ResponseWriter: w, body: body}, r)
	})
}

// eofBody records whether a request body was read to its end.
type eofBody struct {
	io.ReadCloser
	eof bool
}

func (b *eofBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

// earlyRefusal closes the connection after an error answer written
// before the request's body was read to its end.
type earlyRefusal struct {
	http.ResponseWriter
	body    *eofBody
	started bool
}

func (w *earlyRefusal) WriteHeader(code int) {
	if !w.started {
		w.started = true
		if code >= 400 && !w.body.eof {
			w.Header().Set("Connection", "close")
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *earlyRefusal) Write(b []byte) (int, error) {
	w.started = true
	return w.ResponseWriter.Write(b)
}

func (w *earlyRefusal) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Backstop timeouts of HTTPServer: the handler sets each request's own
// deadlines (Handler, prepare, answering); these bound what happens
// before it runs and between requests.
const (
	// ReadHeaderTimeout bounds reading a request's headers.
	ReadHeaderTimeout = 10 * time.Second
	// IdleTimeout closes a keep-alive connection without a request.
	IdleTimeout = 2 * time.Minute
	// MaxHeaderBytes bounds a request's headers (431 beyond).
	MaxHeaderBytes = 64 << 10
)

// HTTPServer is the http.Server that serves s (what omnigraph serve
// runs): the header, idle and whole-request timeouts and the header size
// bound are a backstop to the deadlines Handler sets per request.
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: ReadHeaderTimeout,
		// From the request's first byte until Handler sets its own.
		ReadTimeout:    ReadHeaderTimeout + s.cfg.Limits.BodyTimeout,
		IdleTimeout:    IdleTimeout,
		MaxHeaderBytes: MaxHeaderBytes,
		ErrorLog:       slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}

// answering bounds the time the answer about to be written may take.
func (s *Server) answering(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.cfg.Limits.WriteTimeout))
}

// CloseAdmission refuses every later request, /healthz included, with 503
// server_stopping and reason (StopShutdown for an ordered stop, or the
// cause the caller's OnFatal got); in-flight requests run on. The first
// reason stays.
func (s *Server) CloseAdmission(reason string) { s.adm.close(reason) }

// Close cancels the writes still in flight (those the drain did not
// wait for) and stops the background work (automatic compaction),
// cancelling a run in flight, and waits for it. Call it after the HTTP
// server drained and before the writer lock is released.
func (s *Server) Close() {
	s.cancelWrites()
	for _, c := range s.compactors {
		c.close()
	}
	for _, y := range s.icebergSyncers {
		y.close()
	}
}

// wrote notes a successful write to branch of the request's graph.
func (r *request) wrote(branch string) {
	if c := r.s.compactors[r.graphID]; c != nil {
		c.after(branch)
	}
	r.icebergAfter(branch)
}

// request is what a handler sees.
type request struct {
	*http.Request
	w       http.ResponseWriter
	s       *Server
	graphID string
	g       *graph.Graph
	actor   string // "" in open mode
	// admitted: the request took a write slot (it is a write that reached
	// the engine), so a failure of it may stop the server (stopOn).
	admitted bool
	// readAdmitted: the request (or tool call) holds its read slot.
	readAdmitted bool
	// done runs once the answer is written (a read's slot is held until
	// then); shared by the copies an MCP tool call makes.
	done *[]func()
}

// onDone runs f once the request's answer is written (at once when the
// request has no such end, as in a direct call).
func (r *request) onDone(f func()) {
	if r.done == nil {
		f()
		return
	}
	*r.done = append(*r.done, f)
}

// statusWriter records the status for the request log; for a streamed
// answer (idle > 0) it bounds each write by the progress deadline, so a
// reader that stops reading is cut and its read slot freed.
type statusWriter struct {
	http.ResponseWriter
	status int
	class  string
	// failure is the envelope of a failed answer (writeFailure), which
	// the metrics read.
	failure *api.ErrorOutput
	rc      *http.ResponseController
	idle    time.Duration
	// traceID is the request's trace (tracing.go), put in its error
	// envelope; "": none.
	traceID string
}

func (w *statusWriter) progress() {
	if w.idle > 0 {
		_ = w.rc.SetWriteDeadline(time.Now().Add(w.idle))
	}
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.progress()
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.progress()
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// wrap runs one route: panic containment, the request log line, auth
// (401), graph resolution (400/404), read-only refusal (403), body limits
// and the handler. Writes take an admission slot inside the handler, after
// the body is decoded and before any engine work.
func (s *Server) wrap(rt Route) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, hr *http.Request) {
		start := time.Now()
		hr, span := s.startRequest(rt, hr)
		w := &statusWriter{ResponseWriter: rw, traceID: span.traceID}
		var done []func()
		req := &request{Request: hr, w: w, s: s, done: &done}
		defer func() {
			// After the answer (or the cut): slots held until it is sent.
			defer func() {
				for i := len(done) - 1; i >= 0; i-- {
					done[i]()
				}
			}()
			p := recover()
			if p == http.ErrAbortHandler {
				// A streamed answer cut short on purpose (an export that
				// failed after its first bytes): not a crash. Logged
				// below, then net/http drops the connection.
				defer panic(p)
			} else if p != nil {
				f := s.panicked(rt.OperationID, req.graphID)
				if w.status == 0 {
					w.class = f.Body.Class
					s.answering(w)
					writeFailure(w, f)
				}
			}
			actor := req.actor
			if actor == "" {
				actor = "anonymous"
			}
			attrs := []any{"route", rt.OperationID, "method", hr.Method, "status", w.status, "actor", actor,
				"duration_ms", float64(time.Since(start).Microseconds()) / 1000}
			if req.graphID != "" {
				attrs = append(attrs, "graph", req.graphID)
			}
			if w.class != "" {
				attrs = append(attrs, "failure_class", w.class)
			}
			if span.traceID != "" {
				attrs = append(attrs, "trace_id", span.traceID)
			}
			s.log.Info("request", attrs...)
			span.end(req, w, actor)
			s.metrics.request(rt.Route, hr.Method, w, time.Since(start))
		}()
		if f := s.prepare(rt, req); f != nil {
			w.class = f.Body.Class
			s.answering(w)
			writeFailure(w, f)
			return
		}
		// What the route's table entry declares (api.Route), applied here
		// for every handler.
		if rt.Answer == api.AnswerStream {
			w.rc, w.idle = http.NewResponseController(rw), s.cfg.Limits.StreamIdle
		}
		if rt.Admission == api.AdmitRead {
			if err := req.admitRead(); err != nil {
				f := MapError(err, req.graphID)
				w.class = f.Body.Class
				s.answering(w)
				writeFailure(w, f)
				return
			}
		}
		var budget *routeBudget
		if rt.Budget {
			budget = s.routeBudget(req)
			defer budget.cancel()
		}
		status, body, err := rt.handle(req)
		if lb, ok := req.Body.(*limitedBody); ok && lb.hit && err != nil {
			// The body was cut at the limit: whatever the engine made of
			// the truncated input (a parse error), the answer is 413.
			err = tooLarge(lb.resource, lb.limit, 0)
		}
		if err != nil && budget != nil {
			err = budget.exceeded(err)
		}
		if err != nil {
			f := s.stopOn(req, err, MapError(err, req.graphID))
			w.class = f.Body.Class
			if f.Status >= 500 && w.class != "" {
				s.log.Warn("request failed", "route", rt.OperationID, "status", f.Status, "failure_class", w.class)
			}
			s.answering(w)
			writeFailure(w, f)
			return
		}
		if body == nil {
			return
		}
		b, f := s.encodeAnswer(body, req.admitted)
		if f != nil {
			w.class = f.Body.Class
			s.answering(w)
			writeFailure(w, f)
			return
		}
		s.answering(w)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(b)
	})
}

// encodeAnswer encodes a JSON answer within the answer cap
// (Limits.AnswerBytes): past it the answer is 413 resource_limit
// answer_bytes, and nothing of it is sent.
// The answer of a write that took its slot is sent whatever its size:
// the write has landed, and a refusal would hide it.
func (s *Server) encodeAnswer(v any, wrote bool) ([]byte, *Failure) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, MapError(fmt.Errorf("encode the answer: %w", err), "")
	}
	if limit := s.cfg.Limits.AnswerBytes; !wrote && int64(buf.Len()) > limit {
		return nil, answerTooLarge(limit, int64(buf.Len()))
	}
	return buf.Bytes(), nil
}

// answerTooLarge is the refusal of an answer over the answer cap.
func answerTooLarge(limit, actual int64) *Failure {
	return &Failure{Status: http.StatusRequestEntityTooLarge, Body: api.ErrorOutput{
		Error: fmt.Sprintf("the answer is %d bytes, more than the %d-byte cap of this server; ask for less (a limit, a type or op filter, a narrower query), or ask the operator to raise it (serve --max-answer-bytes)", actual, limit),
		Code:  api.CodeBadRequest, ResourceLimit: &api.ResourceLimit{Resource: "answer_bytes", Limit: limit, Actual: actual},
	}}
}

// errRouteBudget is the cause of a budgeted route's context once its time
// budget has passed.
var errRouteBudget = errors.New("the route's time budget passed")

// routeBudget bounds a route that declares Budget by the query budget's
// time (plus a grace of a tenth of it, at most a second, so the engine's
// own budget check, where it has one, answers first with its own figures).
type routeBudget struct {
	limit  time.Duration
	start  time.Time
	ctx    context.Context
	cancel context.CancelFunc
}

const routeBudgetGrace = time.Second

func (s *Server) routeBudget(req *request) *routeBudget {
	b := s.budgetFor(req.graphID, req.actor)
	rb := &routeBudget{limit: b.Time, start: time.Now()}
	rb.ctx, rb.cancel = context.WithTimeoutCause(req.Context(), b.Time+min(routeBudgetGrace, b.Time/10), errRouteBudget)
	req.Request = req.Request.WithContext(rb.ctx)
	return rb
}

// exceeded turns the failure of a request its time budget ended into the
// budget's refusal (413 resource_limit time).
func (rb *routeBudget) exceeded(err error) error {
	if _, ok := errBudget(err); ok || !errors.Is(context.Cause(rb.ctx), errRouteBudget) {
		return err
	}
	return &graph.BudgetExceeded{Resource: graph.ResourceTime, Limit: rb.limit.Milliseconds(), Reached: time.Since(rb.start).Milliseconds()}
}

func (s *Server) prepare(rt Route, req *request) *Failure {
	if reason, closed := s.adm.closedFor(); closed && rt.Auth {
		return stopping(reason)
	}
	if rt.Auth && s.cfg.Tokens != nil {
		actor, err := s.cfg.Tokens.Authenticate(req.Request)
		if err != nil {
			return fail(http.StatusUnauthorized, api.CodeUnauthorized, "%s", err.Error())
		}
		req.actor = actor
	}
	if rt.Graph {
		id := req.PathValue("graph_id")
		if err := ValidGraphID(id); err != nil {
			return badRequest("%s", err.Error())
		}
		g, ok := s.graphs[id]
		if !ok {
			return fail(http.StatusNotFound, api.CodeNotFound, "no graph %q on this server (see GET /graphs)", id)
		}
		req.graphID, req.g = id, g
	}
	if rt.Write && s.cfg.ReadOnly {
		return fail(http.StatusForbidden, api.CodeForbidden, "this server is a read-only replica; send writes to the primary")
	}
	q, err := url.ParseQuery(req.URL.RawQuery)
	if err != nil {
		return badRequest("the query string is not well formed: send name=value pairs joined by '&', with %%-escapes; nothing was changed")
	}
	if f := checkQuery(rt, q); f != nil {
		return f
	}
	// A JSON body is read within BodyTimeout; a streamed one must make
	// progress every StreamIdle, however long it takes in all. Once the
	// body is read (or when there is none) the deadline is lifted: net/http
	// watches the idle connection for a disconnect with a read that this
	// deadline would otherwise end, cancelling the request (a long query
	// or export) as if its client had gone.
	limit, idle := s.cfg.Limits.BodyBytes, time.Duration(0)
	timeout := s.cfg.Limits.BodyTimeout
	if rt.Stream {
		limit, idle = s.cfg.Limits.LoadBytes, s.cfg.Limits.StreamIdle
		timeout = idle
	}
	// Not every ResponseWriter supports deadlines (httptest recorders):
	// then the http.Server's own timeouts are all there is.
	rc := http.NewResponseController(req.w)
	if req.Body == nil || req.Body == http.NoBody {
		_ = rc.SetReadDeadline(time.Time{})
	} else {
		_ = rc.SetReadDeadline(time.Now().Add(timeout))
	}
	if req.ContentLength > limit {
		return tooLarge(rt.bodyResource(), limit, req.ContentLength)
	}
	req.Body = &limitedBody{ReadCloser: http.MaxBytesReader(req.w, req.Body, limit), limit: limit, resource: rt.bodyResource(), rc: rc, idle: idle}
	return nil
}

// panicked handles a panic of a route or tool: admission closes, the
// server is told to stop, and the answer is outcome unknown.
func (s *Server) panicked(what, graphID string) *Failure {
	s.log.Error("handler panicked", "route", what, "stack", string(debug.Stack()))
	s.stop(StopPanic, graphID)
	return &Failure{Status: http.StatusInternalServerError, Body: api.ErrorOutput{
		Error: "the request failed inside the server and its outcome is unknown; if it was a write, check GET /graphs/" + graphID + "/commits before sending it again",
		Code:  api.CodeInternal, OutcomeUnknown: &api.OutcomeUnknown{Check: "GET /graphs/" + graphID + "/commits"}, Class: "panic",
	}}
}

// stop closes admission for every graph and tells the caller to stop the
// process (OnFatal, which exits 2).
func (s *Server) stop(cause, graphID string) {
	s.adm.close(cause)
	s.log.Error("the server must stop: admission is closed for every graph and the process exits 2", "cause", cause, "graph", graphID)
	if s.cfg.OnFatal != nil {
		s.cfg.OnFatal(cause)
	}
}

// stopOn stops the server when a failed write leaves this process unsure
// of what storage holds (StopCause), and returns the write's answer. A
// write's other failures, and every read failure, stop nothing: their
// uncertainty, if any, is scoped to the write's own storage keys.
func (s *Server) stopOn(r *request, err error, f *Failure) *Failure {
	if !r.admitted {
		return f
	}
	cause := StopCause(err, f)
	if cause == "" {
		return f
	}
	if cause == StopOpaqueFailure && f.Body.OutcomeUnknown == nil {
		g := *f
		commits := "GET /graphs/" + r.graphID + "/commits"
		g.Body.Error = "the write failed inside the server with no evidence of what it did (failure class " + f.Body.Class + "), so its outcome is unknown and the server stops; check " + commits + " once it has restarted before sending it again"
		g.Body.OutcomeUnknown = &api.OutcomeUnknown{Check: commits}
		f = &g
	}
	s.stop(cause, r.graphID)
	return f
}

// admitWrite takes the actor's and the graph's write slot; a read-only
// replica refuses every write (the HTTP write routes are refused earlier,
// in prepare; MCP tools meet it here).
func (r *request) admitWrite() (func(), error) {
	if r.s.cfg.ReadOnly {
		return nil, fail(http.StatusForbidden, api.CodeForbidden, "this server is a read-only replica; send writes to the primary")
	}
	release, f := r.s.adm.admit(actorOrAnon(r.actor), r.graphID)
	if f != nil {
		return nil, f
	}
	r.admitted = true
	// An admitted write runs to its end whatever its client does: a
	// disconnect or client timeout must not cut a write between its table
	// commits and its publish (that would need recovery, and stop the
	// server). Only the server's own Close cancels it. Its body, if still
	// being read, fails on its own when the client goes.
	// Until its turn in the branch's write queue comes it has prepared
	// nothing, so there the client's disconnect withdraws it
	// (graph.WithQueueWait).
	ctx, cancel := context.WithCancel(graph.WithQueueWait(context.WithoutCancel(r.Context()), r.Context()))
	unhook := context.AfterFunc(r.s.writesCtx, cancel)
	r.Request = r.Request.WithContext(ctx)
	return func() {
		unhook()
		cancel()
		release()
	}, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func writeFailure(w http.ResponseWriter, f *Failure) {
	if sw, ok := w.(*statusWriter); ok {
		if sw.traceID != "" {
			f.Body.TraceID = sw.traceID
		}
		sw.failure = &f.Body
	}
	if f.RetryAfter > 0 {
		w.Header().Set("Retry-After", fmt.Sprint(f.RetryAfter))
	}
	writeJSON(w, f.Status, f.Body)
}

// maxBytesError is a body read past the route's limit.
type maxBytesError struct {
	limit    int64
	resource string
}

func (e *maxBytesError) Error() string {
	return fmt.Sprintf("request body exceeds %d bytes", e.limit)
}

// limitedBody turns http.MaxBytesError into a typed error MapError knows,
// however deep in the engine it surfaces; it moves the read deadline on
// with a streamed body's progress, and lifts it at the end of the body.
type limitedBody struct {
	io.ReadCloser
	limit    int64
	resource string
	hit      bool
	rc       *http.ResponseController
	idle     time.Duration // > 0: a stream, bounded by progress
}

func (b *limitedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		b.hit = true
		return n, &maxBytesError{limit: b.limit, resource: b.resource}
	}
	switch {
	case err == io.EOF && b.rc != nil:
		_ = b.rc.SetReadDeadline(time.Time{})
	case n > 0 && b.idle > 0:
		_ = b.rc.SetReadDeadline(time.Now().Add(b.idle))
	}
	return n, err
}
