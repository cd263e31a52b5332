package s3_test

import (
	"context"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/s3"
)

// TestMaxRetriesEnvMustBeZeroS3 pins the one retry layer: a non-zero
// OBJECT_STORE_CLIENT_MAX_RETRIES is refused by the URL open, the
// environment config and New; unset or 0 is accepted.
func TestMaxRetriesEnvMustBeZeroS3(t *testing.T) {
	clearAWSEnv(t)
	for _, v := range []string{"", "0"} {
		t.Setenv("OBJECT_STORE_CLIENT_MAX_RETRIES", v)
		if _, err := s3.New(context.Background(), s3.Config{Bucket: "b", Region: "us-east-1"}); err != nil {
			t.Fatalf("%q refused: %v", v, err)
		}
	}
	for _, v := range []string{"1", "3", "-1"} {
		t.Setenv("OBJECT_STORE_CLIENT_MAX_RETRIES", v)
		if _, err := s3.ConfigFromEnv("b"); backend.KindOf(err) != backend.KindConfiguration {
			t.Fatalf("ConfigFromEnv with %q = %v, want Configuration", v, err)
		}
		if _, err := s3.New(context.Background(), s3.Config{Bucket: "b", Region: "us-east-1"}); backend.KindOf(err) != backend.KindConfiguration {
			t.Fatalf("New with %q = %v, want Configuration", v, err)
		}
		if _, err := backend.Open(context.Background(), "s3://b/g"); backend.KindOf(err) != backend.KindConfiguration {
			t.Fatalf("Open with %q = %v, want Configuration", v, err)
		}
	}
}
