package conformance_test

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/conformance"
)

// The suite itself must be able to fail. Each broken store below violates one
// rule the way real adapters get it wrong; TestSuiteCatchesBrokenStores runs
// the suite on it in a child process and expects that rule's subtest to fail.

type broken struct{ backend.StorageAdapter }

// checkThenCreate is PutIfAbsent as a check followed by a write, with a
// scheduling point in the gap (where a network round trip would be).
type checkThenCreate struct{ broken }

func (b checkThenCreate) PutIfAbsent(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	if ok, err := b.Exists(ctx, key); err != nil || ok {
		return backend.Attrs{}, backend.NewError("put-if-absent", key, backend.KindPrecondition, err)
	}
	runtime.Gosched()
	return b.Put(ctx, key, data)
}

// compareThenWrite is PutIfMatch as a Stat followed by a Put.
type compareThenWrite struct{ broken }

func (b compareThenWrite) PutIfMatch(ctx context.Context, key string, data []byte, version string) (backend.Attrs, error) {
	a, err := b.Stat(ctx, key)
	if err != nil {
		return a, err
	}
	if a.Version != version {
		return backend.Attrs{}, backend.NewError("put-if-match", key, backend.KindPrecondition, nil)
	}
	runtime.Gosched()
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

var brokenStores = []struct {
	name string
	make func() backend.StorageAdapter
	rule string // the subtest that must fail
}{
	{"checkThenCreate", func() backend.StorageAdapter { return checkThenCreate{broken{mem.New()}} }, "PutIfAbsentRace"},
	{"compareThenWrite", func() backend.StorageAdapter { return compareThenWrite{broken{mem.New()}} }, "PutIfMatchRace"},
	{"walkOrderList", func() backend.StorageAdapter { return walkOrderList{broken{mem.New()}} }, "ListOrderAndPagination"},
	{"stringPrefixExists", func() backend.StorageAdapter { return stringPrefixExists{broken{mem.New()}} }, "Exists"},
	{"tornPut", func() backend.StorageAdapter { return tornPut{broken{mem.New()}} }, "OverwriteIsAtomic"},
	{"strictDelete", func() backend.StorageAdapter { return strictDelete{broken{mem.New()}} }, "DeleteIdempotent"},
	{"emptyRangeFails", func() backend.StorageAdapter { return emptyRangeFails{broken{mem.New()}} }, "GetRange"},
	{"ignoresCancel", func() backend.StorageAdapter { return ignoresCancel{broken{mem.New()}} }, "CancelledWriteLeavesNothing"},
	{"stickyVersion", func() backend.StorageAdapter { return stickyVersion{broken{mem.New()}} }, "VersionChangesOnOverwrite"},
}

const envBroken = "CONFORMANCE_BROKEN_STORE"

// TestBrokenStoreChild runs the suite on one broken store; it only does so in
// the child process started by TestSuiteCatchesBrokenStores.
func TestBrokenStoreChild(t *testing.T) {
	name := os.Getenv(envBroken)
	if name == "" {
		t.Skip("helper for TestSuiteCatchesBrokenStores")
	}
	for _, b := range brokenStores {
		if b.name == name {
			conformance.Run(t, func(t *testing.T) backend.StorageAdapter { return b.make() })
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
		t.Run(b.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenStoreChild$/^"+b.rule+"$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), envBroken+"="+b.name)
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
