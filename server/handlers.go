package server

import (
	"encoding/json"
	"errors"
	"math"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/export"
	"github.com/omnigraph-go/omnigraph/graph/merge"
	"github.com/omnigraph-go/omnigraph/graph/query"
	"github.com/omnigraph-go/omnigraph/internal/buildinfo"
	"github.com/omnigraph-go/omnigraph/manifest"
)

func commitOutput(c *graph.CommitInfo) *api.CommitOutput {
	if c == nil {
		return nil
	}
	o := &api.CommitOutput{GraphCommitID: c.ID, GraphBranch: c.Branch, GraphManifestVersion: c.ManifestVersion, ActorID: c.Actor, CreatedAt: c.Micros, CleanedUp: c.CleanedUp}
	if len(c.Parents) > 0 {
		o.ParentCommitID = c.Parents[0]
	}
	if len(c.Parents) > 1 {
		o.MergedParentCommitID = c.Parents[1]
	}
	return o
}

// decode reads a JSON body: application/json (415 otherwise), within the
// route's limit (413), one object of v's members exactly (400, decode.go).
func (r *request) decode(v any) error {
	ct := r.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
		return &Failure{Status: http.StatusUnsupportedMediaType, Body: api.ErrorOutput{Error: "the body must be JSON: send Content-Type: application/json", Code: api.CodeBadRequest}}
	}
	b, err := readBody(r.Body)
	if err != nil {
		return err
	}
	return decodeStrict(b, v, "the body")
}

func (r *request) actorID() string { return r.actor }

// handleHealth answers 200 while the server admits requests, and 503
// server_stopping with the reason once admission closed (a stopping
// server must leave its load balancer's rotation).
func handleHealth(r *request) (int, any, error) {
	if reason, closed := r.s.adm.closedFor(); closed {
		return 0, nil, stopping(reason)
	}
	mode := "read-write"
	if r.s.cfg.ReadOnly {
		mode = "read-only"
	}
	return 200, api.Health{Status: "ok", Version: r.s.cfg.Version, Graphs: len(r.s.ids), Mode: mode, Build: BuildOutput(r.s.cfg.Build)}, nil
}

// BuildOutput is the wire form of a build (what /healthz and 'omnigraph
// version --json' print).
func BuildOutput(i buildinfo.Info) api.BuildInfo {
	return api.BuildInfo{Version: i.Version, Revision: i.Revision, Modified: i.Modified, BuildDate: i.BuildDate, CommitDate: i.CommitDate, GoVersion: i.GoVersion}
}

func handleOpenAPI(r *request) (int, any, error) {
	return 200, OpenAPI(r.s.cfg.Tokens != nil), nil
}

// handleGraphs lists the graphs the actor may read (graph-wide).
func handleGraphs(r *request) (int, any, error) {
	out := api.GraphList{Graphs: []api.GraphItem{}}
	for _, id := range r.s.ids {
		if !r.s.allowed(r.actor, id, ActionRead) {
			continue
		}
		out.Graphs = append(out.Graphs, api.GraphItem{GraphID: id})
	}
	return 200, out, nil
}

func handleQuery(r *request) (int, any, error) {
	var q api.QueryRequest
	if err := r.decode(&q); err != nil {
		return 0, nil, err
	}
	out, err := r.opQuery(q)
	return 200, out, err
}

func readOutput(res *query.Result, q api.QueryRequest) api.ReadOutput {
	out := api.ReadOutput{QueryName: res.QueryName, RowCount: len(res.Rows), Columns: res.ColumnNames(), Rows: make([]json.RawMessage, len(res.Rows)), GraphCommitID: res.CommitID}
	if out.Columns == nil {
		out.Columns = []string{}
	}
	for i := range res.Rows {
		out.Rows[i] = res.JSONRow(i)
	}
	if q.Snapshot != "" {
		out.Target.Snapshot = q.Snapshot
	} else {
		out.Target.Branch = res.Branch
	}
	return out
}

