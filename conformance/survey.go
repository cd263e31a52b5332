package conformance

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/omnigraph-go/omnigraph/backend"
)

// A survey answers one question about a live store: is a graph safe here?
// `omnigraph storage check` prints it rule by rule and `omnigraph init`
// refuses a store whose answer is no, and both get the answer from Decide,
// so they can never disagree: whatever the check calls unusable, init
// refuses.
//
// What the engine needs decides the answer. Every basic rule (reads, writes,
// listings, deletes), conditional create (every commit and lock is a
// put-if-absent, large ones included), and conditional update where the
// adapter declares it (lock release and leases use it). A declaration the
// engine never acts on (key and key/child coexisting, a new version per
// identical write, and an undeclared compare-and-swap that writes anyway)
// can be wrong without making a graph unsafe: that is a warning that says
// what to change (naming the URL parameter where there is one), and the
// verdict stays usable.

// RuleResult is one live rule's outcome on a store.
type RuleResult struct {
	Name   string
	Needs  Needs
	Result string // "ok", "FAILED" or "skipped"
	Detail string
}

// Declaration compares one declared capability with what the store did,
// or reports the survey's own cleanup.
type Declaration struct {
	Name     string
	Declared string // "yes", "no" or "-" (not a declared capability)
	Observed string
	// Broken: the store failed something every graph needs while the row
	// was checked (a plain write or read failed, probe keys could not be
	// deleted).
	Broken bool
	// Warning, when set, says the declaration is wrong about a capability
	// the engine does not need, and what to change. It never makes a store
	// unusable.
	Warning string
}

// Verdict is what the engine can do on a store.
type Verdict struct {
	// Mode is "full", "unleased", "read_only" or "unusable".
	Mode   string
	Usable bool
	Text   string
	// Warnings are the Declarations' warnings, in order.
	Warnings []string
}

// Survey is the outcome of every live rule on one store, and its verdict.
type Survey struct {
	Rules        []RuleResult
	Declarations []Declaration
	Verdict      Verdict

	caps    backend.Capabilities
	written []string
}

// The declared column of a Declaration.
const (
	declaredYes = "yes"
	declaredNo  = "no"
)

func yesNo(b bool) string {
	if b {
		return declaredYes
	}
	return declaredNo
}

// SurveyStore runs every live rule (Probes, in order) and the declaration
// checks on s, which must be a fresh, empty namespace, with the race sizes
// of o. It does not clean up: the caller deletes Written (exactly the keys
// the survey wrote or tried to write; a listing may not show them all, as
// MinIO hides k/child while k exists), then calls Finish with the outcome,
// which sets the Verdict.
func SurveyStore(ctx context.Context, s backend.StorageAdapter, o Options) *Survey {
	rec := &recorder{StorageAdapter: s}
	caps := s.Capabilities()
	sv := &Survey{caps: caps}
	for _, p := range Probes() {
		r := RuleResult{Name: p.Name, Needs: p.Needs}
		if reason := p.Needs.SkipReason(caps); reason != "" {
			r.Result, r.Detail = "skipped", reason
			sv.Rules = append(sv.Rules, r)
			continue
		}
		rep, err := p.Check(ctx, rec, o)
		if err != nil {
			r.Result, r.Detail = "FAILED", backend.Redact(err.Error())
		} else {
			r.Result, r.Detail = "ok", rep.Note
		}
		sv.Rules = append(sv.Rules, r)
	}
	sv.Declarations = []Declaration{
		checkUndeclaredSwap(ctx, rec, caps),
		checkKeyAndChild(ctx, rec, caps),
		checkVersionPerWrite(ctx, rec, caps),
	}
	sv.written = rec.keys()
	return sv
}

// Written returns every key the survey wrote or tried to write (a write
// whose answer was lost may have landed), sorted.
func (sv *Survey) Written() []string { return append([]string(nil), sv.written...) }

// CleanupRow is the name of the Declaration that reports the cleanup.
const CleanupRow = "cleanup of probe keys"

