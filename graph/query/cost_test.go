package query

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend/counter"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/graph"
)

// TestWarmReadAfterOneRowWrite pins the immutable-file cache rule at the
// graph level: after a one-row commit on the same handle, an aggregate over
// the written table costs at most 3 requests (the freshness probe and the
// new fragment), on real table commits, at history depth 10 and 200. The
// answer includes the new row.
func TestWarmReadAfterOneRowWrite(t *testing.T) {
	const count = `query q() { match { $p: Person } return { count($p) as n } }`
	for _, depth := range []int{10, 200} {
		t.Run(fmt.Sprint(depth), func(t *testing.T) {
			cnt := counter.New(mem.New())
			g := newSocialGraph(t, cnt)
			base := rowCount(t, g, count)
			for i := 0; i < depth; i++ {
				qAppend(t, g, "main", fmt.Sprintf(`{"type":"Person","data":{"handle":"h%05d","name":"n","age":%d}}`, i, i%90))
			}
			if got := rowCount(t, g, count); got != base+depth {
				t.Fatalf("count %d, want %d", got, base+depth)
			}
			qAppend(t, g, "main", `{"type":"Person","data":{"handle":"last","name":"n","age":1}}`)
			cnt.Reset()
			got := rowCount(t, g, count)
			c := cnt.Snapshot()
			if got != base+depth+1 {
				t.Fatalf("count after the write %d, want %d", got, base+depth+1)
			}
			if c.Total > 3 {
				t.Fatalf("warm read after a one-row write at depth %d: %s, budget 3", depth, c)
			}
			t.Logf("depth %d: warm read after write %s", depth, c)
		})
	}
}

func rowCount(t *testing.T, g *graph.Graph, src string) int {
	t.Helper()
	r, err := Head(context.Background(), g, "main", src, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(rowsText(r))
	if err != nil {
		t.Fatalf("count result %q: %v", rowsText(r), err)
	}
	return n
}
