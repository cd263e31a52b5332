package gcs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"syscall"
	"testing"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/internal/cloud"
)

func TestClassify(t *testing.T) {
	type want struct {
		kind    backend.Kind
		verdict cloud.Verdict
	}
	gerr := func(code int) error {
		return fmt.Errorf("wrapped: %w", &googleapi.Error{Code: code, Message: "text is never read"})
	}
	cases := []struct {
		name                     string
		err                      error
		read, write, conditional want
	}{
		{name: "412", err: gerr(412), read: want{backend.KindPrecondition, cloud.Stop}, write: want{backend.KindPrecondition, cloud.Stop}, conditional: want{backend.KindPrecondition, cloud.Stop}},
		{name: "ErrObjectNotExist", err: storage.ErrObjectNotExist, read: want{backend.KindNotFound, cloud.Stop}, write: want{backend.KindNotFound, cloud.Stop}, conditional: want{backend.KindNotFound, cloud.Stop}},
		{name: "ErrBucketNotExist", err: storage.ErrBucketNotExist, read: want{backend.KindConfiguration, cloud.Stop}, write: want{backend.KindConfiguration, cloud.Stop}, conditional: want{backend.KindConfiguration, cloud.Stop}},
		{name: "404 on a conditional write is a missing bucket", err: gerr(404), read: want{backend.KindNotFound, cloud.Stop}, write: want{backend.KindNotFound, cloud.Stop}, conditional: want{backend.KindConfiguration, cloud.Stop}},
		{name: "401", err: gerr(401), read: want{backend.KindConfiguration, cloud.Stop}, write: want{backend.KindConfiguration, cloud.Stop}, conditional: want{backend.KindConfiguration, cloud.Stop}},
		{name: "403", err: gerr(403), read: want{backend.KindConfiguration, cloud.Stop}, write: want{backend.KindConfiguration, cloud.Stop}, conditional: want{backend.KindConfiguration, cloud.Stop}},
		{name: "429", err: gerr(429), read: want{backend.KindTransient, cloud.RetryThrottle}, write: want{backend.KindTransient, cloud.RetryThrottle}, conditional: want{backend.KindUnknown, cloud.Stop}},
		{name: "503", err: gerr(503), read: want{backend.KindTransient, cloud.RetryThrottle}, write: want{backend.KindUnknown, cloud.Stop}, conditional: want{backend.KindUnknown, cloud.Stop}},
		{name: "500", err: gerr(500), read: want{backend.KindTransient, cloud.RetryClient}, write: want{backend.KindUnknown, cloud.Stop}, conditional: want{backend.KindUnknown, cloud.Stop}},
		{name: "408", err: gerr(408), read: want{backend.KindTransient, cloud.RetryClient}, write: want{backend.KindUnknown, cloud.Stop}, conditional: want{backend.KindUnknown, cloud.Stop}},
		{name: "400", err: gerr(400), read: want{backend.KindPermanent, cloud.Stop}, write: want{backend.KindPermanent, cloud.Stop}, conditional: want{backend.KindPermanent, cloud.Stop}},
		{name: "connection refused", err: &url.Error{Op: "Post", URL: "http://x", Err: &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}},
			read: want{backend.KindTransient, cloud.RetryClient}, write: want{backend.KindTransient, cloud.RetryClient}, conditional: want{backend.KindTransient, cloud.Stop}},
		{name: "timeout", err: fmt.Errorf("x: %w", context.DeadlineExceeded),
			read: want{backend.KindTransient, cloud.RetryClient}, write: want{backend.KindUnknown, cloud.Stop}, conditional: want{backend.KindUnknown, cloud.Stop}},
		{name: "untyped", err: errors.New("412 precondition failed"),
			read: want{backend.KindUnknown, cloud.Stop}, write: want{backend.KindUnknown, cloud.Stop}, conditional: want{backend.KindUnknown, cloud.Stop}},
	}
	for _, c := range cases {
		for _, m := range []struct {
			name string
			mode mode
			want want
		}{{"read", read, c.read}, {"write", write, c.write}, {"conditional", conditional, c.conditional}} {
			t.Run(c.name+"/"+m.name, func(t *testing.T) {
				k, v := classify(c.err, m.mode)
				if k != m.want.kind || v != m.want.verdict {
					t.Fatalf("classify = %s, verdict %d; want %s, verdict %d", k, v, m.want.kind, m.want.verdict)
				}
			})
		}
	}
}

func TestOpenRefusesClientRetries(t *testing.T) {
	t.Setenv("OBJECT_STORE_CLIENT_MAX_RETRIES", "2")
	if _, err := backend.Open(context.Background(), "gs://bucket/p"); !errors.Is(err, backend.ErrConfiguration) {
		t.Fatalf("Open = %v, want Configuration", err)
	}
	t.Setenv("OBJECT_STORE_CLIENT_MAX_RETRIES", "0")
	if _, err := backend.Open(context.Background(), "gs://bucket/p?x=1"); !errors.Is(err, backend.ErrConfiguration) {
		t.Fatalf("unknown parameter = %v, want Configuration", err)
	}
}
