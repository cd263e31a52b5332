package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"hash/fnv"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/conformance"
)

// ignoresConditions claims conditional create and update but treats both
// as plain writes.
type ignoresConditions struct{ *mem.Store }

func (b ignoresConditions) PutIfAbsent(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	return b.Store.Put(ctx, key, data)
}

func (b ignoresConditions) PutIfMatch(ctx context.Context, key string, data []byte, version string) (backend.Attrs, error) {
	return b.Store.Put(ctx, key, data)
}

// blindCreate claims conditional create but overwrites (fence_test.go).
type blindCreate struct{ *mem.Store }

func (b blindCreate) PutIfAbsent(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	return b.Store.Put(ctx, key, data)
}

// sequentialOnly enforces both conditions one request at a time (a check,
// then the write), but not under concurrency: a second request in the gap
// passes the same check.
type sequentialOnly struct{ *mem.Store }

func (b sequentialOnly) PutIfAbsent(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	if ok, err := b.Store.Exists(ctx, key); err != nil || ok {
		return backend.Attrs{}, backend.NewError("put-if-absent", key, backend.KindPrecondition, err)
	}
	runtime.Gosched()
	return b.Store.Put(ctx, key, data)
}

func (b sequentialOnly) PutIfMatch(ctx context.Context, key string, data []byte, version string) (backend.Attrs, error) {
	a, err := b.Store.Stat(ctx, key)
	if err != nil {
		return a, backend.NormalizeMatch("put-if-match", key, err)
	}
	if a.Version != version {
		return backend.Attrs{}, backend.NewError("put-if-match", key, backend.KindPrecondition, nil)
	}
	runtime.Gosched()
	return b.Store.Put(ctx, key, data)
}

// oneInTwenty honours If-None-Match: * except on one key in twenty (by a
// hash of the key below the check's scratch prefix), where every
// concurrent create wins: a server whose check races its write now and then.
type oneInTwenty struct{ *mem.Store }

func (b oneInTwenty) PutIfAbsent(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	rel := key
	for i := 0; i < 2; i++ {
		_, rel, _ = strings.Cut(rel, "/")
	}
	h := fnv.New32a()
	h.Write([]byte(rel))
	if h.Sum32()%20 == 0 {
		return b.Store.Put(ctx, key, data)
	}
	return b.Store.PutIfAbsent(ctx, key, data)
}

// multipartIgnoresConditions honours both conditions on small bodies and
// ignores them above 16 MiB, as a server that drops If-None-Match and
// If-Match on CompleteMultipartUpload does.
type multipartIgnoresConditions struct{ *mem.Store }

func (b multipartIgnoresConditions) PutIfAbsent(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	if len(data) > 16<<20 {
		return b.Store.Put(ctx, key, data)
	}
	return b.Store.PutIfAbsent(ctx, key, data)
}

func (b multipartIgnoresConditions) PutIfMatch(ctx context.Context, key string, data []byte, version string) (backend.Attrs, error) {
	if len(data) > 16<<20 {
		return b.Store.Put(ctx, key, data)
	}
	return b.Store.PutIfMatch(ctx, key, data, version)
}

// claimsKeyAndChild declares that k and k/child coexist but refuses the
// child, as a file-backed S3 server opened without key_child_coexist=false.
type claimsKeyAndChild struct{ *mem.Store }

