package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/omnigraph-go/omnigraph/graph/cleanup"
	"github.com/omnigraph-go/omnigraph/graph/iceberg"
)

func init() {
	register(func(a *app) *cobra.Command {
		var t graphTarget
		var keep int
		var olderThan time.Duration
		var confirm bool
		c := &cobra.Command{
			Use:   "cleanup (--keep N | --older-than DURATION) [--confirm]",
			Short: "Reclaim old table versions and unreferenced files (a preview unless --confirm)",
			Long: "Reclaim storage: table versions no manifest version within the retention needs\n" +
				"(the newest --keep N versions of every live branch, or those younger than\n" +
				"--older-than), unreferenced data, deletion and index files, and deleted branches'\n" +
				"trees. Never a version a live branch or its forks read. Prints what it would remove\n" +
				"unless --confirm is given. Refused while a recovery intent is pending or a table\n" +
				"has drifted (run 'omnigraph repair' first). Holds the cluster lock throughout.",
			Args: cobra.NoArgs,
			RunE: func(c *cobra.Command, args []string) (err error) {
				if (keep > 0) == (olderThan > 0) {
					return usagef("give exactly one of --keep N (N >= 1) or --older-than DURATION")
				}
				g, done, err := t.openWrite(c.Context(), "cleanup")
				if err != nil {
					return err
				}
				defer done(&err)
				res, err := cleanup.Run(c.Context(), g, cleanup.Options{Keep: keep, OlderThan: olderThan, Confirm: confirm,
					Retained: iceberg.CleanupHook(storeLocation(t.store))})
				if err != nil {
					return err
				}
				if t.json {
					return writeJSON(a.stdout, res)
				}
				_, err = fmt.Fprint(a.stdout, cleanup.Describe(res))
				return err
			},
		}
		c.Flags().IntVar(&keep, "keep", 0, "keep the newest N manifest versions of every live branch")
		c.Flags().DurationVar(&olderThan, "older-than", 0, "keep the manifest versions younger than DURATION (e.g. 720h)")
		c.Flags().BoolVar(&confirm, "confirm", false, "delete (without it, only print what would be deleted)")
		t.addStore(c)
		t.addJSON(c)
		t.addWait(c)
		return c
	})
}
