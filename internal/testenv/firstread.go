package testenv

import (
	"context"
	"strings"
	"sync"

	"github.com/omnigraph-go/omnigraph/backend"
)

// FirstRead wraps a store for a test that must act at one exact point of
// an operation: Hook runs once, at the first Get of a key containing Mark
// (set Hook after any set-up that reads such keys).
type FirstRead struct {
	backend.StorageAdapter
	Mark string
	Hook func()
	once sync.Once
}

// Get runs the hook at the first read of a marked key, then reads.
func (f *FirstRead) Get(ctx context.Context, key string) ([]byte, backend.Attrs, error) {
	if strings.Contains(key, f.Mark) && f.Hook != nil {
		f.once.Do(f.Hook)
	}
	return f.StorageAdapter.Get(ctx, key)
}
