package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/iceberg"
	"github.com/omnigraph-go/omnigraph/manifest"
)

// The read-only Iceberg REST catalog under /iceberg (the REST catalog
// spec's /v1 routes): warehouse = the served graph id (also the path
// prefix), namespaces "nodes" and "edges", tables = type names. It serves
// the metadata `omnigraph iceberg sync` (or the background sync) wrote,
// behind the same bearer tokens and Cedar policy as the API: config and
// the namespaces need read on some branch, the table list read on main,
// a table read on at least one of its branches, and a table's metadata
// holds only the refs (and the snapshots
// they reach) of the branches the caller may read. Every change (create,
// commit, drop, rename) is refused: the graph changes through omnigraph.

// IcebergPrefix is where the catalog is mounted; clients use
// <server>/iceberg as the catalog URI.
const IcebergPrefix = "/iceberg"

// IcebergRoute is one route of the catalog table.
type IcebergRoute struct {
	Method, Path, OperationID string
	handle                    func(*icebergRequest) (any, error)
}

// IcebergRoutes is the catalog's route table: what New mounts, and what
// the tests that guard every route (auth, policy) iterate.
func IcebergRoutes() []IcebergRoute {
	p := IcebergPrefix + "/v1/{prefix}"
	return []IcebergRoute{
		{Method: "GET", Path: IcebergPrefix + "/v1/config", OperationID: "getConfig", handle: icebergConfig},
		{Method: "GET", Path: p + "/namespaces", OperationID: "listNamespaces", handle: icebergNamespaces},
		{Method: "GET", Path: p + "/namespaces/{namespace}", OperationID: "loadNamespaceMetadata", handle: icebergNamespace},
		{Method: "GET", Path: p + "/namespaces/{namespace}/tables", OperationID: "listTables", handle: icebergTables},
		{Method: "GET", Path: p + "/namespaces/{namespace}/tables/{table}", OperationID: "loadTable", handle: icebergLoadTable},
	}
}

// icebergError is the REST catalog spec's error model.
type icebergError struct {
	Error icebergErrorBody `json:"error"`
}

type icebergErrorBody struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    int    `json:"code"`
}

// icebergFail is an answer other than 200.
type icebergFail struct {
	status int
	typ    string
	msg    string
	// oauth: the answer of the token endpoint, in the OAuth error model
	// (RFC 6749 5.2: error, error_description) the spec gives it.
	oauth bool
}

// oauthTokensOp is the token endpoint (POST /v1/oauth/tokens): a client
// configured with a credential asks it before anything else, with no
// bearer token, so it is answered before authentication.
const oauthTokensOp = "oauthTokens"

func (f *icebergFail) Error() string { return f.msg }

func icebergFailf(status int, typ, format string, args ...any) *icebergFail {
	return &icebergFail{status: status, typ: typ, msg: fmt.Sprintf(format, args...)}
}

// readOnlyRefusal is the answer to every change.
func readOnlyRefusal(method, path string) *icebergFail {
	return icebergFailf(http.StatusForbidden, "ForbiddenException",
		"this Iceberg catalog is read-only (%s %s): the graph's tables change through omnigraph (load, mutate, branch merge, schema apply), and its commits reach Iceberg through 'omnigraph iceberg sync'", method, path)
}

type icebergRequest struct {
	*http.Request
	op      string
	s       *Server
	actor   string
	graphID string
	g       *graph.Graph
}

// mountIceberg mounts the catalog's routes and the refusal of everything
// else under /iceberg.
func (s *Server) mountIceberg() {
	for _, rt := range IcebergRoutes() {
		s.mux.Handle(rt.Method+" "+rt.Path, s.icebergWrap(rt.OperationID, rt.handle))
	}
	s.mux.Handle("POST "+IcebergPrefix+"/v1/oauth/tokens", s.icebergWrap(oauthTokensOp, func(r *icebergRequest) (any, error) {
		return nil, &icebergFail{status: http.StatusBadRequest, oauth: true, typ: "invalid_request",
			msg: "this Iceberg catalog issues no OAuth tokens: it takes the omnigraph server's bearer token as is; configure the client with token=<the token> (sent as Authorization: Bearer), not credential"}
	}))
	s.mux.Handle(IcebergPrefix+"/", s.icebergWrap("refused", func(r *icebergRequest) (any, error) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			return nil, icebergFailf(http.StatusNotFound, "NotFoundException", "no such Iceberg catalog route: %s %s", r.Method, r.URL.Path)
		}
		return nil, readOnlyRefusal(r.Method, r.URL.Path)
	}))
}

