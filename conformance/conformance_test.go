package conformance_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/conformance"
)

// The suite itself must be able to fail. Each broken store below violates one
// rule the way real adapters get it wrong; TestSuiteCatchesBrokenStores runs
// the suite on it in a child process and expects that rule's subtest to fail.

type broken struct{ backend.StorageAdapter }

// checkThenCreate is PutIfAbsent as a check followed by a write, with a
// gap where a network round trip would be: a caller that passed the check
// yields until another caller of the same key is in the gap too (or it has
// yielded 1,000 times), so two concurrent creates both pass the check even
// on a loaded machine.
type checkThenCreate struct {
	broken
	gap *sync.Map // key -> *atomic.Int32, callers between check and write
}

func newCheckThenCreate() checkThenCreate { return checkThenCreate{broken{mem.New()}, &sync.Map{}} }

func (b checkThenCreate) PutIfAbsent(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	if ok, err := b.Exists(ctx, key); err != nil || ok {
		return backend.Attrs{}, backend.NewError("put-if-absent", key, backend.KindPrecondition, err)
	}
	defer inGap(b.gap, key)()
	return b.Put(ctx, key, data)
}

// inGap enters the gap between a check and its write for key and yields
// until another caller of key is in it too (at most 1,000 times); the
// returned func leaves the gap.
func inGap(gap *sync.Map, key string) func() {
	v, _ := gap.LoadOrStore(key, &atomic.Int32{})
	in := v.(*atomic.Int32)
	in.Add(1)
	for i := 0; i < 1000 && in.Load() < 2; i++ {
		runtime.Gosched()
	}
	return func() { in.Add(-1) }
}

// compareThenWrite is PutIfMatch as a Stat followed by a Put, with the
// same gap as checkThenCreate.
type compareThenWrite struct {
	broken
	gap *sync.Map
}

func newCompareThenWrite() compareThenWrite { return compareThenWrite{broken{mem.New()}, &sync.Map{}} }

func (b compareThenWrite) PutIfMatch(ctx context.Context, key string, data []byte, version string) (backend.Attrs, error) {
	a, err := b.Stat(ctx, key)
	if err != nil {
		return a, err
	}
	if a.Version != version {
		return backend.Attrs{}, backend.NewError("put-if-match", key, backend.KindPrecondition, nil)
	}
	defer inGap(b.gap, key)()
	return b.Put(ctx, key, data)
}

// walkOrderList sorts keys the way a naive directory walk visits them: by
// path segments, so "a/b" comes before "a b".
type walkOrderList struct{ broken }

func (b walkOrderList) List(ctx context.Context, prefix string, opts backend.ListOptions) (backend.ListPage, error) {
	all, err := backend.ListAll(ctx, b.broken.StorageAdapter, prefix)
	if err != nil {
		return backend.ListPage{}, err
	}
	seg := func(k string) string { return strings.ReplaceAll(k, "/", "\x00") }
	sort.Slice(all, func(i, j int) bool { return seg(all[i].Key) < seg(all[j].Key) })
	var page backend.ListPage
	past := opts.StartAfter == ""
	max := opts.MaxKeys
	if max <= 0 {
		max = backend.DefaultPageSize
	}
	for _, a := range all {
		if !past {
			past = a.Key == opts.StartAfter
			continue
		}
		if len(page.Objects) == max {
			page.Truncated = true
			break
		}
		page.Objects = append(page.Objects, a)
	}
	return page, nil
}

// stringPrefixExists treats any key starting with the name as existence.
type stringPrefixExists struct{ broken }

func (b stringPrefixExists) Exists(ctx context.Context, key string) (bool, error) {
	page, err := b.List(ctx, key, backend.ListOptions{MaxKeys: 1})
	return len(page.Objects) > 0, err
}

// tornPut makes a half-written object visible for a moment.
type tornPut struct{ broken }

