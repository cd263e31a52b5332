package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/export"
	"github.com/omnigraph-go/omnigraph/graph/merge"
	"github.com/omnigraph-go/omnigraph/graph/query"
)

// Request and response bodies (components.schemas in the OpenAPI document).
type (
	// Health is GET /healthz.
	Health struct {
		Status  string `json:"status"`
		Version string `json:"version"`
		Graphs  int    `json:"graphs"`
		Mode    string `json:"mode"` // "read-write" or "read-only"
	}
	// GraphList is GET /graphs.
	GraphList struct {
		Graphs []GraphItem `json:"graphs"`
	}
	// GraphItem is one served graph.
	GraphItem struct {
		GraphID string `json:"graph_id"`
	}
	// QueryRequest is POST query.
	QueryRequest struct {
		Query    string         `json:"query" jsonschema:"the .gq source of one or more read queries"`
		Name     string         `json:"name,omitempty" jsonschema:"which declared query to run, when the source declares several"`
		Params   map[string]any `json:"params,omitempty" jsonschema:"the query's parameters by name"`
		Branch   string         `json:"branch,omitempty" jsonschema:"the branch to read (default main)"`
		Snapshot string         `json:"snapshot,omitempty" jsonschema:"a graph commit id to read instead of a branch head"`
	}
	// ReadOutput is a query's answer.
	ReadOutput struct {
		QueryName     string            `json:"query_name"`
		Target        ReadTarget        `json:"target"`
		RowCount      int               `json:"row_count"`
		Columns       []string          `json:"columns"`
		Rows          []json.RawMessage `json:"rows"`
		GraphCommitID string            `json:"graph_commit_id"`
	}
	// ReadTarget is what a query read.
	ReadTarget struct {
		Branch   string `json:"branch,omitempty"`
		Snapshot string `json:"snapshot,omitempty"`
	}
	// MutateRequest is POST mutate.
	MutateRequest struct {
		Query  string         `json:"query" jsonschema:"the .gq source of one or more mutations"`
		Name   string         `json:"name,omitempty" jsonschema:"which declared mutation to run, when the source declares several"`
		Params map[string]any `json:"params,omitempty" jsonschema:"the mutation's parameters by name"`
		Branch string         `json:"branch,omitempty" jsonschema:"the branch to write (default main)"`
	}
	// ChangeOutput is a mutation's answer; Commit is null when nothing
	// changed.
	ChangeOutput struct {
		Branch        string        `json:"branch"`
		QueryName     string        `json:"query_name,omitempty"`
		AffectedNodes int           `json:"affected_nodes"`
		AffectedEdges int           `json:"affected_edges"`
		ActorID       string        `json:"actor_id,omitempty"`
		Commit        *CommitOutput `json:"commit"`
		Warnings      []string      `json:"warnings,omitempty"`
	}
	// CommitOutput is one commit.
	CommitOutput struct {
		GraphCommitID        string `json:"graph_commit_id"`
		GraphBranch          string `json:"graph_branch,omitempty"`
		GraphManifestVersion uint64 `json:"graph_manifest_version"`
		ParentCommitID       string `json:"parent_commit_id,omitempty"`
		MergedParentCommitID string `json:"merged_parent_commit_id,omitempty"`
		ActorID              string `json:"actor_id,omitempty"`
		CreatedAt            int64  `json:"created_at"` // unix microseconds
	}
	// CommitList is GET commits.
	CommitList struct {
		Commits []CommitOutput `json:"commits"`
	}
	// LoadRequest is POST load: a graph batch inline, as NDJSON text in
	// Data or as the same line objects in Records (exactly one of them).
	LoadRequest struct {
		Data    string           `json:"data,omitempty" jsonschema:"the graph batch as NDJSON text: one {\"type\":T,\"data\":{...}} or {\"edge\":E,\"from\":src,\"to\":dst,\"data\":{...}} per line"`
		Records []map[string]any `json:"records,omitempty" jsonschema:"the graph batch as an array of line objects (instead of data)"`
		Branch  string           `json:"branch,omitempty" jsonschema:"the branch to load into (default main); it must exist unless from is given"`
		From    string           `json:"from,omitempty" jsonschema:"create the branch from this one first when it does not exist"`
		Mode    string           `json:"mode,omitempty" jsonschema:"merge (upsert, default), append (strict insert) or overwrite (replace each type in the batch)"`
	}
	// LoadOutput is a load's answer.
	LoadOutput struct {
		Branch        string         `json:"branch"`
		BaseBranch    string         `json:"base_branch,omitempty"`
		BranchCreated bool           `json:"branch_created"`
		Mode          string         `json:"mode"`
		Nodes         int            `json:"nodes"`
		Edges         int            `json:"edges"`
		Types         map[string]int `json:"types"`
		TotalEntities int            `json:"total_entities"`
		ActorID       string         `json:"actor_id,omitempty"`
		Commit        *CommitOutput  `json:"commit"`
		Warnings      []string       `json:"warnings,omitempty"`
	}
	// SnapshotOutput is GET snapshot.
	SnapshotOutput struct {
		GraphBranch           string          `json:"graph_branch"`
		GraphManifestVersion  uint64          `json:"graph_manifest_version"`
		GraphCommitID         string          `json:"graph_commit_id"`
		InternalSchemaVersion int             `json:"internal_schema_version"`
		SchemaIdentity        string          `json:"schema_identity"`
		Datasets              []DatasetOutput `json:"datasets"`
	}
	// DatasetOutput is one table of a snapshot.
	DatasetOutput struct {
		TypeName                string `json:"type_name"`
		EntityKind              string `json:"entity_kind"`
		PublishedDatasetVersion uint64 `json:"published_dataset_version"`
		EntityCount             int64  `json:"entity_count"`
		NativeDatasetBranch     string `json:"native_dataset_branch,omitempty"`
	}
	// SchemaOutput is GET schema.
	SchemaOutput struct {
		SchemaSource   string `json:"schema_source"`
		SchemaIdentity string `json:"schema_identity"`
		Branch         string `json:"branch"`
	}
	// BranchList is GET branches.
	BranchList struct {
		Branches []string `json:"branches"`
	}
	// BranchCreateRequest is POST branches.
	BranchCreateRequest struct {
		Name string `json:"name" jsonschema:"the new branch"`
		From string `json:"from,omitempty" jsonschema:"the branch whose head it starts from (default main)"`
	}
	// BranchCreateOutput answers a branch create.
	BranchCreateOutput struct {
		Name          string `json:"name"`
		From          string `json:"from"`
		GraphCommitID string `json:"graph_commit_id"`
		ActorID       string `json:"actor_id,omitempty"`
	}
	// BranchDeleteOutput answers a branch delete.
	BranchDeleteOutput struct {
		Name    string `json:"name"`
		ActorID string `json:"actor_id,omitempty"`
	}
	// MergeRequest is POST branches/merge.
	MergeRequest struct {
		Source       string `json:"source" jsonschema:"the branch to merge"`
		Target       string `json:"target,omitempty" jsonschema:"the branch to merge into (default main)"`
		DeleteBranch bool   `json:"delete_branch,omitempty" jsonschema:"delete the source branch after the merge lands"`
	}
	// MergeOutput answers a merge. A failed delete of the source is
	// reported here, never as an error: the merge landed.
	MergeOutput struct {
		Source            string        `json:"source"`
		Target            string        `json:"target"`
		Outcome           string        `json:"outcome"`
		ActorID           string        `json:"actor_id,omitempty"`
		Commit            *CommitOutput `json:"commit,omitempty"`
		Inserted          int           `json:"inserted"`
		Updated           int           `json:"updated"`
		Deleted           int           `json:"deleted"`
		BranchDeleted     *bool         `json:"branch_deleted,omitempty"`
		BranchDeleteError string        `json:"branch_delete_error,omitempty"`
	}
	// ChangesOutput is GET commits/{id}/changes.
	ChangesOutput struct {
		Cause   CommitOutput   `json:"cause"`
		Changes []merge.Change `json:"changes"`
	}
)

