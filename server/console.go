package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/omnigraph-go/omnigraph/clusterlock"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/merge"
	"github.com/omnigraph-go/omnigraph/lang/gq"
	"github.com/omnigraph-go/omnigraph/lang/pg"
	"github.com/omnigraph-go/omnigraph/manifest"
	"github.com/omnigraph-go/omnigraph/server/ui"
)

// The routes the web console (server/ui) reads beyond the core API: the
// graph's state, its schema as types, a type check, branch heads with
// their divergence, a merge preview and a diff between two refs. They are
// ordinary authenticated routes of the table (OpenAPI, policy, limits):
// every one reads, and authorizes before any engine work.

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

func consoleRoutes(g string) []Route {
	return []Route{
		{Method: "GET", Path: g + "/status", OperationID: "getStatus", Summary: "The served graph's state: server version and mode, storage kind, writer lock, pending recovery, automatic compaction, and the actions the caller's policy allows on the whole graph", Auth: true, Graph: true, Response: "StatusOutput", Statuses: readErrs, handle: handleStatus},
		{Method: "GET", Path: g + "/catalog", OperationID: "getCatalog", Summary: "The schema of a branch head (or of a commit) as types: properties, keys, indexes, edge endpoints and each type's row count", Auth: true, Graph: true, Query: []string{"branch", "snapshot"}, Response: "CatalogOutput", Statuses: readErrs, handle: handleCatalog},
		{Method: "POST", Path: g + "/query/check", OperationID: "checkQuery", Summary: "Type-check .gq source against the schema of a branch (or a commit) without running it: each declared query with its parameters, result columns and plan, and every error with its line and column", Auth: true, Graph: true, Request: "CheckRequest", Response: "CheckOutput", Statuses: readErrs, handle: handleCheck},
		{Method: "GET", Path: g + "/branches/heads", OperationID: "listBranchHeads", Summary: "Every live branch with its head commit, the commits it is ahead of and behind a base branch (default main), and the actions the caller's policy allows on it", Auth: true, Graph: true, Query: []string{"base", "max"}, Response: "BranchHeadsOutput", Statuses: readErrs, handle: handleBranchHeads},
		{Method: "POST", Path: g + "/branches/merge/preview", OperationID: "previewMerge", Summary: "What merging a branch into another would do now, without writing: the outcome, the entity changes it would apply (before and after) and the conflicts that would refuse it", Auth: true, Graph: true, Request: "MergePreviewRequest", Response: "MergePreviewOutput", Statuses: append([]int{409, 413}, readErrs...), handle: handleMergePreview},
		{Method: "GET", Path: g + "/diff", OperationID: "diffRefs", Summary: "The entity changes that turn one ref into another (each a branch name or a commit id)", Auth: true, Graph: true, Query: []string{"from", "to", "type", "op", "limit"}, Response: "DiffOutput", Statuses: append([]int{409}, readErrs...), handle: handleDiff},
	}
}

