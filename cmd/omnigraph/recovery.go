package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/recovery"
)

func init() {
	register(func(a *app) *cobra.Command {
		c := &cobra.Command{
			Use:   "recovery",
			Short: "Inspect interrupted-write recovery",
			Args:  cobra.NoArgs,
		}
		c.AddCommand(recoveryListCmd(a))
		return c
	})
	register(repairCmd)
}

func recoveryListCmd(a *app) *cobra.Command {
	var t graphTarget
	c := &cobra.Command{
		Use:   "list",
		Short: "List completed recoveries (the recovery audit log) and pending recovery sidecars",
		Long: "List every completed recovery of an interrupted write, oldest first: what it did\n" +
			"(RolledForward, RolledBack, Discarded, OrphanDiscarded, Repaired), for whose write,\n" +
			"and the commit it published. Pending sidecars are listed with what recovery would\n" +
			"do; a read-write open resolves them. This command changes nothing.",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			ctx := c.Context()
			g, done, err := t.openGraph(ctx, false)
			if err != nil {
				return err
			}
			defer done()
			rows, err := g.RecoveryAudit(ctx)
			if err != nil {
				return err
			}
			pending, err := g.PendingRecovery(ctx)
			if err != nil {
				return err
			}
			if t.json {
				type pend struct {
					OperationID    string                     `json:"operation_id"`
					WriterKind     string                     `json:"writer_kind"`
					Actor          string                     `json:"actor"`
					Branch         string                     `json:"branch"`
					Classification recovery.Classification    `json:"classification"`
					AuthorityMoved bool                       `json:"authority_moved"`
					Tables         []recovery.TableAssessment `json:"tables"`
				}
				ps := []pend{}
				for _, p := range pending {
					in := p.Sidecar.Intent
					ps = append(ps, pend{in.OperationID, in.Kind, in.Actor, in.Token.Branch, p.Class, p.AuthorityMoved, p.Tables})
				}
				if rows == nil {
					rows = []recovery.Record{}
				}
				return writeJSON(a.stdout, map[string]any{"recoveries": rows, "pending": ps})
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "OPERATION\tKIND\tCLASSIFICATION\tWRITER\tFOR ACTOR\tBRANCH\tCOMMIT\tRECOVERED\tTABLES")
			for _, r := range rows {
				var ts []string
				for _, o := range r.Tables {
					ts = append(ts, fmt.Sprintf("%s:%s", o.Key, o.Action))
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.OperationID, r.RecoveryKind, r.Classification, r.WriterKind,
					dash(r.RecoveryForActor), r.Branch, dash(r.CommitID), time.UnixMicro(r.RecoveredMicros).UTC().Format(time.RFC3339), dash(strings.Join(ts, ",")))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if len(pending) > 0 {
				fmt.Fprintf(a.stdout, "\n%d pending recovery sidecar(s); a read-write open (or 'omnigraph repair --confirm') resolves them:\n", len(pending))
				tw = tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "OPERATION\tWRITER\tACTOR\tBRANCH\tCLASSIFICATION\tAUTHORITY MOVED")
				for _, p := range pending {
					in := p.Sidecar.Intent
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%v\n", in.OperationID, in.Kind, in.Actor, in.Token.Branch, p.Class, p.AuthorityMoved)
				}
				return tw.Flush()
			}
			return nil
		},
	}
	t.addStore(c)
	t.addJSON(c)
	return c
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func repairCmd(a *app) *cobra.Command {
	var t graphTarget
	var confirm bool
	c := &cobra.Command{
		Use:   "repair [--confirm]",
		Short: "Resolve interrupted writes and restore table drift",
		Long: "Without --confirm, print what repair would do and change nothing: every pending\n" +
			"recovery sidecar (an interrupted write) with its classification, and every table\n" +
			"whose HEAD differs from its branch's pinned version with no sidecar covering it.\n" +
			"With --confirm, first resolve every pending sidecar (roll a complete write forward;\n" +
			"otherwise roll back that write's own table commits, leaving other writers' state\n" +
			"alone), then restore each drifted table to its pinned version and publish one\n" +
			"commit per branch by omnigraph:recovery. Everything it does is recorded in the\n" +
			"recovery log ('omnigraph recovery list'). It refuses only a table whose HEAD is\n" +
			"behind its pin, which no restore can fix.",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) (err error) {
			ctx := c.Context()
			// Both modes hold the cluster lock: --confirm so that no live
			// writer's intent is resolved under it, the preview so that it
			// never lists a live writer's in-flight write as interrupted.
			g, done, err := t.openWriteGraph(ctx, "repair", func(ctx context.Context, s backend.StorageAdapter) (*graph.Graph, error) {
				if confirm {
					return graph.OpenForRepair(ctx, s, graph.OpenOptions{Actor: t.actor})
				}
				return graph.Open(ctx, s, graph.OpenOptions{ReadOnly: true, Actor: t.actor})
			})
			if err != nil {
				return err
			}
			defer done(&err)
			rep, err := g.Repair(ctx, confirm)
			if err != nil {
				return err
			}
			if t.json {
				return writeJSON(a.stdout, rep)
			}
			printRepair(a, rep, confirm)
			return nil
		},
	}
	c.Flags().BoolVar(&confirm, "confirm", false, "resolve and restore (default: preview only)")
	t.addStore(c)
	t.addJSON(c)
	t.addWait(c)
	return c
}

// printRepair prints what repair found (preview) or did (--confirm).
func printRepair(a *app, rep *graph.RepairReport, confirm bool) {
	w := a.stdout
	if !confirm && len(rep.Pending) > 0 {
		fmt.Fprintf(w, "%d interrupted write(s) to resolve:\n", len(rep.Pending))
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "OPERATION\tWRITER\tACTOR\tBRANCH\tCLASSIFICATION")
		for _, p := range rep.Pending {
			in := p.Sidecar.Intent
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", in.OperationID, in.Kind, in.Actor, in.Token.Branch, p.Class)
		}
		tw.Flush()
	}
	for _, r := range rep.Recovered {
		what := map[recovery.Kind]string{
			recovery.RolledForward:   "rolled forward",
			recovery.RolledBack:      "rolled back",
			recovery.Discarded:       "discarded (it had changed nothing)",
			recovery.OrphanDiscarded: "discarded (its branch is gone)",
		}[r.RecoveryKind]
		if what == "" {
			what = string(r.RecoveryKind)
		}
		line := fmt.Sprintf("interrupted %s by %s on branch %s (operation %s): %s", r.WriterKind, dash(r.RecoveryForActor), r.Branch, r.OperationID, what)
		if r.CommitID != "" {
			line += ", commit " + r.CommitID
		}
		fmt.Fprintln(w, line)
	}
	if len(rep.Drift) > 0 {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "BRANCH\tTABLE\tPINNED VERSION\tHEAD")
		for _, d := range rep.Drift {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", d.Branch, d.Key, d.Pin, d.Head)
		}
		tw.Flush()
	}
	switch {
	case !confirm && (len(rep.Pending) > 0 || len(rep.Drift) > 0):
		fmt.Fprintln(w, "preview only: run again with --confirm to resolve and restore")
	case len(rep.Pending) == 0 && len(rep.Drift) == 0:
		fmt.Fprintln(w, "nothing to repair: no interrupted write, and every table HEAD equals its pinned version")
	case confirm && len(rep.Drift) == 0:
		fmt.Fprintln(w, "no drift left: every table HEAD equals its pinned version")
	}
	for _, r := range rep.Records {
		fmt.Fprintf(w, "repaired branch %s: commit %s\n", r.Branch, r.CommitID)
	}
}
