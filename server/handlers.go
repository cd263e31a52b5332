package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/load"
	"github.com/omnigraph-go/omnigraph/graph/manifest"
	"github.com/omnigraph-go/omnigraph/graph/merge"
	"github.com/omnigraph-go/omnigraph/graph/mutate"
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
		Query    string         `json:"query"`
		Name     string         `json:"name,omitempty"`
		Params   map[string]any `json:"params,omitempty"`
		Branch   string         `json:"branch,omitempty"`
		Snapshot string         `json:"snapshot,omitempty"`
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
		Query  string         `json:"query"`
		Name   string         `json:"name,omitempty"`
		Params map[string]any `json:"params,omitempty"`
		Branch string         `json:"branch,omitempty"`
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
		Name string `json:"name"`
		From string `json:"from,omitempty"`
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
		Source       string `json:"source"`
		Target       string `json:"target,omitempty"`
		DeleteBranch bool   `json:"delete_branch,omitempty"`
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

func handleGraphs(r *request) (int, any, error) {
	out := GraphList{Graphs: []GraphItem{}}
	for _, id := range r.s.ids {
		out.Graphs = append(out.Graphs, GraphItem{GraphID: id})
	}
	return 200, out, nil
}

func handleQuery(r *request) (int, any, error) {
	var q QueryRequest
	if err := r.decode(&q); err != nil {
		return 0, nil, err
	}
	if strings.TrimSpace(q.Query) == "" {
		return 0, nil, badRequest("query is required: the .gq source of a read query")
	}
	if q.Branch != "" && q.Snapshot != "" {
		return 0, nil, badRequest("read either a branch or a snapshot, not both")
	}
	var snap *graph.Snapshot
	var err error
	if q.Snapshot != "" {
		snap, err = r.g.SnapshotAt(r.Context(), q.Snapshot)
	} else {
		snap, err = r.g.Snapshot(r.Context(), q.Branch)
	}
	if err != nil {
		return 0, nil, err
	}
	res, err := query.Run(r.Context(), snap, q.Query, q.Name, q.Params)
	if err != nil {
		return 0, nil, err
	}
	return 200, readOutput(res, q), nil
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
	if strings.TrimSpace(m.Query) == "" {
		return 0, nil, badRequest("query is required: the .gq source of a mutation")
	}
	release, err := r.admitWrite()
	if err != nil {
		return 0, nil, err
	}
	defer release()
	res, err := mutate.Query(r.Context(), r.g, m.Query, m.Name, mutate.Options{Branch: m.Branch, Params: m.Params, IfCommit: ifCommit, Actor: r.actorID()})
	if err != nil {
		return 0, nil, err
	}
	branch := m.Branch
	if branch == "" {
		branch = manifest.MainBranch
	}
	out := ChangeOutput{Branch: branch, QueryName: m.Name, AffectedNodes: res.AffectedNodes, AffectedEdges: res.AffectedEdges, ActorID: r.actor, Commit: commitOutput(res.Commit), Warnings: res.Warnings}
	if res.Commit != nil {
		out.ActorID = res.Commit.Actor
	}
	return 200, out, nil
}

func handleLoad(r *request) (int, any, error) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/x-ndjson" {
		return 0, nil, &Failure{Status: http.StatusUnsupportedMediaType, Body: ErrorOutput{Error: "the body must be a graph batch: send Content-Type: application/x-ndjson", Code: CodeBadRequest}}
	}
	qv := r.URL.Query()
	branch, from, modeS := qv.Get("branch"), qv.Get("from"), qv.Get("mode")
	if branch == "" {
		branch = manifest.MainBranch
	}
	if modeS == "" {
		modeS = string(load.Merge)
	}
	mode, err := load.ParseMode(modeS)
	if err != nil {
		return 0, nil, badRequest("%s", err.Error())
	}
	release, err := r.admitWrite()
	if err != nil {
		return 0, nil, err
	}
	defer release()
	out := LoadOutput{Branch: branch, Mode: string(mode), ActorID: r.actor}
	if from != "" {
		if _, err := r.g.Snapshot(r.Context(), branch); errors.Is(err, manifest.ErrBranchNotFound) {
			if _, err := r.g.CreateBranch(r.Context(), branch, from); err != nil {
				return 0, nil, err
			}
			out.BranchCreated, out.BaseBranch = true, from
		} else if err != nil {
			return 0, nil, err
		}
	}
	res, err := load.Run(r.Context(), r.g, r.Body, load.Options{Branch: branch, Mode: mode, Actor: r.actorID()})
	if err != nil {
		return 0, nil, err
	}
	out.Nodes, out.Edges, out.Types, out.TotalEntities = res.Nodes, res.Edges, res.Types, res.Nodes+res.Edges
	out.Commit, out.Warnings = commitOutput(res.Commit), res.Warnings
	if out.Types == nil {
		out.Types = map[string]int{}
	}
	return 200, out, nil
}

func (r *request) branchParam() string {
	b := r.URL.Query().Get("branch")
	if b == "" {
		return manifest.MainBranch
	}
	return b
}