func handleMutate(r *request) (int, any, error) {
	if len(r.Header.Values(api.HeaderIfGraphCommit)) > 0 {
		return 0, nil, badRequest("%s goes with POST /graphs/%s/mutate/if-graph-commit; this route never writes conditionally", api.HeaderIfGraphCommit, r.graphID)
	}
	return mutateWith(r, "")
}

func handleMutateIf(r *request) (int, any, error) {
	v, err := r.ifGraphCommit()
	if err != nil {
		return 0, nil, err
	}
	if err := manifest.ValidateCommitID(v); err != nil {
		return 0, nil, badRequest("%s: %v; nothing was written", api.HeaderIfGraphCommit, err)
	}
	return mutateWith(r, v)
}

func mutateWith(r *request, ifCommit string) (int, any, error) {
	var m api.MutateRequest
	if err := r.decode(&m); err != nil {
		return 0, nil, err
	}
	out, err := r.opMutate(m, ifCommit)
	return 200, out, err
}

func handleLoadNDJSON(r *request) (int, any, error) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/x-ndjson" {
		return 0, nil, &Failure{Status: http.StatusUnsupportedMediaType, Body: api.ErrorOutput{Error: "the body must be a graph batch: send Content-Type: application/x-ndjson", Code: api.CodeBadRequest}}
	}
	qv := r.URL.Query()
	out, err := r.opLoad(r.Body, qv.Get("branch"), qv.Get("from"), qv.Get("mode"))
	return 200, out, err
}

func handleLoadJSON(r *request) (int, any, error) {
	var in api.LoadRequest
	if err := r.decode(&in); err != nil {
		return 0, nil, err
	}
	out, err := r.opLoadJSON(in)
	return 200, out, err
}

// handleExport streams one snapshot as graph-batch NDJSON. Every check
// (policy, branch, types) happens before the first byte, so those
// failures are ordinary error answers; a failure after the first byte
// cuts the connection (no trailer), and the client discards the body.
func handleExport(r *request) (int, any, error) {
	qv := r.URL.Query()
	branch, snapID := qv.Get("branch"), qv.Get("snapshot")
	if branch != "" && snapID != "" {
		return 0, nil, badRequest("export either a branch or a snapshot, not both")
	}
	var types []string
	for _, v := range qv["type"] {
		for _, t := range strings.Split(v, ",") {
			if t = strings.TrimSpace(t); t != "" {
				types = append(types, t)
			}
		}
	}
	exportBranch := orMain(branch)
	if snapID != "" {
		exportBranch = ""
	}
	if err := r.authorize(ActionExport, exportBranch, ""); err != nil {
		return 0, nil, err
	}
	if err := r.admitRead(); err != nil {
		return 0, nil, err
	}
	var snap *graph.Snapshot
	var err error
	if snapID != "" {
		snap, err = r.g.SnapshotAt(r.Context(), snapID)
		if err == nil {
			err = r.authorizeCommit(ActionExport, snapID, snap.Branch())
		}
	} else {
		snap, err = r.g.Snapshot(r.Context(), branch)
	}
	if err != nil {
		return 0, nil, err
	}
	ew := &exportWriter{w: r.w, commit: snap.CommitID(), schema: snap.SchemaIdentity(), rc: http.NewResponseController(r.w), idle: r.s.cfg.Limits.StreamIdle}
	res, err := export.Run(r.Context(), snap, ew, export.Options{Types: types})
	if err != nil {
		if !ew.started {
			return 0, nil, err
		}
		f := MapError(err, r.graphID)
		r.s.log.Warn("export cut after its first bytes", "graph", r.graphID, "status", f.Status, "failure_class", f.Body.Class)
		if sw, ok := r.w.(*statusWriter); ok {
			sw.class = "export_cut"
		}
		panic(http.ErrAbortHandler)
	}
	_ = ew.rc.SetWriteDeadline(time.Now().Add(ew.idle))
	ew.start()
	r.w.Header().Set(api.TrailerExportEntities, strconv.Itoa(res.Nodes+res.Edges))
	return 0, nil, nil
}

