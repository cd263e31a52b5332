package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/conformance"
	"github.com/omnigraph-go/omnigraph/internal/testenv"
)

// brokenRange answers ranged reads with the wrong bytes (a basic rule).
type brokenRange struct{ *mem.Store }

func (b brokenRange) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	got, err := b.Store.GetRange(ctx, key, off, n)
	if len(got) > 0 {
		got[0] ^= 0xff
	}
	return got, err
}

// versionLiar declares a new version per identical write but keeps it.
type versionLiar struct{ *mem.Store }

func (v versionLiar) Put(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	if a, _, err := v.Store.Get(ctx, key); err == nil && bytes.Equal(a, data) {
		return v.Store.Stat(ctx, key)
	}
	return v.Store.Put(ctx, key, data)
}

// undeclaredSwap declares no compare-and-swap, yet its PutIfMatch writes.
type undeclaredSwap struct{ *mem.Store }

func (u undeclaredSwap) Capabilities() backend.Capabilities {
	c := u.Store.Capabilities()
	c.ConditionalUpdate = false
	return c
}

func (u undeclaredSwap) PutIfMatch(ctx context.Context, key string, data []byte, _ string) (backend.Attrs, error) {
	return u.Store.Put(ctx, key, data)
}

// deletesNothing answers every delete with success and keeps the key.
type deletesNothing struct{ *mem.Store }

func (deletesNothing) Delete(context.Context, string) error { return nil }

// verdictCalls records every storeVerdict call of a test: which scratch
// directory (the command: storage check or init) and the verdict.
type verdictCalls struct {
	mu    sync.Mutex
	calls []verdictCall
}

type verdictCall struct {
	prefix string
	v      conformance.Verdict
}

// recordVerdicts wraps storeVerdict for the test.
func recordVerdicts(t *testing.T) *verdictCalls {
	t.Helper()
	rec := &verdictCalls{}
	real := storeVerdict
	t.Cleanup(func() { storeVerdict = real })
	storeVerdict = func(ctx context.Context, url string, s backend.StorageAdapter, sc surveyScope) (*conformance.Survey, error) {
		sv, err := real(ctx, url, s, sc)
		if err == nil {
			rec.mu.Lock()
			rec.calls = append(rec.calls, verdictCall{prefix: sc.prefix, v: sv.Verdict})
			rec.mu.Unlock()
		}
		return sv, err
	}
	return rec
}

func (r *verdictCalls) take() []verdictCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.calls
	r.calls = nil
	return out
}

// agreeCase is one store of the agreement matrix.
type agreeCase struct {
	name string
	url  func(t *testing.T) string
	mode string // the verdict's mode
	// warn is a substring of a warning the verdict must carry ("" none).
	warn string
}

// TestStorageCheckAndInitAgree pins issue 26 items 17 and 24: storage
// check and init reach their verdict through the one function
// (storeVerdict, and through it conformance.Decide), and agree on every
// store of the matrix: whatever the check calls read-only or unusable,
// init refuses (exit 1, storage_check_failed, nothing written); whatever it
// calls usable, init creates the graph, printing the same warnings. A
// wrong declaration of a capability the engine never uses is a warning,
// not a refusal.
func TestStorageCheckAndInitAgree(t *testing.T) {
	runAgreement(t, []agreeCase{
		{name: "mem", url: func(t *testing.T) string { return "mem://agree-" + testenv.Prefix(t) }, mode: "full"},
		{name: "local", url: func(t *testing.T) string { return t.TempDir() }, mode: "full"},
		{name: "gocloud mem bridge", url: func(t *testing.T) string { return "gocloud+mem://agree-" + testenv.Prefix(t) }, mode: "unleased"},
		{name: "ignores conditions", url: fresh("test-ignoresconditions"), mode: "read_only"},
		{name: "conditions ignored on large writes", url: fresh("test-multipartlies"), mode: "read_only"},
		{name: "one create in twenty races", url: fresh("test-oneintwenty"), mode: "read_only"},
		{name: "no conditional create", url: fresh("test-nocreate"), mode: "read_only"},
		{name: "broken ranged reads", url: fresh("test-brokenrange"), mode: "unusable"},
		{name: "deletes nothing", url: fresh("test-deletesnothing"), mode: "unusable"},
		{name: "claims key and child", url: fresh("test-claimskeychild"), mode: "full", warn: "?key_child_coexist=false"},
		{name: "claims a version per write", url: fresh("test-versionliar"), mode: "full", warn: "new version per identical write"},
		{name: "undeclared swap writes", url: fresh("test-undeclaredswap"), mode: "unleased", warn: "does not declare compare-and-swap"},
	})
}

