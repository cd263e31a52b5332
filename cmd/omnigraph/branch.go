package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/graph"
)

// branchSubcommands are the subcommands of "omnigraph branch". Other command
// files (merge) add theirs with registerBranchSub in an init function.
var branchSubcommands []func(*app) *cobra.Command

func registerBranchSub(build func(*app) *cobra.Command) {
	branchSubcommands = append(branchSubcommands, build)
}

func init() {
	register(func(a *app) *cobra.Command {
		c := &cobra.Command{
			Use:   "branch",
			Short: "Create, list, merge and delete graph branches",
			Args:  cobra.NoArgs,
		}
		for _, build := range branchSubcommands {
			c.AddCommand(build(a))
		}
		return c
	})
	registerBranchSub(branchCreateCmd)
	registerBranchSub(branchListCmd)
	registerBranchSub(branchDeleteCmd)
}

func branchCreateCmd(a *app) *cobra.Command {
	var t graphTarget
	var from string
	c := &cobra.Command{
		Use:   "create NAME [--from B]",
		Short: "Create a branch from the head of another (default main)",
		Long: "Create branch NAME from the head of --from (default main). The branch shares\n" +
			"its parent's tables until it first writes them. Names may contain '/', but a\n" +
			"live name cannot be a path prefix of another live name (review vs review/x).",
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) (err error) {
			var commit string
			var incarnation uint64
			sg, err := t.serverGraph(c)
			if err != nil {
				return err
			}
			if sg != nil {
				out, err := sg.CreateBranch(c.Context(), api.BranchCreateRequest{Name: args[0], From: from})
				if err != nil {
					return t.remoteErr(err)
				}
				commit, incarnation = out.GraphCommitID, out.Incarnation
			} else {
				// err stays the named result: done reports a failed lock
				// release through it.
				var g *graph.Graph
				var done func(*error)
				if g, done, err = t.openWrite(c.Context(), "branch create"); err != nil {
					return err
				}
				defer done(&err)
				var snap *graph.Snapshot
				if snap, err = g.CreateBranch(c.Context(), args[0], from); err != nil {
					return err
				}
				commit, incarnation = snap.CommitID(), snap.Entry().Incarnation
			}
			out := map[string]any{"branch": args[0], "from": from, "commit": commit, "incarnation": incarnation}
			if t.json {
				return writeJSON(a.stdout, out)
			}
			fmt.Fprintf(a.stdout, "created branch %s from %s at commit %s\n", args[0], from, commit)
			return nil
		},
	}
	c.Flags().StringVar(&from, "from", "main", "branch to fork from")
	t.addStore(c)
	t.addServer(c)
	t.addJSON(c)
	t.addActor(c)
	t.addWait(c)
	return c
}

func branchListCmd(a *app) *cobra.Command {
	var t graphTarget
	c := &cobra.Command{
		Use:   "list",
		Short: "List the live branches",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			var bs []graph.BranchInfo
			sg, err := t.serverGraph(c)
			if err != nil {
				return err
			}
			if sg != nil {
				out, err := sg.Branches(c.Context())
				if err != nil {
					return t.remoteErr(err)
				}
				for _, h := range out.Heads {
					bs = append(bs, graph.BranchInfo{Name: h.Name, Incarnation: h.Incarnation, Version: h.GraphManifestVersion})
				}
			} else {
				g, done, err := t.openGraph(c.Context(), false)
				if err != nil {
					return err
				}
				defer done()
				if bs, err = g.Branches(c.Context()); err != nil {
					return err
				}
			}
			if t.json {
				return writeJSON(a.stdout, map[string]any{"branches": bs})
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "BRANCH\tVERSION")
			for _, b := range bs {
				fmt.Fprintf(tw, "%s\t%d\n", b.Name, b.Version)
			}
			return tw.Flush()
		},
	}
	t.addStore(c)
	t.addServer(c)
	t.addJSON(c)
	return c
}

func branchDeleteCmd(a *app) *cobra.Command {
	var t graphTarget
	c := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a branch (refused while branches forked from it are live)",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) (err error) {
			sg, err := t.serverGraph(c)
			if err != nil {
				return err
			}
			if sg != nil {
				if _, err := sg.DeleteBranch(c.Context(), args[0]); err != nil {
					return t.remoteErr(err)
				}
			} else {
				// err stays the named result: done reports a failed lock
				// release through it.
				var g *graph.Graph
				var done func(*error)
				if g, done, err = t.openWrite(c.Context(), "branch delete"); err != nil {
					return err
				}
				defer done(&err)
				if err = g.DeleteBranch(c.Context(), args[0]); err != nil {
					return err
				}
			}
			if t.json {
				return writeJSON(a.stdout, map[string]any{"branch": args[0], "deleted": true})
			}
			fmt.Fprintf(a.stdout, "deleted branch %s\n", args[0])
			return nil
		},
	}
	t.addStore(c)
	t.addServer(c)
	t.addJSON(c)
	t.addActor(c)
	t.addWait(c)
	return c
}
