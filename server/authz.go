package server

import (
	"errors"
	"fmt"
	"slices"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/manifest"
)

// What each route and MCP tool authorizes, declared once (routeAuthz by
// operation id, toolAuthz by tool name) and applied by the helpers below,
// the only places that turn a commit id or a listing into a policy
// question. New refuses to build a server while a route or tool has no
// entry (checkAuthz), and the policy tests (routepolicy_test.go) are
// generated from these tables: every declared branch, source, target,
// ref and commit input is sent the forbidden branch's name or a commit
// only it published, and every listing is searched for its name.
//
// The rule for commit ids: a read by commit id (a snapshot, a commit and
// its changes, a diff ref, the feed's start after a commit) asks the
// policy twice: the action on the graph, as before any engine work, and
// then the same action on the branch that published the commit (its
// history entry names it, a deleted branch included), known only once
// the commit is found. A commit the second question refuses is answered
// exactly as an unknown commit id (same status, same body): the refusal
// is no oracle for what the branch holds. Finding the branch costs
// nothing the read does not do already (the entry is the one the read
// loads).

// resKind is one thing a request names that the policy decides on.
type resKind int

const (
	// resBranch: a branch read or written (empty: main); a refusal is
	// 403 (the policy decides by the name, before any engine work).
	resBranch resKind = iota + 1
	// resSource: a branch an operation copies from (branch create's
	// from, load's from, a merge's source): also asked read.
	resSource
	// resTarget: the branch a create, merge or delete acts on.
	resTarget
	// resCommit: a commit id, also authorized as a read of the branch
	// that published it; a refusal answers as an unknown commit.
	resCommit
	// resRef: a branch name or else a commit id (diff): resBranch for a
	// name, resCommit for an id.
	resRef
	// resStartAfter: the feed's start "after:COMMIT_ID", a resCommit.
	resStartAfter
)

func (k resKind) String() string {
	return [...]string{"", "branch", "source", "target", "commit", "ref", "start"}[k]
}

// listKind is what an answer lists.
type listKind int

const (
	listNothing listKind = iota
	// listBranches: the answer names branches (or their commits): only
	// those the actor may read are shown (visibleBranch).
	listBranches
	// listGraphs: only the graphs the actor may read graph-wide.
	listGraphs
	// listQueries: only the stored queries the actor may invoke.
	listQueries
)

// authzRes is one input: its kind and where the request carries it: a
// query parameter, a body member, a path parameter (routes) or an
// argument (tools).
type authzRes struct {
	kind resKind
	in   string // "query", "body", "path" or "args"
	name string
}

// authzEntry is one route's or tool's declaration.
type authzEntry struct {
	// action is what it asks of the policy (the graph's or each named
	// branch's); "" for the routes that need no token.
	action Action
	res    []authzRes
	lists  listKind
}

func inQuery(k resKind, name string) authzRes { return authzRes{k, "query", name} }
func inBody(k resKind, name string) authzRes  { return authzRes{k, "body", name} }
func inPath(k resKind, name string) authzRes  { return authzRes{k, "path", name} }
func inArgs(k resKind, name string) authzRes  { return authzRes{k, "args", name} }

