package s3_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/s3"
	"github.com/omnigraph-go/omnigraph/conformance"
	"github.com/omnigraph-go/omnigraph/internal/testenv"
)

func TestConformanceS3(t *testing.T) {
	testenv.S3Bucket(t) // skip (or fail in CI) before any subtest when unconfigured
	conformance.Run(t, func(t *testing.T) backend.StorageAdapter {
		return testenv.Open(t, testenv.S3(t))
	}, conformance.WithDeny(deniedS3))
}

// deniedS3 is the test bucket opened with credentials versitygw refuses.
// versitygw looks a key up before it checks the caller on HEAD (a HEAD of
// any key with wrong credentials answers 404), where AWS S3 answers 403
// with no body: a proxy gives HEAD requests AWS's answer, and every other
// request reaches versitygw with the wrong credentials.
func deniedS3(t *testing.T) backend.StorageAdapter {
	return deniedS3Store(t, func(t *testing.T) backend.StorageAdapter {
		cfg, err := s3.ConfigFromEnv(testenv.S3Bucket(t))
		if err != nil {
			t.Fatal(err)
		}
		st, err := s3.New(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return backend.WithPrefix(st, testenv.Prefix(t)+"/")
	})
}

// deniedS3Store sets wrong credentials and a proxy that answers HEAD 403,
// then opens the store with open.
func deniedS3Store(t *testing.T, open func(t *testing.T) backend.StorageAdapter) backend.StorageAdapter {
	testenv.S3Bucket(t)
	endpoint := os.Getenv("AWS_ENDPOINT_URL_S3")
	if endpoint == "" {
		endpoint = os.Getenv("AWS_ENDPOINT_URL")
	}
	p := testenv.NewProxy(t, endpoint)
	p.Arm(testenv.Rule{Match: testenv.IsMethod(http.MethodHead), Times: 1 << 30, Status: http.StatusForbidden})
	t.Setenv("AWS_ENDPOINT_URL_S3", p.URL)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDWRONGWRONGWRONG1")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret-wrong-secret-wrong-secret!!")
	t.Setenv("AWS_SESSION_TOKEN", "")
	return open(t)
}

// TestLargeConditionalAboveThresholdS3: the conformance suite's large
// conditional writes are above this adapter's multipart threshold, so on
// S3 they test the condition on CompleteMultipartUpload.
func TestLargeConditionalAboveThresholdS3(t *testing.T) {
	if conformance.DefaultLargeConditionalSize <= s3.DefaultMultipartThreshold {
		t.Fatalf("conformance.DefaultLargeConditionalSize %d is not above s3.DefaultMultipartThreshold %d", conformance.DefaultLargeConditionalSize, s3.DefaultMultipartThreshold)
	}
}

// TestLostAnswerInjectedS3: under the fault injector, a PutIfAbsent whose
// answer is lost after it took effect on versitygw is Unknown, sent once,
// and leaves one object version.
func TestLostAnswerInjectedS3(t *testing.T) {
	testenv.LostAnswerInjected(t, testenv.Open(t, testenv.S3(t)))
}

