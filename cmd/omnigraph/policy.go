package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/omnigraph-go/omnigraph/server"
)

// policySource is where the policy commands read the policy and the
// actors' groups: --policy FILE, or the policy and groups a serve --config
// file names (so the verdict is the served one).
type policySource struct {
	policy, config string
	json           bool
}

func (s *policySource) add(c *cobra.Command) {
	c.Flags().StringVar(&s.policy, "policy", "", "the Cedar policy file")
	c.Flags().StringVar(&s.config, "config", "", "a serve --config file: its policy and groups (docs/server.md)")
	c.Flags().BoolVar(&s.json, "json", false, "print JSON instead of text")
}

// read returns the policy source file, its bytes and the groups.
func (s *policySource) read() (string, []byte, map[string][]string, error) {
	path := s.policy
	var groups map[string][]string
	if s.config != "" {
		cfg, err := readServeConfig(s.config)
		if err != nil {
			return "", nil, nil, err
		}
		groups = cfg.Groups
		if path == "" {
			if cfg.Policy == "" {
				return "", nil, nil, usagef("%s names no policy; give --policy FILE", s.config)
			}
			path = cfg.rel(cfg.Policy)
		}
	}
	if path == "" {
		return "", nil, nil, usagef("give the policy: --policy FILE or --config SERVE.json")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", nil, nil, usagef("read the policy file: %v", err)
	}
	return path, b, groups, nil
}

// load reads and validates the policy with the server's own function.
func (s *policySource) load() (*server.Policy, error) {
	path, b, groups, err := s.read()
	if err != nil {
		return nil, err
	}
	p, err := server.ParsePolicy(path, b)
	if err != nil {
		return nil, checkError{code: "invalid_policy", msg: err.Error()}
	}
	if len(groups) > 0 {
		p = p.WithGroups(groups)
	}
	return p, nil
}

func init() {
	register(func(a *app) *cobra.Command {
		c := &cobra.Command{
			Use:   "policy",
			Short: "Check, test and explain a Cedar policy before a server uses it",
			Long: "The server's own policy code answers each of these, so what they say is what\n" +
				"serve decides: validate (the file parses and fits the model), test (cases with\n" +
				"an expected decision), explain (one decision and the policies behind it),\n" +
				"schema (the model as a Cedar schema, for editors and cedar tools).",
		}
		c.AddCommand(policyValidateCmd(a), policyTestCmd(a), policyExplainCmd(a), policySchemaCmd(a))
		return c
	})
}

func policyValidateCmd(a *app) *cobra.Command {
	var s policySource
	c := &cobra.Command{
		Use:   "validate (--policy FILE | --config SERVE.json) [--json]",
		Short: "Check that a policy file parses and fits the model (serve refuses to start otherwise)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			path, b, _, err := s.read()
			if err != nil {
				return err
			}
			p, problems := server.ValidatePolicy(path, b)
			n := 0
			if p != nil {
				n = p.Len()
			}
			if s.json {
				if problems == nil {
					problems = []server.PolicyProblem{}
				}
				if err := writeJSON(a.stdout, map[string]any{"policy": path, "valid": len(problems) == 0, "policies": n, "problems": problems}); err != nil {
					return err
				}
			} else {
				for _, pr := range problems {
					fmt.Fprintf(a.stdout, "%s: %s\n", path, pr)
				}
				if len(problems) == 0 {
					fmt.Fprintf(a.stdout, "%s: valid (%d policies)\n", path, n)
				}
			}
			if len(problems) > 0 {
				return exitCodeError{code: exitError, err: checkError{code: "invalid_policy",
					msg: fmt.Sprintf("%s: %d problem(s); serve refuses to start with it", path, len(problems))}}
			}
			return nil
		},
	}
	s.add(c)
	return c
}

// policyTests is the --tests file of `policy test`.
type policyTests struct {
	Version int                 `json:"version"`
	Groups  map[string][]string `json:"groups,omitempty"`
	Cases   []policyCase        `json:"cases"`
}

type policyCase struct {
	Name         string `json:"name,omitempty"`
	Actor        string `json:"actor"`
	Action       string `json:"action"`
	Graph        string `json:"graph"`
	Branch       string `json:"branch,omitempty"`
	TargetBranch string `json:"target_branch,omitempty"`
	Query        string `json:"query,omitempty"` // the stored query of invoke_query
	Expect       string `json:"expect"`          // "allow" or "deny"
}

