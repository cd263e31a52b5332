package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"go.opentelemetry.io/otel/trace"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/logging"
	"github.com/omnigraph-go/omnigraph/backend/poison"
	"github.com/omnigraph-go/omnigraph/backend/tracing"
	"github.com/omnigraph-go/omnigraph/clusterlock"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/internal/buildinfo"
	"github.com/omnigraph-go/omnigraph/lang/gq"
	"github.com/omnigraph-go/omnigraph/manifest"
	"github.com/omnigraph-go/omnigraph/server"
)

// exitServerStopped is the exit code of a server that stopped because it
// can no longer serve safely (seed 001 "When the server stops"): its
// leased writer lock was lost, a handler panicked, a write returned
// RecoveryRequired or failed opaquely (server.StopCause), or its start was
// uncertain (startRefusal). An orchestrator restarts it (docs/server.md).
const exitServerStopped = 2

// serveLogLevel is the server's level when OMNIGRAPH_LOG_LEVEL is unset:
// info, so every request is logged.
const serveLogLevel = "info"

type serveOptions struct {
	t            graphTarget
	listen       string
	id           string
	config       string
	set          func(flag string) bool // the flag was given on the command line
	tokens       string
	policy       string
	readOnly     bool
	noUI         bool
	drainTimeout time.Duration
	limits       server.Limits
	autoOptimize autoOptimizeFlag
	// The query budgets (into limits.Query) and the actors' overrides.
	queryRows                   int64
	queryMemory, queryReadBytes byteSize
	queryTimeout                time.Duration
	actors                      map[string]server.ActorLimits
	// icebergSync forces the background Iceberg sync on, noIcebergSync off;
	// neither: on for a graph that already has Iceberg metadata.
	icebergSync, noIcebergSync bool
	// queries are the stored queries of the --store graph.
	queries string
	// maxConnections bounds the connections served at once (0: sized for
	// the machine, defaultMaxConnections).
	maxConnections int
	// metricsListen is a listener serving only GET /metrics ("": none).
	metricsListen string
	// metrics is the process's registry (serve_metrics.go), set by runServe.
	metrics *serveMetrics
	// tracer is the process's tracer provider (serve_tracing.go), nil
	// when tracing is off; set by runServe.
	tracer trace.TracerProvider
}

