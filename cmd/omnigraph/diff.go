package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/client"
	"github.com/omnigraph-go/omnigraph/graph/merge"
)

func init() {
	registerCommitSub(commitChangesCmd)
	register(diffCmd)
}

// changeFlags are the filters commit changes and diff share.
type changeFlags struct {
	typ, op string
	limit   int
}

func (cf *changeFlags) add(c *cobra.Command) {
	c.Flags().StringVar(&cf.typ, "type", "", "only changes of this node or edge type")
	c.Flags().StringVar(&cf.op, "op", "", "only changes of this op: insert, update or delete")
	c.Flags().IntVar(&cf.limit, "limit", 0, "at most this many changes (0: all)")
}

func parseChangeFilter(typ, op string, limit int) (merge.Filter, error) {
	f := merge.Filter{Type: typ, Op: merge.Op(op), Limit: limit}
	switch f.Op {
	case "", merge.OpInsert, merge.OpUpdate, merge.OpDelete:
	default:
		return f, usagef("--op must be insert, update or delete, not %q", op)
	}
	if limit < 0 {
		return f, usagef("--limit must be 0 (all) or more")
	}
	return f, nil
}

// printChanges prints changes as the API has them (values as JSON renders
// them), whichever mode read them.
func printChanges(a *app, cs []api.Change) {
	for _, c := range cs {
		fmt.Fprintln(a.stdout, changeLine(c))
	}
	fmt.Fprintf(a.stdout, "%d changes\n", len(cs))
}

// changeLine renders one change: op, kind, type, id, the endpoints of an
// edge and the columns an update changed.
func changeLine(c api.Change) string {
	line := fmt.Sprintf("%-6s %s %s %q", c.Op, c.EntityKind, c.TypeName, c.ID)
	if c.EntityKind == "edge" {
		line += fmt.Sprintf(" (%s -> %s)", c.From, c.To)
	}
	if c.Op == string(merge.OpUpdate) {
		line += " " + changedColumns(c.Before, c.After)
	}
	return line
}

// changedColumns renders the columns an update changed: "name: Ada -> Ada2".
func changedColumns(before, after map[string]any) string {
	var cols []string
	for k, v := range after {
		if fmt.Sprint(before[k]) != fmt.Sprint(v) {
			cols = append(cols, k)
		}
	}
	sort.Strings(cols)
	parts := make([]string, len(cols))
	for i, k := range cols {
		parts[i] = fmt.Sprintf("%s: %v -> %v", k, before[k], after[k])
	}
	return strings.Join(parts, ", ")
}

func commitChangesCmd(a *app) *cobra.Command {
	var t graphTarget
	var cf changeFlags
	c := &cobra.Command{
		Use:   "changes ID [--type T] [--op insert|update|delete] [--limit N]",
		Short: "Show the entity changes of one commit against its first parent",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			f, err := parseChangeFilter(cf.typ, cf.op, cf.limit)
			if err != nil {
				return err
			}
			var cs []api.Change
			sg, err := t.serverGraph(c)
			if err != nil {
				return err
			}
			if sg != nil {
				out, err := sg.CommitChanges(c.Context(), args[0], client.ChangesOptions{Type: f.Type, Op: string(f.Op), Limit: f.Limit})
				if err != nil {
					return t.remoteErr(err)
				}
				cs = out.Changes
			} else {
				g, done, err := t.openGraph(c.Context(), false)
				if err != nil {
					return err
				}
				defer done()
				mc, err := merge.CommitChanges(c.Context(), g, args[0], f)
				if err != nil {
					return err
				}
				if cs, err = wireChanges(mc); err != nil {
					return err
				}
			}
			if cs == nil {
				cs = []api.Change{}
			}
			if t.json {
				return writeJSON(a.stdout, map[string]any{"commit": args[0], "changes": cs})
			}
			printChanges(a, cs)
			return nil
		},
	}
	cf.add(c)
	t.addStore(c)
	t.addServer(c)
	t.addJSON(c)
	return c
}

func nonNil(cs []merge.Change) []merge.Change {
	if cs == nil {
		return []merge.Change{}
	}
	return cs
}

func diffCmd(a *app) *cobra.Command {
	var t graphTarget
	var cf changeFlags
	c := &cobra.Command{
		Use:   "diff A B [--type T] [--op insert|update|delete] [--limit N]",
		Short: "Show the entity changes from A to B (branches or commit ids)",
		Args:  cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			f, err := parseChangeFilter(cf.typ, cf.op, cf.limit)
			if err != nil {
				return err
			}
			sg, err := t.serverGraph(c)
			if err != nil {
				return err
			}
			if sg != nil {
				out, err := sg.Diff(c.Context(), api.DiffRequest{From: args[0], To: args[1], Type: f.Type, Op: string(f.Op), Limit: f.Limit})
				if err != nil {
					return t.remoteErr(err)
				}
				cs := out.Changes
				if cs == nil {
					cs = []api.Change{}
				}
				if t.json {
					return writeJSON(a.stdout, map[string]any{"from": args[0], "to": args[1], "changes": cs})
				}
				printChanges(a, cs)
				return nil
			}
			g, done, err := t.openGraph(c.Context(), false)
			if err != nil {
				return err
			}
			defer done()
			from, err := g.SnapshotOfRef(c.Context(), args[0])
			if err != nil {
				return err
			}
			to, err := g.SnapshotOfRef(c.Context(), args[1])
			if err != nil {
				return err
			}
			cs, err := merge.Diff(c.Context(), from, to, f)
			if err != nil {
				return err
			}
			if t.json {
				return writeJSON(a.stdout, map[string]any{"from": args[0], "to": args[1], "changes": nonNil(cs)})
			}
			wire, err := wireChanges(cs)
			if err != nil {
				return err
			}
			printChanges(a, wire)
			return nil
		},
	}
	cf.add(c)
	t.addStore(c)
	t.addServer(c)
	t.addJSON(c)
	return c
}
