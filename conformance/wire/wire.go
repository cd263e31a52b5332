package wire

import (
	"net/http"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
)

// Spec describes an HTTP-based store for Run.
type Spec struct {
	// Open returns a store rooted at a fresh, empty namespace whose requests
	// all pass through the returned proxy (start it with NewProxy in front
	// of the store's endpoint and point the store at Proxy.URL).
	Open func(t *testing.T) (backend.StorageAdapter, *Proxy)
	// IsWrite matches the request that carries an object's bytes.
	IsWrite func(Request) bool
	// IsRead matches an object download.
	IsRead func(Request) bool
	// Throttle is the store's own "slow down" refusal (status, headers,
	// body), e.g. S3's 503 with <Code>SlowDown</Code>. Run also throttles
	// with a bare HTTP 429 and a bare 503.
	Throttle Rule
}

// Retry budgets the rules hold an adapter to: after a server error or a
// lost answer a read is retried at most MaxClientRetries times, and after a
// throttle a read or a write of a fresh key at most MaxThrottleRetries times.
const (
	MaxClientRetries   = 3
	MaxThrottleRetries = 3
)

// Case is one wire rule: the sentence it tests, the misbehaviour the proxy
// is armed with, and what the adapter must answer.
type Case struct {
	Name     string
	Rule     Rule
	Op       string // put_if_absent, put_if_match, put (overwrite), put_fresh, get
	WantKind backend.Kind
	WantReqs int  // matching requests that reached the proxy
	Applied  bool // the object holds the new bytes afterwards
}

// Cases returns the wire rules for s, in the order Run runs them.
func Cases(s Spec) []Case {
	throttle := func(match func(Request) bool, times int) Rule {
		r := s.Throttle
		r.Match, r.Times = match, times
		return r
	}
	bare := func(status int, match func(Request) bool, times int) Rule {
		return Rule{Status: status, Match: match, Times: times}
	}
	const always = 100
	return []Case{
		// A conditional request is sent exactly once; a lost answer after it
		// took effect is Unknown, never replayed.
		{Name: "create answer dropped", Rule: Rule{Match: s.IsWrite, Forward: true}, Op: "put_if_absent", WantKind: backend.KindUnknown, WantReqs: 1, Applied: true},
		{Name: "create applied then 503", Rule: Rule{Match: s.IsWrite, Forward: true, Status: 503}, Op: "put_if_absent", WantKind: backend.KindUnknown, WantReqs: 1, Applied: true},
		{Name: "create throttled", Rule: throttle(s.IsWrite, 1), Op: "put_if_absent", WantKind: backend.KindUnknown, WantReqs: 1},
		{Name: "swap answer dropped", Rule: Rule{Match: s.IsWrite, Forward: true}, Op: "put_if_match", WantKind: backend.KindUnknown, WantReqs: 1, Applied: true},
		{Name: "swap applied then 500", Rule: Rule{Match: s.IsWrite, Forward: true, Status: 500}, Op: "put_if_match", WantKind: backend.KindUnknown, WantReqs: 1, Applied: true},
		{Name: "swap throttled", Rule: throttle(s.IsWrite, 1), Op: "put_if_match", WantKind: backend.KindUnknown, WantReqs: 1},
		// A plain write whose answer is lost after it took effect is Unknown
		// and sent once; an explicit throttle is retried at most 3 times,
		// then Transient.
		{Name: "overwrite answer dropped", Rule: Rule{Match: s.IsWrite, Forward: true}, Op: "put", WantKind: backend.KindUnknown, WantReqs: 1, Applied: true},
		{Name: "overwrite applied then 500", Rule: Rule{Match: s.IsWrite, Forward: true, Status: 500}, Op: "put", WantKind: backend.KindUnknown, WantReqs: 1, Applied: true},
		{Name: "overwrite throttled twice", Rule: throttle(s.IsWrite, 2), Op: "put", WantKind: backend.KindNone, WantReqs: 3, Applied: true},
		{Name: "overwrite throttled four times", Rule: throttle(s.IsWrite, 4), Op: "put", WantKind: backend.KindTransient, WantReqs: 4},
		{Name: "fresh-key write throttled three times", Rule: throttle(s.IsWrite, 3), Op: "put_fresh", WantKind: backend.KindNone, WantReqs: 4, Applied: true},
		{Name: "fresh-key write 429 always", Rule: bare(http.StatusTooManyRequests, s.IsWrite, always), Op: "put_fresh", WantKind: backend.KindTransient, WantReqs: 1 + MaxThrottleRetries},
		// A read is retried at most 3 times after server errors and at most
		// 3 times after throttles; throttling that outlasts the budget is
		// Transient.
		{Name: "read 500 twice", Rule: Rule{Match: s.IsRead, Status: 500, Times: 2}, Op: "get", WantKind: backend.KindNone, WantReqs: 3},
		{Name: "read 500 always", Rule: Rule{Match: s.IsRead, Status: 500, Times: always}, Op: "get", WantKind: backend.KindTransient, WantReqs: 1 + MaxClientRetries},
		{Name: "read throttled three times", Rule: throttle(s.IsRead, 3), Op: "get", WantKind: backend.KindNone, WantReqs: 4},
		{Name: "read throttled always", Rule: throttle(s.IsRead, always), Op: "get", WantKind: backend.KindTransient, WantReqs: 1 + MaxThrottleRetries},
		{Name: "read 429 always", Rule: bare(http.StatusTooManyRequests, s.IsRead, always), Op: "get", WantKind: backend.KindTransient, WantReqs: 1 + MaxThrottleRetries},
		{Name: "read 503 always", Rule: bare(http.StatusServiceUnavailable, s.IsRead, always), Op: "get", WantKind: backend.KindTransient, WantReqs: 1 + MaxThrottleRetries},
		{Name: "read answer dropped", Rule: Rule{Match: s.IsRead, Forward: true}, Op: "get", WantKind: backend.KindNone, WantReqs: 2},
	}
}

