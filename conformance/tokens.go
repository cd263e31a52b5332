package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"

	"github.com/omnigraph-go/omnigraph/backend"
)

// probeTokens: the token of one state is one string, whoever returned it,
// and PutIfMatch takes it from each.
func probeTokens(ctx context.Context, s backend.StorageAdapter, _ Options) (Report, error) {
	const key = "tokens/obj"
	same := func(what, got, want string) error {
		if got != want {
			return fmt.Errorf("%s returned version %q, but the write returned %q for the same object state: tokens must be one string (normalise quotes and weak ETags in the adapter)", what, got, want)
		}
		return nil
	}
	var a backend.Attrs
	var err error
	if s.Capabilities().ConditionalCreate {
		a, err = s.PutIfAbsent(ctx, key, []byte("one"))
		if err != nil {
			return Report{}, fmt.Errorf("PutIfAbsent: %w", err)
		}
	} else if a, err = s.Put(ctx, key, []byte("one")); err != nil {
		return Report{}, fmt.Errorf("Put: %w", err)
	}
	// Each step reads the token one way, checks it against the last write's,
	// and swaps with it: Stat's, then Get's, then List's, then a plain Put's.
	steps := []struct {
		what  string
		token func() (string, error)
	}{
		{"Stat", func() (string, error) { st, err := s.Stat(ctx, key); return st.Version, err }},
		{"Get", func() (string, error) { _, ga, err := s.Get(ctx, key); return ga.Version, err }},
		{"List", func() (string, error) {
			la, ok, err := listed(ctx, s, "tokens/", key)
			if err == nil && !ok {
				err = errors.New("the key is not listed")
			}
			return la.Version, err
		}},
		{"Put", func() (string, error) { pa, err := s.Put(ctx, key, []byte("put")); return pa.Version, err }},
	}
	prev := a.Version
	for i, step := range steps {
		tok, err := step.token()
		if err != nil {
			return Report{}, fmt.Errorf("%s: %w", step.what, err)
		}
		if step.what == "Put" {
			prev = tok
		} else if !(step.what == "List" && tok == "") {
			if err := same(step.what, tok, prev); err != nil {
				return Report{}, err
			}
		}
		next, err := s.PutIfMatch(ctx, key, []byte(fmt.Sprintf("swap %d", i)), prev)
		if err != nil {
			return Report{}, fmt.Errorf("PutIfMatch with the token %s returned (%q): %v (kind %s), want success", step.what, prev, err, backend.KindOf(err))
		}
		if next.Version == "" || next.Version == prev {
			return Report{}, fmt.Errorf("PutIfMatch after %s returned version %q (previous %q), want a new one", step.what, next.Version, prev)
		}
		if _, err := s.PutIfMatch(ctx, key, []byte("stale"), prev); !errors.Is(err, backend.ErrPrecondition) {
			return Report{}, fmt.Errorf("PutIfMatch with the moved token %s returned = %v, want ErrPrecondition", step.what, err)
		}
		prev = next.Version
	}
	got, ga, err := s.Get(ctx, key)
	if err != nil || string(got) != "swap 3" || ga.Version != prev {
		return Report{}, fmt.Errorf("after the swaps: Get = %q at %q, %v; want \"swap 3\" at %q", got, ga.Version, err, prev)
	}
	return Report{Note: "Put, Stat, Get, List tokens agree and swap"}, nil
}

func largeBody(n int, seed int64) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

// probeLargeCreate: a conditional create above the multipart threshold
// holds its condition.
func probeLargeCreate(ctx context.Context, s backend.StorageAdapter, o Options) (Report, error) {
	o = o.withDefaults()
	const key = "large/create"
	first, second := largeBody(o.LargeConditionalSize, 1), largeBody(o.LargeConditionalSize, 2)
	a, err := s.PutIfAbsent(ctx, key, first)
	if err != nil {
		return Report{}, fmt.Errorf("PutIfAbsent of %d bytes on a new key: %w", len(first), err)
	}
	if a.Size != int64(len(first)) {
		return Report{}, fmt.Errorf("PutIfAbsent of %d bytes returned size %d", len(first), a.Size)
	}
	_, err = s.PutIfAbsent(ctx, key, second)
	if !errors.Is(err, backend.ErrPrecondition) {
		return Report{}, fmt.Errorf("a second PutIfAbsent of %d bytes on the same key = %v (kind %s), want ErrPrecondition: the store ignores the create condition on large writes", len(second), err, backend.KindOf(err))
	}
	got, ga, err := s.Get(ctx, key)
	if err != nil || !bytes.Equal(got, first) || ga.Version != a.Version {
		return Report{}, fmt.Errorf("after the losing create: Get = %d bytes (first's: %v) at %q, %v; want the first body at %q", len(got), bytes.Equal(got, first), ga.Version, err, a.Version)
	}
	return Report{Note: fmt.Sprintf("%d MiB", o.LargeConditionalSize>>20)}, nil
}

// probeLargeUpdate: a compare-and-swap above the multipart threshold holds
// its condition.
func probeLargeUpdate(ctx context.Context, s backend.StorageAdapter, o Options) (Report, error) {
	o = o.withDefaults()
	const key = "large/update"
	old, err := s.Put(ctx, key, []byte("small start"))
	if err != nil {
		return Report{}, fmt.Errorf("Put: %w", err)
	}
	win, lose := largeBody(o.LargeConditionalSize, 3), largeBody(o.LargeConditionalSize, 4)
	a, err := s.PutIfMatch(ctx, key, win, old.Version)
	if err != nil {
		return Report{}, fmt.Errorf("PutIfMatch of %d bytes at the current version: %w", len(win), err)
	}
	if a.Version == "" || a.Version == old.Version {
		return Report{}, fmt.Errorf("large PutIfMatch returned version %q (old %q), want a new one", a.Version, old.Version)
	}
	_, err = s.PutIfMatch(ctx, key, lose, old.Version)
	if !errors.Is(err, backend.ErrPrecondition) {
		return Report{}, fmt.Errorf("PutIfMatch of %d bytes at a stale version = %v (kind %s), want ErrPrecondition: the store ignores the match condition on large writes", len(lose), err, backend.KindOf(err))
	}
	got, ga, err := s.Get(ctx, key)
	if err != nil || !bytes.Equal(got, win) || ga.Version != a.Version {
		return Report{}, fmt.Errorf("after the stale swap: Get = %d bytes (winner's: %v) at %q, %v; want the winner's body at %q", len(got), bytes.Equal(got, win), ga.Version, err, a.Version)
	}
	return Report{Note: fmt.Sprintf("%d MiB", o.LargeConditionalSize>>20)}, nil
}
