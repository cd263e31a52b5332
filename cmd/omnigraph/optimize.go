package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/omnigraph-go/omnigraph/graph/optimize"
)

func init() {
	register(func(a *app) *cobra.Command {
		var t graphTarget
		var branch string
		c := &cobra.Command{
			Use:   "optimize [--branch B]",
			Short: "Compact a branch's tables: merge small fragments, fold deletions, build the key index",
			Args:  cobra.NoArgs,
			RunE: func(c *cobra.Command, args []string) (err error) {
				// A maintenance command: it holds the cluster lock throughout.
				g, done, err := t.openWrite(c.Context(), "optimize")
				if err != nil {
					return err
				}
				defer done(&err)
				res, err := optimize.Run(c.Context(), g, optimize.Options{Branch: branch})
				if err != nil {
					return err
				}
				if t.json {
					return writeJSON(a.stdout, res)
				}
				if res.NoOp {
					fmt.Fprintf(a.stdout, "branch %s is already compact; nothing was written\n", branch)
					return nil
				}
				fmt.Fprintf(a.stdout, "optimized branch %s in commit %s (manifest version %d)\n", branch, res.Commit.ID, res.Commit.ManifestVersion)
				tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "TABLE\tVERSION\tFRAGMENTS")
				for _, r := range res.Tables {
					fmt.Fprintf(tw, "%s\t%d -> %d\t%d -> %d\n", r.Table, r.FromVersion, r.ToVersion, r.FragmentsBefore, r.FragmentsAfter)
				}
				return tw.Flush()
			},
		}
		c.Flags().StringVar(&branch, "branch", "main", "branch to optimize")
		t.addStore(c)
		t.addJSON(c)
		t.addWait(c)
		return c
	})
}
