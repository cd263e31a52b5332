package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/lang/gq"
	"github.com/omnigraph-go/omnigraph/lang/pg"
	"github.com/omnigraph-go/omnigraph/server"
)

// Stored queries: `serve --queries PATH` (or "queries" per graph in
// --config) registers them; `queries validate` and `queries list` check
// and show them through the server's own verdict (server.CompileQueries).

func init() {
	register(func(a *app) *cobra.Command {
		c := &cobra.Command{
			Use:   "queries",
			Short: "Check and list stored queries (the named .gq queries a server runs by name and offers as MCP tools)",
			Long: "A server's stored queries come from .gq files: serve --queries PATH (a file or a\n" +
				"directory of *.gq files), or \"queries\" per graph in serve --config. validate\n" +
				"checks them as serve does before it starts; list shows the catalog (name, tool,\n" +
				"parameters), from the files or from a running server.",
		}
		c.AddCommand(queriesValidateCmd(a), queriesListCmd(a))
		return c
	})
}

// readQueryFiles reads the stored queries of path: one .gq file, or every
// *.gq file of a directory (not its subdirectories), by name.
func readQueryFiles(path string) ([]server.QueryFile, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, usagef("read the stored queries: %v", err)
	}
	paths := []string{path}
	if st.IsDir() {
		entries, err := os.ReadDir(path)
		if err != nil {
			return nil, usagef("read the stored queries: %v", err)
		}
		paths = nil
		for _, e := range entries {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".gq") {
				paths = append(paths, filepath.Join(path, e.Name()))
			}
		}
		if len(paths) == 0 {
			return nil, usagef("%s holds no .gq file; stored queries are .gq files of queries and mutations", path)
		}
		sort.Strings(paths)
	}
	var out []server.QueryFile
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, usagef("read the stored queries: %v", err)
		}
		out = append(out, server.QueryFile{Name: p, Source: string(b)})
	}
	return out, nil
}

// compileStored checks files against cat: the set, or an error listing
// every problem (errors first). Warnings are returned either way.
func compileStored(files []server.QueryFile, cat *pg.Catalog) (*server.StoredQueries, []server.QueryProblem, error) {
	set, problems := server.CompileQueries(files, cat)
	if set != nil {
		return set, problems, nil
	}
	var lines []string
	n := 0
	for _, p := range problems {
		if p.Severity == gq.SeverityError {
			lines = append(lines, "  "+p.String())
			n++
		}
	}
	return nil, problems, checkError{code: "queries_invalid",
		msg: fmt.Sprintf("%d problem(s) in the stored queries; fix them and start again:\n%s", n, strings.Join(lines, "\n"))}
}

// storedSource is where queries validate and list read the queries and
// their schema.
type storedSource struct {
	t          graphTarget
	queries    string
	schemaFile string
	branch     string
}

func (s *storedSource) add(c *cobra.Command) {
	c.Flags().StringVar(&s.queries, "queries", "", "the stored queries: a .gq file, or a directory of .gq files")
	c.Flags().StringVar(&s.schemaFile, "schema", "", "check against this .pg file (offline)")
	c.Flags().StringVar(&s.branch, "branch", "", "with a graph: the branch whose schema to use (default main)")
	s.t.addStore(c)
	s.t.addJSON(c)
}

// compile reads the files and the schema and compiles them.
func (s *storedSource) compile(ctx context.Context, args []string) (*server.StoredQueries, []server.QueryProblem, error) {
	if s.queries == "" {
		return nil, nil, usagef("--queries PATH is required (a .gq file or a directory of them)")
	}
	if len(args) == 1 {
		if s.t.store != "" {
			return nil, nil, usagef("give the graph once: --store URL or the URL as the argument")
		}
		s.t.store = args[0]
	}
	if (s.schemaFile == "") == (s.t.store == "") {
		return nil, nil, usagef("check against one schema: --schema FILE.pg (offline) or a graph (--store URL)")
	}
	if s.schemaFile != "" && s.branch != "" {
		return nil, nil, usagef("--branch reads a graph's schema; it does not go with --schema")
	}
	files, err := readQueryFiles(s.queries)
	if err != nil {
		return nil, nil, err
	}
	var cat *pg.Catalog
	if s.schemaFile != "" {
		if cat, err = readSchema(s.schemaFile); err != nil {
			return nil, nil, err
		}
	} else {
		snap, done, err := s.t.openSnapshot(ctx, s.branch)
		if err != nil {
			return nil, nil, err
		}
		defer done()
		if cat, err = snap.Catalog(ctx); err != nil {
			return nil, nil, err
		}
	}
	return compileStored(files, cat)
}

