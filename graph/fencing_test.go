package graph_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/counter"
	_ "github.com/omnigraph-go/omnigraph/backend/gocloud" // gocloud+mem://
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/mutate"
)

// ignoresConditions is a store that declares conditional create and
// compare-and-swap but ignores both conditions, like an S3-compatible
// server that drops If-None-Match and If-Match.
type ignoresConditions struct{ backend.StorageAdapter }

func (s ignoresConditions) PutIfAbsent(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	return s.Put(ctx, key, data)
}

func (s ignoresConditions) PutIfMatch(ctx context.Context, key string, data []byte, _ string) (backend.Attrs, error) {
	return s.Put(ctx, key, data)
}

// ignoresIfMatch honours put-if-absent but ignores the compare-and-swap it
// declares.
type ignoresIfMatch struct{ backend.StorageAdapter }

func (s ignoresIfMatch) PutIfMatch(ctx context.Context, key string, data []byte, _ string) (backend.Attrs, error) {
	return s.Put(ctx, key, data)
}

// declares overrides the capabilities an adapter declares.
type declares struct {
	backend.StorageAdapter
	caps backend.Capabilities
}

func (s declares) Capabilities() backend.Capabilities { return s.caps }

// noCAS declares conditional create only and refuses PutIfMatch, as the
// gocloud bridge does.
type noCAS struct{ backend.StorageAdapter }

func (s noCAS) Capabilities() backend.Capabilities {
	return backend.Capabilities{ConditionalCreate: true, KeyAndChildCoexist: true}
}

func (s noCAS) PutIfMatch(context.Context, string, []byte, string) (backend.Attrs, error) {
	return backend.Attrs{}, backend.NewError("put-if-match", "", backend.KindPermanent, errors.New("no compare-and-swap"))
}

func allKeys(t *testing.T, s backend.StorageAdapter) []string {
	t.Helper()
	objs, err := backend.ListAll(context.Background(), s, "")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range objs {
		out = append(out, o.Key)
	}
	return out
}

// TestInitRefusesAStoreThatIgnoresConditions pins "init probes the live
// store: a second put-if-absent must lose and a stale compare-and-swap must
// lose; a store that lets either win is refused, naming 'omnigraph storage
// check', and init creates nothing".
func TestInitRefusesAStoreThatIgnoresConditions(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		wrap func(backend.StorageAdapter) backend.StorageAdapter
		want string
	}{
		{"ignores put-if-absent", func(s backend.StorageAdapter) backend.StorageAdapter { return ignoresConditions{s} }, "second create"},
		{"ignores put-if-match", func(s backend.StorageAdapter) backend.StorageAdapter { return ignoresIfMatch{s} }, "stale version"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := mem.New()
			_, err := graph.Init(ctx, tt.wrap(m), testSchema, graph.InitOptions{})
			if !errors.Is(err, graph.ErrUnfencedStore) || !strings.Contains(err.Error(), "omnigraph storage check") || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Init = %v, want ErrUnfencedStore naming %q and 'omnigraph storage check'", err, tt.want)
			}
			if keys := allKeys(t, m); len(keys) != 0 {
				t.Fatalf("a refused init left %v", keys)
			}
			if _, err := graph.Open(ctx, m, graph.OpenOptions{ReadOnly: true}); !errors.Is(err, graph.ErrNoGraph) {
				t.Fatalf("open after a refused init = %v, want ErrNoGraph", err)
			}
		})
	}
}

