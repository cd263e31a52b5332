// Package testenv gives tests a fresh, empty namespace on each cloud
// emulator (or a real store the developer configured).
//
// Each helper returns a storage URL with a unique prefix, creating the bucket
// or container on first use and deleting the prefix when the test ends:
//
//	url := testenv.S3(t)    // s3://omnigraph-test/t-TestX-1a2b3c4d?key_child_coexist=false
//	store := testenv.Open(t, url)
//
// When the store is not configured, the test is skipped with the command
// that starts the emulators; with CI set, it fails instead, because a cloud
// test must never skip in CI.
//
// Configuration (printed by `scripts/emulators.sh env`):
//   - S3: AWS_ENDPOINT_URL_S3 (or AWS_ENDPOINT_URL) plus AWS credentials;
//     OMNIGRAPH_TEST_S3_BUCKET names the bucket (default omnigraph-test).
//   - GCS: STORAGE_EMULATOR_HOST; OMNIGRAPH_TEST_GCS_BUCKET (default omnigraph-test).
//   - Azure: OMNIGRAPH_AZURE_ENDPOINT plus AZURE_STORAGE_ACCOUNT and a key;
//     OMNIGRAPH_TEST_AZURE_CONTAINER (default omnigraph-test).
//
// Setting a bucket variable without an endpoint runs the tests against the
// real cloud store; nothing runs against a real store by accident.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/azure"
	"github.com/omnigraph-go/omnigraph/backend/gcs"
	"github.com/omnigraph-go/omnigraph/backend/s3"
)

// StartHint is the command that makes the cloud tests run locally.
const StartHint = `eval "$(scripts/emulators.sh start && scripts/emulators.sh env)"`

const defaultBucket = "omnigraph-test"

// require skips (or, in CI, fails) the test when a store is not configured.
func require(t testing.TB, what string, ok bool) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is not configured, and cloud tests must not skip in CI: start the emulators (%s)", what, StartHint)
	}
	t.Skipf("%s is not configured; start the emulators: %s", what, StartHint)
}

func env(name, def string) string {
	if v := strings.TrimSpace(os.Getenv(name)); v != "" {
		return v
	}
	return def
}

var unsafe = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// Prefix returns a unique key prefix for this test: "t-<test name>-<random>".
func Prefix(t testing.TB) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := unsafe.ReplaceAllString(t.Name(), "-")
	if len(name) > 60 {
		name = name[:60]
	}
	return "t-" + strings.Trim(name, "-") + "-" + hex.EncodeToString(b[:])
}

// Buckets are created once per process and test binary.
var (
	readyMu sync.Mutex
	ready   = map[string]error{}
)

func once(key string, create func() error) error {
	readyMu.Lock()
	defer readyMu.Unlock()
	if err, done := ready[key]; done {
		return err
	}
	err := create()
	ready[key] = err
	return err
}

func setupCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), time.Minute)
}

// S3Configured reports whether S3 tests can run.
func S3Configured() bool {
	return os.Getenv("AWS_ENDPOINT_URL_S3") != "" || os.Getenv("AWS_ENDPOINT_URL") != "" || os.Getenv("OMNIGRAPH_TEST_S3_BUCKET") != ""
}

// S3Bucket returns the test bucket, creating it if needed.
func S3Bucket(t testing.TB) string {
	t.Helper()
	require(t, "S3 (AWS_ENDPOINT_URL_S3)", S3Configured())
	bucket := env("OMNIGRAPH_TEST_S3_BUCKET", defaultBucket)
	if err := once("s3/"+bucket, func() error { return createS3Bucket(bucket) }); err != nil {
		t.Fatalf("preparing S3 bucket: %v", err)
	}
	return bucket
}

// createS3Bucket creates bucket on the S3 store the environment names.
func createS3Bucket(bucket string) error {
	cfg, err := s3.ConfigFromEnv(bucket)
	if err != nil {
		return err
	}
	st, err := s3.New(context.Background(), cfg)
	if err != nil {
		return err
	}
	ctx, cancel := setupCtx()
	defer cancel()
	return st.CreateBucket(ctx)
}

