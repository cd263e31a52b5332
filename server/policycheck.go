package server

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/cedar-policy/cedar-go"
	xast "github.com/cedar-policy/cedar-go/x/exp/ast"
	"github.com/cedar-policy/cedar-go/x/exp/schema"
	"github.com/cedar-policy/cedar-go/x/exp/schema/validate"
)

// PolicyProblem is one reason a policy document is refused: a parse error,
// or a policy that does not type-check against the model (an unknown
// action or entity type, an attribute the model does not have), which
// would otherwise never match or fail at every request.
type PolicyProblem struct {
	Policy  string `json:"policy,omitempty"` // the policy's id; "" for a parse error of the file
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
	Message string `json:"message"`
}

func (p PolicyProblem) String() string {
	var b strings.Builder
	if p.Line > 0 {
		fmt.Fprintf(&b, "%d:%d: ", p.Line, p.Column)
	}
	if p.Policy != "" {
		fmt.Fprintf(&b, "policy %q: ", p.Policy)
	}
	b.WriteString(p.Message)
	return b.String()
}

// PolicySchema is the Cedar schema of the model the server evaluates
// (namespace Omnigraph), generated from Actions() so that a new action is
// known to validation the moment it exists.
func PolicySchema() string {
	var acts []string
	for _, a := range Actions() {
		acts = append(acts, fmt.Sprintf("%q", string(a)))
	}
	return `namespace Omnigraph {
  entity Group;
  entity Actor in [Group];
  entity Graph { id: String };
  entity Branch in [Graph] { name: String, graph: String };
  action ` + strings.Join(acts, ", ") + ` appliesTo {
    principal: [Actor],
    resource: [Graph, Branch],
    context: { graph: String, branch: String, target_branch: String, query: String }
  };
}
`
}

// ValidatePolicy parses a Cedar policy document and checks every policy
// against PolicySchema. It is the one verdict on a policy file: serve
// refuses to start with a file it refuses, and `omnigraph policy
// validate` prints its problems. The policy is nil when there is any.
func ValidatePolicy(name string, src []byte) (*Policy, []PolicyProblem) {
	list, err := cedar.NewPolicyListFromBytes(name, src)
	if err != nil {
		return nil, []PolicyProblem{parseProblem(err)}
	}
	if len(list) == 0 {
		return nil, []PolicyProblem{{Message: "no policy in the file (nothing would be allowed)"}}
	}
	v, err := modelValidator()
	if err != nil { // the schema is ours: a failure here is a bug
		return nil, []PolicyProblem{{Message: "the policy model does not compile: " + err.Error()}}
	}
	set := cedar.NewPolicySet()
	var problems []PolicyProblem
	for i, p := range list {
		id := cedar.PolicyID(fmt.Sprintf("policy%d", i))
		if a, ok := p.Annotations()["id"]; ok && a != "" {
			id = cedar.PolicyID(a)
		}
		pos := p.Position()
		if !set.Add(id, p) {
			problems = append(problems, PolicyProblem{Policy: string(id), Line: pos.Line, Column: pos.Column,
				Message: fmt.Sprintf("two policies have @id(%q); give each its own", id)})
			continue
		}
		if err := v.Policy(string(id), (*xast.Policy)(p.AST())); err != nil {
			seen := map[string]bool{}
			for _, e := range splitJoined(err) {
				// The validator repeats a condition's problem once per
				// action it applies to: say it once.
				msg := perAction.ReplaceAllString(strings.TrimPrefix(e.Error(), fmt.Sprintf("for policy `%s`, ", id)), "")
				if !seen[msg] {
					seen[msg] = true
					problems = append(problems, PolicyProblem{Policy: string(id), Line: pos.Line, Column: pos.Column, Message: msg})
				}
			}
		}
	}
	if len(problems) > 0 {
		return nil, problems
	}
	return &Policy{name: name, set: set}, nil
}

