package testenv

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
)

// CopyStore copies every object of src to dst, parallel at a time (a
// graph built fast on a local or memory store, then measured on an
// emulator), and returns how many it copied.
func CopyStore(t testing.TB, src, dst backend.StorageAdapter, parallel int) int {
	t.Helper()
	ctx := context.Background()
	objs, err := backend.ListAll(ctx, src, "")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(parallel, 1))
	errs := make(chan error, len(objs))
	for _, o := range objs {
		wg.Add(1)
		sem <- struct{}{}
		go func(key string) {
			defer wg.Done()
			defer func() { <-sem }()
			b, _, err := src.Get(ctx, key)
			if err == nil {
				_, err = dst.Put(ctx, key, b)
			}
			if err != nil {
				errs <- fmt.Errorf("copy %s: %w", key, err)
			}
		}(o.Key)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return len(objs)
}