// icebergWrap runs one catalog route: panic containment, the request log
// line, bearer-token auth, the graph of {prefix}, and the error model.
func (s *Server) icebergWrap(op string, h func(*icebergRequest) (any, error)) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, hr *http.Request) {
		start := time.Now()
		w := &statusWriter{ResponseWriter: rw}
		req := &icebergRequest{Request: hr, s: s, op: op}
		defer func() {
			if p := recover(); p != nil {
				s.log.Error("iceberg catalog handler panicked", "route", op, "stack", string(debug.Stack()))
				if w.status == 0 {
					writeIcebergFail(w, icebergFailf(http.StatusInternalServerError, "InternalServerError", "the request failed inside the server"))
				}
			}
			s.log.Info("request", "route", "iceberg."+op, "method", hr.Method, "status", w.status, "actor", actorOrAnon(req.actor),
				"duration_ms", float64(time.Since(start).Microseconds())/1000)
			s.metrics.request(api.Route{OperationID: "iceberg." + op}, hr.Method, w, time.Since(start))
		}()
		body, err := s.icebergServe(req, h)
		s.answering(w) // a non-streaming answer, as on the other routes
		if err != nil {
			var f *icebergFail
			if !errors.As(err, &f) {
				mf := MapError(err, req.graphID)
				f = icebergFailf(mf.Status, "ServiceFailureException", "%s", mf.Body.Error)
				if mf.Status == http.StatusNotFound {
					f.typ = "NoSuchTableException"
				}
			}
			writeIcebergFail(w, f)
			return
		}
		if hr.Method == http.MethodHead {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		writeJSON(w, http.StatusOK, body)
	})
}

func (s *Server) icebergServe(req *icebergRequest, h func(*icebergRequest) (any, error)) (any, error) {
	if s.adm.isClosed() {
		return nil, icebergFailf(http.StatusServiceUnavailable, "ServiceUnavailableException", "the server is stopping")
	}
	if s.cfg.Tokens != nil && req.op != oauthTokensOp {
		actor, err := s.cfg.Tokens.Authenticate(req.Request)
		if err != nil {
			return nil, icebergFailf(http.StatusUnauthorized, "NotAuthorizedException", "%s", err.Error())
		}
		req.actor = actor
	}
	if p := req.PathValue("prefix"); p != "" {
		if err := req.useGraph(p); err != nil {
			return nil, err
		}
	}
	return h(req)
}

func (r *icebergRequest) useGraph(id string) error {
	if err := ValidGraphID(id); err != nil {
		return icebergFailf(http.StatusBadRequest, "BadRequestException", "warehouse %s", err.Error())
	}
	g, ok := r.s.graphs[id]
	if !ok {
		return icebergFailf(http.StatusNotFound, "NotFoundException", "no warehouse %q: the warehouse is a served graph id (see GET /graphs)", id)
	}
	r.graphID, r.g = id, g
	return nil
}

func writeIcebergFail(w *statusWriter, f *icebergFail) {
	if f.oauth {
		writeJSON(w, f.status, map[string]string{"error": f.typ, "error_description": f.msg})
		return
	}
	writeJSON(w, f.status, icebergError{Error: icebergErrorBody{Message: f.msg, Type: f.typ, Code: f.status}})
}

// mayRead asks the policy whether the caller may read branch.
func (r *icebergRequest) mayRead(branch string) bool {
	return r.s.policy.Authorize(AuthzRequest{Actor: actorOrAnon(r.actor), Graph: r.graphID, Action: ActionRead, Branch: branch}).Allowed
}

// authorizeAny: the routes that reveal no branch (config, the two fixed
// namespaces) need read on some branch of the graph, so a token that may
// read some branches only can use the catalog (every client asks config
// first). A graph-wide or main grant decides it at once; otherwise the
// live branches are listed (one List per 100 names) and asked in turn.
func (r *icebergRequest) authorizeAny() error {
	if r.s.allowed(r.actor, r.graphID, ActionRead) || r.mayRead(manifest.MainBranch) {
		return nil
	}
	bs, err := r.g.Branches(r.Context())
	if err != nil {
		return err
	}
	for _, b := range bs {
		if r.mayRead(b.Name) {
			return nil
		}
	}
	return icebergFailf(http.StatusForbidden, "ForbiddenException", "the policy does not allow actor %q to read any branch of graph %q", actorOrAnon(r.actor), r.graphID)
}

