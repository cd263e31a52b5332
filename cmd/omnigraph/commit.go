package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/omnigraph-go/omnigraph/graph"
)

// commitSubcommands are the subcommands of "omnigraph commit"; other command
// files (commit changes) add theirs with registerCommitSub in an init.
var commitSubcommands []func(*app) *cobra.Command

func registerCommitSub(build func(*app) *cobra.Command) {
	commitSubcommands = append(commitSubcommands, build)
}

func init() {
	register(func(a *app) *cobra.Command {
		c := &cobra.Command{
			Use:   "commit",
			Short: "Inspect the commit history",
			Args:  cobra.NoArgs,
		}
		for _, build := range commitSubcommands {
			c.AddCommand(build(a))
		}
		return c
	})
	registerCommitSub(commitListCmd)
	registerCommitSub(commitShowCmd)
}

func commitListCmd(a *app) *cobra.Command {
	var t graphTarget
	var branch string
	var limit int
	var firstParent bool
	c := &cobra.Command{
		Use:   "list [--branch B] [--first-parent]",
		Short: "List the commits reachable from a branch head, newest first",
		Long: "List the commits reachable from a branch head, newest first, as git log does:\n" +
			"through both parents of every merge, so the commits a merge brought in appear\n" +
			"among the branch's own (by time), each once. --first-parent lists only the\n" +
			"branch's own line (and what it inherited through its fork point).",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if limit < 0 {
				return usagef("--limit must be 0 (all) or more")
			}
			var cs []graph.CommitInfo
			sg, err := t.serverGraph(c)
			if err != nil {
				return err
			}
			if sg != nil {
				list := sg.Commits
				if firstParent {
					list = sg.FirstParentCommits
				}
				out, err := list(c.Context(), branch, limit)
				if err != nil {
					return t.remoteErr(err)
				}
				cs = []graph.CommitInfo{}
				for i := range out.Commits {
					cs = append(cs, *commitInfo(&out.Commits[i]))
				}
			} else {
				g, done, err := t.openGraph(c.Context(), false)
				if err != nil {
					return err
				}
				defer done()
				if cs, err = g.Log(c.Context(), branch, graph.LogOptions{Limit: limit, FirstParent: firstParent}); err != nil {
					return err
				}
			}
			if t.json {
				return writeJSON(a.stdout, map[string]any{"branch": branch, "commits": cs})
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "COMMIT\tBRANCH\tVERSION\tACTOR\tTIME\tPARENTS")
			for _, ci := range cs {
				printCommitRow(tw, ci)
			}
			return tw.Flush()
		},
	}
	c.Flags().StringVar(&branch, "branch", "main", "branch whose history to list")
	c.Flags().IntVar(&limit, "limit", 0, "list at most this many commits (0: all)")
	c.Flags().BoolVar(&firstParent, "first-parent", false, "follow first parents only (the branch's own line), not the commits merges brought in")
	t.addStore(c)
	t.addServer(c)
	t.addJSON(c)
	return c
}

func printCommitRow(tw *tabwriter.Writer, ci graph.CommitInfo) {
	parents := strings.Join(ci.Parents, ",")
	if parents == "" {
		parents = "-"
	}
	version := fmt.Sprint(ci.ManifestVersion)
	if ci.CleanedUp {
		version += " (cleaned up)"
	}
	fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", ci.ID, ci.Branch, version, ci.Actor, ci.Time.Format(time.RFC3339Nano), parents)
}

func commitShowCmd(a *app) *cobra.Command {
	var t graphTarget
	c := &cobra.Command{
		Use:   "show ID",
		Short: "Show one commit",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			var ci graph.CommitInfo
			sg, err := t.serverGraph(c)
			if err != nil {
				return err
			}
			if sg != nil {
				out, err := sg.Commit(c.Context(), args[0])
				if err != nil {
					return t.remoteErr(err)
				}
				ci = *commitInfo(out)
			} else {
				g, done, err := t.openGraph(c.Context(), false)
				if err != nil {
					return err
				}
				defer done()
				if ci, err = g.Commit(c.Context(), args[0]); err != nil {
					return err
				}
			}
			if t.json {
				return writeJSON(a.stdout, ci)
			}
			cleaned := ""
			if ci.CleanedUp {
				cleaned = ", cleaned up: its data can no longer be read"
			}
			fmt.Fprintf(a.stdout, "commit   %s\nbranch   %s (manifest version %d%s)\nactor    %s\ntime     %s\nparents  %s\n",
				ci.ID, ci.Branch, ci.ManifestVersion, cleaned, ci.Actor, ci.Time.Format(time.RFC3339Nano), strings.Join(ci.Parents, " "))
			return nil
		},
	}
	t.addStore(c)
	t.addServer(c)
	t.addJSON(c)
	return c
}
