package azure

import (
	"errors"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
)

// TestOversizedWriteRefused: a body above the one-request limit is refused
// as Permanent, with a message that says why, before any request (the
// store here has no client: a request would panic).
func TestOversizedWriteRefused(t *testing.T) {
	old := maxPut
	maxPut = 8
	t.Cleanup(func() { maxPut = old })
	s := &Store{}
	for name, write := range map[string]func() error{
		"Put":         func() error { _, err := s.Put(t.Context(), "k", []byte("nine bytes")); return err },
		"PutIfAbsent": func() error { _, err := s.PutIfAbsent(t.Context(), "k", []byte("nine bytes")); return err },
		"PutIfMatch":  func() error { _, err := s.PutIfMatch(t.Context(), "k", []byte("nine bytes"), `"0x1"`); return err },
	} {
		err := write()
		if !errors.Is(err, backend.ErrPermanent) || !strings.Contains(err.Error(), "at most 8 bytes in one Put Blob request") {
			t.Fatalf("%s of 10 bytes over an 8-byte limit = %v, want a Permanent error naming the limit", name, err)
		}
	}
}
