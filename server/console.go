package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/clusterlock"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/merge"
	"github.com/omnigraph-go/omnigraph/lang/gq"
	"github.com/omnigraph-go/omnigraph/lang/pg"
	"github.com/omnigraph-go/omnigraph/manifest"
	"github.com/omnigraph-go/omnigraph/server/ui"
)

// The handlers of the routes the web console (server/ui) reads beyond the
// core API (api/console.go): the graph's state, its schema as types, a
// type check, branch heads with their divergence, a merge preview and a
// diff between two refs. They are ordinary authenticated routes of the
// table (OpenAPI, policy, limits): every one reads, and authorizes before
// any engine work.

// mountUI serves the console's public files at /ui/ and sends / and /ui
// there. The files hold no data: the app calls the routes of the table.
func (s *Server) mountUI() error {
	h, err := ui.New()
	if err != nil {
		return err
	}
	s.mux.Handle("GET "+ui.Prefix, h)
	to := func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, ui.Prefix, http.StatusFound) }
	s.mux.HandleFunc("GET /ui", to)
	s.mux.HandleFunc("GET /{$}", to)
	return nil
}

// actionsAllowed lists which of acts this server would let the caller do
// on the graph (branch "") or on a branch (as the resource): what the
// policy permits, less every write on a read-only replica.
func (r *request) actionsAllowed(branch, target string, acts ...Action) []string {
	out := []string{}
	for _, a := range acts {
		if r.s.cfg.ReadOnly && a != ActionRead && a != ActionExport {
			continue
		}
		if r.s.policy.Authorize(AuthzRequest{Actor: actorOrAnon(r.actor), Graph: r.graphID, Action: a, Branch: branch, TargetBranch: target}).Allowed {
			out = append(out, string(a))
		}
	}
	return out
}

func handleStatus(r *request) (int, any, error) {
	out, err := r.opStatus()
	return 200, out, err
}

func (r *request) opStatus() (api.StatusOutput, error) {
	if err := r.authorize(ActionRead, "", ""); err != nil {
		return api.StatusOutput{}, err
	}
	ctx := r.Context()
	cfg := r.s.cfg
	out := api.StatusOutput{GraphID: r.graphID, ServerVersion: cfg.Version, Mode: "read-write", StorageKind: r.s.storage[r.graphID],
		Actor: actorOrAnon(r.actor), Auth: cfg.Tokens != nil,
		AllowedActions: r.actionsAllowed("", "", Actions()...),
		Limits: api.StatusLimits{BodyBytes: cfg.Limits.BodyBytes, LoadBytes: cfg.Limits.LoadBytes,
			WritesPerActor: cfg.Limits.WritesPerActor, WritesPerGraph: cfg.Limits.WritesPerGraph}}
	if cfg.ReadOnly {
		out.Mode = "read-only"
	}
	if out.StorageKind == "" {
		out.StorageKind = "unknown"
	}
	ls, err := clusterlock.Status(ctx, r.g.Store(), clusterlock.Options{})
	if err != nil {
		return api.StatusOutput{}, err
	}
	out.Lock = api.LockOutput{Held: ls.Held, Leased: ls.Leased, LeaseSeconds: ls.LeaseSeconds, UnknownFormat: ls.UnknownFormat}
	if ls.Held && !ls.UnknownFormat {
		h := ls.Holder
		out.Lock.Operation, out.Lock.Host, out.Lock.PID, out.Lock.BinaryVersion = h.Operation, h.Owner.Host, h.Owner.PID, h.Owner.Version
		out.Lock.Since = h.CreatedAt.UTC().Format(time.RFC3339)
		if !ls.LastHeartbeat.IsZero() {
			out.Lock.LastHeartbeat = ls.LastHeartbeat.UTC().Format(time.RFC3339)
		}
	}
	pending, err := r.g.PendingRecovery(ctx)
	if err != nil {
		return api.StatusOutput{}, err
	}
	out.Recovery = api.RecoveryOutput{Pending: len(pending), Intents: []api.IntentOutput{}, State: "clean"}
	if len(pending) > 0 {
		out.Recovery.State = "pending"
	}
	for _, a := range pending {
		in := a.Sidecar.Intent
		branch := in.Token.Branch
		if !r.visibleBranch(branch) {
			branch = "" // the intent is counted, its branch not named
		}
		out.Recovery.Intents = append(out.Recovery.Intents, api.IntentOutput{Kind: in.Kind, Actor: in.Actor, Branch: branch,
			Classification: string(a.Class), StartedAt: time.UnixMicro(a.Sidecar.CreatedMicros).UTC().Format(time.RFC3339)})
	}
	if c := r.s.compactors[r.graphID]; c != nil {
		running, pend, runs, last := c.state()
		out.AutoOptimize = api.AutoOptimizeOutput{Enabled: true, Threshold: c.threshold, Running: running, Pending: pend, Runs: runs,
			LastBranch: last.branch, LastOutcome: last.outcome}
		if !r.visibleBranch(last.branch) {
			out.AutoOptimize.LastBranch = ""
		}
		if !last.at.IsZero() {
			out.AutoOptimize.LastAt = last.at.UTC().Format(time.RFC3339)
		}
	}
	bs, err := r.g.Branches(ctx)
	if err != nil {
		return api.StatusOutput{}, err
	}
	// Status shows only the branches the actor may read: their number,
	// and main's head when main is one.
	for _, b := range bs {
		if r.visibleBranch(b.Name) {
			out.Branches++
		}
	}
	if !r.visibleBranch(manifest.MainBranch) {
		return out, nil
	}
	snap, err := r.g.Snapshot(ctx, manifest.MainBranch)
	if err != nil {
		return api.StatusOutput{}, err
	}
	c, err := snap.Commit(ctx)
	if err != nil {
		return api.StatusOutput{}, err
	}
	out.MainHead = commitOutput(&c)
	return out, nil
}

