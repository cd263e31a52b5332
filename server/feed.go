package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/omnigraph-go/omnigraph/graph/changes"
	"github.com/omnigraph-go/omnigraph/graph/diff"
	"github.com/omnigraph-go/omnigraph/graph/export"
)

// The change feed over HTTP and MCP (docs/changes.md): GET changes polls
// (graph/changes), POST changes/baseline exports a branch head and ends
// with the cursor that resumes the feed after it.

type (
	// ChangeFeedOutput is GET changes: the blocks of one poll. cursor and
	// caught_up are set on a terminal page; next_page_token instead when
	// the page ends inside a block.
	ChangeFeedOutput = changes.Page
	// ChangeBlock is one commit's changes against its first parent.
	ChangeBlock = changes.Block
	// ChangeCause is the commit of a block.
	ChangeCause = changes.Cause
	// BaselineRequest is POST changes/baseline.
	BaselineRequest struct {
		Branch string   `json:"branch,omitempty" jsonschema:"the branch (default main)"`
		Kinds  []string `json:"kind,omitempty" jsonschema:"only node or only edge types (the snapshot and the cursor's filter)"`
		Types  []string `json:"type,omitempty" jsonschema:"only these node or edge types (the snapshot and the cursor's filter)"`
		Ops    []string `json:"op,omitempty" jsonschema:"only these ops in the resumed feed: insert, update, delete (the cursor's filter only)"`
	}
	// BaselineRecord is the last line of a baseline: the commit the
	// snapshot is and the cursor that resumes the feed after it.
	BaselineRecord struct {
		Baseline BaselineEnd `json:"baseline"`
	}
	// BaselineEnd is the body of BaselineRecord.
	BaselineEnd struct {
		SnapshotCommitID string `json:"snapshot_commit_id"`
		ResumeCursor     string `json:"resume_cursor"`
	}
	// ChangeFeedGap (410): cleanup removed history the feed needs.
	ChangeFeedGap struct {
		Cursor                  string `json:"cursor,omitempty"`
		FirstUnreadableCommitID string `json:"first_unreadable_commit_id"`
	}
	// ChangesPollInput is the changes_poll tool's input (GET changes).
	ChangesPollInput struct {
		Branch     string   `json:"branch,omitempty" jsonschema:"the branch (default: the cursor's, else main)"`
		Cursor     string   `json:"cursor,omitempty" jsonschema:"the cursor of the last terminal page"`
		Start      string   `json:"start,omitempty" jsonschema:"without a cursor: now (default), beginning or after:COMMIT_ID"`
		PageToken  string   `json:"page_token,omitempty" jsonschema:"the next_page_token of a page that ended inside a block"`
		Limit      int      `json:"limit,omitempty" jsonschema:"at most this many changes a page (default 1000, at most 8192)"`
		MaxBytes   int64    `json:"max_bytes,omitempty" jsonschema:"at most this many bytes of changes a page (default 4 MiB, at most 32 MiB)"`
		MaxCommits int      `json:"max_commits,omitempty" jsonschema:"at most this many commits a poll (default 128, at most 512)"`
		Kinds      []string `json:"kind,omitempty" jsonschema:"only node or only edge changes"`
		Types      []string `json:"type,omitempty" jsonschema:"only changes of these node or edge types"`
		Ops        []string `json:"op,omitempty" jsonschema:"only these ops: insert, update, delete"`
	}
)

// Query parameters of GET changes: single and repeatable ones.
var (
	changesParams       = []string{"branch", "cursor", "start", "page_token", "limit", "max_bytes", "max_commits"}
	changesRepeatParams = []string{"kind", "type", "op"}
)

// feedRoutes are the change feed's entries of the route table.
func feedRoutes(g string) []Route {
	return []Route{
		{Method: "GET", Path: g + "/changes", OperationID: "pollChanges", Summary: "Poll the change feed of a branch: the entity changes of each commit after the cursor, first-parent order (docs/changes.md)", Auth: true, Graph: true,
			Query: append(slices.Clone(changesParams), changesRepeatParams...), Response: "ChangeFeedOutput", Statuses: append([]int{409, 410, 413}, readErrs...), handle: handlePollChanges},
		{Method: "POST", Path: g + "/changes/baseline", OperationID: "captureChangeBaseline", Summary: "Export a branch head as graph-batch NDJSON ending with {\"baseline\":{snapshot_commit_id, resume_cursor}}: where a feed restarts after a 410 gap", Auth: true, Graph: true,
			Request: "BaselineRequest", Response: "NDJSON", Statuses: append([]int{413, 415}, readErrs...), handle: handleBaseline},
	}
}

// strictQuery refuses query parameters a route does not take, and a
// single-valued one given twice.
func strictQuery(q url.Values, single, repeat []string) error {
	for k, vs := range q {
		switch {
		case slices.Contains(repeat, k):
		case slices.Contains(single, k):
			if len(vs) > 1 {
				return badRequest("query parameter %q is given %d times; give it once", k, len(vs))
			}
		default:
			return badRequest("unknown query parameter %q; this route takes %s", k, strings.Join(append(slices.Clone(single), repeat...), ", "))
		}
	}
	return nil
}

