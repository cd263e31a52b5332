package gcs_test

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/gcs"
	"github.com/omnigraph-go/omnigraph/conformance"
	"github.com/omnigraph-go/omnigraph/internal/testenv"
)

func TestConformanceGCS(t *testing.T) {
	testenv.GCSBucket(t)
	conformance.Run(t, func(t *testing.T) backend.StorageAdapter {
		return testenv.Open(t, testenv.GCS(t))
	}, conformance.WithDeny(deniedGCS))
}

// deniedGCS is the test bucket behind a proxy that answers every request
// 403, as GCS does for credentials without access: fake-gcs-server checks
// no credentials itself.
func deniedGCS(t *testing.T) backend.StorageAdapter {
	bucket := testenv.GCSBucket(t)
	target := os.Getenv("STORAGE_EMULATOR_HOST")
	if !strings.Contains(target, "://") {
		target = "http://" + target
	}
	p := testenv.NewProxy(t, target)
	p.Arm(testenv.Rule{Times: 1 << 30, Status: http.StatusForbidden, Header: http.Header{"Content-Type": {"application/json"}},
		Body: `{"error":{"code":403,"message":"the caller does not have storage.objects access to the bucket"}}`})
	t.Setenv("STORAGE_EMULATOR_HOST", p.HostPort)
	st, err := gcs.New(t.Context(), gcs.Config{Bucket: bucket})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return backend.WithPrefix(st, testenv.Prefix(t)+"/")
}

// TestLostAnswerInjectedGCS: see testenv.LostAnswerInjected.
func TestLostAnswerInjectedGCS(t *testing.T) {
	testenv.LostAnswerInjected(t, testenv.Open(t, testenv.GCS(t)))
}

// TestWireGCS runs the on-the-wire retry and lost-answer rules through a
// misbehaving proxy in front of fake-gcs-server.
func TestWireGCS(t *testing.T) {
	testenv.RunWire(t, testenv.Wire{
		Open: func(t *testing.T) (backend.StorageAdapter, *testenv.Proxy) {
			bucket := testenv.GCSBucket(t)
			emu := os.Getenv("STORAGE_EMULATOR_HOST")
			target := emu
			if !strings.Contains(target, "://") {
				target = "http://" + target
			}
			p := testenv.NewProxy(t, target)
			p.Host = strings.TrimPrefix(strings.TrimPrefix(target, "http://"), "https://")
			t.Setenv("STORAGE_EMULATOR_HOST", p.HostPort)
			st, err := gcs.New(t.Context(), gcs.Config{Bucket: bucket})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			prefix := testenv.Prefix(t) + "/"
			t.Cleanup(func() { _ = st.DeletePrefix(context.Background(), prefix) })
			return backend.WithPrefix(st, prefix), p
		},
		// Uploads are one multipart POST each (ChunkSize 0).
		IsWrite: func(r testenv.Request) bool {
			return r.Method == http.MethodPost && strings.HasPrefix(r.Path, "/upload/")
		},
		IsRead:   testenv.IsMethod(http.MethodGet),
		Throttle: testenv.Rule{Status: http.StatusTooManyRequests, Header: http.Header{"Content-Type": {"application/json"}}, Body: `{"error":{"code":429,"message":"rate limit exceeded"}}`},
	})
}

// TestReissueWireGCS runs the manifest re-issue rule through a misbehaving
// proxy in front of fake-gcs-server (see testenv.RunReissue).
func TestReissueWireGCS(t *testing.T) {
	testenv.RunReissue(t, testenv.ReissueWire{
		Open: func(t *testing.T, timeout time.Duration) (backend.StorageAdapter, *testenv.Proxy) {
			bucket := testenv.GCSBucket(t)
			target := os.Getenv("STORAGE_EMULATOR_HOST")
			if !strings.Contains(target, "://") {
				target = "http://" + target
			}
			p := testenv.NewProxy(t, target)
			p.Host = strings.TrimPrefix(strings.TrimPrefix(target, "http://"), "https://")
			t.Setenv("STORAGE_EMULATOR_HOST", p.HostPort)
			st, err := gcs.New(t.Context(), gcs.Config{Bucket: bucket, RequestTimeout: timeout})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			prefix := testenv.Prefix(t) + "/"
			t.Cleanup(func() { _ = st.DeletePrefix(context.Background(), prefix) })
			return backend.WithPrefix(st, prefix), p
		},
		IsWrite: func(r testenv.Request) bool {
			return r.Method == http.MethodPost && strings.HasPrefix(r.Path, "/upload/")
		},
		IsRead:   testenv.IsMethod(http.MethodGet),
		Throttle: testenv.Rule{Status: http.StatusTooManyRequests, Header: http.Header{"Content-Type": {"application/json"}}, Body: `{"error":{"code":429,"message":"rate limit exceeded"}}`},
	})
}

// TestMissingBucketLogsStoreStatusGCS: a missing bucket is a configuration
// failure logged with the store's own status (404), not 500.
func TestMissingBucketLogsStoreStatusGCS(t *testing.T) {
	testenv.MissingBucketLogsStoreStatus(t, testenv.MissingGCS(t))
}
