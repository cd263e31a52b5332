package manifest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
)

// TestRangeReadsForwardAtFlatCost: Range returns versions lo..hi oldest
// first with one List (of hi-lo+1 keys) and one GET per version, whatever
// the depth below lo; pruned versions come back as their archived commits
// (one more GET, the archive); a range past the head is ErrNotFound.
func TestRangeReadsForwardAtFlatCost(t *testing.T) {
	ctx := context.Background()
	m, c := newStore(t)
	all := ulidChain(t, m, 300)
	c.reset()
	es, err := m.Range(ctx, "main", 1, 251, 255)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 5 || c.lists.Load() != 1 || c.gets.Load() != 5 {
		t.Fatalf("5 versions at depth 250: %d entries, %d lists, %d gets", len(es), c.lists.Load(), c.gets.Load())
	}
	for i, e := range es {
		if e.Version != uint64(251+i) || e.Head != all[250+i].Head || e.Pruned {
			t.Fatalf("entry %d: version %d %s", i, e.Version, e.Head)
		}
	}
	if err := m.Prune(ctx, all[9:20], PruneOptions{Now: time.UnixMicro(1)}); err != nil {
		t.Fatal(err)
	}
	c.reset()
	es, err = m.Range(ctx, "main", 1, 9, 21)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range es {
		v := uint64(9 + i)
		if e.Version != v || e.Head != all[v-1].Head || e.Pruned != (v >= 10 && v <= 20) {
			t.Fatalf("version %d: %+v", v, e)
		}
	}
	if c.lists.Load() != 1 || c.gets.Load() != 3 { // versions 9 and 21, the archive
		t.Fatalf("a range over pruned versions: %d lists, %d gets", c.lists.Load(), c.gets.Load())
	}
	if _, err := m.Range(ctx, "main", 1, 299, 302); !errors.Is(err, backend.ErrNotFound) {
		t.Fatalf("past the head: %v", err)
	}
	if _, err := m.Range(ctx, "main", 1, 0, 3); err == nil {
		t.Fatal("version 0 accepted")
	}
}
