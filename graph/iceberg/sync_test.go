package iceberg_test

import (
	"context"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"

	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	_ "github.com/apache/iceberg-go/io/gocloud/s3"
	icetable "github.com/apache/iceberg-go/table"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/local"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/cleanup"
	"github.com/omnigraph-go/omnigraph/graph/iceberg"
	"github.com/omnigraph-go/omnigraph/graph/merge"
	"github.com/omnigraph-go/omnigraph/graph/optimize"
	"github.com/omnigraph-go/omnigraph/graph/schema"
	"github.com/omnigraph-go/omnigraph/internal/testenv"
	"github.com/omnigraph-go/omnigraph/manifest"
	"github.com/omnigraph-go/omnigraph/server"
)

// rig is one graph on a store an Iceberg engine can read, and the catalog
// the test reads it through.
type rig struct {
	t     *testing.T
	store backend.StorageAdapter
	loc   string
	g     *graph.Graph
	// open opens the static metadata (a Hadoop catalog); rest, once the
	// graph exists, the server's /iceberg REST catalog. Every check reads
	// through both.
	open func() catalog.Catalog
	rest func() catalog.Catalog
	// props are the FileIO properties iceberg-go reads the store with.
	props ice.Properties
	// commits remembers graph commits (and their branch) to time-travel to.
	commits []string
}

func newLocalRig(t *testing.T) *rig {
	dir := t.TempDir()
	st, err := local.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	loc, err := iceberg.Location(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, store: st, loc: loc}
	r.open = func() catalog.Catalog { return staticCatalog(t, loc, nil) }
	return r
}