func (b tornPut) Put(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	if _, err := b.broken.Put(ctx, key, data[:len(data)/2]); err != nil {
		return backend.Attrs{}, err
	}
	runtime.Gosched()
	return b.broken.Put(ctx, key, data)
}

// strictDelete reports NotFound for a missing key.
type strictDelete struct{ broken }

func (b strictDelete) Delete(ctx context.Context, key string) error {
	if ok, _ := b.Exists(ctx, key); !ok {
		return backend.NewError("delete", key, backend.KindNotFound, nil)
	}
	return b.broken.Delete(ctx, key)
}

// emptyRangeFails refuses a range on a zero-byte object, as some stores'
// raw APIs do (HTTP 416).
type emptyRangeFails struct{ broken }

func (b emptyRangeFails) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if a, err := b.Stat(ctx, key); err == nil && a.Size == 0 {
		return nil, backend.NewError("get-range", key, backend.KindPermanent, nil)
	}
	return b.broken.GetRange(ctx, key, off, n)
}

// ignoresCancel sends writes even when the caller has given up.
type ignoresCancel struct{ broken }

func (b ignoresCancel) Put(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	return b.broken.Put(context.WithoutCancel(ctx), key, data)
}

// stickyVersion keeps the version token across overwrites.
type stickyVersion struct{ broken }

func (b stickyVersion) Put(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	a, err := b.broken.Put(ctx, key, data)
	a.Version = "v"
	return a, err
}

// deleteGap deletes in two steps, and a PutIfAbsent that arrives in between
// fails as if the key's directory vanished (ENOENT), instead of winning or
// losing with Precondition.
type deleteGap struct {
	broken
	deleting *sync.Map
}

func (b deleteGap) Delete(ctx context.Context, key string) error {
	b.deleting.Store(key, true)
	defer b.deleting.Delete(key)
	runtime.Gosched()
	err := b.broken.Delete(ctx, key)
	runtime.Gosched()
	return err
}

func (b deleteGap) PutIfAbsent(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	if _, ok := b.deleting.Load(key); ok {
		return backend.Attrs{}, backend.NewError("put-if-absent", key, backend.KindNotFound, nil)
	}
	return b.broken.PutIfAbsent(ctx, key, data)
}

// matchMissingNotFound passes AWS S3's 404 NoSuchKey through for PutIfMatch
// on a missing key instead of normalizing it to a Precondition failure.
type matchMissingNotFound struct{ broken }

func (b matchMissingNotFound) PutIfMatch(ctx context.Context, key string, data []byte, version string) (backend.Attrs, error) {
	a, err := b.broken.PutIfMatch(ctx, key, data, version)
	if backend.IsNotFound(err) {
		return a, backend.NewError("put-if-match", key, backend.KindNotFound, nil)
	}
	return a, err
}

// staleListing caches each prefix's listing and refreshes it only when a
// Put creates a new key: overwrites and deletes are not seen.
type staleListing struct {
	broken
	mu    *sync.Mutex
	cache map[string]backend.ListPage
}

func (b staleListing) Put(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	ok, _ := b.Exists(ctx, key)
	a, err := b.broken.Put(ctx, key, data)
	if !ok {
		b.mu.Lock()
		clear(b.cache)
		b.mu.Unlock()
	}
	return a, err
}

func (b staleListing) List(ctx context.Context, prefix string, opts backend.ListOptions) (backend.ListPage, error) {
	id := fmt.Sprintf("%s\x00%s\x00%d", prefix, opts.StartAfter, opts.MaxKeys)
	b.mu.Lock()
	defer b.mu.Unlock()
	if p, ok := b.cache[id]; ok {
		return p, nil
	}
	p, err := b.broken.List(ctx, prefix, opts)
	if err == nil {
		b.cache[id] = p
	}
	return p, err
}

// listsResidue has temp names but forgets to filter them from listings.
type listsResidue struct {
	broken
	mu      *sync.Mutex
	residue map[string]bool
}

