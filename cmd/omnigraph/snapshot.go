package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/omnigraph-go/omnigraph/graph"
)

func init() {
	register(func(a *app) *cobra.Command {
		var t graphTarget
		var branch string
		c := &cobra.Command{
			Use:   "snapshot [--branch B]",
			Short: "Show a branch head: per-table version and row count, and the storage version",
			Args:  cobra.NoArgs,
			RunE: func(c *cobra.Command, args []string) error {
				snap, done, err := t.openSnapshot(c.Context(), branch)
				if err != nil {
					return err
				}
				defer done()
				stats, err := snap.TableStats(c.Context())
				if err != nil {
					return err
				}
				out := struct {
					Branch                string            `json:"branch"`
					ManifestVersion       uint64            `json:"manifest_version"`
					Commit                string            `json:"commit"`
					InternalSchemaVersion int               `json:"internal_schema_version"`
					SchemaIdentity        string            `json:"schema_identity"`
					Tables                []graph.TableStat `json:"tables"`
				}{snap.Branch(), snap.Version(), snap.CommitID(), snap.Stamp(), snap.SchemaIdentity(), stats}
				if t.json {
					return writeJSON(a.stdout, out)
				}
				fmt.Fprintf(a.stdout, "branch %s  version %d  commit %s  internal schema version %d\n",
					out.Branch, out.ManifestVersion, out.Commit, out.InternalSchemaVersion)
				tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "TABLE\tTABLE BRANCH\tVERSION\tROWS")
				for _, s := range stats {
					fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", s.Key, s.Branch, s.Version, s.Rows)
				}
				return tw.Flush()
			},
		}
		c.Flags().StringVar(&branch, "branch", "main", "branch to show")
		t.addStore(c)
		t.addJSON(c)
		return c
	})
}