func handleSnapshot(r *request) (int, any, error) {
	snap, err := r.g.Snapshot(r.Context(), r.branchParam())
	if err != nil {
		return 0, nil, err
	}
	stats, err := snap.TableStats(r.Context())
	if err != nil {
		return 0, nil, err
	}
	out := SnapshotOutput{GraphBranch: snap.Branch(), GraphManifestVersion: snap.Version(), GraphCommitID: snap.CommitID(),
		InternalSchemaVersion: snap.Stamp(), SchemaIdentity: snap.SchemaIdentity(), Datasets: []DatasetOutput{}}
	for _, st := range stats {
		kind, name := "node", st.Key
		if k, n, ok := strings.Cut(st.Key, ":"); ok {
			kind, name = k, n
		}
		out.Datasets = append(out.Datasets, DatasetOutput{TypeName: name, EntityKind: kind, PublishedDatasetVersion: st.Version, EntityCount: st.Rows, NativeDatasetBranch: st.Branch})
	}
	return 200, out, nil
}

func handleSchema(r *request) (int, any, error) {
	snap, err := r.g.Snapshot(r.Context(), r.branchParam())
	if err != nil {
		return 0, nil, err
	}
	cat, err := snap.Catalog(r.Context())
	if err != nil {
		return 0, nil, err
	}
	return 200, SchemaOutput{SchemaSource: cat.Source, SchemaIdentity: cat.Identity, Branch: snap.Branch()}, nil
}

func handleBranches(r *request) (int, any, error) {
	bs, err := r.g.Branches(r.Context())
	if err != nil {
		return 0, nil, err
	}
	out := BranchList{Branches: []string{}}
	for _, b := range bs {
		out.Branches = append(out.Branches, b.Name)
	}
	return 200, out, nil
}

func handleBranchCreate(r *request) (int, any, error) {
	var b BranchCreateRequest
	if err := r.decode(&b); err != nil {
		return 0, nil, err
	}
	if b.Name == "" {
		return 0, nil, badRequest("name is required")
	}
	if b.From == "" {
		b.From = manifest.MainBranch
	}
	release, err := r.admitWrite()
	if err != nil {
		return 0, nil, err
	}
	defer release()
	snap, err := r.g.CreateBranch(r.Context(), b.Name, b.From)
	if err != nil {
		return 0, nil, err
	}
	return 200, BranchCreateOutput{Name: b.Name, From: b.From, GraphCommitID: snap.CommitID(), ActorID: r.actor}, nil
}

func handleBranchDelete(r *request) (int, any, error) {
	name := r.PathValue("branch")
	release, err := r.admitWrite()
	if err != nil {
		return 0, nil, err
	}
	defer release()
	if err := r.g.DeleteBranch(r.Context(), name); err != nil {
		return 0, nil, err
	}
	return 200, BranchDeleteOutput{Name: name, ActorID: r.actor}, nil
}

func handleMerge(r *request) (int, any, error) {
	var m MergeRequest
	if err := r.decode(&m); err != nil {
		return 0, nil, err
	}
	if m.Source == "" {
		return 0, nil, badRequest("source is required: the branch to merge")
	}
	if m.Target == "" {
		m.Target = manifest.MainBranch
	}
	release, err := r.admitWrite()
	if err != nil {
		return 0, nil, err
	}
	defer release()
	res, err := merge.Run(r.Context(), r.g, m.Source, m.Target, merge.Options{Actor: r.actorID()})
	if err != nil {
		return 0, nil, err
	}
	out := MergeOutput{Source: res.Source, Target: res.Target, Outcome: string(res.Outcome), ActorID: r.actor, Commit: commitOutput(res.Commit),
		Inserted: res.Inserted, Updated: res.Updated, Deleted: res.Deleted}
	if m.DeleteBranch {
		ok := true
		if derr := r.g.DeleteBranch(r.Context(), m.Source); derr != nil {
			ok = false
			out.BranchDeleteError = MapError(derr, r.graphID).Body.Error
		}
		out.BranchDeleted = &ok
	}
	return 200, out, nil
}

func handleCommits(r *request) (int, any, error) {
	limit := 0
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return 0, nil, badRequest("limit must be 0 (all) or a positive whole number")
		}
		limit = n
	}
	cs, err := r.g.Commits(r.Context(), r.branchParam(), limit)
	if err != nil {
		return 0, nil, err
	}
	out := CommitList{Commits: []CommitOutput{}}
	for i := range cs {
		out.Commits = append(out.Commits, *commitOutput(&cs[i]))
	}
	return 200, out, nil
}

func handleCommit(r *request) (int, any, error) {
	c, err := r.g.Commit(r.Context(), r.PathValue("commit_id"))
	if err != nil {
		return 0, nil, err
	}
	return 200, commitOutput(&c), nil
}

func handleChanges(r *request) (int, any, error) {
	qv := r.URL.Query()
	f := merge.Filter{Type: qv.Get("type"), Op: merge.Op(qv.Get("op"))}
	switch f.Op {
	case "", merge.OpInsert, merge.OpUpdate, merge.OpDelete:
	default:
		return 0, nil, badRequest("op must be insert, update or delete, not %q", f.Op)
	}
	if s := qv.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return 0, nil, badRequest("limit must be 0 (all) or a positive whole number")
		}
		f.Limit = n
	}
	id := r.PathValue("commit_id")
	c, err := r.g.Commit(r.Context(), id)
	if err != nil {
		return 0, nil, err
	}
	cs, err := merge.CommitChanges(r.Context(), r.g, id, f)
	if err != nil {
		return 0, nil, err
	}
	if cs == nil {
		cs = []merge.Change{}
	}
	return 200, ChangesOutput{Cause: *commitOutput(&c), Changes: cs}, nil
}

var _ = fmt.Sprint
