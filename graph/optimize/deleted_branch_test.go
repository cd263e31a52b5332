package optimize_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/mutate"
	"github.com/omnigraph-go/omnigraph/graph/optimize"
	"github.com/omnigraph-go/omnigraph/manifest"
)

// deleteOnRead runs hook once, at the first read of a key containing mark.
type deleteOnRead struct {
	backend.StorageAdapter
	mark string
	once sync.Once
	hook func()
}

func (d *deleteOnRead) Get(ctx context.Context, key string) ([]byte, backend.Attrs, error) {
	if strings.Contains(key, d.mark) && d.hook != nil {
		d.once.Do(d.hook)
	}
	return d.StorageAdapter.Get(ctx, key)
}

// TestOptimizeOfABranchDeletedMidRunIsBranchNotFound: the branch optimize
// compacts is deleted (its table forks with it) while optimize reads it.
// The refusal is branch-not-found naming the branch and no table branch or
// version (simulation seeds past CI's range: class "other" with a table
// version not found).
func TestOptimizeOfABranchDeletedMidRunIsBranchNotFound(t *testing.T) {
	ctx := context.Background()
	raw := mem.New()
	store := &deleteOnRead{StorageAdapter: raw, mark: "/tree/f@"}
	g, err := graph.Init(ctx, store, `node Person { handle: String @key }`, graph.InitOptions{Actor: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.CreateBranch(ctx, "f", "main"); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := mutate.Query(ctx, g, fmt.Sprintf(`mutation m() { insert Person { handle: "p%d" } }`, i), "", mutate.Options{Branch: "f"}); err != nil {
			t.Fatal(err)
		}
	}
	other, err := graph.Open(ctx, raw, graph.OpenOptions{Actor: "other", Process: graph.NewProcess()})
	if err != nil {
		t.Fatal(err)
	}
	g2, err := graph.Open(ctx, store, graph.OpenOptions{Actor: "t", Process: graph.NewProcess()})
	if err != nil {
		t.Fatal(err)
	}
	fired := false
	store.hook = func() {
		fired = true
		if err := other.DeleteBranch(ctx, "f"); err != nil {
			t.Errorf("delete f: %v", err)
		}
	}
	_, err = optimize.Run(ctx, g2, optimize.Options{Branch: "f"})
	if !fired {
		t.Fatal("optimize did not read f's table")
	}
	if !errors.Is(err, manifest.ErrBranchNotFound) {
		t.Fatalf("got %v; want branch not found", err)
	}
	if msg := err.Error(); !strings.Contains(msg, `"f"`) || strings.Contains(msg, "f@") || strings.Contains(msg, "version") {
		t.Errorf("message %q: want the branch named, no table branch or version", msg)
	}
}
