package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/omnigraph-go/omnigraph/lang/gq"
	"github.com/omnigraph-go/omnigraph/lang/pg"
)

// lintOutput is `lint --json`: the report plus where the schema came from.
type lintOutput struct {
	Schema    lintSchemaSource `json:"schema_source"`
	QueryPath string           `json:"query_path"`
	*gq.LintReport
}

type lintSchemaSource struct {
	Kind   string `json:"kind"` // "file" or "graph"
	Path   string `json:"path,omitempty"`
	Branch string `json:"branch,omitempty"`
}

func init() {
	register(func(a *app) *cobra.Command {
		var t graphTarget
		var file, schemaFile, branch string
		c := &cobra.Command{
			Use:   "lint --query FILE.gq (--schema FILE.pg | --store URL | URL | --server URL) [--branch B] [--json]",
			Short: "Check every query of a .gq file against a schema, offline or against a graph",
			Long: "Parse and type-check every query and mutation of a .gq file, against a .pg file\n" +
				"(--schema, offline: no store is touched) or the accepted schema of a graph's\n" +
				"branch (--store URL or the URL as the argument, or a served graph's with --server\n" +
				"URL; --branch, default main).\n" +
				"Findings carry the original system's codes where it has one: Q000 (the file does\n" +
				"not parse), T1..T24 (type-check errors), L201 (a nullable property that the file's\n" +
				"update queries never set; a warning), L202 (a mutation without parameters; a\n" +
				"warning). Exits 1 only when there is an error; warnings exit 0.",
			Args: cobra.MaximumNArgs(1),
			RunE: func(c *cobra.Command, args []string) error {
				if file == "" {
					return usagef("--query FILE.gq is required")
				}
				if len(args) == 1 {
					if t.store != "" {
						return usagef("give the graph once: --store URL or the URL as the argument")
					}
					t.store = args[0]
				}
				if n := btoi(schemaFile != "") + btoi(t.store != "") + btoi(t.server != ""); n != 1 {
					return usagef("lint against one schema: --schema FILE.pg (offline), a graph (--store URL) or a served graph (--server URL)")
				}
				if schemaFile != "" && branch != "" {
					return usagef("--branch reads a graph's schema; it does not go with --schema")
				}
				src, err := os.ReadFile(file)
				if err != nil {
					return usagef("read the query file: %v", err)
				}
				var cat *pg.Catalog
				source := lintSchemaSource{Kind: "file", Path: schemaFile}
				if schemaFile != "" {
					if cat, err = readSchema(schemaFile); err != nil {
						return err
					}
				} else {
					// The graph's accepted schema, compiled as the engine
					// compiles it, read here or asked of the server.
					sch, err := t.schemaOf(c, branch)
					if err != nil {
						return err
					}
					if cat, err = pg.CompileAccepted(sch.SchemaSource); err != nil {
						return fmt.Errorf("the graph's accepted schema: %w", err)
					}
					source = lintSchemaSource{Kind: "graph", Branch: sch.Branch}
				}
				r := gq.Lint(string(src), cat)
				if t.json {
					if err := writeJSON(a.stdout, lintOutput{Schema: source, QueryPath: file, LintReport: r}); err != nil {
						return err
					}
				} else {
					writeLintText(a, file, r)
				}
				if r.Errors > 0 {
					return exitCodeError{code: exitError, err: checkError{code: "lint_failed",
						msg: fmt.Sprintf("lint found %d error(s) in %s", r.Errors, file)}}
				}
				return nil
			},
		}
		c.Flags().StringVar(&file, "query", "", "the .gq file to lint")
		c.Flags().StringVar(&schemaFile, "schema", "", "lint offline against this .pg file")
		c.Flags().StringVar(&branch, "branch", "", "with a graph: the branch whose schema to use (default main)")
		t.addStore(c)
		t.addServer(c)
		t.addJSON(c)
		return c
	})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// writeLintText prints one line per finding (`file:line:col: severity
// CODE: message`), then a summary line.
func writeLintText(a *app, file string, r *gq.LintReport) {
	for _, f := range r.Findings {
		where := file
		if f.Line > 0 {
			where = fmt.Sprintf("%s:%d:%d", file, f.Line, f.Column)
		}
		fmt.Fprintf(a.stdout, "%s: %s %s: %s\n", where, f.Severity, f.Code, strings.TrimSpace(lintMessage(f)))
	}
	fmt.Fprintf(a.stdout, "%d queries, %d error(s), %d warning(s): %s\n", r.QueriesProcessed, r.Errors, r.Warnings, r.Status)
}

// lintMessage drops the code and position a check error's text already
// carries (`GQ016 in query "q" at 1:2: ...`), since the line says them.
func lintMessage(f gq.LintFinding) string {
	m := f.Message
	if f.GQCode != "" && strings.HasPrefix(m, f.GQCode) {
		if i := strings.Index(m, ": "); i >= 0 {
			prefix := m[:i]
			m = m[i+2:]
			if j := strings.Index(prefix, " in query "); j >= 0 {
				q := prefix[j+len(" in query "):]
				if k := strings.Index(q, " at "); k >= 0 {
					q = q[:k]
				}
				m = "in query " + q + ": " + m
			}
		}
	}
	return m
}
