package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/load"
	"github.com/omnigraph-go/omnigraph/graph/merge"
	"github.com/omnigraph-go/omnigraph/graph/mutate"
	"github.com/omnigraph-go/omnigraph/graph/query"
	"github.com/omnigraph-go/omnigraph/manifest"
)

// The operations of the API, shared by the HTTP routes and the MCP tools:
// each takes its decoded input, checks the policy (403) and, for a
// write, takes an admission slot (429) before any engine work, then runs
// the engine. Errors go through MapError at the caller.

func orMain(b string) string {
	if b == "" {
		return manifest.MainBranch
	}
	return b
}

func (r *request) opQuery(q api.QueryRequest) (api.ReadOutput, error) {
	if strings.TrimSpace(q.Query) == "" {
		return api.ReadOutput{}, badRequest("query is required: the .gq source of a read query")
	}
	snap, _, err := r.readSnapshot(q.Branch, q.Snapshot, r.admitRead)
	if err != nil {
		return api.ReadOutput{}, err
	}
	start := time.Now()
	ctx, endRead := r.s.phase(r.Context(), "query.read")
	res, err := query.RunWith(ctx, snap, q.Query, q.Name, q.Params, query.Options{Budget: r.readBudget()})
	endRead(err)
	if err != nil {
		return api.ReadOutput{}, r.slowRefusal(start, err)
	}
	return readOutput(res, q), nil
}

// admitRead takes a read slot of the actor and of the server (429 past
// either) before the engine work of a read that can be large, and holds
// it until the answer is sent (a slow reader holds its slot, within
// Limits.WriteTimeout or StreamIdle).
func (r *request) admitRead() error {
	if r.readAdmitted {
		// Taken once per request (or tool call), by its table entry.
		return nil
	}
	release, f := r.s.adm.admitRead(actorOrAnon(r.actor))
	if f != nil {
		return f
	}
	r.readAdmitted = true
	r.onDone(release)
	return nil
}

func (r *request) opMutate(m api.MutateRequest, ifCommit string) (api.ChangeOutput, error) {
	if strings.TrimSpace(m.Query) == "" {
		return api.ChangeOutput{}, badRequest("query is required: the .gq source of a mutation")
	}
	branch := orMain(m.Branch)
	if err := r.authorize(ActionChange, branch, ""); err != nil {
		return api.ChangeOutput{}, err
	}
	opts := mutate.Options{Branch: m.Branch, Params: m.Params, IfCommit: ifCommit, Actor: r.actorID(),
		Budget: r.s.budgetFor(r.graphID, r.actor)}
	// Parse and type-check before taking a write slot: a mutation that
	// can never run holds none.
	pctx, endPlan := r.s.phase(r.Context(), "mutate.plan")
	err := mutate.Check(pctx, r.g, m.Query, m.Name, opts)
	endPlan(err)
	if err != nil {
		return api.ChangeOutput{}, err
	}
	release, err := r.admitWrite()
	if err != nil {
		return api.ChangeOutput{}, err
	}
	defer release()
	start := time.Now()
	// Stage and publish run inside mutate.Query, with no seam between
	// them: one span, "write.stage_publish".
	wctx, endWrite := r.s.phase(r.Context(), "write.stage_publish")
	res, err := mutate.Query(wctx, r.g, m.Query, m.Name, opts)
	endWrite(err)
	if err != nil {
		return api.ChangeOutput{}, r.slowRefusal(start, err)
	}
	out := api.ChangeOutput{Branch: branch, QueryName: m.Name, AffectedNodes: res.AffectedNodes, AffectedEdges: res.AffectedEdges, ActorID: r.actor, Commit: commitOutput(res.Commit), Warnings: res.Warnings}
	if res.Commit != nil {
		out.ActorID = res.Commit.Actor
		r.wrote(branch)
	}
	return out, nil
}

