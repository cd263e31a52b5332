package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/catalog/rest"
	icetable "github.com/apache/iceberg-go/table"

	"github.com/omnigraph-go/omnigraph/backend/counter"
	"github.com/omnigraph-go/omnigraph/backend/local"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/iceberg"
	"github.com/omnigraph-go/omnigraph/table"
)

// icebergPolicy: everyone but eve reads; only alice reads branch secret;
// alice writes.
const icebergPolicy = `
@id("read")
permit (principal, action == Omnigraph::Action::"read", resource in Omnigraph::Graph::"default")
  unless { principal == Omnigraph::Actor::"eve" };

@id("hide-secret")
forbid (principal, action == Omnigraph::Action::"read", resource == Omnigraph::Branch::"default/secret")
  unless { principal == Omnigraph::Actor::"alice" };

@id("alice-writes")
permit (principal == Omnigraph::Actor::"alice", action, resource);
`

// waitIcebergIdle waits until the background sync has run at least runs
// times and is idle (a generous bound: it fails the test, never times it).
func waitIcebergIdle(t *testing.T, s *Server, runs int) {
	t.Helper()
	y := s.icebergSyncers["default"]
	deadline := time.Now().Add(2 * time.Minute)
	for {
		n, failed, idle := y.idle()
		if failed > 0 {
			t.Fatalf("the background Iceberg sync failed %d time(s)", failed)
		}
		if idle && n >= runs {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the background Iceberg sync did not settle: %d runs", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// restCatalog is iceberg-go's own REST client on the server's /iceberg.
func restCatalog(t *testing.T, base, token string) *rest.Catalog {
	t.Helper()
	c, err := rest.NewCatalog(context.Background(), "omnigraph", base+IcebergPrefix, rest.WithOAuthToken(token), rest.WithWarehouseLocation("default"))
	if err != nil {
		t.Fatalf("iceberg-go REST catalog: %v", err)
	}
	return c
}

// names reads the name column of a scan with iceberg-go's own scanner.
func names(t *testing.T, scan *icetable.Scan) []string {
	t.Helper()
	at, err := scan.ToArrowTable(context.Background())
	if err != nil {
		t.Fatalf("iceberg scan: %v", err)
	}
	defer at.Release()
	var out []string
	idx := at.Schema().FieldIndices("name")
	if len(idx) == 0 {
		t.Fatalf("no name column in %v", at.Schema())
	}
	for _, chunk := range at.Column(idx[0]).Data().Chunks() {
		s := chunk.(*array.String)
		for i := 0; i < s.Len(); i++ {
			out = append(out, s.Value(i))
		}
	}
	sort.Strings(out)
	return out
}

func graphNames(t *testing.T, s *graph.Snapshot) []string {
	t.Helper()
	ds, err := s.OpenTable(context.Background(), graph.NodeTableKey("Person"))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := ds.Scan(context.Background(), tableScanAll)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range recs {
		col := r.Column(r.Schema().FieldIndices("name")[0]).(*array.String)
		for i := 0; i < col.Len(); i++ {
			out = append(out, col.Value(i))
		}
		r.Release()
	}
	sort.Strings(out)
	return out
}

// TestIcebergCatalog drives the /iceberg REST catalog with iceberg-go's
// own client: writes through the API are synced in the background, the
// scanner reads main, a branch and an older commit as the graph holds
// them, the policy hides a branch's ref from who may not read it, every
// route needs a token and read, every change is refused and changes
// nothing, and a cold loadTable costs three requests.
func TestIcebergCatalog(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "g")
	st, err := local.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	cnt := counter.New(st)
	g0, err := graph.Init(ctx, cnt, testSchema, graph.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g0.Close()
	g, err := graph.Open(ctx, cnt, graph.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	loc, err := iceberg.Location(dir)
	if err != nil {
		t.Fatal(err)
	}
	tokens, secrets := tokensFor(t, "alice", "rita", "eve")
	pol, err := ParsePolicy("iceberg.cedar", []byte(icebergPolicy))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Graphs: []Graph{{ID: "default", G: g, IcebergLocation: loc}}, Tokens: tokens, Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	hs := newHTTPServer(t, s)
	alice := &client{t: t, base: hs, token: secrets["alice"]}
	ins := func(name, branch string) string {
		return fmt.Sprintf(`{"query":"mutation m() { insert Person { name: \"%s\" } }","branch":"%s"}`, name, branch)
	}
	code, m := alice.json("POST", "/graphs/default/mutate", ins("ada", "main"))
	mustStatus(t, "insert ada", code, 200, m)
	old := m["commit"].(map[string]any)["graph_commit_id"].(string)
	code, m = alice.json("POST", "/graphs/default/mutate", ins("bob", "main"))
	mustStatus(t, "insert bob", code, 200, m)
	code, m = alice.json("POST", "/graphs/default/branches", `{"name":"secret"}`)
	mustStatus(t, "branch", code, 200, m)
	code, m = alice.json("POST", "/graphs/default/mutate", ins("cy", "secret"))
	mustStatus(t, "insert cy on secret", code, 200, m)
	waitIcebergIdle(t, s, 1)

	ac := restCatalog(t, hs, secrets["alice"])
	nss, err := ac.ListNamespaces(ctx, nil)
	if err != nil || fmt.Sprint(nss) != "[[edges] [nodes]]" {
		t.Fatalf("namespaces: %v %v", nss, err)
	}
	var tables []string
	for id, err := range ac.ListTables(ctx, icetable.Identifier{"nodes"}) {
		if err != nil {
			t.Fatal(err)
		}
		tables = append(tables, strings.Join(id, "."))
	}
	if fmt.Sprint(tables) != "[nodes.Person]" {
		t.Fatalf("tables: %v", tables)
	}
	tbl, err := ac.LoadTable(ctx, icetable.Identifier{"nodes", "Person"})
	if err != nil {
		t.Fatalf("load table: %v", err)
	}
	main, _ := g.Snapshot(ctx, "main")
	if got, want := names(t, tbl.Scan()), graphNames(t, main); !slices.Equal(got, want) {
		t.Fatalf("main through REST: %v, graph %v", got, want)
	}
	sec, _ := g.Snapshot(ctx, "secret")
	scan, err := tbl.Scan().UseRef("secret")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(t, scan), graphNames(t, sec); !slices.Equal(got, want) || !slices.Contains(got, "cy") {
		t.Fatalf("branch secret through REST: %v, graph %v", got, want)
	}
	var oldID int64
	for _, sn := range tbl.Metadata().Snapshots() {
		if sn.Summary.Properties[iceberg.SummaryCommitID] == old {
			oldID = sn.SnapshotID
		}
	}
	oldSnap, _ := g.SnapshotAt(ctx, old)
	if got, want := names(t, tbl.Scan(icetable.WithSnapshotID(oldID))), graphNames(t, oldSnap); oldID == 0 || !slices.Equal(got, want) || len(got) != 1 {
		t.Fatalf("commit %s (snapshot %d) through REST: %v, graph %v", old, oldID, got, want)
	}

	// rita may not read secret: its ref is not in her metadata.
	rt, err := restCatalog(t, hs, secrets["rita"]).LoadTable(ctx, icetable.Identifier{"nodes", "Person"})
	if err != nil {
		t.Fatalf("rita load: %v", err)
	}
	for name := range rt.Metadata().Refs() {
		if name == "secret" {
			t.Fatal("rita sees the ref of a branch the policy hides from her")
		}
	}
	if _, err := rt.Scan().UseRef("secret"); err == nil {
		t.Fatal("rita scanned branch secret")
	}
	if got := names(t, rt.Scan()); !slices.Equal(got, graphNames(t, main)) {
		t.Fatalf("rita's main: %v", got)
	}

	// Every route of the table: 401 without a token, 403 for eve.
	concrete := strings.NewReplacer("{prefix}", "default", "{namespace}", "nodes", "{table}", "Person")
	for _, r := range IcebergRoutes() {
		path := concrete.Replace(r.Path)
		if st, body := rawIceberg(t, r.Method, hs+path, ""); st != 401 || !strings.Contains(body, "NotAuthorizedException") {
			t.Errorf("%s %s without a token: %d %s", r.Method, path, st, body)
		}
		if st, body := rawIceberg(t, r.Method, hs+path, secrets["eve"]); st != 403 || !strings.Contains(body, "ForbiddenException") {
			t.Errorf("%s %s as eve: %d %s", r.Method, path, st, body)
		}
	}

	// Hostile table and namespace names are refused before any storage key
	// is formed (a literal ".." segment never reaches a handler: the mux
	// cleans the path).
	cnt.Reset()
	for _, name := range []string{"%2e%2e", "a%20b", "Person%2F..%2F..", strings.Repeat("A", 300), "%E2%98%83", "Person.x"} {
		st, body := rawIceberg(t, "GET", hs+"/iceberg/v1/default/namespaces/nodes/tables/"+name, secrets["alice"])
		if st != 404 || !strings.Contains(body, "NoSuchTableException") {
			t.Errorf("table %q: %d %s", name, st, body)
		}
	}
	for _, ns := range []string{"%2e%2e", "nodes%1Fx", "other"} {
		st, body := rawIceberg(t, "GET", hs+"/iceberg/v1/default/namespaces/"+ns+"/tables/Person", secrets["alice"])
		if st != 404 || !strings.Contains(body, "NoSuchNamespaceException") {
			t.Errorf("namespace %q: %d %s", ns, st, body)
		}
	}
	if c := cnt.Snapshot(); c.Total != 0 {
		t.Errorf("hostile names reached storage: %s", c)
	}

	// Changes are refused and change nothing.
	before, err := iceberg.Load(ctx, cnt, iceberg.Ident{Namespace: "nodes", Name: "Person"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ method, path string }{
		{"POST", "/iceberg/v1/default/namespaces/nodes/tables/Person"},
		{"DELETE", "/iceberg/v1/default/namespaces/nodes/tables/Person"},
		{"POST", "/iceberg/v1/default/namespaces/nodes/tables"},
		{"POST", "/iceberg/v1/default/namespaces"},
		{"POST", "/iceberg/v1/default/tables/rename"},
		{"POST", "/iceberg/v1/default/transactions/commit"},
	} {
		st, body := rawIceberg(t, c.method, hs+c.path, secrets["alice"])
		if st != 403 || !strings.Contains(body, "read-only") {
			t.Errorf("%s %s: %d %s", c.method, c.path, st, body)
		}
	}
	after, err := iceberg.Load(ctx, cnt, iceberg.Ident{Namespace: "nodes", Name: "Person"})
	if err != nil || after.MetadataLocation != before.MetadataLocation {
		t.Fatalf("a refused change moved the metadata: %s -> %s (%v)", before.MetadataLocation, after.MetadataLocation, err)
	}

	// A cold loadTable: the hint, the metadata file, one probe past it.
	cnt.Reset()
	code2, body := rawIceberg(t, "GET", hs+"/iceberg/v1/default/namespaces/nodes/tables/Person", secrets["alice"])
	if code2 != 200 {
		t.Fatalf("loadTable: %d %s", code2, body)
	}
	if c := cnt.Snapshot(); c.Total != 3 || c.Get != 2 || c.Head != 1 {
		t.Fatalf("a cold loadTable cost %s, want 2 GETs and 1 HEAD", c)
	}
	t.Logf("cold loadTable: %s", cnt.Snapshot())
}

var tableScanAll = table.ScanOptions{}

func newHTTPServer(t *testing.T, s *Server) string {
	t.Helper()
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return hs.URL
}

func rawIceberg(t *testing.T, method, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