// routeAuthz declares every route of api.Routes by operation id.
var routeAuthz = map[string]authzEntry{
	"health":     {},
	"openapi":    {},
	"listGraphs": {action: ActionRead, lists: listGraphs},
	"query":      {action: ActionRead, res: []authzRes{inBody(resBranch, "branch"), inBody(resCommit, "snapshot")}},
	"mutate":     {action: ActionChange, res: []authzRes{inBody(resBranch, "branch")}},
	// The header's commit id is compared with the branch head, never read.
	"mutateIfGraphCommit": {action: ActionChange, res: []authzRes{inBody(resBranch, "branch")}},
	"load":                {action: ActionLoad, res: []authzRes{inBody(resBranch, "branch"), inBody(resSource, "from")}},
	"export":              {action: ActionExport, res: []authzRes{inQuery(resBranch, "branch"), inQuery(resCommit, "snapshot")}},
	"loadNdjson":          {action: ActionLoad, res: []authzRes{inQuery(resBranch, "branch"), inQuery(resSource, "from")}},
	// Each tool call is decided as its own entry of toolAuthz.
	"mcp":                   {action: ActionRead},
	"getSnapshot":           {action: ActionRead, res: []authzRes{inQuery(resBranch, "branch")}},
	"getSchema":             {action: ActionRead, res: []authzRes{inQuery(resBranch, "branch"), inQuery(resCommit, "snapshot")}},
	"listBranches":          {action: ActionRead, lists: listBranches},
	"createBranch":          {action: ActionBranchCreate, res: []authzRes{inBody(resTarget, "name"), inBody(resSource, "from")}},
	"mergeBranch":           {action: ActionBranchMerge, res: []authzRes{inBody(resSource, "source"), inBody(resTarget, "target")}},
	"deleteBranch":          {action: ActionBranchDelete, res: []authzRes{inPath(resTarget, "branch")}},
	"listCommits":           {action: ActionRead, res: []authzRes{inQuery(resBranch, "branch")}, lists: listBranches},
	"getCommit":             {action: ActionRead, res: []authzRes{inPath(resCommit, "commit_id")}},
	"getCommitChanges":      {action: ActionRead, res: []authzRes{inPath(resCommit, "commit_id")}},
	"getBlob":               {action: ActionRead, res: []authzRes{inQuery(resBranch, "branch"), inQuery(resCommit, "snapshot")}},
	"headBlob":              {action: ActionRead, res: []authzRes{inQuery(resBranch, "branch"), inQuery(resCommit, "snapshot")}},
	"getStatus":             {action: ActionRead, lists: listBranches},
	"getCatalog":            {action: ActionRead, res: []authzRes{inQuery(resBranch, "branch"), inQuery(resCommit, "snapshot")}},
	"checkQuery":            {action: ActionRead, res: []authzRes{inBody(resBranch, "branch"), inBody(resCommit, "snapshot")}},
	"listBranchHeads":       {action: ActionRead, res: []authzRes{inQuery(resBranch, "base")}, lists: listBranches},
	"previewMerge":          {action: ActionRead, res: []authzRes{inBody(resSource, "source"), inBody(resBranch, "target")}},
	"diffRefs":              {action: ActionRead, res: []authzRes{inBody(resRef, "from"), inBody(resRef, "to")}},
	"pollChanges":           {action: ActionRead, res: []authzRes{inQuery(resBranch, "branch"), inQuery(resStartAfter, "start")}},
	"captureChangeBaseline": {action: ActionExport, res: []authzRes{inBody(resBranch, "branch")}},
	// The catalog is the stored queries the actor may invoke: it reveals
	// no branch, so it needs no read.
	"listQueries":              {action: ActionInvokeQuery, lists: listQueries},
	"invokeQuery":              {action: ActionInvokeQuery, res: []authzRes{inBody(resBranch, "branch"), inBody(resCommit, "snapshot")}},
	"invokeQueryIfGraphCommit": {action: ActionInvokeQuery, res: []authzRes{inBody(resBranch, "branch")}},
}

// The entries of the per-query MCP tools (the graph's stored queries, by
// their own names): a read's and a mutation's (which takes no snapshot).
var (
	storedReadToolAuthz     = authzEntry{action: ActionInvokeQuery, res: []authzRes{inArgs(resBranch, "branch"), inArgs(resCommit, "snapshot")}}
	storedMutationToolAuthz = authzEntry{action: ActionInvokeQuery, res: []authzRes{inArgs(resBranch, "branch")}}
)

