package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/graph/changes"
	"github.com/omnigraph-go/omnigraph/graph/diff"
	"github.com/omnigraph-go/omnigraph/graph/export"
)

// The change feed over HTTP and MCP (docs/changes.md): GET changes polls
// (graph/changes), POST changes/baseline exports a branch head and ends
// with the cursor that resumes the feed after it.

// pollSingle and pollRepeat are GET changes' parameters (api.PollParams):
// given once, or repeatable.
func pollParams() (single, repeat []string) {
	for _, p := range api.PollParams {
		if p.Repeat {
			repeat = append(repeat, p.Name)
		} else {
			single = append(single, p.Name)
		}
	}
	return single, repeat
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
	if errors.Is(err, strconv.ErrRange) && strings.TrimLeft(s, "0123456789") == "" {
		// Past 64 bits: as large as it gets, so it meets the same
		// bound (413) as any other value over it.
		return math.MaxInt64, nil
	}
	if err != nil || n < 0 {
		return 0, badRequest("%s must be a positive whole number (0: the default)", k)
	}
	return n, nil
}

func handlePollChanges(r *request) (int, any, error) {
	q := r.URL.Query()
	single, repeat := pollParams()
	if err := strictQuery(q, single, repeat); err != nil {
		return 0, nil, err
	}
	in := api.PollRequest{Branch: q.Get("branch"), Cursor: q.Get("cursor"), Start: q.Get("start"), PageToken: q.Get("page_token"),
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
func (r *request) opPollChanges(in api.PollRequest) (*api.ChangeFeedOutput, error) {
	req := changes.Request{Branch: in.Branch, Cursor: in.Cursor, PageToken: in.PageToken,
		Filter:     feedFilter(in.Kinds, in.Types, in.Ops),
		MaxChanges: in.Limit, MaxBytes: in.MaxBytes, MaxCommits: in.MaxCommits,
		// after:COMMIT_ID is a read by commit id (authz.go).
		Visible: r.visibleBranch}
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
	if err := r.admitRead(); err != nil {
		return nil, err
	}
	p, err := changes.Poll(r.Context(), r.g, req)
	if err != nil {
		return nil, err
	}
	return feedOutput(p), nil
}

// apiChanges are entity changes as the API answers them (never null).
func apiChanges(cs []diff.Change) []api.Change {
	out := make([]api.Change, len(cs))
	for i, ch := range cs {
		// Values as a query prints them (a Date "2026-03-01", not its day
		// number): the one encoding of every output.
		before, after := ch.Rendered()
		out[i] = api.Change{EntityKind: ch.EntityKind, TypeName: ch.TypeName, ID: ch.ID, Op: string(ch.Op), Before: before, After: after, From: ch.From, To: ch.To}
	}
	return out
}

// feedOutput is a poll's page as the API answers it.
func feedOutput(p *changes.Page) *api.ChangeFeedOutput {
	out := &api.ChangeFeedOutput{Branch: p.Branch, Blocks: []api.ChangeBlock{}, Cursor: p.Cursor, NextPageToken: p.NextPageToken,
		CaughtUp: p.CaughtUp, HeadCommitID: p.Head}
	for _, b := range p.Blocks {
		c := b.Cause
		out.Blocks = append(out.Blocks, api.ChangeBlock{
			Cause: api.ChangeCause{GraphCommitID: c.CommitID, ParentCommitID: c.ParentCommitID, MergedParentCommitID: c.MergedParentCommitID,
				AuthoredBranch: c.Branch, GraphManifestVersion: c.ManifestVersion, ActorID: c.Actor, AuthoredAt: c.AuthoredAt},
			Changes: apiChanges(b.Changes),
		})
	}
	return out
}

// handleBaseline streams the export of a branch head, then the baseline
// record. The policy (export), the branch, the filter and the cursor are
// settled before the first byte; a failure after it cuts the connection,
// and a body without the baseline record is incomplete.
func handleBaseline(r *request) (int, any, error) {
	var in api.BaselineRequest
	if err := r.decode(&in); err != nil {
		return 0, nil, err
	}
	branch := orMain(in.Branch)
	if err := r.authorize(ActionExport, branch, ""); err != nil {
		return 0, nil, err
	}
	if err := r.admitRead(); err != nil {
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
	_ = enc.Encode(api.BaselineRecord{Baseline: api.BaselineEnd{SnapshotCommitID: snap.CommitID(), ResumeCursor: cursor}})
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
		e.w.Header().Set(api.HeaderGraphCommit, e.commit)
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
		return &Failure{Status: http.StatusGone, Body: api.ErrorOutput{Error: gap.Error(),
			ChangeFeedGap: &api.ChangeFeedGap{Cursor: gap.Cursor, FirstUnreadableCommitID: gap.FirstUnreadableCommitID}}}
	case errors.As(err, &le):
		return &Failure{Status: http.StatusRequestEntityTooLarge, Body: api.ErrorOutput{Error: le.Error() + "; ask for less", Code: api.CodeBadRequest,
			ResourceLimit: &api.ResourceLimit{Resource: le.Resource, Limit: le.Limit, Actual: le.Actual}}}
	case errors.Is(err, changes.ErrCursorRejected):
		return badRequest("%s", userText(err))
	}
	return nil
}