func queriesValidateCmd(a *app) *cobra.Command {
	var s storedSource
	c := &cobra.Command{
		Use:   "validate --queries PATH (--schema FILE.pg | --store URL | URL) [--branch B] [--json]",
		Short: "Check stored queries as serve does before it starts: each checks against the schema, no name twice, every name a tool name",
		Long: "Every query and mutation must parse and type-check (the codes of 'omnigraph lint'),\n" +
			"no name may be declared twice (in one file or across the files), and a name must\n" +
			"be an MCP tool name that no built-in tool has (SQ002). Warnings (L201, L202, a\n" +
			"Vector parameter an agent must fill: SQ003) do not fail. Exits 1 on an error.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			set, problems, err := s.compile(c.Context(), args)
			if err != nil && problems == nil {
				return err
			}
			if s.t.json {
				if werr := writeJSON(a.stdout, map[string]any{"valid": set != nil, "queries": set.Len(), "problems": nonNilProblems(problems)}); werr != nil {
					return werr
				}
			} else {
				for _, p := range problems {
					fmt.Fprintln(a.stdout, p.String())
				}
				if set != nil {
					fmt.Fprintf(a.stdout, "%d stored queries: ok\n", set.Len())
				}
			}
			return err
		},
	}
	s.add(c)
	return c
}

func nonNilProblems(ps []server.QueryProblem) []server.QueryProblem {
	if ps == nil {
		return []server.QueryProblem{}
	}
	return ps
}

func queriesListCmd(a *app) *cobra.Command {
	var s storedSource
	c := &cobra.Command{
		Use:   "list (--queries PATH (--schema FILE.pg | --store URL | URL) | --server URL [--graph ID]) [--json]",
		Short: "Show the stored-query catalog: name, MCP tool, kind, parameters and description",
		Long: "From the files (checked as validate does), or from a running server (GET\n" +
			"queries: the stored queries your token may invoke).",
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			sg, err := s.t.serverGraph(c)
			if err != nil {
				return err
			}
			var list []api.StoredQuery
			if sg != nil {
				for _, f := range []string{"queries", "schema", "branch"} {
					if c.Flags().Changed(f) {
						return usagef("--%s reads files; with --server the catalog is the server's", f)
					}
				}
				cat, err := sg.Queries(c.Context())
				if err != nil {
					return s.t.remoteErr(err)
				}
				list = cat.Queries
			} else {
				set, _, err := s.compile(c.Context(), args)
				if err != nil {
					return err
				}
				for _, q := range set.List() {
					list = append(list, q.StoredQuery)
				}
			}
			if list == nil {
				list = []api.StoredQuery{}
			}
			if s.t.json {
				return writeJSON(a.stdout, api.QueryCatalog{Queries: list})
			}
			for _, q := range list {
				kind := "query"
				if q.Mutation {
					kind = "mutation"
				}
				var ps []string
				for _, p := range q.Params {
					ps = append(ps, "$"+p.Name+": "+p.Type)
				}
				fmt.Fprintf(a.stdout, "%s %s(%s)", kind, q.Name, strings.Join(ps, ", "))
				if q.Description != "" {
					fmt.Fprintf(a.stdout, "  %s", q.Description)
				}
				fmt.Fprintln(a.stdout)
			}
			fmt.Fprintf(a.stdout, "%d stored queries\n", len(list))
			return nil
		},
	}
	s.add(c)
	s.t.addServer(c)
	return c
}
