package server

import (
	"fmt"
	"net/http"
	"sort"

	"github.com/cedar-policy/cedar-go"

	"github.com/omnigraph-go/omnigraph/api"
)

// Action is a policy action.
type Action string

// The policy actions. admin is reserved for operations the server does
// not serve today (maintenance and schema apply stay CLI-only): a policy
// may name it, no route asks for it.
const (
	ActionRead         Action = "read"
	ActionChange       Action = "change"
	ActionLoad         Action = "load"
	ActionExport       Action = "export"
	ActionBranchCreate Action = "branch_create"
	ActionBranchDelete Action = "branch_delete"
	ActionBranchMerge  Action = "branch_merge"
	ActionAdmin        Action = "admin"
	// ActionInvokeQuery runs a stored query by name (POST queries/NAME,
	// its MCP tool); the read or change it does is checked as well. The
	// resource is the graph; context.query names the query.
	ActionInvokeQuery Action = "invoke_query"
)

// Actions lists every policy action.
func Actions() []Action {
	return []Action{ActionRead, ActionChange, ActionLoad, ActionExport, ActionBranchCreate, ActionBranchDelete, ActionBranchMerge, ActionAdmin, ActionInvokeQuery}
}

// The Cedar entity types of the model (namespace Omnigraph).
const (
	cedarActor  = cedar.EntityType("Omnigraph::Actor")
	cedarGroup  = cedar.EntityType("Omnigraph::Group")
	cedarGraph  = cedar.EntityType("Omnigraph::Graph")
	cedarBranch = cedar.EntityType("Omnigraph::Branch")
	cedarAction = cedar.EntityType("Omnigraph::Action")
)

// DefaultPolicySource is the policy of a server without --policy: every
// request that passed authentication is allowed (in open mode, every
// request). Authorization is then the tokens file alone.
const DefaultPolicySource = `@id("default-allow")
permit (principal, action, resource);
`

// Policy is a parsed Cedar policy set plus the actors' groups.
//
// The model: the principal is Omnigraph::Actor::"<actor>" (the token's
// actor; "anonymous" in open mode), a member of Omnigraph::Group::"<g>"
// for each group that lists it. The action is Omnigraph::Action::"<a>".
// The resource is the branch acted on, Omnigraph::Branch::"<graph>/<name>"
// (attributes name and graph), whose parent is
// Omnigraph::Graph::"<graph>"; an action on no one branch (listing
// branches, reading a commit by id or a snapshot) has the graph itself as
// resource, so only a graph-wide grant covers it. The context always has
// graph, branch and target_branch (strings, "" when not applicable):
// branch_create has branch = from and target_branch = the new branch,
// branch_merge branch = source and target_branch = target (the
// resource), branch_delete target_branch = the branch deleted. It also
// has query: the stored query invoke_query runs ("" for other actions),
// so a policy can grant some stored queries only. An operation that
// copies a branch (create from, load from, merge source) also asks read
// on it (authorizeSource).
type Policy struct {
	name   string
	set    *cedar.PolicySet
	groups map[string][]cedar.EntityUID // actor -> its groups
}

// ParsePolicy parses a Cedar policy document and validates it against the
// model (ValidatePolicy): a file with any problem is refused, every
// problem named. name is used in positions (a file name). A policy's
// @id("...") annotation names it in decisions and logs (else policyN, by
// order in the file).
func ParsePolicy(name string, src []byte) (*Policy, error) {
	p, problems := ValidatePolicy(name, src)
	if len(problems) > 0 {
		return nil, problemsError(name, problems)
	}
	return p, nil
}

// DefaultPolicy is the allow-everything policy of DefaultPolicySource.
func DefaultPolicy() *Policy {
	p, err := ParsePolicy("default", []byte(DefaultPolicySource))
	if err != nil {
		panic(err)
	}
	return p
}

// WithGroups returns the policy with group membership: group name ->
// actors. Policies match it with principal in Omnigraph::Group::"<g>".
func (p *Policy) WithGroups(groups map[string][]string) *Policy {
	q := *p
	q.groups = map[string][]cedar.EntityUID{}
	names := make([]string, 0, len(groups))
	for g := range groups {
		names = append(names, g)
	}
	sort.Strings(names)
	for _, g := range names {
		for _, a := range groups[g] {
			q.groups[a] = append(q.groups[a], cedar.NewEntityUID(cedarGroup, cedar.String(g)))
		}
	}
	return &q
}

// Name is where the policy came from ("default" or its file).
func (p *Policy) Name() string { return p.name }