func (b listsResidue) PlantResidue(ctx context.Context, key string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.residue[key+"#123"] = true
	return nil
}

func (b listsResidue) List(ctx context.Context, prefix string, opts backend.ListOptions) (backend.ListPage, error) {
	p, err := b.broken.List(ctx, prefix, opts)
	if err != nil {
		return p, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for k := range b.residue {
		if strings.HasPrefix(k, prefix) && k > opts.StartAfter {
			p.Objects = append(p.Objects, backend.Attrs{Key: k, Size: 7, Version: "r"})
		}
	}
	sort.Slice(p.Objects, func(i, j int) bool { return p.Objects[i].Key < p.Objects[j].Key })
	return p, nil
}

// stallsOnCancel stalls every call made under a context without a deadline
// (the suite's in-flight cancellation probes), as a request on a hung
// connection does. With honour set it gives up when the context is
// cancelled, as it must; without, it ignores the context.
type stallsOnCancel struct {
	broken
	honour bool
}

func (b stallsOnCancel) stall(ctx context.Context) error {
	if _, ok := ctx.Deadline(); ok {
		return nil
	}
	if !b.honour {
		time.Sleep(time.Hour)
	}
	<-ctx.Done()
	return backend.NewError("request", "", backend.KindTransient, ctx.Err())
}

func (b stallsOnCancel) Get(ctx context.Context, key string) ([]byte, backend.Attrs, error) {
	if err := b.stall(ctx); err != nil {
		return nil, backend.Attrs{}, err
	}
	return b.broken.Get(ctx, key)
}

func (b stallsOnCancel) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if err := b.stall(ctx); err != nil {
		return nil, err
	}
	return b.broken.GetRange(ctx, key, off, n)
}

func (b stallsOnCancel) Stat(ctx context.Context, key string) (backend.Attrs, error) {
	if err := b.stall(ctx); err != nil {
		return backend.Attrs{}, err
	}
	return b.broken.Stat(ctx, key)
}

func (b stallsOnCancel) Exists(ctx context.Context, key string) (bool, error) {
	if err := b.stall(ctx); err != nil {
		return false, err
	}
	return b.broken.Exists(ctx, key)
}

func (b stallsOnCancel) List(ctx context.Context, prefix string, opts backend.ListOptions) (backend.ListPage, error) {
	if err := b.stall(ctx); err != nil {
		return backend.ListPage{}, err
	}
	return b.broken.List(ctx, prefix, opts)
}

func (b stallsOnCancel) Put(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	if err := b.stall(ctx); err != nil {
		return backend.Attrs{}, err
	}
	return b.broken.Put(ctx, key, data)
}

func (b stallsOnCancel) PutIfAbsent(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	if err := b.stall(ctx); err != nil {
		return backend.Attrs{}, err
	}
	return b.broken.PutIfAbsent(ctx, key, data)
}

func (b stallsOnCancel) PutIfMatch(ctx context.Context, key string, data []byte, v string) (backend.Attrs, error) {
	if err := b.stall(ctx); err != nil {
		return backend.Attrs{}, err
	}
	return b.broken.PutIfMatch(ctx, key, data, v)
}

func (b stallsOnCancel) Delete(ctx context.Context, key string) error {
	if err := b.stall(ctx); err != nil {
		return err
	}
	return b.broken.Delete(ctx, key)
}

func (b stallsOnCancel) DeletePrefix(ctx context.Context, prefix string) error {
	if err := b.stall(ctx); err != nil {
		return err
	}
	return b.broken.DeletePrefix(ctx, prefix)
}

// refuses is a store whose every request is refused, as with a wrong
// secret key (403); with quiet set it reads the refusal of Exists and List
// as absence, as an adapter that maps a HEAD's 403 to "not found" does.
type refuses struct {
	broken
	quiet bool
}

func denied(op string) error {
	return backend.NewError(op, "", backend.KindConfiguration, fmt.Errorf("403 Forbidden: the credentials are refused"))
}

