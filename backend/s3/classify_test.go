package s3

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"syscall"
	"testing"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/internal/cloud"
)

// apiErr builds the error chain the SDK returns for an HTTP error answer.
func apiErr(status int, code string, inner error) error {
	if inner == nil {
		inner = &smithy.GenericAPIError{Code: code, Message: "message text is never read"}
	}
	return &smithy.OperationError{ServiceID: "S3", OperationName: "PutObject", Err: &awshttp.ResponseError{
		ResponseError: &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}}, Err: inner},
	}}
}

func transportErr(inner error) error {
	return &smithy.OperationError{ServiceID: "S3", OperationName: "PutObject",
		Err: &smithyhttp.RequestSendError{Err: &url.Error{Op: "Put", URL: "http://127.0.0.1:1/b/k", Err: inner}}}
}

func TestClassify(t *testing.T) {
	type want struct {
		kind    backend.Kind
		verdict cloud.Verdict
	}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	cases := []struct {
		name                     string
		err                      error
		read, write, conditional want
	}{
		{name: "412 PreconditionFailed", err: apiErr(412, "PreconditionFailed", nil),
			read: want{backend.KindPrecondition, cloud.Stop}, write: want{backend.KindPrecondition, cloud.Stop}, conditional: want{backend.KindPrecondition, cloud.Stop}},
		{name: "304 not modified", err: apiErr(304, "", nil),
			read: want{backend.KindPrecondition, cloud.Stop}, write: want{backend.KindPrecondition, cloud.Stop}, conditional: want{backend.KindPrecondition, cloud.Stop}},
		{name: "409 ConditionalRequestConflict", err: apiErr(409, "ConditionalRequestConflict", nil),
			read: want{backend.KindUnknown, cloud.Stop}, write: want{backend.KindUnknown, cloud.Stop}, conditional: want{backend.KindUnknown, cloud.Stop}},
		{name: "409 ObjectParentIsFile (versitygw posix)", err: apiErr(409, "ObjectParentIsFile", nil),
			read: want{backend.KindPermanent, cloud.Stop}, write: want{backend.KindPermanent, cloud.Stop}, conditional: want{backend.KindPermanent, cloud.Stop}},
		{name: "404 typed NoSuchKey", err: apiErr(404, "", &types.NoSuchKey{}),
			read: want{backend.KindNotFound, cloud.Stop}, write: want{backend.KindNotFound, cloud.Stop}, conditional: want{backend.KindNotFound, cloud.Stop}},
		{name: "404 HEAD NotFound", err: apiErr(404, "NotFound", nil),
			read: want{backend.KindNotFound, cloud.Stop}, write: want{backend.KindNotFound, cloud.Stop}, conditional: want{backend.KindNotFound, cloud.Stop}},
		{name: "404 NoSuchBucket", err: apiErr(404, "NoSuchBucket", nil),
			read: want{backend.KindConfiguration, cloud.Stop}, write: want{backend.KindConfiguration, cloud.Stop}, conditional: want{backend.KindConfiguration, cloud.Stop}},
		{name: "404 XAdminUserNotFound (versitygw wrong key)", err: apiErr(404, "XAdminUserNotFound", nil),
			read: want{backend.KindConfiguration, cloud.Stop}, write: want{backend.KindConfiguration, cloud.Stop}, conditional: want{backend.KindConfiguration, cloud.Stop}},
		{name: "403 AccessDenied", err: apiErr(403, "AccessDenied", nil),
			read: want{backend.KindConfiguration, cloud.Stop}, write: want{backend.KindConfiguration, cloud.Stop}, conditional: want{backend.KindConfiguration, cloud.Stop}},
		{name: "403 SignatureDoesNotMatch", err: apiErr(403, "SignatureDoesNotMatch", nil),
			read: want{backend.KindConfiguration, cloud.Stop}, write: want{backend.KindConfiguration, cloud.Stop}, conditional: want{backend.KindConfiguration, cloud.Stop}},
		{name: "503 SlowDown", err: apiErr(503, "SlowDown", nil),
			read: want{backend.KindTransient, cloud.RetryThrottle}, write: want{backend.KindTransient, cloud.RetryThrottle}, conditional: want{backend.KindUnknown, cloud.Stop}},
		{name: "429 without code", err: apiErr(429, "", nil),
			read: want{backend.KindTransient, cloud.RetryThrottle}, write: want{backend.KindTransient, cloud.RetryThrottle}, conditional: want{backend.KindUnknown, cloud.Stop}},
		{name: "503 without code (a proxy)", err: apiErr(503, "", nil),
			read: want{backend.KindTransient, cloud.RetryThrottle}, write: want{backend.KindUnknown, cloud.Stop}, conditional: want{backend.KindUnknown, cloud.Stop}},
		{name: "500 InternalError", err: apiErr(500, "InternalError", nil),
			read: want{backend.KindTransient, cloud.RetryClient}, write: want{backend.KindUnknown, cloud.Stop}, conditional: want{backend.KindUnknown, cloud.Stop}},
		{name: "502", err: apiErr(502, "", nil),
			read: want{backend.KindTransient, cloud.RetryClient}, write: want{backend.KindUnknown, cloud.Stop}, conditional: want{backend.KindUnknown, cloud.Stop}},
		{name: "400 RequestTimeout", err: apiErr(400, "RequestTimeout", nil),
			read: want{backend.KindTransient, cloud.RetryClient}, write: want{backend.KindUnknown, cloud.Stop}, conditional: want{backend.KindUnknown, cloud.Stop}},
		{name: "400 InvalidArgument", err: apiErr(400, "InvalidArgument", nil),
			read: want{backend.KindPermanent, cloud.Stop}, write: want{backend.KindPermanent, cloud.Stop}, conditional: want{backend.KindPermanent, cloud.Stop}},
		{name: "connection refused (never sent)", err: transportErr(refused),
			read: want{backend.KindTransient, cloud.RetryClient}, write: want{backend.KindTransient, cloud.RetryClient}, conditional: want{backend.KindTransient, cloud.Stop}},
		{name: "connection reset (maybe applied)", err: transportErr(reset),
			read: want{backend.KindTransient, cloud.RetryClient}, write: want{backend.KindUnknown, cloud.Stop}, conditional: want{backend.KindUnknown, cloud.Stop}},
		{name: "request timeout", err: transportErr(context.DeadlineExceeded),
			read: want{backend.KindTransient, cloud.RetryClient}, write: want{backend.KindUnknown, cloud.Stop}, conditional: want{backend.KindUnknown, cloud.Stop}},
		{name: "unrecognised error", err: errors.New("something else"),
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

// TestClassifyIgnoresMessageText: the same words in a message never change
// the class; only status and code do.
func TestClassifyIgnoresMessageText(t *testing.T) {
	err := apiErr(400, "InvalidArgument", &smithy.GenericAPIError{Code: "InvalidArgument", Message: "PreconditionFailed SlowDown 412 NoSuchKey"})
	if k, _ := classify(err, conditional); k != backend.KindPermanent {
		t.Fatalf("kind %s, want permanent", k)
	}
	if k, _ := classify(fmt.Errorf("412 Precondition Failed"), conditional); k != backend.KindUnknown {
		t.Fatalf("untyped text classified as %s, want unknown", k)
	}
}