type policyCaseResult struct {
	policyCase
	Got    string `json:"got"`
	Passed bool   `json:"passed"`
	Reason string `json:"reason"`
}

// readPolicyTests decodes the tests file strictly: an unknown member, a
// case without an actor, graph or known action, or an expectation other
// than allow or deny is refused before any case runs.
func readPolicyTests(path string) (*policyTests, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, usagef("read the tests file: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var t policyTests
	if err := dec.Decode(&t); err != nil {
		return nil, usagef("tests file %s: %s; see 'omnigraph policy test --help' for its shape", path, jsonProblem(err))
	}
	if dec.More() {
		return nil, usagef("tests file %s: one JSON object expected; found more after it", path)
	}
	if t.Version != 1 {
		return nil, usagef("tests file %s: \"version\": 1 is required", path)
	}
	if len(t.Cases) == 0 {
		return nil, usagef("tests file %s has no cases", path)
	}
	for i, c := range t.Cases {
		at := fmt.Sprintf("tests file %s, case %d", path, i+1)
		if c.Name != "" {
			at += fmt.Sprintf(" (%q)", c.Name)
		}
		if c.Actor == "" || c.Graph == "" {
			return nil, usagef("%s: \"actor\" and \"graph\" are required", at)
		}
		if _, err := server.ParseAction(c.Action); err != nil {
			return nil, usagef("%s: %v", at, err)
		}
		if c.Expect != "allow" && c.Expect != "deny" {
			return nil, usagef("%s: \"expect\" is \"allow\" or \"deny\", not %q", at, c.Expect)
		}
	}
	return &t, nil
}

// jsonProblem says what is wrong with a JSON document in the user's
// terms: the member and the JSON type expected, never a Go type.
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		if te.Field != "" {
			return fmt.Sprintf("member %q has a JSON %s where %s is expected", te.Field, te.Value, jsonKind(te.Type.Kind().String()))
		}
		return fmt.Sprintf("found a JSON %s where an object is expected", te.Value)
	case errors.As(err, &se):
		return fmt.Sprintf("not valid JSON at byte %d", se.Offset)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return "unknown member " + strings.TrimPrefix(err.Error(), "json: unknown field ")
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "int", "int64", "int32", "uint", "uint64", "float64":
		return "a number"
	case "bool":
		return "true or false"
	case "slice", "array":
		return "an array"
	}
	return "an object"
}

func policyTestCmd(a *app) *cobra.Command {
	var s policySource
	var tests string
	c := &cobra.Command{
		Use:   "test (--policy FILE | --config SERVE.json) --tests FILE [--json]",
		Short: "Run decision cases against a policy; exit 1 if any case gets another decision",
		Long: "Each case asks the policy one question and says which answer it expects. The\n" +
			"tests file is JSON:\n\n" +
			"  {\"version\": 1,\n" +
			"   \"groups\": {\"writers\": [\"alice\"]},\n" +
			"   \"cases\": [\n" +
			"     {\"name\": \"alice writes main\", \"actor\": \"alice\", \"action\": \"change\",\n" +
			"      \"graph\": \"people\", \"branch\": \"main\", \"expect\": \"allow\"},\n" +
			"     {\"actor\": \"rita\", \"action\": \"branch_create\", \"graph\": \"people\",\n" +
			"      \"branch\": \"secret\", \"target_branch\": \"mine\", \"expect\": \"deny\"}]}\n\n" +
			"branch and target_branch are those of docs/server.md (branch_create: branch is\n" +
			"the source, target_branch the new branch; merge: source and target); query is\n" +
			"the stored query of invoke_query. groups add\n" +
			"to those of --config.",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if tests == "" {
				return usagef("--tests FILE is required")
			}
			t, err := readPolicyTests(tests)
			if err != nil {
				return err
			}
			p, err := s.load()
			if err != nil {
				return err
			}
			if len(t.Groups) > 0 {
				_, _, groups, _ := s.read()
				merged := map[string][]string{}
				for g, as := range groups {
					merged[g] = append(merged[g], as...)
				}
				for g, as := range t.Groups {
					merged[g] = append(merged[g], as...)
				}
				p = p.WithGroups(merged)
			}
			var results []policyCaseResult
			failed := 0
			for _, tc := range t.Cases {
				act, _ := server.ParseAction(tc.Action)
				e := p.Explain(server.AuthzRequest{Actor: tc.Actor, Graph: tc.Graph, Action: act, Branch: tc.Branch, TargetBranch: tc.TargetBranch, Query: tc.Query})
				got := "deny"
				if e.Allowed {
					got = "allow"
				}
				r := policyCaseResult{policyCase: tc, Got: got, Passed: got == tc.Expect, Reason: e.Reason}
				if !r.Passed {
					failed++
				}
				results = append(results, r)
			}
			if s.json {
				if err := writeJSON(a.stdout, map[string]any{"cases": len(results), "passed": len(results) - failed, "failed": failed, "results": results}); err != nil {
					return err
				}
			} else {
				for i, r := range results {
					mark := "ok  "
					if !r.Passed {
						mark = "FAIL"
					}
					name := r.Name
					if name == "" {
						name = fmt.Sprintf("case %d", i+1)
					}
					fmt.Fprintf(a.stdout, "%s %s: %s %s on %s: got %s, want %s (%s)\n", mark, name, r.Actor, r.Action,
						caseWhere(r.policyCase), r.Got, r.Expect, r.Reason)
				}
				fmt.Fprintf(a.stdout, "%d cases, %d passed, %d failed\n", len(results), len(results)-failed, failed)
			}
			if failed > 0 {
				return exitCodeError{code: exitError, err: checkError{code: "policy_test_failed",
					msg: fmt.Sprintf("%d of %d policy cases got another decision", failed, len(results))}}
			}
			return nil
		},
	}
	s.add(c)
	c.Flags().StringVar(&tests, "tests", "", "the JSON file of cases (see above)")
	return c
}

