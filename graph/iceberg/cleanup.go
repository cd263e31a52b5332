package iceberg

import (
	"context"
	"fmt"
	"strings"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/manifest"
)

// CleanupHook is what cleanup runs (cleanup.Options.Retained) once it
// knows its retention and before it deletes anything: when the graph has
// Iceberg metadata, it brings every branch's refs up to date and expires
// every snapshot whose table version cleanup will delete, in one metadata
// version per table. A graph never synced is left alone (no metadata is
// created). An error stops the cleanup before any delete.
func CleanupHook(location string) func(ctx context.Context, g *graph.Graph, kept func(path, branch string, version uint64) bool, entries map[string]*manifest.Entry) error {
	return func(ctx context.Context, g *graph.Graph, kept func(path, branch string, version uint64) bool, entries map[string]*manifest.Entry) error {
		ok, err := g.Store().Exists(ctx, strings.TrimSuffix(Prefix, "/"))
		if err != nil {
			return fmt.Errorf("look for Iceberg metadata: %w", err)
		}
		if !ok {
			return nil
		}
		if location == "" {
			return fmt.Errorf("%w: the graph has Iceberg metadata and its location is unknown, so its snapshots cannot be expired before cleanup deletes their files", graph.ErrInvalidInput)
		}
		_, err = Sync(ctx, g, Options{Location: location, Expire: &Retention{Kept: kept, Entries: entries}})
		if err != nil {
			return fmt.Errorf("expire Iceberg snapshots before cleanup: %w", err)
		}
		return nil
	}
}