// S3 returns a fresh s3://bucket/prefix URL; the prefix is deleted when the
// test ends. The emulator (versitygw's posix backend) keeps objects as
// files and cannot hold "k" beside "k/child", so the URL says so
// (?key_child_coexist=false); the adapter's default is what AWS S3 does.
func S3(t testing.TB) string {
	t.Helper()
	return cleaned(t, "s3://"+S3Bucket(t)+"/"+Prefix(t)+"?key_child_coexist=false")
}

// GocloudS3 is S3 through the gocloud.dev bridge: gocloud+s3://bucket/prefix.
func GocloudS3(t testing.TB) string {
	t.Helper()
	bucket, prefix := S3Bucket(t), Prefix(t)
	cleaned(t, "s3://"+bucket+"/"+prefix) // same keys, cleaned through the native adapter
	return "gocloud+s3://" + bucket + "/" + prefix
}

// GCSConfigured reports whether GCS tests can run.
func GCSConfigured() bool {
	return os.Getenv("STORAGE_EMULATOR_HOST") != "" || os.Getenv("OMNIGRAPH_TEST_GCS_BUCKET") != ""
}

// GCSBucket returns the test bucket, creating it if needed.
func GCSBucket(t testing.TB) string {
	t.Helper()
	require(t, "GCS (STORAGE_EMULATOR_HOST)", GCSConfigured())
	bucket := env("OMNIGRAPH_TEST_GCS_BUCKET", defaultBucket)
	err := once("gcs/"+bucket, func() error {
		st, err := gcs.New(context.Background(), gcs.Config{Bucket: bucket})
		if err != nil {
			return err
		}
		defer st.Close()
		ctx, cancel := setupCtx()
		defer cancel()
		return st.CreateBucket(ctx, env("GOOGLE_CLOUD_PROJECT", "omnigraph-test"))
	})
	if err != nil {
		t.Fatalf("preparing GCS bucket: %v", err)
	}
	return bucket
}

// GCS returns a fresh gs://bucket/prefix URL.
func GCS(t testing.TB) string {
	t.Helper()
	return cleaned(t, "gs://"+GCSBucket(t)+"/"+Prefix(t))
}

// AzureConfigured reports whether Azure tests can run.
func AzureConfigured() bool {
	return os.Getenv(azure.EnvEndpoint) != "" || os.Getenv("OMNIGRAPH_TEST_AZURE_CONTAINER") != ""
}

// AzureContainer returns the test container, creating it if needed.
func AzureContainer(t testing.TB) string {
	t.Helper()
	require(t, "Azure ("+azure.EnvEndpoint+")", AzureConfigured())
	name := env("OMNIGRAPH_TEST_AZURE_CONTAINER", defaultBucket)
	err := once("az/"+name, func() error {
		cfg, err := azure.ConfigFromEnv(name)
		if err != nil {
			return err
		}
		st, err := azure.New(context.Background(), cfg)
		if err != nil {
			return err
		}
		ctx, cancel := setupCtx()
		defer cancel()
		return st.CreateContainer(ctx)
	})
	if err != nil {
		t.Fatalf("preparing Azure container: %v", err)
	}
	return name
}

// Azure returns a fresh az://container/prefix URL.
func Azure(t testing.TB) string {
	t.Helper()
	return cleaned(t, "az://"+AzureContainer(t)+"/"+Prefix(t))
}

// cleaned registers deletion of everything under url when the test ends.
func cleaned(t testing.TB, url string) string {
	t.Cleanup(func() {
		ctx, cancel := setupCtx()
		defer cancel()
		s, err := backend.Open(ctx, url)
		if err != nil {
			return
		}
		defer s.Close()
		if err := s.DeletePrefix(ctx, ""); err != nil {
			t.Logf("cleaning up test prefix: %v", err)
		}
	})
	return url
}

// Open opens url with backend.Open and closes the store when the test ends.
// The URL's scheme must be registered (import the backend, or backend/all).
func Open(t testing.TB, url string) backend.StorageAdapter {
	t.Helper()
	ctx, cancel := setupCtx()
	defer cancel()
	s, err := backend.Open(ctx, url)
	if err != nil {
		t.Fatalf("open %s: %v", backend.Redact(url), err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}
