package merge_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/counter"
	"github.com/omnigraph-go/omnigraph/backend/fault"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/change"
	"github.com/omnigraph-go/omnigraph/graph/load"
	"github.com/omnigraph-go/omnigraph/graph/mutate"
	"github.com/omnigraph-go/omnigraph/table"
)

const schema = `
node Person {
  handle: String @key
  name: String
  email: String?
  @unique(email)
}
node Company {
  slug: String @key
}
edge Knows: Person -> Person {
  weight: I32?
}
edge WorksAt: Person -> Company @card(0..1)
`

// seed: three people, one company, one Knows edge with a given id, one
// WorksAt edge.
const seed = `{"type":"Person","data":{"handle":"ada","name":"Ada"}}
{"type":"Person","data":{"handle":"bob","name":"Bob"}}
{"type":"Person","data":{"handle":"cy","name":"Cy"}}
{"type":"Company","data":{"slug":"acme"}}
{"edge":"Knows","from":"ada","to":"bob","data":{"id":"k1","weight":1}}
{"edge":"WorksAt","from":"ada","to":"acme","data":{"id":"w1"}}
`

type rig struct {
	mem   *mem.Store
	fault *fault.Injector
	count *counter.Counter
	g     *graph.Graph
}

func newRig(t testing.TB) *rig {
	t.Helper()
	return newRigWith(t, nil)
}

// newRigWith is newRig with wrap (if not nil) between the fault injector
// and the counter.
func newRigWith(t testing.TB, wrap func(backend.StorageAdapter) backend.StorageAdapter) *rig {
	t.Helper()
	r := &rig{mem: mem.New()}
	r.fault = fault.New(r.mem)
	var s backend.StorageAdapter = r.fault
	if wrap != nil {
		s = wrap(r.fault)
	}
	r.count = counter.New(s)
	g, err := graph.Init(context.Background(), r.count, schema, graph.InitOptions{Actor: "tester"})
	if err != nil {
		t.Fatalf("Init: %v", err)
	}
	r.g = g
	r.load(t, "main", seed)
	return r
}

func (r *rig) load(t testing.TB, branch, data string) {
	t.Helper()
	if _, err := load.Run(context.Background(), r.g, strings.NewReader(data), load.Options{Branch: branch, Mode: load.Merge}); err != nil {
		t.Fatalf("load into %s: %v", branch, err)
	}
}

func (r *rig) mutate(t testing.TB, branch, src string) {
	t.Helper()
	if _, err := mutate.Query(context.Background(), r.g, src, "", mutate.Options{Branch: branch}); err != nil {
		t.Fatalf("mutate %s: %s: %v", branch, src, err)
	}
}

func (r *rig) branch(t testing.TB, name, from string) {
	t.Helper()
	if _, err := r.g.CreateBranch(context.Background(), name, from); err != nil {
		t.Fatalf("create branch %s: %v", name, err)
	}
}

// rows renders a table of a branch, sorted: "id|col=v|...", columns sorted.
func rows(t testing.TB, g *graph.Graph, branch, key string) []string {
	t.Helper()
	ctx := context.Background()
	s, err := g.Snapshot(ctx, branch)
	if err != nil {
		t.Fatalf("snapshot %s: %v", branch, err)
	}
	return snapRows(t, s, key)
}

func snapRows(t testing.TB, s *graph.Snapshot, key string) []string {
	t.Helper()
	ctx := context.Background()
	ds, err := s.OpenTable(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := ds.Scan(ctx, table.ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, rec := range recs {
		for _, row := range change.RecordRows(rec) {
			out = append(out, render(row))
		}
		rec.Release()
	}
	sort.Strings(out)
	return out
}

func render(row change.Row) string {
	cols := make([]string, 0, len(row))
	for k := range row {
		if k != "id" {
			cols = append(cols, k)
		}
	}
	sort.Strings(cols)
	parts := []string{fmt.Sprint(row["id"])}
	for _, c := range cols {
		if row[c] == nil {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s=%v", c, row[c]))
	}
	return strings.Join(parts, "|")
}

// image renders every table of every live branch.
func image(t testing.TB, g *graph.Graph) string {
	t.Helper()
	ctx := context.Background()
	bs, err := g.Branches(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, br := range bs {
		s, err := g.Snapshot(ctx, br.Name)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range s.Tables() {
			fmt.Fprintf(&b, "%s %s: %s\n", br.Name, p.Key, strings.Join(snapRows(t, s, p.Key), " "))
		}
	}
	return b.String()
}

func names(t testing.TB, g *graph.Graph, branch string) string {
	t.Helper()
	var out []string
	for _, r := range rows(t, g, branch, "node:Person") {
		out = append(out, r)
	}
	return strings.Join(out, " ")
}
