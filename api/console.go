package api

// The routes the web console (server/ui) reads beyond the core API: the
// graph's state, its schema as types, a type check, branch heads with
// their divergence, a merge preview and a diff between two refs. They are
// ordinary authenticated reads, open to any client.

var (
	baseParam = Param{Name: "base", Doc: "count ahead and behind against this branch (default main)"}
	maxParam  = Param{Name: "max", Doc: "stop counting at this many commits on either side (1 to 100000, default 100; counts_capped says it stopped)", Integer: true}
)

// ConsoleRoutes are the console's routes, in the order the document lists
// them.
func ConsoleRoutes(g string) []Route {
	return []Route{
		{Method: "GET", Path: g + "/status", OperationID: "getStatus", Admission: AdmitRead, Answer: AnswerJSON, Summary: "The served graph's state: server version and mode, storage kind, writer lock, pending recovery, automatic compaction, and the actions the server lets the caller do on the whole graph", Auth: true, Graph: true, Idempotent: true, Response: "StatusOutput", Statuses: readErrs},
		{Method: "GET", Path: g + "/catalog", OperationID: "getCatalog", Admission: AdmitRead, Answer: AnswerJSON, Summary: "The schema of a branch head (or of a commit) as types: properties, keys, indexes, edge endpoints and each type's row count", Auth: true, Graph: true, Idempotent: true, Query: []Param{branchParam, snapshotParam}, Response: "CatalogOutput", Statuses: readErrs},
		{Method: "POST", Path: g + "/query/check", OperationID: "checkQuery", Admission: AdmitRead, Budget: true, Answer: AnswerJSON, Summary: "Type-check .gq source against the schema of a branch (or a commit) without running it: each declared query with its parameters, result columns and plan, and every error with its line and column", Auth: true, Graph: true, Idempotent: true, Request: "CheckRequest", Response: "CheckOutput", Statuses: append([]int{413, 415}, readErrs...)},
		{Method: "GET", Path: g + "/branches/heads", OperationID: "listBranchHeads", Admission: AdmitRead, Budget: true, Answer: AnswerJSON, Summary: "Every live branch with its head commit, the commits it is ahead of and behind a base branch, and the actions the server lets the caller do on it", Auth: true, Graph: true, Idempotent: true, Query: []Param{baseParam, maxParam}, Response: "BranchHeadsOutput", Statuses: readErrs},
		{Method: "POST", Path: g + "/branches/merge/preview", OperationID: "previewMerge", Admission: AdmitRead, Budget: true, Answer: AnswerJSON, Summary: "What merging a branch into another would do now, without writing: the outcome, the entity changes it would apply (before and after) and the conflicts that would refuse it", Auth: true, Graph: true, Idempotent: true, Request: "MergePreviewRequest", Response: "MergePreviewOutput", Statuses: append([]int{409, 413, 415}, readErrs...)},
		{Method: "POST", Path: g + "/diff", OperationID: "diffRefs", Admission: AdmitRead, Budget: true, Answer: AnswerJSON, Summary: "The entity changes that turn one ref into another (each a branch name or a commit id)", Auth: true, Graph: true, Idempotent: true, Request: "DiffRequest", Response: "DiffOutput", Statuses: append([]int{409, 413, 415}, readErrs...)},
	}
}