// TestWireS3 runs the on-the-wire retry and lost-answer rules through a
// misbehaving proxy in front of versitygw.
func TestWireS3(t *testing.T) {
	testenv.RunWire(t, testenv.Wire{
		Open: func(t *testing.T) (backend.StorageAdapter, *testenv.Proxy) {
			bucket := testenv.S3Bucket(t)
			cfg, err := s3.ConfigFromEnv(bucket)
			if err != nil {
				t.Fatal(err)
			}
			p := testenv.NewProxy(t, cfg.Endpoint)
			cfg.Endpoint = p.URL
			st, err := s3.New(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			prefix := testenv.Prefix(t) + "/"
			t.Cleanup(func() { _ = st.DeletePrefix(context.Background(), prefix) })
			return backend.WithPrefix(st, prefix), p
		},
		IsWrite: testenv.IsMethod(http.MethodPut),
		IsRead:  testenv.IsMethod(http.MethodGet),
		Throttle: testenv.Rule{Status: http.StatusServiceUnavailable, Header: http.Header{"Content-Type": {"application/xml"}},
			Body: `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`},
	})
}

// TestReissueWireS3 runs the manifest re-issue rule through a misbehaving
// proxy in front of versitygw (see testenv.RunReissue).
func TestReissueWireS3(t *testing.T) {
	testenv.RunReissue(t, testenv.ReissueWire{
		Open: func(t *testing.T, timeout time.Duration) (backend.StorageAdapter, *testenv.Proxy) {
			bucket := testenv.S3Bucket(t)
			cfg, err := s3.ConfigFromEnv(bucket)
			if err != nil {
				t.Fatal(err)
			}
			p := testenv.NewProxy(t, cfg.Endpoint)
			cfg.Endpoint, cfg.RequestTimeout = p.URL, timeout
			st, err := s3.New(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			prefix := testenv.Prefix(t) + "/"
			t.Cleanup(func() { _ = st.DeletePrefix(context.Background(), prefix) })
			return backend.WithPrefix(st, prefix), p
		},
		IsWrite:  testenv.IsMethod(http.MethodPut),
		IsRead:   testenv.IsMethod(http.MethodGet),
		Throttle: s3Throttle,
	})
}

var s3Throttle = testenv.Rule{Status: http.StatusServiceUnavailable, Header: http.Header{"Content-Type": {"application/xml"}},
	Body: `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`}

// TestMultipartConditionalS3: above the multipart threshold, the condition
// rides on CompleteMultipartUpload: a second create loses and leaves the
// first bytes; a stale If-Match loses too.
func TestMultipartConditionalS3(t *testing.T) {
	bucket := testenv.S3Bucket(t)
	cfg, err := s3.ConfigFromEnv(bucket)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MultipartThreshold = 5 << 20
	st, err := s3.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	prefix := testenv.Prefix(t) + "/"
	t.Cleanup(func() { _ = st.DeletePrefix(context.Background(), prefix) })
	ctx := t.Context()
	big := func(b byte) []byte { return []byte(strings.Repeat(string(b), 9<<20)) }
	a, err := st.PutIfAbsent(ctx, prefix+"big", big('a'))
	if err != nil {
		t.Fatalf("multipart PutIfAbsent: %v", err)
	}
	if !strings.Contains(a.Version, "-") {
		t.Fatalf("version %q is not a multipart ETag: the multipart path did not run", a.Version)
	}
	if _, err := st.PutIfAbsent(ctx, prefix+"big", big('b')); !errors.Is(err, backend.ErrPrecondition) {
		t.Fatalf("second multipart PutIfAbsent = %v, want Precondition", err)
	}
	b, err := st.PutIfMatch(ctx, prefix+"big", big('c'), a.Version)
	if err != nil {
		t.Fatalf("multipart PutIfMatch with the current ETag: %v", err)
	}
	if _, err := st.PutIfMatch(ctx, prefix+"big", big('d'), a.Version); !errors.Is(err, backend.ErrPrecondition) {
		t.Fatalf("multipart PutIfMatch with a stale ETag = %v, want Precondition", err)
	}
	got, attrs, err := st.Get(ctx, prefix+"big")
	if err != nil || got[0] != 'c' || attrs.Version != b.Version {
		t.Fatalf("Get after multipart writes: %q..., %+v, %v", got[:1], attrs, err)
	}
}

// TestErrorsCarryNoSecretsS3: a signature failure (wrong secret) is a
// Configuration error whose text holds neither key.
func TestErrorsCarryNoSecretsS3(t *testing.T) {
	bucket := testenv.S3Bucket(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDSECRETIDENTIFIER")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "very-secret-value-123")
	cfg, err := s3.ConfigFromEnv(bucket)
	if err != nil {
		t.Fatal(err)
	}
	st, err := s3.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.Put(t.Context(), "x", []byte("x"))
	if backend.KindOf(err) != backend.KindConfiguration {
		t.Fatalf("bad credentials: %v (kind %s), want Configuration", err, backend.KindOf(err))
	}
	for _, secret := range []string{"AKIDSECRETIDENTIFIER", "very-secret-value-123"} {
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("error text carries a credential: %v", err)
		}
	}
}

// TestMissingBucketLogsStoreStatusS3: a missing bucket is a configuration
// failure logged with the store's own status (404), not 500.
func TestMissingBucketLogsStoreStatusS3(t *testing.T) {
	testenv.MissingBucketLogsStoreStatus(t, testenv.MissingS3(t))
}
