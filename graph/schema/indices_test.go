package schema_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/fault"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/load"
	"github.com/omnigraph-go/omnigraph/graph/schema"
)

const idxSchema = `
node Person {
  handle: String @key
  city: String? @index
}
node Tag { slug: String @key }
edge Knows: Person -> Person
`

// fragmented builds a graph whose Person and Knows tables have one fragment
// per commit and no key index; Tag stays empty.
func fragmented(t testing.TB, store backend.StorageAdapter) *graph.Graph {
	t.Helper()
	ctx := context.Background()
	g, err := graph.Init(ctx, store, idxSchema, graph.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 6; i++ {
		data := fmt.Sprintf(`{"type":"Person","data":{"handle":"p%d","city":"c%d"}}`, i, i%2)
		if i > 0 {
			data += fmt.Sprintf("\n"+`{"edge":"Knows","from":"p%d","to":"p%d"}`, i, i-1)
		}
		if _, err := load.Run(ctx, g, strings.NewReader(data), load.Options{Mode: load.Append}); err != nil {
			t.Fatal(err)
		}
	}
	return g
}

func covered(t testing.TB, g *graph.Graph, key string) bool {
	t.Helper()
	ds, err := head(t, g).OpenTable(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return ds.KeyIndexCovers()
}

const (
	qIdx     = `query q() { match { $p: Person  $p knows $f } return { $p.handle, $f.handle as friend, $p.city } order { $p.handle } }`
	wantIdxQ = "[[p1 p0 c1] [p2 p1 c0] [p3 p2 c1] [p4 p3 c0] [p5 p4 c1]]"
)

// TestEnsureIndicesBuildsThenNoOp: one commit builds the key index of every
// table with rows (one index transaction each), lists the declared @index
// it cannot build, changes no answer, and a second run writes nothing.
func TestEnsureIndicesBuildsThenNoOp(t *testing.T) {
	ctx := context.Background()
	store := mem.New()
	g := fragmented(t, store)
	if covered(t, g, "node:Person") || covered(t, g, "edge:Knows") {
		t.Fatal("the fixture's tables already have a covering key index")
	}
	before := head(t, g)
	res, err := schema.EnsureIndices(ctx, g, schema.IndexOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.NoOp || res.Commit == nil || len(res.Built) != 3 {
		t.Fatalf("result %+v: want one commit building three indexes", res)
	}
	for i, b := range res.Built {
		// Two key indexes, and the full-text index of the declared
		// `city: String? @index` in Person's index transaction.
		want := [][3]string{{"edge:Knows", "id", "key"}, {"node:Person", "id", "key"}, {"node:Person", "city", "fulltext"}}[i]
		if b.Table != want[0] || b.Column != want[1] || b.Kind != want[2] || b.ToVersion != b.FromVersion+1 || b.Fragments < 5 {
			t.Fatalf("built %+v, want %v", b, want)
		}
	}
	if len(res.Pending) != 0 {
		t.Fatalf("pending %+v: want none", res.Pending)
	}
	after := head(t, g)
	if after.Version() != before.Version()+1 {
		t.Fatalf("version %d, want %d", after.Version(), before.Version()+1)
	}
	for _, k := range []string{"node:Person", "edge:Knows"} {
		if !covered(t, g, k) {
			t.Fatalf("%s has no covering key index after ensure-indices", k)
		}
	}
	if got := ask(t, after, qIdx); got != wantIdxQ {
		t.Fatalf("answers after ensure-indices: %s", got)
	}
	if got := ask(t, head(t, reopen(t, store)), qIdx); got != wantIdxQ {
		t.Fatalf("answers on a fresh handle: %s", got)
	}
	again, err := schema.EnsureIndices(ctx, g, schema.IndexOptions{})
	if err != nil || !again.NoOp || len(again.Built) != 0 || again.Commit != nil {
		t.Fatalf("second run: %+v, %v; want a no-op", again, err)
	}
	if head(t, g).Version() != after.Version() {
		t.Fatal("the second run published")
	}
	// A branch that has not written a table reads its parent's: listed,
	// not forked.
	if _, err := load.Run(ctx, g, strings.NewReader(`{"type":"Person","data":{"handle":"p9"}}`), load.Options{Mode: load.Append}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.CreateBranch(ctx, "side", "main"); err != nil {
		t.Fatal(err)
	}
	br, err := schema.EnsureIndices(ctx, g, schema.IndexOptions{Branch: "side"})
	if err != nil || !br.NoOp {
		t.Fatalf("branch run: %+v, %v; want a no-op", br, err)
	}
	found := false
	for _, p := range br.Pending {
		found = found || p.Table == "node:Person" && p.Columns == "id"
	}
	if !found {
		t.Fatalf("branch pending %+v: want Person's inherited key index listed", br.Pending)
	}
}

// TestEnsureIndicesCrashAtEveryWrite: a crash at or after every write of
// ensure-indices leaves a graph that a fresh process opens with the same
// answers, and a new run then completes with every index built.
func TestEnsureIndicesCrashAtEveryWrite(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []string{"at", "after"} {
		for k := 1; ; k++ {
			inner := mem.New()
			inj := fault.New(inner)
			g := fragmented(t, inj)
			g.Manifest().SetSleeper(instant)
			inj.Reset()
			if mode == "at" {
				inj.CrashAtWrite(k)
			} else {
				inj.CrashAfterWrite(k)
			}
			_, runErr := schema.EnsureIndices(ctx, g, schema.IndexOptions{})
			crashed, writes := inj.Crashed(), inj.Writes()
			inj.Heal()
			where := fmt.Sprintf("crash %s write %d", mode, k)
			if !crashed && runErr != nil {
				t.Fatalf("%s: failed without a crash: %v", where, runErr)
			}
			re := reopen(t, inner)
			if got := ask(t, head(t, re), qIdx); got != wantIdxQ {
				t.Fatalf("%s: answers %s", where, got)
			}
			if _, err := schema.EnsureIndices(ctx, re, schema.IndexOptions{}); err != nil {
				t.Fatalf("%s: run after recovery: %v", where, err)
			}
			for _, key := range []string{"node:Person", "edge:Knows"} {
				if !covered(t, re, key) {
					t.Fatalf("%s: %s not covered after the second run", where, key)
				}
			}
			if !crashed || writes < k {
				t.Logf("crash %s: ensure-indices makes %d writes", mode, k-1)
				break
			}
		}
	}
}
