package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/local"
	"github.com/omnigraph-go/omnigraph/conformance"
	"github.com/omnigraph-go/omnigraph/graph"
)

// storeVerdict is the one answer to "is a graph safe on this store?":
// 'storage check' prints it rule by rule, and 'init' refuses a store it
// does not call usable. Both call it (and through it conformance.Decide),
// so they cannot disagree. It is a variable only so a test can prove that
// both commands go through it.
var storeVerdict = surveyStore

// surveyScope is where and how thoroughly a survey probes.
type surveyScope struct {
	// prefix is the scratch directory under the store's root the probes
	// write below (a fresh random directory in it per survey).
	prefix string
	opts   conformance.Options
	// create lets the survey create a local directory that does not exist
	// yet (init creates it anyway); the directories it created are removed
	// again before it returns. Without it such a directory is refused.
	create bool
}

// The scopes of the two commands: storage check is thorough (16 writers x
// 150 rounds per race), init quick (8 x 8: under a second on a local
// directory or an emulator, where the thorough races take 5 to 35 s), with
// the same rules and verdict (the 17 MiB conditional writes included). A
// rule broken every time breaks in both; a race lost only now and then is
// caught by the check's larger sample more surely.
var (
	checkScope = surveyScope{prefix: checkPrefix, opts: conformance.Options{Writers: checkWriters, Rounds: checkRounds, RaceBudget: checkBudget}}
	initScope  = surveyScope{prefix: graph.ProbeDir, opts: conformance.Options{Writers: 8, Rounds: 8, RaceBudget: time.Minute}, create: true}
)

// checkPrefix holds storage check's temporary probe directories.
const checkPrefix = "_omnigraph_check/"

// Race sizes of storage check. A server that lets two concurrent creates
// both win in a fraction p of rounds escapes PutIfAbsentRace alone with
// probability (1-p)^checkRounds: for p = 1/20 that is 0.95^150 < 0.05%, and
// PutIfAbsentClaims (2×checkRounds contested keys) and
// PutIfAbsentRacingDelete give it more chances to show.
const (
	checkWriters = 16
	checkRounds  = 150
	checkBudget  = 3 * time.Minute
)

// reachKey is the one plain write made before the rules: a store that
// refuses it (credentials, bucket) is reported as unreachable, not as
// missing a capability.
const reachKey = "reach"

// surveyStore runs every live rule on store (opened from url) under a fresh
// directory of sc.prefix, deletes exactly the keys it wrote, and returns
// the survey with its verdict. A store it cannot write at all is an error
// (checkAccessError), with no verdict.
func surveyStore(ctx context.Context, url string, store backend.StorageAdapter, sc surveyScope) (*conformance.Survey, error) {
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	prefix := sc.prefix + hex.EncodeToString(rnd[:]) + "/"
	s := backend.WithPrefix(store, prefix)
	clean := func(ctx context.Context, sv *conformance.Survey) error {
		if sv != nil {
			if err := sv.Clean(ctx, s); err != nil {
				return err
			}
		}
		return s.Delete(ctx, reachKey)
	}
	// leftKeys lists what a clean missed.
	leftKeys := func(ctx context.Context) (int, error) {
		left, err := backend.ListAll(ctx, store, prefix)
		return len(left), err
	}
	if ls, ok := localStore(store); ok {
		// The local store keeps its lock files in its root: probe a store
		// rooted at the scratch directory, so they go away with it.
		var created string // the outermost directory the survey creates
		if !ls.RootExists() {
			if !sc.create {
				return nil, exitCodeError{code: exitError, err: errors.New("the directory does not exist; storage check probes an existing location and creates nothing there (omnigraph init creates the directory)")}
			}
			created = outermostMissing(ls.Root())
		}
		dir := filepath.Join(ls.Root(), filepath.FromSlash(prefix))
		sub, err := local.New(dir)
		if err != nil {
			return nil, err
		}
		s = sub
		clean = func(context.Context, *conformance.Survey) error {
			if err := os.RemoveAll(dir); err != nil {
				return err
			}
			_ = os.Remove(filepath.Dir(dir)) // the shared scratch parent, when empty
			if created != "" {
				removeEmptyUpTo(ls.Root(), created)
			}
			return nil
		}
		leftKeys = func(context.Context) (int, error) {
			if _, err := os.Stat(dir); err == nil {
				return 1, nil
			}
			return 0, nil
		}
	}
	// Cleanup runs even when the caller's context is done.
	cleanCtx := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	}

	if _, err := s.Put(ctx, reachKey, []byte(reachKey)); err != nil {
		cctx, cancel := cleanCtx()
		defer cancel()
		_ = clean(cctx, nil)
		return nil, checkAccessError(url, "write a probe key", err)
	}
	sv := conformance.SurveyStore(ctx, s, sc.opts)
	cctx, cancel := cleanCtx()
	defer cancel()
	cerr := clean(cctx, sv)
	left := 0
	if cerr == nil {
		var err error
		if left, err = leftKeys(cctx); err != nil {
			cerr = fmt.Errorf("list what is left: %w", err)
		}
	}
	sv.Finish(cerr, left)
	return sv, nil
}

// localStore finds the local directory store below s's wrappers.
func localStore(s backend.StorageAdapter) (*local.Store, bool) {
	for s != nil {
		if ls, ok := s.(*local.Store); ok {
			return ls, true
		}
		u, ok := s.(interface{ Unwrap() backend.StorageAdapter })
		if !ok {
			return nil, false
		}
		s = u.Unwrap()
	}
	return nil, false
}

// outermostMissing is the outermost directory of path that does not exist.
func outermostMissing(path string) string {
	top := path
	for p := filepath.Dir(path); p != top; p = filepath.Dir(p) {
		if _, err := os.Stat(p); err == nil {
			break
		}
		top = p
	}
	return top
}

// removeEmptyUpTo removes path and its parents up to and including top,
// each only while it is empty: the directories a survey created.
func removeEmptyUpTo(path, top string) {
	for p := path; strings.HasPrefix(p, top); p = filepath.Dir(p) {
		if os.Remove(p) != nil || p == top {
			return
		}
	}
}