func init() {
	register(func(a *app) *cobra.Command {
		var o serveOptions
		c := &cobra.Command{
			Use:   "serve (--store URL [--id NAME] | --config FILE) [--listen ADDR] [--tokens FILE] [--policy FILE] [--read-only] [--no-ui]",
			Short: "Serve graphs over HTTP (the API of docs/server.md)",
			Long: "Serve the graph at --store over HTTP under /graphs/ID/ (ID is --id, default\n" +
				"\"default\"), or the graphs of --config FILE (a JSON file: graph ids to storage\n" +
				"URLs, listen address, tokens, policy, groups, limits; flags given beside it win).\n" +
				"With --tokens FILE every graph route needs a bearer token from the file\n" +
				"('omnigraph token add'); without it the server runs in open mode and\n" +
				"refuses to listen on anything but a loopback address. --policy FILE is a\n" +
				"Cedar policy evaluated on every route and MCP tool call (403 when denied);\n" +
				"without it every authenticated request is allowed. A read-write server\n" +
				"holds the graph's writer lock for its whole life (leased with heartbeats on\n" +
				"s3:// and gs://); --read-only takes no lock and serves reads of the latest\n" +
				"head. The web console is at /ui/ (its files are public; every data call\n" +
				"it makes needs the same token and policy); --no-ui turns it off.\n" +
				"Prints OMNIGRAPH_LISTEN_ADDR=host:port on stdout once it serves.\n" +
				"Every query runs under a budget (--max-query-rows, --max-query-memory,\n" +
				"--query-timeout, --max-query-read-bytes; per graph and per actor in --config):\n" +
				"past one it is stopped (or refused on its estimate) with 413. Reads that can\n" +
				"be large take a slot of their actor and of the server (429 past\n" +
				"--max-reads-per-actor or --max-reads); heavy queries share --max-heavy-reads.\n" +
				"SIGTERM drains in-flight requests (up to --drain-timeout), releases the lock\n" +
				"and exits 0. A lost lease, a handler panic, a write answered\n" +
				"recovery_required or failing opaquely, or an uncertain start exits 2.",
			Args: cobra.NoArgs,
			RunE: func(c *cobra.Command, args []string) error {
				o.set = c.Flags().Changed
				return runServe(c.Context(), a, o)
			},
		}
		o.t.addStore(c)
		o.t.addExternalBlobs(c)
		c.Flags().StringVar(&o.config, "config", "", "a JSON file naming several graphs (id to storage URL) and the listen address, tokens, policy, groups and limits (docs/server.md); flags given beside it win")
		c.Flags().StringVar(&o.listen, "listen", "127.0.0.1:8080", "address to listen on (port 0 picks a free port)")
		c.Flags().StringVar(&o.id, "id", "default", "the graph's id in /graphs/ID/")
		c.Flags().StringVar(&o.tokens, "tokens", "", "tokens file of hashed bearer secrets (see 'omnigraph token add'); none means open mode on loopback only")
		c.Flags().StringVar(&o.policy, "policy", "", "Cedar policy file deciding each actor's actions (docs/server.md); none allows every authenticated request")
		c.Flags().StringVar(&o.queries, "queries", "", "stored queries of the graph: a .gq file or a directory of .gq files, checked against the schema at start (docs/server.md); with --config, give \"queries\" per graph")
		c.Flags().BoolVar(&o.readOnly, "read-only", false, "a read replica: no lock, reads only, every write is refused with 403")
		c.Flags().BoolVar(&o.noUI, "no-ui", false, "do not serve the web console at /ui/ (docs/console.md)")
		c.Flags().BoolVar(&o.icebergSync, "iceberg-sync", false, "keep the Iceberg metadata current in the background after each write (default: only for a graph that has Iceberg metadata, i.e. after one 'omnigraph iceberg sync')")
		c.Flags().BoolVar(&o.noIcebergSync, "no-iceberg-sync", false, "never sync Iceberg metadata in the background")
		c.Flags().DurationVar(&o.drainTimeout, "drain-timeout", 25*time.Second, "on SIGTERM, how long in-flight requests may finish")
		c.Flags().IntVar(&o.limits.WritesPerActor, "max-writes-per-actor", server.DefaultWritesPerActor, "in-flight writes one actor may have (more get 429)")
		c.Flags().IntVar(&o.limits.WritesPerGraph, "max-writes-per-graph", server.DefaultWritesPerGraph, "in-flight writes the graph may have (more get 429)")
		c.Flags().Int64Var(&o.limits.BodyBytes, "max-body-bytes", server.DefaultBodyBytes, "largest JSON request body (more gets 413)")
		c.Flags().Int64Var(&o.limits.LoadBytes, "max-load-bytes", server.DefaultLoadBytes, "largest load/ndjson body (more gets 413)")
		c.Flags().Int64Var(&o.limits.AnswerBytes, "max-answer-bytes", server.DefaultAnswerBytes, "largest JSON answer of a read route or MCP tool (more gets 413 resource_limit answer_bytes; streamed answers are bounded by progress instead)")
		o.queryMemory, o.queryReadBytes = server.DefaultQueryMemory, server.DefaultQueryReadBytes
		c.Flags().Int64Var(&o.queryRows, "max-query-rows", server.DefaultQueryRows, "rows one query (or a mutation's read phase) may produce in all (more gets 413)")
		c.Flags().Var(&o.queryMemory, "max-query-memory", "memory one query may materialise, e.g. 2GiB (more gets 413)")
		c.Flags().DurationVar(&o.queryTimeout, "query-timeout", server.DefaultQueryTime, "how long one query may run, waiting for a heavy slot included (longer gets 413)")
		c.Flags().Var(&o.queryReadBytes, "max-query-read-bytes", "bytes one query may read from storage, e.g. 16GiB (more gets 413)")
		c.Flags().IntVar(&o.limits.ReadsPerActor, "max-reads-per-actor", server.DefaultReadsPerActor, "in-flight reads (query, export, commit changes) one actor may have (more get 429)")
		c.Flags().IntVar(&o.limits.Reads, "max-reads", server.DefaultReads, "in-flight reads the server may have (more get 429)")
		c.Flags().IntVar(&o.limits.HeavyReads, "max-heavy-reads", 0, "heavy queries that run at once; the others wait (0: half the cores)")
		c.Flags().IntVar(&o.maxConnections, "max-connections", 0, "connections served at once; more wait to be accepted, with a warning in the log (0: half the open-file limit)")
		c.Flags().StringVar(&o.metricsListen, "metrics-listen", "", "also serve GET /metrics, without a token, on this address (an internal scrape network); it serves nothing else (docs/operations.md)")
		o.autoOptimize.add(c)
		return c
	})
}

