package mutate_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/load"
	"github.com/omnigraph-go/omnigraph/graph/mutate"
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

// TestMutationOfABranchDeletedMidMutationIsBranchNotFound: the target
// branch is deleted (its table versions with it) while a mutation reads
// it. The mutation is refused as branch-not-found, naming the branch and
// no table branch or version, and the branch stays deleted (the load's
// finding of sim seed 145, for mutations).
func TestMutationOfABranchDeletedMidMutationIsBranchNotFound(t *testing.T) {
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
	if _, err := load.Run(ctx, g, strings.NewReader(`{"type":"Person","data":{"handle":"ada"}}`+"\n"), load.Options{Branch: "f", Mode: load.Merge}); err != nil {
		t.Fatal(err)
	}
	// another process deletes f when the mutation first reads f's table
	other, err := graph.Open(ctx, raw, graph.OpenOptions{Actor: "other", Process: graph.NewProcess()})
	if err != nil {
		t.Fatal(err)
	}
	// a fresh handle: its first read of f's table goes to storage
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
	_, err = mutate.Query(ctx, g2, `mutation m() { delete Person where handle = "ada" }`, "", mutate.Options{Branch: "f"})
	if !fired {
		t.Fatal("the mutation did not read f's table")
	}
	if !errors.Is(err, manifest.ErrBranchNotFound) {
		t.Fatalf("got %v; want branch not found", err)
	}
	if msg := err.Error(); !strings.Contains(msg, `"f"`) || strings.Contains(msg, "f@") || strings.Contains(msg, "version") {
		t.Errorf("message %q: want the branch named, no table branch or version", msg)
	}
	if _, err := g.Snapshot(ctx, "f"); !errors.Is(err, manifest.ErrBranchNotFound) {
		t.Errorf("f after the mutation: %v; want it deleted", err)
	}
}