// TestUndeclaredConditionalCreateIsRefused pins "init and read-write open
// refuse a store whose adapter does not declare conditional create, before
// any write; reads stay allowed".
func TestUndeclaredConditionalCreateIsRefused(t *testing.T) {
	ctx := context.Background()
	m := mem.New()
	c := counter.New(declares{m, backend.Capabilities{ConditionalUpdate: true, KeyAndChildCoexist: true}})
	_, err := graph.Init(ctx, c, testSchema, graph.InitOptions{})
	if !errors.Is(err, graph.ErrUnfencedStore) || !strings.Contains(err.Error(), "conditional create") || !strings.Contains(err.Error(), "omnigraph storage check") {
		t.Fatalf("Init = %v, want ErrUnfencedStore", err)
	}
	if w := writes(c.Snapshot()); w != 0 {
		t.Fatalf("a refused init made %d writes", w)
	}
	// A graph made through a fenced adapter, later reached through one that
	// declares no conditional create: reads work, writes are refused.
	g, err := graph.Init(ctx, m, testSchema, graph.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mustInsertPerson(t, g, "ada")
	c.Reset()
	if _, err := graph.Open(ctx, c, graph.OpenOptions{}); !errors.Is(err, graph.ErrUnfencedStore) {
		t.Fatalf("read-write open = %v, want ErrUnfencedStore", err)
	}
	if w := writes(c.Snapshot()); w != 0 {
		t.Fatalf("a refused open made %d writes", w)
	}
	ro, err := graph.Open(ctx, c, graph.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only open = %v, want it allowed", err)
	}
	snap, err := ro.Snapshot(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	stats, err := snap.TableStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stats {
		if s.Key == graph.NodeTableKey("Person") && s.Rows != 1 {
			t.Fatalf("read-only read of Person = %d rows, want 1", s.Rows)
		}
	}
}

// TestInitRecordsTheProbeInTheGraphRoot pins "the probe's result is
// recorded in the graph root, so later opens do not pay for it", and that
// an adapter declaring no compare-and-swap (the gocloud bridge) still inits:
// the engine needs only conditional create.
func TestInitRecordsTheProbeInTheGraphRoot(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name    string
		store   func(backend.StorageAdapter) backend.StorageAdapter
		wantCAS string
	}{
		{"mem", func(s backend.StorageAdapter) backend.StorageAdapter { return s }, "ok"},
		{"no compare-and-swap declared", func(s backend.StorageAdapter) backend.StorageAdapter { return noCAS{s} }, "not declared"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := mem.New()
			s := tt.store(m)
			if _, err := graph.Init(ctx, s, testSchema, graph.InitOptions{}); err != nil {
				t.Fatalf("Init: %v", err)
			}
			root, err := graph.ReadRoot(ctx, s)
			if err != nil {
				t.Fatalf("ReadRoot: %v", err)
			}
			if root.Fencing.ConditionalCreate != "ok" || root.Fencing.CompareAndSwap != tt.wantCAS || root.Fencing.ProbedUS == 0 {
				t.Fatalf("root records %+v, want create ok, compare-and-swap %q", root.Fencing, tt.wantCAS)
			}
			for _, k := range allKeys(t, m) {
				if strings.HasPrefix(k, graph.ProbeDir) {
					t.Fatalf("the probe left %s", k)
				}
			}
			c := counter.New(s)
			g, err := graph.Open(ctx, c, graph.OpenOptions{})
			if err != nil {
				t.Fatalf("read-write open: %v", err)
			}
			if n := c.Snapshot(); writes(n) != 0 {
				t.Fatalf("a read-write open probed the store again: %+v", n)
			}
			mustInsertPerson(t, g, "grace")
		})
	}
}

// mustInsertPerson commits one Person through the write pipeline.
func mustInsertPerson(t *testing.T, g *graph.Graph, name string) {
	t.Helper()
	if _, err := mutate.Query(context.Background(), g, `mutation q($n: String) { insert Person { name: $n } }`, "q", mutate.Options{Branch: "main", Params: map[string]any{"n": name}}); err != nil {
		t.Fatalf("insert %s: %v", name, err)
	}
}

// TestInitOnTheGocloudBridge pins that the gocloud bridge, which declares
// conditional create but no compare-and-swap, passes the fencing probe
// and holds a graph that writes.
func TestInitOnTheGocloudBridge(t *testing.T) {
	ctx := context.Background()
	s, err := backend.Open(ctx, "gocloud+mem://graph-init-fencing")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	g, err := graph.Init(ctx, s, testSchema, graph.InitOptions{})
	if err != nil {
		t.Fatalf("Init on the gocloud bridge: %v", err)
	}
	root, err := graph.ReadRoot(ctx, s)
	if err != nil || root.Fencing.CompareAndSwap != "not declared" || root.Fencing.ConditionalCreate != "ok" {
		t.Fatalf("root = %+v, %v", root, err)
	}
	mustInsertPerson(t, g, "ada")
}
