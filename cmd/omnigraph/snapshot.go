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
			Use:   "snapshot [--branch B] [--json] (--store URL | --server URL)",
			Short: "Show a branch head: per-table version and row count, and the storage version",
			Args:  cobra.NoArgs,
			RunE: func(c *cobra.Command, args []string) error {
				out, err := t.snapshotOf(c, branch)
				if err != nil {
					return err
				}
				stats := out.Tables
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
		t.addServer(c)
		t.addJSON(c)
		return c
	})
}

// snapshotOutput is what snapshot prints with --json.
type snapshotOutput struct {
	Branch                string            `json:"branch"`
	ManifestVersion       uint64            `json:"manifest_version"`
	Commit                string            `json:"commit"`
	InternalSchemaVersion int               `json:"internal_schema_version"`
	SchemaIdentity        string            `json:"schema_identity"`
	Tables                []graph.TableStat `json:"tables"`
}

// snapshotOf reads the head of branch from --store, or asks --server (GET
// snapshot). The server does not send a table's storage path, so a
// --server snapshot has none.
func (t *graphTarget) snapshotOf(c *cobra.Command, branch string) (*snapshotOutput, error) {
	srv, err := t.serverGraph(c)
	if err != nil {
		return nil, err
	}
	if srv != nil {
		s, err := srv.Snapshot(c.Context(), branch)
		if err != nil {
			return nil, t.remoteErr(err)
		}
		out := &snapshotOutput{s.GraphBranch, s.GraphManifestVersion, s.GraphCommitID, s.InternalSchemaVersion, s.SchemaIdentity, []graph.TableStat{}}
		for _, d := range s.Datasets {
			out.Tables = append(out.Tables, graph.TableStat{Key: d.EntityKind + ":" + d.TypeName, Branch: d.NativeDatasetBranch,
				Version: d.PublishedDatasetVersion, Rows: d.EntityCount})
		}
		return out, nil
	}
	snap, done, err := t.openSnapshot(c.Context(), branch)
	if err != nil {
		return nil, err
	}
	defer done()
	stats, err := snap.TableStats(c.Context())
	if err != nil {
		return nil, err
	}
	return &snapshotOutput{snap.Branch(), snap.Version(), snap.CommitID(), snap.Stamp(), snap.SchemaIdentity(), stats}, nil
}