// Finish records the cleanup of the probe keys (err: deleting them failed;
// left: keys a listing still shows afterwards) and decides the verdict.
func (sv *Survey) Finish(cleanErr error, left int) {
	row := Declaration{Name: CleanupRow, Declared: "-", Observed: "yes"}
	switch {
	case cleanErr != nil:
		row.Observed, row.Broken = "FAILED: "+backend.Redact(cleanErr.Error()), true
	case left > 0:
		row.Observed, row.Broken = fmt.Sprintf("FAILED: %d keys left after every key the check wrote was deleted", left), true
	}
	sv.Declarations = append(sv.Declarations, row)
	sv.Verdict = Decide(sv.caps, sv.Rules, sv.Declarations)
}

// Clean deletes every key the survey wrote from s (the store it surveyed),
// children before parents, and returns the first failure. A delete of a
// key that never landed succeeds (deletes are idempotent).
func (sv *Survey) Clean(ctx context.Context, s backend.StorageAdapter) error {
	keys := sv.Written()
	// Longest first: a child before its parent on stores that keep
	// directories.
	sort.SliceStable(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) })
	var first error
	for _, k := range keys {
		if err := s.Delete(ctx, k); err != nil && first == nil && !backend.IsNotFound(err) {
			first = err
		}
	}
	return first
}

// Decide is the verdict of a store from its rules and declarations: the one
// function that says whether a graph is safe on it.
//
//   - unusable: a basic rule failed (NeedsNothing), a row is Broken, or the
//     store declares conditional update and it does not hold;
//   - read-only: no conditional create, or it does not hold (writers cannot
//     be fenced; the engine refuses to write);
//   - read-write with unleased locks only: conditional create holds and
//     conditional update is not declared;
//   - full read-write with leased server locks: both hold.
//
// Warnings never change the mode; they are listed in the text.
func Decide(caps backend.Capabilities, rules []RuleResult, decls []Declaration) Verdict {
	var basic, create, update, warnings []string
	for _, r := range rules {
		if r.Result != "FAILED" {
			continue
		}
		switch r.Needs {
		case NeedsConditionalCreate:
			create = append(create, r.Name)
		case NeedsConditionalUpdate:
			update = append(update, r.Name)
		default:
			basic = append(basic, r.Name)
		}
	}
	for _, d := range decls {
		if d.Broken {
			basic = append(basic, d.Name)
		}
		if d.Warning != "" {
			warnings = append(warnings, d.Warning)
		}
	}
	var v Verdict
	switch {
	case len(basic) > 0:
		v = Verdict{Mode: "unusable", Text: fmt.Sprintf("unusable: %s failed", strings.Join(basic, ", "))}
	case !caps.ConditionalCreate:
		v = Verdict{Mode: "read_only", Text: "read-only: the store has no conditional create, so writers cannot be fenced and the engine refuses writes here"}
	case len(create) > 0:
		v = Verdict{Mode: "read_only", Text: fmt.Sprintf("read-only: the store declares conditional create but it does not fence concurrent writers (%s failed); the engine must not write here", strings.Join(create, ", "))}
	case caps.ConditionalUpdate && len(update) > 0:
		v = Verdict{Mode: "unusable", Text: fmt.Sprintf("unusable: the store declares conditional update but it does not hold (%s failed); leased locks would not be safe", strings.Join(update, ", "))}
	case !caps.ConditionalUpdate:
		v = Verdict{Mode: "unleased", Usable: true, Text: "read-write with unleased locks only: conditional create holds, conditional update is not available"}
	default:
		v = Verdict{Mode: "full", Usable: true, Text: "full read-write with leased server locks: conditional create and conditional update hold"}
	}
	if len(warnings) > 0 {
		v.Warnings = warnings
		v.Text += fmt.Sprintf(" (%d warning(s): %s)", len(warnings), strings.Join(warnings, "; "))
	}
	return v
}

