// Package graph is the engine core: a typed property graph stored as one
// table per node and edge type, tied together by the __manifest control
// dataset (package manifest), with graph branches, a commit graph,
// time travel, and the shared write pipeline every writer goes through
// (write.go: BeginWrite, Stage, Commit; recovery.go: the sweep at open,
// heal and Repair).
//
// The operations are packages above the core, each a client of the
// pipeline or of a Snapshot: graph/change (the change set a writer stages
// and its constraint evaluator), graph/load (NDJSON load), graph/mutate
// (mutations) and graph/query (reads). docs/dev/README.md maps the tree.
//
// A *Graph is a handle on one graph in one store. It caches the last head it
// read of each branch, so a read or a write on a warm handle pays one List to
// learn the branch did not move, and no GET. Handles of one graph in one
// process share the write gates (gates.go). Packages above keep per-handle
// state as an Attachment of the handle.
//
// The on-disk layout and the request budget are described in
// docs/dev/graph.md.
package graph

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/oklog/ulid/v2"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/meter"
	"github.com/omnigraph-go/omnigraph/lang/pg"
	"github.com/omnigraph-go/omnigraph/manifest"
	"github.com/omnigraph-go/omnigraph/recovery"
	"github.com/omnigraph-go/omnigraph/table"
)

// DefaultActor is recorded on commits when no actor is given.
const DefaultActor = "anonymous"

// RecoveryActor is the reserved actor of recovery commits.
const RecoveryActor = "omnigraph:recovery"

// Graph is an open graph. It is safe for concurrent use.
type Graph struct {
	// openRecovered is what the open-time recovery sweep resolved (nil: it
	// found nothing): OpenRecovered.
	openRecovered []recovery.Record
	store         backend.StorageAdapter
	man           *manifest.Store
	readOnly      bool
	// exclusive: the caller holds the root's writer lock (OpenOptions).
	exclusive bool
	actor     string
	// blobPolicy admits new external Blob references (OpenOptions).
	blobPolicy ExternalBlobPolicy
	current    string // the branch the handle was opened on
	graphID    string
	proc       *Process        // the process scope (nil: the default one)
	gates      *gates          // the root object's, shared by the process's handles
	intents    *intentRegistry // the root object's
	queues     *writeQueues    // the root object's: the branch write queues (queue.go)

	mu     sync.Mutex
	heads  map[string]*cachedHead
	cats   map[string]*pg.Catalog
	tables map[string]*table.Dataset // by tableCacheKey; versions are immutable
	// objects caches decoded fragments, deletion vectors and key index
	// pages for every table version the handle opens: those files are
	// immutable, so a new version re-reads only what it added.
	objects *table.Cache

	attachMu sync.Mutex
	attached map[any]any // per-handle state of the packages above (Attachment)
}

// Attachment returns the value the handle holds under key, creating it with
// init on first use (once per handle, even under concurrent calls). The
// packages above the core keep per-handle state here — graph/query's read
// cache — so it lives and goes away with the handle and is never a package
// global. key should be a value of an unexported type of the caller's
// package, so packages cannot collide.
func (g *Graph) Attachment(key any, init func() any) any {
	g.attachMu.Lock()
	defer g.attachMu.Unlock()
	if v, ok := g.attached[key]; ok {
		return v
	}
	v := init()
	if g.attached == nil {
		g.attached = map[any]any{}
	}
	g.attached[key] = v
	return v
}

// maxCachedTables bounds the table-version cache of a handle.
const maxCachedTables = 1024

func tableCacheKey(path, branch string, v uint64) string {
	return path + "\x00" + branch + "\x00" + strconv.FormatUint(v, 10)
}

