package changes_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend/counter"
	"github.com/omnigraph-go/omnigraph/backend/fault"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/change"
	"github.com/omnigraph-go/omnigraph/graph/changes"
	"github.com/omnigraph-go/omnigraph/graph/diff"
	"github.com/omnigraph-go/omnigraph/graph/load"
	"github.com/omnigraph-go/omnigraph/graph/mutate"
	"github.com/omnigraph-go/omnigraph/lang/pg"
	"github.com/omnigraph-go/omnigraph/table"
)

const schemaV1 = `
node Person {
  handle: String @key
  name: String
  age: I32?
}
node Company {
  slug: String @key
}
edge WorksAt: Person -> Company
`

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
	g, err := graph.Init(context.Background(), r.count, schemaV1, graph.InitOptions{Actor: "tester"})
	if err != nil {
		t.Fatalf("Init: %v", err)
	}
	r.g = g
	t.Cleanup(func() { r.g.Close() })
	return r
}

// reopen drops the handle and opens the store afresh (no cache survives).
func (r *rig) reopen(t testing.TB) {
	t.Helper()
	r.g.Close()
	g, err := graph.Open(context.Background(), r.count, graph.OpenOptions{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	r.g = g
}

func (r *rig) load(t testing.TB, branch, data string) string {
	t.Helper()
	res, err := load.Run(context.Background(), r.g, strings.NewReader(data), load.Options{Branch: branch, Mode: load.Merge})
	if err != nil {
		t.Fatalf("load into %s: %v", branch, err)
	}
	return res.Commit.ID
}

func (r *rig) mutate(t testing.TB, branch, src string) string {
	t.Helper()
	res, err := mutate.Query(context.Background(), r.g, src, "", mutate.Options{Branch: branch})
	if err != nil {
		t.Fatalf("mutate %s: %s: %v", branch, src, err)
	}
	if res.Commit == nil {
		t.Fatalf("mutate %s: %s changed nothing", branch, src)
	}
	return res.Commit.ID
}

func (r *rig) head(t testing.TB, branch string) string {
	t.Helper()
	s, err := r.g.Snapshot(context.Background(), branch)
	if err != nil {
		t.Fatal(err)
	}
	return s.CommitID()
}

func (r *rig) poll(t testing.TB, req changes.Request) *changes.Page {
	t.Helper()
	p, err := changes.Poll(context.Background(), r.g, req)
	if err != nil {
		t.Fatalf("poll %+v: %v", req, err)
	}
	return p
}

func start(s string) *changes.Start {
	st, err := changes.ParseStart(s)
	if err != nil {
		panic(err)
	}
	return &st
}

// render renders a change briefly: "insert node Person p1 {name=Ada}".
func render(c diff.Change) string {
	row := c.After
	if c.Op == diff.OpDelete {
		row = c.Before
	}
	var cols []string
	for k, v := range row {
		if k == pg.ColID || k == pg.ColSrc || k == pg.ColDst || v == nil {
			continue
		}
		cols = append(cols, fmt.Sprintf("%s=%v", k, v))
	}
	sort.Strings(cols)
	s := fmt.Sprintf("%s %s %s %s", c.Op, c.EntityKind, c.TypeName, c.ID)
	if c.EntityKind == "edge" {
		s += fmt.Sprintf(" %s->%s", c.From, c.To)
	}
	return s + " {" + strings.Join(cols, ",") + "}"
}

func renderBlocks(p *changes.Page) []string {
	var out []string
	for _, b := range p.Blocks {
		for _, c := range b.Changes {
			out = append(out, render(c))
		}
	}
	return out
}

// state reads every live row of a branch: "Type id {cols}" lines, sorted.
func state(t testing.TB, g *graph.Graph, branch string) map[string]string {
	t.Helper()
	ctx := context.Background()
	s, err := g.Snapshot(ctx, branch)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := s.Catalog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, tb := range diff.Tables(cat) {
		ds, err := s.OpenTable(ctx, tb.Key)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := ds.Scan(ctx, table.ScanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range recs {
			for _, row := range change.RecordRows(rec) {
				id, _ := row[pg.ColID].(string)
				out[tb.Name+" "+id] = rowText(row)
			}
			rec.Release()
		}
	}
	return out
}

func rowText(row change.Row) string {
	var cols []string
	for k, v := range row {
		cols = append(cols, fmt.Sprintf("%s=%v", k, v))
	}
	sort.Strings(cols)
	return strings.Join(cols, ",")
}

// apply applies a page's blocks to a replica, idempotently.
func apply(replica map[string]string, p *changes.Page) {
	for _, b := range p.Blocks {
		for _, c := range b.Changes {
			k := c.TypeName + " " + c.ID
			if c.Op == diff.OpDelete {
				delete(replica, k)
			} else {
				replica[k] = rowText(c.After)
			}
		}
	}
}

func isRejected(err error) bool { return errors.Is(err, changes.ErrCursorRejected) }