// checkUndeclaredSwap: a store that does not declare conditional update
// should refuse PutIfMatch rather than write. The engine never calls it
// there, so one that writes is a warning about the adapter.
func checkUndeclaredSwap(ctx context.Context, s backend.StorageAdapter, caps backend.Capabilities) Declaration {
	d := Declaration{Name: "compare-and-swap (put-if-match)", Declared: yesNo(caps.ConditionalUpdate)}
	if caps.ConditionalUpdate {
		d.Observed = "see the rules above"
		return d
	}
	a, err := s.Put(ctx, "swap", []byte("start"))
	if err != nil {
		d.Observed, d.Broken = "FAILED: "+backend.Redact(err.Error()), true
		return d
	}
	_, err = s.PutIfMatch(ctx, "swap", []byte("next"), a.Version)
	switch {
	case errors.Is(err, backend.ErrPermanent):
		d.Observed = "absent"
	case err == nil:
		d.Observed = "WRONG: undeclared PutIfMatch wrote"
		d.Warning = "the adapter does not declare compare-and-swap but its PutIfMatch wrote anyway; the engine never calls it on such a store, but the adapter breaks its contract (it must refuse with a Permanent error)"
	default:
		d.Observed = "absent (" + backend.Redact(err.Error()) + ")"
	}
	return d
}

// checkKeyAndChild compares the declaration "k and k/child coexist" with
// the store. The engine's layout never needs both keys, so a wrong
// declaration is a warning; when the URL declares they do not coexist,
// nothing is written (a store may accept both and then hide one from its
// listings, as MinIO does).
func checkKeyAndChild(ctx context.Context, s backend.StorageAdapter, caps backend.Capabilities) Declaration {
	d := Declaration{Name: "key and key/child coexist", Declared: yesNo(caps.KeyAndChildCoexist)}
	if !caps.KeyAndChildCoexist {
		d.Observed = "not probed (declared no; the engine never needs both)"
		return d
	}
	if _, err := s.Put(ctx, "kc", []byte("parent")); err != nil {
		d.Observed, d.Broken = "FAILED: "+backend.Redact(err.Error()), true
		return d
	}
	_, err := s.Put(ctx, "kc/child", []byte("child"))
	switch k := backend.KindOf(err); {
	case err == nil:
		d.Observed = "yes"
	case k == backend.KindPermanent || k == backend.KindPrecondition:
		d.Observed = "no"
		d.Warning = "the store refuses k beside k/child although the URL declares they coexist: add ?key_child_coexist=false to the URL (the engine never needs both keys, so a graph is safe either way)"
	default:
		d.Observed, d.Broken = "FAILED: "+backend.Redact(err.Error()), true
	}
	return d
}

// checkVersionPerWrite compares the declaration "a new version per
// identical write" with the store. The engine never relies on it (its
// versioned records carry unique ids), so a wrong declaration is a warning.
func checkVersionPerWrite(ctx context.Context, s backend.StorageAdapter, caps backend.Capabilities) Declaration {
	d := Declaration{Name: "new version per identical write", Declared: yesNo(caps.VersionPerWrite)}
	a, err := s.Put(ctx, "version", []byte("same"))
	if err != nil {
		d.Observed, d.Broken = "FAILED: "+backend.Redact(err.Error()), true
		return d
	}
	b, err := s.Put(ctx, "version", []byte("same"))
	if err != nil {
		d.Observed, d.Broken = "FAILED: "+backend.Redact(err.Error()), true
		return d
	}
	d.Observed = yesNo(a.Version != b.Version)
	if caps.VersionPerWrite && a.Version == b.Version {
		d.Warning = "the adapter declares a new version per identical write but the store kept the version; the engine does not rely on it, but the adapter's declaration is wrong"
	}
	return d
}

// recorder notes every key a survey writes (or tries to: a write whose
// answer was lost may have landed), so the cleanup deletes exactly those.
type recorder struct {
	backend.StorageAdapter
	mu      sync.Mutex
	written map[string]bool
}

func (r *recorder) note(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.written == nil {
		r.written = map[string]bool{}
	}
	r.written[key] = true
}

func (r *recorder) keys() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.written))
	for k := range r.written {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (r *recorder) Put(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	r.note(key)
	return r.StorageAdapter.Put(ctx, key, data)
}

func (r *recorder) PutIfAbsent(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	r.note(key)
	return r.StorageAdapter.PutIfAbsent(ctx, key, data)
}

func (r *recorder) PutIfMatch(ctx context.Context, key string, data []byte, version string) (backend.Attrs, error) {
	r.note(key)
	return r.StorageAdapter.PutIfMatch(ctx, key, data, version)
}
