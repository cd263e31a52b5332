// Package api holds the wire types of omnigraph's HTTP API: the route
// table (Routes), every request and response body, the error envelope and
// the headers. The server (server/) answers with these types and the Go
// client (client/) sends and decodes the same ones, so the two cannot
// disagree about a field. It imports nothing of the project, so a program
// that only talks to a server pulls in no engine code.
package api

import "encoding/json"

// Request and response bodies (components.schemas in the OpenAPI
// document). Request bodies refuse unknown members (400).
type (
	// Health is GET /healthz.
	Health struct {
		Status  string `json:"status"`
		Version string `json:"version"`
		Graphs  int    `json:"graphs"`
		Mode    string `json:"mode"` // "read-write" or "read-only"
		// Build is which build is serving.
		Build BuildInfo `json:"build"`
	}
	// BuildInfo is a binary's build: what 'omnigraph version --json' and
	// /healthz print.
	BuildInfo struct {
		// Version is the module version: a release or pseudo-version, or
		// "(devel)" for a build from a checkout.
		Version string `json:"version"`
		// Revision is the VCS commit it was built from ("" unknown).
		Revision string `json:"revision,omitempty"`
		// Modified: the tree had uncommitted changes.
		Modified bool `json:"modified,omitempty"`
		// BuildDate is when it was built (RFC 3339 UTC), when known.
		BuildDate string `json:"build_date,omitempty"`
		// CommitDate is the time of Revision's commit, when known.
		CommitDate string `json:"commit_date,omitempty"`
		// GoVersion is the toolchain that built it.
		GoVersion string `json:"go_version"`
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
	// ReadOutput is a query's answer. Each row is an object keyed by
	// column name, in column order.
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
		// CleanedUp: cleanup pruned the commit's manifest version; it is
		// still listed, but its data can no longer be read.
		CleanedUp bool `json:"cleaned_up,omitempty"`
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
		// Inserted, Updated and Unchanged split the rows by their effect
		// (append: all inserted; merge: from the commit's diff; overwrite:
		// zero).
		Inserted  int           `json:"inserted"`
		Updated   int           `json:"updated"`
		Unchanged int           `json:"unchanged"`
		ActorID   string        `json:"actor_id,omitempty"`
		Commit    *CommitOutput `json:"commit"`
		Warnings  []string      `json:"warnings,omitempty"`
	}
	// Record is one line of a graph batch (the input of load, the output
	// of export): a node {"type":T,"data":{...}} or an edge
	// {"edge":E,"from":src,"to":dst,"data":{...}}.
	Record struct {
		Type string         `json:"type,omitempty"`
		Edge string         `json:"edge,omitempty"`
		From string         `json:"from,omitempty"`
		To   string         `json:"to,omitempty"`
		Data map[string]any `json:"data,omitempty"`
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
	// BranchList is GET branches: the names, and each branch's head.
	BranchList struct {
		Branches []string     `json:"branches"`
		Heads    []BranchHead `json:"heads"`
	}
	// BranchHead is one live branch: its name, the incarnation of the name
	// (a name deleted and created again counts up) and its head's
	// manifest version.
	BranchHead struct {
		Name                 string `json:"name"`
		Incarnation          uint64 `json:"incarnation"`
		GraphManifestVersion uint64 `json:"graph_manifest_version"`
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
		Incarnation   uint64 `json:"incarnation"`
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
		Outcome           string        `json:"outcome"` // already_up_to_date, fast_forward or merged
		SourceCommit      string        `json:"source_commit,omitempty"`
		BaseCommit        string        `json:"base_commit,omitempty"`
		ActorID           string        `json:"actor_id,omitempty"`
		Commit            *CommitOutput `json:"commit,omitempty"`
		Inserted          int           `json:"inserted"`
		Updated           int           `json:"updated"`
		Deleted           int           `json:"deleted"`
		Warnings          []string      `json:"warnings,omitempty"`
		BranchDeleted     *bool         `json:"branch_deleted,omitempty"`
		BranchDeleteError string        `json:"branch_delete_error,omitempty"`
	}
	// ChangesOutput is GET commits/{id}/changes.
	ChangesOutput struct {
		Cause   CommitOutput `json:"cause"`
		Changes []Change     `json:"changes"`
	}
	// Change is one entity's change between a commit and its first
	// parent. Insert has only After, delete only Before, update both.
	// Edge changes carry From and To (after the change; before it for a
	// delete).
	Change struct {
		EntityKind string         `json:"entity_kind"` // "node" or "edge"
		TypeName   string         `json:"type_name"`
		ID         string         `json:"id"`
		Op         string         `json:"op"` // insert, update or delete
		Before     map[string]any `json:"before,omitempty"`
		After      map[string]any `json:"after,omitempty"`
		From       string         `json:"from,omitempty"`
		To         string         `json:"to,omitempty"`
	}
	// JSONRPCMessage is the body of the MCP endpoint: one JSON-RPC 2.0
	// message (the MCP specification has the rest).
	JSONRPCMessage struct {
		JSONRPC string `json:"jsonrpc"`
		ID      any    `json:"id,omitempty"`
		Method  string `json:"method,omitempty"`
		Params  any    `json:"params,omitempty"`
		Result  any    `json:"result,omitempty"`
		Error   any    `json:"error,omitempty"`
	}
)
