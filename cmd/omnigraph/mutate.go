package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/client"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/mutate"
)

func init() {
	register(func(a *app) *cobra.Command {
		var t graphTarget
		var auto autoOptimizeFlag
		var file, expr, params, branch, ifCommit string
		var bf budgetFlags
		c := &cobra.Command{
			Use:   "mutate (--query FILE.gq [NAME] | -e 'GQ' | NAME --server URL) [--params JSON] [--branch B] [--if-commit ID] [--wait D] [--max-rows N] [--max-memory SIZE] [--timeout D] [--max-read-bytes SIZE] --store URL",
			Short: "Run a .gq mutation (insert / update / delete) as one commit",
			Long: "Run a .gq mutation as ONE commit: every statement sees the earlier ones'\n" +
				"inserts and updates, and either everything lands or nothing does. A query\n" +
				"either inserts/updates or deletes (never both). -e takes a whole query, or\n" +
				"just statements (insert Person { ... }). --params is a JSON object.\n" +
				"--if-commit ID writes only while the branch head is still commit ID; when it\n" +
				"is not, nothing is written and the exit code is 4. The read phase (the rows\n" +
				"update and delete match, a node delete's edges) runs under the budget of\n" +
				"--max-rows, --max-memory, --timeout and --max-read-bytes (0: no limit); past\n" +
				"one nothing is written and the exit code is 6. With --server and no --query\n" +
				"or -e, NAME is a stored mutation of the server (omnigraph queries list).",
			Args: cobra.MaximumNArgs(2),
			RunE: func(c *cobra.Command, args []string) (err error) {
				ctx := c.Context()
				stored := file == "" && expr == "" && len(args) == 1 && t.server != ""
				if !stored && (file == "") == (expr == "") {
					return usagef("give the mutation once: --query FILE.gq [NAME] or -e 'insert Person { ... }' (or, with --server, the NAME of a stored mutation)")
				}
				if t.store == "" && t.server == "" && len(args) > 0 {
					t.store, args = args[len(args)-1], args[:len(args)-1]
				}
				if len(args) > 1 {
					return usagef("too many arguments: give a query NAME at most")
				}
				name := ""
				if len(args) == 1 {
					name = args[0]
				}
				src := expr
				if stored {
					// A stored mutation, by name: the server holds its source.
				} else if file != "" {
					b, err := os.ReadFile(file)
					if err != nil {
						return usagef("read the query file: %v", err)
					}
					src = string(b)
				} else if !startsWithKeyword(src) {
					src = "mutation cli() {\n" + src + "\n}"
				}
				p, err := mutateParams(params)
				if err != nil {
					return err
				}
				budget, err := bf.budget()
				if err != nil {
					return err
				}
				sg, err := t.serverGraph(c)
				if err != nil {
					return err
				}
				var res *mutate.Result
				if sg != nil {
					if err := bf.localOnly(c, false); err != nil {
						return err
					}
					var opts []client.WriteOption
					if ifCommit != "" {
						opts = append(opts, client.IfGraphCommit(ifCommit))
					}
					var out *api.ChangeOutput
					if stored {
						mutation := true
						var r *client.InvokeResult
						if r, err = sg.InvokeQuery(ctx, name, api.InvokeRequest{Params: p, Branch: branch, ExpectMutation: &mutation}, opts...); err == nil {
							out = r.Mutation
						}
					} else {
						out, err = sg.Mutate(ctx, api.MutateRequest{Query: src, Name: name, Params: p, Branch: branch}, opts...)
					}
					if err != nil {
						return t.remoteErr(err)
					}
					res = mutateResult(out)
				} else {
					opts := mutate.Options{Branch: branch, Params: p, IfCommit: ifCommit, Budget: budget}
					// Parse and type-check before the cluster lock: a
					// query that can never run must not hold it (a writer
					// beside it would be refused with state_lock_held
					// meanwhile).
					if err := checkMutation(ctx, &t, src, name, opts); err != nil {
						return err
					}
					// err stays the named result: done reports a failed
					// lock release through it.
					var g *graph.Graph
					var done func(*error)
					if g, done, err = t.openWrite(ctx, "mutate"); err != nil {
						return err
					}
					defer done(&err)
					res, err = mutate.Query(ctx, g, src, name, opts)
					if errors.Is(err, graph.ErrPreconditionFailed) {
						return exitCodeError{code: exitConflict, err: err}
					}
					if err != nil {
						return budgetExit(err)
					}
					// After the result is printed, before the lock is released.
					defer auto.run(ctx, g, res.Commit)
				}
				for _, w := range res.Warnings {
					fmt.Fprintln(a.stderr, "warning:", w)
				}
				if t.json {
					return writeJSON(a.stdout, res)
				}
				if res.Commit == nil {
					fmt.Fprintln(a.stdout, "nothing matched; no commit")
					return nil
				}
				fmt.Fprintf(a.stdout, "%d nodes and %d edges affected; commit %s on branch %s\n",
					res.AffectedNodes, res.AffectedEdges, res.Commit.ID, res.Commit.Branch)
				return nil
			},
		}
		t.addStore(c)
		t.addServer(c)
		t.addJSON(c)
		t.addActor(c)
		t.addExternalBlobs(c)
		t.addWait(c)
		auto.add(c)
		c.Flags().StringVar(&file, "query", "", "a .gq file holding the mutation")
		c.Flags().StringVarP(&expr, "expr", "e", "", "the mutation text")
		c.Flags().StringVar(&params, "params", "", "parameters as a JSON object")
		c.Flags().StringVar(&branch, "branch", "", "branch to write (default main)")
		c.Flags().StringVar(&ifCommit, "if-commit", "", "write only if the branch head is this commit (exit 4 otherwise)")
		bf.add(c, "the read phase")
		return c
	})
}

// checkMutation runs mutate.Check on a read-only handle, which takes no
// lock.
func checkMutation(ctx context.Context, t *graphTarget, src, name string, opts mutate.Options) error {
	g, done, err := t.openGraph(ctx, false)
	if err != nil {
		return err
	}
	defer done()
	return mutate.Check(ctx, g, src, name, opts)
}

func startsWithKeyword(src string) bool {
	s := strings.TrimSpace(src)
	for strings.HasPrefix(s, "//") { // skip leading line comments
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = strings.TrimSpace(s[i+1:])
		} else {
			return false
		}
	}
	return strings.HasPrefix(s, "query ") || strings.HasPrefix(s, "mutation ")
}

// mutateParams decodes --params (parseParams).
func mutateParams(s string) (map[string]any, error) { return parseParams([]byte(s), "--params") }