func (r refuses) Get(context.Context, string) ([]byte, backend.Attrs, error) {
	return nil, backend.Attrs{}, denied("get")
}
func (r refuses) GetRange(context.Context, string, int64, int64) ([]byte, error) {
	return nil, denied("get-range")
}
func (r refuses) Stat(context.Context, string) (backend.Attrs, error) {
	return backend.Attrs{}, denied("stat")
}
func (r refuses) Put(context.Context, string, []byte) (backend.Attrs, error) {
	return backend.Attrs{}, denied("put")
}
func (r refuses) PutIfAbsent(context.Context, string, []byte) (backend.Attrs, error) {
	return backend.Attrs{}, denied("put-if-absent")
}
func (r refuses) PutIfMatch(context.Context, string, []byte, string) (backend.Attrs, error) {
	return backend.Attrs{}, denied("put-if-match")
}
func (r refuses) Delete(context.Context, string) error       { return denied("delete") }
func (r refuses) DeletePrefix(context.Context, string) error { return denied("delete-prefix") }

func (r refuses) Exists(context.Context, string) (bool, error) {
	if r.quiet {
		return false, nil
	}
	return false, denied("exists")
}

func (r refuses) List(context.Context, string, backend.ListOptions) (backend.ListPage, error) {
	if r.quiet {
		return backend.ListPage{}, nil
	}
	return backend.ListPage{}, denied("list")
}

// quotedStat hands out the version token quoted in Stat and bare
// everywhere else, as S3-compatible servers that quote ETags in HEAD but
// not in listings (or the reverse) do when the adapter passes them through.
type quotedStat struct{ broken }

func (b quotedStat) Stat(ctx context.Context, key string) (backend.Attrs, error) {
	a, err := b.broken.Stat(ctx, key)
	if err == nil {
		a.Version = `"` + a.Version + `"`
	}
	return a, err
}

// multipartIgnoresCondition writes bodies above 16 MiB with a plain Put,
// as a server that ignores If-None-Match and If-Match on
// CompleteMultipartUpload does.
type multipartIgnoresCondition struct{ broken }

const multipartThreshold = 16 << 20

func (b multipartIgnoresCondition) PutIfAbsent(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	if len(data) > multipartThreshold {
		return b.broken.Put(ctx, key, data)
	}
	return b.broken.PutIfAbsent(ctx, key, data)
}

func (b multipartIgnoresCondition) PutIfMatch(ctx context.Context, key string, data []byte, v string) (backend.Attrs, error) {
	if len(data) > multipartThreshold {
		return b.broken.Put(ctx, key, data)
	}
	return b.broken.PutIfMatch(ctx, key, data, v)
}

// brokenOpts are the options the child run of a broken store uses.
var brokenOpts = map[string][]conformance.Option{
	"ignoresCancelInFlight": {conformance.WithCancelGrace(200 * time.Millisecond)},
	"quietWhenDenied": {conformance.WithDeny(func(t *testing.T) backend.StorageAdapter {
		return refuses{broken{mem.New()}, true}
	})},
}