// Bodies of the console routes (components.schemas).
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
		// AllowedActions are the actions this server lets the caller do on
		// the whole graph: the policy's grants, reads only on a replica
		// (per-branch grants: GET branches/heads).
		AllowedActions []Action           `json:"allowed_actions"`
		Lock           LockOutput         `json:"lock"`
		Recovery       RecoveryOutput     `json:"recovery"`
		AutoOptimize   AutoOptimizeOutput `json:"auto_optimize"`
		Branches       int                `json:"branches"`
		Head           *CommitOutput      `json:"main_head,omitempty"`
		Limits         StatusLimitsOutput `json:"limits"`
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
		// Classification is what recovery would find (recovery.Assess).
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
		// Last is the last finished check, if any.
		LastBranch  string `json:"last_branch,omitempty"`
		LastAt      string `json:"last_at,omitempty"`
		LastOutcome string `json:"last_outcome,omitempty"`
	}
	// StatusLimitsOutput are the server's request limits.
	StatusLimitsOutput struct {
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
	// CheckOutput is the answer of a check: OK when there is no error.
	CheckOutput struct {
		OK             bool           `json:"ok"`
		SchemaIdentity string         `json:"schema_identity"`
		Queries        []CheckedQuery `json:"queries"`
		Errors         []CheckError   `json:"errors"`
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
	// CheckError is one diagnostic: a stable code, the query it is in,
	// its 1-based line and column (characters), and what to write
	// instead.
	CheckError struct {
		Code    string `json:"code"`
		Query   string `json:"query,omitempty"`
		Line    int    `json:"line"`
		Column  int    `json:"column"`
		Message string `json:"message"`
	}

	// BranchHeadsOutput is GET branches/heads.
	BranchHeadsOutput struct {
		Base     string       `json:"base"`
		Branches []BranchHead `json:"branches"`
	}
	// BranchHead is one live branch.
	BranchHead struct {
		Name string       `json:"name"`
		Head CommitOutput `json:"head"`
		// Ahead and Behind count commits against the base; Capped: the
		// count stopped at max (lower bounds).
		Ahead  int  `json:"ahead"`
		Behind int  `json:"behind"`
		Capped bool `json:"counts_capped,omitempty"`
		// AllowedActions: of change, load, branch_create (from it),
		// branch_delete and branch_merge (into the base), those this server
		// lets the caller do on this branch (none on a replica).
		AllowedActions []Action `json:"allowed_actions"`
	}

	// MergePreviewRequest is POST branches/merge/preview.
	MergePreviewRequest struct {
		Source string `json:"source" jsonschema:"the branch to merge"`
		Target string `json:"target,omitempty" jsonschema:"the branch to merge into (default main)"`
		Limit  int    `json:"limit,omitempty" jsonschema:"at most this many changes listed (0: all); the counts cover every change"`
	}
	// MergePreviewOutput is what the merge would do: Conflicts non-empty
	// means it would be refused (409) and write nothing.
	MergePreviewOutput struct {
		Source       string           `json:"source"`
		Target       string           `json:"target"`
		Outcome      string           `json:"outcome"`
		SourceCommit string           `json:"source_commit"`
		BaseCommit   string           `json:"base_commit,omitempty"`
		Inserted     int              `json:"inserted"`
		Updated      int              `json:"updated"`
		Deleted      int              `json:"deleted"`
		Changes      []merge.Change   `json:"changes"`
		Truncated    bool             `json:"truncated,omitempty"`
		Conflicts    []merge.Conflict `json:"conflicts"`
	}

	// DiffOutput is GET diff.
	DiffOutput struct {
		From       string         `json:"from"`
		To         string         `json:"to"`
		FromCommit string         `json:"from_commit"`
		ToCommit   string         `json:"to_commit"`
		Changes    []merge.Change `json:"changes"`
	}
)

// actionsAllowed lists which of acts this server would let the caller do
// on the graph (branch "") or on a branch (as the resource): what the
// policy permits, less every write on a read-only replica.
func (r *request) actionsAllowed(branch, target string, acts ...Action) []Action {
	out := []Action{}
	for _, a := range acts {
		if r.s.cfg.ReadOnly && a != ActionRead && a != ActionExport {
			continue
		}
		if r.s.policy.Authorize(AuthzRequest{Actor: actorOrAnon(r.actor), Graph: r.graphID, Action: a, Branch: branch, TargetBranch: target}).Allowed {
			out = append(out, a)
		}
	}
	return out
}

func handleStatus(r *request) (int, any, error) {
	out, err := r.opStatus()
	return 200, out, err
}

func (r *request) opStatus() (StatusOutput, error) {
	if err := r.authorize(ActionRead, "", ""); err != nil {
		return StatusOutput{}, err
	}
	ctx := r.Context()
	cfg := r.s.cfg
	out := StatusOutput{GraphID: r.graphID, ServerVersion: cfg.Version, Mode: "read-write", StorageKind: r.s.storage[r.graphID],
		Actor: actorOrAnon(r.actor), Auth: cfg.Tokens != nil,
		AllowedActions: r.actionsAllowed("", "", Actions()...),
		Limits: StatusLimitsOutput{BodyBytes: cfg.Limits.BodyBytes, LoadBytes: cfg.Limits.LoadBytes,
			WritesPerActor: cfg.Limits.WritesPerActor, WritesPerGraph: cfg.Limits.WritesPerGraph}}
	if cfg.ReadOnly {
		out.Mode = "read-only"
	}
	if out.StorageKind == "" {
		out.StorageKind = "unknown"
	}
	ls, err := clusterlock.Status(ctx, r.g.Store(), clusterlock.Options{})
	if err != nil {
		return StatusOutput{}, err
	}
	out.Lock = LockOutput{Held: ls.Held, Leased: ls.Leased, LeaseSeconds: ls.LeaseSeconds, UnknownFormat: ls.UnknownFormat}
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
		return StatusOutput{}, err
	}
	out.Recovery = RecoveryOutput{Pending: len(pending), Intents: []IntentOutput{}, State: "clean"}
	if len(pending) > 0 {
		out.Recovery.State = "pending"
	}
	for _, a := range pending {
		in := a.Sidecar.Intent
		out.Recovery.Intents = append(out.Recovery.Intents, IntentOutput{Kind: in.Kind, Actor: in.Actor, Branch: in.Token.Branch,
			Classification: string(a.Class), StartedAt: time.UnixMicro(a.Sidecar.CreatedMicros).UTC().Format(time.RFC3339)})
	}
	if c := r.s.compactors[r.graphID]; c != nil {
		running, pend, runs, last := c.state()
		out.AutoOptimize = AutoOptimizeOutput{Enabled: true, Threshold: c.threshold, Running: running, Pending: pend, Runs: runs,
			LastBranch: last.branch, LastOutcome: last.outcome}
		if !last.at.IsZero() {
			out.AutoOptimize.LastAt = last.at.UTC().Format(time.RFC3339)
		}
	}
	bs, err := r.g.Branches(ctx)
	if err != nil {
		return StatusOutput{}, err
	}
	out.Branches = len(bs)
	snap, err := r.g.Snapshot(ctx, manifest.MainBranch)
	if err != nil {
		return StatusOutput{}, err
	}
	c, err := snap.Commit(ctx)
	if err != nil {
		return StatusOutput{}, err
	}
	out.Head = commitOutput(&c)
	return out, nil
}

