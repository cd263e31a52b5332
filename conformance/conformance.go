package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
)

// Maker returns a fresh, empty namespace of the store under test (e.g. a
// unique prefix via backend.WithPrefix, or a new t.TempDir()), registering its
// own cleanup with t.Cleanup.
type Maker func(t *testing.T) backend.StorageAdapter

// subtestTimeout bounds one subtest so a hung network store fails instead of
// stalling the whole run (race rules get their race budget on top).
const subtestTimeout = 3 * time.Minute

type rule struct {
	name  string
	needs Needs
	run   func(t *testing.T, s backend.StorageAdapter)
	// runO is run for rules that read Options.
	runO  func(t *testing.T, s backend.StorageAdapter, o Options)
	probe *Probe
}

var rules = []rule{
	{name: "NotFoundIsTyped", run: testNotFoundIsTyped},
	{name: "PutGetStatRoundTrip", run: testRoundTrip},
	{name: "GetRange", run: testGetRange},
	{name: "PutIfAbsentSequential", needs: NeedsConditionalCreate, run: testPutIfAbsentSequential},
	{name: "PutIfMatchRules", run: testPutIfMatchRules},
	{name: "CancelledWriteLeavesNothing", run: testCancelledWrite},
	{name: "ListOrderAndPagination", run: testListPagination},
	{name: "ListPrefixIsNotADirectory", run: testListPrefix},
	{name: "ListHidesTempResidue", run: testListHidesResidue},
	{name: "InvalidAndTempKeysRefused", run: testInvalidKeys},
	{name: "Exists", run: testExists},
	{name: "DeleteIdempotent", run: testDeleteIdempotent},
	{name: "DeletePrefix", run: testDeletePrefix},
	{name: "DeletePrefixConcurrent", run: testDeletePrefixConcurrent},
	{name: "OddKeys", run: testOddKeys},
	{name: "LargeObject", run: testLargeObject},
	{name: "VersionChangesOnOverwrite", run: testVersionChanges},
	{name: "OverwriteIsAtomic", run: testOverwriteAtomic},
	{name: "KeyAndChild", run: testKeyAndChild},
	{name: "ErrorsCarryNoSecrets", run: testNoSecrets},
	{name: "CancelInFlight", runO: testCancelInFlight},
	{name: "CredentialFailuresAreLoud", runO: testDenied},
}

func allRules() []rule {
	out := append([]rule(nil), rules...)
	for i := range probes {
		p := &probes[i]
		out = append(out, rule{name: p.Name, needs: p.Needs, probe: p})
	}
	return out
}

// Run runs every rule as a subtest (t.Run per rule), each on a fresh
// namespace from newStore, and ends with a summary (t.Log) of the rules that
// passed, failed and were skipped, with each skip's reason. A rule that needs
// a capability the store does not declare is skipped with the reason. The
// live probes (Probes) run with opts; race rules stop at the race budget
// rather than fail a slow but correct store, and log the rounds they ran.
func Run(t *testing.T, newStore Maker, opts ...Option) {
	t.Helper()
	var o Options
	for _, f := range opts {
		f(&o)
	}
	o = o.withDefaults()
	var passed, failed, skipped []string
	for _, r := range allRules() {
		var reason string
		ok := t.Run(r.name, func(t *testing.T) {
			defer func() {
				if t.Skipped() && reason == "" {
					reason = skipReason(t)
				}
			}()
			s := newStore(t)
			if s == nil {
				t.Fatal("Maker returned a nil store")
			}
			if reason = r.needs.SkipReason(s.Capabilities()); reason != "" {
				t.Skip(reason)
			}
			if r.runO != nil {
				r.runO(t, s, o)
				return
			}
			if r.probe == nil {
				r.run(t, s)
				return
			}
			t.Log(r.probe.Rule)
			ctx, cancel := context.WithTimeout(t.Context(), subtestTimeout+o.RaceBudget)
			defer cancel()
			rep, err := r.probe.Check(ctx, s, o)
			if err != nil {
				t.Fatalf("%s: %v", r.name, err)
			}
			t.Logf("%s held: %s", r.name, rep.Note)
		})
		switch {
		case reason != "":
			skipped = append(skipped, r.name+" ("+reason+")")
		case ok:
			passed = append(passed, r.name)
		default:
			failed = append(failed, r.name)
		}
	}
	t.Logf("conformance summary: %d rules ran, %d passed, %d failed, %d skipped\npassed: %s\nfailed: %s\nskipped: %s",
		len(passed)+len(failed), len(passed), len(failed), len(skipped), list(passed), list(failed), list(skipped))
}

// skipReasons holds the reason of each rule that skipped itself, for the
// summary (testing.T does not expose it).
var skipReasons sync.Map // *testing.T -> string

// skipRule skips the rule with reason and records it for Run's summary.
func skipRule(t *testing.T, reason string) {
	t.Helper()
	skipReasons.Store(t, reason)
	t.Skip(reason)
}

func skipReason(t *testing.T) string {
	if r, ok := skipReasons.LoadAndDelete(t); ok {
		return r.(string)
	}
	return "skipped by the rule"
}

func list(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// ctxFor returns a context bounded by the subtest's lifetime and subtestTimeout.
func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), subtestTimeout)
	t.Cleanup(cancel)
	return ctx
}

func mustPut(t testing.TB, ctx context.Context, s backend.StorageAdapter, key string, data []byte) backend.Attrs {
	t.Helper()
	a, err := s.Put(ctx, key, data)
	if err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
	return a
}