// readSnapshot authorizes a read of a branch head (default main) or of a
// commit and returns the snapshot: the one rule of every route that reads
// "a branch or a snapshot" (query, catalog, query/check). A snapshot may
// be of any branch, so reading one needs read on the whole graph, and on
// the branch that published it (authorizeCommit). admit,
// when not nil, runs between the authorization and the first storage
// read (the query route's read admission).
func (r *request) readSnapshot(branch, snapID string, admit func() error) (*graph.Snapshot, api.ReadTarget, error) {
	if branch != "" && snapID != "" {
		return nil, api.ReadTarget{}, badRequest("read either a branch or a snapshot, not both")
	}
	target := api.ReadTarget{Snapshot: snapID}
	if snapID == "" {
		target.Branch = orMain(branch)
	}
	// target.Branch is "" for a snapshot: read on the whole graph.
	if err := r.authorize(ActionRead, target.Branch, ""); err != nil {
		return nil, api.ReadTarget{}, err
	}
	if admit != nil {
		if err := admit(); err != nil {
			return nil, api.ReadTarget{}, err
		}
	}
	if snapID != "" {
		s, err := r.g.SnapshotAt(r.Context(), snapID)
		if err == nil {
			err = r.authorizeCommit(ActionRead, snapID, s.Branch())
		}
		if err != nil {
			return nil, api.ReadTarget{}, err
		}
		return s, target, nil
	}
	s, err := r.g.Snapshot(r.Context(), target.Branch)
	return s, target, err
}

func handleCatalog(r *request) (int, any, error) {
	qv := r.URL.Query()
	out, err := r.opCatalog(qv.Get("branch"), qv.Get("snapshot"))
	return 200, out, err
}