func (r *rig) init(src string) {
	g, err := graph.Init(context.Background(), r.store, src, graph.InitOptions{Actor: "tester"})
	if err != nil {
		r.t.Fatalf("init: %v", err)
	}
	r.g = g
	srv, err := server.New(server.Config{Graphs: []server.Graph{{ID: "default", G: g}}})
	if err != nil {
		r.t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	r.t.Cleanup(func() { hs.Close(); srv.Close() })
	r.rest = func() catalog.Catalog {
		opts := []rest.Option{rest.WithWarehouseLocation("default")}
		if r.props != nil {
			opts = append(opts, rest.WithAdditionalProps(r.props))
		}
		c, err := rest.NewCatalog(context.Background(), "omnigraph", hs.URL+server.IcebergPrefix, opts...)
		if err != nil {
			r.t.Fatalf("REST catalog: %v", err)
		}
		return c
	}
}

// catalogs are the two ways an engine reaches the metadata.
func (r *rig) catalogs() map[string]catalog.Catalog {
	out := map[string]catalog.Catalog{"static": r.open()}
	if r.rest != nil {
		out["REST"] = r.rest()
	}
	return out
}

func (r *rig) sync(branches ...string) *iceberg.Result {
	r.t.Helper()
	res, err := iceberg.Sync(context.Background(), r.g, iceberg.Options{Location: r.loc, Branches: branches})
	if err != nil {
		r.t.Fatalf("sync: %v", err)
	}
	return res
}

func (r *rig) remember(branch string) string {
	r.t.Helper()
	s, err := r.g.Snapshot(context.Background(), branch)
	if err != nil {
		r.t.Fatal(err)
	}
	r.commits = append(r.commits, s.CommitID())
	return s.CommitID()
}

func (r *rig) loadTable(c catalog.Catalog, key string) *icetable.Table {
	r.t.Helper()
	id, _ := iceberg.IdentOf(key)
	tbl, err := c.LoadTable(context.Background(), icetable.Identifier{id.Namespace, id.Name})
	if err != nil {
		r.t.Fatalf("load table %s: %v", id, err)
	}
	return tbl
}

// check compares every table of branch, read by iceberg-go through the
// rig's catalog, with the graph's rows row for row, and the node ids with
// an `omnigraph query`.
func (r *rig) check(step, branch string) {
	r.t.Helper()
	ctx := context.Background()
	snap, err := r.g.Snapshot(ctx, branch)
	if err != nil {
		r.t.Fatal(err)
	}
	for via, c := range r.catalogs() {
		for _, key := range tableKeys {
			want, cols := graphRows(r.t, snap, key)
			tbl := r.loadTable(c, key)
			got := icebergRows(r.t, tbl, scanSelector{ref: branch}, cols)
			if !slices.Equal(got, want) {
				r.t.Fatalf("%s: %s on %s through the %s catalog: iceberg-go read\n%s\nthe graph holds\n%s", step, key, branch, via, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if typ, ok := strings.CutPrefix(key, "node:"); ok {
				ids := queryIDs(r.t, snap, typ)
				var iceIDs []string
				for _, row := range icebergRows(r.t, tbl, scanSelector{ref: branch}, []string{"id"}) {
					iceIDs = append(iceIDs, strings.Trim(strings.TrimPrefix(row, "id="), `"`))
				}
				if !slices.Equal(ids, iceIDs) {
					r.t.Fatalf("%s: %s ids: query %v, iceberg %v", step, key, ids, iceIDs)
				}
			}
		}
	}
}

// checkCommit time-travels: the snapshot whose summary names commit, read
// by iceberg-go, equals the graph at that commit.
func (r *rig) checkCommit(step, commit string) {
	r.t.Helper()
	ctx := context.Background()
	snap, err := r.g.SnapshotAt(ctx, commit)
	if err != nil {
		r.t.Fatalf("%s: graph at %s: %v", step, commit, err)
	}
	for via, c := range r.catalogs() {
		for _, key := range tableKeys {
			want, cols := graphRows(r.t, snap, key)
			tbl := r.loadTable(c, key)
			// The table as of commit is the snapshot of the newest commit at
			// or before it that changed the table: walk the graph's history.
			id := r.snapshotAsOf(tbl, snap, key)
			got := icebergRows(r.t, tbl, scanSelector{snapshot: id}, cols)
			if !slices.Equal(got, want) {
				r.t.Fatalf("%s: %s at commit %s (snapshot %d) through the %s catalog: iceberg-go read\n%s\nthe graph held\n%s", step, key, commit, id, via, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}
	}
}

// snapshotAsOf finds the snapshot showing key at a graph snapshot: the
// snapshot of its commit, or of the newest earlier commit that changed key.
func (r *rig) snapshotAsOf(tbl *icetable.Table, s *graph.Snapshot, key string) int64 {
	r.t.Helper()
	ctx := context.Background()
	var found int64
	err := r.g.Manifest().History(ctx, s.Entry(), func(e *manifest.Entry) (bool, error) {
		if id, ok := snapshotOfCommit(tbl, e.Head); ok {
			found = id
			return false, nil
		}
		return true, nil
	})
	if err != nil || found == 0 {
		r.t.Fatalf("no snapshot of %s at or before commit %s (%v)", key, s.CommitID(), err)
	}
	return found
}

const evolvedSchema = `
node Person {
  handle: String @key
  full_name: String @rename_from("name")
  nickname: String?
  age: I32?
  score: F64?
  rank: F32?
  active: Bool?
  born: Date?
  seen: DateTime?
  tags: [String]?
  emb: Vector(3)?
  visits: U32?
  big: I64?
}
node Company {
  slug: String @key
  founded: I64?
}
edge Knows: Person -> Person {
  weight: I32?
}
edge WorksAt: Person -> Company
`

// runScenario drives appends, keyed updates, deletes, a branch and a
// three-way merge, optimize, schema apply (rename + add) and cleanup,
// syncing after each, and checks every table through iceberg-go's own
// scanner at the branch heads and at older commits.
func runScenario(t *testing.T, r *rig) {
	ctx := context.Background()
	r.init(testSchema)
	r.remember("main")
	loadData(t, r.g, "main", testSeed)
	first := r.remember("main")
	r.sync()
	r.check("appends", "main")

	mutateQ(t, r.g, "main", `query q() { update Person set { name: "Ada L", age: 37 } where handle = "ada" }`)
	r.remember("main")
	r.sync()
	r.check("keyed update", "main")

	mutateQ(t, r.g, "main", `query q() { delete Person where handle = "cy" }`)
	afterDelete := r.remember("main")
	r.sync()
	r.check("delete", "main")

	if _, err := r.g.CreateBranch(ctx, "feature", "main"); err != nil {
		t.Fatal(err)
	}
	loadData(t, r.g, "feature", `{"type":"Person","data":{"handle":"dee","name":"Dee","age":29}}
{"edge":"Knows","from":"dee","to":"ada","data":{"weight":3}}
`)
	mutateQ(t, r.g, "feature", `query q() { update Person set { score: 9.5 } where handle = "bob" }`)
	loadData(t, r.g, "main", `{"type":"Person","data":{"handle":"eve","name":"Eve"}}
{"type":"Company","data":{"slug":"initech"}}
`)
	r.sync()
	r.check("branch", "feature")
	r.check("main beside a branch", "main")

	if _, err := merge.Run(ctx, r.g, "feature", "main", merge.Options{}); err != nil {
		t.Fatalf("merge: %v", err)
	}
	r.remember("main")
	r.sync()
	r.check("three-way merge", "main")

	if _, err := optimize.Run(ctx, r.g, optimize.Options{Branch: "main"}); err != nil {
		t.Fatalf("optimize: %v", err)
	}
	r.remember("main")
	res := r.sync()
	r.check("optimize", "main")
	tbl := r.loadTable(r.open(), "node:Person")
	if op := tbl.CurrentSnapshot().Summary.Operation; op != icetable.OpReplace {
		t.Fatalf("optimize: Person's snapshot operation %q, want replace (%+v)", op, res)
	}
	nameID := fieldID(t, tbl, "name")

	// A deleted branch's ref goes with it.
	if err := r.g.DeleteBranch(ctx, "feature"); err != nil {
		t.Fatal(err)
	}
	r.sync()
	for _, key := range tableKeys {
		for name := range r.loadTable(r.open(), key).Metadata().Refs() {
			if name != "main" {
				t.Fatalf("%s keeps ref %q of a deleted branch", key, name)
			}
		}
	}

	if _, err := schema.Apply(ctx, r.g, evolvedSchema, schema.ApplyOptions{}); err != nil {
		t.Fatalf("schema apply: %v", err)
	}
	mutateQ(t, r.g, "main", `query q() { update Person set { nickname: "B" } where handle = "bob" }`)
	r.remember("main")
	r.sync()
	r.check("schema apply", "main")
	tbl = r.loadTable(r.open(), "node:Person")
	if got := fieldID(t, tbl, "full_name"); got != nameID {
		t.Fatalf("renamed column full_name has field id %d, name had %d", got, nameID)
	}

	for _, c := range r.commits {
		r.checkCommit("time travel", c)
	}
	if first == afterDelete {
		t.Fatal("commits not distinct")
	}

	// Cleanup keeps the newest 2 versions: older snapshots expire before
	// their files go, the kept ones still read.
	if _, err := cleanup.Run(ctx, r.g, cleanup.Options{Keep: 2, Confirm: true, Retained: iceberg.CleanupHook(r.loc)}); err != nil {
		t.Fatalf("cleanup: %v", err)
	}
	r.check("cleanup", "main")
	tbl = r.loadTable(r.open(), "node:Person")
	if _, ok := snapshotOfCommit(tbl, first); ok {
		t.Fatalf("cleanup kept the snapshot of commit %s beyond the retention", first)
	}
	for _, c := range r.commits[len(r.commits)-1:] {
		r.checkCommit("time travel after cleanup", c)
	}
}

func fieldID(t *testing.T, tbl *icetable.Table, name string) int {
	t.Helper()
	f, ok := tbl.Schema().FindFieldByName(name)
	if !ok {
		t.Fatalf("no column %q in %v", name, tbl.Schema())
	}
	return f.ID
}

func TestScenarioLocal(t *testing.T) {
	runScenario(t, newLocalRig(t))
}

// TestScenarioS3 is the scenario on the S3 emulator: the metadata names
// s3:// files, and iceberg-go reads them with its own S3 FileIO.
func TestScenarioS3(t *testing.T) {
	runScenario(t, newS3Rig(t))
}

// s3Props are iceberg-go's FileIO properties for the S3 emulator.
func s3Props() ice.Properties {
	endpoint := os.Getenv("AWS_ENDPOINT_URL_S3")
	if endpoint == "" {
		endpoint = os.Getenv("AWS_ENDPOINT_URL")
	}
	return ice.Properties{
		"s3.endpoint":                 endpoint,
		"s3.access-key-id":            os.Getenv("AWS_ACCESS_KEY_ID"),
		"s3.secret-access-key":        os.Getenv("AWS_SECRET_ACCESS_KEY"),
		"s3.region":                   "us-east-1",
		"s3.force-virtual-addressing": "false",
		// iceberg-go's Hadoop catalog asks for this on object stores; it
		// only guards its own commits, and this test makes none.
		"allow-unsafe-commits": "true",
	}
}

func newS3Rig(t *testing.T) *rig {
	url := testenv.S3(t)
	loc, err := iceberg.Location(url)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, store: testenv.Open(t, url), loc: loc, props: s3Props()}
	r.open = func() catalog.Catalog { return staticCatalog(t, loc, r.props) }
	return r
}