func mustGet(t testing.TB, ctx context.Context, s backend.StorageAdapter, key string) []byte {
	t.Helper()
	b, _, err := s.Get(ctx, key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	return b
}

// listKeys pages through prefix with the given page size and checks each
// page's shape on the way.
func listKeys(t testing.TB, ctx context.Context, s backend.StorageAdapter, prefix string, pageSize int) []string {
	t.Helper()
	limit := pageSize
	if limit <= 0 {
		limit = backend.DefaultPageSize
	}
	var keys []string
	opts := backend.ListOptions{MaxKeys: pageSize}
	for pages := 0; ; pages++ {
		if pages > 100000 {
			t.Fatalf("List(%q) did not terminate", prefix)
		}
		page, err := s.List(ctx, prefix, opts)
		if err != nil {
			t.Fatalf("List(%q, %+v): %v", prefix, opts, err)
		}
		if len(page.Objects) > limit {
			t.Fatalf("List(%q, MaxKeys=%d) returned %d objects, more than the cap %d", prefix, pageSize, len(page.Objects), limit)
		}
		if page.Truncated && len(page.Objects) == 0 {
			t.Fatalf("List(%q) returned an empty truncated page", prefix)
		}
		for _, o := range page.Objects {
			if !strings.HasPrefix(o.Key, prefix) {
				t.Fatalf("List(%q) returned %q, outside the prefix", prefix, o.Key)
			}
			if opts.StartAfter != "" && o.Key <= opts.StartAfter {
				t.Fatalf("List(%q, StartAfter=%q) returned %q, not after it", prefix, opts.StartAfter, o.Key)
			}
			for _, seg := range strings.Split(o.Key, "/") {
				if backend.IsTempName(seg) {
					t.Fatalf("List(%q) returned temp-shaped key %q", prefix, o.Key)
				}
			}
			keys = append(keys, o.Key)
		}
		if !page.Truncated {
			break
		}
		opts.StartAfter = page.Objects[len(page.Objects)-1].Key
	}
	if !sort.StringsAreSorted(keys) {
		t.Fatalf("List(%q) keys are not in ascending byte order: %q", prefix, keys)
	}
	for i := 1; i < len(keys); i++ {
		if keys[i] == keys[i-1] {
			t.Fatalf("List(%q) returned %q twice", prefix, keys[i])
		}
	}
	return keys
}

func equalKeys(t testing.TB, what string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d keys, want %d\n got: %q\nwant: %q", what, len(got), len(want), clip(got), clip(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: key %d is %q, want %q", what, i, got[i], want[i])
		}
	}
}

func clip(keys []string) []string {
	if len(keys) > 20 {
		return append(append([]string{}, keys[:20]...), "...")
	}
	return keys
}

func wantKind(t testing.TB, what string, err error, sentinel error) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("%s: got error %v (kind %s), want errors.Is(err, %q)", what, err, backend.KindOf(err), sentinel)
	}
}

// parallel runs fn(i) for i in [0,n) on up to workers goroutines and returns
// the first error.
func parallel(n, workers int, fn func(i int) error) error {
	var (
		next  atomic.Int64
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

func testNotFoundIsTyped(t *testing.T, s backend.StorageAdapter) {
	ctx := ctxFor(t)
	const key = "missing/object"
	_, _, err := s.Get(ctx, key)
	wantKind(t, "Get on a missing key", err, backend.ErrNotFound)
	_, err = s.GetRange(ctx, key, 0, 10)
	wantKind(t, "GetRange on a missing key", err, backend.ErrNotFound)
	_, err = s.Stat(ctx, key)
	wantKind(t, "Stat on a missing key", err, backend.ErrNotFound)
	if backend.KindOf(err) != backend.KindNotFound {
		t.Fatalf("KindOf(Stat error) = %s, want not_found", backend.KindOf(err))
	}
	if s.Capabilities().ConditionalUpdate {
		_, err = s.PutIfMatch(ctx, key, []byte("x"), "1")
		wantKind(t, "PutIfMatch on a missing key", err, backend.ErrNotFound)
		if ok, _ := s.Exists(ctx, key); ok {
			t.Fatal("PutIfMatch on a missing key created it")
		}
	}
	// A directory-like prefix is not an object.
	mustPut(t, ctx, s, "dir/child", []byte("c"))
	_, _, err = s.Get(ctx, "dir")
	wantKind(t, "Get on a prefix that only has children", err, backend.ErrNotFound)
	_, err = s.Stat(ctx, "dir")
	wantKind(t, "Stat on a prefix that only has children", err, backend.ErrNotFound)
}

func testRoundTrip(t *testing.T, s backend.StorageAdapter) {
	ctx := ctxFor(t)
	const key = "a/b/c.bin"
	data := []byte("hello, storage")
	put := mustPut(t, ctx, s, key, data)
	if put.Key != key || put.Size != int64(len(data)) || put.Version == "" {
		t.Fatalf("Put attrs = %+v, want key %q, size %d, a version", put, key, len(data))
	}
	got, ga, err := s.Get(ctx, key)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("Get = %q, want %q", got, data)
	}
	st, err := s.Stat(ctx, key)
	if err != nil {
		t.Fatalf("Stat: %v", err)
	}
	if st.Key != key || st.Size != int64(len(data)) || st.Version != put.Version || st.ModTime.IsZero() {
		t.Fatalf("Stat = %+v, want key %q, size %d, version %q (as Put returned), a mod time", st, key, len(data), put.Version)
	}
	if ga.Version != put.Version || ga.Size != put.Size {
		t.Fatalf("Get attrs = %+v, want version %q size %d", ga, put.Version, put.Size)
	}
	// An empty object is an object.
	empty := mustPut(t, ctx, s, "empty", nil)
	if empty.Size != 0 {
		t.Fatalf("empty Put size = %d", empty.Size)
	}
	if b := mustGet(t, ctx, s, "empty"); len(b) != 0 {
		t.Fatalf("Get(empty) = %q, want no bytes", b)
	}
	if ok, err := s.Exists(ctx, "empty"); err != nil || !ok {
		t.Fatalf("Exists(empty) = %v, %v; want true", ok, err)
	}
	keys := listKeys(t, ctx, s, "", 0)
	equalKeys(t, "List after two Puts", keys, []string{key, "empty"})
}

func testGetRange(t *testing.T, s backend.StorageAdapter) {
	ctx := ctxFor(t)
	mustPut(t, ctx, s, "r/digits", []byte("0123456789"))
	mustPut(t, ctx, s, "r/zero", nil)
	cases := []struct {
		name           string
		key            string
		offset, length int64
		want           string
	}{
		{name: "whole to end", key: "r/digits", offset: 0, length: -1, want: "0123456789"},
		{name: "middle", key: "r/digits", offset: 2, length: 3, want: "234"},
		{name: "from offset to end", key: "r/digits", offset: 7, length: -1, want: "789"},
		{name: "zero length", key: "r/digits", offset: 4, length: 0, want: ""},
		{name: "runs past the end", key: "r/digits", offset: 8, length: 10, want: "89"},
		{name: "starts at the end", key: "r/digits", offset: 10, length: 5, want: ""},
		{name: "starts past the end", key: "r/digits", offset: 50, length: -1, want: ""},
		{name: "exact length", key: "r/digits", offset: 0, length: 10, want: "0123456789"},
		{name: "zero-byte object to end", key: "r/zero", offset: 0, length: -1, want: ""},
		{name: "zero-byte object bounded", key: "r/zero", offset: 0, length: 16, want: ""},
		{name: "zero-byte object past end", key: "r/zero", offset: 3, length: 1, want: ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := s.GetRange(ctx, c.key, c.offset, c.length)
			if err != nil {
				t.Fatalf("GetRange(%q, %d, %d): %v", c.key, c.offset, c.length, err)
			}
			if string(got) != c.want {
				t.Fatalf("GetRange(%q, %d, %d) = %q, want %q", c.key, c.offset, c.length, got, c.want)
			}
		})
	}
}