// modelValidator compiles PolicySchema into a strict validator.
func modelValidator() (*validate.Validator, error) {
	var s schema.Schema
	s.SetFilename("omnigraph-model.cedarschema")
	if err := s.UnmarshalCedar([]byte(PolicySchema())); err != nil {
		return nil, err
	}
	r, err := s.Resolve()
	if err != nil {
		return nil, err
	}
	return validate.New(r, validate.WithStrict()), nil
}

var (
	perAction = regexp.MustCompile(` for Omnigraph::Action::"[^"]*"`)
	parsePos  = regexp.MustCompile(`^(?:parser error: )?parse error at [^:]*:(\d+):(\d+) (.*)$`)
)

// parseProblem turns a Cedar parse error into a problem with its position
// when the error text carries one (`parse error at <input>:line:col ...`).
func parseProblem(err error) PolicyProblem {
	msg := err.Error()
	if m := parsePos.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		col, _ := strconv.Atoi(m[2])
		return PolicyProblem{Line: line, Column: col, Message: "parse error: " + m[3]}
	}
	return PolicyProblem{Message: msg}
}

func splitJoined(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, splitJoined(e)...)
		}
		return out
	}
	return []error{err}
}

// problemsError is the error ParsePolicy returns: every problem, one per
// line.
func problemsError(name string, problems []PolicyProblem) error {
	lines := make([]string, 0, len(problems))
	for _, p := range problems {
		lines = append(lines, p.String())
	}
	return errors.New("policy " + name + ": " + strings.Join(lines, "; ") + " (check it with 'omnigraph policy validate --policy FILE')")
}

// PolicyRef is one policy of a decision: its id, effect, where it is in the
// file and its text.
type PolicyRef struct {
	ID     string `json:"id"`
	Effect string `json:"effect"` // "permit" or "forbid"
	Line   int    `json:"line,omitempty"`
	Column int    `json:"column,omitempty"`
	Text   string `json:"text"`
}

// Explanation is a decision with its reasons: the policies that decided
// it (the permits of an allow, the forbids of a deny; none for a default
// deny) and the policies skipped because they failed to evaluate.
type Explanation struct {
	Allowed  bool        `json:"allowed"`
	Reason   string      `json:"reason"`
	Policies []PolicyRef `json:"policies"`
	Errors   []string    `json:"errors,omitempty"`
}

// Explain answers q exactly as the server's authorize does (through
// Authorize) and says which policies decided it.
func (p *Policy) Explain(q AuthzRequest) Explanation {
	d := p.Authorize(q)
	e := Explanation{Allowed: d.Allowed, Policies: []PolicyRef{}, Errors: d.Errors}
	for _, id := range d.Policies {
		ref := PolicyRef{ID: id}
		if pol := p.set.Get(cedar.PolicyID(id)); pol != nil {
			ref.Effect = "forbid"
			if pol.Effect() == cedar.Permit {
				ref.Effect = "permit"
			}
			pos := pol.Position()
			ref.Line, ref.Column = pos.Line, pos.Column
			ref.Text = string(pol.MarshalCedar())
		}
		e.Policies = append(e.Policies, ref)
	}
	ids := make([]string, 0, len(e.Policies))
	for _, r := range e.Policies {
		ids = append(ids, r.ID)
	}
	switch {
	case d.Allowed:
		e.Reason = "permitted by " + strings.Join(ids, ", ")
	case len(ids) > 0:
		e.Reason = "forbidden by " + strings.Join(ids, ", ")
	default:
		e.Reason = "no policy permits it (Cedar denies by default)"
	}
	return e
}

// ParseAction returns the action named s, or an error listing the actions.
func ParseAction(s string) (Action, error) {
	var names []string
	for _, a := range Actions() {
		if string(a) == s {
			return a, nil
		}
		names = append(names, string(a))
	}
	return "", fmt.Errorf("unknown action %q: use one of %s", s, strings.Join(names, ", "))
}
