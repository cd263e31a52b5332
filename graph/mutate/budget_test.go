package mutate_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/load"
	"github.com/omnigraph-go/omnigraph/graph/mutate"
)

const budgetSchema = `
node Person { handle: String @key  age: I32? }
edge Knows: Person -> Person
`

// peopleGraph holds n people aged 0..n-1 (mod 100), each knowing the next.
func peopleGraph(t *testing.T, n int) *graph.Graph {
	t.Helper()
	ctx := context.Background()
	g, err := graph.Init(ctx, mem.New(), budgetSchema, graph.InitOptions{Actor: "t"})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `{"type":"Person","data":{"handle":"p%05d","age":%d}}`+"\n", i, i%100)
	}
	for i := 0; i+1 < n; i++ {
		fmt.Fprintf(&b, `{"edge":"Knows","from":"p%05d","to":"p%05d"}`+"\n", i, i+1)
	}
	if _, err := load.Run(ctx, g, strings.NewReader(b.String()), load.Options{Mode: load.Append}); err != nil {
		t.Fatal(err)
	}
	return g
}

func countPeople(t *testing.T, g *graph.Graph) int64 {
	t.Helper()
	s, err := g.Snapshot(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	ds, err := s.OpenTable(context.Background(), graph.NodeTableKey("Person"))
	if err != nil {
		t.Fatal(err)
	}
	return ds.RowCount()
}

// TestMutationReadPhaseBudget: an update or delete whose read phase (the
// rows it matches, a node delete's edge cascade) goes over its budget is
// refused with *graph.BudgetExceeded and writes nothing; within the budget
// it commits as without one.
func TestMutationReadPhaseBudget(t *testing.T) {
	ctx := context.Background()
	g := peopleGraph(t, 5000)
	head := func() string {
		s, err := g.Snapshot(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		return s.CommitID()
	}
	before := head()
	for _, c := range []struct {
		name string
		src  string
		b    graph.Budget
		res  graph.Resource
	}{
		{"update rows", `mutation m() { update Person set { age: 1 } where age >= 0 }`, graph.Budget{Rows: 1000}, graph.ResourceRows},
		{"update memory", `mutation m() { update Person set { age: 1 } where age >= 0 }`, graph.Budget{Memory: 64 << 10}, graph.ResourceMemory},
		{"delete storage", `mutation m() { delete Person where age < 50 }`, graph.Budget{ReadBytes: 256}, graph.ResourceReadBytes},
		{"delete time", `mutation m() { delete Person where age < 50 }`, graph.Budget{Time: time.Nanosecond}, graph.ResourceTime},
		// The 50 matched nodes fit; their edges (the cascade) do not.
		{"cascade rows", `mutation m() { delete Person where age = 7 }`, graph.Budget{Rows: 100}, graph.ResourceRows},
	} {
		t.Run(c.name, func(t *testing.T) {
			// A fresh handle: the storage budget sees cold reads.
			h, err := graph.Open(ctx, g.Store(), graph.OpenOptions{Actor: "t", Process: graph.NewProcess()})
			if err != nil {
				t.Fatal(err)
			}
			_, err = mutate.Query(ctx, h, c.src, "", mutate.Options{Budget: c.b})
			var be *graph.BudgetExceeded
			if !errors.As(err, &be) || !errors.Is(err, graph.ErrBudgetExceeded) || be.Resource != c.res {
				t.Fatalf("got %v, want a %s refusal", err, c.res)
			}
			if head() != before {
				t.Fatal("a refused mutation committed")
			}
		})
	}
	// Within budget: the same mutation commits and reports its usage.
	res, err := mutate.Query(ctx, g, `mutation m() { delete Person where age = 7 }`, "", mutate.Options{Budget: graph.Budget{Rows: 10_000, Memory: 64 << 20, Time: time.Minute, ReadBytes: 64 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	if res.AffectedNodes != 50 || res.AffectedEdges != 100 || res.Commit == nil || res.ReadUsage.Rows != 150 {
		t.Fatalf("within budget: %+v (read usage %+v)", res, res.ReadUsage)
	}
	if n := countPeople(t, g); n != 4950 {
		t.Fatalf("%d people after deleting 50 of 5000", n)
	}
}
