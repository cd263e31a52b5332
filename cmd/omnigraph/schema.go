package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

func init() {
	register(func(a *app) *cobra.Command {
		schema := &cobra.Command{
			Use:   "schema",
			Short: "Inspect the graph's accepted schema",
			Args:  cobra.NoArgs,
			RunE: func(c *cobra.Command, args []string) error {
				return usagef("schema needs a subcommand: show (see 'omnigraph schema --help')")
			},
		}
		var t graphTarget
		var branch string
		show := &cobra.Command{
			Use:   "show",
			Short: "Print the accepted .pg schema of a branch",
			Args:  cobra.NoArgs,
			RunE: func(c *cobra.Command, args []string) error {
				g, done, err := t.openGraph(c.Context(), false)
				if err != nil {
					return err
				}
				defer done()
				snap, err := g.Snapshot(c.Context(), branch)
				if err != nil {
					return err
				}
				cat, err := snap.Catalog(c.Context())
				if err != nil {
					return err
				}
				if t.json {
					return writeJSON(a.stdout, map[string]string{
						"branch": snap.Branch(), "identity": cat.Identity, "source": cat.Source,
					})
				}
				fmt.Fprint(a.stdout, cat.Source)
				if !strings.HasSuffix(cat.Source, "\n") {
					fmt.Fprintln(a.stdout)
				}
				return nil
			},
		}
		show.Flags().StringVar(&branch, "branch", "main", "branch whose schema to show")
		t.addStore(show)
		t.addJSON(show)
		schema.AddCommand(show)
		return schema
	})
}