func commitOutput(c *graph.CommitInfo) *CommitOutput {
	if c == nil {
		return nil
	}
	o := &CommitOutput{GraphCommitID: c.ID, GraphBranch: c.Branch, GraphManifestVersion: c.ManifestVersion, ActorID: c.Actor, CreatedAt: c.Micros}
	if len(c.Parents) > 0 {
		o.ParentCommitID = c.Parents[0]
	}
	if len(c.Parents) > 1 {
		o.MergedParentCommitID = c.Parents[1]
	}
	return o
}

// decode reads a JSON body: application/json (415 otherwise), within the
// route's limit (413), one object (400).
func (r *request) decode(v any) error {
	ct := r.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
		return &Failure{Status: http.StatusUnsupportedMediaType, Body: ErrorOutput{Error: "the body must be JSON: send Content-Type: application/json", Code: CodeBadRequest}}
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *maxBytesError
		if errors.As(err, &mbe) {
			return tooLarge(mbe.resource, mbe.limit, 0)
		}
		return badRequest("read the request body: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return badRequest("the body is not a valid JSON object of this route: %v", err)
	}
	if dec.More() {
		return badRequest("the body must be one JSON object")
	}
	return nil
}

func (r *request) actorID() string { return r.actor }

func handleHealth(r *request) (int, any, error) {
	mode := "read-write"
	if r.s.cfg.ReadOnly {
		mode = "read-only"
	}
	return 200, Health{Status: "ok", Version: r.s.cfg.Version, Graphs: len(r.s.ids), Mode: mode}, nil
}

func handleOpenAPI(r *request) (int, any, error) {
	return 200, OpenAPI(r.s.cfg.Version, r.s.cfg.Tokens != nil), nil
}