// openTable opens a table version, from the handle's cache when it holds
// it (a version never changes, so the cache is never stale): one GET at
// most.
func (g *Graph) openTable(ctx context.Context, path, branch string, v uint64) (*table.Dataset, error) {
	k := tableCacheKey(path, branch, v)
	g.mu.Lock()
	ds := g.tables[k]
	g.mu.Unlock()
	if ds != nil {
		return ds, nil
	}
	ds, err := table.OpenVersion(ctx, g.store, path, branch, v)
	if err != nil {
		return nil, err
	}
	ds = ds.WithCache(g.objectCache())
	g.cacheTable(ds)
	return ds, nil
}

// objectCache is the handle's cache of immutable table files, shared by
// every table version it opens (budget: table.DefaultCacheBytes).
func (g *Graph) objectCache() *table.Cache {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.objects == nil {
		g.objects = table.NewCache(0)
	}
	return g.objects
}

// ObjectCache is the handle's cache of immutable table files (decoded
// fragments, deletion vectors, key index pages); SetLimit bounds it.
func (g *Graph) ObjectCache() *table.Cache { return g.objectCache() }

func (g *Graph) cacheTable(ds *table.Dataset) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.tables == nil || len(g.tables) >= maxCachedTables {
		g.tables = map[string]*table.Dataset{}
	}
	g.tables[tableCacheKey(ds.Path(), ds.Branch(), ds.Version())] = ds
}

// cachedHead is the last head read of one branch. unconsumed marks a head
// read by Open that the first Snapshot of that branch may serve without a
// new probe (Open's read is that snapshot's read point). own marks a head
// this handle published itself: an exclusive writer serves it without a
// probe until something says the branch moved.
type cachedHead struct {
	entry      *manifest.Entry
	etag       string
	unconsumed bool
	own        bool
}

// InitOptions tune Init.
type InitOptions struct {
	// Actor is recorded on the initial commit (default DefaultActor).
	Actor string
	// ReclaimLeftovers deletes the tables and schema sources an interrupted
	// init left (never an existing graph) instead of refusing leftovers
	// that cannot be adopted. Only for when no other init of the location
	// is running: the CLI's init --force.
	ReclaimLeftovers bool
}

// OpenOptions tune Open.
type OpenOptions struct {
	// ReadOnly handles never write to the store (no recovery, no commits).
	ReadOnly bool
	// Actor is recorded on the commits this handle makes (default
	// DefaultActor).
	Actor string
	// Branch is the handle's current branch (default main): Open reads its
	// head and checks its storage stamp, and it cannot be deleted through
	// this handle.
	Branch string
	// Process is the process scope whose gates and recovery intents the
	// handle shares (default: this OS process). Tests pass NewProcess() to
	// simulate a restarted or an independent writer process.
	Process *Process
	// ExclusiveWriter says the caller holds the root's writer lock for the
	// handle's life (the CLI's cluster lock, the server's lease) and this
	// is the only handle writing through it, so no one else publishes: a
	// write then starts from the head this handle last published without a
	// freshness probe (one request and one round trip fewer). Safety does
	// not rest on it: the pre-arm check still re-reads the head before any
	// effect, so a lock lost to another writer costs a retry (or a
	// ReadSetChanged for strict writes), never a wrong commit.
	ExclusiveWriter bool
	// AlwaysProbe makes every snapshot of a branch probe for its newest
	// head, the first one after Open too (which otherwise reuses Open's
	// read). For long-lived handles, such as a read replica's: by its
	// first request Open's read may be old.
	AlwaysProbe bool
	// ExternalBlobs is the policy for new external Blob references the
	// handle's writes may store (the zero policy allows none).
	ExternalBlobs ExternalBlobPolicy
}

// Store returns the storage the graph lives in.
func (g *Graph) Store() backend.StorageAdapter { return g.store }

// Manifest returns the graph's manifest store (for the recovery layer).
func (g *Graph) Manifest() *manifest.Store { return g.man }

// ExternalBlobs is the handle's policy for new external Blob references.
func (g *Graph) ExternalBlobs() ExternalBlobPolicy { return g.blobPolicy }

// ReadOnly reports whether the handle refuses writes.
func (g *Graph) ReadOnly() bool { return g.readOnly }

