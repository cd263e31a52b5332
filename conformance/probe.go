package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
)

// Options tune Run and the live probes.
type Options struct {
	// Writers is the number of concurrent writers in each race; zero means
	// DefaultWriters.
	Writers int
	// Rounds is the number of rounds of each race (and the number of keys
	// the claim rule claims); zero means DefaultRounds.
	Rounds int
	// RaceBudget bounds the wall time of each race rule. A race that runs
	// out of budget stops after the rounds it finished; it passes when every
	// finished round held and at least one round ran, and it reports how
	// many rounds ran. Zero means DefaultRaceBudget.
	RaceBudget time.Duration
	// CancelGrace bounds how long a call may take to return once its
	// context is cancelled in flight (CancelInFlight). Zero means
	// DefaultCancelGrace.
	CancelGrace time.Duration
	// Deny, when set, returns a store the backend refuses: wrong
	// credentials, no permission on the bucket, a closed handle. The
	// CredentialFailuresAreLoud rule runs every method on it and skips,
	// saying so, when Deny is nil. The probes ignore it.
	Deny func(t *testing.T) backend.StorageAdapter
	// LargeConditionalSize is the body size of the LargeConditionalCreate
	// and LargeConditionalUpdate probes; zero means
	// DefaultLargeConditionalSize.
	LargeConditionalSize int
}

// Defaults for Options.
const (
	DefaultWriters    = 16
	DefaultRounds     = 50
	DefaultRaceBudget = 2 * time.Minute
	// DefaultCancelGrace is generous: it separates a call that stops when
	// cancelled from one that ignores its context, not fast from slow.
	DefaultCancelGrace = 10 * time.Second
	// DefaultLargeConditionalSize is above the multipart threshold of the
	// S3 adapter (16 MiB, s3.DefaultMultipartThreshold) and of the common
	// SDK upload managers (5 and 8 MiB), so the large conditional probes
	// send their condition on a multipart completion wherever a backend
	// splits large writes.
	DefaultLargeConditionalSize = 17 << 20
)

// Option sets one field of Options.
type Option func(*Options)

// WithRaceBudget sets Options.RaceBudget: a slow but correct store is given
// this long per race rule instead of failing at the subtest timeout.
func WithRaceBudget(d time.Duration) Option { return func(o *Options) { o.RaceBudget = d } }

// WithCancelGrace sets Options.CancelGrace.
func WithCancelGrace(d time.Duration) Option { return func(o *Options) { o.CancelGrace = d } }

// WithDeny sets Options.Deny: deny returns a store the backend refuses
// (e.g. the same bucket opened with a wrong secret key).
func WithDeny(deny func(t *testing.T) backend.StorageAdapter) Option {
	return func(o *Options) { o.Deny = deny }
}

// WithLargeConditionalSize sets Options.LargeConditionalSize (bytes).
func WithLargeConditionalSize(n int) Option { return func(o *Options) { o.LargeConditionalSize = n } }

// WithRaceSize sets Options.Writers and Options.Rounds.
func WithRaceSize(writers, rounds int) Option {
	return func(o *Options) { o.Writers, o.Rounds = writers, rounds }
}

func (o Options) withDefaults() Options {
	if o.Writers <= 0 {
		o.Writers = DefaultWriters
	}
	if o.Rounds <= 0 {
		o.Rounds = DefaultRounds
	}
	if o.RaceBudget <= 0 {
		o.RaceBudget = DefaultRaceBudget
	}
	if o.CancelGrace <= 0 {
		o.CancelGrace = DefaultCancelGrace
	}
	if o.LargeConditionalSize <= 0 {
		o.LargeConditionalSize = DefaultLargeConditionalSize
	}
	return o
}

// Needs names the capability a probe depends on.
type Needs int

