package iceberg

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/manifest"
)

// CleanupHook is what cleanup runs (cleanup.Options.Retained) once it
// knows its retention and before it deletes anything: when the graph has
// Iceberg metadata, it brings every branch's refs up to date and expires
// every snapshot whose table version cleanup will delete, in one metadata
// version per table, then deletes the Iceberg files no retained snapshot
// names (Collect) and reports them. A graph never synced is left alone (no
// metadata is created). An error stops the cleanup before any delete of
// the graph's own files.
func CleanupHook(location string) func(ctx context.Context, g *graph.Graph, kept func(path, branch string, version uint64) bool, entries map[string]*manifest.Entry, grace time.Duration, now time.Time) (int, int64, error) {
	return func(ctx context.Context, g *graph.Graph, kept func(path, branch string, version uint64) bool, entries map[string]*manifest.Entry, grace time.Duration, now time.Time) (int, int64, error) {
		ok, err := g.Store().Exists(ctx, strings.TrimSuffix(Prefix, "/"))
		if err != nil {
			return 0, 0, fmt.Errorf("look for Iceberg metadata: %w", err)
		}
		if !ok {
			return 0, 0, nil
		}
		if location == "" {
			return 0, 0, fmt.Errorf("%w: the graph has Iceberg metadata and its location is unknown, so its snapshots cannot be expired before cleanup deletes their files", graph.ErrInvalidInput)
		}
		_, err = Sync(ctx, g, Options{Location: location, Expire: &Retention{Kept: kept, Entries: entries}})
		if err != nil {
			return 0, 0, fmt.Errorf("expire Iceberg snapshots before cleanup: %w", err)
		}
		got, err := Collect(ctx, g.Store(), CollectOptions{Grace: grace, Now: now})
		return got.Objects, got.Bytes, err
	}
}