// exportWriter sends the export's headers with its first bytes, and
// bounds the stream by its progress: each write must be taken by the
// client within idle, however long the export takes in all.
type exportWriter struct {
	w       http.ResponseWriter
	commit  string
	schema  string // the snapshot's schema identity
	started bool
	rc      *http.ResponseController
	idle    time.Duration
}

func (e *exportWriter) start() {
	if e.started {
		return
	}
	e.started = true
	h := e.w.Header()
	h.Set("Content-Type", "application/x-ndjson")
	h.Set(api.HeaderGraphCommit, e.commit)
	h.Set(api.HeaderSchemaIdentity, e.schema)
	h.Set("Trailer", api.TrailerExportEntities)
	e.w.WriteHeader(http.StatusOK)
}

func (e *exportWriter) Write(p []byte) (int, error) {
	_ = e.rc.SetWriteDeadline(time.Now().Add(e.idle))
	e.start()
	return e.w.Write(p)
}

func (r *request) branchParam() string { return orMain(r.URL.Query().Get("branch")) }

func handleSnapshot(r *request) (int, any, error) {
	out, err := r.opSnapshot(r.branchParam())
	return 200, out, err
}

func handleSchema(r *request) (int, any, error) {
	q := r.URL.Query()
	out, err := r.opSchema(q.Get("branch"), q.Get("snapshot"))
	return 200, out, err
}

func handleBranches(r *request) (int, any, error) {
	out, err := r.opBranches()
	return 200, out, err
}

func handleBranchCreate(r *request) (int, any, error) {
	var b api.BranchCreateRequest
	if err := r.decode(&b); err != nil {
		return 0, nil, err
	}
	out, err := r.opBranchCreate(b)
	return 200, out, err
}

func handleBranchDelete(r *request) (int, any, error) {
	out, err := r.opBranchDelete(r.PathValue("branch"))
	return 200, out, err
}

func handleMerge(r *request) (int, any, error) {
	var m api.MergeRequest
	if err := r.decode(&m); err != nil {
		return 0, nil, err
	}
	out, err := r.opMerge(m)
	return 200, out, err
}

// limitParam parses the limit query parameter: 0 (all) or more.
func (r *request) limitParam() (int, error) {
	s := r.URL.Query().Get("limit")
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if errors.Is(err, strconv.ErrRange) && strings.TrimLeft(s, "0123456789") == "" {
		// A whole number past the machine's: as large as it gets (at
		// most the answer cap then bounds the answer).
		return math.MaxInt, nil
	}
	if err != nil || n < 0 {
		return 0, badRequest("limit must be 0 (all) or a positive whole number")
	}
	return n, nil
}

// boolParam parses a true/false query parameter (absent: false).
func (r *request) boolParam(name string) (bool, error) {
	switch s := r.URL.Query().Get(name); s {
	case "", "false", "0":
		return false, nil
	case "true", "1":
		return true, nil
	}
	return false, badRequest("%s must be true or false", name)
}

func handleCommits(r *request) (int, any, error) {
	limit, err := r.limitParam()
	if err != nil {
		return 0, nil, err
	}
	fp, err := r.boolParam("first_parent")
	if err != nil {
		return 0, nil, err
	}
	out, err := r.opCommits(r.branchParam(), limit, fp)
	return 200, out, err
}

func handleCommit(r *request) (int, any, error) {
	out, err := r.opCommit(r.PathValue("commit_id"))
	return 200, out, err
}

func handleChanges(r *request) (int, any, error) {
	qv := r.URL.Query()
	limit, err := r.limitParam()
	if err != nil {
		return 0, nil, err
	}
	out, err := r.opChanges(r.PathValue("commit_id"), merge.Filter{Type: qv.Get("type"), Op: merge.Op(qv.Get("op")), Limit: limit})
	return 200, out, err
}