var brokenStores = []struct {
	name string
	make func() backend.StorageAdapter
	rule string // the subtest that must fail
}{
	{"checkThenCreate", func() backend.StorageAdapter { return newCheckThenCreate() }, "PutIfAbsentRace"},
	{"compareThenWrite", func() backend.StorageAdapter { return newCompareThenWrite() }, "PutIfMatchRace"},
	{"walkOrderList", func() backend.StorageAdapter { return walkOrderList{broken{mem.New()}} }, "ListOrderAndPagination"},
	{"stringPrefixExists", func() backend.StorageAdapter { return stringPrefixExists{broken{mem.New()}} }, "Exists"},
	{"tornPut", func() backend.StorageAdapter { return tornPut{broken{mem.New()}} }, "OverwriteIsAtomic"},
	{"strictDelete", func() backend.StorageAdapter { return strictDelete{broken{mem.New()}} }, "DeleteIdempotent"},
	{"emptyRangeFails", func() backend.StorageAdapter { return emptyRangeFails{broken{mem.New()}} }, "GetRange"},
	{"ignoresCancel", func() backend.StorageAdapter { return ignoresCancel{broken{mem.New()}} }, "CancelledWriteLeavesNothing"},
	{"stickyVersion", func() backend.StorageAdapter { return stickyVersion{broken{mem.New()}} }, "VersionChangesOnOverwrite"},
	{"emptyRangeFails", func() backend.StorageAdapter { return emptyRangeFails{broken{mem.New()}} }, "BasicReadWrite"},
	{"checkThenCreate", func() backend.StorageAdapter { return newCheckThenCreate() }, "PutIfAbsentClaims"},
	{"deleteGap", func() backend.StorageAdapter { return deleteGap{broken{mem.New()}, &sync.Map{}} }, "PutIfAbsentRacingDelete"},
	{"matchMissingNotFound", func() backend.StorageAdapter { return matchMissingNotFound{broken{mem.New()}} }, "PutIfMatchMissingIsPrecondition"},
	{"compareThenWrite", func() backend.StorageAdapter { return newCompareThenWrite() }, "CompareAndSwapCounter"},
	{"staleListing", func() backend.StorageAdapter {
		return staleListing{broken{mem.New()}, &sync.Mutex{}, map[string]backend.ListPage{}}
	}, "ListAfterWriteOverwriteDelete"},
	{"listsResidue", func() backend.StorageAdapter {
		return listsResidue{broken{mem.New()}, &sync.Mutex{}, map[string]bool{}}
	}, "ListHidesTempResidue"},
	{"ignoresCancelInFlight", func() backend.StorageAdapter { return stallsOnCancel{broken{mem.New()}, false} }, "CancelInFlight"},
	{"quietWhenDenied", func() backend.StorageAdapter { return mem.New() }, "CredentialFailuresAreLoud"},
	{"quotedStat", func() backend.StorageAdapter { return quotedStat{broken{mem.New()}} }, "VersionTokensInterchangeable"},
	{"multipartIgnoresCondition", func() backend.StorageAdapter { return multipartIgnoresCondition{broken{mem.New()}} }, "LargeConditionalCreate"},
	{"multipartIgnoresCondition", func() backend.StorageAdapter { return multipartIgnoresCondition{broken{mem.New()}} }, "LargeConditionalUpdate"},
}

const envBroken = "CONFORMANCE_BROKEN_STORE"

// TestBrokenStoreChild runs the suite on one broken store; it only does so in
// the child process started by TestSuiteCatchesBrokenStores.
func TestBrokenStoreChild(t *testing.T) {
	name := os.Getenv(envBroken)
	if name == "" {
		t.Skip("helper for TestSuiteCatchesBrokenStores")
	}
	if name == "noCAS/" {
		conformance.Run(t, func(t *testing.T) backend.StorageAdapter { return noCAS{broken{mem.New()}} })
		return
	}
	for _, b := range brokenStores {
		if b.name+"/"+b.rule == name {
			conformance.Run(t, func(t *testing.T) backend.StorageAdapter { return b.make() }, brokenOpts[b.name]...)
			return
		}
	}
	t.Fatalf("no broken store %q", name)
}

func TestSuiteCatchesBrokenStores(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	for _, b := range brokenStores {
		t.Run(b.name+"/"+b.rule, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenStoreChild$/^"+b.rule+"$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), envBroken+"="+b.name+"/"+b.rule)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed a store that breaks %s:\n%s", b.rule, out)
			}
			if !strings.Contains(string(out), "--- FAIL: TestBrokenStoreChild/"+b.rule) {
				t.Fatalf("expected %s to fail, got:\n%s", b.rule, out)
			}
		})
	}
}