func (b claimsKeyAndChild) Put(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	if i := strings.LastIndex(key, "/"); i > 0 {
		if ok, _ := b.Store.Exists(ctx, key[:i]); ok {
			if _, err := b.Store.Stat(ctx, key[:i]); err == nil {
				return backend.Attrs{}, backend.NewError("put", key, backend.KindPermanent, errors.New("409 Conflict: a file is in the way"))
			}
		}
	}
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
	for scheme, wrap := range map[string]func(*mem.Store) backend.StorageAdapter{
		"test-ignoresconditions": func(m *mem.Store) backend.StorageAdapter { return ignoresConditions{m} },
		"test-blindcreate":       func(m *mem.Store) backend.StorageAdapter { return blindCreate{m} },
		"test-sequentialonly":    func(m *mem.Store) backend.StorageAdapter { return sequentialOnly{m} },
		"test-oneintwenty":       func(m *mem.Store) backend.StorageAdapter { return oneInTwenty{m} },
		"test-nocreate":          func(m *mem.Store) backend.StorageAdapter { return noCreate{m} },
		"test-multipartlies":     func(m *mem.Store) backend.StorageAdapter { return multipartIgnoresConditions{m} },
		"test-claimskeychild":    func(m *mem.Store) backend.StorageAdapter { return claimsKeyAndChild{m} },
		"test-params":            func(m *mem.Store) backend.StorageAdapter { return m },
		"test-brokenrange":       func(m *mem.Store) backend.StorageAdapter { return brokenRange{m} },
		"test-versionliar":       func(m *mem.Store) backend.StorageAdapter { return versionLiar{m} },
		"test-undeclaredswap":    func(m *mem.Store) backend.StorageAdapter { return undeclaredSwap{m} },
		"test-deletesnothing":    func(m *mem.Store) backend.StorageAdapter { return deletesNothing{m} },
	} {
		backend.Register(scheme, func(ctx context.Context, u *url.URL) (backend.StorageAdapter, error) {
			return wrap(sharedMem(u)), nil
		})
	}
}

var (
	sharedMu   sync.Mutex
	sharedMems = map[string]*mem.Store{}
)

// sharedMem is the in-memory store of a test scheme's URL: one per scheme
// and host, so a graph init writes there is there for the next command.
func sharedMem(u *url.URL) *mem.Store {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	k := u.Scheme + "://" + u.Host
	if sharedMems[k] == nil {
		sharedMems[k] = mem.New()
	}
	return sharedMems[k]
}

func storageCheckRun(t *testing.T, url string) (int, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(t.Context(), []string{"storage", "check", url}, strings.NewReader(""), &out, &errb)
	t.Logf("omnigraph storage check %s (exit %d):\n%s%s", url, code, out.String(), errb.String())
	return code, out.String() + errb.String()
}

// row returns the line for a rule or capability.
func row(out, name string) string {
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, name) {
			return line
		}
	}
	return ""
}

const (
	verdictFull     = "verdict: full read-write with leased server locks"
	verdictUnleased = "verdict: read-write with unleased locks only"
	verdictReadOnly = "verdict: read-only"
)