func caseWhere(c policyCase) string {
	switch {
	case c.TargetBranch != "" && c.Branch != "":
		return fmt.Sprintf("%s (%s -> %s)", c.Graph, c.Branch, c.TargetBranch)
	case c.TargetBranch != "":
		return fmt.Sprintf("%s/%s", c.Graph, c.TargetBranch)
	case c.Branch != "":
		return fmt.Sprintf("%s/%s", c.Graph, c.Branch)
	}
	return c.Graph
}

func policyExplainCmd(a *app) *cobra.Command {
	var s policySource
	var q policyCase
	c := &cobra.Command{
		Use:   "explain (--policy FILE | --config SERVE.json) --actor A --action ACT --graph G [--branch B] [--target-branch T] [--stored-query NAME] [--json]",
		Short: "Answer one request as the server would, and show the policies that decided it",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if q.Actor == "" || q.Graph == "" || q.Action == "" {
				return usagef("--actor, --action and --graph are required")
			}
			act, err := server.ParseAction(q.Action)
			if err != nil {
				return usagef("--action: %v", err)
			}
			p, err := s.load()
			if err != nil {
				return err
			}
			e := p.Explain(server.AuthzRequest{Actor: q.Actor, Graph: q.Graph, Action: act, Branch: q.Branch, TargetBranch: q.TargetBranch, Query: q.Query})
			if s.json {
				return writeJSON(a.stdout, e)
			}
			verdict := "DENY"
			if e.Allowed {
				verdict = "ALLOW"
			}
			fmt.Fprintf(a.stdout, "%s: %s %s on %s: %s\n", verdict, q.Actor, q.Action, caseWhere(q), e.Reason)
			for _, r := range e.Policies {
				fmt.Fprintf(a.stdout, "\n%s (%s, line %d):\n%s\n", r.ID, r.Effect, r.Line, strings.TrimSpace(r.Text))
			}
			for _, msg := range e.Errors {
				fmt.Fprintf(a.stdout, "skipped (failed to evaluate): %s\n", msg)
			}
			return nil
		},
	}
	s.add(c)
	c.Flags().StringVar(&q.Actor, "actor", "", "the actor asking (a token's actor; anonymous in open mode)")
	c.Flags().StringVar(&q.Action, "action", "", "the action: "+actionNames())
	c.Flags().StringVar(&q.Graph, "graph", "", "the graph id")
	c.Flags().StringVar(&q.Branch, "branch", "", "the branch read or written (branch_create: the source; merge: the source)")
	c.Flags().StringVar(&q.TargetBranch, "target-branch", "", "the branch created, deleted or merged into")
	c.Flags().StringVar(&q.Query, "stored-query", "", "invoke_query: the stored query's name (context.query)")
	return c
}

func policySchemaCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the model (principals, actions, resources, context) as a Cedar schema",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			fmt.Fprint(a.stdout, server.PolicySchema())
			return nil
		},
	}
}

func actionNames() string {
	var s []string
	for _, x := range server.Actions() {
		s = append(s, string(x))
	}
	return strings.Join(s, ", ")
}
