package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/clusterlock"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/lang/pg"
)

// graphTarget holds the flags shared by the graph commands: where the graph
// is, whether to print JSON, and who writes.
type graphTarget struct {
	store string
	json  bool
	actor string
	wait  time.Duration // --wait of the commands that take the cluster lock
	// server, token and graphID are --server mode (remote.go).
	server, token, graphID string
	// blobBases are the --external-blob-base locations whose URIs writes
	// may store in Blob properties (graph.ExternalBlobPolicy).
	blobBases []string
}

// addExternalBlobs adds --external-blob-base to a writing command.
func (t *graphTarget) addExternalBlobs(c *cobra.Command) {
	c.Flags().StringArrayVar(&t.blobBases, "external-blob-base", nil, "allow Blob values that are URIs under this location (s3://, gs://, az://, https://; repeatable); without it only \"base64:\" bytes are accepted")
}

// blobPolicy is the external blob policy of --external-blob-base.
func (t *graphTarget) blobPolicy() (graph.ExternalBlobPolicy, error) {
	p, err := graph.NewExternalBlobPolicy(t.blobBases)
	if err != nil {
		return p, usageError{msg: strings.TrimPrefix(err.Error(), graph.ErrInvalidInput.Error()+": ")}
	}
	return p, nil
}

func (t *graphTarget) addStore(c *cobra.Command) {
	c.Flags().StringVar(&t.store, "store", "", "graph location: a directory, file://, s3://, gs:// or az:// URL")
}

func (t *graphTarget) addJSON(c *cobra.Command) {
	c.Flags().BoolVar(&t.json, "json", false, "print JSON instead of text")
}

func (t *graphTarget) addActor(c *cobra.Command) {
	c.Flags().StringVar(&t.actor, "as", "", "actor id recorded on the commit (default "+graph.DefaultActor+")")
}

// processLocalStores lets graph commands use mem:// stores, which live only
// inside one process: the in-process CLI tests run many commands in one
// process and set it. The binary leaves it off, so `init mem://x` is refused
// instead of reporting a graph that vanishes when the command exits.
var processLocalStores = false

// errProcessLocalStore refuses mem:// locations in the CLI.
var errProcessLocalStore = errors.New("mem:// stores live only inside one process, so a graph there would vanish when this command exits; give a directory path, file://, s3://, gs:// or az:// URL (mem:// is for the Go API and tests)")

// openStore opens the storage location named by --store. Opening creates
// nothing: a command that only reads, or that fails, leaves no directory.
func (t *graphTarget) openStore(ctx context.Context) (backend.StorageAdapter, error) {
	if t.store == "" {
		return nil, usagef("no graph location: pass --store URL (a directory, file://, s3://, gs:// or az:// URL)")
	}
	if isProcessLocal(t.store) && !processLocalStores {
		return nil, errProcessLocalStore
	}
	s, err := backend.Open(ctx, t.store)
	if err != nil {
		return nil, err
	}
	return wrapStore(ctx, s), nil
}

// isProcessLocal reports whether url names a store that lives only inside
// this process (mem://, gocloud+mem://).
func isProcessLocal(url string) bool {
	return strings.HasPrefix(url, "mem://") || strings.HasPrefix(url, "gocloud+mem://")
}

// openGraph opens the graph at --store; read-only unless write is set.
func (t *graphTarget) openGraph(ctx context.Context, write bool) (*graph.Graph, func(), error) {
	store, err := t.openStore(ctx)
	if err != nil {
		return nil, nil, err
	}
	g, err := graph.Open(ctx, store, graph.OpenOptions{ReadOnly: !write, Actor: t.actor})
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	return g, func() { g.Close(); store.Close() }, nil
}