// handleGraphs lists the graphs the actor may read (graph-wide).
func handleGraphs(r *request) (int, any, error) {
	out := GraphList{Graphs: []GraphItem{}}
	for _, id := range r.s.ids {
		if !r.s.allowed(r.actor, id, ActionRead) {
			continue
		}
		out.Graphs = append(out.Graphs, GraphItem{GraphID: id})
	}
	return 200, out, nil
}

func handleQuery(r *request) (int, any, error) {
	var q QueryRequest
	if err := r.decode(&q); err != nil {
		return 0, nil, err
	}
	out, err := r.opQuery(q)
	return 200, out, err
}

func readOutput(res *query.Result, q QueryRequest) ReadOutput {
	out := ReadOutput{QueryName: res.QueryName, RowCount: len(res.Rows), Columns: res.ColumnNames(), Rows: make([]json.RawMessage, len(res.Rows)), GraphCommitID: res.CommitID}
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
	if len(r.Header.Values(HeaderIfGraphCommit)) > 0 {
		return 0, nil, badRequest("%s goes with POST /graphs/%s/mutate/if-graph-commit; this route never writes conditionally", HeaderIfGraphCommit, r.graphID)
	}
	return mutateWith(r, "")
}

func handleMutateIf(r *request) (int, any, error) {
	vs := r.Header.Values(HeaderIfGraphCommit)
	if len(vs) != 1 {
		return 0, nil, badRequest("send the %s header exactly once, with the raw commit id the branch head must be", HeaderIfGraphCommit)
	}
	v := strings.TrimSpace(vs[0])
	if v == "" || v == "*" || strings.ContainsAny(v, `",`) || strings.HasPrefix(v, "W/") {
		return 0, nil, badRequest("%s takes one raw commit id (no '*', quotes, W/ or lists)", HeaderIfGraphCommit)
	}
	return mutateWith(r, v)
}

func mutateWith(r *request, ifCommit string) (int, any, error) {
	var m MutateRequest
	if err := r.decode(&m); err != nil {
		return 0, nil, err
	}
	out, err := r.opMutate(m, ifCommit)
	return 200, out, err
}

func handleLoadNDJSON(r *request) (int, any, error) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/x-ndjson" {
		return 0, nil, &Failure{Status: http.StatusUnsupportedMediaType, Body: ErrorOutput{Error: "the body must be a graph batch: send Content-Type: application/x-ndjson", Code: CodeBadRequest}}
	}
	qv := r.URL.Query()
	out, err := r.opLoad(r.Body, qv.Get("branch"), qv.Get("from"), qv.Get("mode"))
	return 200, out, err
}

func handleLoadJSON(r *request) (int, any, error) {
	var in LoadRequest
	if err := r.decode(&in); err != nil {
		return 0, nil, err
	}
	out, err := r.opLoadJSON(in)
	return 200, out, err
}

// Headers of an export answer.
const (
	// HeaderGraphCommit is the commit an export read.
	HeaderGraphCommit = "Omnigraph-Graph-Commit"
	// TrailerExportEntities is set after the last line of a complete
	// export: the number of lines. A body without it was cut short.
	TrailerExportEntities = "Omnigraph-Export-Entities"
)

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
	var snap *graph.Snapshot
	var err error
	if snapID != "" {
		if err := r.authorize(ActionExport, "", ""); err != nil {
			return 0, nil, err
		}
		snap, err = r.g.SnapshotAt(r.Context(), snapID)
	} else {
		if err := r.authorize(ActionExport, orMain(branch), ""); err != nil {
			return 0, nil, err
		}
		snap, err = r.g.Snapshot(r.Context(), branch)
	}
	if err != nil {
		return 0, nil, err
	}
	ew := &exportWriter{w: r.w, commit: snap.CommitID()}
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
	ew.start()
	r.w.Header().Set(TrailerExportEntities, strconv.Itoa(res.Nodes+res.Edges))
	return 0, nil, nil
}

// exportWriter sends the export's headers with its first bytes.
type exportWriter struct {
	w       http.ResponseWriter
	commit  string
	started bool
}

func (e *exportWriter) start() {
	if e.started {
		return
	}
	e.started = true
	h := e.w.Header()
	h.Set("Content-Type", "application/x-ndjson")
	h.Set(HeaderGraphCommit, e.commit)
	h.Set("Trailer", TrailerExportEntities)
	e.w.WriteHeader(http.StatusOK)
}

func (e *exportWriter) Write(p []byte) (int, error) {
	e.start()
	return e.w.Write(p)
}

func (r *request) branchParam() string { return orMain(r.URL.Query().Get("branch")) }

func handleSnapshot(r *request) (int, any, error) {
	out, err := r.opSnapshot(r.branchParam())
	return 200, out, err
}

func handleSchema(r *request) (int, any, error) {
	out, err := r.opSchema(r.branchParam())
	return 200, out, err
}

func handleBranches(r *request) (int, any, error) {
	out, err := r.opBranches()
	return 200, out, err
}

func handleBranchCreate(r *request) (int, any, error) {
	var b BranchCreateRequest
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
	var m MergeRequest
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
