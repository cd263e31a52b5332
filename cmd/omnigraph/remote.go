package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/client"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/load"
	"github.com/omnigraph-go/omnigraph/graph/merge"
	"github.com/omnigraph-go/omnigraph/graph/mutate"
)

// Server mode: query, mutate, load, branch and commit take --server URL
// (with --token, or OMNIGRAPH_TOKEN, and --graph) instead of --store and
// then run through the Go client of the HTTP API (client/). The answers
// are turned back into the engine's result types, so both modes print
// through the same code: the output is the same.

// envToken is the bearer token of --server when --token is not given.
const envToken = "OMNIGRAPH_TOKEN"

func (t *graphTarget) addServer(c *cobra.Command) {
	c.Flags().StringVar(&t.server, "server", "", "run through the HTTP API of 'omnigraph serve' at this URL (http://HOST:PORT) instead of opening --store")
	c.Flags().StringVar(&t.token, "token", "", "bearer token for --server (default $"+envToken+")")
	c.Flags().StringVar(&t.graphID, "graph", "default", "with --server: the graph's id on the server (GET /graphs)")
}

// serverGraph is the graph on the server named by --server and --graph,
// or nil when the command opens --store; it first refuses the flags that
// do not go with the mode.
func (t *graphTarget) serverGraph(c *cobra.Command) (*client.Graph, error) {
	if t.server == "" {
		for _, f := range []string{"token", "graph"} {
			if c.Flags().Changed(f) {
				return nil, usagef("--%s goes with --server URL", f)
			}
		}
		return nil, nil
	}
	if t.store != "" {
		return nil, usagef("give either --store (open the graph here) or --server (go through a server), not both")
	}
	refused := map[string]string{
		"as":               "the server records the actor of your token",
		"wait":             "the server holds the graph's lock itself",
		"no-auto-optimize": "the server runs its own compaction",
	}
	if c.Name() == "load" {
		refused["type"] = "the server's load takes no --type"
	}
	for f, why := range refused {
		if fl := c.Flags().Lookup(f); fl != nil && fl.Changed {
			return nil, usagef("--%s does not go with --server: %s", f, why)
		}
	}
	cl, err := t.serverClient()
	if err != nil {
		return nil, err
	}
	return cl.Graph(t.graphID), nil
}

// serverClient is the client of --server, with --token or $OMNIGRAPH_TOKEN.
func (t *graphTarget) serverClient() (*client.Client, error) {
	token := t.token
	if token == "" {
		token = os.Getenv(envToken)
	}
	cl, err := client.New(t.server, client.WithToken(token), client.WithUserAgent("omnigraph-cli/"+cliVersion()))
	if err != nil {
		return nil, usageError{msg: err.Error()}
	}
	return cl, nil
}

// serverError is a refusal or failure the server answered: its message is
// the server's (what the local mode prints for the same failure).
type serverError struct {
	e *client.Error
	// hint is what the CLI adds: how to do what the server asked for in
	// this CLI's flags (a 401 says how to pass a token).
	hint string
}

func (s serverError) Error() string {
	if s.hint == "" {
		return s.e.Message
	}
	return s.e.Message + ": " + s.hint
}

// tokenHint is how a 401 ends: where the CLI takes a token from.
const tokenHint = "pass the token with --token TOKEN or set " + envToken + " (the server's tokens file lists who may connect; 'omnigraph token add' makes one)"

// exitUnreachable is the exit code of a --server command that got no answer
// from the server (refused connection, unknown host, reset, timeout):
// nothing was done and the command may be run again, unlike exit 1.
const exitUnreachable = 7

func (s serverError) Unwrap() error { return s.e }

// remoteErr gives a server-mode failure the local mode's exit code: 4 for
// a lost precondition, 5 for merge conflicts, 1 otherwise.
func (t *graphTarget) remoteErr(err error) error {
	if err == nil {
		return nil
	}
	var ce *client.Error
	if !errors.As(err, &ce) {
		err = fmt.Errorf("the server at %s: %w", backend.Redact(t.server), err)
		if errors.Is(err, client.ErrUnreachable) {
			return exitCodeError{code: exitUnreachable, err: fmt.Errorf("%w; is 'omnigraph serve' running there? Nothing was done: run the command again when it answers", err)}
		}
		return err
	}
	code := exitError
	hint := ""
	switch {
	case ce.Status == 401:
		hint = tokenHint
	case ce.Status == 412:
		code = exitConflict
	case len(ce.Details.MergeConflicts) > 0:
		code = exitMergeConflict
	case isBudget(ce.Details.ResourceLimit):
		code = exitBudget
	}
	return exitCodeError{code: code, err: serverError{e: ce, hint: hint}}
}