// TestStorageCheck pins the rule that storage check runs the suite's live
// rules and gives the verdict the store earns: full read-write on stores
// whose conditions hold, unleased locks only without conditional update, and
// read-only (exit 1) on stores that lie about conditional create, whether
// they ignore the condition, enforce it only sequentially, or let
// concurrent creates through one key in twenty.
func TestStorageCheck(t *testing.T) {
	cases := []struct {
		name     string
		url      string
		wantCode int
		verdict  string
		wantRows map[string]string // rule or capability -> substring of its line
	}{
		{name: "mem", url: "mem://storage-check", wantCode: 0, verdict: verdictFull, wantRows: map[string]string{
			"PutIfAbsentRace": "ok      150 rounds x 16 writers", "CompareAndSwapCounter": "ok", "ListAfterWriteOverwriteDelete": "ok", "cleanup": "yes"}},
		{name: "local", url: t.TempDir(), wantCode: 0, verdict: verdictFull, wantRows: map[string]string{
			"PutIfAbsentRace": "ok", "BasicReadWrite": "ok", "key and key/child coexist": "no        no"}},
		{name: "gocloud mem bridge", url: "gocloud+mem://storage-check", wantCode: 0, verdict: verdictUnleased, wantRows: map[string]string{
			"compare-and-swap": "no        absent", "PutIfMatchRace": "skipped  store does not declare ConditionalUpdate", "PutIfAbsentRace": "ok"}},
		{name: "ignores conditions", url: "test-ignoresconditions://x", wantCode: 1, verdict: verdictReadOnly, wantRows: map[string]string{
			"PutIfAbsentRace": "FAILED", "PutIfMatchRace": "FAILED"}},
		{name: "sequential only", url: "test-sequentialonly://x", wantCode: 1, verdict: verdictReadOnly, wantRows: map[string]string{
			"PutIfAbsentRace": "FAILED", "CompareAndSwapCounter": "FAILED", "PutIfMatchMissingIsPrecondition": "ok"}},
		{name: "one round in twenty", url: "test-oneintwenty://x", wantCode: 1, verdict: verdictReadOnly, wantRows: map[string]string{
			"PutIfAbsentRace": "FAILED", "PutIfAbsentClaims": "FAILED", "PutIfMatchRace": "ok"}},
		{name: "no conditional create", url: "test-nocreate://x", wantCode: 1, verdict: verdictReadOnly, wantRows: map[string]string{
			"PutIfAbsentRace": "skipped  store does not declare ConditionalCreate"}},
		{name: "conditions ignored on multipart uploads", url: "test-multipartlies://x", wantCode: 1, verdict: verdictReadOnly, wantRows: map[string]string{
			"LargeConditionalCreate": "FAILED", "LargeConditionalUpdate": "FAILED", "PutIfAbsentRace": "ok", "CompareAndSwapCounter": "ok"}},
		{name: "declares key and child but refuses", url: "test-claimskeychild://x", wantCode: 0, verdict: verdictFull, wantRows: map[string]string{
			"key and key/child coexist":                   "yes       no",
			"warning: the store refuses k beside k/child": "add ?key_child_coexist=false to the URL"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out := storageCheckRun(t, c.url)
			if code != c.wantCode {
				t.Fatalf("exit %d, want %d", code, c.wantCode)
			}
			if !strings.Contains(out, c.verdict) {
				t.Fatalf("no %q in the output", c.verdict)
			}
			for name, want := range c.wantRows {
				if r := row(out, name); !strings.Contains(r, want) {
					t.Fatalf("row %q = %q, want it to contain %q", name, r, want)
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

// TestStorageCheckHeaderKeepsParameters pins the rule that the header
// redacts credentials only: key_child_coexist=true is shown as written.
func TestStorageCheckHeaderKeepsParameters(t *testing.T) {
	_, out := storageCheckRun(t, "test-params://x/p?key_child_coexist=true&sig=s3cr3tsig")
	head := strings.SplitN(out, "\n", 2)[0]
	if !strings.Contains(head, "key_child_coexist=true") || strings.Contains(head, "s3cr3tsig") {
		t.Fatalf("header = %q, want key_child_coexist=true kept and the signature redacted", head)
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
	if code != exitConfiguration {
		t.Fatalf("exit %d, want %d (a definite configuration refusal)", code, exitConfiguration)
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

// TestStorageCheckJSON pins storage check --json: one JSON document on
// stdout with every rule, every capability row, the verdict and its mode,
// the same verdict as the tables, exit 1 for an unusable or read-only store,
// and no probe key in the output.
func TestStorageCheckJSON(t *testing.T) {
	cases := []struct {
		url      string
		wantCode int
		mode     string
		failed   string // a rule that must be "failed"
	}{
		{url: "mem://storage-check-json", wantCode: 0, mode: "full"},
		{url: "gocloud+mem://storage-check-json", wantCode: 0, mode: "unleased"},
		{url: "test-ignoresconditions://x", wantCode: 1, mode: "read_only", failed: "PutIfAbsentRace"},
	}
	for _, c := range cases {
		t.Run(c.url, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(t.Context(), []string{"storage", "check", "--json", c.url}, strings.NewReader(""), &out, &errb)
			if code != c.wantCode {
				t.Fatalf("exit %d, want %d\n%s%s", code, c.wantCode, out.String(), errb.String())
			}
			var rep struct {
				Rules []struct {
					Name, Result, Detail string
				} `json:"rules"`
				Capabilities []struct {
					Name, Declared, Observed string
					OK                       bool `json:"ok"`
				} `json:"capabilities"`
				Verdict string `json:"verdict"`
				Mode    string `json:"mode"`
				Usable  bool   `json:"usable"`
			}
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatalf("stdout is not one JSON document: %v\n%s", err, out.String())
			}
			if rep.Mode != c.mode || rep.Usable != (c.wantCode == 0) || rep.Verdict == "" {
				t.Fatalf("mode %q usable %v verdict %q; want mode %q", rep.Mode, rep.Usable, rep.Verdict, c.mode)
			}
			if len(rep.Rules) != len(conformance.Probes()) {
				t.Fatalf("%d rules, want one per probe (%d)", len(rep.Rules), len(conformance.Probes()))
			}
			results := map[string]string{}
			for _, r := range rep.Rules {
				results[r.Name] = r.Result
			}
			if c.failed != "" && results[c.failed] != "failed" {
				t.Fatalf("rule %s = %q, want failed", c.failed, results[c.failed])
			}
			if c.failed == "" && results["PutIfAbsentRace"] != "ok" {
				t.Fatalf("PutIfAbsentRace = %q, want ok", results["PutIfAbsentRace"])
			}
			if len(rep.Capabilities) != 4 || rep.Capabilities[3].Name != "cleanup of probe keys" || !rep.Capabilities[3].OK {
				t.Fatalf("capabilities = %+v, want 4 rows ending with a clean cleanup", rep.Capabilities)
			}
			if strings.Contains(out.String(), checkPrefix) {
				t.Fatalf("the JSON names the probe prefix:\n%s", out.String())
			}
		})
	}
}

// refuseAll refuses every request the way a store with a bad bucket name
// (400 InvalidBucketName), a missing bucket or refused credentials does.
type refuseAll struct{ *mem.Store }

func (refuseAll) refused(op, key string) error {
	return backend.NewError(op, key, backend.KindConfiguration, errors.New("s3 HTTP 400 InvalidBucketName: The specified bucket is not valid"))
}

func (r refuseAll) Get(ctx context.Context, key string) ([]byte, backend.Attrs, error) {
	return nil, backend.Attrs{}, r.refused("get", key)
}

func (r refuseAll) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	return nil, r.refused("get", key)
}

func (r refuseAll) Stat(ctx context.Context, key string) (backend.Attrs, error) {
	return backend.Attrs{}, r.refused("stat", key)
}

func (r refuseAll) List(ctx context.Context, prefix string, opts backend.ListOptions) (backend.ListPage, error) {
	return backend.ListPage{}, r.refused("list", prefix)
}

func (r refuseAll) Put(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	return backend.Attrs{}, r.refused("put", key)
}

func (r refuseAll) PutIfAbsent(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	return backend.Attrs{}, r.refused("put-if-absent", key)
}

// TestConfigurationRefusalExitCode: a store that definitely refuses its
// configuration makes init, a reader and a CLI writer exit 8 (not 1, and
// never serve's 2) with code storage_configuration and what to fix.
func TestConfigurationRefusalExitCode(t *testing.T) {
	backend.Register("test-refuse-config", func(ctx context.Context, u *url.URL) (backend.StorageAdapter, error) {
		return refuseAll{mem.New()}, nil
	})
	const url = "test-refuse-config://tp/g"
	for _, args := range [][]string{
		{"init", "--schema", writeSchema(t), url},
		{"snapshot", "--store", url},
		{"mutate", "-e", `insert Person { name: "x" }`, "--store", url},
		{"load", "--data", "-", "--mode", "merge", url},
	} {
		code, _, errs := cli(t, args...)
		if code != exitConfiguration || !strings.Contains(errs, "InvalidBucketName") || !strings.Contains(errs, "bucket or container name") || !strings.Contains(errs, "credentials") {
			t.Errorf("%s on a store refusing its configuration: exit %d %q; want exit %d saying what to fix", args[0], code, errs, exitConfiguration)
		}
		code, _, errs = cli(t, append(args, "--json")...)
		if args[0] == "snapshot" && (code != exitConfiguration || !strings.Contains(errs, `"code":"storage_configuration"`)) {
			t.Errorf("%s --json: exit %d %s; want code storage_configuration", args[0], code, errs)
		}
	}
}