func testPutIfAbsentSequential(t *testing.T, s backend.StorageAdapter) {
	if !s.Capabilities().ConditionalCreate {
		skipRule(t, "store does not declare ConditionalCreate")
	}
	ctx := ctxFor(t)
	a, err := s.PutIfAbsent(ctx, "claim", []byte("first"))
	if err != nil {
		t.Fatalf("PutIfAbsent on a new key: %v", err)
	}
	st, err := s.Stat(ctx, "claim")
	if err != nil || st.Version != a.Version || a.Key != "claim" || a.Size != 5 {
		t.Fatalf("Stat after PutIfAbsent = %+v, %v; PutIfAbsent returned %+v", st, err, a)
	}
	_, err = s.PutIfAbsent(ctx, "claim", []byte("second"))
	wantKind(t, "PutIfAbsent on an existing key", err, backend.ErrPrecondition)
	if got := mustGet(t, ctx, s, "claim"); string(got) != "first" {
		t.Fatalf("losing PutIfAbsent changed the object to %q", got)
	}
	if err := s.Delete(ctx, "claim"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := s.PutIfAbsent(ctx, "claim", []byte("third")); err != nil {
		t.Fatalf("PutIfAbsent after Delete: %v", err)
	}
	if got := mustGet(t, ctx, s, "claim"); string(got) != "third" {
		t.Fatalf("Get = %q, want third", got)
	}
}

func testPutIfMatchRules(t *testing.T, s backend.StorageAdapter) {
	ctx := ctxFor(t)
	if !s.Capabilities().ConditionalUpdate {
		v := mustPut(t, ctx, s, "cas", []byte("v1")).Version
		_, err := s.PutIfMatch(ctx, "cas", []byte("v2"), v)
		wantKind(t, "PutIfMatch without ConditionalUpdate", err, backend.ErrPermanent)
		if got := mustGet(t, ctx, s, "cas"); string(got) != "v1" {
			t.Fatalf("refused PutIfMatch changed the object to %q", got)
		}
		return
	}
	_, err := s.PutIfMatch(ctx, "cas", []byte("x"), "1")
	wantKind(t, "PutIfMatch on a missing key", err, backend.ErrNotFound)

	v1 := mustPut(t, ctx, s, "cas", []byte("v1")).Version
	a2, err := s.PutIfMatch(ctx, "cas", []byte("v2"), v1)
	if err != nil {
		t.Fatalf("PutIfMatch with the current version: %v", err)
	}
	if a2.Version == "" || a2.Version == v1 || a2.Key != "cas" || a2.Size != 2 {
		t.Fatalf("PutIfMatch attrs = %+v; want a new version (old %q)", a2, v1)
	}
	_, err = s.PutIfMatch(ctx, "cas", []byte("v3"), v1)
	wantKind(t, "PutIfMatch with a stale version", err, backend.ErrPrecondition)
	// Any token other than the current one loses, including an empty one:
	// an adapter must never turn a missing token into an unconditional write.
	_, err = s.PutIfMatch(ctx, "cas", []byte("v3"), "not-a-version")
	wantKind(t, "PutIfMatch with a made-up version", err, backend.ErrPrecondition)
	_, err = s.PutIfMatch(ctx, "cas", []byte("v3"), "")
	wantKind(t, "PutIfMatch with an empty version", err, backend.ErrPrecondition)
	got, attrs, err := s.Get(ctx, "cas")
	if err != nil || string(got) != "v2" || attrs.Version != a2.Version {
		t.Fatalf("after stale PutIfMatch: Get = %q, %+v, %v; want v2 at %q", got, attrs, err, a2.Version)
	}
	// A plain Put moves the version, so the old token is stale.
	mustPut(t, ctx, s, "cas", []byte("v4"))
	_, err = s.PutIfMatch(ctx, "cas", []byte("v5"), a2.Version)
	wantKind(t, "PutIfMatch after an intervening Put", err, backend.ErrPrecondition)
	// After a delete the key is missing again.
	if err := s.Delete(ctx, "cas"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	_, err = s.PutIfMatch(ctx, "cas", []byte("v6"), a2.Version)
	wantKind(t, "PutIfMatch on a deleted key", err, backend.ErrNotFound)
}

func testCancelledWrite(t *testing.T, s backend.StorageAdapter) {
	ctx := ctxFor(t)
	dead, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Put(dead, "cancelled/put", []byte("x")); err == nil {
		t.Fatal("Put with a cancelled context succeeded")
	}
	if s.Capabilities().ConditionalCreate {
		if _, err := s.PutIfAbsent(dead, "cancelled/pia", []byte("x")); err == nil {
			t.Fatal("PutIfAbsent with a cancelled context succeeded")
		}
	}
	v := mustPut(t, ctx, s, "kept", []byte("old")).Version
	if _, err := s.Put(dead, "kept", []byte("new")); err == nil {
		t.Fatal("overwriting Put with a cancelled context succeeded")
	}
	if s.Capabilities().ConditionalUpdate {
		if _, err := s.PutIfMatch(dead, "kept", []byte("new"), v); err == nil {
			t.Fatal("PutIfMatch with a cancelled context succeeded")
		}
	}
	if _, err := s.List(dead, "", backend.ListOptions{}); err == nil {
		t.Fatal("List with a cancelled context succeeded")
	}
	for _, key := range []string{"cancelled/put", "cancelled/pia", "cancelled"} {
		if ok, err := s.Exists(ctx, key); err != nil || ok {
			t.Fatalf("Exists(%q) after a cancelled write = %v, %v; want false", key, ok, err)
		}
	}
	got, attrs, err := s.Get(ctx, "kept")
	if err != nil || string(got) != "old" || attrs.Version != v {
		t.Fatalf("after cancelled overwrites: Get = %q, %+v, %v; want old at %q", got, attrs, err, v)
	}
	equalKeys(t, "List after cancelled writes", listKeys(t, ctx, s, "", 0), []string{"kept"})
}

// orderingTrap keys sort differently as whole keys than a per-directory walk
// would visit them: ' ' < '-' < '.' < '/' < '0' < 'z' < multi-byte UTF-8.
var orderingTrap = []string{
	"q/a b", "q/a-b", "q/a.b", "q/a/b", "q/a/c/d", "q/a0", "q/az", "q/b", "q/é", "q/日本",
}

func testListPagination(t *testing.T, s backend.StorageAdapter) {
	ctx := ctxFor(t)
	const n = 1100
	var want []string
	for i := 0; i < n; i++ {
		want = append(want, fmt.Sprintf("p/%04d", i))
	}
	want = append(want, orderingTrap...)
	shuffled := append([]string{}, want...)
	rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	err := parallel(len(shuffled), 16, func(i int) error {
		_, err := s.Put(ctx, shuffled[i], []byte(shuffled[i]))
		return err
	})
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	sort.Strings(want)

	// Default page size: the first page is capped at DefaultPageSize and
	// must say more follow.
	first, err := s.List(ctx, "p/", backend.ListOptions{})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if !first.Truncated || len(first.Objects) == 0 || len(first.Objects) > backend.DefaultPageSize {
		t.Fatalf("first default page: %d objects, truncated=%v; want 1..%d and truncated", len(first.Objects), first.Truncated, backend.DefaultPageSize)
	}
	if o := first.Objects[0]; o.Key != "p/0000" || o.Size != int64(len("p/0000")) {
		t.Fatalf("first listed object = %+v, want p/0000 of size 6", o)
	}
	equalKeys(t, "default pages over p/", listKeys(t, ctx, s, "p/", 0), want[:n])
	equalKeys(t, "pages of 97 over everything", listKeys(t, ctx, s, "", 97), want)
	equalKeys(t, "ListAll", attrsKeys(t, ctx, s, ""), want)
	equalKeys(t, "pages of 3 over the ordering trap", listKeys(t, ctx, s, "q/", 3), orderingTrap)
	equalKeys(t, "pages of 1 over q/a", listKeys(t, ctx, s, "q/a", 1), orderingTrap[:7])

	cases := []struct {
		name       string
		prefix     string
		startAfter string
		max        int
		want       []string
	}{
		{name: "start after an existing key", prefix: "p/", startAfter: "p/1095", max: 0, want: want[1096:n]},
		{name: "start after a key that does not exist", prefix: "p/", startAfter: "p/0499x", max: 3, want: []string{"p/0500", "p/0501", "p/0502"}},
		{name: "start after everything", prefix: "p/", startAfter: "p/9999", max: 0, want: nil},
		{name: "start before the prefix", prefix: "q/", startAfter: "a", max: 2, want: orderingTrap[:2]},
		{name: "start after inside a directory", prefix: "q/", startAfter: "q/a/b", max: 0, want: orderingTrap[4:]},
		{name: "start after the directory's siblings", prefix: "q/", startAfter: "q/a.b", max: 2, want: orderingTrap[3:5]},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			page, err := s.List(ctx, c.prefix, backend.ListOptions{StartAfter: c.startAfter, MaxKeys: c.max})
			if err != nil {
				t.Fatalf("List: %v", err)
			}
			var got []string
			for _, o := range page.Objects {
				got = append(got, o.Key)
			}
			equalKeys(t, c.name, got, c.want)
		})
	}
}