// Actor is the actor recorded on this handle's commits.
func (g *Graph) Actor() string { return g.actor }

// CurrentBranch is the branch the handle was opened on.
func (g *Graph) CurrentBranch() string { return g.current }

// ID is the graph's identifier, minted by Init.
func (g *Graph) ID() string { return g.graphID }

// Close releases the handle. It does not close the store.
func (g *Graph) Close() error {
	if !g.readOnly {
		g.flushRetired(context.Background()) // deferred Phase D deletes
	}
	return nil
}

func actorOr(a string) string {
	if strings.TrimSpace(a) == "" {
		return DefaultActor
	}
	return a
}

// newID mints a ULID string for commits, branch ids and operation ids.
func newID() string { return ulid.Make().String() }

func nowMicros() int64 { return time.Now().UnixMicro() }

// Open opens the graph in store. It reads the head of opts.Branch (one List
// and one GET) and refuses a graph whose storage stamp this binary does not
// read. A read-only open makes no write at all.
func Open(ctx context.Context, store backend.StorageAdapter, opts OpenOptions) (*Graph, error) {
	branch := opts.Branch
	if branch == "" {
		branch = manifest.MainBranch
	}
	if err := manifest.ValidateBranchName(branch); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidBranch, err)
	}
	if !opts.ReadOnly {
		if err := requireFencing(store, "writing to it"); err != nil {
			return nil, err
		}
	}
	man := newManifest(store)
	// A read-write open lists __recovery/ beside the head read.
	type listed struct {
		keys []string
		err  error
	}
	var pending chan listed
	if !opts.ReadOnly {
		pending = make(chan listed, 1)
		go func() { k, err := listPending(ctx, store); pending <- listed{k, err} }()
	}
	r, err := man.Probe(ctx, branch)
	if err != nil {
		return nil, err
	}
	if !r.Live() {
		if branch == manifest.MainBranch {
			return nil, ErrNoGraph
		}
		return nil, fmt.Errorf("%w: %q; list branches with 'omnigraph branch list'", manifest.ErrBranchNotFound, branch)
	}
	head, err := man.Read(ctx, r)
	if err != nil {
		return nil, fmt.Errorf("open graph: %w", err)
	}
	g := &Graph{
		store:      meter.Wrap(store), // a query's storage-bytes budget (budget.go)
		man:        man,
		readOnly:   opts.ReadOnly,
		exclusive:  opts.ExclusiveWriter && !opts.ReadOnly,
		actor:      actorOr(opts.Actor),
		blobPolicy: opts.ExternalBlobs,
		current:    branch,
		graphID:    head.GraphID,
		proc:       opts.Process,
		heads:      map[string]*cachedHead{},
		cats:       map[string]*pg.Catalog{},
	}
	g.attachRoot()
	g.heads[branch] = &cachedHead{entry: head, etag: r.ETag, unconsumed: !opts.AlwaysProbe}
	if pending != nil {
		l := <-pending
		if err := g.openRecovery(ctx, l.keys, l.err); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// head returns the current head of branch: a freshness probe (one List),
// plus one GET only when the branch moved since this handle last read it.
func (g *Graph) head(ctx context.Context, branch string) (*manifest.Entry, error) {
	e, _, err := g.headOwn(ctx, branch)
	return e, err
}

// headOwn is head, and reports whether the head is the one this exclusive
// writer handle last published, taken without a probe (OpenOptions.
// ExclusiveWriter).
func (g *Graph) headOwn(ctx context.Context, branch string) (*manifest.Entry, bool, error) {
	g.mu.Lock()
	c := g.heads[branch]
	if c != nil && (c.unconsumed || g.exclusive && c.own) {
		own := g.exclusive && c.own && !c.unconsumed
		c.unconsumed = false
		g.mu.Unlock()
		return c.entry, own, nil
	}
	g.mu.Unlock()
	r, err := g.man.Probe(ctx, branch)
	if err != nil {
		return nil, false, err
	}
	if !r.Live() {
		g.forget(branch)
		return nil, false, fmt.Errorf("%w: %q", manifest.ErrBranchNotFound, branch)
	}
	if c != nil && c.entry.Key() == r.Key { // version keys are write-once
		return c.entry, false, nil
	}
	e, err := g.man.Read(ctx, r)
	if err != nil {
		return nil, false, err
	}
	g.remember(e, r.ETag)
	return e, false, nil
}

func (g *Graph) remember(e *manifest.Entry, etag string) { g.rememberHead(e, etag, false) }

// publishedSince reports whether this handle has seen branch base.Branch
// move past base since (another write of this process published, the
// server's compaction for one): a write that took base as its own head
// must then probe instead of trusting it. No I/O.
func (g *Graph) publishedSince(base *manifest.Entry) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.heads[base.Branch]
	return c == nil || c.entry.Incarnation != base.Incarnation || c.entry.Version != base.Version
}