// TestStorageCheckAndInitAgreeEmulators is the agreement on the real
// servers, each checked with the full races of storage check (16 writers x
// 150 rounds): versitygw with and without key_child_coexist=false (without
// it, the check used to call it unusable while init succeeded), MinIO (the
// check used to call it unusable: its listings hide what the probe wrote),
// GCS, Azure, and S3 through the gocloud bridge (no compare-and-swap:
// unleased locks only).
func TestStorageCheckAndInitAgreeEmulators(t *testing.T) {
	runAgreement(t, []agreeCase{
		{name: "s3", url: func(t *testing.T) string { return testenv.S3(t) }, mode: "full"},
		{name: "s3 without key_child_coexist", url: func(t *testing.T) string {
			u, _, _ := strings.Cut(testenv.S3(t), "?")
			return u
		}, mode: "full", warn: "?key_child_coexist=false"},
		{name: "minio", url: func(t *testing.T) string { return testenv.MinIO(t, "") }, mode: "full"},
		{name: "gcs", url: func(t *testing.T) string { return testenv.GCS(t) }, mode: "full"},
		{name: "azure", url: func(t *testing.T) string { return testenv.Azure(t) }, mode: "full"},
		{name: "gocloud+s3", url: func(t *testing.T) string { return testenv.GocloudS3(t) }, mode: "unleased"},
	})
}

// fresh is a URL of scheme on a store of its own for this test.
func fresh(scheme string) func(*testing.T) string {
	return func(t *testing.T) string { return scheme + "://" + strings.ToLower(testenv.Prefix(t)) }
}

func runAgreement(t *testing.T, cases []agreeCase) {
	schema := writeSchema(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := recordVerdicts(t)
			url := c.url(t)
			var out, errb bytes.Buffer
			code := run(t.Context(), []string{"storage", "check", "--json", url}, strings.NewReader(""), &out, &errb)
			var rep checkReport
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatalf("storage check --json: exit %d, %v\n%s%s", code, err, out.String(), errb.String())
			}
			calls := rec.take()
			if len(calls) != 1 || calls[0].prefix != checkPrefix {
				t.Fatalf("storage check made %d verdict calls %+v, want one through storeVerdict", len(calls), calls)
			}
			if rep.Mode != c.mode || rep.Mode != calls[0].v.Mode || rep.Usable != (code == exitOK) {
				t.Fatalf("storage check: mode %q (verdict call %q), exit %d; want mode %q\n%s", rep.Mode, calls[0].v.Mode, code, c.mode, rep.Verdict)
			}
			if got := strings.Join(rep.Warnings, "\n"); (c.warn == "" && got != "") || !strings.Contains(got, c.warn) {
				t.Fatalf("storage check warnings %q, want one containing %q", rep.Warnings, c.warn)
			}

			for _, r := range rep.Rules {
				if r.Name == "PutIfAbsentRace" && r.Result == "ok" && !strings.Contains(r.Detail, "150 rounds x 16 writers") {
					t.Fatalf("storage check's race ran %q, want its full size", r.Detail)
				}
			}

			// A fresh location on the same store: a store that cannot delete
			// keeps the check's probe keys, and init refuses a location
			// holding foreign objects before it probes.
			url = c.url(t)
			code, initOut, initErr := cli(t, "init", "--schema", schema, url)
			calls = rec.take()
			if len(calls) != 1 || calls[0].prefix != initScope.prefix {
				t.Fatalf("init made %d verdict calls %+v, want one through storeVerdict", len(calls), calls)
			}
			if calls[0].v.Mode != rep.Mode || calls[0].v.Usable != rep.Usable {
				t.Fatalf("init's verdict %q (%s), storage check's %q: they disagree", calls[0].v.Mode, calls[0].v.Text, rep.Mode)
			}
			if !rep.Usable {
				// The same mode; the text names the rules that failed in
				// init's own (smaller) races.
				if code != exitError || !strings.Contains(initErr, "init refused, nothing was written") || !strings.Contains(initErr, calls[0].v.Text) {
					t.Fatalf("init on a store the check calls %s: exit %d\n%s%s", rep.Mode, code, initOut, initErr)
				}
				return
			}
			if code != exitOK || !strings.Contains(initOut, "created graph") {
				t.Fatalf("init on a store the check calls %s: exit %d\n%s%s", rep.Mode, code, initOut, initErr)
			}
			for _, w := range rep.Warnings {
				if !strings.Contains(initErr, "warning: "+w) {
					t.Fatalf("init did not print the check's warning %q:\n%s", w, initErr)
				}
			}
			// The graph works: a write and a read.
			mustCLI(t, "mutate", "-e", `insert Person {name: "ada"}`, "--store", url)
			if got := personNames(t, url); got["ada"] != 1 || len(got) != 1 {
				t.Fatalf("the graph init made holds %v, want ada once", got)
			}
		})
	}
}

