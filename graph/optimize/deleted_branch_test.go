package optimize_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/load"
	"github.com/omnigraph-go/omnigraph/graph/mutate"
	"github.com/omnigraph-go/omnigraph/graph/optimize"
	"github.com/omnigraph-go/omnigraph/internal/testenv"
	"github.com/omnigraph-go/omnigraph/manifest"
)

// TestWritersOfABranchDeletedMidRunSayBranchNotFound: the branch a writer
// works on is deleted by another process (its table forks with it) at the
// writer's first read of the branch's tables. Every writer is refused as
// branch-not-found, naming the branch and no table branch or version, and
// the branch stays deleted: a load (simulation seed 145: "table: not
// found: version 16 of branch "b1@2""), a mutation, and optimize (seeds
// past CI's range, issue 26: class "other").
func TestWritersOfABranchDeletedMidRunSayBranchNotFound(t *testing.T) {
	ctx := context.Background()
	writers := []struct {
		name string
		run  func(g *graph.Graph) error
	}{
		{"load", func(g *graph.Graph) error {
			_, err := load.Run(ctx, g, strings.NewReader(`{"type":"Person","data":{"handle":"bob"}}`+"\n"), load.Options{Branch: "f", Mode: load.Append})
			return err
		}},
		{"mutation", func(g *graph.Graph) error {
			_, err := mutate.Query(ctx, g, `mutation m() { delete Person where handle = "p0" }`, "", mutate.Options{Branch: "f"})
			return err
		}},
		{"optimize", func(g *graph.Graph) error {
			_, err := optimize.Run(ctx, g, optimize.Options{Branch: "f"})
			return err
		}},
	}
	for _, w := range writers {
		t.Run(w.name, func(t *testing.T) {
			raw := mem.New()
			store := &testenv.FirstRead{StorageAdapter: raw, Mark: "/tree/f@"}
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
			// A fresh handle: its first read of f's tables goes to storage.
			g2, err := graph.Open(ctx, store, graph.OpenOptions{Actor: "t", Process: graph.NewProcess()})
			if err != nil {
				t.Fatal(err)
			}
			fired := false
			store.Hook = func() {
				fired = true
				if err := other.DeleteBranch(ctx, "f"); err != nil {
					t.Errorf("delete f: %v", err)
				}
			}
			err = w.run(g2)
			if !fired {
				t.Fatalf("the %s did not read f's tables", w.name)
			}
			if !errors.Is(err, manifest.ErrBranchNotFound) {
				t.Fatalf("got %v; want branch not found", err)
			}
			if msg := err.Error(); !strings.Contains(msg, `"f"`) || strings.Contains(msg, "f@") || strings.Contains(msg, "version") {
				t.Errorf("message %q: want the branch named, no table branch or version", msg)
			}
			if _, err := g.Snapshot(ctx, "f"); !errors.Is(err, manifest.ErrBranchNotFound) {
				t.Errorf("f after the %s: %v; want it deleted", w.name, err)
			}
		})
	}
}