const (
	// NeedsNothing: every store must pass the probe.
	NeedsNothing Needs = iota
	// NeedsConditionalCreate: the probe tests PutIfAbsent.
	NeedsConditionalCreate
	// NeedsConditionalUpdate: the probe tests PutIfMatch.
	NeedsConditionalUpdate
)

// SkipReason is why a store that declares caps skips a probe needing n, or
// "" when it runs.
func (n Needs) SkipReason(caps backend.Capabilities) string {
	switch {
	case n == NeedsConditionalCreate && !caps.ConditionalCreate:
		return "store does not declare ConditionalCreate"
	case n == NeedsConditionalUpdate && !caps.ConditionalUpdate:
		return "store does not declare ConditionalUpdate"
	}
	return ""
}

// Report is what a probe that held says about its run.
type Report struct {
	// Rounds is how many rounds (or claimed keys, or increments) ran.
	Rounds int
	// OutOfBudget reports that the race stopped at Options.RaceBudget
	// before running every round.
	OutOfBudget bool
	// Note is a short human summary ("50 rounds x 16 writers").
	Note string
}

// Probe is one rule that needs no *testing.T: Run runs it as a subtest on a
// fresh namespace, and `omnigraph storage check` runs the same code live
// against a bucket. Check returns an error describing the first violation.
type Probe struct {
	Name  string
	Rule  string // the sentence the probe tests
	Needs Needs
	Check func(ctx context.Context, s backend.StorageAdapter, o Options) (Report, error)
}

// Probes returns the live probes in the order Run and storage check run them.
func Probes() []Probe { return append([]Probe(nil), probes...) }

var probes = []Probe{
	{
		Name:  "BasicReadWrite",
		Rule:  "A Put is read back by Get and GetRange (including an empty range of a zero-byte object), and Delete is idempotent and leaves Stat NotFound.",
		Check: probeBasic,
	},
	{
		Name:  "ListAfterWriteOverwriteDelete",
		Rule:  "As soon as a Put, an overwrite or a Delete returns, List sees it: the new key, the new size, the key gone.",
		Check: probeListAfterWrite,
	},
	{
		Name:  "VersionTokensInterchangeable",
		Rule:  "The version token of one object state is the same string whether Put, PutIfAbsent, PutIfMatch, Get, Stat or List returned it (List may leave it empty), and PutIfMatch accepts it from each: a store that quotes an ETag in one answer and not in another, or hands out weak ETags, is normalised by its adapter.",
		Needs: NeedsConditionalUpdate,
		Check: probeTokens,
	},
	{
		Name:  "LargeConditionalCreate",
		Rule:  "A PutIfAbsent with a body above the multipart threshold (17 MiB by default) creates the object whole, and a second one loses with ErrPrecondition and leaves the first's bytes: the condition holds on multipart completion, or the adapter keeps conditional writes single-part.",
		Needs: NeedsConditionalCreate,
		Check: probeLargeCreate,
	},
	{
		Name:  "LargeConditionalUpdate",
		Rule:  "A PutIfMatch with a body above the multipart threshold replaces the object at the current version and loses with ErrPrecondition at a stale one, leaving the winner's bytes.",
		Needs: NeedsConditionalUpdate,
		Check: probeLargeUpdate,
	},
	{
		Name:  "PutIfAbsentRace",
		Rule:  "Of N concurrent PutIfAbsent calls on one key exactly one succeeds, every other gets ErrPrecondition, and the key holds the winner's bytes and version.",
		Needs: NeedsConditionalCreate,
		Check: probePutIfAbsentRace,
	},
	{
		Name:  "PutIfAbsentClaims",
		Rule:  "N workers claiming the same sequence of keys with PutIfAbsent claim each key exactly once, and each key holds its claimer's bytes.",
		Needs: NeedsConditionalCreate,
		Check: probeClaims,
	},
	{
		Name:  "PutIfAbsentRacingDelete",
		Rule:  "PutIfAbsent racing a Delete of the same key is the one winner, loses with Precondition or a Permanent refusal that leaves no trace, or answers Unknown (then it may be the winner); Delete succeeds, and the key then holds the winner's bytes (nothing when nobody won).",
		Needs: NeedsConditionalCreate,
		Check: probeCreateVsDelete,
	},
	{
		Name:  "PutIfMatchMissingIsPrecondition",
		Rule:  "PutIfMatch on a missing key fails with ErrPrecondition (the error also satisfies ErrNotFound) and creates nothing.",
		Needs: NeedsConditionalUpdate,
		Check: probeMatchMissing,
	},
	{
		Name:  "PutIfMatchRace",
		Rule:  "Of N concurrent PutIfMatch calls from one version exactly one succeeds, every other gets ErrPrecondition, and the key holds the winner's bytes under a new version.",
		Needs: NeedsConditionalUpdate,
		Check: probePutIfMatchRace,
	},
	{
		Name:  "CompareAndSwapCounter",
		Rule:  "N workers each adding 1 to a counter M times with Get then PutIfMatch (retrying on ErrPrecondition) leave it at exactly N×M.",
		Needs: NeedsConditionalUpdate,
		Check: probeCounter,
	},
}

