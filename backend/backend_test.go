package backend_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/local"
	"github.com/omnigraph-go/omnigraph/backend/mem"
)

func TestKindOf(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want backend.Kind
	}{
		{name: "nil", err: nil, want: backend.KindNone},
		{name: "transient sentinel", err: backend.ErrTransient, want: backend.KindTransient},
		{name: "configuration sentinel", err: backend.ErrConfiguration, want: backend.KindConfiguration},
		{name: "not found sentinel", err: backend.ErrNotFound, want: backend.KindNotFound},
		{name: "precondition sentinel", err: backend.ErrPrecondition, want: backend.KindPrecondition},
		{name: "permanent sentinel", err: backend.ErrPermanent, want: backend.KindPermanent},
		{name: "unknown sentinel", err: backend.ErrUnknown, want: backend.KindUnknown},
		{name: "wrapped sentinel", err: fmt.Errorf("reading manifest: %w", backend.ErrNotFound), want: backend.KindNotFound},
		{name: "Error value", err: backend.NewError("put", "k", backend.KindPrecondition, nil), want: backend.KindPrecondition},
		{name: "wrapped Error", err: fmt.Errorf("commit: %w", backend.NewError("put", "k", backend.KindPermanent, nil)), want: backend.KindPermanent},
		{name: "Error wins over its cause", err: backend.NewError("get", "k", backend.KindUnknown, context.Canceled), want: backend.KindUnknown},
		{name: "bare cancellation", err: context.Canceled, want: backend.KindTransient},
		{name: "bare deadline", err: fmt.Errorf("x: %w", context.DeadlineExceeded), want: backend.KindTransient},
		{name: "unclassified", err: errors.New("connection reset?"), want: backend.KindUnknown},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := backend.KindOf(c.err); got != c.want {
				t.Fatalf("KindOf(%v) = %s, want %s", c.err, got, c.want)
			}
		})
	}
}

func TestErrorIsAndMessage(t *testing.T) {
	err := backend.NewError("get", "graph/_manifest", backend.KindNotFound, nil)
	if !errors.Is(err, backend.ErrNotFound) || errors.Is(err, backend.ErrPrecondition) {
		t.Fatalf("errors.Is does not follow the kind: %v", err)
	}
	if !backend.IsNotFound(err) || backend.IsPrecondition(err) {
		t.Fatal("IsNotFound/IsPrecondition disagree with the kind")
	}
	// The message names the operation and class, never the key (keys are
	// internal; they stay on the value).
	if got, want := err.Error(), "get: not_found"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	var be *backend.Error
	if !errors.As(err, &be) || be.Key != "graph/_manifest" {
		t.Fatalf("the key must stay on the value: %+v", be)
	}
	cause := backend.NewError("put", "k", backend.KindTransient, context.DeadlineExceeded)
	if !errors.Is(cause, context.DeadlineExceeded) || !errors.Is(cause, backend.ErrTransient) {
		t.Fatalf("the cause must stay visible: %v", cause)
	}
	for k := backend.KindNone; k <= backend.KindUnknown; k++ {
		if strings.HasPrefix(k.String(), "kind(") {
			t.Fatalf("kind %d has no name", int(k))
		}
	}
}

func TestValidateKey(t *testing.T) {
	cases := []struct {
		name string
		key  string
		ok   bool
	}{
		{name: "simple", key: "a", ok: true},
		{name: "nested", key: "graph/_manifest/00001.json", ok: true},
		{name: "spaces and unicode", key: "a b/日本/ü", ok: true},
		{name: "hash without digits", key: "a#b", ok: true},
		{name: "trailing hash", key: "a#", ok: true},
		{name: "hash then mixed", key: "a#1b", ok: true},
		{name: "percent and plus", key: "100%/a+b", ok: true},
		{name: "empty", key: "", ok: false},
		{name: "leading slash", key: "/a", ok: false},
		{name: "trailing slash", key: "a/", ok: false},
		{name: "double slash", key: "a//b", ok: false},
		{name: "dot segment", key: "a/./b", ok: false},
		{name: "dotdot segment", key: "../a", ok: false},
		{name: "temp name", key: "a#1", ok: false},
		{name: "temp name in a directory segment", key: "d#12/a", ok: false},
		{name: "temp name zero", key: "x/y#0", ok: false},
		{name: "NUL", key: "a\x00b", ok: false},
		{name: "invalid UTF-8", key: "a\xffb", ok: false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := backend.ValidateKey(c.key)
			if c.ok && err != nil {
				t.Fatalf("ValidateKey(%q) = %v, want ok", c.key, err)
			}
			if !c.ok && !errors.Is(err, backend.ErrPermanent) {
				t.Fatalf("ValidateKey(%q) = %v, want a Permanent error", c.key, err)
			}
		})
	}
}