func (r *request) opCatalog(branch, snapID string) (api.CatalogOutput, error) {
	snap, target, err := r.readSnapshot(branch, snapID, nil)
	if err != nil {
		return api.CatalogOutput{}, err
	}
	ctx := r.Context()
	cat, err := snap.Catalog(ctx)
	if err != nil {
		return api.CatalogOutput{}, err
	}
	stats, err := snap.TableStats(ctx)
	if err != nil {
		return api.CatalogOutput{}, err
	}
	rows := map[string]int64{}
	for _, st := range stats {
		rows[st.Key] = st.Rows
	}
	out := api.CatalogOutput{Target: target, GraphCommitID: snap.CommitID(), SchemaIdentity: cat.Identity, Nodes: []api.CatalogType{}, Edges: []api.CatalogType{}}
	for _, n := range cat.Nodes {
		out.Nodes = append(out.Nodes, api.CatalogType{Name: n.Name, Description: n.Description(), Key: n.Key, Unique: n.Unique, Index: n.Index,
			Properties: catalogProps(n.Properties), Rows: rows[graph.NodeTableKey(n.Name)]})
	}
	for _, e := range cat.Edges {
		out.Edges = append(out.Edges, api.CatalogType{Name: e.Name, Description: e.Description(), From: e.From, To: e.To, Cardinality: e.Card.String(),
			Unique: e.Unique, Index: e.Index, Properties: catalogProps(e.Properties), Rows: rows[graph.EdgeTableKey(e.Name)]})
	}
	return out, nil
}

func catalogProps(ps []*pg.Property) []api.CatalogProperty {
	out := make([]api.CatalogProperty, 0, len(ps))
	for _, p := range ps {
		cp := api.CatalogProperty{Name: p.Name, Type: p.Type.String(), Nullable: p.Nullable, Key: p.Key, Unique: p.Unique, Index: p.Index,
			Inherited: p.Inherited, Description: p.Annotations.Text("description")}
		if p.Embed != nil {
			cp.Embed = p.Embed.Source
		}
		out = append(out, cp)
	}
	return out
}

func handleCheck(r *request) (int, any, error) {
	var in api.CheckRequest
	if err := r.decode(&in); err != nil {
		return 0, nil, err
	}
	out, err := r.opCheck(in)
	return 200, out, err
}

// opCheck answers with gq.Lint's verdict and findings, the ones `omnigraph
// lint` prints for the same source and schema (one function decides both),
// and adds what the console draws from each declaration: its parameters
// (even when it has errors), and for one that checks its columns, links
// and plan. Errors in the text are the answer (200, ok false), never a
// failure of the request; warnings never make ok false.
func (r *request) opCheck(in api.CheckRequest) (api.CheckOutput, error) {
	snap, _, err := r.readSnapshot(in.Branch, in.Snapshot, nil)
	if err != nil {
		return api.CheckOutput{}, err
	}
	cat, err := snap.Catalog(r.Context())
	if err != nil {
		return api.CheckOutput{}, err
	}
	rep := gq.Lint(in.Query, cat)
	out := api.CheckOutput{OK: rep.Errors == 0, SchemaIdentity: cat.Identity, Queries: []api.CheckedQuery{},
		Errors: []api.CheckError{}, Warnings: []api.CheckError{}}
	for _, f := range rep.Findings {
		if f.Severity == gq.SeverityError {
			out.Errors = append(out.Errors, checkFinding(f))
		} else {
			out.Warnings = append(out.Warnings, checkFinding(f))
		}
	}
	f, err := gq.Parse(in.Query)
	if err != nil || len(f.Queries) != len(rep.Results) {
		// Lint did not parse it either: its findings say why.
		return out, nil
	}
	for i, q := range f.Queries {
		cq := api.CheckedQuery{Name: q.Name, Kind: rep.Results[i].Kind, Line: q.Pos.Line, Params: []api.CheckParam{}}
		for _, p := range q.Params {
			t := *p.Type
			t.Nullable = false
			cq.Params = append(cq.Params, api.CheckParam{Name: p.Name, Type: t.String(), Nullable: p.Type.Nullable})
		}
		if rep.Results[i].Status == "ok" {
			// The plan of a query Lint found sound.
			pl, err := gq.CheckQuery(q, cat)
			if err != nil {
				return api.CheckOutput{}, fmt.Errorf("query %s: lint passed it, its plan failed: %w", q.Name, err)
			}
			cq.OK, cq.Description, cq.Plan = true, pl.Description, pl.String()
			if rp := pl.Read; rp != nil {
				cq.Columns, cq.Links = planColumns(rp)
			}
		}
		out.Queries = append(out.Queries, cq)
	}
	return out, nil
}