// budget returns a context that ends at the race budget and a function that
// says whether the budget (not the caller) ended it.
func budget(ctx context.Context, o Options) (context.Context, context.CancelFunc, func() bool) {
	bctx, cancel := context.WithTimeout(ctx, o.RaceBudget)
	out := func() bool { return bctx.Err() != nil && ctx.Err() == nil }
	return bctx, cancel, out
}

// raceAll runs writers concurrent attempts released together.
func raceAll(writers int, attempt func(w int) error) []error {
	errs := make([]error, writers)
	var start, done sync.WaitGroup
	start.Add(1)
	for w := 0; w < writers; w++ {
		done.Add(1)
		go func() {
			defer done.Done()
			start.Wait()
			errs[w] = attempt(w)
		}()
	}
	start.Done()
	done.Wait()
	return errs
}

// oneWinner returns the index of the one nil error, or an error saying how
// the race went wrong.
func oneWinner(errs []error) (int, error) {
	winner := -1
	for w, err := range errs {
		switch {
		case err == nil && winner >= 0:
			return -1, fmt.Errorf("writers %d and %d both won", winner, w)
		case err == nil:
			winner = w
		case !errors.Is(err, backend.ErrPrecondition):
			return -1, fmt.Errorf("writer %d lost with %v (kind %s), want a Precondition failure", w, err, backend.KindOf(err))
		}
	}
	if winner < 0 {
		return -1, errors.New("nobody won")
	}
	return winner, nil
}

func racePayload(round, writer int) []byte {
	return []byte(fmt.Sprintf("round %03d writer %02d", round, writer))
}

// finish turns a race loop's end into its report: out of budget after at
// least one round passes; out of budget before any round is a failure.
func finish(rounds, want, writers int, out bool) (Report, error) {
	return finishAs("rounds", rounds, want, writers, out)
}

func finishAs(unit string, rounds, want, writers int, out bool) (Report, error) {
	r := Report{Rounds: rounds, OutOfBudget: out && rounds < want}
	r.Note = fmt.Sprintf("%d %s x %d writers", rounds, unit, writers)
	if r.OutOfBudget {
		if rounds == 0 {
			return r, errors.New("the race budget ran out before one round finished")
		}
		r.Note += fmt.Sprintf(" (race budget reached; %d planned)", want)
	}
	return r, nil
}

// interrupted reports whether err is the budget's context ending (the round
// is then discarded, not judged).
func interrupted(out func() bool, _ ...error) bool { return out() }