// isLoopback reports whether a listen address binds only loopback.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func runServe(ctx context.Context, a *app, o serveOptions) (err error) {
	level := os.Getenv(logging.EnvLevel)
	if level == "" {
		level = serveLogLevel
	}
	log, err := logging.New(a.stderr, os.Getenv(logging.EnvFormat), level)
	if err != nil {
		return usageError{msg: err.Error()}
	}
	graphs := []servedGraph{{id: o.id, url: o.t.store, queries: o.queries}}
	var groups map[string][]string
	if o.config != "" {
		if o.t.store != "" || o.set("id") || o.set("queries") {
			return usagef("--config names the graphs: drop --store, --id and --queries (give \"queries\" per graph in the file)")
		}
		cfg, err := readServeConfig(o.config)
		if err != nil {
			return err
		}
		graphs, groups = cfg.apply(&o)
	}
	for _, sg := range graphs {
		if err := server.ValidGraphID(sg.id); err != nil {
			return usageError{msg: err.Error()}
		}
	}
	if _, err := o.t.blobPolicy(); err != nil {
		return err
	}
	if o.queryRows <= 0 || o.queryMemory <= 0 || o.queryTimeout <= 0 || o.queryReadBytes <= 0 {
		return usagef("--max-query-rows, --max-query-memory, --query-timeout and --max-query-read-bytes are positive: a server budget can be raised, not switched off")
	}
	if o.maxConnections < 0 {
		return usagef("--max-connections is 0 (half the open-file limit) or more")
	}
	if o.maxConnections == 0 {
		o.maxConnections = defaultMaxConnections()
	}
	if o.limits.ReadsPerActor <= 0 || o.limits.Reads <= 0 || o.limits.HeavyReads < 0 {
		return usagef("--max-reads-per-actor and --max-reads are positive, --max-heavy-reads is 0 (half the cores) or more")
	}
	o.limits.Query = graph.Budget{Rows: o.queryRows, Memory: int64(o.queryMemory), Time: o.queryTimeout, ReadBytes: int64(o.queryReadBytes)}
	var tokens *server.Tokens
	if o.tokens != "" {
		b, err := os.ReadFile(o.tokens)
		if err != nil {
			return fmt.Errorf("read the tokens file: %w", err)
		}
		f, err := server.ParseTokens(b)
		if err != nil {
			return err
		}
		if len(f.Tokens) == 0 {
			return usagef("the tokens file holds no token; add one with 'omnigraph token add ACTOR --tokens %s'", o.tokens)
		}
		tokens = server.NewTokens(f)
	} else {
		if !isLoopback(o.listen) {
			return usagef("no --tokens file, so the server would run in open mode (no authentication); open mode listens on loopback only (127.0.0.1, ::1 or localhost), not %q: give --tokens FILE ('omnigraph token add')", o.listen)
		}
		if o.metricsListen != "" && !isLoopback(o.metricsListen) {
			return usagef("open mode listens on loopback only, --metrics-listen too, not %q: give --tokens FILE or a loopback address", o.metricsListen)
		}
		log.Warn("OPEN MODE: no --tokens file, so every request is served without authentication; listening on loopback only", "listen", o.listen)
	}
	policy, err := loadPolicy(o.policy)
	if err != nil {
		return err
	}
	if len(groups) > 0 {
		policy = policy.WithGroups(groups)
	}
	log.Info("policy", "source", policy.Name())

	for i, sg := range graphs {
		if sg.url == "" {
			return usagef("no graph location: pass --store URL")
		}
		if isProcessLocal(sg.url) && !processLocalStores {
			return errProcessLocalStore
		}
		// The files are read before any lock is taken; they are checked
		// against the graph's schema once it is open.
		if sg.queries != "" {
			files, err := readQueryFiles(sg.queries)
			if err != nil {
				return err
			}
			graphs[i].files = files
		}
	}
	// fatal gets the reason the server must stop; a send never blocks
	// (the first reason is enough).
	fatalc := make(chan string, 1)
	fatal := func(reason string) {
		select {
		case fatalc <- reason:
		default:
		}
	}
	mode := "read-write"
	if o.readOnly {
		mode = "read-only"
	}
	var closers []func() error
	defer func() {
		for i := len(closers) - 1; i >= 0; i-- {
			if cerr := closers[i](); cerr != nil && err == nil {
				err = cerr
			}
		}
	}()
	if o.metrics, err = newServeMetrics(); err != nil {
		return err
	}
	if _, err := tracingWanted(os.Getenv); err != nil {
		return usagef("%v", err)
	}
	tp, err := newTracerProvider(ctx, buildinfo.Read().Version)
	if err != nil {
		return err
	}
	if tp != nil {
		o.tracer = tp
		// Registered first, so it runs last: the spans of the shutdown
		// and of closing the graphs are flushed too.
		closers = append([]func() error{func() error {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			return tp.Shutdown(sctx)
		}}, closers...)
	}
	var served []server.Graph
	for _, sg := range graphs {
		g, closeFn, err := openServed(ctx, log, o, sg, fatal)
		if err != nil {
			err = startRefusal(log, sg.id, err)
			if len(graphs) > 1 {
				err = fmt.Errorf("graph %q: %w", sg.id, err)
			}
			return err
		}
		closers = append(closers, closeFn)
		loc, err := icebergServeLocation(ctx, o, sg.url, g)
		if err != nil {
			return err
		}
		kind := "unknown"
		if u, err := backend.ParseURL(sg.url); err == nil {
			kind = u.Scheme
		}
		stored, err := sg.storedQueries(ctx, log, g)
		if err != nil {
			if len(graphs) > 1 {
				err = fmt.Errorf("graph %q: %w", sg.id, err)
			}
			return err
		}
		served = append(served, server.Graph{ID: sg.id, G: g, StorageKind: kind, IcebergLocation: loc, Queries: stored, Budget: sg.budget})
	}

	build := buildinfo.Read()
	srv, err := server.New(server.Config{
		Graphs:   served,
		Tokens:   tokens,
		Policy:   policy,
		ReadOnly: o.readOnly,
		Limits:   o.limits,
		Actors:   o.actors,
		Logger:   log,
		Version:  build.Version,
		Build:    build,
		OnFatal:  fatal,
		// In the background after each write, as the CLI does after its own.
		AutoOptimize: o.autoOptimize.enabled(),
		UI:           !o.noUI,
		Registry:     o.metrics.reg,
		// An untyped nil when off: the server checks for nil.
		TracerProvider: o.tracerProvider(),
	})
	if err != nil {
		return err
	}
	// Registered after the lock releases, so it runs before them: a
	// compaction in flight stops while the lock is still held.
	defer srv.Close()
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.listen, err)
	}
	ln = server.LimitListener(ln, o.maxConnections, log)
	hs := srv.HTTPServer()
	served2 := make(chan error, 1)
	go func() { served2 <- hs.Serve(ln) }()
	if o.metricsListen != "" {
		mln, err := net.Listen("tcp", o.metricsListen)
		if err != nil {
			return fmt.Errorf("listen on %s (--metrics-listen): %w", o.metricsListen, err)
		}
		// The same backstop timeouts as the main listener.
		ms := srv.HTTPServer()
		ms.Handler = srv.MetricsHandler()
		go func() { _ = ms.Serve(mln) }()
		defer ms.Close()
		log.Info("serving metrics", "listen", mln.Addr().String())
		fmt.Fprintf(a.stdout, "OMNIGRAPH_METRICS_ADDR=%s\n", mln.Addr())
	}
	ids := make([]string, len(graphs))
	for i, sg := range graphs {
		ids[i] = sg.id
	}
	log.Info("serving", "listen", ln.Addr().String(), "graphs", strings.Join(ids, ","), "mode", mode, "auth", tokens != nil, "ui", !o.noUI, "max_connections", o.maxConnections)
	fmt.Fprintf(a.stdout, "OMNIGRAPH_LISTEN_ADDR=%s\n", ln.Addr())

	select {
	case <-ctx.Done():
		srv.CloseAdmission(server.StopShutdown)
		log.Info("stopping: draining in-flight requests", "drain_timeout", o.drainTimeout.String())
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.drainTimeout)
		defer cancel()
		if err := hs.Shutdown(dctx); err != nil {
			hs.Close()
			log.Warn("drain deadline passed; cut the remaining connections")
		}
		log.Info("stopped")
		return nil
	case reason := <-fatalc:
		srv.CloseAdmission(reason)
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		if hs.Shutdown(dctx) != nil {
			hs.Close()
		}
		return exitCodeError{code: exitServerStopped, err: fmt.Errorf("the server stopped (%s): see the log; restart it", reason)}
	case err := <-served2:
		return fmt.Errorf("serve: %w", err)
	}
}