// openSnapshot opens the graph at --store read-only and pins the head of
// branch ("" is main). done closes the graph.
func (t *graphTarget) openSnapshot(ctx context.Context, branch string) (*graph.Snapshot, func(), error) {
	g, done, err := t.openGraph(ctx, false)
	if err != nil {
		return nil, nil, err
	}
	snap, err := g.Snapshot(ctx, branch)
	if err != nil {
		done()
		return nil, nil, err
	}
	return snap, done, nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func init() {
	register(func(a *app) *cobra.Command {
		var t graphTarget
		var schemaFile string
		var force bool
		c := &cobra.Command{
			Use:   "init --schema FILE.pg URL",
			Short: "Create a graph from a .pg schema",
			Long: "Create a graph at URL (or --store URL): one table per node and edge type,\n" +
				"the accepted schema, and the first commit on main. An existing graph is refused.\n" +
				"First it probes the store with the rules of 'omnigraph storage check' (smaller\n" +
				"races, the same verdict) and refuses a store that check calls read-only or\n" +
				"unusable, changing nothing; a warning it finds is printed and init goes on.\n" +
				"Leftovers of an interrupted init of the same schema are reused; other leftovers\n" +
				"are refused unless --force is given.",
			Args: cobra.MaximumNArgs(1),
			RunE: func(c *cobra.Command, args []string) error {
				if len(args) == 1 {
					if t.store != "" && t.store != args[0] {
						return usagef("give the graph location once: either URL or --store URL")
					}
					t.store = args[0]
				}
				if schemaFile == "" {
					return usagef("--schema FILE.pg is required")
				}
				src, err := os.ReadFile(schemaFile)
				if err != nil {
					return fmt.Errorf("read the schema: %w", err)
				}
				// Compile here first so a schema error names the file given.
				if _, err := pg.CompileFile(schemaFile, string(src)); err != nil {
					return fmt.Errorf("%w: %w", graph.ErrInvalidSchema, err)
				}
				store, err := t.openStore(c.Context())
				if err != nil {
					return err
				}
				defer store.Close()
				if err := checkInitStore(c.Context(), a, t.store, store); err != nil {
					return err
				}
				g, err := graph.Init(c.Context(), store, string(src), graph.InitOptions{Actor: t.actor, ReclaimLeftovers: force})
				if err != nil {
					return err
				}
				snap, err := g.Snapshot(c.Context(), "main")
				if err != nil {
					return err
				}
				cat, err := snap.Catalog(c.Context())
				if err != nil {
					return err
				}
				out := struct {
					Commit         string   `json:"commit"`
					SchemaIdentity string   `json:"schema_identity"`
					Tables         []string `json:"tables"`
				}{Commit: snap.CommitID(), SchemaIdentity: snap.SchemaIdentity()}
				for _, p := range snap.Tables() {
					out.Tables = append(out.Tables, p.Key)
				}
				if t.json {
					return writeJSON(a.stdout, out)
				}
				fmt.Fprintf(a.stdout, "created graph: %d node types, %d edge types, commit %s\n", len(cat.Nodes), len(cat.Edges), out.Commit)
				return nil
			},
		}
		c.Flags().StringVar(&schemaFile, "schema", "", "the .pg schema file (required)")
		c.Flags().BoolVar(&force, "force", false, "delete the tables and schema files an interrupted init left (never an existing graph); only when no other init of this location is running")
		t.addStore(c)
		t.addJSON(c)
		t.addActor(c)
		return c
	})
}

// checkInitStore refuses, before init writes anything of the graph, a
// location init would refuse anyway (an existing graph, foreign objects:
// graph.CheckInitLocation, without probing it) and a store on which a graph
// is not safe (storeVerdict, the verdict storage check prints). The
// survey's own keys are gone when it returns, and so is a local directory
// it had to create, so a refused init changes nothing. Warnings go to
// stderr.
func checkInitStore(ctx context.Context, a *app, url string, store backend.StorageAdapter) error {
	if err := graph.CheckInitLocation(ctx, store); err != nil {
		return err
	}
	// The survey's requests fail on purpose (lost races, refused stale
	// swaps): it runs on the store without the CLI's failure log.
	raw, err := backend.Open(ctx, url)
	if err != nil {
		return err
	}
	defer raw.Close()
	sv, err := storeVerdict(ctx, url, raw, initScope)
	if err != nil {
		return err
	}
	if !sv.Verdict.Usable {
		return checkError{code: "storage_check_failed", msg: fmt.Sprintf(
			"init refused, nothing was written: a graph is not safe on this store: %s; 'omnigraph storage check %s' shows each rule",
			sv.Verdict.Text, clusterlock.ShellQuote(backend.Redact(url)))}
	}
	for _, w := range sv.Verdict.Warnings {
		fmt.Fprintln(a.stderr, "warning: "+w)
	}
	return nil
}
