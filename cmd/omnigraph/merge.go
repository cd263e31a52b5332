package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/client"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/merge"
)

// exitMergeConflict: branch merge found conflicts and wrote nothing.
const exitMergeConflict = 5

func init() {
	registerBranchSub(branchMergeCmd)
}

// mergeOutput is what branch merge prints with --json.
type mergeOutput struct {
	*merge.Result
	Conflicts         []merge.Conflict `json:"merge_conflicts,omitempty"`
	BranchDeleted     *bool            `json:"branch_deleted,omitempty"`
	BranchDeleteError string           `json:"branch_delete_error,omitempty"`
}

func branchMergeCmd(a *app) *cobra.Command {
	var t graphTarget
	var into string
	var deleteBranch bool
	c := &cobra.Command{
		Use:   "merge SRC [--into TGT] [--delete-branch]",
		Short: "Merge branch SRC into TGT (default main)",
		Long: "Merge branch SRC into TGT (default main): already_up_to_date when TGT already\n" +
			"holds SRC's head, fast_forward when TGT has not moved since SRC forked, otherwise\n" +
			"a three-way merge per entity (whole rows) published as one commit with two parents.\n" +
			"Conflicts refuse the whole merge (exit 5) and write nothing; --json lists them all.\n" +
			"--delete-branch deletes SRC after a successful merge.",
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) (err error) {
			src := args[0]
			if src == into {
				return usagef("SRC and --into name the same branch %q; merge into another branch", src)
			}
			sg, err := t.serverGraph(c)
			if err != nil {
				return err
			}
			conflicts := func(cs []merge.Conflict, err error) error {
				if t.json {
					out := mergeOutput{Result: &merge.Result{Source: src, Target: into, Outcome: "conflict"}, Conflicts: cs}
					if werr := writeJSON(a.stdout, out); werr != nil {
						return werr
					}
				}
				return exitCodeError{code: exitMergeConflict, err: err}
			}
			var res *merge.Result
			var out mergeOutput
			if sg != nil {
				ro, err := sg.Merge(c.Context(), api.MergeRequest{Source: src, Target: into, DeleteBranch: deleteBranch})
				var ce *client.Error
				if errors.As(err, &ce) && len(ce.Details.MergeConflicts) > 0 {
					return conflicts(mergeConflicts(ce.Details.MergeConflicts), serverError{e: ce})
				}
				if err != nil {
					return t.remoteErr(err)
				}
				res = mergeResult(ro)
				out = mergeOutput{Result: res, BranchDeleted: ro.BranchDeleted, BranchDeleteError: ro.BranchDeleteError}
				if ro.BranchDeleted != nil && !*ro.BranchDeleted {
					fmt.Fprintf(a.stderr, "warning: the merge succeeded, but deleting branch %s failed: %s\n", src, out.BranchDeleteError)
				}
			} else {
				// err stays the named result: done reports a failed lock
				// release through it.
				var g *graph.Graph
				var done func(*error)
				if g, done, err = t.openWrite(c.Context(), "branch merge"); err != nil {
					return err
				}
				defer done(&err)
				res, err = merge.Run(c.Context(), g, src, into, merge.Options{})
				var mc *merge.MergeConflicts
				if errors.As(err, &mc) {
					return conflicts(mc.Conflicts, err)
				}
				if err != nil {
					return err
				}
				out = mergeOutput{Result: res}
				if deleteBranch {
					ok := true
					if derr := g.DeleteBranch(c.Context(), src); derr != nil {
						ok = false
						out.BranchDeleteError = backend.Redact(derr.Error())
						fmt.Fprintf(a.stderr, "warning: the merge succeeded, but deleting branch %s failed: %s\n", src, out.BranchDeleteError)
					}
					out.BranchDeleted = &ok
				}
			}
			if t.json {
				return writeJSON(a.stdout, out)
			}
			switch res.Outcome {
			case merge.AlreadyUpToDate:
				fmt.Fprintf(a.stdout, "%s is already up to date with %s\n", res.Target, res.Source)
			default:
				fmt.Fprintf(a.stdout, "%s: merged %s into %s at commit %s (%d inserted, %d updated, %d deleted)\n",
					res.Outcome, res.Source, res.Target, res.Commit.ID, res.Inserted, res.Updated, res.Deleted)
			}
			for _, w := range res.Warnings {
				fmt.Fprintf(a.stderr, "warning: %s\n", w)
			}
			if out.BranchDeleted != nil && *out.BranchDeleted {
				fmt.Fprintf(a.stdout, "deleted branch %s\n", src)
			}
			return nil
		},
	}
	c.Flags().StringVar(&into, "into", "main", "branch to merge into")
	c.Flags().BoolVar(&deleteBranch, "delete-branch", false, "delete SRC after a successful merge")
	t.addStore(c)
	t.addServer(c)
	t.addJSON(c)
	t.addActor(c)
	t.addWait(c)
	return c
}
