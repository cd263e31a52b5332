package mem_test

import (
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/conformance"
)

func TestConformance(t *testing.T) {
	conformance.Run(t, func(t *testing.T) backend.StorageAdapter {
		return mem.New()
	})
}

// The prefix decorator is a separate entry point that reruns the suite: a
// store shared by two namespaces must keep each one's keys to itself.
func TestConformanceWithPrefix(t *testing.T) {
	shared := mem.New()
	n := 0
	conformance.Run(t, func(t *testing.T) backend.StorageAdapter {
		n++
		return backend.WithPrefix(shared, "ns"+string(rune('a'+n%26))+string(rune('a'+n/26))+"/")
	})
}