// servedGraph is one graph of the server: its id, storage URL, query
// budget overrides and the path of its stored queries ("" for none).
type servedGraph struct {
	id, url, queries string
	files            []server.QueryFile
	budget           graph.Budget
}

// storedQueries checks the graph's stored queries against the schema of
// its main branch (none: nil). A refused set stops the start, naming
// every problem; warnings are logged.
func (sg servedGraph) storedQueries(ctx context.Context, log *slog.Logger, g *graph.Graph) (*server.StoredQueries, error) {
	if len(sg.files) == 0 {
		return nil, nil
	}
	cat, err := g.Schema(ctx, "main")
	if err != nil {
		return nil, err
	}
	set, problems, err := compileStored(sg.files, cat)
	for _, p := range problems {
		if p.Severity != gq.SeverityError {
			log.Warn("stored query warning", "graph", sg.id, "file", p.File, "query", p.Query, "code", p.Code, "message", p.Message)
		}
	}
	if err != nil {
		return nil, err
	}
	log.Info("stored queries", "graph", sg.id, "queries", set.Len())
	return set, nil
}

// openServed opens one served graph: the store, the writer lock of a
// read-write server (leased on s3:// and gs://, whose loss calls fatal),
// the fencing probe and the graph. The returned close releases them in
// reverse order; it is nil when err is not.
func openServed(ctx context.Context, log *slog.Logger, o serveOptions, sg servedGraph, fatal func(string)) (_ *graph.Graph, closeFn func() error, err error) {
	raw, err := backend.Open(ctx, sg.url)
	if err != nil {
		return nil, nil, err
	}
	if wrapServedStore != nil {
		raw = wrapServedStore(raw)
	}
	store := logging.Wrap(poison.Wrap(tracing.Wrap(o.metrics.wrap(raw), o.tracerProvider())), log)
	release := func() error { return nil }
	defer func() {
		if err != nil {
			release()
			store.Close()
		}
	}()
	writeStore := store
	if !o.readOnly {
		exists, err := manifest.New(store).Exists(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("check for a graph: %w", err)
		}
		if !exists {
			return nil, nil, graph.ErrNoGraph
		}
		t := o.t
		t.store = sg.url
		lo := t.lockOptions(withLogger(ctx, log), "serve")
		lo.Wait = 0
		u, err := backend.ParseURL(sg.url)
		if err != nil {
			return nil, nil, err
		}
		if clusterlock.LeasedScheme(u.Scheme) {
			lease, err := clusterlock.LeaseFromEnv(os.Getenv)
			if err != nil {
				return nil, nil, usageError{msg: err.Error()}
			}
			lo.Lease = lease
			lo.OnLost = func(err error) {
				log.Error("the writer lock's lease was lost; admission is closed and the server exits 2", "graph", sg.id, "reason", lostReason(err))
				fatal(server.StopLeaseLost)
			}
			// AcquireLeased returns once the first heartbeat is answered,
			// and refuses to start otherwise.
			l, err := clusterlock.AcquireLeased(ctx, store, lo)
			if err != nil {
				return nil, nil, lockRefusal(err)
			}
			writeStore = l.Guard(store)
			var held atomic.Bool
			held.Store(true)
			o.metrics.lockGauges(sg.id, l, &held)
			release = func() error { held.Store(false); return releaseWith(ctx, l.Release) }
			log.Info("holding the leased writer lock", "graph", sg.id, "lock_id", l.ID(), "lease_seconds", int(lease/time.Second))
		} else {
			l, err := clusterlock.Acquire(ctx, store, lo)
			if err != nil {
				return nil, nil, lockRefusal(err)
			}
			var held atomic.Bool
			held.Store(true)
			o.metrics.lockGauges(sg.id, nil, &held)
			release = func() error { held.Store(false); return releaseWith(ctx, l.Release) }
			log.Info("holding the writer lock", "graph", sg.id, "lock_id", l.ID())
		}
		if _, err := graph.ProbeFencing(ctx, writeStore); err != nil {
			return nil, nil, fmt.Errorf("fencing probe: %w", err)
		}
	}
	// A read-write server holds the writer lock for its life (leased
	// behind Guard, or unleased): its handle is the only writer.
	pol, err := o.t.blobPolicy()
	if err != nil {
		return nil, nil, err
	}
	octx, endOpen := o.openSpan(ctx, sg.id)
	g, err := graph.Open(octx, writeStore, graph.OpenOptions{ReadOnly: o.readOnly, ExclusiveWriter: !o.readOnly, AlwaysProbe: true, ExternalBlobs: pol})
	if err != nil {
		endOpen(nil, err)
		return nil, nil, err
	}
	endOpen(g.OpenRecovered(), nil)
	o.metrics.recovered(log, sg.id, g.OpenRecovered())
	if afterWriteOpen != nil && !o.readOnly {
		afterWriteOpen(ctx, g)
	}
	if !o.readOnly {
		// The first write finds its schema, table versions and key index
		// directories cached, read in parallel before admission opens
		// (issue 37). A failed read is the first write's to make again.
		if err := g.WarmWrites(ctx); err != nil {
			log.Warn("could not warm the graph for writes; the first write reads what it needs", "graph", sg.id, "failure_class", warmClass(err))
		}
	}
	return g, func() error {
		g.Close()
		rerr := release()
		store.Close()
		return releaseErr(rerr)
	}, nil
}

