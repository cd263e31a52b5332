package poison_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/counter"
	"github.com/omnigraph-go/omnigraph/backend/fault"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/backend/poison"
	"github.com/omnigraph-go/omnigraph/conformance"
)

func TestConformancePoison(t *testing.T) {
	conformance.Run(t, func(t *testing.T) backend.StorageAdapter { return poison.Wrap(mem.New()) })
}

type rig struct {
	mem   *mem.Store
	count *counter.Counter
	fault *fault.Injector
	p     *poison.Store
}

func newRig(t *testing.T) *rig {
	r := &rig{mem: mem.New()}
	r.fault = fault.New(r.mem)
	r.count = counter.New(r.fault)
	r.p = poison.Wrap(r.count)
	for _, k := range []string{"reused", "other"} {
		if _, err := r.mem.Put(context.Background(), k, []byte("v1")); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// TestUnknownOverwritePoisonsThatKeyOnly pins the reused-key rule: a write
// to a reused key whose outcome is unknown refuses later writes to that key
// only (before they are sent), reads still pass, and a clean shutdown
// (Close) lifts it.
func TestUnknownOverwritePoisonsThatKeyOnly(t *testing.T) {
	ctx := context.Background()
	writes := []struct {
		name string
		do   func(p *poison.Store) error
	}{
		{"put", func(p *poison.Store) error { _, err := p.Put(ctx, "reused", []byte("v2")); return err }},
		{"put-if-match", func(p *poison.Store) error {
			a, err := p.Stat(ctx, "reused")
			if err != nil {
				return err
			}
			_, err = p.PutIfMatch(ctx, "reused", []byte("v2"), a.Version)
			return err
		}},
		{"delete", func(p *poison.Store) error { return p.Delete(ctx, "reused") }},
	}
	later := []struct {
		name string
		do   func(p *poison.Store) error
	}{
		{"put", func(p *poison.Store) error { _, err := p.Put(ctx, "reused", []byte("v3")); return err }},
		{"put-if-absent", func(p *poison.Store) error { _, err := p.PutIfAbsent(ctx, "reused", []byte("v3")); return err }},
		{"put-if-match", func(p *poison.Store) error { _, err := p.PutIfMatch(ctx, "reused", []byte("v3"), "any"); return err }},
		{"delete", func(p *poison.Store) error { return p.Delete(ctx, "reused") }},
		{"delete-prefix", func(p *poison.Store) error { return p.DeletePrefix(ctx, "reu") }},
	}
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			r := newRig(t)
			r.fault.LoseAnswer(fault.Any, 1)
			if w.name == "put-if-match" {
				r.fault.Reset()
				r.fault.LoseAnswer(fault.CondPut, 1)
			}
			if err := w.do(r.p); !errors.Is(err, backend.ErrUnknown) {
				t.Fatalf("%s with a lost answer = %v, want Unknown", w.name, err)
			}
			if !r.p.Poisoned("reused") || r.p.Poisoned("other") {
				t.Fatalf("poisoned keys %v, want exactly [reused]", r.p.Keys())
			}
			for _, l := range later {
				r.count.Reset()
				err := l.do(r.p)
				var pe *poison.Error
				if !errors.Is(err, poison.ErrPoisoned) || !errors.Is(err, backend.ErrUnknown) || !errors.As(err, &pe) || pe.Key != "reused" {
					t.Fatalf("later %s = %v, want the poisoned refusal", l.name, err)
				}
				if strings.Contains(err.Error(), "reused") {
					t.Fatalf("refusal names the key: %v", err)
				}
				if c := r.count.Snapshot(); c.Total != 0 {
					t.Fatalf("later %s was sent (%s); a refusal sends nothing", l.name, c)
				}
			}
			// Reads pass; other keys are written as usual.
			if _, _, err := r.p.Get(ctx, "reused"); err != nil && !backend.IsNotFound(err) {
				t.Fatalf("read of a poisoned key: %v", err)
			}
			if _, err := r.p.Put(ctx, "other", []byte("v2")); err != nil {
				t.Fatalf("write of another key: %v", err)
			}
			if got, _, _ := r.mem.Get(ctx, "other"); string(got) != "v2" {
				t.Fatalf("other = %q", got)
			}
			// A clean shutdown lifts the refusal.
			if err := r.p.Close(); err != nil {
				t.Fatal(err)
			}
			if r.p.Poisoned("reused") || len(r.p.Keys()) != 0 {
				t.Fatalf("after Close: %v still poisoned", r.p.Keys())
			}
		})
	}
}

// TestPoisonOnlyOnUnknown: definite failures and a create's unknown outcome
// (settled by its owner) do not poison; Settle lifts a proven write.
func TestPoisonOnlyOnUnknown(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	for _, kind := range []backend.Kind{backend.KindTransient, backend.KindPermanent, backend.KindPrecondition, backend.KindConfiguration} {
		r.fault.FailNth(fault.Put, 1, kind)
		if _, err := r.p.Put(ctx, "reused", []byte("x")); backend.KindOf(err) != kind {
			t.Fatalf("Put = %v, want kind %s", err, kind)
		}
		if r.p.Poisoned("reused") {
			t.Fatalf("a %s failure poisoned the key", kind)
		}
	}
	r.fault.LoseAnswer(fault.CondPut, 1)
	if _, err := r.p.PutIfAbsent(ctx, "fresh", []byte("x")); !errors.Is(err, backend.ErrUnknown) {
		t.Fatalf("PutIfAbsent = %v", err)
	}
	if r.p.Poisoned("fresh") {
		t.Fatal("an unknown create poisoned its key; its owner settles it")
	}
	r.fault.LoseAnswer(fault.Put, 1)
	if _, err := r.p.Put(ctx, "reused", []byte("v2")); !errors.Is(err, backend.ErrUnknown) {
		t.Fatalf("Put = %v", err)
	}
	r.p.Settle("reused")
	if _, err := r.p.Put(ctx, "reused", []byte("v3")); err != nil {
		t.Fatalf("Put after Settle = %v", err)
	}
}
