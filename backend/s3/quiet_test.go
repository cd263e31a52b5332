package s3_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/s3"
)

// captureStderr swaps os.Stderr for a pipe while fn runs and returns what
// was written to it. The SDK's default logger binds os.Stderr when the
// client is built, so fn must build the client.
func captureStderr(t *testing.T, fn func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stderr
	os.Stderr = w
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	func() {
		defer func() { os.Stderr = old }()
		fn()
	}()
	w.Close()
	return <-done
}

// TestSDKWritesNothingToStderr pins the rule that the S3 SDK never prints
// to the user's terminal: a response with an unparsable Date header and a
// multipart (composite) checksum makes the default SDK logger print WARN
// lines; the adapter's client logs nothing and still returns the bytes.
func TestSDKWritesNothingToStderr(t *testing.T) {
	clearAWSEnv(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Date", "not a date")
		w.Header().Set("ETag", `"abc-2"`)
		w.Header().Set("x-amz-checksum-crc32", "AAAAAA==-2")
		w.Header().Set("x-amz-checksum-type", "COMPOSITE")
		w.Header().Set("Content-Length", "5")
		io.WriteString(w, "hello")
	}))
	defer srv.Close()
	t.Setenv("AWS_ENDPOINT_URL_S3", srv.URL)
	var got []byte
	var gerr error
	out := captureStderr(t, func() {
		cfg, err := s3.ConfigFromEnv("bkt")
		if err != nil {
			t.Error(err)
			return
		}
		st, err := s3.New(t.Context(), cfg)
		if err != nil {
			t.Error(err)
			return
		}
		got, _, gerr = st.Get(t.Context(), "k")
	})
	if gerr != nil || string(got) != "hello" {
		t.Fatalf("Get = %q, %v; want hello", got, gerr)
	}
	if out != "" {
		t.Fatalf("the SDK wrote to stderr: %q", out)
	}
}

// TestMissingCredentialsAreConfiguration pins the rule that a credentials
// chain that finds nothing is a Configuration error that says credentials
// are missing and what to set, sent to no server and never retried.
func TestMissingCredentialsAreConfiguration(t *testing.T) {
	clearAWSEnv(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	t.Setenv("AWS_SESSION_TOKEN", "")
	none := filepath.Join(t.TempDir(), "none")
	t.Setenv("AWS_CONFIG_FILE", none)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", none)
	t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", "")
	t.Setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "")
	t.Setenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "")
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	t.Setenv("AWS_ENDPOINT_URL_S3", srv.URL)
	cfg, err := s3.ConfigFromEnv("bkt")
	if err != nil {
		t.Fatal(err)
	}
	st, err := s3.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for name, op := range map[string]func() error{
		"Get":         func() error { _, _, err := st.Get(t.Context(), "k"); return err },
		"PutIfAbsent": func() error { _, err := st.PutIfAbsent(t.Context(), "k", []byte("x")); return err },
	} {
		err := op()
		if !errors.Is(err, backend.ErrConfiguration) || !strings.Contains(err.Error(), "credentials are missing") ||
			!strings.Contains(err.Error(), "AWS_ACCESS_KEY_ID") {
			t.Errorf("%s without credentials = %v (kind %s), want a Configuration error naming the missing credentials", name, err, backend.KindOf(err))
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("%d requests reached the server without credentials", n)
	}
}
