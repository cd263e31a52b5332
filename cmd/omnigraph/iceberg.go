package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/iceberg"
)

func init() {
	register(func(a *app) *cobra.Command {
		c := &cobra.Command{
			Use:   "iceberg",
			Short: "Keep Iceberg metadata of every node and edge table (Spark, Trino, PyIceberg, DuckDB read them)",
			Args:  cobra.NoArgs,
		}
		c.AddCommand(icebergSyncCmd(a))
		return c
	})
}

// icebergLocation is the URI engines reach the graph root at: --location,
// else derived from --store.
func icebergLocation(store, location string) (string, error) {
	if location != "" {
		return location, nil
	}
	return iceberg.Location(store)
}

func icebergSyncCmd(a *app) *cobra.Command {
	var t graphTarget
	var branch, location, codec string
	c := &cobra.Command{
		Use:   "sync [--branch B] [--location URI] [--metadata-compression none|gzip]",
		Short: "Bring the Iceberg metadata up to date with the graph's commits (incremental)",
		Long: "Write Iceberg (format v2) metadata for every node and edge table under the\n" +
			"graph root's _iceberg/ prefix: one snapshot per graph commit that changed the\n" +
			"table (its summary names the commit), one ref per graph branch (main is main).\n" +
			"Only the commits since the last sync are read. Metadata files are created with\n" +
			"put-if-absent, so an interrupted sync is invisible and running it again finishes it.\n" +
			"It writes nothing else. It holds the cluster lock while it runs (a cleanup must not\n" +
			"delete what it is naming; 'serve' syncs in the background itself). Without --branch\n" +
			"every live branch is synced and the refs of deleted branches are dropped.\n" +
			"Metadata names files by absolute URI under --location (default: the store URL;\n" +
			"give it when engines reach the store by another name, e.g. s3a://...).\n" +
			"Metadata files are plain JSON (v<N>.metadata.json) unless --metadata-compression\n" +
			"gzip; a table keeps its codec until told otherwise, and a change applies from the\n" +
			"second metadata file written after it.\n" +
			"See docs/iceberg.md for attaching Spark, Trino, PyIceberg and DuckDB.",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) (err error) {
			switch codec {
			case "", iceberg.CodecNone, iceberg.CodecGzip:
			default:
				return usageError{msg: fmt.Sprintf("--metadata-compression %q: give none or gzip", codec), hint: seeHelp(c)}
			}
			loc, err := icebergLocation(t.store, location)
			if err != nil {
				return err
			}
			g, done, err := t.openWrite(c.Context(), "iceberg sync")
			if err != nil {
				return err
			}
			defer done(&err)
			opts := iceberg.Options{Location: loc, MetadataCompression: codec}
			if branch != "" {
				opts.Branches = []string{branch}
			}
			res, err := iceberg.Sync(c.Context(), g, opts)
			if err != nil {
				return err
			}
			if t.json {
				return writeJSON(a.stdout, res)
			}
			if len(res.Tables) == 0 {
				fmt.Fprintln(a.stdout, "the Iceberg metadata is up to date; nothing was written")
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TABLE\tSNAPSHOTS ADDED\tMETADATA")
			for _, r := range res.Tables {
				fmt.Fprintf(tw, "%s\t%d\t%s\n", r.Table, r.Added, r.MetadataLocation)
			}
			return tw.Flush()
		},
	}
	c.Flags().StringVar(&branch, "branch", "", "sync only this branch (default: every live branch)")
	c.Flags().StringVar(&location, "location", "", "URI engines reach the graph root at (default: the --store URL)")
	c.Flags().StringVar(&codec, "metadata-compression", "", "codec of the metadata files: none (plain JSON) or gzip (default: each table's, none for a new table)")
	t.addStore(c)
	t.addJSON(c)
	t.addWait(c)
	return c
}

// storeLocation is the Iceberg location of a store URL, "" when it has
// none (cleanup then refuses only if the graph has Iceberg metadata).
func storeLocation(store string) string {
	loc, _ := iceberg.Location(store)
	return loc
}

// icebergServeLocation decides whether serve keeps a graph's Iceberg
// metadata current: with --iceberg-sync, or when the graph has Iceberg
// metadata already (one request at start), unless --no-iceberg-sync or a
// read-only server. It returns the location ("" for no).
func icebergServeLocation(ctx context.Context, o serveOptions, store string, g *graph.Graph) (string, error) {
	if o.icebergSync && o.noIcebergSync {
		return "", usagef("give at most one of --iceberg-sync and --no-iceberg-sync")
	}
	if o.readOnly || o.noIcebergSync {
		return "", nil
	}
	loc, err := iceberg.Location(store)
	if err != nil {
		if o.icebergSync {
			return "", err
		}
		return "", nil
	}
	if o.icebergSync {
		return loc, nil
	}
	ok, err := g.Store().Exists(ctx, strings.TrimSuffix(iceberg.Prefix, "/"))
	if err != nil || !ok {
		return "", err
	}
	return loc, nil
}