// Run checks the retry and lost-answer rules on the wire, one subtest per
// Case, counting the requests the proxy saw:
//   - a conditional write (create or compare-and-swap) whose answer is lost
//     or replaced by a 5xx after it took effect is Unknown and was sent once;
//     the create landed once, so a second create loses;
//   - a conditional write refused with a throttle is Unknown and sent once;
//   - a plain write whose answer is lost is Unknown and sent once; a
//     throttled write (an overwrite or a fresh key) is retried at most 3
//     times and is then Transient;
//   - a read is retried at most 3 times after server errors and at most 3
//     times after throttles (the store's own, a bare 429, a bare 503), once
//     after a dropped answer, and is then Transient.
//
// and, in ETagForms, that a version token is one string whatever form the
// server prints its ETag in: a write answered with a bare ETag and a read
// answered with a weak W/ one give the token every other call gives, and
// PutIfMatch takes it.
func Run(t *testing.T, s Spec) {
	t.Helper()
	for _, c := range Cases(s) {
		t.Run(c.Name, func(t *testing.T) { check(t, s, c) })
	}
	t.Run("ETagForms", func(t *testing.T) { etagForms(t, s) })
}

// etagForms: an ETag printed bare on a write's answer, or weak on a read's,
// yields the same token as the unaltered answers, and the token swaps.
func etagForms(t *testing.T, s Spec) {
	st, p := s.Open(t)
	ctx := t.Context()
	bare := func(h http.Header) {
		if v := h.Get("ETag"); v != "" {
			h.Set("ETag", strings.Trim(strings.TrimPrefix(v, "W/"), `"`))
		}
	}
	weak := func(h http.Header) {
		if v := h.Get("ETag"); v != "" && !strings.HasPrefix(v, "W/") {
			h.Set("ETag", "W/"+v)
		}
	}
	p.Arm(Rule{Match: s.IsWrite, Forward: true, Rewrite: bare})
	a, err := st.Put(ctx, "obj", []byte("one"))
	if err != nil {
		t.Fatalf("Put answered with a bare ETag: %v", err)
	}
	p.Reset()
	plain, err := st.Stat(ctx, "obj")
	if err != nil {
		t.Fatal(err)
	}
	if a.Version != plain.Version {
		t.Fatalf("a write answered with a bare ETag gave version %q, Stat gives %q: normalise ETags to one form", a.Version, plain.Version)
	}
	p.Arm(Rule{Forward: true, Rewrite: weak}) // the Stat's request, whatever it is
	w, err := st.Stat(ctx, "obj")
	if err != nil {
		t.Fatalf("Stat answered with a weak ETag: %v", err)
	}
	p.Reset()
	if w.Version != plain.Version {
		t.Fatalf("a read answered with a weak ETag gave version %q, an unaltered one %q: normalise ETags to one form", w.Version, plain.Version)
	}
	b, err := st.PutIfMatch(ctx, "obj", []byte("two"), w.Version)
	if err != nil {
		t.Fatalf("PutIfMatch with the token of a weak answer (%q): %v", w.Version, err)
	}
	got, ga, err := st.Get(ctx, "obj")
	if err != nil || string(got) != "two" || ga.Version != b.Version {
		t.Fatalf("after the swap: Get = %q at %q, %v; want two at %q", got, ga.Version, err, b.Version)
	}
}