func probeBasic(ctx context.Context, s backend.StorageAdapter, _ Options) (Report, error) {
	if _, err := s.Put(ctx, "basic/digits", []byte("0123456789")); err != nil {
		return Report{}, fmt.Errorf("Put: %w", err)
	}
	if _, err := s.Put(ctx, "basic/empty", nil); err != nil {
		return Report{}, fmt.Errorf("Put of a zero-byte object: %w", err)
	}
	if got, _, err := s.Get(ctx, "basic/digits"); err != nil || string(got) != "0123456789" {
		return Report{}, fmt.Errorf("Get = %q, %v; want the bytes written", got, err)
	}
	if got, err := s.GetRange(ctx, "basic/digits", 2, 3); err != nil || string(got) != "234" {
		return Report{}, fmt.Errorf("GetRange(2, 3) = %q, %v; want \"234\"", got, err)
	}
	if got, err := s.GetRange(ctx, "basic/empty", 0, 16); err != nil || len(got) != 0 {
		return Report{}, fmt.Errorf("GetRange of a zero-byte object = %q, %v; want no bytes and no error", got, err)
	}
	for i := 0; i < 2; i++ {
		if err := s.Delete(ctx, "basic/digits"); err != nil {
			return Report{}, fmt.Errorf("Delete #%d: %w", i+1, err)
		}
	}
	if _, err := s.Stat(ctx, "basic/digits"); !errors.Is(err, backend.ErrNotFound) {
		return Report{}, fmt.Errorf("Stat after Delete = %v, want NotFound", err)
	}
	return Report{Note: "put, get, ranges, idempotent delete"}, nil
}

// listed returns the key's listed attributes under prefix, or ok=false.
func listed(ctx context.Context, s backend.StorageAdapter, prefix, key string) (backend.Attrs, bool, error) {
	all, err := backend.ListAll(ctx, s, prefix)
	if err != nil {
		return backend.Attrs{}, false, err
	}
	for _, a := range all {
		if a.Key == key {
			return a, true, nil
		}
	}
	return backend.Attrs{}, false, nil
}

func probeListAfterWrite(ctx context.Context, s backend.StorageAdapter, _ Options) (Report, error) {
	const prefix, key = "law/", "law/obj"
	if _, err := s.Put(ctx, "law/other", []byte("o")); err != nil {
		return Report{}, fmt.Errorf("Put: %w", err)
	}
	if _, _, err := listed(ctx, s, prefix, key); err != nil {
		return Report{}, fmt.Errorf("List: %w", err)
	}
	if _, err := s.Put(ctx, key, []byte("one")); err != nil {
		return Report{}, fmt.Errorf("Put: %w", err)
	}
	a, ok, err := listed(ctx, s, prefix, key)
	if err != nil || !ok || a.Size != 3 {
		return Report{}, fmt.Errorf("List right after a Put: found=%v size=%d err=%v; want the new key of size 3", ok, a.Size, err)
	}
	if _, err := s.Put(ctx, key, []byte("longer bytes")); err != nil {
		return Report{}, fmt.Errorf("overwrite: %w", err)
	}
	a, ok, err = listed(ctx, s, prefix, key)
	if err != nil || !ok || a.Size != int64(len("longer bytes")) {
		return Report{}, fmt.Errorf("List right after an overwrite: found=%v size=%d err=%v; want size %d", ok, a.Size, err, len("longer bytes"))
	}
	if err := s.Delete(ctx, key); err != nil {
		return Report{}, fmt.Errorf("Delete: %w", err)
	}
	if _, ok, err = listed(ctx, s, prefix, key); err != nil || ok {
		return Report{}, fmt.Errorf("List right after a Delete still lists the key (err %v)", err)
	}
	if _, ok, err = listed(ctx, s, prefix, "law/other"); err != nil || !ok {
		return Report{}, fmt.Errorf("List lost an untouched key (err %v)", err)
	}
	return Report{Note: "write, overwrite, delete"}, nil
}

