package cloud

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
)

func TestPolicyBudgets(t *testing.T) {
	errX := errors.New("x")
	p := Policy{MaxClient: MaxClientRetries, MaxThrottle: MaxThrottleRetries, Backoff: time.Microsecond}
	cases := []struct {
		name      string
		verdicts  []Verdict // verdict for attempt i (the last repeats)
		succeedAt int       // attempt that succeeds; -1 never
		wantCalls int
		wantErr   bool
	}{
		{name: "success first", verdicts: []Verdict{Stop}, succeedAt: 0, wantCalls: 1},
		{name: "stop is not retried", verdicts: []Verdict{Stop}, succeedAt: -1, wantCalls: 1, wantErr: true},
		{name: "client retries capped at 3", verdicts: []Verdict{RetryClient}, succeedAt: -1, wantCalls: 4, wantErr: true},
		{name: "throttle retries capped at 3", verdicts: []Verdict{RetryThrottle}, succeedAt: -1, wantCalls: 4, wantErr: true},
		{name: "budgets are separate", verdicts: []Verdict{RetryClient, RetryThrottle, RetryClient, RetryThrottle, RetryClient, RetryThrottle, RetryClient}, succeedAt: -1, wantCalls: 7, wantErr: true},
		{name: "success after two client failures", verdicts: []Verdict{RetryClient}, succeedAt: 2, wantCalls: 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			calls := 0
			err := p.Do(context.Background(), func(ctx context.Context) error {
				calls++
				if calls-1 == c.succeedAt {
					return nil
				}
				return errX
			}, func(error) Verdict {
				i := min(calls-1, len(c.verdicts)-1)
				return c.verdicts[i]
			})
			if calls != c.wantCalls || (err != nil) != c.wantErr {
				t.Fatalf("calls %d, err %v; want %d calls, error %v", calls, err, c.wantCalls, c.wantErr)
			}
		})
	}
}

func TestOnceHasATimeout(t *testing.T) {
	err := Once(context.Background(), time.Millisecond, func(ctx context.Context) error {
		if _, ok := ctx.Deadline(); !ok {
			t.Fatal("no deadline")
		}
		<-ctx.Done()
		return ctx.Err()
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
}

func TestCheckEnv(t *testing.T) {
	for _, c := range []struct {
		val  string
		want bool // error expected
	}{{"", false}, {"0", false}, {" 0 ", false}, {"1", true}, {"3", true}, {"ten", true}} {
		t.Setenv(MaxRetriesEnv, c.val)
		err := CheckEnv()
		if (err != nil) != c.want || (err != nil && !errors.Is(err, backend.ErrConfiguration)) {
			t.Fatalf("%s=%q: %v", MaxRetriesEnv, c.val, err)
		}
	}
}

func TestTransportKind(t *testing.T) {
	refused := &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}
	reset := &net.OpError{Op: "read", Err: syscall.ECONNRESET}
	cases := []struct {
		name           string
		err            error
		read, mutation backend.Kind
	}{
		{"refused", refused, backend.KindTransient, backend.KindTransient},
		{"reset", reset, backend.KindTransient, backend.KindUnknown},
		{"deadline", context.DeadlineExceeded, backend.KindTransient, backend.KindUnknown},
		{"other", errors.New("?"), backend.KindUnknown, backend.KindUnknown},
	}
	for _, c := range cases {
		if k := TransportKind(c.err, false); k != c.read {
			t.Errorf("%s read: %s, want %s", c.name, k, c.read)
		}
		if k := TransportKind(c.err, true); k != c.mutation {
			t.Errorf("%s mutation: %s, want %s", c.name, k, c.mutation)
		}
	}
}

// TestRequesterOneRetryLayer pins the one retry layer: reads and writes of
// fresh files get 3 client + 3 throttle retries; conditionals and writes to
// reused keys (backend.ReusedKey) make exactly one attempt.
func TestRequesterOneRetryLayer(t *testing.T) {
	errX := errors.New("x")
	r := Requester{
		Policy:   Policy{MaxClient: MaxClientRetries, MaxThrottle: MaxThrottleRetries, Backoff: time.Microsecond},
		Classify: func(error, Mode) (backend.Kind, Verdict) { return backend.KindTransient, RetryThrottle },
		Describe: func(error) string { return "throttled" },
	}
	for _, c := range []struct {
		name  string
		ctx   context.Context
		mode  Mode
		calls int
	}{
		{"read", context.Background(), Read, 1 + MaxThrottleRetries},
		{"fresh write", context.Background(), Write, 1 + MaxThrottleRetries},
		{"conditional", context.Background(), Conditional, 1},
		{"reused key", backend.ReusedKey(context.Background()), Write, 1},
		{"reused key conditional", backend.ReusedKey(context.Background()), Conditional, 1},
	} {
		calls := 0
		err := r.Do(c.ctx, "put", "k", c.mode, func(context.Context) error { calls++; return errX })
		if calls != c.calls || backend.KindOf(err) != backend.KindTransient {
			t.Fatalf("%s: %d attempts (%v), want %d", c.name, calls, err, c.calls)
		}
	}
	if backend.IsReusedKey(context.Background()) {
		t.Fatal("an unmarked context reads as a reused key")
	}
}

// TestCanonicalETag: every printed form of one ETag is one token.
func TestCanonicalETag(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{name: "quoted", in: `"abc-2"`, want: `"abc-2"`},
		{name: "bare", in: `abc-2`, want: `"abc-2"`},
		{name: "weak", in: `W/"abc-2"`, want: `"abc-2"`},
		{name: "weak bare", in: `W/abc-2`, want: `"abc-2"`},
		{name: "spaces", in: ` "0x8D" `, want: `"0x8D"`},
		{name: "empty", in: ``, want: ``},
		{name: "empty quotes", in: `""`, want: ``},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := CanonicalETag(c.in); got != c.want {
				t.Fatalf("CanonicalETag(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}