// readSnapshot authorizes a read of a branch head (default main) or of a
// commit and returns the snapshot: the one rule of every route that reads
// "a branch or a snapshot" (query, catalog, query/check). A snapshot may
// be of any branch, so reading one needs read on the whole graph.
func (r *request) readSnapshot(branch, snapID string) (*graph.Snapshot, ReadTarget, error) {
	if branch != "" && snapID != "" {
		return nil, ReadTarget{}, badRequest("read either a branch or a snapshot, not both")
	}
	if snapID != "" {
		if err := r.authorize(ActionRead, "", ""); err != nil {
			return nil, ReadTarget{}, err
		}
		s, err := r.g.SnapshotAt(r.Context(), snapID)
		return s, ReadTarget{Snapshot: snapID}, err
	}
	branch = orMain(branch)
	if err := r.authorize(ActionRead, branch, ""); err != nil {
		return nil, ReadTarget{}, err
	}
	s, err := r.g.Snapshot(r.Context(), branch)
	return s, ReadTarget{Branch: branch}, err
}

func handleCatalog(r *request) (int, any, error) {
	qv := r.URL.Query()
	out, err := r.opCatalog(qv.Get("branch"), qv.Get("snapshot"))
	return 200, out, err
}

func (r *request) opCatalog(branch, snapID string) (CatalogOutput, error) {
	snap, target, err := r.readSnapshot(branch, snapID)
	if err != nil {
		return CatalogOutput{}, err
	}
	ctx := r.Context()
	cat, err := snap.Catalog(ctx)
	if err != nil {
		return CatalogOutput{}, err
	}
	stats, err := snap.TableStats(ctx)
	if err != nil {
		return CatalogOutput{}, err
	}
	rows := map[string]int64{}
	for _, st := range stats {
		rows[st.Key] = st.Rows
	}
	out := CatalogOutput{Target: target, GraphCommitID: snap.CommitID(), SchemaIdentity: cat.Identity, Nodes: []CatalogType{}, Edges: []CatalogType{}}
	for _, n := range cat.Nodes {
		out.Nodes = append(out.Nodes, CatalogType{Name: n.Name, Description: n.Description(), Key: n.Key, Unique: n.Unique, Index: n.Index,
			Properties: catalogProps(n.Properties), Rows: rows[graph.NodeTableKey(n.Name)]})
	}
	for _, e := range cat.Edges {
		out.Edges = append(out.Edges, CatalogType{Name: e.Name, Description: e.Description(), From: e.From, To: e.To, Cardinality: e.Card.String(),
			Unique: e.Unique, Index: e.Index, Properties: catalogProps(e.Properties), Rows: rows[graph.EdgeTableKey(e.Name)]})
	}
	return out, nil
}

func catalogProps(ps []*pg.Property) []CatalogProperty {
	out := make([]CatalogProperty, 0, len(ps))
	for _, p := range ps {
		cp := CatalogProperty{Name: p.Name, Type: p.Type.String(), Nullable: p.Nullable, Key: p.Key, Unique: p.Unique, Index: p.Index,
			Inherited: p.Inherited, Description: p.Annotations.Text("description")}
		if p.Embed != nil {
			cp.Embed = p.Embed.Source
		}
		out = append(out, cp)
	}
	return out
}