func TestValidatePrefix(t *testing.T) {
	for _, p := range []string{"", "a", "a/", "a/b/", "a/b"} {
		if err := backend.ValidatePrefix(p); err != nil {
			t.Fatalf("ValidatePrefix(%q) = %v", p, err)
		}
	}
	for _, p := range []string{"/", "/a", "a//", "a#3/", "../"} {
		if err := backend.ValidatePrefix(p); !errors.Is(err, backend.ErrPermanent) {
			t.Fatalf("ValidatePrefix(%q) = %v, want Permanent", p, err)
		}
	}
}

func TestIsTempName(t *testing.T) {
	cases := []struct {
		seg  string
		want bool
	}{
		{"a#1", true}, {"a#0123", true}, {"#5", true}, {"a#b#7", true},
		{"a", false}, {"a#", false}, {"#", false}, {"a#x", false}, {"a#1x", false}, {"a#7#", false},
	}
	for _, c := range cases {
		if got := backend.IsTempName(c.seg); got != c.want {
			t.Errorf("IsTempName(%q) = %v, want %v", c.seg, got, c.want)
		}
	}
}

func TestSliceRange(t *testing.T) {
	data := []byte("0123456789")
	cases := []struct {
		name      string
		off, n    int64
		want      string
		emptyData bool
	}{
		{name: "all", off: 0, n: -1, want: "0123456789"},
		{name: "middle", off: 3, n: 2, want: "34"},
		{name: "past end", off: 8, n: 5, want: "89"},
		{name: "at end", off: 10, n: 1, want: ""},
		{name: "negative offset", off: -4, n: 2, want: "01"},
		{name: "empty object", off: 0, n: 10, want: "", emptyData: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := data
			if c.emptyData {
				in = nil
			}
			got := backend.SliceRange(in, c.off, c.n)
			if got == nil || string(got) != c.want {
				t.Fatalf("SliceRange = %q (nil=%v), want %q", got, got == nil, c.want)
			}
		})
	}
	// The result is a copy.
	got := backend.SliceRange(data, 0, 1)
	got[0] = 'x'
	if data[0] != '0' {
		t.Fatal("SliceRange aliases its input")
	}
}

func TestOpenRegistry(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	rel, err := filepath.Rel(mustGetwd(t), dir)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		url       string
		wantLocal bool
		wantErr   []string // substrings of the error; nil means success
	}{
		{name: "plain absolute path is local", url: dir, wantLocal: true},
		{name: "plain relative path is local", url: rel, wantLocal: true},
		{name: "file URL is local", url: "file://" + dir, wantLocal: true},
		{name: "mem URL", url: "mem://reg-test"},
		{name: "scheme is case-insensitive", url: "MEM://reg-test"},
		{name: "unknown scheme lists the supported ones", url: "ftp://host/x", wantErr: []string{`unknown storage scheme "ftp"`, "file", "mem"}},
		{name: "unknown parameter is named", url: "mem://reg-test?region=x", wantErr: []string{`unknown parameter "region"`, "supported parameters: none"}},
		{name: "empty URL", url: "", wantErr: []string{"empty storage URL"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := backend.Open(ctx, c.url)
			if c.wantErr != nil {
				if err == nil {
					t.Fatalf("Open(%q) succeeded", c.url)
				}
				if !errors.Is(err, backend.ErrConfiguration) {
					t.Fatalf("Open(%q) = %v, want a Configuration error", c.url, err)
				}
				for _, w := range c.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Fatalf("Open(%q) error %q does not mention %q", c.url, err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Open(%q): %v", c.url, err)
			}
			defer s.Close()
			if _, isLocal := s.(*local.Store); isLocal != c.wantLocal {
				t.Fatalf("Open(%q) = %T, want local=%v", c.url, s, c.wantLocal)
			}
		})
	}
	for _, want := range []string{"file", "mem"} {
		found := false
		for _, s := range backend.Schemes() {
			found = found || s == want
		}
		if !found {
			t.Fatalf("Schemes() = %v lacks %q", backend.Schemes(), want)
		}
	}
}

func mustGetwd(t *testing.T) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}