func check(t *testing.T, s Spec, c Case) {
	st, p := s.Open(t)
	ctx := t.Context()
	key := "obj"
	if c.Op == "put_fresh" {
		key = "fresh"
	}
	old, err := st.Put(ctx, "obj", []byte("old"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Op == "put_if_absent" {
		if err := st.Delete(ctx, key); err != nil {
			t.Fatal(err)
		}
	}
	p.Reset()
	p.Arm(c.Rule)
	match := s.IsWrite
	switch c.Op {
	case "put_if_absent":
		_, err = st.PutIfAbsent(ctx, key, []byte("new"))
	case "put_if_match":
		_, err = st.PutIfMatch(ctx, key, []byte("new"), old.Version)
	case "put", "put_fresh":
		_, err = st.Put(ctx, key, []byte("new"))
	case "get":
		match = s.IsRead
		var got []byte
		got, _, err = st.Get(ctx, key)
		if err == nil && string(got) != "old" {
			t.Fatalf("Get = %q, want old", got)
		}
	default:
		t.Fatalf("unknown op %q", c.Op)
	}
	if k := backend.KindOf(err); k != c.WantKind {
		t.Fatalf("%s: got %v (kind %s), want kind %s", c.Op, err, k, c.WantKind)
	}
	if n := p.Count(match); n != c.WantReqs {
		t.Fatalf("%s: %d requests went over the wire, want %d", c.Op, n, c.WantReqs)
	}
	if c.Op == "get" {
		return
	}
	p.Reset() // read back without faults
	got, _, gerr := st.Get(ctx, key)
	absentBefore := c.Op == "put_if_absent" || c.Op == "put_fresh"
	switch {
	case c.Applied && (gerr != nil || string(got) != "new"):
		t.Fatalf("after the write: Get = %q, %v; want new", got, gerr)
	case !c.Applied && absentBefore && !backend.IsNotFound(gerr):
		t.Fatalf("refused create left %q, %v; want nothing", got, gerr)
	case !c.Applied && !absentBefore && string(got) != "old":
		t.Fatalf("refused write left %q, %v; want old", got, gerr)
	}
	if c.Op == "put_if_absent" && c.Applied {
		// The create landed once: a new attempt now loses.
		if _, err := st.PutIfAbsent(ctx, key, []byte("again")); !backend.IsPrecondition(err) {
			t.Fatalf("PutIfAbsent after the lost answer = %v, want Precondition", err)
		}
	}
}

// IsMethod matches requests by HTTP method (for Spec.IsWrite/IsRead).
func IsMethod(m string) func(Request) bool { return func(r Request) bool { return r.Method == m } }
