package main

import (
	"bytes"
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/internal/testenv"
)

// blindCreate is a store whose PutIfAbsent claims conditional create but
// overwrites: the check must catch it in the race.
type blindCreate struct{ *mem.Store }

func (b blindCreate) PutIfAbsent(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	return b.Store.Put(ctx, key, data)
}

// noCreate declares no conditional create at all.
type noCreate struct{ *mem.Store }

func (n noCreate) Capabilities() backend.Capabilities {
	c := n.Store.Capabilities()
	c.ConditionalCreate = false
	return c
}

func init() {
	backend.Register("test-blindcreate", func(ctx context.Context, u *url.URL) (backend.StorageAdapter, error) {
		return blindCreate{mem.New()}, nil
	})
	backend.Register("test-nocreate", func(ctx context.Context, u *url.URL) (backend.StorageAdapter, error) {
		return noCreate{mem.New()}, nil
	})
}

func storageCheckRun(t *testing.T, url string) (int, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(t.Context(), []string{"storage", "check", url}, strings.NewReader(""), &out, &errb)
	t.Logf("omnigraph storage check %s (exit %d):\n%s%s", url, code, out.String(), errb.String())
	return code, out.String() + errb.String()
}

// row returns the table line for a capability.
func row(out, capability string) string {
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, capability) {
			return line
		}
	}
	return ""
}

func TestStorageCheck(t *testing.T) {
	cases := []struct {
		name     string
		url      string
		wantCode int
		wantRows map[string]string // capability -> substring of its row
	}{
		{name: "mem", url: "mem://storage-check", wantCode: 0, wantRows: map[string]string{
			"conditional create": "yes  ", "compare-and-swap": "yes (8-way race: 1 winner)", "list after write": "yes", "cleanup": "yes"}},
		{name: "local", url: t.TempDir(), wantCode: 0, wantRows: map[string]string{
			"conditional create": "yes (8-way race: 1 winner)", "ranged read": "yes", "delete": "yes"}},
		{name: "gocloud mem bridge", url: "gocloud+mem://storage-check", wantCode: 0, wantRows: map[string]string{
			"compare-and-swap": "no        absent", "conditional create": "yes (8-way race: 1 winner)"}},
		{name: "blind create", url: "test-blindcreate://x", wantCode: 1, wantRows: map[string]string{
			"conditional create": "BROKEN"}},
		{name: "no conditional create", url: "test-nocreate://x", wantCode: 1, wantRows: map[string]string{
			"conditional create": "no        absent"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out := storageCheckRun(t, c.url)
			if code != c.wantCode {
				t.Fatalf("exit %d, want %d", code, c.wantCode)
			}
			for capability, want := range c.wantRows {
				if r := row(out, capability); !strings.Contains(r, want) {
					t.Fatalf("row %q = %q, want it to contain %q", capability, r, want)
				}
			}
		})
	}
	// The probe left nothing behind in a store that holds other data.
	ctx := t.Context()
	s, err := backend.Open(ctx, "mem://storage-check-kept")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "user/data", []byte("keep me")); err != nil {
		t.Fatal(err)
	}
	if code, _ := storageCheckRun(t, "mem://storage-check-kept"); code != 0 {
		t.Fatalf("exit %d", code)
	}
	all, err := backend.ListAll(ctx, s, "")
	if err != nil || len(all) != 1 || all[0].Key != "user/data" {
		t.Fatalf("after the check the store holds %+v (%v), want only user/data", all, err)
	}
}

func TestStorageCheckUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(t.Context(), []string{"storage", "check"}, strings.NewReader(""), &out, &errb); code != exitUsage {
		t.Fatalf("no URL: exit %d, want %d", code, exitUsage)
	}
	if code := run(t.Context(), []string{"storage", "check", "nosuch://x"}, strings.NewReader(""), &out, &errb); code != exitError {
		t.Fatalf("unknown scheme: exit %d, want %d", code, exitError)
	}
	if !strings.Contains(errb.String(), "supported") {
		t.Fatalf("unknown scheme error does not list the supported ones: %s", errb.String())
	}
}

// TestStorageCheckEmulators runs the check against each emulator; the
// gocloud bridge reports compare-and-swap as absent.
func TestStorageCheckEmulators(t *testing.T) {
	cases := []struct {
		name string
		url  func(t *testing.T) string
		swap string
	}{
		{name: "s3", url: func(t *testing.T) string { return testenv.S3(t) }, swap: "yes (8-way race: 1 winner)"},
		{name: "gcs", url: func(t *testing.T) string { return testenv.GCS(t) }, swap: "yes (8-way race: 1 winner)"},
		{name: "azure", url: func(t *testing.T) string { return testenv.Azure(t) }, swap: "yes (8-way race: 1 winner)"},
		{name: "gocloud+s3", url: func(t *testing.T) string { return testenv.GocloudS3(t) }, swap: "absent"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out := storageCheckRun(t, c.url(t))
			if code != 0 {
				t.Fatalf("exit %d", code)
			}
			if r := row(out, "conditional create"); !strings.Contains(r, "yes (8-way race: 1 winner)") {
				t.Fatalf("conditional create row = %q", r)
			}
			if r := row(out, "compare-and-swap"); !strings.Contains(r, c.swap) {
				t.Fatalf("compare-and-swap row = %q, want %q", r, c.swap)
			}
		})
	}
}

// noAuth refuses every write the way a store with missing or wrong
// credentials does.
type noAuth struct{ *mem.Store }

func (n noAuth) refused(op, key string) error {
	return backend.NewError(op, key, backend.KindConfiguration, errors.New("s3 HTTP 403 InvalidAccessKeyId: The AWS Access Key Id you provided does not exist"))
}

func (n noAuth) Put(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	return backend.Attrs{}, n.refused("put", key)
}

func (n noAuth) PutIfAbsent(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	return backend.Attrs{}, n.refused("put-if-absent", key)
}

// TestStorageCheckBlamesCredentials pins the rule that a store refusing the
// check's writes for credentials is reported as a credentials problem, with
// what to set, and not as a missing conditional create.
func TestStorageCheckBlamesCredentials(t *testing.T) {
	backend.Register("test-noauth", func(ctx context.Context, u *url.URL) (backend.StorageAdapter, error) {
		return noAuth{mem.New()}, nil
	})
	code, out := storageCheckRun(t, "test-noauth://x")
	if code != exitError {
		t.Fatalf("exit %d, want %d", code, exitError)
	}
	if !strings.Contains(out, "credentials were refused or missing") || !strings.Contains(out, "InvalidAccessKeyId") {
		t.Fatalf("the check does not say the credentials were refused:\n%s", out)
	}
	if strings.Contains(out, "conditional create") || strings.Contains(out, "BROKEN") {
		t.Fatalf("the check blames a capability for refused credentials:\n%s", out)
	}
	if h := credentialHint("s3://b/p"); !strings.Contains(h, "AWS_ACCESS_KEY_ID") {
		t.Fatalf("s3 credential hint = %q", h)
	}
}

// TestStorageCheckLeavesNothingOnDisk pins the rule that the check of a
// local directory leaves the directory as it found it: no probe keys, no
// .omnigraph-lock#N files.
func TestStorageCheckLeavesNothingOnDisk(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := storageCheckRun(t, dir); code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "keep.txt" {
		t.Fatalf("after the check the directory holds %v, want only keep.txt", names)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "keep.txt")); err != nil || string(b) != "mine" {
		t.Fatalf("keep.txt = %q, %v", b, err)
	}
}