// TestRefusedInitChangesNothing: an init whose verdict is no leaves the
// location as it was: a local directory it had to create (and its missing
// parents) is gone again, no probe keys remain, and a second init after the
// store is fixed succeeds. The verdict is forced to unusable after the
// real survey ran, so the survey's own cleanup is what is checked.
func TestRefusedInitChangesNothing(t *testing.T) {
	real := storeVerdict
	t.Cleanup(func() { storeVerdict = real })
	storeVerdict = func(ctx context.Context, url string, s backend.StorageAdapter, sc surveyScope) (*conformance.Survey, error) {
		sv, err := real(ctx, url, s, sc)
		if err == nil {
			sv.Verdict = conformance.Verdict{Mode: "unusable", Text: "unusable: forced by the test"}
		}
		return sv, err
	}
	parent := t.TempDir()
	dir := filepath.Join(parent, "new", "graph")
	code, _, errs := cli(t, "init", "--schema", writeSchema(t), dir)
	if code != exitError || !strings.Contains(errs, "forced by the test") {
		t.Fatalf("forced refusal: exit %d, %s", code, errs)
	}
	if ents, err := os.ReadDir(parent); err != nil || len(ents) != 0 {
		t.Fatalf("a refused init left %v in the parent (%v), want nothing: it created the directory", ents, err)
	}
	url := "mem://refused-" + testenv.Prefix(t)
	if code, _, _ := cli(t, "init", "--schema", writeSchema(t), url); code != exitError {
		t.Fatalf("forced refusal on mem: exit %d", code)
	}
	s, err := backend.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	if left, err := backend.ListAll(t.Context(), s, ""); err != nil || len(left) != 0 {
		t.Fatalf("a refused init left %d keys (%v)", len(left), err)
	}
	storeVerdict = real
	mustCLI(t, "init", "--schema", writeSchema(t), dir)
	if _, err := os.Stat(filepath.Join(dir, "_graph.json")); err != nil {
		t.Fatalf("init after the refusal: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "_omnigraph_probe")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("init left its survey directory: %v", err)
	}
}

// TestStorageCheckAndInitRefuseGofakes3 runs gofakes3 v1.2.0 (an
// in-process S3 server others test against) as a store the verdict must
// refuse: it checks no condition on multipart completions, answers a
// PutIfMatch on a missing key with 412 where the contract needs a
// not-found, and serves ranged reads whose checksums fail. Storage check
// calls it unusable and init refuses it, writing nothing. (The native s3
// adapter no longer sends conditions on multipart uploads, so the first gap
// alone would not endanger a graph; the verdict refuses it for the others.)
func TestStorageCheckAndInitRefuseGofakes3(t *testing.T) {
	srv := httptest.NewServer(gofakes3.New(s3mem.New(), gofakes3.WithAutoBucket(true)).Server())
	t.Cleanup(srv.Close)
	t.Setenv("AWS_ENDPOINT_URL_S3", srv.URL)
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_ACCESS_KEY_ID", "gofakes3")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "gofakes3-secret")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_REGION", "us-east-1")
	runAgreement(t, []agreeCase{
		{name: "gofakes3", url: func(t *testing.T) string { return "s3://gofakes3/" + strings.ToLower(testenv.Prefix(t)) }, mode: "unusable"},
	})
}