// listParam reads a repeatable parameter: repeated or comma-separated.
func listParam(q url.Values, k string) []string {
	var out []string
	for _, v := range q[k] {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

func intParam(q url.Values, k string) (int64, error) {
	s := q.Get(k)
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, badRequest("%s must be a positive whole number (0: the default)", k)
	}
	return n, nil
}

func handlePollChanges(r *request) (int, any, error) {
	q := r.URL.Query()
	if err := strictQuery(q, changesParams, changesRepeatParams); err != nil {
		return 0, nil, err
	}
	in := ChangesPollInput{Branch: q.Get("branch"), Cursor: q.Get("cursor"), Start: q.Get("start"), PageToken: q.Get("page_token"),
		Kinds: listParam(q, "kind"), Types: listParam(q, "type"), Ops: listParam(q, "op")}
	for k, dst := range map[string]*int64{"max_bytes": &in.MaxBytes} {
		n, err := intParam(q, k)
		if err != nil {
			return 0, nil, err
		}
		*dst = n
	}
	for k, dst := range map[string]*int{"limit": &in.Limit, "max_commits": &in.MaxCommits} {
		n, err := intParam(q, k)
		if err != nil {
			return 0, nil, err
		}
		if n > 1<<20 {
			n = 1 << 20 // above every ceiling: the engine answers 413
		}
		*dst = int(n)
	}
	out, err := r.opPollChanges(in)
	return 200, out, err
}

func feedFilter(kinds, types, ops []string) changes.Filter {
	f := changes.Filter{Kinds: kinds, Types: types}
	for _, o := range ops {
		f.Ops = append(f.Ops, diff.Op(o))
	}
	return f
}

// opPollChanges is one poll: read on the branch (the cursor's, when it
// names one and no branch is given).
func (r *request) opPollChanges(in ChangesPollInput) (*ChangeFeedOutput, error) {
	req := changes.Request{Branch: in.Branch, Cursor: in.Cursor, PageToken: in.PageToken,
		Filter:     feedFilter(in.Kinds, in.Types, in.Ops),
		MaxChanges: in.Limit, MaxBytes: in.MaxBytes, MaxCommits: in.MaxCommits}
	if in.Start != "" {
		st, err := changes.ParseStart(in.Start)
		if err != nil {
			return nil, err
		}
		req.Start = &st
	}
	branch, err := changes.BranchOf(req)
	if err != nil {
		return nil, err
	}
	if err := r.authorize(ActionRead, branch, ""); err != nil {
		return nil, err
	}
	return changes.Poll(r.Context(), r.g, req)
}

// handleBaseline streams the export of a branch head, then the baseline
// record. The policy (export), the branch, the filter and the cursor are
// settled before the first byte; a failure after it cuts the connection,
// and a body without the baseline record is incomplete.
func handleBaseline(r *request) (int, any, error) {
	var in BaselineRequest
	if err := r.decode(&in); err != nil {
		return 0, nil, err
	}
	branch := orMain(in.Branch)
	if err := r.authorize(ActionExport, branch, ""); err != nil {
		return 0, nil, err
	}
	snap, err := r.g.Snapshot(r.Context(), branch)
	if err != nil {
		return 0, nil, err
	}
	f := feedFilter(in.Kinds, in.Types, in.Ops)
	cursor, err := changes.CursorAt(r.Context(), r.g, snap, f)
	if err != nil {
		return 0, nil, err
	}
	types, err := changes.BaselineTypes(r.Context(), snap, f)
	if err != nil {
		return 0, nil, err
	}
	ew := &streamWriter{w: r.w, commit: snap.CommitID()}
	if len(types) > 0 {
		if _, err := export.Run(r.Context(), snap, ew, export.Options{Types: types}); err != nil {
			if !ew.started {
				return 0, nil, err
			}
			r.cut(err)
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(BaselineRecord{Baseline: BaselineEnd{SnapshotCommitID: snap.CommitID(), ResumeCursor: cursor}})
	if _, err := ew.Write(buf.Bytes()); err != nil {
		r.cut(err)
	}
	return 0, nil, nil
}

// streamWriter sends an NDJSON answer's headers with its first bytes.
type streamWriter struct {
	w       http.ResponseWriter
	commit  string
	started bool
}

func (e *streamWriter) Write(p []byte) (int, error) {
	if !e.started {
		e.started = true
		e.w.Header().Set("Content-Type", "application/x-ndjson")
		e.w.Header().Set(HeaderGraphCommit, e.commit)
		e.w.WriteHeader(http.StatusOK)
	}
	return e.w.Write(p)
}

// cut ends a streamed answer that failed after its first bytes: logged
// by failure class, then the connection is dropped (the client sees an
// incomplete body).
func (r *request) cut(err error) {
	f := MapError(err, r.graphID)
	r.s.log.Warn("stream cut after its first bytes", "graph", r.graphID, "status", f.Status, "failure_class", f.Body.Class)
	if sw, ok := r.w.(*statusWriter); ok {
		sw.class = "stream_cut"
	}
	panic(http.ErrAbortHandler)
}

// mapFeedError maps the change feed's errors (nil: not one of them).
func mapFeedError(err error) *Failure {
	var gap *changes.GapError
	var le *changes.LimitError
	switch {
	case errors.As(err, &gap):
		return &Failure{Status: http.StatusGone, Body: ErrorOutput{Error: gap.Error(),
			ChangeFeedGap: &ChangeFeedGap{Cursor: gap.Cursor, FirstUnreadableCommitID: gap.FirstUnreadableCommitID}}}
	case errors.As(err, &le):
		return &Failure{Status: http.StatusRequestEntityTooLarge, Body: ErrorOutput{Error: le.Error() + "; ask for less", Code: CodeBadRequest,
			ResourceLimit: &ResourceLimit{Resource: le.Resource, Limit: le.Limit, Actual: le.Actual}}}
	case errors.Is(err, changes.ErrCursorRejected):
		return badRequest("%s", userText(err))
	}
	return nil
}
