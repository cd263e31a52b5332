package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/schema"
	"github.com/omnigraph-go/omnigraph/lang/pg"
	"github.com/omnigraph-go/omnigraph/manifest"
)

func init() {
	register(func(a *app) *cobra.Command {
		c := &cobra.Command{
			Use:   "schema",
			Short: "Inspect and evolve the graph's accepted schema",
			Args:  cobra.NoArgs,
		}
		c.AddCommand(schemaShowCmd(a), schemaPlanCmd(a), schemaApplyCmd(a))
		return c
	})
	register(ensureIndicesCmd)
}

func schemaShowCmd(a *app) *cobra.Command {
	var t graphTarget
	var branch string
	show := &cobra.Command{
		Use:   "show",
		Short: "Print the accepted .pg schema of a branch",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			out, err := t.schemaOf(c, branch)
			if err != nil {
				return err
			}
			if t.json {
				return writeJSON(a.stdout, map[string]string{
					"branch": out.Branch, "identity": out.SchemaIdentity, "source": out.SchemaSource,
				})
			}
			fmt.Fprint(a.stdout, out.SchemaSource)
			if !strings.HasSuffix(out.SchemaSource, "\n") {
				fmt.Fprintln(a.stdout)
			}
			return nil
		},
	}
	show.Flags().StringVar(&branch, "branch", "main", "branch whose schema to show")
	t.addStore(show)
	t.addServer(show)
	t.addJSON(show)
	return show
}

// schemaOf is the accepted schema of branch: read from --store, or asked
// of --server (GET schema), in the API's shape.
func (t *graphTarget) schemaOf(c *cobra.Command, branch string) (*api.SchemaOutput, error) {
	srv, err := t.serverGraph(c)
	if err != nil {
		return nil, err
	}
	if srv != nil {
		out, err := srv.Schema(c.Context(), branch)
		return out, t.remoteErr(err)
	}
	snap, done, err := t.openSnapshot(c.Context(), branch)
	if err != nil {
		return nil, err
	}
	defer done()
	cat, err := snap.Catalog(c.Context())
	if err != nil {
		return nil, err
	}
	return &api.SchemaOutput{Branch: snap.Branch(), SchemaIdentity: cat.Identity, SchemaSource: cat.Source}, nil
}

// readSchema reads and compiles the --schema file, so a schema error names
// the file given.
func readSchema(file string) (*pg.Catalog, error) {
	if file == "" {
		return nil, usagef("--schema FILE.pg is required")
	}
	src, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read the schema: %w", err)
	}
	cat, err := pg.CompileFile(file, string(src))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", graph.ErrInvalidSchema, err)
	}
	return cat, nil
}

func schemaPlanCmd(a *app) *cobra.Command {
	var t graphTarget
	var file string
	var allowLoss bool
	c := &cobra.Command{
		Use:   "plan --schema NEW.pg --store URL",
		Short: "Show what 'schema apply' would change (changes nothing)",
		Long: "Compare main's accepted schema with NEW.pg and print the steps that turn one into\n" +
			"the other, each with its effect on stored data: metadata (the schema only), rewrite\n" +
			"(the type's table is rewritten with its new columns), create (a new, empty table) or\n" +
			"refused, with a stable code and what to do instead. Checks that depend on data (a\n" +
			"required property added to a type with rows, a new @unique, @range or @check that\n" +
			"existing rows break, dropping a type or property that holds data) read main's tables.\n" +
			"Exits 0 whether or not the plan is supported; 'supported' says which. Writes nothing.",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			desired, err := readSchema(file)
			if err != nil {
				return err
			}
			g, done, err := t.openGraph(c.Context(), false)
			if err != nil {
				return err
			}
			defer done()
			snap, err := g.Snapshot(c.Context(), manifest.MainBranch)
			if err != nil {
				return err
			}
			p, err := schema.Compute(c.Context(), snap, desired, schema.PlanOptions{AllowDataLoss: allowLoss})
			if err != nil {
				return err
			}
			if t.json {
				return writeJSON(a.stdout, p)
			}
			return describePlan(a.stdout, p)
		},
	}
	c.Flags().StringVar(&file, "schema", "", "the desired .pg schema")
	c.Flags().BoolVar(&allowLoss, "allow-data-loss", false, "plan drops of types and properties that hold data as allowed")
	t.addStore(c)
	t.addJSON(c)
	return c
}

func schemaApplyCmd(a *app) *cobra.Command {
	var t graphTarget
	var file string
	var allowLoss bool
	c := &cobra.Command{
		Use:   "apply --schema NEW.pg --store URL",
		Short: "Make NEW.pg main's accepted schema, rewriting the tables it changes, as one commit",
		Long: "Apply the plan 'omnigraph schema plan' shows, as one commit on main: tables whose\n" +
			"columns change are rewritten, new types get empty tables, renames (@rename_from)\n" +
			"keep the data, drops remove the type or property from main (older commits keep it,\n" +
			"for time travel, until cleanup). A plan with a refused step, a graph with branches\n" +
			"other than main, and a running apply are refused and nothing is written. Dropping\n" +
			"a type or property that holds data needs --allow-data-loss. A crash at any point\n" +
			"leaves the old schema and data or the new ones. Holds the cluster lock throughout.",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) (err error) {
			desired, err := readSchema(file)
			if err != nil {
				return err
			}
			g, done, err := t.openWrite(c.Context(), "schema apply")
			if err != nil {
				return err
			}
			defer done(&err)
			// The cluster lock is held, so a schema-apply lock found now
			// is an interrupted apply's.
			res, err := schema.Apply(c.Context(), g, desired.Source, schema.ApplyOptions{
				PlanOptions: schema.PlanOptions{AllowDataLoss: allowLoss}, Actor: t.actor, BreakStaleLock: true,
			})
			if err != nil {
				return err
			}
			if t.json {
				return writeJSON(a.stdout, res)
			}
			if res.NoOp {
				fmt.Fprintln(a.stdout, "the schema is already the accepted one; nothing was written")
				return nil
			}
			fmt.Fprintf(a.stdout, "applied schema %s in commit %s (manifest version %d)\n", short(res.Plan.To), res.Commit.ID, res.Commit.ManifestVersion)
			return describeSteps(a.stdout, res.Plan)
		},
	}
	c.Flags().StringVar(&file, "schema", "", "the desired .pg schema")
	c.Flags().BoolVar(&allowLoss, "allow-data-loss", false, "allow dropping types and properties that hold data (older commits keep it until cleanup)")
	t.addStore(c)
	t.addJSON(c)
	t.addActor(c)
	t.addWait(c)
	return c
}