// opLoad loads a graph batch read from body. The policy is checked before
// the body is read: load on the branch, and branch_create and read on the
// base too when from names one (the branch is created from it if missing,
// and a fork of a branch is a copy of what it holds).
func (r *request) opLoad(body io.Reader, branch, from, modeS string) (api.LoadOutput, error) {
	branch = orMain(branch)
	if modeS == "" {
		modeS = string(load.Merge)
	}
	mode, err := load.ParseMode(modeS)
	if err != nil {
		return api.LoadOutput{}, badRequest("%s", err.Error())
	}
	if err := r.authorize(ActionLoad, branch, ""); err != nil {
		return api.LoadOutput{}, err
	}
	if from != "" {
		if err := r.authorize(ActionBranchCreate, from, branch); err != nil {
			return api.LoadOutput{}, err
		}
		if err := r.authorizeSource(from); err != nil {
			return api.LoadOutput{}, err
		}
	}
	release, err := r.admitWrite()
	if err != nil {
		return api.LoadOutput{}, err
	}
	defer release()
	out := api.LoadOutput{Branch: branch, Mode: string(mode), ActorID: r.actor}
	if from != "" {
		if _, err := r.g.Snapshot(r.Context(), branch); errors.Is(err, manifest.ErrBranchNotFound) {
			if _, err := r.g.CreateBranch(r.Context(), branch, from); err != nil {
				return api.LoadOutput{}, err
			}
			out.BranchCreated, out.BaseBranch = true, from
		} else if err != nil {
			return api.LoadOutput{}, err
		}
	}
	res, err := load.Run(r.Context(), r.g, body, load.Options{Branch: branch, Mode: mode, Actor: r.actorID(), CountEffects: true})
	if err != nil {
		if out.BranchCreated && MapError(err, r.graphID).Status < 500 {
			// A refused batch (4xx: nothing written) leaves no branch
			// behind either. After a 5xx the load may have landed on it,
			// so it stays.
			if derr := r.g.DeleteBranch(context.WithoutCancel(r.Context()), branch); derr != nil {
				r.s.log.Warn("could not delete the branch a refused load created", "graph", r.graphID, "failure_class", MapError(derr, r.graphID).Body.Class)
			}
		}
		return api.LoadOutput{}, err
	}
	out.Nodes, out.Edges, out.Types, out.TotalEntities = res.Nodes, res.Edges, res.Types, res.Nodes+res.Edges
	out.Inserted, out.Updated, out.Unchanged = res.Inserted, res.Updated, res.Unchanged
	out.Commit, out.Warnings = commitOutput(res.Commit), res.Warnings
	if res.Commit != nil {
		r.wrote(branch)
	}
	if out.Types == nil {
		out.Types = map[string]int{}
	}
	return out, nil
}