func probePutIfAbsentRace(ctx context.Context, s backend.StorageAdapter, o Options) (Report, error) {
	o = o.withDefaults()
	bctx, cancel, out := budget(ctx, o)
	defer cancel()
	rounds := 0
	for round := 0; round < o.Rounds && bctx.Err() == nil; round++ {
		key := fmt.Sprintf("race/%03d", round)
		versions := make([]string, o.Writers)
		errs := raceAll(o.Writers, func(w int) error {
			a, err := s.PutIfAbsent(bctx, key, racePayload(round, w))
			versions[w] = a.Version
			return err
		})
		if interrupted(out, errs...) {
			break
		}
		winner, err := oneWinner(errs)
		if err != nil {
			return Report{Rounds: rounds}, fmt.Errorf("round %d: %w", round, err)
		}
		if _, err := checkWinner(ctx, s, key, round, winner, versions[winner]); err != nil {
			return Report{Rounds: rounds}, err
		}
		rounds++
	}
	return finish(rounds, o.Rounds, o.Writers, out())
}

func probeClaims(ctx context.Context, s backend.StorageAdapter, o Options) (Report, error) {
	o = o.withDefaults()
	bctx, cancel, out := budget(ctx, o)
	defer cancel()
	keys := o.Rounds * 2
	claims := make([][]int, keys) // writers that won each key
	var mu sync.Mutex
	var failed atomic.Value
	var wg sync.WaitGroup
	for w := 0; w < o.Writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < keys && bctx.Err() == nil && failed.Load() == nil; i++ {
				_, err := s.PutIfAbsent(bctx, fmt.Sprintf("claim/%04d", i), racePayload(i, w))
				switch {
				case err == nil:
					mu.Lock()
					claims[i] = append(claims[i], w)
					mu.Unlock()
				case errors.Is(err, backend.ErrPrecondition):
				case interrupted(out, err):
					return
				default:
					failed.Store(fmt.Errorf("claim of key %d by writer %d: %v (kind %s), want success or Precondition", i, w, err, backend.KindOf(err)))
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		return Report{}, err
	}
	done := 0
	for i := 0; i < keys; i++ {
		switch n := len(claims[i]); {
		case n > 1:
			return Report{}, fmt.Errorf("key %d was claimed %d times (writers %v)", i, n, claims[i])
		case n == 0:
			if out() {
				break
			}
			return Report{}, fmt.Errorf("key %d was claimed by nobody", i)
		default:
			got, _, err := s.Get(ctx, fmt.Sprintf("claim/%04d", i))
			if err != nil || !bytes.Equal(got, racePayload(i, claims[i][0])) {
				return Report{}, fmt.Errorf("key %d holds %q (%v), want its claimer's %q", i, got, err, racePayload(i, claims[i][0]))
			}
			done++
		}
	}
	return finishAs("contested keys", done, keys, o.Writers, out())
}

func probeCreateVsDelete(ctx context.Context, s backend.StorageAdapter, o Options) (Report, error) {
	o = o.withDefaults()
	bctx, cancel, out := budget(ctx, o)
	defer cancel()
	writers := max(2, o.Writers/2)
	rounds := 0
	for round := 0; round < o.Rounds && bctx.Err() == nil; round++ {
		key := fmt.Sprintf("cd/%03d/obj", round)
		if _, err := s.Put(bctx, key, []byte("old")); err != nil {
			if interrupted(out, err) {
				break
			}
			return Report{Rounds: rounds}, fmt.Errorf("round %d: Put: %w", round, err)
		}
		// Writer 0 deletes; the others create.
		errs := raceAll(writers, func(w int) error {
			if w == 0 {
				return s.Delete(bctx, key)
			}
			_, err := s.PutIfAbsent(bctx, key, racePayload(round, w))
			return err
		})
		if interrupted(out, errs...) {
			break
		}
		if errs[0] != nil {
			return Report{Rounds: rounds}, fmt.Errorf("round %d: Delete racing creates: %w", round, errs[0])
		}
		winner := -1
		var unknown []int // answered Unknown (S3's 409 ConditionalRequestConflict): may or may not have won
		var losers []int  // told they failed: their bytes must not be there
		for w := 1; w < writers; w++ {
			switch err := errs[w]; {
			case err == nil && winner > 0:
				return Report{Rounds: rounds}, fmt.Errorf("round %d: creators %d and %d both won", round, winner, w)
			case err == nil:
				winner = w
			case errors.Is(err, backend.ErrUnknown):
				unknown = append(unknown, w)
			case errors.Is(err, backend.ErrPrecondition), backend.KindOf(err) == backend.KindPermanent:
				// Lost, or refused outright (a file-backed S3 server whose
				// directory the delete removed under the create answers
				// 409): a loser, which must leave no trace (checked below).
				losers = append(losers, w)
			default:
				return Report{Rounds: rounds}, fmt.Errorf("round %d: creator %d got %v (kind %s), want success, Precondition, a Permanent refusal or an honest Unknown", round, w, err, backend.KindOf(err))
			}
		}
		got, _, err := s.Get(ctx, key)
		if winner < 0 && len(unknown) > 0 && err == nil {
			// An Unknown creator may be the one winner: the key holds its bytes.
			for _, w := range unknown {
				if bytes.Equal(got, racePayload(round, w)) {
					winner = w
				}
			}
		}
		for _, w := range losers {
			if err == nil && bytes.Equal(got, racePayload(round, w)) {
				return Report{Rounds: rounds}, fmt.Errorf("round %d: creator %d was told it failed (%v) but the key holds its bytes", round, w, errs[w])
			}
		}
		switch {
		case winner < 0 && !errors.Is(err, backend.ErrNotFound):
			return Report{Rounds: rounds}, fmt.Errorf("round %d: nobody created and the Delete succeeded, but Get = %q, %v; want NotFound", round, got, err)
		case winner > 0 && (err != nil || !bytes.Equal(got, racePayload(round, winner))):
			return Report{Rounds: rounds}, fmt.Errorf("round %d: creator %d won but Get = %q, %v; want its bytes", round, winner, got, err)
		}
		rounds++
	}
	return finish(rounds, o.Rounds, writers, out())
}

func probeMatchMissing(ctx context.Context, s backend.StorageAdapter, _ Options) (Report, error) {
	v, err := s.Put(ctx, "mm/was", []byte("x"))
	if err != nil {
		return Report{}, fmt.Errorf("Put: %w", err)
	}
	if err := s.Delete(ctx, "mm/was"); err != nil {
		return Report{}, fmt.Errorf("Delete: %w", err)
	}
	for _, c := range []struct{ key, version string }{{"mm/never", "1"}, {"mm/never", `"0123456789abcdef"`}, {"mm/was", v.Version}} {
		_, err := s.PutIfMatch(ctx, c.key, []byte("new"), c.version)
		if !errors.Is(err, backend.ErrPrecondition) || backend.KindOf(err) != backend.KindPrecondition {
			return Report{}, fmt.Errorf("PutIfMatch on a missing key = %v (kind %s), want a Precondition failure", err, backend.KindOf(err))
		}
		if !errors.Is(err, backend.ErrNotFound) {
			return Report{}, fmt.Errorf("PutIfMatch on a missing key = %v: a Precondition failure that does not also satisfy ErrNotFound", err)
		}
		if ok, err := s.Exists(ctx, c.key); err != nil || ok {
			return Report{}, fmt.Errorf("PutIfMatch on a missing key created it (Exists = %v, %v)", ok, err)
		}
	}
	return Report{Note: "never written, deleted"}, nil
}

func probePutIfMatchRace(ctx context.Context, s backend.StorageAdapter, o Options) (Report, error) {
	o = o.withDefaults()
	bctx, cancel, out := budget(ctx, o)
	defer cancel()
	const key = "cas-race"
	a, err := s.Put(ctx, key, []byte("start"))
	if err != nil {
		return Report{}, fmt.Errorf("Put: %w", err)
	}
	version := a.Version
	rounds := 0
	for round := 0; round < o.Rounds && bctx.Err() == nil; round++ {
		from := version
		versions := make([]string, o.Writers)
		errs := raceAll(o.Writers, func(w int) error {
			a, err := s.PutIfMatch(bctx, key, racePayload(round, w), from)
			versions[w] = a.Version
			return err
		})
		if interrupted(out, errs...) {
			break
		}
		winner, err := oneWinner(errs)
		if err != nil {
			return Report{Rounds: rounds}, fmt.Errorf("round %d: %w", round, err)
		}
		v, err := checkWinner(ctx, s, key, round, winner, versions[winner])
		if err != nil {
			return Report{Rounds: rounds}, err
		}
		if v == from {
			return Report{Rounds: rounds}, fmt.Errorf("round %d: the winning compare-and-swap kept the previous version %q", round, from)
		}
		version = v
		rounds++
	}
	return finish(rounds, o.Rounds, o.Writers, out())
}

func probeCounter(ctx context.Context, s backend.StorageAdapter, o Options) (Report, error) {
	o = o.withDefaults()
	bctx, cancel, out := budget(ctx, o)
	defer cancel()
	const key = "counter"
	workers := min(o.Writers, 8)
	each := max(1, o.Rounds/4)
	if _, err := s.Put(ctx, key, []byte("0")); err != nil {
		return Report{}, fmt.Errorf("Put: %w", err)
	}
	var (
		swaps  atomic.Int64
		failed atomic.Value
		wg     sync.WaitGroup
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done := 0; done < each && failed.Load() == nil; {
				got, a, err := s.Get(bctx, key)
				if err == nil {
					var n int
					if n, err = strconv.Atoi(string(got)); err != nil {
						failed.Store(fmt.Errorf("the counter holds %q, not a number", got))
						return
					}
					_, err = s.PutIfMatch(bctx, key, []byte(strconv.Itoa(n+1)), a.Version)
				}
				switch {
				case err == nil:
					swaps.Add(1)
					done++
				case errors.Is(err, backend.ErrPrecondition):
				case interrupted(out, err):
					return
				default:
					failed.Store(fmt.Errorf("worker %d: %v (kind %s), want success or Precondition", w, err, backend.KindOf(err)))
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		return Report{}, err
	}
	got, _, err := s.Get(ctx, key)
	if err != nil {
		return Report{}, fmt.Errorf("Get of the counter: %w", err)
	}
	n := int(swaps.Load())
	if string(got) != strconv.Itoa(n) {
		return Report{}, fmt.Errorf("the counter is %s after %d successful compare-and-swaps (%d lost updates)", got, n, n-atoiOr(got))
	}
	r, err := finish(n, workers*each, workers, out())
	r.Note = fmt.Sprintf("%d increments by %d workers", n, workers)
	if r.OutOfBudget {
		r.Note += fmt.Sprintf(" (race budget reached; %d planned)", workers*each)
	}
	return r, err
}

func atoiOr(b []byte) int {
	n, _ := strconv.Atoi(string(b))
	return n
}

// checkWinner reads key after a race and checks it holds the one winner's
// bytes at the version the winner was told; it returns that version.
func checkWinner(ctx context.Context, s backend.StorageAdapter, key string, round, winner int, told string) (string, error) {
	got, attrs, err := s.Get(ctx, key)
	if err != nil {
		return "", fmt.Errorf("round %d: Get after the race: %w", round, err)
	}
	if !bytes.Equal(got, racePayload(round, winner)) {
		return "", fmt.Errorf("round %d: content %q, want the winner's %q", round, got, racePayload(round, winner))
	}
	if attrs.Version != told {
		return "", fmt.Errorf("round %d: version %q, the winner was told %q", round, attrs.Version, told)
	}
	return attrs.Version, nil
}