// Bodies of the console's routes.
type (
	// StatusOutput is GET status.
	StatusOutput struct {
		GraphID string `json:"graph_id"`
		// ServerVersion is the binary's version (as /healthz).
		ServerVersion string `json:"server_version"`
		// Mode is "read-write" or "read-only" (a replica).
		Mode string `json:"mode"`
		// StorageKind is the scheme of the graph's storage URL (file, s3,
		// gs, az...); the location itself is never shown.
		StorageKind string `json:"storage_kind"`
		// Actor is the caller ("anonymous" in open mode); Auth says
		// whether the server checks bearer tokens.
		Actor string `json:"actor"`
		Auth  bool   `json:"auth"`
		// AllowedActions are the actions the server lets the caller do on
		// the whole graph: the policy's grants, reads only on a replica
		// (per-branch grants: GET branches/heads).
		AllowedActions []string           `json:"allowed_actions"`
		Lock           LockOutput         `json:"lock"`
		Recovery       RecoveryOutput     `json:"recovery"`
		AutoOptimize   AutoOptimizeOutput `json:"auto_optimize"`
		Branches       int                `json:"branches"`
		MainHead       *CommitOutput      `json:"main_head,omitempty"`
		Limits         StatusLimits       `json:"limits"`
	}
	// LockOutput is the graph's writer lock as its record shows it.
	LockOutput struct {
		Held bool `json:"held"`
		// Operation is what the holder took it for ("serve", "load"...).
		Operation     string `json:"operation,omitempty"`
		Host          string `json:"host,omitempty"`
		PID           int    `json:"pid,omitempty"`
		BinaryVersion string `json:"binary_version,omitempty"`
		// Since is when the holder took it (RFC 3339).
		Since string `json:"since,omitempty"`
		// Leased locks (servers on s3:// and gs://) renew a lease with
		// heartbeats; LastHeartbeat is the store's time of the newest.
		Leased        bool   `json:"leased"`
		LeaseSeconds  int    `json:"lease_seconds,omitempty"`
		LastHeartbeat string `json:"last_heartbeat,omitempty"`
		// UnknownFormat: a newer binary wrote the record.
		UnknownFormat bool `json:"unknown_format,omitempty"`
	}
	// RecoveryOutput is the graph's pending recovery: writes whose
	// outcome a recovery sweep (a read-write open) still has to settle.
	RecoveryOutput struct {
		Pending int            `json:"pending"`
		Intents []IntentOutput `json:"intents"`
		State   string         `json:"state"` // "clean" or "pending"
	}
	// IntentOutput is one pending write.
	IntentOutput struct {
		Kind   string `json:"kind"`
		Actor  string `json:"actor,omitempty"`
		Branch string `json:"branch"`
		// Classification is what recovery would find.
		Classification string `json:"classification"`
		StartedAt      string `json:"started_at"`
	}
	// AutoOptimizeOutput is the automatic compaction after writes.
	AutoOptimizeOutput struct {
		Enabled   bool `json:"enabled"`
		Threshold int  `json:"threshold,omitempty"`
		Running   bool `json:"running"`
		Pending   int  `json:"pending"`
		Runs      int  `json:"runs"`
		// The last finished check, if any.
		LastBranch  string `json:"last_branch,omitempty"`
		LastAt      string `json:"last_at,omitempty"`
		LastOutcome string `json:"last_outcome,omitempty"`
	}
	// StatusLimits are the server's request limits.
	StatusLimits struct {
		BodyBytes      int64 `json:"request_body_bytes"`
		LoadBytes      int64 `json:"load_body_bytes"`
		WritesPerActor int   `json:"writes_per_actor"`
		WritesPerGraph int   `json:"writes_per_graph"`
	}

	// CatalogOutput is GET catalog.
	CatalogOutput struct {
		Target         ReadTarget    `json:"target"`
		GraphCommitID  string        `json:"graph_commit_id"`
		SchemaIdentity string        `json:"schema_identity"`
		Nodes          []CatalogType `json:"nodes"`
		Edges          []CatalogType `json:"edges"`
	}
	// CatalogType is one node or edge type.
	CatalogType struct {
		Name        string `json:"name"`
		Description string `json:"description,omitempty"`
		// From and To are an edge's endpoint node types; Cardinality its
		// @card (min..max per source).
		From        string            `json:"from,omitempty"`
		To          string            `json:"to,omitempty"`
		Cardinality string            `json:"cardinality,omitempty"`
		Key         []string          `json:"key,omitempty"`
		Unique      [][]string        `json:"unique,omitempty"`
		Index       [][]string        `json:"index,omitempty"`
		Properties  []CatalogProperty `json:"properties"`
		Rows        int64             `json:"rows"`
	}
	// CatalogProperty is one property of a type.
	CatalogProperty struct {
		Name     string `json:"name"`
		Type     string `json:"type"`
		Nullable bool   `json:"nullable"`
		Key      bool   `json:"key,omitempty"`
		Unique   bool   `json:"unique,omitempty"`
		Index    bool   `json:"index,omitempty"`
		// Embed is the property an @embed vector is computed from.
		Embed       string `json:"embed,omitempty"`
		Inherited   string `json:"inherited,omitempty"`
		Description string `json:"description,omitempty"`
	}

	// CheckRequest is POST query/check.
	CheckRequest struct {
		Query    string `json:"query" jsonschema:"the .gq source to check: one or more queries and mutations"`
		Branch   string `json:"branch,omitempty" jsonschema:"check against the schema of this branch (default main)"`
		Snapshot string `json:"snapshot,omitempty" jsonschema:"check against the schema of this commit instead"`
	}
	// CheckOutput is the answer of a check: what `omnigraph lint` finds in
	// the same source against the same schema (gq.Lint decides both). OK
	// when there is no error; warnings never make it false. Errors in the
	// text are this answer, never a failed request.
	CheckOutput struct {
		OK             bool           `json:"ok"`
		SchemaIdentity string         `json:"schema_identity"`
		Queries        []CheckedQuery `json:"queries"`
		Errors         []CheckError   `json:"errors"`
		Warnings       []CheckError   `json:"warnings"`
	}
	// CheckedQuery is one declared query or mutation. Params come from
	// the declaration even when the query has errors; Columns, Links and
	// Plan only when it checks.
	CheckedQuery struct {
		Name        string        `json:"name"`
		Kind        string        `json:"kind"` // "read" or "mutation"
		Line        int           `json:"line"`
		Description string        `json:"description,omitempty"`
		OK          bool          `json:"ok"`
		Params      []CheckParam  `json:"params"`
		Columns     []CheckColumn `json:"columns,omitempty"`
		Links       []CheckLink   `json:"links,omitempty"`
		// Plan is the query's plan as text (explain).
		Plan string `json:"plan,omitempty"`
	}
	// CheckParam is one declared parameter.
	CheckParam struct {
		Name     string `json:"name"`
		Type     string `json:"type"`
		Nullable bool   `json:"nullable"`
	}
	// CheckColumn is one result column; NodeType is set for a whole-node
	// column.
	CheckColumn struct {
		Name     string `json:"name"`
		Type     string `json:"type"`
		NodeType string `json:"node_type,omitempty"`
	}
	// CheckLink says two whole-node columns are joined by a traversal of
	// the match (From's node reaches To's over Edge): what a result graph
	// draws as a link.
	CheckLink struct {
		From    string `json:"from"`
		To      string `json:"to"`
		Edge    string `json:"edge"`
		MinHops int    `json:"min_hops"`
		MaxHops int    `json:"max_hops"`
	}
	// CheckError is one finding: a stable code (the GQ code the query
	// routes answer, or the lint code of a finding only lint makes), the
	// code `omnigraph lint` prints for it (the original system's where it
	// has one), the query it is in, its 1-based line and column
	// (characters; 0 for a finding about the whole file), and what to
	// write instead.
	CheckError struct {
		Code     string `json:"code"`
		LintCode string `json:"lint_code"`
		Query    string `json:"query,omitempty"`
		// Queries: a finding about several queries (L201: the update
		// queries of Type that never set Property).
		Queries  []string `json:"queries,omitempty"`
		Line     int      `json:"line"`
		Column   int      `json:"column"`
		Message  string   `json:"message"`
		Type     string   `json:"type,omitempty"`
		Property string   `json:"property,omitempty"`
	}

	// BranchHeadsOutput is GET branches/heads.
	BranchHeadsOutput struct {
		Base     string         `json:"base"`
		Branches []BranchStatus `json:"branches"`
	}
	// BranchStatus is one live branch: its head, how far it is from the
	// base, and what the caller may do on it.
	BranchStatus struct {
		Name string       `json:"name"`
		Head CommitOutput `json:"head"`
		// Ahead and Behind count commits against the base; CountsCapped:
		// the count stopped at max (lower bounds).
		Ahead        int  `json:"ahead"`
		Behind       int  `json:"behind"`
		CountsCapped bool `json:"counts_capped,omitempty"`
		// AllowedActions: of change, load, branch_create (from it),
		// branch_delete and branch_merge (into the base), those the server
		// lets the caller do on this branch (none on a replica).
		AllowedActions []string `json:"allowed_actions"`
	}

	// MergePreviewRequest is POST branches/merge/preview.
	MergePreviewRequest struct {
		Source string `json:"source" jsonschema:"the branch to merge"`
		Target string `json:"target,omitempty" jsonschema:"the branch to merge into (default main)"`
		Limit  int    `json:"limit,omitempty" jsonschema:"at most this many changes listed (0: all); the counts cover every change"`
	}
	// MergePreviewOutput is what the merge would do now: Conflicts
	// non-empty means it would be refused (409) and write nothing.
	MergePreviewOutput struct {
		Source       string          `json:"source"`
		Target       string          `json:"target"`
		Outcome      string          `json:"outcome"` // already_up_to_date, fast_forward or merged
		SourceCommit string          `json:"source_commit"`
		BaseCommit   string          `json:"base_commit,omitempty"`
		Inserted     int             `json:"inserted"`
		Updated      int             `json:"updated"`
		Deleted      int             `json:"deleted"`
		Changes      []Change        `json:"changes"`
		Truncated    bool            `json:"truncated,omitempty"`
		Conflicts    []MergeConflict `json:"conflicts"`
	}

	// DiffRequest is POST diff.
	DiffRequest struct {
		From  string `json:"from" jsonschema:"a branch name or a commit id (a branch of that name wins)"`
		To    string `json:"to" jsonschema:"a branch name or a commit id"`
		Type  string `json:"type,omitempty" jsonschema:"only changes of this node or edge type"`
		Op    string `json:"op,omitempty" jsonschema:"only insert, update or delete"`
		Limit int    `json:"limit,omitempty" jsonschema:"at most this many changes (0: all)"`
	}
	// DiffOutput is the answer of a diff.
	DiffOutput struct {
		From       string   `json:"from"`
		To         string   `json:"to"`
		FromCommit string   `json:"from_commit"`
		ToCommit   string   `json:"to_commit"`
		Changes    []Change `json:"changes"`
	}
)