// authorizeMain: listing the tables (main's types) needs read on main.
func (r *icebergRequest) authorizeMain() error {
	if r.mayRead(manifest.MainBranch) {
		return nil
	}
	return icebergFailf(http.StatusForbidden, "ForbiddenException", "the policy does not allow actor %q to read branch %q of graph %q", actorOrAnon(r.actor), manifest.MainBranch, r.graphID)
}

func icebergConfig(r *icebergRequest) (any, error) {
	wh := r.URL.Query().Get("warehouse")
	if wh == "" && len(r.s.ids) == 1 {
		wh = r.s.ids[0]
	}
	if wh == "" {
		return nil, icebergFailf(http.StatusBadRequest, "BadRequestException", "give the warehouse (a served graph id: %s)", strings.Join(r.s.ids, ", "))
	}
	if err := r.useGraph(wh); err != nil {
		return nil, err
	}
	if err := r.authorizeAny(); err != nil {
		return nil, err
	}
	endpoints := []string{}
	for _, rt := range IcebergRoutes()[1:] {
		endpoints = append(endpoints, rt.Method+" /v1/{prefix}"+strings.TrimPrefix(rt.Path, IcebergPrefix+"/v1/{prefix}"))
		if rt.OperationID == "loadNamespaceMetadata" || rt.OperationID == "loadTable" {
			endpoints = append(endpoints, "HEAD /v1/{prefix}"+strings.TrimPrefix(rt.Path, IcebergPrefix+"/v1/{prefix}"))
		}
	}
	return map[string]any{"defaults": map[string]string{}, "overrides": map[string]string{"prefix": wh}, "endpoints": endpoints}, nil
}

// typeNameRE is what a table name must look like (a type name) before it
// names any storage key.
var typeNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

var icebergNamespacesList = []string{iceberg.NamespaceEdges, iceberg.NamespaceNodes}

func icebergNamespaces(r *icebergRequest) (any, error) {
	if err := r.authorizeAny(); err != nil {
		return nil, err
	}
	out := [][]string{}
	if r.URL.Query().Get("parent") == "" {
		for _, ns := range icebergNamespacesList {
			out = append(out, []string{ns})
		}
	}
	return map[string]any{"namespaces": out}, nil
}

func (r *icebergRequest) namespace() (string, error) {
	ns := r.PathValue("namespace")
	for _, n := range icebergNamespacesList {
		if ns == n {
			return ns, nil
		}
	}
	return "", icebergFailf(http.StatusNotFound, "NoSuchNamespaceException", "no namespace %q: the namespaces are nodes and edges", ns)
}

func icebergNamespace(r *icebergRequest) (any, error) {
	if err := r.authorizeAny(); err != nil {
		return nil, err
	}
	ns, err := r.namespace()
	if err != nil {
		return nil, err
	}
	return map[string]any{"namespace": []string{ns}, "properties": map[string]string{}}, nil
}

