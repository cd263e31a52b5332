package conformance_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/conformance"
)

// hidingStore keeps "k" and "k/child" side by side but, as MinIO does,
// leaves "k/child" out of listings while "k" exists. It records every key
// written.
type hidingStore struct {
	*mem.Store
	declareCoexist bool
	mu             sync.Mutex
	writes         []string
}

func (h *hidingStore) Capabilities() backend.Capabilities {
	c := h.Store.Capabilities()
	c.KeyAndChildCoexist = h.declareCoexist
	return c
}

func (h *hidingStore) note(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.writes = append(h.writes, key)
}

func (h *hidingStore) Put(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	h.note(key)
	return h.Store.Put(ctx, key, data)
}

func (h *hidingStore) PutIfAbsent(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	h.note(key)
	return h.Store.PutIfAbsent(ctx, key, data)
}

func (h *hidingStore) List(ctx context.Context, prefix string, opts backend.ListOptions) (backend.ListPage, error) {
	p, err := h.Store.List(ctx, prefix, opts)
	if err != nil {
		return p, err
	}
	kept := p.Objects[:0]
	for _, o := range p.Objects {
		if i := strings.LastIndexByte(o.Key, '/'); i > 0 {
			if _, err := h.Store.Stat(ctx, o.Key[:i]); err == nil {
				continue // hidden below an object of the parent's name
			}
		}
		kept = append(kept, o)
	}
	p.Objects = kept
	return p, nil
}

var quick = conformance.Options{Writers: 4, Rounds: 4, RaceBudget: time.Minute, LargeConditionalSize: 1 << 20}

// TestSurveyCleansWhatListingsHide pins issue 26 item 23: the survey's
// cleanup deletes exactly the keys it wrote, so a store whose listing hides
// "kc/child" while "kc" exists (MinIO) is left empty, and the verdict does
// not blame the store for the survey's own bookkeeping. A cleanup that
// lists what to delete (DeletePrefix) leaves the hidden key behind.
func TestSurveyCleansWhatListingsHide(t *testing.T) {
	ctx := context.Background()
	h := &hidingStore{Store: mem.New(), declareCoexist: true}
	sv := conformance.SurveyStore(ctx, h, quick)
	if err := sv.Clean(ctx, h); err != nil {
		t.Fatal(err)
	}
	left, err := backend.ListAll(ctx, h.Store, "")
	if err != nil || len(left) != 0 {
		t.Fatalf("after the survey's cleanup %d keys are left (%v): %+v", len(left), err, left)
	}
	sv.Finish(nil, 0)
	if !sv.Verdict.Usable || sv.Verdict.Mode != "full" || len(sv.Verdict.Warnings) != 0 {
		t.Fatalf("verdict on a hiding store = %+v, want full with no warning", sv.Verdict)
	}

	// A cleanup that lists what to delete (as the cloud adapters'
	// DeletePrefix does) misses the hidden child.
	h2 := &hidingStore{Store: mem.New(), declareCoexist: true}
	conformance.SurveyStore(ctx, h2, quick)
	listed, err := backend.ListAll(ctx, h2, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range listed {
		if err := h2.Delete(ctx, o.Key); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h2.Stat(ctx, "kc/child"); err != nil {
		t.Fatalf("the listing cleanup removed the hidden key (%v): the store under test does not hide it", err)
	}
}

// TestSurveyWritesNoChildWhenDeclaredFalse: a store declared not to keep
// "k" beside "k/child" is never asked to: the survey writes neither
// probe key of that row.
func TestSurveyWritesNoChildWhenDeclaredFalse(t *testing.T) {
	ctx := context.Background()
	h := &hidingStore{Store: mem.New(), declareCoexist: false}
	sv := conformance.SurveyStore(ctx, h, quick)
	for _, k := range h.writes {
		if k == "kc" || k == "kc/child" {
			t.Fatalf("the survey wrote %q on a store declared without key and child", k)
		}
	}
	sv.Finish(sv.Clean(ctx, h), 0)
	var row conformance.Declaration
	for _, d := range sv.Declarations {
		if d.Name == "key and key/child coexist" {
			row = d
		}
	}
	if row.Declared != "no" || !strings.HasPrefix(row.Observed, "not probed") || row.Broken || row.Warning != "" {
		t.Fatalf("key and child row = %+v", row)
	}
	if !sv.Verdict.Usable {
		t.Fatalf("verdict = %+v", sv.Verdict)
	}
}

// TestDecide pins the one verdict function: which failures make a store
// unusable or read-only, and that a warning never does.
func TestDecide(t *testing.T) {
	full := backend.Capabilities{ConditionalCreate: true, ConditionalUpdate: true}
	createOnly := backend.Capabilities{ConditionalCreate: true}
	failed := func(name string, n conformance.Needs) []conformance.RuleResult {
		return []conformance.RuleResult{{Name: "BasicReadWrite", Result: "ok"}, {Name: name, Needs: n, Result: "FAILED"}}
	}
	ok := []conformance.RuleResult{{Name: "BasicReadWrite", Result: "ok"}}
	warn := []conformance.Declaration{{Name: "key and key/child coexist", Warning: "add ?key_child_coexist=false"}}
	broken := []conformance.Declaration{{Name: conformance.CleanupRow, Broken: true}}
	for _, c := range []struct {
		name   string
		caps   backend.Capabilities
		rules  []conformance.RuleResult
		decls  []conformance.Declaration
		mode   string
		usable bool
	}{
		{"all hold", full, ok, nil, "full", true},
		{"no compare-and-swap", createOnly, ok, nil, "unleased", true},
		{"no conditional create", backend.Capabilities{}, ok, nil, "read_only", false},
		{"a basic rule fails", full, failed("GetRange", conformance.NeedsNothing), nil, "unusable", false},
		{"a create rule fails", full, failed("LargeConditionalCreate", conformance.NeedsConditionalCreate), nil, "read_only", false},
		{"a declared update fails", full, failed("LargeConditionalUpdate", conformance.NeedsConditionalUpdate), nil, "unusable", false},
		{"cleanup broken", full, ok, broken, "unusable", false},
		{"a wrong unneeded declaration", full, ok, warn, "full", true},
		{"a warning never rescues", full, failed("PutIfAbsentRace", conformance.NeedsConditionalCreate), warn, "read_only", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := conformance.Decide(c.caps, c.rules, c.decls)
			if v.Mode != c.mode || v.Usable != c.usable {
				t.Fatalf("Decide = %+v, want mode %s usable %v", v, c.mode, c.usable)
			}
			if len(c.decls) > 0 && c.decls[0].Warning != "" && (len(v.Warnings) != 1 || !strings.Contains(v.Text, "key_child_coexist=false")) {
				t.Fatalf("the warning is not in the verdict: %+v", v)
			}
		})
	}
}