func handleCheck(r *request) (int, any, error) {
	var in CheckRequest
	if err := r.decode(&in); err != nil {
		return 0, nil, err
	}
	out, err := r.opCheck(in)
	return 200, out, err
}

// opCheck type-checks every declaration of the source on its own (as
// running one would: gq.CheckQuery), so one broken query does not hide
// the others' parameters and plans. Errors in the text are the answer
// (200, ok false), not a failure of the request.
func (r *request) opCheck(in CheckRequest) (CheckOutput, error) {
	snap, _, err := r.readSnapshot(in.Branch, in.Snapshot)
	if err != nil {
		return CheckOutput{}, err
	}
	cat, err := snap.Catalog(r.Context())
	if err != nil {
		return CheckOutput{}, err
	}
	out := CheckOutput{SchemaIdentity: cat.Identity, Queries: []CheckedQuery{}, Errors: []CheckError{}}
	f, err := gq.Parse(in.Query)
	if err != nil {
		if !checkErrors(&out, err) {
			return CheckOutput{}, err
		}
		return out, nil
	}
	for _, q := range f.Queries {
		cq := CheckedQuery{Name: q.Name, Kind: "read", Line: q.Pos.Line, Params: []CheckParam{}}
		if q.Read == nil {
			cq.Kind = "mutation"
		}
		for _, p := range q.Params {
			t := *p.Type
			t.Nullable = false
			cq.Params = append(cq.Params, CheckParam{Name: p.Name, Type: t.String(), Nullable: p.Type.Nullable})
		}
		pl, err := gq.CheckQuery(q, cat)
		if err != nil {
			if !checkErrors(&out, err) {
				return CheckOutput{}, err
			}
			out.Queries = append(out.Queries, cq)
			continue
		}
		cq.OK, cq.Description, cq.Plan = true, pl.Description, pl.String()
		if rp := pl.Read; rp != nil {
			cq.Columns, cq.Links = planColumns(rp)
		}
		out.Queries = append(out.Queries, cq)
	}
	if len(f.Queries) == 0 && len(out.Errors) == 0 {
		out.Errors = append(out.Errors, CheckError{Code: string(gq.CodeQueryName), Line: 1, Column: 1, Message: "the source declares no query; write query name() { match { ... } return { ... } }"})
	}
	out.OK = len(out.Errors) == 0
	return out, nil
}

// checkErrors appends err's diagnostics (a *gq.Error or gq.ErrorList) to
// out; false when err is not a query error (a failure of the request).
func checkErrors(out *CheckOutput, err error) bool {
	var list gq.ErrorList
	var one *gq.Error
	switch {
	case errors.As(err, &list):
	case errors.As(err, &one):
		list = gq.ErrorList{one}
	default:
		return false
	}
	for _, e := range list {
		out.Errors = append(out.Errors, CheckError{Code: string(e.Code), Query: e.Query, Line: e.Pos.Line, Column: e.Pos.Col, Message: e.Msg})
	}
	return true
}

