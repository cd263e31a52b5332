package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/counter"
	"github.com/omnigraph-go/omnigraph/backend/fault"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/manifest"
)

const testSchema = `
node Person {
  name: String @key
  age: I32?
}
node Company {
  name: String @key
}
edge WorksAt: Person -> Company
`

// rig is a graph over mem, behind a fault injector, behind a counter: the
// counter sees every request the engine sends.
type rig struct {
	mem   *mem.Store
	fault *fault.Injector
	count *counter.Counter
	g     *graph.Graph
}

func newRig(t testing.TB) *rig {
	t.Helper()
	r := &rig{mem: mem.New()}
	r.fault = fault.New(r.mem)
	r.count = counter.New(r.fault)
	g, err := graph.Init(context.Background(), r.count, testSchema, graph.InitOptions{Actor: "tester"})
	if err != nil {
		t.Fatalf("Init: %v", err)
	}
	r.g = g
	r.count.Reset()
	return r
}

// open opens a fresh handle over the rig's store.
func (r *rig) open(t testing.TB, opts graph.OpenOptions) *graph.Graph {
	t.Helper()
	g, err := graph.Open(context.Background(), r.count, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return g
}

func writes(c counter.Counts) int { return c.Put + c.CondPut + c.Delete }

func TestInitCreatesTheGraph(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	g := r.open(t, graph.OpenOptions{ReadOnly: true})
	snap, err := g.Snapshot(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, p := range snap.Tables() {
		keys = append(keys, p.Key+"@"+p.Path+"@"+p.Branch)
		if p.Version != 1 {
			t.Errorf("table %s starts at version %d, want 1", p.Key, p.Version)
		}
	}
	want := "edge:WorksAt@edges/WorksAt@main,node:Company@nodes/Company@main,node:Person@nodes/Person@main"
	if got := strings.Join(keys, ","); got != want {
		t.Fatalf("tables = %s, want %s", got, want)
	}
	if snap.Stamp() != manifest.StampCurrent {
		t.Fatalf("stamp %d", snap.Stamp())
	}
	cat, err := snap.Catalog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if cat.Identity != snap.SchemaIdentity() || !strings.Contains(cat.Source, "node Person") {
		t.Fatalf("accepted schema %s does not match the snapshot's %s", cat.Identity, snap.SchemaIdentity())
	}
	if _, err := r.mem.Stat(ctx, manifest.SchemaKey(cat.Identity)); err != nil {
		t.Fatalf("schema source not stored at %s: %v", manifest.SchemaKey(cat.Identity), err)
	}
	cs, err := g.Commits(ctx, "main", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || cs[0].Actor != "tester" || len(cs[0].Parents) != 0 || cs[0].ID != snap.CommitID() {
		t.Fatalf("initial history = %+v", cs)
	}
	stats, err := snap.TableStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stats {
		if s.Rows != 0 || s.Version != 1 {
			t.Fatalf("fresh table %+v", s)
		}
	}
}

func TestInitRefusesAnExistingGraphAndBadSchemas(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	tests := []struct {
		name   string
		schema string
		want   error
	}{
		{"existing graph", testSchema, graph.ErrGraphExists},
		{"bad schema", "node person {", graph.ErrInvalidSchema},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r.count.Reset()
			_, err := graph.Init(ctx, r.count, tt.schema, graph.InitOptions{})
			if !errors.Is(err, tt.want) {
				t.Fatalf("Init = %v, want %v", err, tt.want)
			}
			if w := writes(r.count.Snapshot()); w != 0 {
				t.Fatalf("a refused init made %d writes", w)
			}
		})
	}
	// The graph is untouched.
	cs, err := r.open(t, graph.OpenOptions{ReadOnly: true}).Commits(ctx, "main", 0)
	if err != nil || len(cs) != 1 {
		t.Fatalf("history after refused inits: %v %v", cs, err)
	}
}

func TestInitReclaimsAnInterruptedInit(t *testing.T) {
	ctx := context.Background()
	for k := 1; ; k++ {
		m := mem.New()
		f := fault.New(m)
		f.CrashAtWrite(k)
		_, err := graph.Init(ctx, f, testSchema, graph.InitOptions{})
		if err == nil {
			if f.Writes() >= k {
				t.Fatalf("k=%d: init succeeded through a crash", k)
			}
			break // k is past the last write: the loop is complete
		}
		f.Reset()
		// Whatever the crash left, the graph is either absent (init again
		// works) or complete (open works).
		if _, oerr := graph.Open(ctx, f, graph.OpenOptions{ReadOnly: true}); oerr == nil {
			continue
		} else if !errors.Is(oerr, graph.ErrNoGraph) {
			t.Fatalf("k=%d: open after crash: %v", k, oerr)
		}
		if _, err := graph.Init(ctx, f, testSchema, graph.InitOptions{}); err != nil {
			t.Fatalf("k=%d: init after a crashed init: %v", k, err)
		}
	}
}

func TestOpenWithoutAGraph(t *testing.T) {
	_, err := graph.Open(context.Background(), mem.New(), graph.OpenOptions{})
	if !errors.Is(err, graph.ErrNoGraph) || !strings.Contains(err.Error(), "omnigraph init") {
		t.Fatalf("Open of an empty store = %v", err)
	}
}

// restamp rewrites main's head with another stamp, as a different binary
// would have written it.
func restamp(t *testing.T, r *rig, stamp int) {
	t.Helper()
	ctx := context.Background()
	ref, err := manifest.New(r.mem).Probe(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	data, _, err := r.mem.Get(ctx, ref.Key)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	raw["stamp"] = stamp
	data, _ = json.Marshal(raw)
	if _, err := r.mem.Put(ctx, ref.Key, data); err != nil {
		t.Fatal(err)
	}
}

func TestOpenChecksTheStorageStamp(t *testing.T) {
	tests := []struct {
		name  string
		stamp int
		want  string
	}{
		// The refusal of an older graph names the exact rebuild commands.
		{"older graph", manifest.StampCurrent - 1, "'omnigraph export --out graph.jsonl --store OLD_URL' (it also writes graph.pg), then with this one run 'omnigraph init --schema graph.pg NEW_URL' and 'omnigraph load --data graph.jsonl --mode overwrite NEW_URL'"},
		{"newer graph", manifest.StampCurrent + 1, "upgrade omnigraph"},
	}
	for _, tt := range tests {
		for _, ro := range []bool{false, true} {
			t.Run(tt.name, func(t *testing.T) {
				r := newRig(t)
				restamp(t, r, tt.stamp)
				r.count.Reset()
				_, err := graph.Open(context.Background(), r.count, graph.OpenOptions{ReadOnly: ro})
				if !errors.Is(err, manifest.ErrStamp) || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("Open(readOnly=%v) = %v, want a stamp error saying %q", ro, err, tt.want)
				}
				if w := writes(r.count.Snapshot()); w != 0 {
					t.Fatalf("a refused open made %d writes", w)
				}
			})
		}
	}
}

func TestReadOnlyOpenNeverWrites(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	if _, err := r.g.CreateBranch(ctx, "feature", ""); err != nil {
		t.Fatal(err)
	}
	r.count.Reset()
	g := r.open(t, graph.OpenOptions{ReadOnly: true})
	snap, err := g.Snapshot(ctx, "feature")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := snap.TableStats(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := snap.Catalog(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Commits(ctx, "feature", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Branches(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := g.CreateBranch(ctx, "other", ""); !errors.Is(err, graph.ErrReadOnly) {
		t.Fatalf("CreateBranch on a read-only handle = %v", err)
	}
	if err := g.DeleteBranch(ctx, "feature"); !errors.Is(err, graph.ErrReadOnly) {
		t.Fatalf("DeleteBranch on a read-only handle = %v", err)
	}
	if _, err := g.BeginWrite(ctx, "main", graph.WriteOptions{}); !errors.Is(err, graph.ErrReadOnly) {
		t.Fatalf("BeginWrite on a read-only handle = %v", err)
	}
	c := r.count.Snapshot()
	if w := writes(c); w != 0 {
		t.Fatalf("read-only session made %d writes (%s)", w, c)
	}
	if c.Total == 0 {
		t.Fatal("the counter saw nothing: the test is not measuring")
	}
}

var _ = backend.ErrUnknown

func TestInitRefusesANonEmptyLocation(t *testing.T) {
	ctx := context.Background()
	m := mem.New()
	if _, err := m.Put(ctx, "notes.txt", []byte("mine")); err != nil {
		t.Fatal(err)
	}
	c := counter.New(m)
	if _, err := graph.Init(ctx, c, testSchema, graph.InitOptions{}); !errors.Is(err, graph.ErrNotEmpty) || !strings.Contains(err.Error(), "notes.txt") {
		t.Fatalf("Init over foreign data = %v, want ErrNotEmpty naming the object", err)
	}
	if w := writes(c.Snapshot()); w != 0 {
		t.Fatalf("a refused init made %d writes", w)
	}
}
