package gocloud_test

import (
	"context"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
)

// TestMaxRetriesEnvMustBeZeroGocloud pins the one retry layer for the
// bridge's schemes: a non-zero OBJECT_STORE_CLIENT_MAX_RETRIES is refused.
func TestMaxRetriesEnvMustBeZeroGocloud(t *testing.T) {
	t.Setenv("OBJECT_STORE_CLIENT_MAX_RETRIES", "0")
	s, err := backend.Open(context.Background(), memURL(t))
	if err != nil {
		t.Fatalf("0 refused: %v", err)
	}
	s.Close()
	t.Setenv("OBJECT_STORE_CLIENT_MAX_RETRIES", "2")
	for _, u := range []string{memURL(t), "gocloud+s3://b/g"} {
		if _, err := backend.Open(context.Background(), u); backend.KindOf(err) != backend.KindConfiguration {
			t.Fatalf("Open %s with 2 = %v, want Configuration", u, err)
		}
	}
}
