package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/logging"
	"github.com/omnigraph-go/omnigraph/internal/logtest"
)

// missingName is a bucket or container name nobody created.
func missingName() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "omnigraph-missing-" + hex.EncodeToString(b[:])
}

// MissingS3 is an s3:// URL on the configured S3 store whose bucket does
// not exist.
func MissingS3(t testing.TB) string {
	t.Helper()
	require(t, "S3 (AWS_ENDPOINT_URL_S3)", S3Configured())
	return "s3://" + missingName() + "/g?key_child_coexist=false"
}

// MissingGocloudS3 is MissingS3 through the gocloud.dev bridge.
func MissingGocloudS3(t testing.TB) string {
	t.Helper()
	require(t, "S3 (AWS_ENDPOINT_URL_S3)", S3Configured())
	return "gocloud+s3://" + missingName() + "/g"
}

// MissingGCS is a gs:// URL on the configured GCS store whose bucket does
// not exist.
func MissingGCS(t testing.TB) string {
	t.Helper()
	require(t, "GCS (STORAGE_EMULATOR_HOST)", GCSConfigured())
	return "gs://" + missingName() + "/g"
}

// MissingAzure is an az:// URL on the configured Azure store whose
// container does not exist.
func MissingAzure(t testing.TB) string {
	t.Helper()
	require(t, "Azure", AzureConfigured())
	return "az://" + missingName() + "/g"
}

// MissingBucketLogsStoreStatus pins issue 26 item 14 for one adapter: a
// write and a listing against a bucket that does not exist fail as
// configuration errors, the errors carry the status the store answered
// (backend.StoreStatus: 404), and the storage-failure log line says
// failure_class=configuration with that status, not a status derived from
// the class (which used to read 500).
func MissingBucketLogsStoreStatus(t *testing.T, url string) {
	t.Helper()
	ctx := context.Background()
	raw := Open(t, url)
	log, logs := logtest.New(t)
	s := logging.Wrap(raw, log)
	_, perr := s.Put(ctx, "k", []byte("x"))
	_, lerr := s.List(ctx, "", backend.ListOptions{})
	for _, c := range []struct {
		op  string
		err error
	}{{"put", perr}, {"list", lerr}} {
		if backend.KindOf(c.err) != backend.KindConfiguration || backend.StoreStatus(c.err) != 404 {
			t.Errorf("%s on a missing bucket: %v (kind %s, store status %d), want configuration with the store's 404",
				c.op, c.err, backend.KindOf(c.err), backend.StoreStatus(c.err))
		}
	}
	lines := logs.Lines(t)
	if len(lines) != 2 {
		t.Fatalf("%d log lines for two failures:\n%s", len(lines), logs)
	}
	for _, l := range lines {
		if l["failure_class"] != "configuration" || l["status"] != float64(404) {
			t.Errorf("log line %v: want failure_class=configuration status=404 (the store's answer)", l)
		}
	}
}