func icebergTables(r *icebergRequest) (any, error) {
	if err := r.authorizeMain(); err != nil {
		return nil, err
	}
	ns, err := r.namespace()
	if err != nil {
		return nil, err
	}
	snap, err := r.g.Snapshot(r.Context(), manifest.MainBranch)
	if err != nil {
		return nil, err
	}
	type ident struct {
		Namespace []string `json:"namespace"`
		Name      string   `json:"name"`
	}
	out := []ident{}
	for _, p := range snap.Tables() {
		if id, ok := iceberg.IdentOf(p.Key); ok && id.Namespace == ns {
			out = append(out, ident{Namespace: []string{ns}, Name: id.Name})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return map[string]any{"identifiers": out}, nil
}

func icebergLoadTable(r *icebergRequest) (any, error) {
	ns, err := r.namespace()
	if err != nil {
		return nil, err
	}
	name := r.PathValue("table")
	id := iceberg.Ident{Namespace: ns, Name: name}
	if !typeNameRE.MatchString(name) {
		return nil, icebergFailf(http.StatusNotFound, "NoSuchTableException", "no table %q in %s: table names are node and edge type names", name, ns)
	}
	t, err := iceberg.Load(r.Context(), r.g.Store(), id)
	if errors.Is(err, iceberg.ErrNoTable) {
		return nil, icebergFailf(http.StatusNotFound, "NoSuchTableException", "no table %s.%s with Iceberg metadata: a node or edge type of that name has never been synced (run 'omnigraph iceberg sync')", ns, name)
	}
	if err != nil {
		return nil, err
	}
	visible := map[string]bool{}
	for _, b := range t.Branches() {
		if r.mayRead(b) {
			visible[b] = true
		}
	}
	if len(visible) == 0 {
		return nil, icebergFailf(http.StatusForbidden, "ForbiddenException", "the policy does not allow actor %q to read any branch of table %s.%s of graph %q", actorOrAnon(r.actor), ns, name, r.graphID)
	}
	snapshots := r.URL.Query().Get("snapshots")
	if snapshots != "" && snapshots != "all" && snapshots != "refs" {
		return nil, icebergFailf(http.StatusBadRequest, "BadRequestException", "snapshots must be all or refs, not %q", snapshots)
	}
	meta, err := t.JSON(func(b string) bool { return visible[b] }, snapshots == "refs")
	if err != nil {
		return nil, err
	}
	return map[string]any{"metadata-location": t.MetadataLocation, "metadata": json.RawMessage(meta), "config": map[string]string{}}, nil
}

// icebergSyncer keeps one served graph's Iceberg metadata current: after
// each write it syncs the written branch on one background goroutine, so
// a write's response never waits for it and its requests stay out of the
// write's budget. Requests coalesce per branch; a failure is logged (the
// next write, or `omnigraph iceberg sync`, catches up), never reported to
// a client.
type icebergSyncer struct {
	g       *graph.Graph
	graphID string
	loc     string
	log     *slog.Logger

	mu      sync.Mutex
	pending map[string]bool
	wake    chan struct{}
	ctx     context.Context
	cancel  context.CancelFunc
	done    chan struct{}
	running bool
	runs    int
	failed  int
}

func newIcebergSyncer(g *graph.Graph, graphID, loc string, log *slog.Logger) *icebergSyncer {
	ctx, cancel := context.WithCancel(context.Background())
	y := &icebergSyncer{g: g, graphID: graphID, loc: loc, log: log, pending: map[string]bool{},
		wake: make(chan struct{}, 1), ctx: ctx, cancel: cancel, done: make(chan struct{})}
	go y.loop()
	return y
}

func (y *icebergSyncer) after(branch string) {
	y.mu.Lock()
	y.pending[branch] = true
	y.mu.Unlock()
	select {
	case y.wake <- struct{}{}:
	default:
	}
}

func (y *icebergSyncer) close() {
	y.cancel()
	<-y.done
}

// idle reports the finished syncs, the failed ones, and whether none is
// pending or running (tests).
func (y *icebergSyncer) idle() (runs, failed int, idle bool) {
	y.mu.Lock()
	defer y.mu.Unlock()
	return y.runs, y.failed, len(y.pending) == 0 && !y.running
}

func (y *icebergSyncer) loop() {
	defer close(y.done)
	for {
		select {
		case <-y.ctx.Done():
			return
		case <-y.wake:
		}
		y.mu.Lock()
		branches := make([]string, 0, len(y.pending))
		for b := range y.pending {
			branches = append(branches, b)
		}
		clear(y.pending)
		y.running = true
		y.mu.Unlock()
		sort.Strings(branches)
		err := y.run(branches)
		y.mu.Lock()
		y.running = false
		y.runs++
		if err != nil {
			y.failed++
		}
		y.mu.Unlock()
	}
}

func (y *icebergSyncer) run(branches []string) (err error) {
	defer func() {
		if p := recover(); p != nil {
			y.log.Error("Iceberg sync panicked; the writes it followed succeeded", "graph", y.graphID, "stack", string(debug.Stack()))
			err = fmt.Errorf("panic")
		}
	}()
	for _, b := range branches {
		opts := iceberg.Options{Location: y.loc, Branches: []string{b}}
		if b == icebergEveryBranch {
			opts.Branches = nil // a branch was deleted: drop its refs too
		}
		_, err = iceberg.Sync(y.ctx, y.g, opts)
		switch {
		case err != nil && y.ctx.Err() != nil:
			return err
		case errors.Is(err, manifest.ErrBranchNotFound):
			err = nil // deleted since: the next full sync drops its refs
		case err != nil:
			f := MapError(err, y.graphID)
			y.log.Warn("Iceberg sync failed; the writes it followed succeeded, the next write or 'omnigraph iceberg sync' catches up", "graph", y.graphID, "branch", b, "failure_class", f.Body.Class)
			return err
		}
	}
	return nil
}

// icebergEveryBranch asks the syncer for a sync of every branch.
const icebergEveryBranch = ""

// icebergAfter asks for a background sync of branch of the request's
// graph (when the graph keeps its Iceberg metadata current).
func (r *request) icebergAfter(branch string) {
	if y := r.s.icebergSyncers[r.graphID]; y != nil {
		y.after(branch)
	}
}