func attrsKeys(t testing.TB, ctx context.Context, s backend.StorageAdapter, prefix string) []string {
	t.Helper()
	all, err := backend.ListAll(ctx, s, prefix)
	if err != nil {
		t.Fatalf("ListAll(%q): %v", prefix, err)
	}
	var keys []string
	for _, a := range all {
		keys = append(keys, a.Key)
	}
	return keys
}

func testListPrefix(t *testing.T, s backend.StorageAdapter) {
	ctx := ctxFor(t)
	for _, k := range []string{"dir/a", "dir/b/c", "dirt", "dir-x", "di/x", "e"} {
		mustPut(t, ctx, s, k, []byte(k))
	}
	cases := []struct {
		name   string
		prefix string
		want   []string
	}{
		{name: "everything", prefix: "", want: []string{"di/x", "dir-x", "dir/a", "dir/b/c", "dirt", "e"}},
		{name: "string prefix spans siblings", prefix: "dir", want: []string{"dir-x", "dir/a", "dir/b/c", "dirt"}},
		{name: "directory prefix", prefix: "dir/", want: []string{"dir/a", "dir/b/c"}},
		{name: "partial segment inside a directory", prefix: "dir/b", want: []string{"dir/b/c"}},
		{name: "exact key", prefix: "dirt", want: []string{"dirt"}},
		{name: "nothing matches", prefix: "nothing/", want: nil},
		{name: "single letter", prefix: "d", want: []string{"di/x", "dir-x", "dir/a", "dir/b/c", "dirt"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			equalKeys(t, fmt.Sprintf("List(%q)", c.prefix), listKeys(t, ctx, s, c.prefix, 0), c.want)
		})
	}
}

