package server

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/local"
	"github.com/omnigraph-go/omnigraph/graph"
)

// failingPublish makes every conditional create of a manifest version (a
// commit's publish) fail without reaching the store: with an unknown
// outcome (mode 1: the answer never came, through every re-issue) or with
// a permanent refusal (mode 2: after the table commits, so the write needs
// recovery). Mode 0 passes everything.
type failingPublish struct {
	backend.StorageAdapter
	mode atomic.Int32
}

func (f *failingPublish) PutIfAbsent(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	if strings.HasPrefix(key, "__manifest/branches/") && strings.Contains(key, "/.v/") {
		switch f.mode.Load() {
		case 1:
			return backend.Attrs{}, backend.NewError("put_if_absent", key, backend.KindUnknown, fmt.Errorf("injected: no answer"))
		case 2:
			return backend.Attrs{}, backend.NewError("put_if_absent", key, backend.KindPermanent, fmt.Errorf("injected: refused"))
		case 3: // refuse once
			f.mode.Store(0)
			return backend.Attrs{}, backend.NewError("put_if_absent", key, backend.KindPermanent, fmt.Errorf("injected: refused once"))
		}
	}
	return f.StorageAdapter.PutIfAbsent(ctx, key, data)
}

// TestServerStorageFailuresOverHTTP pins issue 17's failure statuses on
// the wire: a write whose publish got no answer through every re-issue is
// 500 with outcome_unknown (branch, commit id and where to check) and the
// server keeps serving (the uncertainty is scoped to that write's keys);
// once the store heals the next write succeeds. A publish refused once
// fails only its write's storage request: the writer settles its own
// intent in process and the write is acknowledged, the server serving on
// (seed 001). A write whose publish keeps failing after its table commits
// is 503 recovery_required with its
// operation id, and it stops the server (seed 001: its effects are in
// storage and not adopted in memory): OnFatal is told and every later
// request is refused. No response names a storage key, and after the
// restart's read-write open no row of the failed writes is stored twice.
func TestServerStorageFailuresOverHTTP(t *testing.T) {
	ctx := context.Background()
	inner, err := local.New(filepath.Join(t.TempDir(), "g"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := graph.Init(ctx, inner, testSchema, graph.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	fp := &failingPublish{StorageAdapter: inner}
	g, err := graph.Open(ctx, fp, graph.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	var f fatals
	_, base := newTestServer(t, g, Config{OnFatal: f.on})
	c := &client{t: t, base: base}
	mutate := func(name string) (int, map[string]any) {
		return c.json("POST", "/graphs/default/mutate", fmt.Sprintf(`{"query":"mutation m() { insert Person { name: \"%s\" } }"}`, name))
	}
	noKeys := func(what string, m map[string]any) {
		if s := fmt.Sprint(m); strings.Contains(s, "__manifest") || strings.Contains(s, "/.v/") || strings.Contains(s, "_versions") {
			t.Fatalf("%s names a storage key: %v", what, m)
		}
	}

	fp.mode.Store(1)
	st, m := mutate("lost")
	mustStatus(t, "publish without an answer", st, 500, m)
	ou, _ := m["outcome_unknown"].(map[string]any)
	if ou == nil || ou["branch"] != "main" || ou["commit_id"] == "" || !strings.Contains(fmt.Sprint(ou["check"]), "commits") {
		t.Fatalf("500 without outcome_unknown details: %v", m)
	}
	noKeys("the 500", m)
	// Reads still serve while the store refuses publishes.
	st, m = c.json("GET", "/graphs/default/branches", "")
	mustStatus(t, "read during the failures", st, 200, m)

	fp.mode.Store(0)
	st, m = mutate("after")
	mustStatus(t, "the write after the store healed", st, 200, m)
	if got := f.String(); got != "[]" {
		t.Fatalf("a scoped unknown outcome stopped the server: %s", got)
	}

	fp.mode.Store(3)
	st, m = mutate("refused-once")
	mustStatus(t, "a publish refused once", st, 200, m)
	if got := f.String(); got != "[]" {
		t.Fatalf("one refused storage request stopped the server: %s", got)
	}

	fp.mode.Store(2)
	st, m = mutate("refused")
	mustStatus(t, "publish refused after the table commits", st, 503, m)
	rr, _ := m["recovery_required"].(map[string]any)
	if rr == nil || rr["operation_id"] == "" {
		t.Fatalf("503 without recovery_required.operation_id: %v", m)
	}
	noKeys("the 503", m)
	if got := f.String(); got != "["+StopRecoveryRequired+"]" {
		t.Fatalf("recovery required: OnFatal %s", got)
	}
	st, m = c.json("GET", "/graphs/default/branches", "")
	mustStatus(t, "a read after the stop", st, 503, m)

	fp.mode.Store(0)
	g.Close()
	counts := restartedNames(t, inner)
	if counts["after"] != 1 || counts["refused-once"] != 1 || counts["lost"] > 1 || counts["refused"] > 1 {
		t.Fatalf("rows after the restart: %v", counts)
	}
}

// TestReplicaSeesPrimaryWriteOnTheNextRequest pins issue 17's replica
// rule: a --read-only server on the same store (its own handle and process
// scope, as on another machine, opened with AlwaysProbe as serve opens it)
// answers the first read after the primary acknowledged a write with that
// write, with no refresh step — the very first request after its open too.
func TestReplicaSeesPrimaryWriteOnTheNextRequest(t *testing.T) {
	ctx := context.Background()
	store, err := local.New(filepath.Join(t.TempDir(), "g"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := graph.Init(ctx, store, testSchema, graph.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	primaryG, err := graph.Open(ctx, store, graph.OpenOptions{ExclusiveWriter: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { primaryG.Close() })
	replicaG, err := graph.Open(ctx, store, graph.OpenOptions{ReadOnly: true, AlwaysProbe: true, Process: graph.NewProcess()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { replicaG.Close() })
	_, pbase := newTestServer(t, primaryG, Config{})
	_, rbase := newTestServer(t, replicaG, Config{ReadOnly: true})
	primary, replica := &client{t: t, base: pbase}, &client{t: t, base: rbase}
	read := `{"query":"query q() { match { $p: Person } return { count($p) as n } }"}`
	for i := 1; i <= 3; i++ {
		st, m := primary.json("POST", "/graphs/default/mutate", fmt.Sprintf(`{"query":"mutation m() { insert Person { name: \"p%d\" } }"}`, i))
		mustStatus(t, "primary write", st, 200, m)
		st, m = replica.json("POST", "/graphs/default/query", read)
		mustStatus(t, "replica read", st, 200, m)
		if got := fmt.Sprint(m["rows"]); got != fmt.Sprintf("[map[n:%d]]", i) && got != fmt.Sprintf("[[%d]]", i) {
			t.Fatalf("replica after write %d: rows %s", i, got)
		}
	}
}
