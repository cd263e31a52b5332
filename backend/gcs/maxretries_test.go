package gcs_test

import (
	"context"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/gcs"
)

// TestMaxRetriesEnvMustBeZeroGCS pins the one retry layer: a non-zero
// OBJECT_STORE_CLIENT_MAX_RETRIES is refused; unset or 0 is accepted.
func TestMaxRetriesEnvMustBeZeroGCS(t *testing.T) {
	t.Setenv("STORAGE_EMULATOR_HOST", "127.0.0.1:1") // no credentials lookup
	for _, v := range []string{"", "0"} {
		t.Setenv("OBJECT_STORE_CLIENT_MAX_RETRIES", v)
		st, err := gcs.New(context.Background(), gcs.Config{Bucket: "b"})
		if err != nil {
			t.Fatalf("%q refused: %v", v, err)
		}
		st.Close()
	}
	for _, v := range []string{"1", "10"} {
		t.Setenv("OBJECT_STORE_CLIENT_MAX_RETRIES", v)
		if _, err := gcs.New(context.Background(), gcs.Config{Bucket: "b"}); backend.KindOf(err) != backend.KindConfiguration {
			t.Fatalf("New with %q = %v, want Configuration", v, err)
		}
		if _, err := backend.Open(context.Background(), "gs://b/g"); backend.KindOf(err) != backend.KindConfiguration {
			t.Fatalf("Open with %q = %v, want Configuration", v, err)
		}
	}
}
