package boltstore_test

import (
	"path/filepath"
	"testing"

	_ "example.com/omnigraph-bolt" // registers bolt://
	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/conformance"
)

func open(t *testing.T) backend.StorageAdapter {
	s, err := backend.Open(t.Context(), "bolt://"+filepath.ToSlash(filepath.Join(t.TempDir(), "store.db")))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestConformance is the whole proof: every rule of the storage contract,
// each on a fresh bbolt file opened through the registered scheme. A file
// has no credentials to get wrong; the store that refuses every call is a
// closed one.
func TestConformance(t *testing.T) {
	conformance.Run(t, func(t *testing.T) backend.StorageAdapter {
		s := open(t)
		t.Cleanup(func() { s.Close() })
		return s
	}, conformance.WithDeny(func(t *testing.T) backend.StorageAdapter {
		s := open(t)
		s.Close()
		return s
	}))
}