// checkFinding is one lint finding as the check answers it: our code (the
// query routes' GQ code, or the lint code of a lint-only finding), the
// code `omnigraph lint` prints, and the message without the code and
// position the fields already carry.
func checkFinding(f gq.LintFinding) api.CheckError {
	e := api.CheckError{Code: f.Code, LintCode: f.Code, Line: f.Line, Column: f.Column, Message: f.Message, Type: f.Type, Property: f.Property}
	if f.GQCode != "" {
		e.Code = f.GQCode
		// "GQ010 in query "q" at 2:15: unknown ..." -> "unknown ...": a
		// query name is an identifier, so the first ": " ends the prefix.
		if strings.HasPrefix(e.Message, f.GQCode) {
			if _, rest, ok := strings.Cut(e.Message, ": "); ok {
				e.Message = rest
			}
		}
	}
	if len(f.Queries) == 1 {
		e.Query = f.Queries[0]
	} else if len(f.Queries) > 1 {
		e.Queries = f.Queries
	}
	return e
}

// planColumns lists a read plan's columns and the links between its
// whole-node columns: an expansion of the plan's main pipeline (not inside
// a negation) from one returned node variable to another.
func planColumns(rp *gq.ReadPlan) ([]api.CheckColumn, []api.CheckLink) {
	cols := make([]api.CheckColumn, 0, len(rp.Columns))
	nodeCol := map[int]string{}
	for _, c := range rp.Columns {
		cc := api.CheckColumn{Name: c.Name, Type: c.Type.String()}
		if c.Kind == gq.ColumnNode {
			v := rp.Vars[c.Expr.Var]
			cc.NodeType, cc.Type = v.Node.Name, "node"
			if _, dup := nodeCol[c.Expr.Var]; !dup {
				nodeCol[c.Expr.Var] = c.Name
			}
		}
		cols = append(cols, cc)
	}
	var links []api.CheckLink
	for _, st := range rp.Steps {
		ex, ok := st.(*gq.ExpandStep)
		if !ok {
			continue
		}
		from, okF := nodeCol[ex.From]
		to, okT := nodeCol[ex.To]
		if !okF || !okT {
			continue
		}
		if ex.Dir == gq.In {
			from, to = to, from
		}
		links = append(links, api.CheckLink{From: from, To: to, Edge: ex.Edge.Name, MinHops: ex.MinHops, MaxHops: ex.MaxHops})
	}
	return cols, links
}

// maxDivergence caps the ahead/behind walk of each branch by default: a
// branch far from its base shows "at least" (counts_capped) instead of
// costing reads in proportion to its history (?max= asks for more).
const maxDivergence = 100

func handleBranchHeads(r *request) (int, any, error) {
	qv := r.URL.Query()
	limit := maxDivergence
	if s := qv.Get("max"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 100000 {
			return 0, nil, badRequest("max must be a whole number from 1 to 100000 (the most commits counted ahead or behind)")
		}
		limit = n
	}
	out, err := r.opBranchHeads(qv.Get("base"), limit)
	return 200, out, err
}

// headsParallel bounds the branches read at once.
const headsParallel = 8