func ensureIndicesCmd(a *app) *cobra.Command {
	var t graphTarget
	var branch string
	c := &cobra.Command{
		Use:   "ensure-indices [--branch B] --store URL",
		Short: "Build the key indexes a branch's tables are missing, as one commit",
		Long: "Build, for every table of the branch that has rows, the key index (on id) when it is\n" +
			"missing or does not cover every fragment: one index per table, one commit. Lists\n" +
			"the declared indexes it does not build, and why. A branch whose key indexes are\n" +
			"complete is a no-op: nothing is written. Holds the cluster lock throughout.",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) (err error) {
			g, done, err := t.openWrite(c.Context(), "ensure-indices")
			if err != nil {
				return err
			}
			defer done(&err)
			res, err := schema.EnsureIndices(c.Context(), g, schema.IndexOptions{Branch: branch, Actor: t.actor})
			if err != nil {
				return err
			}
			if t.json {
				return writeJSON(a.stdout, res)
			}
			if res.NoOp {
				fmt.Fprintf(a.stdout, "every index of branch %s is complete; nothing was written\n", branch)
			} else {
				fmt.Fprintf(a.stdout, "built %d index(es) on branch %s in commit %s (manifest version %d)\n", len(res.Built), branch, res.Commit.ID, res.Commit.ManifestVersion)
				tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "TABLE\tCOLUMN\tKIND\tVERSION\tFRAGMENTS")
				for _, b := range res.Built {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%d -> %d\t%d\n", b.Table, b.Column, b.Kind, b.FromVersion, b.ToVersion, b.Fragments)
				}
				if err := tw.Flush(); err != nil {
					return err
				}
			}
			for _, p := range res.Pending {
				fmt.Fprintf(a.stdout, "not built: %s (%s): %s\n", p.Table, p.Columns, p.Reason)
			}
			return nil
		},
	}
	c.Flags().StringVar(&branch, "branch", "main", "branch whose tables to index")
	t.addStore(c)
	t.addJSON(c)
	t.addActor(c)
	t.addWait(c)
	return c
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// describePlan prints a plan for people: a header, one line per step.
func describePlan(w io.Writer, p *schema.Plan) error {
	if p.NoOp {
		_, err := fmt.Fprintf(w, "the schema is already main's accepted one (%s); nothing to apply\n", short(p.From))
		return err
	}
	verdict := "supported: 'omnigraph schema apply' would run it as one commit"
	if !p.Supported {
		verdict = "refused: 'omnigraph schema apply' would change nothing until the refused steps are resolved"
	}
	fmt.Fprintf(w, "plan from schema %s to %s on main (manifest version %d): %s\n", short(p.From), short(p.To), p.Version, verdict)
	return describeSteps(w, p)
}

func describeSteps(w io.Writer, p *schema.Plan) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "EFFECT\tSTEP\tWHAT")
	for _, s := range p.Steps {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Effect, s.Kind, stepText(s))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(p.Rewrites) > 0 {
		_, err := fmt.Fprintf(w, "tables rewritten: %s\n", strings.Join(p.Rewrites, ", "))
		return err
	}
	return nil
}

func stepText(s schema.Step) string {
	switch {
	case s.Effect == schema.EffectRefused:
		return s.Entity + ": " + s.Message()
	case s.From != "":
		if s.TypeName != "" {
			return fmt.Sprintf("%s %s.%s -> %s", s.TypeKind, s.TypeName, s.From, s.To)
		}
		return fmt.Sprintf("%s %s -> %s", s.TypeKind, s.From, s.To)
	case s.Constraint != "":
		return fmt.Sprintf("%s %s %s", s.TypeKind, s.TypeName, s.Constraint)
	case s.PropertyName != "":
		out := fmt.Sprintf("%s %s.%s", s.TypeKind, s.TypeName, s.PropertyName)
		if s.PropertyType != "" {
			out += ": " + s.PropertyType
		}
		if len(s.AddedValues) > 0 {
			out += " + " + strings.Join(s.AddedValues, ", ")
		}
		if len(s.Annotations) > 0 {
			out += " " + strings.Join(s.Annotations, " ")
		}
		return out
	}
	out := strings.TrimSpace(s.TypeKind + " " + s.Name)
	if len(s.Annotations) > 0 {
		out += " " + strings.Join(s.Annotations, " ")
	}
	if s.Rows > 0 {
		out += fmt.Sprintf(" (%d rows)", s.Rows)
	}
	return out
}