// toolAuthz declares every built-in MCP tool (mcpTools) and the stored
// query pair by name.
var toolAuthz = map[string]authzEntry{
	"graph_query":    {action: ActionRead, res: []authzRes{inArgs(resBranch, "branch"), inArgs(resCommit, "snapshot")}},
	"graph_mutate":   {action: ActionChange, res: []authzRes{inArgs(resBranch, "branch")}},
	"graph_load":     {action: ActionLoad, res: []authzRes{inArgs(resBranch, "branch"), inArgs(resSource, "from")}},
	"graph_snapshot": {action: ActionRead, res: []authzRes{inArgs(resBranch, "branch")}},
	"schema_get":     {action: ActionRead, res: []authzRes{inArgs(resBranch, "branch")}},
	"branch_list":    {action: ActionRead, lists: listBranches},
	"branch_create":  {action: ActionBranchCreate, res: []authzRes{inArgs(resTarget, "name"), inArgs(resSource, "from")}},
	"branch_delete":  {action: ActionBranchDelete, res: []authzRes{inArgs(resTarget, "name")}},
	"branch_merge":   {action: ActionBranchMerge, res: []authzRes{inArgs(resSource, "source"), inArgs(resTarget, "target")}},
	"commit_list":    {action: ActionRead, res: []authzRes{inArgs(resBranch, "branch")}, lists: listBranches},
	"commit_get":     {action: ActionRead, res: []authzRes{inArgs(resCommit, "commit_id")}},
	"commit_changes": {action: ActionRead, res: []authzRes{inArgs(resCommit, "commit_id")}},
	"blob_stat":      {action: ActionRead, res: []authzRes{inArgs(resBranch, "branch"), inArgs(resCommit, "snapshot")}},
	"blob_read":      {action: ActionRead, res: []authzRes{inArgs(resBranch, "branch"), inArgs(resCommit, "snapshot")}},
	"changes_poll":   {action: ActionRead, res: []authzRes{inArgs(resBranch, "branch"), inArgs(resStartAfter, "start")}},
	"query_lint":     {action: ActionRead, res: []authzRes{inArgs(resBranch, "branch"), inArgs(resCommit, "snapshot")}},
	storedListTool:   {action: ActionInvokeQuery, lists: listQueries},
	storedRunTool:    {action: ActionInvokeQuery, res: []authzRes{inArgs(resBranch, "branch"), inArgs(resCommit, "snapshot")}},
}

// checkAuthz is the build-time check: every route and every built-in
// tool has its entry, and no entry names one that does not exist.
func checkAuthz() error {
	err := checkAuthzOf(api.Routes(), append(MCPTools(), storedListTool, storedRunTool), routeAuthz, toolAuthz)
	// tools/list shows a tool by its action (mcpTool.action): the two
	// declarations must agree.
	var errs []error
	for _, t := range mcpTools() {
		if e, ok := toolAuthz[t.tool.Name]; ok && e.action != t.action {
			errs = append(errs, fmt.Errorf("MCP tool %s asks %s (mcp.go) but toolAuthz declares %s", t.tool.Name, t.action, e.action))
		}
	}
	return errors.Join(append([]error{err}, errs...)...)
}

func checkAuthzOf(routes []api.Route, tools []string, routeAuthz, toolAuthz map[string]authzEntry) error {
	var errs []error
	seen := map[string]bool{}
	for _, rt := range routes {
		seen[rt.OperationID] = true
		if _, ok := routeAuthz[rt.OperationID]; !ok {
			errs = append(errs, fmt.Errorf("route %s %s (%s) has no entry in routeAuthz (server/authz.go)", rt.Method, rt.Path, rt.OperationID))
		}
	}
	for id := range routeAuthz {
		if !seen[id] {
			errs = append(errs, fmt.Errorf("routeAuthz names %q, which is no route", id))
		}
	}
	for _, name := range tools {
		if _, ok := toolAuthz[name]; !ok {
			errs = append(errs, fmt.Errorf("MCP tool %s has no entry in toolAuthz (server/authz.go)", name))
		}
	}
	for name := range toolAuthz {
		if !slices.Contains(tools, name) {
			errs = append(errs, fmt.Errorf("toolAuthz names %q, which is no tool", name))
		}
	}
	return errors.Join(errs...)
}

// may is the policy's answer for act on branch (the graph for ""),
// without a 403: what filters a listing.
func (r *request) may(act Action, branch string) bool {
	return r.s.policy.Authorize(AuthzRequest{Actor: actorOrAnon(r.actor), Graph: r.graphID, Action: act, Branch: branch}).Allowed
}

// visibleBranch says whether a listing shows branch: the actor may read
// it.
func (r *request) visibleBranch(branch string) bool { return r.may(ActionRead, branch) }

// authorizeCommit applies the rule for commit ids once the commit is
// found: act (already allowed on the graph) on publisher, the branch
// whose history entry records commit id. Refused, it is the engine's own
// unknown-commit error, so the answer cannot be told from one.
func (r *request) authorizeCommit(act Action, id, publisher string) error {
	if r.may(act, publisher) {
		return nil
	}
	r.s.log.Info("policy denied a read by commit id (answered as an unknown commit)", "actor", actorOrAnon(r.actor), "action", string(act), "graph", r.graphID, "branch", publisher)
	return manifest.CommitNotFound(id)
}