func (r *request) opBranchHeads(base string, limit int) (api.BranchHeadsOutput, error) {
	base = orMain(base)
	if err := r.authorize(ActionRead, "", ""); err != nil {
		return api.BranchHeadsOutput{}, err
	}
	// The base's counts describe it: read on it too.
	if err := r.authorize(ActionRead, base, ""); err != nil {
		return api.BranchHeadsOutput{}, err
	}
	ctx := r.Context()
	bs, err := r.g.Branches(ctx)
	if err != nil {
		return api.BranchHeadsOutput{}, err
	}
	// Only the branches the actor may read are listed (and read).
	bs = slices.DeleteFunc(bs, func(b graph.BranchInfo) bool { return !r.visibleBranch(b.Name) })
	baseSnap, err := r.g.Snapshot(ctx, base)
	if err != nil {
		return api.BranchHeadsOutput{}, err
	}
	out := api.BranchHeadsOutput{Base: base, Branches: make([]api.BranchStatus, len(bs))}
	eg, ectx := errgroup.WithContext(ctx)
	eg.SetLimit(headsParallel)
	for i, b := range bs {
		eg.Go(func() error {
			h, err := r.branchHead(ectx, b.Name, base, baseSnap, limit)
			if errors.Is(err, manifest.ErrBranchNotFound) {
				h.Name = "" // deleted since the list: dropped below
				err = nil
			}
			out.Branches[i] = h
			return err
		})
	}
	if err := eg.Wait(); err != nil {
		return api.BranchHeadsOutput{}, err
	}
	kept := out.Branches[:0]
	for _, h := range out.Branches {
		if h.Name != "" {
			kept = append(kept, h)
		}
	}
	out.Branches = kept
	return out, nil
}

func (r *request) branchHead(ctx context.Context, name, base string, baseSnap *graph.Snapshot, limit int) (api.BranchStatus, error) {
	snap, err := r.g.Snapshot(ctx, name)
	if err != nil {
		return api.BranchStatus{}, err
	}
	c, err := snap.Commit(ctx)
	if err != nil {
		return api.BranchStatus{}, err
	}
	h := api.BranchStatus{Name: name, Head: *commitOutput(&c), AllowedActions: []string{}}
	if name != base {
		d, err := merge.AheadBehind(ctx, snap, baseSnap, limit)
		if err != nil {
			return api.BranchStatus{}, err
		}
		h.Ahead, h.Behind, h.CountsCapped = d.Ahead, d.Behind, d.Capped
	}
	// Each action asked as its route asks it.
	h.AllowedActions = append(h.AllowedActions, r.actionsAllowed(name, "", ActionChange, ActionLoad)...)
	if name != manifest.MainBranch {
		h.AllowedActions = append(h.AllowedActions, r.actionsAllowed("", name, ActionBranchDelete)...)
	}
	if name != base {
		h.AllowedActions = append(h.AllowedActions, r.actionsAllowed(name, base, ActionBranchMerge)...)
	}
	h.AllowedActions = append(h.AllowedActions, r.actionsAllowed(name, name, ActionBranchCreate)...)
	return h, nil
}

func handleMergePreview(r *request) (int, any, error) {
	var in api.MergePreviewRequest
	if err := r.decode(&in); err != nil {
		return 0, nil, err
	}
	out, err := r.opMergePreview(in)
	return 200, out, err
}

// opMergePreview needs read on both branches: it shows their rows.
func (r *request) opMergePreview(in api.MergePreviewRequest) (api.MergePreviewOutput, error) {
	if in.Source == "" {
		return api.MergePreviewOutput{}, badRequest("source is required: the branch to merge")
	}
	if in.Limit < 0 {
		return api.MergePreviewOutput{}, badRequest("limit must be 0 (all) or a positive whole number")
	}
	in.Target = orMain(in.Target)
	for _, b := range []string{in.Source, in.Target} {
		if err := r.authorize(ActionRead, b, ""); err != nil {
			return api.MergePreviewOutput{}, err
		}
	}
	pv, err := merge.Preview(r.Context(), r.g, in.Source, in.Target, merge.PreviewOptions{Limit: in.Limit})
	if err != nil {
		return api.MergePreviewOutput{}, err
	}
	return api.MergePreviewOutput{Source: pv.Source, Target: pv.Target, Outcome: string(pv.Outcome), SourceCommit: pv.SourceCommit, BaseCommit: pv.BaseCommit,
		Inserted: pv.Inserted, Updated: pv.Updated, Deleted: pv.Deleted, Changes: apiChanges(pv.Changes), Truncated: pv.Truncated, Conflicts: apiConflicts(pv.Conflicts)}, nil
}

