package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
)

// ErrUnfencedStore: the store cannot fence concurrent writers (its adapter
// does not declare conditional create, or the live store did not honour a
// condition when Init probed it). Writes would silently lose commits, so
// Init and read-write opens refuse it; read-only opens still work.
var ErrUnfencedStore = errors.New("this store does not fence concurrent writers")

// storageCheckHint is the advice every fencing refusal ends with.
const storageCheckHint = "run 'omnigraph storage check URL' to see which capability is missing"

// RootKey is the graph root object: written once by Init before the initial
// commit, it records the result of the fencing probe and the capabilities
// the adapter declared, so later opens trust the store without probing it
// again. Racing or retried inits of one location keep the first record
// (each probed the same store).
const RootKey = "_graph.json"

// ProbeDir holds the scratch keys of Init's fencing probe and of the CLI
// init's store survey, one directory per attempt, deleted when the probe
// ends. Init treats what a killed probe left there as its own.
const ProbeDir = "_omnigraph_probe/"

// Root is the content of the graph root object.
type Root struct {
	CreatedUS   int64        `json:"created_us"`
	Fencing     FencingProbe `json:"fencing"`
	Declared    []string     `json:"declared_capabilities"`
	InitVersion int          `json:"root_version"`
}

// FencingProbe is what Init observed when it probed the live store.
type FencingProbe struct {
	// ConditionalCreate: a second put-if-absent of a scratch key lost.
	ConditionalCreate string `json:"conditional_create"`
	// CompareAndSwap: a stale put-if-match lost ("not declared" when the
	// adapter declares no compare-and-swap; the engine never needs one).
	CompareAndSwap string `json:"compare_and_swap"`
	ProbedUS       int64  `json:"probed_us"`
}

// requireFencing refuses, before any I/O, a store whose adapter does not
// declare conditional create: every commit, branch operation and init is a
// put-if-absent, and without one two writers both "win".
func requireFencing(store backend.StorageAdapter, what string) error {
	if store.Capabilities().ConditionalCreate {
		return nil
	}
	return fmt.Errorf("%w: its adapter does not declare conditional create (put-if-absent), so %s could lose commits; reads work (open it read-only); %s",
		ErrUnfencedStore, what, storageCheckHint)
}

// ProbeFencing runs the fencing probe on a live store (a server runs it at
// start, as Init does): it returns ErrUnfencedStore when a declared
// condition was ignored.
func ProbeFencing(ctx context.Context, store backend.StorageAdapter) (FencingProbe, error) {
	if err := requireFencing(store, "writing to it"); err != nil {
		return FencingProbe{}, err
	}
	return probeFencing(ctx, store)
}

// probeFencing checks cheaply that the live store honours the conditions its
// adapter declares: a second put-if-absent of a scratch key must lose, and a
// compare-and-swap with a stale version must lose (where declared). The
// scratch keys live under ProbeDir/<attempt>/ and are deleted before it
// returns, whatever the outcome. A storage failure is returned as it is
// (it says nothing about fencing); a condition that was ignored is
// ErrUnfencedStore.
func probeFencing(ctx context.Context, store backend.StorageAdapter) (FencingProbe, error) {
	res := FencingProbe{ProbedUS: nowMicros()}
	dir := ProbeDir + newID() + "/"
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		_ = store.DeletePrefix(cctx, dir)
	}()
	unfenced := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s; %s", ErrUnfencedStore, fmt.Sprintf(format, args...), storageCheckHint)
	}
	key := dir + "create"
	if _, err := store.PutIfAbsent(ctx, key, []byte("first")); err != nil {
		return res, fmt.Errorf("probe the store's conditional create: %w", err)
	}
	_, err := store.PutIfAbsent(ctx, key, []byte("second"))
	switch {
	case err == nil:
		return res, unfenced("the store accepted a second create of an existing key (it ignores put-if-absent / If-None-Match)")
	case !errors.Is(err, backend.ErrPrecondition):
		return res, fmt.Errorf("probe the store's conditional create: %w", err)
	}
	if got, _, err := store.Get(ctx, key); err != nil {
		return res, fmt.Errorf("probe the store's conditional create: %w", err)
	} else if !bytes.Equal(got, []byte("first")) {
		return res, unfenced("a refused create still replaced the object")
	}
	res.ConditionalCreate = "ok"
	if !store.Capabilities().ConditionalUpdate {
		res.CompareAndSwap = "not declared"
		return res, nil
	}
	key = dir + "swap"
	a, err := store.Put(ctx, key, []byte("v1"))
	if err != nil {
		return res, fmt.Errorf("probe the store's compare-and-swap: %w", err)
	}
	if _, err := store.PutIfMatch(ctx, key, []byte("v2"), a.Version); err != nil {
		return res, fmt.Errorf("probe the store's compare-and-swap: %w", err)
	}
	_, err = store.PutIfMatch(ctx, key, []byte("stale"), a.Version)
	switch {
	case err == nil:
		return res, unfenced("the store accepted a compare-and-swap against a stale version (it ignores put-if-match / If-Match)")
	case !errors.Is(err, backend.ErrPrecondition):
		return res, fmt.Errorf("probe the store's compare-and-swap: %w", err)
	}
	if got, _, err := store.Get(ctx, key); err != nil {
		return res, fmt.Errorf("probe the store's compare-and-swap: %w", err)
	} else if !bytes.Equal(got, []byte("v2")) {
		return res, unfenced("a refused compare-and-swap still replaced the object")
	}
	res.CompareAndSwap = "ok"
	return res, nil
}

func declaredCapabilities(c backend.Capabilities) []string {
	var out []string
	for _, kv := range []struct {
		name string
		on   bool
	}{
		{"conditional_create", c.ConditionalCreate},
		{"conditional_update", c.ConditionalUpdate},
		{"atomic_rename", c.AtomicRename},
		{"key_and_child_coexist", c.KeyAndChildCoexist},
		{"version_per_write", c.VersionPerWrite},
	} {
		if kv.on {
			out = append(out, kv.name)
		}
	}
	return out
}

// writeRoot writes the graph root object with one put-if-absent; one left
// by a racing or interrupted init is kept. A graph without one (made by an
// older binary) opens all the same.
func writeRoot(ctx context.Context, store backend.StorageAdapter, probe FencingProbe) error {
	b, err := json.Marshal(Root{
		CreatedUS:   nowMicros(),
		Fencing:     probe,
		Declared:    declaredCapabilities(store.Capabilities()),
		InitVersion: 1,
	})
	if err != nil {
		return err
	}
	if _, err := store.PutIfAbsent(ctx, RootKey, b); err != nil && !errors.Is(err, backend.ErrPrecondition) {
		return fmt.Errorf("write the graph root: %w", err)
	}
	return nil
}

// ReadRoot reads the graph root object Init wrote. A graph made before the
// root existed has none: that is backend.ErrNotFound.
func ReadRoot(ctx context.Context, store backend.StorageAdapter) (*Root, error) {
	b, _, err := store.Get(ctx, RootKey)
	if err != nil {
		return nil, err
	}
	var r Root
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("decode the graph root: %w", err)
	}
	return &r, nil
}