// ResiduePlanter is implemented by a store (or the Maker's wrapper of it)
// that writes through temp names, such as the local backend's name#<digits>:
// PlantResidue leaves the temp-named residue a crash between staging and
// publishing would leave for key, out of band.
type ResiduePlanter interface {
	PlantResidue(ctx context.Context, key string) error
}

// testListHidesResidue: listing with planted temp-name residue (name#123
// beside name, and inside a directory) hides the residue and lists only the
// objects. For a store that writes no temp names (it does not implement
// ResiduePlanter) the rule holds trivially: it passes, saying so, rather
// than skipping, so a store's skips are only capabilities it lacks.
func testListHidesResidue(t *testing.T, s backend.StorageAdapter) {
	rp, ok := s.(ResiduePlanter)
	if !ok {
		t.Log("holds trivially: the store writes no temp names (it does not implement conformance.ResiduePlanter)")
		return
	}
	ctx := ctxFor(t)
	mustPut(t, ctx, s, "res/obj", []byte("o"))
	mustPut(t, ctx, s, "res/dir/child", []byte("c"))
	for _, key := range []string{"res/obj", "res/dir/child", "res/lonely", "top"} {
		if err := rp.PlantResidue(ctx, key); err != nil {
			t.Fatalf("PlantResidue(%q): %v", key, err)
		}
	}
	equalKeys(t, "List with planted residue", listKeys(t, ctx, s, "", 0), []string{"res/dir/child", "res/obj"})
	equalKeys(t, "List(res/) with planted residue", listKeys(t, ctx, s, "res/", 1), []string{"res/dir/child", "res/obj"})
	for _, key := range []string{"res/lonely", "top"} {
		if ok, err := s.Exists(ctx, key); err != nil || ok {
			t.Fatalf("Exists(%q) with only residue = %v, %v; want false", key, ok, err)
		}
	}
}

func testInvalidKeys(t *testing.T, s backend.StorageAdapter) {
	ctx := ctxFor(t)
	mustPut(t, ctx, s, "real", []byte("r"))
	bad := []string{"", "/abs", "a//b", "trailing/", "a/./b", "a/../b", "..", "x#1", "x#0", "dir/obj#123", "dir#42/obj", "nul\x00byte", "bad\xffutf8"}
	for _, key := range bad {
		t.Run(fmt.Sprintf("%q", key), func(t *testing.T) {
			_, _, err := s.Get(ctx, key)
			wantKind(t, "Get", err, backend.ErrPermanent)
			_, err = s.GetRange(ctx, key, 0, -1)
			wantKind(t, "GetRange", err, backend.ErrPermanent)
			_, err = s.Stat(ctx, key)
			wantKind(t, "Stat", err, backend.ErrPermanent)
			_, err = s.Put(ctx, key, []byte("x"))
			wantKind(t, "Put", err, backend.ErrPermanent)
			_, err = s.PutIfAbsent(ctx, key, []byte("x"))
			wantKind(t, "PutIfAbsent", err, backend.ErrPermanent)
			_, err = s.PutIfMatch(ctx, key, []byte("x"), "1")
			wantKind(t, "PutIfMatch", err, backend.ErrPermanent)
			_, err = s.Exists(ctx, key)
			wantKind(t, "Exists", err, backend.ErrPermanent)
			err = s.Delete(ctx, key)
			wantKind(t, "Delete", err, backend.ErrPermanent)
		})
	}
	// '#' followed by something other than digits is an ordinary name.
	for _, key := range []string{"x#", "x#abc", "x#1a", "#", "a#b/c"} {
		mustPut(t, ctx, s, key, []byte(key))
		if got := mustGet(t, ctx, s, key); string(got) != key {
			t.Fatalf("Get(%q) = %q", key, got)
		}
	}
	equalKeys(t, "List after refused keys", listKeys(t, ctx, s, "", 0), []string{"#", "a#b/c", "real", "x#", "x#1a", "x#abc"})
}

