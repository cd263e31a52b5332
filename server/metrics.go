package server

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/graph"
)

// MetricsPath is where the Prometheus metrics are served.
const MetricsPath = "/metrics"

// NewRegistry is a metrics registry holding the Go runtime and process
// collectors: what omnigraph serve passes as Config.Registry and to the
// storage wrapper (backend/metrics), so /metrics, the console and the
// logs read one set of numbers.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Route labels of requests no route table names: every label value comes
// from a closed set, so a client sending random paths adds no series.
const (
	routeUnmatched = "unmatched"
	methodOther    = "OTHER"
)

// httpMethods are the method label's values (any other is methodOther).
var httpMethods = map[string]bool{"GET": true, "HEAD": true, "POST": true, "PUT": true, "DELETE": true, "PATCH": true, "OPTIONS": true}

// budgetResources are the query budgets a 413 may name (the kind label of
// the refusal counter); body-size refusals are not query budgets.
var budgetResources = map[string]bool{
	string(graph.ResourceRows): true, string(graph.ResourceMemory): true,
	string(graph.ResourceTime): true, string(graph.ResourceReadBytes): true,
}

// metrics are the server's own collectors (the storage ones are the
// wrapper's, registered by the caller on the same registry).
type metrics struct {
	reg         *prometheus.Registry
	requests    *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	tooMany     *prometheus.CounterVec
	budget      *prometheus.CounterVec
	commits     prometheus.Counter
	conflicts   prometheus.Counter
	unknown     prometheus.Counter
	feedPolls   prometheus.Counter
	compactions *prometheus.CounterVec
	compactTime prometheus.Histogram
}

func newMetrics(reg *prometheus.Registry, s *Server) (*metrics, error) {
	m := &metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "omnigraph_http_requests_total",
			Help: "HTTP requests answered, by route (the route table's operation id), method and status code.",
		}, []string{"route", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "omnigraph_http_request_duration_seconds",
			Help:    "Time from the start of a request to the end of its answer, by route.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"route"}),
		tooMany: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "omnigraph_http_too_many_requests_total",
			Help: "Requests refused with 429, by the slots they lacked (read or write).",
		}, []string{"reason"}),
		budget: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "omnigraph_query_budget_refusals_total",
			Help: "Queries stopped or refused with 413 by a query budget, by the budget's resource.",
		}, []string{"resource"}),
		commits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "omnigraph_commits_published_total",
			Help: "Write requests that succeeded (each published its commit).",
		}),
		conflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "omnigraph_write_conflicts_total",
			Help: "Write requests refused with 409 conflict (a concurrent write won, or a merge conflicted).",
		}),
		unknown: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "omnigraph_write_outcome_unknown_total",
			Help: "Write requests answered outcome_unknown: storage gave no definite answer to a publish.",
		}),
		feedPolls: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "omnigraph_change_feed_polls_total",
			Help: "Change feed polls served (200).",
		}),
		compactions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "omnigraph_compaction_runs_total",
			Help: "Automatic compaction runs after writes, by outcome (compacted, nothing_to_do, yielded, failed, cancelled).",
		}, []string{"outcome"}),
		compactTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "omnigraph_compaction_duration_seconds",
			Help:    "Duration of automatic compaction runs.",
			Buckets: []float64{.01, .05, .1, .5, 1, 5, 10, 30, 60, 300},
		}),
	}
	readsInFlight := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "omnigraph_reads_in_flight",
		Help: "Reads (query, export, commit changes) holding a read slot now.",
	}, func() float64 {
		s.adm.mu.Lock()
		defer s.adm.mu.Unlock()
		return float64(s.adm.reads)
	})
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.tooMany, m.budget, m.commits, m.conflicts,
		m.unknown, m.feedPolls, m.compactions, m.compactTime, readsInFlight} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, r := range []string{"read", "write"} {
		m.tooMany.WithLabelValues(r)
	}
	for r := range budgetResources {
		m.budget.WithLabelValues(r)
	}
	return m, nil
}

// request records one answered request of route (routeUnmatched for
// none). w holds the status and, when it was a failure, its envelope.
func (m *metrics) request(rt api.Route, method string, w *statusWriter, d time.Duration) {
	route := rt.OperationID
	if route == "" {
		route = routeUnmatched
	}
	if !httpMethods[method] {
		method = methodOther
	}
	status := w.status
	if status == 0 {
		status = http.StatusOK
	}
	m.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	m.duration.WithLabelValues(route).Observe(d.Seconds())
	switch {
	case status == http.StatusTooManyRequests:
		reason := "read"
		if rt.Writes() {
			reason = "write"
		}
		m.tooMany.WithLabelValues(reason).Inc()
	case status == http.StatusRequestEntityTooLarge && w.failure != nil && w.failure.ResourceLimit != nil &&
		budgetResources[w.failure.ResourceLimit.Resource]:
		m.budget.WithLabelValues(w.failure.ResourceLimit.Resource).Inc()
	}
	if w.failure != nil && w.failure.Class == "outcome_unknown" {
		m.unknown.Inc()
	}
	if rt.Write {
		switch {
		case status >= 200 && status < 300:
			m.commits.Inc()
		case status == http.StatusConflict:
			m.conflicts.Inc()
		}
	}
	if rt.OperationID == "pollChanges" && status == http.StatusOK {
		m.feedPolls.Inc()
	}
}

// compaction records one automatic compaction run.
func (m *metrics) compaction(outcome string, d time.Duration) {
	m.compactions.WithLabelValues(outcome).Inc()
	m.compactTime.Observe(d.Seconds())
}

// handler serves the registry in the Prometheus text format.
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorLog: nil})
}

// Registry is the registry the server records into (Config.Registry, or
// its own when none was given): the console's numbers read it.
func (s *Server) Registry() *prometheus.Registry { return s.metrics.reg }

// MetricsHandler serves only the metrics, without authentication: what
// omnigraph serve --metrics-listen mounts on its own listener (an internal
// scrape network). On the main listener GET /metrics needs a token like
// any route.
func (s *Server) MetricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET "+MetricsPath, s.metrics.handler())
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeFailure(w, fail(http.StatusNotFound, api.CodeNotFound, "this listener serves only GET %s", MetricsPath))
	})
	return mux
}

// metricsRoute is GET /metrics on the main listener: authenticated in
// token mode, recorded like a route.
var metricsRoute = api.Route{Method: "GET", Path: MetricsPath, OperationID: "metrics", Auth: true, Idempotent: true}

// mountMetrics serves GET /metrics on the main listener.
func (s *Server) mountMetrics() {
	h := s.metrics.handler()
	s.mux.Handle("GET "+MetricsPath, http.HandlerFunc(func(rw http.ResponseWriter, hr *http.Request) {
		start := time.Now()
		w := &statusWriter{ResponseWriter: rw}
		defer func() { s.metrics.request(metricsRoute, hr.Method, w, time.Since(start)) }()
		if s.cfg.Tokens != nil {
			if _, err := s.cfg.Tokens.Authenticate(hr); err != nil {
				writeFailure(w, fail(http.StatusUnauthorized, api.CodeUnauthorized, "%s", err.Error()))
				return
			}
		}
		h.ServeHTTP(w, hr)
	}))
}
