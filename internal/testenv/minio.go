package testenv

import (
	"os"
	"testing"
)

// MinIO is the second S3 server of the tests (scripts/emulators.sh starts
// it beside versitygw): the most deployed S3-compatible server, single
// drive. It keeps "k" and "k/child" side by side but hides "k/child" from
// listings while "k" exists, which a check that lists what it wrote would
// miss. Its endpoint and credentials are in OMNIGRAPH_MINIO_ENDPOINT,
// OMNIGRAPH_MINIO_ACCESS_KEY_ID and OMNIGRAPH_MINIO_SECRET_ACCESS_KEY.
const (
	envMinIOEndpoint = "OMNIGRAPH_MINIO_ENDPOINT"
	envMinIOKey      = "OMNIGRAPH_MINIO_ACCESS_KEY_ID"
	envMinIOSecret   = "OMNIGRAPH_MINIO_SECRET_ACCESS_KEY"
)

// MinIOConfigured reports whether the MinIO tests can run.
func MinIOConfigured() bool { return os.Getenv(envMinIOEndpoint) != "" }

// UseMinIO points this test's S3 environment (AWS_ENDPOINT_URL_S3 and the
// credentials) at MinIO, for the rest of the test (t.Setenv: the test may
// not run in parallel), and returns the test bucket, creating it if needed.
func UseMinIO(t *testing.T) string {
	t.Helper()
	require(t, "MinIO ("+envMinIOEndpoint+")", MinIOConfigured())
	t.Setenv("AWS_ENDPOINT_URL_S3", os.Getenv(envMinIOEndpoint))
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_ACCESS_KEY_ID", os.Getenv(envMinIOKey))
	t.Setenv("AWS_SECRET_ACCESS_KEY", os.Getenv(envMinIOSecret))
	t.Setenv("AWS_SESSION_TOKEN", "")
	bucket := defaultBucket
	if err := once("minio/"+bucket, func() error { return createS3Bucket(bucket) }); err != nil {
		t.Fatalf("preparing the MinIO bucket: %v", err)
	}
	return bucket
}

// MinIO points this test at MinIO (UseMinIO) and returns a fresh
// s3://bucket/prefix URL on it, with params ("" or e.g.
// "?key_child_coexist=false"); the prefix is deleted when the test ends.
func MinIO(t *testing.T, params string) string {
	t.Helper()
	return cleaned(t, "s3://"+UseMinIO(t)+"/"+Prefix(t)+params)
}