// opLoadJSON loads a batch sent inline (POST load, the graph_load tool).
func (r *request) opLoadJSON(in api.LoadRequest) (api.LoadOutput, error) {
	if (in.Data == "") == (len(in.Records) == 0) {
		return api.LoadOutput{}, badRequest("send the batch in exactly one of data (NDJSON text) or records (an array of line objects)")
	}
	if in.Data != "" {
		return r.opLoad(strings.NewReader(in.Data), in.Branch, in.From, in.Mode)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for i, rec := range in.Records {
		if err := enc.Encode(rec); err != nil {
			return api.LoadOutput{}, badRequest("records[%d]: %v", i, err)
		}
	}
	return r.opLoad(&buf, in.Branch, in.From, in.Mode)
}

func (r *request) opSnapshot(branch string) (api.SnapshotOutput, error) {
	branch = orMain(branch)
	if err := r.authorize(ActionRead, branch, ""); err != nil {
		return api.SnapshotOutput{}, err
	}
	snap, err := r.g.Snapshot(r.Context(), branch)
	if err != nil {
		return api.SnapshotOutput{}, err
	}
	stats, err := snap.TableStats(r.Context())
	if err != nil {
		return api.SnapshotOutput{}, err
	}
	out := api.SnapshotOutput{GraphBranch: snap.Branch(), GraphManifestVersion: snap.Version(), GraphCommitID: snap.CommitID(),
		InternalSchemaVersion: snap.Stamp(), SchemaIdentity: snap.SchemaIdentity(), Datasets: []api.DatasetOutput{}}
	for _, st := range stats {
		kind, name := "node", st.Key
		if k, n, ok := strings.Cut(st.Key, ":"); ok {
			kind, name = k, n
		}
		out.Datasets = append(out.Datasets, api.DatasetOutput{TypeName: name, EntityKind: kind, PublishedDatasetVersion: st.Version, EntityCount: st.Rows, NativeDatasetBranch: st.Branch})
	}
	return out, nil
}

// opSchema is the accepted schema of a branch head or, with snapID, of a
// past commit (what an export of that commit needs to be loaded again).
func (r *request) opSchema(branch, snapID string) (api.SchemaOutput, error) {
	snap, _, err := r.readSnapshot(branch, snapID, nil)
	if err != nil {
		return api.SchemaOutput{}, err
	}
	cat, err := snap.Catalog(r.Context())
	if err != nil {
		return api.SchemaOutput{}, err
	}
	return api.SchemaOutput{SchemaSource: cat.Source, SchemaIdentity: cat.Identity, Branch: snap.Branch()}, nil
}

func (r *request) opBranches() (api.BranchList, error) {
	if err := r.authorize(ActionRead, "", ""); err != nil {
		return api.BranchList{}, err
	}
	bs, err := r.g.Branches(r.Context())
	if err != nil {
		return api.BranchList{}, err
	}
	out := api.BranchList{Branches: []string{}, Heads: []api.BranchHead{}}
	for _, b := range bs {
		if !r.visibleBranch(b.Name) {
			continue
		}
		out.Branches = append(out.Branches, b.Name)
		out.Heads = append(out.Heads, api.BranchHead{Name: b.Name, Incarnation: b.Incarnation, GraphManifestVersion: b.Version})
	}
	return out, nil
}

func (r *request) opBranchCreate(b api.BranchCreateRequest) (api.BranchCreateOutput, error) {
	if b.Name == "" {
		return api.BranchCreateOutput{}, badRequest("name is required")
	}
	b.From = orMain(b.From)
	if err := r.authorize(ActionBranchCreate, b.From, b.Name); err != nil {
		return api.BranchCreateOutput{}, err
	}
	if err := r.authorizeSource(b.From); err != nil {
		return api.BranchCreateOutput{}, err
	}
	release, err := r.admitWrite()
	if err != nil {
		return api.BranchCreateOutput{}, err
	}
	defer release()
	snap, err := r.g.CreateBranch(r.Context(), b.Name, b.From)
	if err != nil {
		return api.BranchCreateOutput{}, err
	}
	r.icebergAfter(b.Name)
	return api.BranchCreateOutput{Name: b.Name, From: b.From, GraphCommitID: snap.CommitID(), Incarnation: snap.Entry().Incarnation, ActorID: r.actor}, nil
}

func (r *request) opBranchDelete(name string) (api.BranchDeleteOutput, error) {
	if name == "" {
		return api.BranchDeleteOutput{}, badRequest("name is required")
	}
	if err := r.authorize(ActionBranchDelete, "", name); err != nil {
		return api.BranchDeleteOutput{}, err
	}
	release, err := r.admitWrite()
	if err != nil {
		return api.BranchDeleteOutput{}, err
	}
	defer release()
	if err := r.g.DeleteBranch(r.Context(), name); err != nil {
		return api.BranchDeleteOutput{}, err
	}
	r.icebergAfter(icebergEveryBranch)
	return api.BranchDeleteOutput{Name: name, ActorID: r.actor}, nil
}

func (r *request) opMerge(m api.MergeRequest) (api.MergeOutput, error) {
	if m.Source == "" {
		return api.MergeOutput{}, badRequest("source is required: the branch to merge")
	}
	m.Target = orMain(m.Target)
	if err := r.authorize(ActionBranchMerge, m.Source, m.Target); err != nil {
		return api.MergeOutput{}, err
	}
	if err := r.authorizeSource(m.Source); err != nil {
		return api.MergeOutput{}, err
	}
	if m.DeleteBranch {
		// Checked before the merge, so a denied delete changes nothing.
		if err := r.authorize(ActionBranchDelete, "", m.Source); err != nil {
			return api.MergeOutput{}, err
		}
	}
	release, err := r.admitWrite()
	if err != nil {
		return api.MergeOutput{}, err
	}
	defer release()
	res, err := merge.Run(r.Context(), r.g, m.Source, m.Target, merge.Options{Actor: r.actorID()})
	if err != nil {
		return api.MergeOutput{}, err
	}
	out := api.MergeOutput{Source: res.Source, Target: res.Target, Outcome: string(res.Outcome), SourceCommit: res.SourceCommit, BaseCommit: res.BaseCommit,
		ActorID: r.actor, Commit: commitOutput(res.Commit), Inserted: res.Inserted, Updated: res.Updated, Deleted: res.Deleted, Warnings: res.Warnings}
	if res.Commit != nil {
		r.wrote(res.Target)
	}
	if m.DeleteBranch {
		ok := true
		if derr := r.g.DeleteBranch(r.Context(), m.Source); derr != nil {
			ok = false
			out.BranchDeleteError = MapError(derr, r.graphID).Body.Error
		} else {
			r.icebergAfter(icebergEveryBranch)
		}
		out.BranchDeleted = &ok
	}
	return out, nil
}

func (r *request) opCommits(branch string, limit int, firstParent bool) (api.CommitList, error) {
	branch = orMain(branch)
	if limit < 0 {
		return api.CommitList{}, badRequest("limit must be 0 (all) or a positive whole number")
	}
	if err := r.authorize(ActionRead, branch, ""); err != nil {
		return api.CommitList{}, err
	}
	cs, err := r.g.Log(r.Context(), branch, graph.LogOptions{Limit: limit, FirstParent: firstParent})
	if err != nil {
		return api.CommitList{}, err
	}
	out := api.CommitList{Commits: []api.CommitOutput{}}
	for i := range cs {
		// A commit a merge brought in from a branch the actor may not
		// read is not listed (reading it by id would be refused).
		if cs[i].Branch != branch && !r.visibleBranch(cs[i].Branch) {
			continue
		}
		out.Commits = append(out.Commits, *commitOutput(&cs[i]))
	}
	return out, nil
}

func (r *request) opCommit(id string) (api.CommitOutput, error) {
	if id == "" {
		return api.CommitOutput{}, badRequest("commit_id is required")
	}
	if err := r.authorize(ActionRead, "", ""); err != nil {
		return api.CommitOutput{}, err
	}
	c, err := r.g.Commit(r.Context(), id)
	if err == nil {
		err = r.authorizeCommit(ActionRead, id, c.Branch)
	}
	if err != nil {
		return api.CommitOutput{}, err
	}
	return *commitOutput(&c), nil
}

func (r *request) opChanges(id string, f merge.Filter) (api.ChangesOutput, error) {
	switch f.Op {
	case "", merge.OpInsert, merge.OpUpdate, merge.OpDelete:
	default:
		return api.ChangesOutput{}, badRequest("op must be insert, update or delete, not %q", f.Op)
	}
	if err := r.authorize(ActionRead, "", ""); err != nil {
		return api.ChangesOutput{}, err
	}
	if err := r.admitRead(); err != nil {
		return api.ChangesOutput{}, err
	}
	c, err := r.g.Commit(r.Context(), id)
	if err == nil {
		err = r.authorizeCommit(ActionRead, id, c.Branch)
	}
	if err != nil {
		return api.ChangesOutput{}, err
	}
	cs, err := merge.CommitChanges(r.Context(), r.g, id, f)
	if err != nil {
		return api.ChangesOutput{}, err
	}
	return api.ChangesOutput{Cause: *commitOutput(&c), Changes: apiChanges(cs)}, nil
}