// planColumns lists a read plan's columns and the links between its
// whole-node columns: an expansion of the plan's main pipeline (not inside
// a negation) from one returned node variable to another.
func planColumns(rp *gq.ReadPlan) ([]CheckColumn, []CheckLink) {
	cols := make([]CheckColumn, 0, len(rp.Columns))
	nodeCol := map[int]string{}
	for _, c := range rp.Columns {
		cc := CheckColumn{Name: c.Name, Type: c.Type.String()}
		if c.Kind == gq.ColumnNode {
			v := rp.Vars[c.Expr.Var]
			cc.NodeType, cc.Type = v.Node.Name, "node"
			if _, dup := nodeCol[c.Expr.Var]; !dup {
				nodeCol[c.Expr.Var] = c.Name
			}
		}
		cols = append(cols, cc)
	}
	var links []CheckLink
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
		links = append(links, CheckLink{From: from, To: to, Edge: ex.Edge.Name, MinHops: ex.MinHops, MaxHops: ex.MaxHops})
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

func (r *request) opBranchHeads(base string, limit int) (BranchHeadsOutput, error) {
	base = orMain(base)
	if err := r.authorize(ActionRead, "", ""); err != nil {
		return BranchHeadsOutput{}, err
	}
	ctx := r.Context()
	bs, err := r.g.Branches(ctx)
	if err != nil {
		return BranchHeadsOutput{}, err
	}
	baseSnap, err := r.g.Snapshot(ctx, base)
	if err != nil {
		return BranchHeadsOutput{}, err
	}
	out := BranchHeadsOutput{Base: base, Branches: make([]BranchHead, len(bs))}
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
		return BranchHeadsOutput{}, err
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

func (r *request) branchHead(ctx context.Context, name, base string, baseSnap *graph.Snapshot, limit int) (BranchHead, error) {
	snap, err := r.g.Snapshot(ctx, name)
	if err != nil {
		return BranchHead{}, err
	}
	c, err := snap.Commit(ctx)
	if err != nil {
		return BranchHead{}, err
	}
	h := BranchHead{Name: name, Head: *commitOutput(&c), AllowedActions: []Action{}}
	if name != base {
		d, err := merge.AheadBehind(ctx, snap, baseSnap, limit)
		if err != nil {
			return BranchHead{}, err
		}
		h.Ahead, h.Behind, h.Capped = d.Ahead, d.Behind, d.Capped
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
	var in MergePreviewRequest
	if err := r.decode(&in); err != nil {
		return 0, nil, err
	}
	out, err := r.opMergePreview(in)
	return 200, out, err
}

// opMergePreview needs read on both branches: it shows their rows.
func (r *request) opMergePreview(in MergePreviewRequest) (MergePreviewOutput, error) {
	if in.Source == "" {
		return MergePreviewOutput{}, badRequest("source is required: the branch to merge")
	}
	if in.Limit < 0 {
		return MergePreviewOutput{}, badRequest("limit must be 0 (all) or a positive whole number")
	}
	in.Target = orMain(in.Target)
	for _, b := range []string{in.Source, in.Target} {
		if err := r.authorize(ActionRead, b, ""); err != nil {
			return MergePreviewOutput{}, err
		}
	}
	pv, err := merge.Preview(r.Context(), r.g, in.Source, in.Target, merge.PreviewOptions{Limit: in.Limit})
	if err != nil {
		return MergePreviewOutput{}, err
	}
	return MergePreviewOutput{Source: pv.Source, Target: pv.Target, Outcome: string(pv.Outcome), SourceCommit: pv.SourceCommit, BaseCommit: pv.BaseCommit,
		Inserted: pv.Inserted, Updated: pv.Updated, Deleted: pv.Deleted, Changes: pv.Changes, Truncated: pv.Truncated, Conflicts: pv.Conflicts}, nil
}

func handleDiff(r *request) (int, any, error) {
	qv := r.URL.Query()
	limit, err := r.limitParam()
	if err != nil {
		return 0, nil, err
	}
	out, err := r.opDiff(qv.Get("from"), qv.Get("to"), merge.Filter{Type: qv.Get("type"), Op: merge.Op(qv.Get("op")), Limit: limit})
	return 200, out, err
}

func (r *request) opDiff(from, to string, f merge.Filter) (DiffOutput, error) {
	if strings.TrimSpace(from) == "" || strings.TrimSpace(to) == "" {
		return DiffOutput{}, badRequest("from and to are required: each a branch name or a commit id")
	}
	switch f.Op {
	case "", merge.OpInsert, merge.OpUpdate, merge.OpDelete:
	default:
		return DiffOutput{}, badRequest("op must be insert, update or delete, not %q", f.Op)
	}
	a, err := r.refSnapshot(from)
	if err != nil {
		return DiffOutput{}, err
	}
	b, err := r.refSnapshot(to)
	if err != nil {
		return DiffOutput{}, err
	}
	cs, err := merge.Diff(r.Context(), a, b, f)
	if err != nil {
		return DiffOutput{}, err
	}
	if cs == nil {
		cs = []merge.Change{}
	}
	return DiffOutput{From: from, To: to, FromCommit: a.CommitID(), ToCommit: b.CommitID(), Changes: cs}, nil
}

// refSnapshot reads a ref (graph.SnapshotOfRef). A caller with read on the
// whole graph may name any branch or commit; one with read on some
// branches only may name those branches (a commit id could be any
// branch's), decided before any engine work.
func (r *request) refSnapshot(ref string) (*graph.Snapshot, error) {
	if r.s.allowed(r.actor, r.graphID, ActionRead) {
		return r.g.SnapshotOfRef(r.Context(), ref)
	}
	if err := r.authorize(ActionRead, ref, ""); err != nil {
		return nil, err
	}
	s, err := r.g.Snapshot(r.Context(), ref)
	if errors.Is(err, manifest.ErrBranchNotFound) || errors.Is(err, graph.ErrInvalidBranch) {
		return nil, fail(http.StatusForbidden, CodeForbidden, "%q is not a branch, and reading a commit by id needs read on the whole graph %q", ref, r.graphID)
	}
	return s, err
}