// rememberPublished caches a head this handle just published.
func (g *Graph) rememberPublished(e *manifest.Entry) { g.rememberHead(e, "", true) }

func (g *Graph) rememberHead(e *manifest.Entry, etag string, own bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if c := g.heads[e.Branch]; c != nil && c.entry.Incarnation == e.Incarnation && c.entry.Version > e.Version {
		return // never move the cache backwards
	}
	g.heads[e.Branch] = &cachedHead{entry: e, etag: etag, own: own}
}

func (g *Graph) forget(branch string) {
	g.mu.Lock()
	delete(g.heads, branch)
	g.mu.Unlock()
}

// catalog returns the accepted schema with this identity, cached: schemas
// are content-addressed and immutable, so a cached one is never stale.
func (g *Graph) catalog(ctx context.Context, identity string) (*pg.Catalog, error) {
	g.mu.Lock()
	c := g.cats[identity]
	g.mu.Unlock()
	if c != nil {
		return c, nil
	}
	src, _, err := g.store.Get(ctx, manifest.SchemaKey(identity))
	if err != nil {
		return nil, fmt.Errorf("read accepted schema %s: %w", identity, err)
	}
	c, err = pg.CompileAccepted(string(src))
	if err != nil {
		return nil, fmt.Errorf("%w: accepted schema %s no longer compiles: %v", manifest.ErrCorrupt, identity, err)
	}
	if c.Identity != identity {
		return nil, fmt.Errorf("%w: accepted schema %s hashes to %s", manifest.ErrCorrupt, identity, c.Identity)
	}
	g.mu.Lock()
	g.cats[identity] = c
	g.mu.Unlock()
	return c, nil
}

// reissuePause is the clock of the manifest store's pauses between
// re-issues of a publish whose answer was lost (nil: the wall clock). It is a
// test seam: this package's tests make it instant (export_test.go) so crash
// runs that lose a publish answer do not wait seconds each.
var reissuePause manifest.Sleeper

func newManifest(store backend.StorageAdapter) *manifest.Store {
	m := manifest.New(store)
	if reissuePause != nil {
		m.SetSleeper(reissuePause)
	}
	return m
}

