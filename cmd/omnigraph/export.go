package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/export"
)

// schemaPathFor is where export writes the schema beside --out FILE: FILE
// with its extension replaced by .pg (graph.jsonl -> graph.pg).
func schemaPathFor(out string) string {
	return strings.TrimSuffix(out, filepath.Ext(out)) + ".pg"
}

func init() {
	register(func(a *app) *cobra.Command {
		var t graphTarget
		var branch, snapshot, out, schemaOut string
		var types []string
		c := &cobra.Command{
			Use:   "export [--branch B | --snapshot COMMIT] [--type T]... [--out FILE|-] [--schema-out FILE] --store URL",
			Short: "Write a branch (or a past commit) as load NDJSON plus its .pg schema: the rebuild path",
			Long: "Write one snapshot of the graph in the format 'omnigraph load' reads: node lines, then\n" +
				"edge lines, by type name then id, every row with its id. With --out FILE the schema\n" +
				"accepted at that snapshot is written beside it (FILE with extension .pg, or --schema-out).\n" +
				"Rebuild a graph with:\n" +
				"  omnigraph export --out graph.jsonl --store OLD\n" +
				"  omnigraph init --schema graph.pg NEW\n" +
				"  omnigraph load --data graph.jsonl --mode overwrite NEW\n" +
				"Export is a read: it takes no lock and never waits for writers.",
			Args: cobra.NoArgs,
			RunE: func(c *cobra.Command, args []string) (err error) {
				ctx := c.Context()
				if branch != "" && snapshot != "" {
					return usagef("export either a branch (--branch) or a commit (--snapshot), not both")
				}
				toStdout := out == "" || out == "-"
				if toStdout && t.json {
					return usagef("--json prints a summary on stdout; give --out FILE for the data")
				}
				if !toStdout && schemaOut == "" {
					schemaOut = schemaPathFor(out)
					if schemaOut == out {
						return usagef("--out %s would be overwritten by the schema; name the data file .jsonl or give --schema-out", out)
					}
				}
				g, done, err := t.openGraph(ctx, false)
				if err != nil {
					return err
				}
				defer done()
				var snap *graph.Snapshot
				if snapshot != "" {
					snap, err = g.SnapshotAt(ctx, snapshot)
				} else {
					if branch == "" {
						branch = "main"
					}
					snap, err = g.Snapshot(ctx, branch)
				}
				if err != nil {
					return err
				}
				opts := export.Options{Types: types}
				if toStdout {
					res, err := export.Run(ctx, snap, a.stdout, opts)
					if err != nil {
						return err
					}
					if schemaOut != "" {
						return writeFileAtomic(schemaOut, []byte(res.Schema), 0o600)
					}
					return nil
				}
				// Write beside the target and rename on success, so a failed
				// export never leaves a truncated file under the name.
				tmp, err := createAtomic(out, 0o600)
				if err != nil {
					return fmt.Errorf("create the export file: %w", err)
				}
				defer tmp.Abort()
				res, err := export.Run(ctx, snap, tmp, opts)
				if err != nil {
					return err
				}
				if err = writeFileAtomic(schemaOut, []byte(res.Schema), 0o600); err != nil {
					return err
				}
				if err = tmp.Commit(); err != nil {
					return fmt.Errorf("write the export file: %w", err)
				}
				if t.json {
					return writeJSON(a.stdout, struct {
						*export.Result
						Out    string `json:"out"`
						Schema string `json:"schema_file"`
					}{res, out, schemaOut})
				}
				fmt.Fprintf(a.stdout, "exported %d nodes and %d edges of branch %s (commit %s) to %s; schema in %s\n",
					res.Nodes, res.Edges, res.Branch, res.CommitID, out, schemaOut)
				return nil
			},
		}
		c.Flags().StringVar(&branch, "branch", "", "branch to export (default main)")
		c.Flags().StringVar(&snapshot, "snapshot", "", "commit id to export instead of a branch head (time travel)")
		c.Flags().StringArrayVar(&types, "type", nil, "export only this node or edge type (repeatable)")
		c.Flags().StringVar(&out, "out", "-", "file to write the NDJSON to; - is standard output")
		c.Flags().StringVar(&schemaOut, "schema-out", "", "file to write the .pg schema to (default: beside --out, FILE.pg; none for standard output)")
		t.addStore(c)
		t.addJSON(c)
		return c
	})
}