func testExists(t *testing.T, s backend.StorageAdapter) {
	ctx := ctxFor(t)
	mustPut(t, ctx, s, "graphical/x", []byte("x"))
	mustPut(t, ctx, s, "obj", []byte("o"))
	mustPut(t, ctx, s, "deep/a/b/c", []byte("c"))
	cases := []struct {
		name string
		key  string
		want bool
	}{
		{name: "object", key: "obj", want: true},
		{name: "non-empty prefix", key: "graphical", want: true},
		{name: "nested non-empty prefix", key: "deep/a", want: true},
		{name: "object inside prefix", key: "graphical/x", want: true},
		{name: "sibling name is not a prefix", key: "graph", want: false},
		{name: "longer sibling", key: "graphicalx", want: false},
		{name: "missing", key: "missing", want: false},
		{name: "below an object", key: "obj/below", want: false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := s.Exists(ctx, c.key)
			if err != nil || got != c.want {
				t.Fatalf("Exists(%q) = %v, %v; want %v, nil", c.key, got, err, c.want)
			}
		})
	}
	// A trailing slash is not a key: refused, not "false".
	_, err := s.Exists(ctx, "deep/a/")
	wantKind(t, "Exists with a trailing slash", err, backend.ErrPermanent)
	// Once the last child goes, the prefix no longer exists (an empty local
	// directory is not an object).
	if err := s.Delete(ctx, "deep/a/b/c"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	for _, key := range []string{"deep", "deep/a", "deep/a/b"} {
		if ok, err := s.Exists(ctx, key); err != nil || ok {
			t.Fatalf("Exists(%q) after deleting its only object = %v, %v; want false", key, ok, err)
		}
	}
}

func testDeleteIdempotent(t *testing.T, s backend.StorageAdapter) {
	ctx := ctxFor(t)
	if err := s.Delete(ctx, "never/was"); err != nil {
		t.Fatalf("Delete of a missing key: %v", err)
	}
	mustPut(t, ctx, s, "gone/soon", []byte("x"))
	mustPut(t, ctx, s, "gone/stays", []byte("y"))
	for i := 0; i < 2; i++ {
		if err := s.Delete(ctx, "gone/soon"); err != nil {
			t.Fatalf("Delete #%d: %v", i+1, err)
		}
	}
	_, _, err := s.Get(ctx, "gone/soon")
	wantKind(t, "Get after Delete", err, backend.ErrNotFound)
	equalKeys(t, "List after Delete", listKeys(t, ctx, s, "", 0), []string{"gone/stays"})
	// Delete of a prefix that has children is a Delete of a missing object:
	// it succeeds and removes nothing.
	if err := s.Delete(ctx, "gone"); err != nil {
		t.Fatalf("Delete of a prefix name: %v", err)
	}
	if got := mustGet(t, ctx, s, "gone/stays"); string(got) != "y" {
		t.Fatalf("Get(gone/stays) = %q", got)
	}
}

func testDeletePrefix(t *testing.T, s backend.StorageAdapter) {
	ctx := ctxFor(t)
	var keys []string
	for i := 0; i < 40; i++ {
		keys = append(keys, fmt.Sprintf("dp/%02d/obj", i))
	}
	keys = append(keys, "dp/top", "dpx", "dp-sibling", "gravel", "graph/a", "g", "other/x")
	if err := parallel(len(keys), 8, func(i int) error {
		_, err := s.Put(ctx, keys[i], []byte("x"))
		return err
	}); err != nil {
		t.Fatalf("Put: %v", err)
	}
	for i := 0; i < 2; i++ {
		if err := s.DeletePrefix(ctx, "dp/"); err != nil {
			t.Fatalf("DeletePrefix(dp/) #%d: %v", i+1, err)
		}
	}
	equalKeys(t, "after DeletePrefix(dp/)", listKeys(t, ctx, s, "", 0), []string{"dp-sibling", "dpx", "g", "graph/a", "gravel", "other/x"})
	if ok, err := s.Exists(ctx, "dp"); err != nil || ok {
		t.Fatalf("Exists(dp) after DeletePrefix = %v, %v; want false", ok, err)
	}
	// A prefix is a string prefix, not a directory.
	if err := s.DeletePrefix(ctx, "gr"); err != nil {
		t.Fatalf("DeletePrefix(gr): %v", err)
	}
	equalKeys(t, "after DeletePrefix(gr)", listKeys(t, ctx, s, "", 0), []string{"dp-sibling", "dpx", "g", "other/x"})
	if err := s.DeletePrefix(ctx, "nothing/here/"); err != nil {
		t.Fatalf("DeletePrefix of an empty prefix: %v", err)
	}
	// The new objects can be written where the old ones were.
	mustPut(t, ctx, s, "dp/00/obj", []byte("again"))
	if got := mustGet(t, ctx, s, "dp/00/obj"); string(got) != "again" {
		t.Fatalf("Get after rewrite = %q", got)
	}
}