// Init creates a graph in store from a .pg schema: one table per node and
// edge type, the graph root object (RootKey), the accepted schema, and the
// initial commit on main. It refuses a store that already holds a graph, a
// schema that does not compile, a location holding foreign objects, and a
// store that does not fence writers (the adapter must declare conditional
// create, and a cheap probe of the live store must see its conditions hold);
// every refusal changes nothing.
//
// Init never deletes what it did not create in this attempt: a racing init
// may be using any file it finds. The tables and schema file of an init
// that was interrupted (or is running now) are adopted when they are
// exactly what this init would write (an untouched, empty version 1 with
// the same columns); anything else is refused, and only
// InitOptions.ReclaimLeftovers deletes it. Of racing inits exactly one
// publishes; every other gets ErrGraphExists.
func Init(ctx context.Context, store backend.StorageAdapter, schemaSrc string, opts InitOptions) (*Graph, error) {
	cat, err := pg.Compile(schemaSrc)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidSchema, err)
	}
	man := newManifest(store)
	exists, err := man.Exists(ctx)
	if err != nil {
		return nil, fmt.Errorf("check for an existing graph: %w", err)
	}
	if exists {
		return nil, ErrGraphExists
	}
	if err := checkInitLocation(ctx, store); err != nil {
		return nil, err
	}
	if err := requireFencing(store, "writers"); err != nil {
		return nil, err
	}
	probe, err := probeFencing(ctx, store)
	if err != nil {
		return nil, err
	}
	g, err := initGraph(ctx, store, man, cat, probe, opts)
	if err != nil && !errors.Is(err, ErrGraphExists) && !errors.Is(err, backend.ErrUnknown) {
		// A racing init that published first explains any conflict this
		// one met on the way.
		if exists, xerr := man.Exists(ctx); xerr == nil && exists {
			return nil, ErrGraphExists
		}
	}
	return g, err
}

// initGraph writes the graph once the location is known to be usable.
func initGraph(ctx context.Context, store backend.StorageAdapter, man *manifest.Store, cat *pg.Catalog, probe FencingProbe, opts InitOptions) (*Graph, error) {
	if opts.ReclaimLeftovers {
		// The caller vouches that no other init of this location is
		// running: earlier partial inits are garbage (nothing is reachable
		// without a manifest version).
		for _, p := range graphPrefixes {
			if err := store.DeletePrefix(ctx, p); err != nil {
				return nil, fmt.Errorf("reclaim an interrupted init: %w", err)
			}
		}
	}
	if err := writeRoot(ctx, store, probe); err != nil {
		return nil, err
	}
	if err := putSchemaSource(ctx, store, cat); err != nil {
		return nil, err
	}
	pins, err := createTables(ctx, store, cat)
	if err != nil {
		return nil, err
	}
	graphID := newID()
	actor := actorOr(opts.Actor)
	commit := &manifest.Commit{ID: newID(), Parents: []string{}, Actor: actor, TimeMicros: nowMicros()}
	e := &manifest.Entry{
		Stamp:          manifest.StampCurrent,
		Kind:           manifest.KindCommit,
		GraphID:        graphID,
		Branch:         manifest.MainBranch,
		Incarnation:    1,
		BranchID:       newID(),
		Version:        1,
		SchemaIdentity: cat.Identity,
		Tables:         pins,
		Head:           commit.ID,
		Commit:         commit,
	}
	if err := man.Publish(ctx, e); err != nil {
		if errors.Is(err, manifest.ErrHeadMoved) {
			return nil, ErrGraphExists
		}
		if errors.Is(err, backend.ErrUnknown) {
			return nil, &OutcomeUnknown{Branch: e.Branch, CommitID: commit.ID, Version: 1, Err: err}
		}
		return nil, err
	}
	g := &Graph{
		store:   meter.Wrap(store),
		man:     man,
		actor:   actor,
		current: manifest.MainBranch,
		graphID: graphID,
		heads:   map[string]*cachedHead{},
		cats:    map[string]*pg.Catalog{cat.Identity: cat},
	}
	g.attachRoot()
	g.remember(e, "")
	return g, nil
}

// putSchemaSource stores the accepted schema source with one put-if-absent;
// an existing copy (a racing or interrupted init of the same schema) is
// adopted when its bytes are the same.
func putSchemaSource(ctx context.Context, store backend.StorageAdapter, cat *pg.Catalog) error {
	key := manifest.SchemaKey(cat.Identity)
	_, err := store.PutIfAbsent(ctx, key, []byte(cat.Source))
	if err == nil {
		return nil
	}
	if !errors.Is(err, backend.ErrPrecondition) && !errors.Is(err, backend.ErrUnknown) {
		return fmt.Errorf("store the schema: %w", err)
	}
	got, _, gerr := store.Get(ctx, key)
	if gerr != nil {
		return fmt.Errorf("store the schema: %w (reading it back: %v)", err, gerr)
	}
	if !bytes.Equal(got, []byte(cat.Source)) {
		return fmt.Errorf("%w: an interrupted init left a different source for schema %s; %s", ErrNotEmpty, cat.Identity, leftoverHint)
	}
	return nil
}