// The reference store passes: the failures above are the broken stores'.
func TestMemPasses(t *testing.T) {
	conformance.Run(t, func(t *testing.T) backend.StorageAdapter { return mem.New() })
}

// TestStallingStoreThatHonoursCancelPasses: the in-flight cancellation rule
// fails a store for ignoring its context, not for being slow: the same
// stall that gives up when cancelled passes, and so does a store that
// refuses every call loudly.
func TestStallingStoreThatHonoursCancelPasses(t *testing.T) {
	conformance.Run(t, func(t *testing.T) backend.StorageAdapter { return stallsOnCancel{broken{mem.New()}, true} },
		conformance.WithDeny(func(t *testing.T) backend.StorageAdapter { return refuses{broken{mem.New()}, false} }))
}

// stallsAfter answers the first n PutIfAbsent calls and then stalls until
// the caller gives up, as a correct but very slow store does.
type stallsAfter struct {
	broken
	n     *atomic.Int64
	after int64
}

func (b stallsAfter) PutIfAbsent(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	if b.n.Add(1) > b.after {
		<-ctx.Done()
		return backend.Attrs{}, backend.NewError("put-if-absent", key, backend.KindTransient, ctx.Err())
	}
	return b.broken.PutIfAbsent(ctx, key, data)
}

// TestRaceBudgetStopsASlowStore pins the rule that a race rule which runs
// out of its budget stops after the rounds it finished, passes when they
// held, and reports how many ran; with no round finished it fails.
func TestRaceBudgetStopsASlowStore(t *testing.T) {
	var race conformance.Probe
	for _, p := range conformance.Probes() {
		if p.Name == "PutIfAbsentRace" {
			race = p
		}
	}
	const writers = 4
	s := stallsAfter{broken{mem.New()}, &atomic.Int64{}, 3 * writers}
	o := conformance.Options{Writers: writers, Rounds: 50, RaceBudget: 50 * time.Millisecond}
	rep, err := race.Check(t.Context(), s, o)
	if err != nil {
		t.Fatalf("a slow but correct store failed the race: %v", err)
	}
	if rep.Rounds != 3 || !rep.OutOfBudget || !strings.Contains(rep.Note, "3 rounds x 4 writers (race budget reached; 50 planned)") {
		t.Fatalf("report = %+v, want 3 rounds run, out of budget", rep)
	}
	s = stallsAfter{broken{mem.New()}, &atomic.Int64{}, 0}
	if _, err := race.Check(t.Context(), s, o); err == nil || !strings.Contains(err.Error(), "before one round finished") {
		t.Fatalf("a store that never answers: err = %v, want the budget ran out before one round", err)
	}
}

// noCAS declares no conditional update.
type noCAS struct{ broken }

func (n noCAS) Capabilities() backend.Capabilities {
	c := n.broken.Capabilities()
	c.ConditionalUpdate = false
	return c
}

func (n noCAS) PutIfMatch(ctx context.Context, key string, data []byte, version string) (backend.Attrs, error) {
	return backend.Attrs{}, backend.NewError("put-if-match", key, backend.KindPermanent, nil)
}

// TestSummaryListsSkips pins the rule that Run ends with a summary naming
// the rules that ran and passed, and every skipped rule with its reason.
func TestSummaryListsSkips(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a process")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenStoreChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), envBroken+"=noCAS/")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the suite failed a store without compare-and-swap:\n%s", out)
	}
	for _, want := range []string{
		"conformance summary: 27 rules ran, 27 passed, 0 failed, 6 skipped",
		"CredentialFailuresAreLoud (no refusing store given (conformance.WithDeny))",
		"PutIfMatchRace (store does not declare ConditionalUpdate)",
		"CompareAndSwapCounter (store does not declare ConditionalUpdate)",
		"passed: NotFoundIsTyped, PutGetStatRoundTrip",
	} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("summary lacks %q:\n%s", want, out)
		}
	}
}