func testDeletePrefixConcurrent(t *testing.T, s backend.StorageAdapter) {
	ctx := ctxFor(t)
	const n = 150
	var keys []string
	for i := 0; i < n; i++ {
		keys = append(keys, fmt.Sprintf("cc/%d/%03d", i%7, i))
	}
	if err := parallel(n, 16, func(i int) error {
		_, err := s.Put(ctx, keys[i], []byte("x"))
		return err
	}); err != nil {
		t.Fatalf("Put: %v", err)
	}
	mustPut(t, ctx, s, "keep", []byte("k"))
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.DeletePrefix(ctx, "cc/"); err != nil {
				errs <- fmt.Errorf("DeletePrefix: %w", err)
			}
		}()
	}
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 3 {
				if err := s.Delete(ctx, keys[i]); err != nil {
					errs <- fmt.Errorf("Delete(%s): %w", keys[i], err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent deletes: %v", err)
	}
	equalKeys(t, "after concurrent DeletePrefix", listKeys(t, ctx, s, "", 0), []string{"keep"})
	if ok, err := s.Exists(ctx, "cc"); err != nil || ok {
		t.Fatalf("Exists(cc) = %v, %v; want false", ok, err)
	}
}

// oddKeys are valid keys that URL encoders, path joiners and shell quoting
// tend to mangle.
var oddKeys = []string{
	"with space/a b.txt",
	" leading and trailing ",
	"unicode/日本語/ключ-ü",
	"emoji/😀",
	"percent/100%",
	"percent/%2F%20%zz",
	"plus/a+b",
	"plus/+",
	"equals/a=b&c=d",
	"hash/a#tag",
	"tilde~/quote'/paren(1)",
	"comma,semi;colon:at@bang!",
}

func testOddKeys(t *testing.T, s backend.StorageAdapter) {
	ctx := ctxFor(t)
	for _, key := range oddKeys {
		t.Run(fmt.Sprintf("%q", key), func(t *testing.T) {
			a := mustPut(t, ctx, s, key, []byte("content of "+key))
			if a.Key != key {
				t.Fatalf("Put attrs key = %q, want %q", a.Key, key)
			}
			if got := mustGet(t, ctx, s, key); string(got) != "content of "+key {
				t.Fatalf("Get = %q", got)
			}
			st, err := s.Stat(ctx, key)
			if err != nil || st.Key != key {
				t.Fatalf("Stat = %+v, %v", st, err)
			}
			if ok, err := s.Exists(ctx, key); err != nil || !ok {
				t.Fatalf("Exists = %v, %v", ok, err)
			}
			equalKeys(t, "List(key)", listKeys(t, ctx, s, key, 0), []string{key})
		})
	}
	want := append([]string{}, oddKeys...)
	sort.Strings(want)
	equalKeys(t, "List of all odd keys", listKeys(t, ctx, s, "", 5), want)
	for _, key := range oddKeys {
		if err := s.Delete(ctx, key); err != nil {
			t.Fatalf("Delete(%q): %v", key, err)
		}
	}
	equalKeys(t, "List after deleting odd keys", listKeys(t, ctx, s, "", 0), nil)
}

func testLargeObject(t *testing.T, s backend.StorageAdapter) {
	ctx := ctxFor(t)
	const size = 8 << 20
	seed := time.Now().UnixNano()
	t.Logf("random seed %d", seed)
	data := make([]byte, size)
	rand.New(rand.NewSource(seed)).Read(data)
	a := mustPut(t, ctx, s, "big/object", data)
	if a.Size != size {
		t.Fatalf("Put size = %d, want %d", a.Size, size)
	}
	got := mustGet(t, ctx, s, "big/object")
	if !bytes.Equal(got, data) {
		t.Fatalf("8 MiB round trip differs (got %d bytes)", len(got))
	}
	part, err := s.GetRange(ctx, "big/object", size/2+1, 4096)
	if err != nil || !bytes.Equal(part, data[size/2+1:size/2+1+4096]) {
		t.Fatalf("GetRange in the middle: %d bytes, %v", len(part), err)
	}
	tail, err := s.GetRange(ctx, "big/object", size-10, -1)
	if err != nil || !bytes.Equal(tail, data[size-10:]) {
		t.Fatalf("GetRange of the tail: %q, %v", tail, err)
	}
}

func testVersionChanges(t *testing.T, s backend.StorageAdapter) {
	ctx := ctxFor(t)
	v1 := mustPut(t, ctx, s, "v", []byte("first")).Version
	v2 := mustPut(t, ctx, s, "v", []byte("second")).Version
	if v1 == "" || v1 == v2 {
		t.Fatalf("overwrite with different bytes kept version %q -> %q", v1, v2)
	}
	v3 := mustPut(t, ctx, s, "v", []byte("second!")).Version
	if v3 == v2 {
		t.Fatalf("overwrite with different length kept version %q", v3)
	}
	st, err := s.Stat(ctx, "v")
	if err != nil || st.Version != v3 {
		t.Fatalf("Stat version = %q, %v; Put returned %q", st.Version, err, v3)
	}
	if !s.Capabilities().VersionPerWrite {
		t.Log("store does not declare VersionPerWrite: identical rewrites may keep the version")
		return
	}
	// Identical bytes, many times in quick succession: every write is new.
	seen := map[string]bool{v1: true, v2: true, v3: true}
	prev := v3
	for i := 0; i < 20; i++ {
		v := mustPut(t, ctx, s, "v", []byte("second!")).Version
		if seen[v] {
			t.Fatalf("rewrite %d of identical bytes reused version %q (previous %q)", i, v, prev)
		}
		seen[v] = true
		prev = v
	}
}

func testOverwriteAtomic(t *testing.T, s backend.StorageAdapter) {
	ctx := ctxFor(t)
	const size = 256 << 10
	a := bytes.Repeat([]byte("A"), size)
	b := bytes.Repeat([]byte("b"), size)
	mustPut(t, ctx, s, "atomic", a)
	var (
		stop    atomic.Bool
		reads   atomic.Int64
		wg      sync.WaitGroup
		readErr = make(chan error, 8)
	)
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500 && !stop.Load(); i++ {
				got, _, err := s.Get(ctx, "atomic")
				if err != nil {
					readErr <- fmt.Errorf("Get during overwrites: %w", err)
					return
				}
				if !bytes.Equal(got, a) && !bytes.Equal(got, b) {
					readErr <- fmt.Errorf("Get during overwrites saw %d bytes that are neither payload (first %q, last %q)", len(got), got[:min(len(got), 8)], got[max(0, len(got)-8):])
					return
				}
				reads.Add(1)
			}
		}()
	}
	for i := 0; i < 40; i++ {
		data := a
		if i%2 == 0 {
			data = b
		}
		if _, err := s.Put(ctx, "atomic", data); err != nil {
			stop.Store(true)
			wg.Wait()
			t.Fatalf("Put %d: %v", i, err)
		}
	}
	stop.Store(true)
	wg.Wait()
	close(readErr)
	for err := range readErr {
		t.Fatal(err)
	}
	if got := mustGet(t, ctx, s, "atomic"); !bytes.Equal(got, a) {
		t.Fatal("final content is not the last payload written")
	}
	t.Logf("%d concurrent reads saw whole payloads", reads.Load())
}