// warmClass names a warm-up failure for the log without its text (which
// may name storage paths).
func warmClass(err error) string {
	if k := backend.KindOf(err); k != backend.KindNone {
		return "storage_" + k.String()
	}
	return "internal"
}

// wrapServedStore, when set (tests only), wraps each served graph's store
// as it is opened, under the server's own wrappers (fault injection at
// startup).
var wrapServedStore func(backend.StorageAdapter) backend.StorageAdapter

// startRefusal is the error of a graph the server could not open. A
// definite refusal keeps its exit code: a usage error, a held lock (3), no
// graph at the location (1), a start cancelled by a signal. Any other
// failure is an uncertain startup (seed 001): the server cannot tell what
// storage holds or whether it owns it (a storage request without a
// definite answer, a recovery intent it could not resolve, a fencing probe
// or first heartbeat that failed), so nothing is served and it exits 2,
// like a server that had to stop; an orchestrator restarts it.
func startRefusal(log *slog.Logger, id string, err error) error {
	var ce exitCodeError
	var ue usageError
	switch {
	case errors.As(err, &ce), errors.As(err, &ue), errors.Is(err, graph.ErrNoGraph),
		errors.Is(err, context.Canceled):
		return err
	}
	class := "internal"
	if k := backend.KindOf(err); k != backend.KindNone {
		class = "storage_" + k.String()
	}
	if isConfiguration(err) {
		// A definite refusal is not an uncertain start (seed 001): the
		// store answered, and will answer the same after a restart.
		log.Error("the store refused the server's configuration; it serves nothing and exits 8: fix the store URL or credentials, a restart will not help", "graph", id, "failure_class", class)
		return exitCodeError{code: exitConfiguration, err: fmt.Errorf("the server did not start: %w; %s", err, configurationHint)}
	}
	log.Error("the server could not start with certainty; it serves nothing and exits 2", "graph", id, "failure_class", class)
	return exitCodeError{code: exitServerStopped, err: fmt.Errorf("uncertain startup, the server serves nothing (restart it): %w", err)}
}

// loadPolicy reads a Cedar policy file; "" is the default policy.
func loadPolicy(path string) (*server.Policy, error) {
	if path == "" {
		return server.DefaultPolicy(), nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the policy file: %w", err)
	}
	p, err := server.ParsePolicy(path, b)
	if err != nil {
		return nil, usageError{msg: err.Error()}
	}
	return p, nil
}

// releaseWith runs a lock release on a fresh, bounded context, so a
// SIGTERM that cancelled ctx still lets the lock go.
func releaseWith(ctx context.Context, rel func(context.Context) error) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	return rel(rctx)
}

func lockRefusal(err error) error {
	if errors.Is(err, clusterlock.ErrLockHeld) {
		return exitCodeError{code: exitLockHeld, err: err}
	}
	return err
}

func lostReason(err error) string {
	var le *clusterlock.LostError
	if errors.As(err, &le) {
		return le.Reason
	}
	return "unknown"
}
