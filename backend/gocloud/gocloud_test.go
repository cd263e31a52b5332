package gocloud_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"os"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/counter"
	"github.com/omnigraph-go/omnigraph/backend/gocloud"
	"github.com/omnigraph-go/omnigraph/conformance"
	"github.com/omnigraph-go/omnigraph/internal/testenv"
)

func memURL(t *testing.T) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "gocloud+mem://" + hex.EncodeToString(b[:])
}

func TestConformanceGocloudMem(t *testing.T) {
	conformance.Run(t, func(t *testing.T) backend.StorageAdapter {
		return testenv.Open(t, memURL(t))
	})
}

func TestConformanceGocloudS3(t *testing.T) {
	testenv.S3Bucket(t)
	conformance.Run(t, func(t *testing.T) backend.StorageAdapter {
		return testenv.Open(t, testenv.GocloudS3(t))
	}, conformance.WithDeny(func(t *testing.T) backend.StorageAdapter {
		// The bucket opened with credentials versitygw refuses; HEAD
		// gets AWS's 403 from a proxy, since versitygw answers a HEAD with
		// wrong credentials 404 (see backend/s3's deniedS3).
		url := testenv.GocloudS3(t)
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
		return testenv.Open(t, url)
	}))
}

// TestLostAnswerInjectedGocloudS3: see testenv.LostAnswerInjected.
func TestLostAnswerInjectedGocloudS3(t *testing.T) {
	testenv.LostAnswerInjected(t, testenv.Open(t, testenv.GocloudS3(t)))
}

// TestNoCompareAndSwap: the bridge declares no ConditionalUpdate, and
// PutIfMatch is refused as Permanent without any request.
func TestNoCompareAndSwap(t *testing.T) {
	c := counter.New(testenv.Open(t, memURL(t)))
	if c.Capabilities().ConditionalUpdate {
		t.Fatal("gocloud bridge declares ConditionalUpdate")
	}
	ctx := t.Context()
	a, err := c.Put(ctx, "k", []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	c.Reset()
	inner := c.Unwrap()
	_, err = inner.PutIfMatch(ctx, "k", []byte("v2"), a.Version)
	if !errors.Is(err, backend.ErrPermanent) || !errors.Is(err, gocloud.ErrNoCompareAndSwap) {
		t.Fatalf("PutIfMatch = %v, want Permanent ErrNoCompareAndSwap", err)
	}
	if got, _, _ := inner.Get(ctx, "k"); string(got) != "v1" {
		t.Fatalf("refused PutIfMatch changed the object to %q", got)
	}
}

// TestListStartAfterOneRequestS3: with StartAfter passed to s3blob, the
// next page of a listing is one request, not a scan.
func TestListStartAfterOneRequestS3(t *testing.T) {
	s := counter.New(testenv.Open(t, testenv.GocloudS3(t)))
	ctx := t.Context()
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		if _, err := s.Put(ctx, "l/"+k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	s.Reset()
	page, err := s.List(ctx, "l/", backend.ListOptions{StartAfter: "l/b", MaxKeys: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Objects) != 2 || page.Objects[0].Key != "l/c" || page.Objects[1].Key != "l/d" || !page.Truncated {
		t.Fatalf("page = %+v", page)
	}
	_ = context.Background
}

// TestMissingBucketLogsStoreStatusGocloudS3: a missing bucket is a configuration
// failure logged with the store's own status (404), not 500.
func TestMissingBucketLogsStoreStatusGocloudS3(t *testing.T) {
	testenv.MissingBucketLogsStoreStatus(t, testenv.MissingGocloudS3(t))
}
