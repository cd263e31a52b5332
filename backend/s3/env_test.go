package s3_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/s3"
)

// clearAWSEnv isolates a test from the developer's AWS settings.
func clearAWSEnv(t *testing.T) {
	for _, k := range []string{"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ALLOW_HTTP", "OBJECT_STORE_CLIENT_MAX_RETRIES", "AWS_PROFILE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "test-id")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test-secret")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

func TestConfigFromEnv(t *testing.T) {
	cases := []struct {
		name         string
		env          map[string]string
		wantEndpoint string
		wantRegion   string
		wantErr      bool
	}{
		{name: "defaults", env: nil, wantEndpoint: "", wantRegion: "us-east-1"},
		{name: "AWS_REGION wins", env: map[string]string{"AWS_REGION": "eu-west-1", "AWS_DEFAULT_REGION": "us-west-2"}, wantRegion: "eu-west-1"},
		{name: "AWS_DEFAULT_REGION", env: map[string]string{"AWS_DEFAULT_REGION": "us-west-2"}, wantRegion: "us-west-2"},
		{name: "service endpoint wins", env: map[string]string{"AWS_ENDPOINT_URL_S3": "https://s3.example", "AWS_ENDPOINT_URL": "https://all.example"}, wantEndpoint: "https://s3.example", wantRegion: "us-east-1"},
		{name: "general endpoint", env: map[string]string{"AWS_ENDPOINT_URL": "https://all.example"}, wantEndpoint: "https://all.example", wantRegion: "us-east-1"},
		{name: "http endpoint allowed by its scheme", env: map[string]string{"AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9000"}, wantEndpoint: "http://127.0.0.1:9000", wantRegion: "us-east-1"},
		{name: "http endpoint refused by AWS_ALLOW_HTTP=false", env: map[string]string{"AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9000", "AWS_ALLOW_HTTP": "false"}, wantErr: true},
		{name: "no scheme means https", env: map[string]string{"AWS_ENDPOINT_URL_S3": "store.example:9000"}, wantEndpoint: "https://store.example:9000", wantRegion: "us-east-1"},
		{name: "no scheme with AWS_ALLOW_HTTP", env: map[string]string{"AWS_ENDPOINT_URL_S3": "store.example:9000", "AWS_ALLOW_HTTP": "true"}, wantEndpoint: "http://store.example:9000", wantRegion: "us-east-1"},
		{name: "unknown scheme", env: map[string]string{"AWS_ENDPOINT_URL_S3": "ftp://store.example"}, wantErr: true},
		{name: "client retries must be off", env: map[string]string{"OBJECT_STORE_CLIENT_MAX_RETRIES": "3"}, wantErr: true},
		{name: "client retries zero is fine", env: map[string]string{"OBJECT_STORE_CLIENT_MAX_RETRIES": "0"}, wantRegion: "us-east-1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clearAWSEnv(t)
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			cfg, err := s3.ConfigFromEnv("bucket")
			if c.wantErr {
				if !errors.Is(err, backend.ErrConfiguration) {
					t.Fatalf("got %+v, %v; want a Configuration error", cfg, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Endpoint != c.wantEndpoint || cfg.Region != c.wantRegion {
				t.Fatalf("endpoint %q region %q; want %q %q", cfg.Endpoint, cfg.Region, c.wantEndpoint, c.wantRegion)
			}
		})
	}
}

func TestOpenRefusesRetriesAndUnknownParams(t *testing.T) {
	clearAWSEnv(t)
	ctx := context.Background()
	t.Setenv("OBJECT_STORE_CLIENT_MAX_RETRIES", "3")
	if _, err := backend.Open(ctx, "s3://bucket/p"); !errors.Is(err, backend.ErrConfiguration) || !strings.Contains(err.Error(), "OBJECT_STORE_CLIENT_MAX_RETRIES") {
		t.Fatalf("Open with client retries = %v, want a Configuration error naming the variable", err)
	}
	t.Setenv("OBJECT_STORE_CLIENT_MAX_RETRIES", "")
	if _, err := backend.Open(ctx, "s3://bucket/p?colour=blue"); !errors.Is(err, backend.ErrConfiguration) || !strings.Contains(err.Error(), "key_child_coexist") {
		t.Fatalf("unknown parameter = %v, want a Configuration error listing key_child_coexist", err)
	}
	if _, err := backend.Open(ctx, "s3:///p"); !errors.Is(err, backend.ErrConfiguration) {
		t.Fatalf("missing bucket = %v", err)
	}
	s, err := backend.Open(ctx, "s3://bucket/p?key_child_coexist=false")
	if err != nil || s.Capabilities().KeyAndChildCoexist {
		t.Fatalf("key_child_coexist=false: %v, caps %+v", err, s)
	}
	// By default k and k/child coexist, as on AWS S3 and S3-compatible
	// object servers.
	s, err = backend.Open(ctx, "s3://bucket/p")
	if err != nil || !s.Capabilities().KeyAndChildCoexist || !s.Capabilities().ConditionalCreate || !s.Capabilities().ConditionalUpdate {
		t.Fatalf("default caps: %v, %+v", err, s.Capabilities())
	}
	if s, err = backend.Open(ctx, "s3://bucket/p?key_child_coexist=true"); err != nil || !s.Capabilities().KeyAndChildCoexist {
		t.Fatalf("key_child_coexist=true: %v, caps %+v", err, s)
	}
}

// TestRequestShape checks what goes over the wire against a recording
// server: path-style addressing, If-None-Match: * on create, the ETag sent
// verbatim (quotes kept) in If-Match, and one request per conditional write.
func TestRequestShape(t *testing.T) {
	clearAWSEnv(t)
	type seen struct{ method, path, ifNoneMatch, ifMatch, host string }
	var (
		mu   sync.Mutex
		reqs []seen
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		reqs = append(reqs, seen{r.Method, r.URL.Path, r.Header.Get("If-None-Match"), r.Header.Get("If-Match"), r.Host})
		mu.Unlock()
		w.Header().Set("ETag", `"0123456789abcdef0123456789abcdef"`)
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
	ctx := t.Context()
	a, err := st.PutIfAbsent(ctx, "dir/key", []byte("x"))
	if err != nil || a.Version != `"0123456789abcdef0123456789abcdef"` {
		t.Fatalf("PutIfAbsent = %+v, %v; want the ETag verbatim", a, err)
	}
	if _, err := st.PutIfMatch(ctx, "dir/key", []byte("y"), `"etag-1"`); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2: %+v", len(reqs), reqs)
	}
	if r := reqs[0]; r.method != http.MethodPut || r.path != "/bkt/dir/key" || r.ifNoneMatch != "*" || r.ifMatch != "" {
		t.Fatalf("create request %+v; want PUT /bkt/dir/key (path-style) with If-None-Match: *", r)
	}
	if r := reqs[1]; r.path != "/bkt/dir/key" || r.ifMatch != `"etag-1"` || r.ifNoneMatch != "" {
		t.Fatalf("swap request %+v; want If-Match: \"etag-1\" verbatim", r)
	}
}

// TestETagForms: whatever form the server gives an ETag in (quoted on the
// write, bare in a listing, weak on HEAD), the adapter hands out one token,
// and PutIfMatch sends it strong and quoted.
func TestETagForms(t *testing.T) {
	clearAWSEnv(t)
	var (
		mu      sync.Mutex
		ifMatch []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPut:
			mu.Lock()
			ifMatch = append(ifMatch, r.Header.Get("If-Match"))
			mu.Unlock()
			w.Header().Set("ETag", `"abc123"`)
		case r.Method == http.MethodHead:
			w.Header().Set("ETag", `W/"abc123"`)
			w.Header().Set("Content-Length", "1")
		case r.Method == http.MethodGet && r.URL.Query().Get("list-type") == "2":
			w.Header().Set("Content-Type", "application/xml")
			_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>bkt</Name><IsTruncated>false</IsTruncated>`+
				`<Contents><Key>k</Key><Size>1</Size><ETag>abc123</ETag><LastModified>2026-01-01T00:00:00.000Z</LastModified></Contents></ListBucketResult>`)
			return
		}
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
	ctx := t.Context()
	put, err := st.Put(ctx, "k", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	stat, err := st.Stat(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	page, err := st.List(ctx, "", backend.ListOptions{})
	if err != nil || len(page.Objects) != 1 {
		t.Fatalf("List = %+v, %v", page, err)
	}
	const want = `"abc123"`
	for what, got := range map[string]string{"Put": put.Version, "Stat (weak)": stat.Version, "List (bare)": page.Objects[0].Version} {
		if got != want {
			t.Fatalf("%s version = %q, want %q", what, got, want)
		}
	}
	for _, tok := range []string{"abc123", `W/"abc123"`, `"abc123"`} {
		if _, err := st.PutIfMatch(ctx, "k", []byte("y"), tok); err != nil {
			t.Fatalf("PutIfMatch(%q): %v", tok, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(ifMatch, " "); got != ` "abc123" "abc123" "abc123"` {
		t.Fatalf("If-Match headers sent: %q, want the plain Put's none and then \"abc123\" three times", got)
	}
}