// Two Opens of the same mem:// name share data; different names and
// prefixes do not.
func TestMemNamedSharing(t *testing.T) {
	ctx := context.Background()
	open := func(u string) backend.StorageAdapter {
		t.Helper()
		s, err := backend.Open(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a := open("mem://share-test")
	b := open("mem://share-test")
	other := open("mem://share-test-other")
	sub := open("mem://share-test/graphs/g1")
	if _, err := a.Put(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if got, _, err := b.Get(ctx, "k"); err != nil || string(got) != "v" {
		t.Fatalf("second Open of the same name: Get = %q, %v", got, err)
	}
	if _, _, err := other.Get(ctx, "k"); !backend.IsNotFound(err) {
		t.Fatalf("another name sees the key: %v", err)
	}
	if _, err := sub.Put(ctx, "inner", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if got, _, err := a.Get(ctx, "graphs/g1/inner"); err != nil || string(got) != "x" {
		t.Fatalf("prefixed Open did not write below its prefix: %q, %v", got, err)
	}
	page, err := sub.List(ctx, "", backend.ListOptions{})
	if err != nil || len(page.Objects) != 1 || page.Objects[0].Key != "inner" {
		t.Fatalf("prefixed List = %+v, %v; want the relative key", page, err)
	}
}

func TestRedact(t *testing.T) {
	cases := []struct {
		name   string
		in     string
		secret string
		keep   string
	}{
		{name: "URL userinfo", in: "open s3://AKIAEXAMPLE:wJalrXUtnFEMIK7MDENG@bucket/x failed", secret: "wJalrXUtnFEMIK7MDENG", keep: "bucket/x"},
		{name: "SAS signature", in: "GET https://acct.blob.core.windows.net/c/b?sv=2022-11-02&se=2030-01-01&sp=r&sig=AbCdEf%2Bsecret%3D: 403", secret: "AbCdEf%2Bsecret", keep: "acct.blob.core.windows.net"},
		{name: "AccountKey", in: "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=c2VjcmV0a2V5c2VjcmV0a2V5==;EndpointSuffix=core.windows.net", secret: "c2VjcmV0a2V5c2VjcmV0a2V5", keep: "AccountName=acct"},
		{name: "presigned S3", in: "https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAEXAMPLE%2F20260101&X-Amz-Signature=deadbeefcafef00d", secret: "deadbeefcafef00d", keep: "X-Amz-Algorithm=AWS4-HMAC-SHA256"},
		{name: "presigned S3 credential", in: "X-Amz-Credential=AKIAEXAMPLE%2F20260101%2Fus-east-1", secret: "AKIAEXAMPLE", keep: "X-Amz-Credential="},
		{name: "bearer token", in: "Authorization: Bearer ya29.a0secret-token", secret: "ya29.a0secret-token", keep: "Authorization"},
		{name: "GCS signature", in: "?X-Goog-Signature=0123abcdef&X-Goog-Date=20260101", secret: "0123abcdef", keep: "X-Goog-Date"},
		// A parameter whose name only ends in a secret name ("coexist"
		// ends in "st") is not redacted; the real one beside it is.
		{name: "harmless parameter ending in a secret name", in: "s3://b/p?key_child_coexist=true&token=s3cr3tvalue", secret: "s3cr3tvalue", keep: "key_child_coexist=true"},
		{name: "secret at the start", in: "sig=AbCdEf0123 rest", secret: "AbCdEf0123", keep: "rest"},
		{name: "bare bearer secret", in: "sent Bearer og_3f9a1c2e7b5d4a60 to the server", secret: "og_3f9a1c2e7b5d4a60", keep: "to the server"},
		{name: "long letters-only bearer secret", in: "Bearer abcdefghijklmnopqrstuvwxyz", secret: "abcdefghijklmnopqrstuvwxyz", keep: "Bearer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := backend.Redact(c.in)
			if strings.Contains(got, c.secret) {
				t.Fatalf("Redact(%q) = %q still holds the secret", c.in, got)
			}
			if !strings.Contains(got, c.keep) {
				t.Fatalf("Redact(%q) = %q lost the harmless part %q", c.in, got, c.keep)
			}
		})
	}
	// Words are not secrets: the server's 401 messages keep their last
	// word (they were "missing bearer REDACTED").
	for _, msg := range []string{"missing bearer token", "invalid bearer token", "unauthorized: missing or invalid bearer token.", "the Bearer scheme"} {
		if got := backend.Redact(msg); got != msg {
			t.Errorf("Redact(%q) = %q, want it unchanged (no secret in it)", msg, got)
		}
	}
	// Errors pass their cause through Redact.
	err := backend.NewError("put", "k", backend.KindConfiguration, errors.New("403 for https://x/y?sig=TOPSECRET"))
	if strings.Contains(err.Error(), "TOPSECRET") {
		t.Fatalf("Error() leaks: %v", err)
	}
	// ParseURL errors never echo the password.
	_, perr := backend.Open(context.Background(), "s3://user:hunter2@bad host/x")
	if perr == nil || strings.Contains(perr.Error(), "hunter2") {
		t.Fatalf("Open error leaks or is missing: %v", perr)
	}
}

func TestListAllPages(t *testing.T) {
	ctx := context.Background()
	s := mem.New()
	for i := 0; i < 2*backend.DefaultPageSize+5; i++ {
		if _, err := s.Put(ctx, fmt.Sprintf("k/%05d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	all, err := backend.ListAll(ctx, s, "k/")
	if err != nil || len(all) != 2*backend.DefaultPageSize+5 {
		t.Fatalf("ListAll = %d objects, %v", len(all), err)
	}
}