// AuthzRequest is one question to the policy.
type AuthzRequest struct {
	Actor        string
	Graph        string
	Action       Action
	Branch       string
	TargetBranch string
	// Query is the stored query of invoke_query ("" otherwise).
	Query string
}

// Decision is the policy's answer: Policies are the ids of the policies
// that decided it (the permits of an allow, the forbids of a deny; none
// for a default deny); Errors are policies that failed to evaluate
// (Cedar skips them).
type Decision struct {
	Allowed  bool
	Policies []string
	Errors   []string
}

// Authorize evaluates one request.
func (p *Policy) Authorize(q AuthzRequest) Decision {
	principal := cedar.NewEntityUID(cedarActor, cedar.String(q.Actor))
	graphUID := cedar.NewEntityUID(cedarGraph, cedar.String(q.Graph))
	entities := cedar.EntityMap{
		principal: {UID: principal, Parents: cedar.NewEntityUIDSet(p.groups[q.Actor]...)},
		graphUID:  {UID: graphUID, Attributes: cedar.NewRecord(cedar.RecordMap{"id": cedar.String(q.Graph)})},
	}
	resource := graphUID
	if b := q.resourceBranch(); b != "" {
		resource = cedar.NewEntityUID(cedarBranch, cedar.String(q.Graph+"/"+b))
		entities[resource] = cedar.Entity{UID: resource, Parents: cedar.NewEntityUIDSet(graphUID),
			Attributes: cedar.NewRecord(cedar.RecordMap{"name": cedar.String(b), "graph": cedar.String(q.Graph)})}
	}
	dec, diag := cedar.Authorize(p.set, entities, cedar.Request{
		Principal: principal,
		Action:    cedar.NewEntityUID(cedarAction, cedar.String(q.Action)),
		Resource:  resource,
		Context: cedar.NewRecord(cedar.RecordMap{
			"graph":         cedar.String(q.Graph),
			"branch":        cedar.String(q.Branch),
			"target_branch": cedar.String(q.TargetBranch),
			"query":         cedar.String(q.Query),
		}),
	})
	d := Decision{Allowed: dec == cedar.Allow}
	for _, r := range diag.Reasons {
		d.Policies = append(d.Policies, string(r.PolicyID))
	}
	for _, e := range diag.Errors {
		d.Errors = append(d.Errors, e.String())
	}
	return d
}

// resourceBranch is the branch acted on: the target of a create, delete
// or merge, else the branch read or written.
func (q AuthzRequest) resourceBranch() string {
	if q.TargetBranch != "" {
		return q.TargetBranch
	}
	return q.Branch
}

// authorize asks the policy whether the request's actor may act; a
// denial is 403 forbidden, before any engine work.
func (r *request) authorize(act Action, branch, target string) error {
	q := AuthzRequest{Actor: actorOrAnon(r.actor), Graph: r.graphID, Action: act, Branch: branch, TargetBranch: target}
	d := r.s.policy.Authorize(q)
	if len(d.Errors) > 0 {
		r.s.log.Warn("policy evaluation errors (those policies were skipped)", "actor", q.Actor, "action", string(act), "graph", q.Graph, "errors", d.Errors)
	}
	if d.Allowed {
		return nil
	}
	r.s.log.Info("policy denied", "actor", q.Actor, "action", string(act), "graph", q.Graph, "branch", branch, "target_branch", target, "policies", d.Policies)
	what := fmt.Sprintf("graph %q", q.Graph)
	if b := q.resourceBranch(); b != "" {
		what = fmt.Sprintf("branch %q of graph %q", b, q.Graph)
	}
	return fail(http.StatusForbidden, api.CodeForbidden, "the policy does not allow actor %q to %s on %s", q.Actor, act, what)
}

// authorizeSource asks for read on a branch an operation copies from (the
// base of a branch create or of load's from, the source of a merge): the
// new or target branch would otherwise hand its content to an actor the
// policy does not let read it.
func (r *request) authorizeSource(branch string) error {
	return r.authorize(ActionRead, branch, "")
}

// allowed is authorize without the 403 (filtering lists).
func (s *Server) allowed(actor, graphID string, act Action) bool {
	return s.policy.Authorize(AuthzRequest{Actor: actorOrAnon(actor), Graph: graphID, Action: act}).Allowed
}

// Len is the number of policies in the set.
func (p *Policy) Len() int {
	n := 0
	for range p.set.All() {
		n++
	}
	return n
}
