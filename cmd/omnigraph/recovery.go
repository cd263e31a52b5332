package main

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/omnigraph-go/omnigraph/recovery"
)

func init() {
	register(func(a *app) *cobra.Command {
		c := &cobra.Command{
			Use:   "recovery",
			Short: "Inspect interrupted-write recovery",
			Args:  cobra.NoArgs,
			RunE: func(c *cobra.Command, args []string) error {
				return usagef("recovery needs a subcommand: list (see 'omnigraph recovery --help')")
			},
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
				fmt.Fprintf(a.stdout, "\n%d pending recovery sidecar(s); a read-write open resolves them:\n", len(pending))
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
		Short: "Find and restore table drift that no recovery sidecar covers",
		Long: "Compare every branch's table pins with the tables' live HEADs. Without --confirm\n" +
			"it only prints the drift. With --confirm it restores each drifted table to its\n" +
			"pinned version and publishes one commit per branch by omnigraph:recovery, recorded\n" +
			"in the recovery log. It refuses while a recovery sidecar is pending: that drift\n" +
			"belongs to an interrupted write, which a read-write open recovers exactly.",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			ctx := c.Context()
			g, done, err := t.openGraph(ctx, confirm)
			if err != nil {
				return err
			}
			defer done()
			rep, err := g.Repair(ctx, confirm)
			if err != nil {
				if errors.Is(err, recovery.ErrPending) && !confirm {
					return fmt.Errorf("%w (open it read-write, e.g. 'omnigraph repair --confirm', which recovers first)", err)
				}
				return err
			}
			if t.json {
				return writeJSON(a.stdout, rep)
			}
			if len(rep.Drift) == 0 {
				fmt.Fprintln(a.stdout, "no drift: every table HEAD equals its manifest pin")
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "BRANCH\tTABLE\tTABLE BRANCH\tPIN\tHEAD")
			for _, d := range rep.Drift {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\n", d.Branch, d.Key, d.TableBranch, d.Pin, d.Head)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if !rep.Applied {
				fmt.Fprintln(a.stdout, "preview only: run again with --confirm to restore these tables to their pins")
				return nil
			}
			for _, r := range rep.Records {
				fmt.Fprintf(a.stdout, "repaired branch %s: commit %s\n", r.Branch, r.CommitID)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&confirm, "confirm", false, "restore the drift (default: preview only)")
	t.addStore(c)
	t.addJSON(c)
	return c
}
