package api

// The change feed (docs/changes.md): GET changes polls the entity changes
// of a branch commit by commit; POST changes/baseline exports a head and
// ends with the cursor that resumes the feed after it.

type (
	// ChangeFeedOutput is GET changes: the blocks of one poll. Cursor and
	// CaughtUp belong to a terminal page; a page that ends inside a block
	// carries NextPageToken instead, and the next page repeats that
	// block's cause with the rest of its changes.
	ChangeFeedOutput struct {
		Branch        string        `json:"branch"`
		Blocks        []ChangeBlock `json:"blocks"`
		Cursor        string        `json:"cursor,omitempty"`
		NextPageToken string        `json:"next_page_token,omitempty"`
		CaughtUp      bool          `json:"caught_up"`
		// HeadCommitID is the head the poll walked towards (its cut).
		HeadCommitID string `json:"head_commit_id"`
	}
	// ChangeBlock is one commit's changes against its first parent:
	// nodes before edges, then type name, then id.
	ChangeBlock struct {
		Cause   ChangeCause `json:"cause"`
		Changes []Change    `json:"changes"`
	}
	// ChangeCause is the commit of a block.
	ChangeCause struct {
		GraphCommitID        string `json:"graph_commit_id"`
		ParentCommitID       string `json:"parent_commit_id,omitempty"`
		MergedParentCommitID string `json:"merged_parent_commit_id,omitempty"`
		// AuthoredBranch is the branch the commit was made on (an
		// ancestor's, for history a named branch inherits).
		AuthoredBranch       string `json:"authored_branch"`
		GraphManifestVersion uint64 `json:"graph_manifest_version"`
		ActorID              string `json:"actor_id,omitempty"`
		AuthoredAt           int64  `json:"authored_at"` // unix microseconds
	}
	// PollRequest is the query of GET changes, and the changes_poll
	// tool's input. At most one of Cursor, Start and PageToken.
	PollRequest struct {
		Branch     string   `json:"branch,omitempty" jsonschema:"the branch (default: the cursor's, else main)"`
		Cursor     string   `json:"cursor,omitempty" jsonschema:"the cursor of the last terminal page"`
		Start      string   `json:"start,omitempty" jsonschema:"without a cursor: now (default), beginning or after:COMMIT_ID"`
		PageToken  string   `json:"page_token,omitempty" jsonschema:"the next_page_token of a page that ended inside a block"`
		Limit      int      `json:"limit,omitempty" jsonschema:"at most this many changes a page (default 1000, at most 8192)"`
		MaxBytes   int64    `json:"max_bytes,omitempty" jsonschema:"at most this many bytes of changes a page (default 4 MiB, at most 32 MiB)"`
		MaxCommits int      `json:"max_commits,omitempty" jsonschema:"at most this many commits a poll (default 128, at most 512)"`
		Kinds      []string `json:"kinds,omitempty" jsonschema:"only node or only edge changes"`
		Types      []string `json:"types,omitempty" jsonschema:"only changes of these node or edge types"`
		Ops        []string `json:"ops,omitempty" jsonschema:"only these ops: insert, update, delete"`
	}
	// BaselineRequest is POST changes/baseline.
	BaselineRequest struct {
		Branch string   `json:"branch,omitempty" jsonschema:"the branch (default main)"`
		Kinds  []string `json:"kinds,omitempty" jsonschema:"only node or only edge types (the snapshot and the cursor's filter)"`
		Types  []string `json:"types,omitempty" jsonschema:"only these node or edge types (the snapshot and the cursor's filter)"`
		Ops    []string `json:"ops,omitempty" jsonschema:"only these ops in the resumed feed: insert, update, delete (the cursor's filter only)"`
	}
	// BaselineRecord is the last line of a baseline: the commit the
	// snapshot is and the cursor that resumes the feed after it. A
	// baseline without it was cut short.
	BaselineRecord struct {
		Baseline BaselineEnd `json:"baseline"`
	}
	// BaselineEnd is the body of BaselineRecord.
	BaselineEnd struct {
		SnapshotCommitID string `json:"snapshot_commit_id"`
		ResumeCursor     string `json:"resume_cursor"`
	}
	// ChangeFeedGap (410): cleanup removed history the feed needs; take a
	// baseline.
	ChangeFeedGap struct {
		Cursor                  string `json:"cursor,omitempty"`
		FirstUnreadableCommitID string `json:"first_unreadable_commit_id"`
	}
)

// PollParams are the query parameters of GET changes.
var PollParams = []Param{
	{Name: "branch", Doc: "the branch (default: the cursor's, else main)"},
	{Name: "cursor", Doc: "the cursor of the last terminal page"},
	{Name: "start", Doc: "without a cursor: now (default), beginning or after:COMMIT_ID"},
	{Name: "page_token", Doc: "the next_page_token of a page that ended inside a block"},
	{Name: "limit", Doc: "at most this many changes a page (default 1000, at most 8192)", Integer: true},
	{Name: "max_bytes", Doc: "at most this many bytes of changes a page (default 4 MiB, at most 32 MiB)", Integer: true},
	{Name: "max_commits", Doc: "at most this many commits a poll (default 128, at most 512)", Integer: true},
	{Name: "kind", Doc: "only node or only edge changes", Repeat: true},
	{Name: "type", Doc: "only changes of these node or edge types", Repeat: true},
	{Name: "op", Doc: "only these ops: insert, update, delete", Repeat: true},
}

func feedRoutes(g string) []Route {
	return []Route{
		{Method: "GET", Path: g + "/changes", OperationID: "pollChanges", Admission: AdmitRead, Answer: AnswerJSON, Summary: "Poll the change feed of a branch: the entity changes of each commit after the cursor, in first-parent order", Auth: true, Graph: true, Idempotent: true,
			Query: PollParams, Response: "ChangeFeedOutput", Statuses: append([]int{409, 410, 413, 429}, readErrs...)},
		{Method: "POST", Path: g + "/changes/baseline", OperationID: "captureChangeBaseline", Admission: AdmitRead, Answer: AnswerStream, Summary: "Export a branch head as graph-batch NDJSON ending with the baseline record {\"baseline\":{snapshot_commit_id, resume_cursor}}: where a feed restarts after a 410 gap", Auth: true, Graph: true, Idempotent: true,
			Request: "BaselineRequest", Response: "BaselineNDJSON", Statuses: append([]int{413, 415, 429}, readErrs...)},
	}
}
