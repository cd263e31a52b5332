package local_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/local"
	"github.com/omnigraph-go/omnigraph/conformance"
)

func newStore(t *testing.T) backend.StorageAdapter {
	s, err := local.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// withResidue lets the suite's ListHidesTempResidue rule plant the
// name#<digits> files a crash between staging and publishing leaves.
type withResidue struct {
	*local.Store
	root string
}

func (w withResidue) PlantResidue(ctx context.Context, key string) error {
	p := filepath.Join(w.root, filepath.FromSlash(key)+"#123")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, []byte("residue"), 0o644)
}

func TestConformance(t *testing.T) {
	conformance.Run(t, func(t *testing.T) backend.StorageAdapter {
		dir := t.TempDir()
		s, err := local.New(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return withResidue{s, dir}
	})
}