// leftoverHint ends the refusals of leftovers init cannot adopt.
const leftoverHint = "if no other init of this location is running, run init again with --force to reclaim the leftovers"

// createOrAdoptTable creates the empty table at path, or adopts the one an
// interrupted or racing init of the same type left there: version 1, no
// rows, the same key column and columns. Anything else is refused; init
// never deletes a table it did not create.
func createOrAdoptTable(ctx context.Context, store backend.StorageAdapter, path string, schema *arrow.Schema) (*table.Dataset, error) {
	ds, err := table.Create(ctx, store, path, schema, idColumn)
	if err == nil || (!errors.Is(err, table.ErrExists) && !errors.Is(err, backend.ErrUnknown)) {
		return ds, err
	}
	old, oerr := table.Open(ctx, store, path, table.MainBranch)
	if oerr != nil {
		return nil, fmt.Errorf("%w (opening the existing table: %v)", err, oerr)
	}
	if old.Version() != 1 || len(old.Manifest().Fragments) != 0 || old.KeyColumn() != idColumn || !old.Schema().Equal(schema) {
		return nil, fmt.Errorf("%w: an interrupted init (or one running now) left table %s with other contents or columns; %s", ErrNotEmpty, path, leftoverHint)
	}
	return old, nil
}

// graphPrefixes are the top-level prefixes a graph writes besides
// __manifest/ (and the recovery layer's __recovery/).
var graphPrefixes = append(TableDirs(), manifest.SchemaDir)

// CheckInitLocation is Init's check of the location, for a caller that
// probes the store before Init (the CLI surveys it): ErrGraphExists, an
// error satisfying ErrNotEmpty that names a foreign object, or nil for an
// empty location or an interrupted init's leftovers. It writes nothing.
func CheckInitLocation(ctx context.Context, store backend.StorageAdapter) error {
	exists, err := newManifest(store).Exists(ctx)
	if err != nil {
		return fmt.Errorf("check for an existing graph: %w", err)
	}
	if exists {
		return ErrGraphExists
	}
	return checkInitLocation(ctx, store)
}

// checkInitLocation refuses a location holding objects that are not an
// interrupted or running init's (tables, schema sources, fencing probes):
// init never writes into someone else's data.
func checkInitLocation(ctx context.Context, store backend.StorageAdapter) error {
	opts := backend.ListOptions{}
	for {
		page, err := store.List(ctx, "", opts)
		if err != nil {
			return fmt.Errorf("check the location is empty: %w", err)
		}
		for _, o := range page.Objects {
			if strings.HasPrefix(o.Key, manifest.Dir) {
				return ErrGraphExists // a racing init published meanwhile
			}
			ours := strings.HasPrefix(o.Key, recovery.Dir) || strings.HasPrefix(o.Key, ProbeDir) || o.Key == RootKey
			for _, p := range graphPrefixes {
				ours = ours || strings.HasPrefix(o.Key, p)
			}
			if !ours {
				return fmt.Errorf("%w: it holds %q; init a graph in an empty location", ErrNotEmpty, o.Key)
			}
		}
		if !page.Truncated || len(page.Objects) == 0 {
			return nil
		}
		opts.StartAfter = page.Objects[len(page.Objects)-1].Key
	}
}

// Schema returns the accepted schema of a branch head.
func (g *Graph) Schema(ctx context.Context, branch string) (*pg.Catalog, error) {
	s, err := g.Snapshot(ctx, branch)
	if err != nil {
		return nil, err
	}
	return s.Catalog(ctx)
}