func handleDiff(r *request) (int, any, error) {
	var in api.DiffRequest
	if err := r.decode(&in); err != nil {
		return 0, nil, err
	}
	if in.Limit < 0 {
		return 0, nil, badRequest("limit must be 0 (all) or a positive whole number")
	}
	out, err := r.opDiff(in.From, in.To, merge.Filter{Type: in.Type, Op: merge.Op(in.Op), Limit: in.Limit})
	return 200, out, err
}

func (r *request) opDiff(from, to string, f merge.Filter) (api.DiffOutput, error) {
	if strings.TrimSpace(from) == "" || strings.TrimSpace(to) == "" {
		return api.DiffOutput{}, badRequest("from and to are required: each a branch name or a commit id")
	}
	switch f.Op {
	case "", merge.OpInsert, merge.OpUpdate, merge.OpDelete:
	default:
		return api.DiffOutput{}, badRequest("op must be insert, update or delete, not %q", f.Op)
	}
	a, err := r.refSnapshot(from)
	if err != nil {
		return api.DiffOutput{}, err
	}
	b, err := r.refSnapshot(to)
	if err != nil {
		return api.DiffOutput{}, err
	}
	cs, err := merge.Diff(r.Context(), a, b, f)
	if err != nil {
		return api.DiffOutput{}, err
	}
	return api.DiffOutput{From: from, To: to, FromCommit: a.CommitID(), ToCommit: b.CommitID(), Changes: apiChanges(cs)}, nil
}

// refSnapshot reads a ref (graph.SnapshotOfRef). A caller with read on the
// whole graph may name any branch it may read or any commit published by
// one (authorizeCommit); one with read on some
// branches only may name those branches (a commit id could be any
// branch's), decided before any engine work.
func (r *request) refSnapshot(ref string) (*graph.Snapshot, error) {
	if r.s.allowed(r.actor, r.graphID, ActionRead) {
		if manifest.ValidateBranchName(ref) == nil {
			// A name the policy refuses is refused by name, as on every
			// route, before any engine work.
			if err := r.authorize(ActionRead, ref, ""); err != nil {
				return nil, err
			}
		}
		s, err := r.g.SnapshotOfRef(r.Context(), ref)
		if err != nil || s.Branch() == ref {
			return s, err
		}
		// ref was a commit id: the rule for commit ids, answered as
		// SnapshotOfRef answers an unknown one.
		if err := r.authorizeCommit(ActionRead, ref, s.Branch()); err != nil {
			return nil, graph.NotARef(ref, err)
		}
		return s, nil
	}
	if err := r.authorize(ActionRead, ref, ""); err != nil {
		return nil, err
	}
	s, err := r.g.Snapshot(r.Context(), ref)
	if errors.Is(err, manifest.ErrBranchNotFound) || errors.Is(err, graph.ErrInvalidBranch) {
		return nil, fail(http.StatusForbidden, api.CodeForbidden, "%q is not a branch, and reading a commit by id needs read on the whole graph %q", ref, r.graphID)
	}
	return s, err
}

// apiConflicts are merge conflicts as the wire has them (as MapError
// renders a refused merge's).
func apiConflicts(cs []merge.Conflict) []api.MergeConflict {
	out := make([]api.MergeConflict, len(cs))
	for i, c := range cs {
		out[i] = api.MergeConflict{EntityKind: c.EntityKind, TypeName: c.TypeName, EntityID: c.EntityID, Kind: c.Kind, Message: c.Message}
	}
	return out
}
