package main

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/client"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/export"
	"github.com/omnigraph-go/omnigraph/lang/pg"
	"github.com/omnigraph-go/omnigraph/manifest"
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
			Use:   "export [--branch B | --snapshot COMMIT] [--type T]... [--out FILE|-] [--schema-out FILE] (--store URL | --server URL)",
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
				srv, err := t.serverGraph(c)
				if err != nil {
					return err
				}
				// run writes the export to w: read here, or streamed from
				// the server; both answer the same Result.
				var run func(w io.Writer) (*export.Result, error)
				if srv != nil {
					run = func(w io.Writer) (*export.Result, error) {
						return t.remoteExport(ctx, srv, branch, snapshot, types, w)
					}
				} else {
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
					run = func(w io.Writer) (*export.Result, error) {
						return export.Run(ctx, snap, w, export.Options{Types: types})
					}
				}
				// A file is written beside the target and renamed once the
				// export and its schema are complete, so a failed export
				// never leaves a truncated file under the name.
				var res *export.Result
				err = writeOutput(out, a.stdout, func(w io.Writer) error {
					var err error
					if res, err = run(w); err != nil || schemaOut == "" {
						return err
					}
					return writeFileAtomic(schemaOut, []byte(res.Schema), 0o600)
				})
				if err != nil || toStdout {
					return err
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
		t.addServer(c)
		t.addJSON(c)
		return c
	})
}

// remoteExport is export --server: the server's stream to w byte for byte
// (a line is never held whole: it may carry a large Blob value), the
// schema accepted at the commit it read (GET schema?snapshot=), and the
// same Result the local export answers, its counts taken from the lines
// as they pass.
func (t *graphTarget) remoteExport(ctx context.Context, g *client.Graph, branch, snapshot string, types []string, w io.Writer) (*export.Result, error) {
	ex, err := g.Export(ctx, client.ExportOptions{Branch: branch, Snapshot: snapshot, Types: types})
	if err != nil {
		return nil, t.remoteErr(err)
	}
	defer ex.Close()
	sch, err := exportSchema(ctx, g, ex, branch, snapshot)
	if err != nil {
		return nil, t.remoteErr(err)
	}
	cat, err := pg.CompileAccepted(sch.SchemaSource)
	if err != nil {
		return nil, fmt.Errorf("the server's schema at commit %s: %w", ex.Commit, err)
	}
	res := &export.Result{Branch: sch.Branch, CommitID: ex.Commit, Types: map[string]int{}, Schema: sch.SchemaSource, SchemaIdentity: sch.SchemaIdentity}
	if snapshot == "" {
		res.Branch = cmp.Or(branch, manifest.MainBranch)
	}
	kinds := map[string]string{}
	for _, n := range cat.Nodes {
		kinds[n.Name] = "type"
	}
	for _, e := range cat.Edges {
		kinds[e.Name] = "edge"
	}
	for name := range kinds {
		if len(types) == 0 || slices.Contains(types, name) {
			res.Types[name] = 0
		}
	}
	tc := &typeCounter{w: w, types: res.Types}
	if _, err := ex.WriteTo(tc); err != nil {
		return nil, t.remoteErr(err)
	}
	if tc.bad != "" {
		return nil, fmt.Errorf("the server's export has a line this CLI cannot read (%.80q): %w", tc.bad, client.ErrExportCut)
	}
	for name, n := range res.Types {
		if kinds[name] == "edge" {
			res.Edges += n
		} else {
			res.Nodes += n
		}
	}
	return res, nil
}

// exportSchema is the schema of the commit an export reads. A branch's
// export asks the branch's schema (what a token that may read the branch
// may ask) and checks it is the export's by its identity; only when a
// schema apply landed in between, or for a past commit, does it ask for the
// commit's schema (GET schema?snapshot=, a read of the whole graph).
func exportSchema(ctx context.Context, g *client.Graph, ex *client.Export, branch, snapshot string) (*api.SchemaOutput, error) {
	if snapshot == "" {
		sch, err := g.Schema(ctx, branch)
		if err != nil || sch.SchemaIdentity == ex.SchemaIdentity {
			return sch, err
		}
	}
	sch, err := g.SchemaAt(ctx, ex.Commit)
	if err == nil && ex.SchemaIdentity != "" && sch.SchemaIdentity != ex.SchemaIdentity {
		err = fmt.Errorf("the server's schema of commit %s is %s, its export said %s; export again", ex.Commit, sch.SchemaIdentity, ex.SchemaIdentity)
	}
	return sch, err
}

// typeCounter passes an export's bytes on and counts its lines by type,
// reading each line's head only: `{"type":"T",` or `{"edge":"E",`.
type typeCounter struct {
	w     io.Writer
	types map[string]int
	head  []byte // the current line's first bytes, up to headMax
	mid   bool   // inside a line whose head is already counted
	bad   string // a head that is neither form
}

const headMax = 256

var lineHead = regexp.MustCompile(`^\{"(?:type|edge)":"([A-Za-z_][A-Za-z0-9_]*)"`)

func (c *typeCounter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if err != nil {
		return n, err
	}
	for len(p) > 0 {
		nl := bytes.IndexByte(p, '\n')
		part := p
		if nl >= 0 {
			part = p[:nl]
		}
		if !c.mid && len(c.head) < headMax {
			c.head = append(c.head, part[:min(len(part), headMax-len(c.head))]...)
			if m := lineHead.FindSubmatch(c.head); m != nil {
				c.types[string(m[1])]++
				c.mid, c.head = true, c.head[:0]
			} else if len(c.head) >= headMax || nl >= 0 {
				c.bad = cmp.Or(c.bad, string(c.head))
				c.mid, c.head = true, c.head[:0]
			}
		}
		if nl < 0 {
			break
		}
		c.mid, c.head = false, c.head[:0]
		p = p[nl+1:]
	}
	return n, nil
}