// isBudget reports whether a resource_limit is a query budget's (a 413 of
// serve's query budgets): the CLI's exit 6, as a local query's.
func isBudget(rl *api.ResourceLimit) bool {
	return rl != nil && strings.HasPrefix(rl.Resource, "query_")
}

// remoteErrorCode is the JSON error code of a server's answer, in the
// local mode's words where one fits.
func remoteErrorCode(ce *client.Error) string {
	d := ce.Details
	switch {
	case d.OutcomeUnknown != nil:
		return "outcome_unknown"
	case d.RecoveryRequired != nil:
		return "recovery_required"
	case d.PreconditionFailure != nil:
		return "precondition_failed"
	case d.KeyConflict != nil:
		return "key_conflict"
	case d.ReadSetConflict != nil:
		return "read_set_changed"
	case len(d.MergeConflicts) > 0:
		return "merge_conflict"
	case isBudget(d.ResourceLimit):
		return "budget_exceeded"
	case d.ResourceLimit != nil:
		return "resource_limit"
	case d.ChangeDiffRefusal != nil:
		return d.ChangeDiffRefusal.Reason
	case d.ChangeFeedGap != nil:
		return "change_feed_gap"
	case d.Reason != "":
		return d.Reason
	case ce.Status == 400 && strings.HasPrefix(d.Error, "change cursor rejected:"):
		return "change_cursor_rejected"
	case d.Code != "":
		return string(d.Code)
	case d.Class != "":
		return d.Class
	}
	return "error"
}

// commitInfo is the engine's view of a commit of the API.
func commitInfo(c *api.CommitOutput) *graph.CommitInfo {
	if c == nil {
		return nil
	}
	parents := []string{}
	for _, p := range []string{c.ParentCommitID, c.MergedParentCommitID} {
		if p != "" {
			parents = append(parents, p)
		}
	}
	return &graph.CommitInfo{ID: c.GraphCommitID, Parents: parents, Actor: c.ActorID, Time: time.UnixMicro(c.CreatedAt).UTC(),
		Micros: c.CreatedAt, Branch: c.GraphBranch, ManifestVersion: c.GraphManifestVersion, CleanedUp: c.CleanedUp}
}

func mutateResult(o *api.ChangeOutput) *mutate.Result {
	return &mutate.Result{AffectedNodes: o.AffectedNodes, AffectedEdges: o.AffectedEdges, Commit: commitInfo(o.Commit), Warnings: o.Warnings}
}

func loadResult(o *api.LoadOutput) *load.Result {
	return &load.Result{Nodes: o.Nodes, Edges: o.Edges, Types: o.Types, Inserted: o.Inserted, Updated: o.Updated, Unchanged: o.Unchanged,
		Commit: commitInfo(o.Commit), Warnings: o.Warnings}
}

func mergeResult(o *api.MergeOutput) *merge.Result {
	return &merge.Result{Outcome: merge.Outcome(o.Outcome), Source: o.Source, Target: o.Target, SourceCommit: o.SourceCommit, BaseCommit: o.BaseCommit,
		Commit: commitInfo(o.Commit), Inserted: o.Inserted, Updated: o.Updated, Deleted: o.Deleted, Warnings: o.Warnings}
}

func mergeConflicts(cs []api.MergeConflict) []merge.Conflict {
	out := make([]merge.Conflict, len(cs))
	for i, c := range cs {
		out[i] = merge.Conflict{EntityKind: c.EntityKind, TypeName: c.TypeName, EntityID: c.EntityID, Kind: c.Kind, Message: c.Message}
	}
	return out
}

// wireChanges is the engine's changes as the API sends them (values as
// JSON renders them), so both modes print changes from the same values.
func wireChanges(cs []merge.Change) ([]api.Change, error) {
	b, err := json.Marshal(nonNil(cs))
	if err != nil {
		return nil, err
	}
	var out []api.Change
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return out, dec.Decode(&out)
}