// testKeyAndChild: a store that declares KeyAndChildCoexist keeps "k" and
// "k/child" side by side and lists both. One that declares it false makes
// no promise the engine relies on (its layouts never need both keys): it
// either refuses the second write cleanly (Precondition or Permanent,
// leaving the first intact, as a filesystem must), or stores both, each
// reading back its own bytes; it may then hide one from listings (MinIO
// hides "k/child" while "k" exists), so the rule deletes both by name.
func testKeyAndChild(t *testing.T, s backend.StorageAdapter) {
	ctx := ctxFor(t)
	mustPut(t, ctx, s, "kc", []byte("parent"))
	mustPut(t, ctx, s, "kc2/child", []byte("child"))
	if s.Capabilities().KeyAndChildCoexist {
		mustPut(t, ctx, s, "kc/child", []byte("child"))
		mustPut(t, ctx, s, "kc2", []byte("parent"))
		equalKeys(t, "List", listKeys(t, ctx, s, "", 0), []string{"kc", "kc/child", "kc2", "kc2/child"})
		return
	}
	// Refused cleanly, or kept with both readable.
	refusedOrKept := func(what, key string, err error) (kept bool) {
		t.Helper()
		switch k := backend.KindOf(err); {
		case err == nil:
			return true
		case k != backend.KindPrecondition && k != backend.KindPermanent:
			t.Fatalf("%s: got %v (kind %s), want success or a Precondition or Permanent refusal", what, err, k)
		}
		if _, err := s.Stat(ctx, key); !errors.Is(err, backend.ErrNotFound) {
			t.Fatalf("%s was refused but the object is there (Stat: %v)", what, err)
		}
		return false
	}
	var kept []string
	if refusedOrKept("Put of a child below an object", "kc/child", func() error { _, err := s.Put(ctx, "kc/child", []byte("child")); return err }()) {
		kept = append(kept, "kc/child")
	}
	if refusedOrKept("Put of an object over a prefix", "kc2", func() error { _, err := s.Put(ctx, "kc2", []byte("parent")); return err }()) {
		kept = append(kept, "kc2")
	}
	if len(kept) == 0 && s.Capabilities().ConditionalCreate {
		_, err := s.PutIfAbsent(ctx, "kc/child", []byte("child"))
		refusedOrKept("PutIfAbsent of a child below an object", "kc/child", err)
		_, err = s.PutIfAbsent(ctx, "kc2", []byte("parent"))
		refusedOrKept("PutIfAbsent of an object over a prefix", "kc2", err)
	}
	for key, want := range map[string]string{"kc": "parent", "kc2/child": "child", "kc/child": "child", "kc2": "parent"} {
		if (key == "kc/child" || key == "kc2") && !slices.Contains(kept, key) {
			continue
		}
		if got := mustGet(t, ctx, s, key); string(got) != want {
			t.Fatalf("Get(%s) = %q after the writes beside it, want %q", key, got, want)
		}
	}
	if len(kept) == 0 {
		equalKeys(t, "List after refused writes", listKeys(t, ctx, s, "", 0), []string{"kc", "kc2/child"})
		return
	}
	t.Logf("the store keeps both %v and their neighbours (declared false: allowed, never relied on)", kept)
	for _, k := range []string{"kc/child", "kc", "kc2/child", "kc2"} {
		if err := s.Delete(ctx, k); err != nil {
			t.Fatalf("Delete(%s): %v", k, err)
		}
	}
}

// secretEnv names environment variables whose values are credentials; none
// of them may appear in an adapter's error text.
var secretEnv = []string{
	"AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AZURE_STORAGE_KEY",
	"AZURE_STORAGE_SAS_TOKEN", "AZURE_STORAGE_CONNECTION_STRING",
	"GOOGLE_APPLICATION_CREDENTIALS_JSON",
}

func testNoSecrets(t *testing.T, s backend.StorageAdapter) {
	ctx := ctxFor(t)
	key := "secrets/object"
	if _, err := s.PutIfAbsent(ctx, key, []byte("v1")); err != nil {
		t.Fatalf("PutIfAbsent: %v", err)
	}
	_, _, errGet := s.Get(ctx, "secrets/missing")
	_, errStat := s.Stat(ctx, "secrets/missing")
	_, errCAS := s.PutIfMatch(ctx, key, []byte("v2"), "stale-version")
	_, errDup := s.PutIfAbsent(ctx, key, []byte("v3"))
	_, errKey := s.Put(ctx, "secrets/bad#12", []byte("x"))
	errs := map[string]error{"get-missing": errGet, "stat-missing": errStat, "cas-stale": errCAS, "create-existing": errDup, "temp-key": errKey}
	for name, err := range errs {
		if err == nil {
			t.Errorf("%s: want an error, got nil", name)
			continue
		}
		msg := err.Error()
		if red := backend.Redact(msg); red != msg {
			t.Errorf("%s: error text carries credential-shaped material: %q (redacted: %q)", name, msg, red)
		}
		for _, env := range secretEnv {
			if v := os.Getenv(env); len(v) >= 8 && strings.Contains(msg, v) {
				t.Errorf("%s: error text contains the value of %s", name, env)
			}
		}
	}
}
