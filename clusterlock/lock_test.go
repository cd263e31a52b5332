package clusterlock

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/fault"
	"github.com/omnigraph-go/omnigraph/backend/local"
	"github.com/omnigraph-go/omnigraph/backend/mem"
)

type storeCase struct {
	name  string
	open  func(t *testing.T) backend.StorageAdapter
	local bool
}

var stores = []storeCase{
	{name: "mem", open: func(t *testing.T) backend.StorageAdapter { return mem.New() }},
	{name: "local", local: true, open: func(t *testing.T) backend.StorageAdapter {
		s, err := local.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}},
}

func getRecord(t *testing.T, s backend.StorageAdapter) (Record, backend.Attrs) {
	t.Helper()
	b, a, err := s.Get(context.Background(), LockKey)
	if err != nil {
		t.Fatalf("reading the lock record: %v", err)
	}
	r, err := decodeRecord(b)
	if err != nil {
		t.Fatal(err)
	}
	return r, a
}

var testOwner = Owner{Host: "host-a", PID: 4242, Version: "v1.2.3"}

// TestAcquireRefuseRelease pins the unleased protocol: the record holds the
// format, id, operation, owner and time; a second writer is refused at once
// with state_lock_held naming the holder, its id and the exact unlock
// command; a release frees the lock for the next writer.
func TestAcquireRefuseRelease(t *testing.T) {
	for _, sc := range stores {
		t.Run(sc.name, func(t *testing.T) {
			ctx := context.Background()
			s := sc.open(t)
			clk := newFakeClock()
			opts := Options{Operation: "load", Owner: testOwner, Clock: clk, StoreURL: "file:///data/g"}
			a, err := Acquire(ctx, s, opts)
			if err != nil {
				t.Fatal(err)
			}
			rec, _ := getRecord(t, s)
			want := Record{FormatVersion: FormatUnleased, LockID: a.ID(), Operation: "load", Owner: testOwner, CreatedAt: epoch}
			if rec.FormatVersion != want.FormatVersion || rec.LockID != want.LockID || rec.Operation != want.Operation ||
				rec.Owner != want.Owner || !rec.CreatedAt.Equal(want.CreatedAt) || rec.Leased() {
				t.Fatalf("record = %+v, want %+v", rec, want)
			}
			if len(a.ID()) != 26 {
				t.Errorf("lock id %q is not a ULID", a.ID())
			}

			clk.Advance(90 * time.Second)
			_, err = Acquire(ctx, s, Options{Operation: "mutate", Clock: clk, StoreURL: "file:///data/g"})
			var held *HeldError
			if !errors.Is(err, ErrLockHeld) || !errors.As(err, &held) {
				t.Fatalf("second acquire: %v, want ErrLockHeld", err)
			}
			if held.LockID != a.ID() || held.Holder.Operation != "load" || held.Holder.Owner != testOwner || held.Age != 90*time.Second || held.Leased {
				t.Errorf("held = %+v", held)
			}
			for _, part := range []string{CodeLockHeld, `"load"`, "host-a", "pid 4242", a.ID(),
				"omnigraph lock unlock --id " + a.ID() + " --store file:///data/g"} {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("message %q lacks %q", err, part)
				}
			}
			if strings.Contains(err.Error(), "__cluster") {
				t.Errorf("message names a storage key: %q", err)
			}
			if held.Code() != "state_lock_held" {
				t.Errorf("code = %q", held.Code())
			}

			if err := a.Release(ctx); err != nil {
				t.Fatal(err)
			}
			st, err := Status(ctx, s, Options{Clock: clk})
			if err != nil || st.Held {
				t.Fatalf("status after release = %+v, %v; want free", st, err)
			}
			b, err := Acquire(ctx, s, Options{Operation: "mutate", Clock: clk})
			if err != nil {
				t.Fatalf("acquire after release: %v", err)
			}
			if rec, _ := getRecord(t, s); rec.LockID != b.ID() || rec.Operation != "mutate" {
				t.Errorf("record after re-acquire = %+v", rec)
			}
			if err := b.Release(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestUnleasedRefusalWithoutURLUsesPlaceholder: with no store URL the unlock
// command carries the placeholder the CLI fills in.
func TestUnleasedRefusalWithoutURLUsesPlaceholder(t *testing.T) {
	s := mem.New()
	a, err := Acquire(context.Background(), s, Options{Operation: "load"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Acquire(context.Background(), s, Options{})
	if !strings.Contains(err.Error(), "omnigraph lock unlock --id "+a.ID()+" --store "+PlaceholderURL) {
		t.Errorf("message %q lacks the placeholder unlock command", err)
	}
}

// TestReleaseNeverRemovesAnotherHolder: a holder whose lock an operator
// unlocked, and another writer then took, releases nothing.
func TestReleaseNeverRemovesAnotherHolder(t *testing.T) {
	for _, sc := range stores {
		t.Run(sc.name, func(t *testing.T) {
			ctx := context.Background()
			s := sc.open(t)
			a, err := Acquire(ctx, s, Options{Operation: "load"})
			if err != nil {
				t.Fatal(err)
			}
			if err := Unlock(ctx, s, a.ID(), Options{}); err != nil {
				t.Fatal(err)
			}
			b, err := Acquire(ctx, s, Options{Operation: "mutate"})
			if err != nil {
				t.Fatal(err)
			}
			before, attrs := getRecord(t, s)
			if err := a.Release(ctx); !errors.Is(err, ErrNotHeld) {
				t.Fatalf("stale release: %v, want ErrNotHeld", err)
			}
			after, attrs2 := getRecord(t, s)
			if after.LockID != b.ID() || before.LockID != after.LockID || attrs.Version != attrs2.Version {
				t.Errorf("stale release changed the record: %+v -> %+v", before, after)
			}
		})
	}
}

// TestUnlockWrongIDChangesNothing: unlock with an id that is not the
// holder's is refused and leaves the record byte for byte.
func TestUnlockWrongIDChangesNothing(t *testing.T) {
	for _, sc := range stores {
		t.Run(sc.name, func(t *testing.T) {
			ctx := context.Background()
			s := sc.open(t)
			a, err := Acquire(ctx, s, Options{Operation: "load"})
			if err != nil {
				t.Fatal(err)
			}
			b1, a1, _ := s.Get(ctx, LockKey)
			wrong := NewLockID()
			err = Unlock(ctx, s, wrong, Options{})
			var we *WrongIDError
			if !errors.Is(err, ErrWrongID) || !errors.As(err, &we) || we.Holder != a.ID() || we.Given != wrong {
				t.Fatalf("unlock with a wrong id: %v", err)
			}
			b2, a2, _ := s.Get(ctx, LockKey)
			if string(b1) != string(b2) || a1.Version != a2.Version {
				t.Error("a refused unlock changed the record")
			}
			if _, err := Acquire(ctx, s, Options{}); !errors.Is(err, ErrLockHeld) {
				t.Errorf("lock not held after a refused unlock: %v", err)
			}
			if err := Unlock(ctx, s, a.ID(), Options{}); err != nil {
				t.Fatalf("exact-id unlock: %v", err)
			}
			if err := Unlock(ctx, s, a.ID(), Options{}); !errors.Is(err, ErrNotHeld) {
				t.Errorf("unlock of a free lock: %v, want ErrNotHeld", err)
			}
		})
	}
}

// TestWaitPollsUntilFree: --wait polls a held CLI lock on the clock and
// takes it once released; a wait that runs out refuses with the holder.
func TestWaitPollsUntilFree(t *testing.T) {
	ctx := context.Background()
	s := mem.New()
	clk := newFakeClock()
	a, err := Acquire(ctx, s, Options{Operation: "load", Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		l   *Lock
		err error
	}
	res := make(chan result, 1)
	go func() {
		l, err := Acquire(ctx, s, Options{Operation: "mutate", Clock: clk, Wait: 30 * time.Second, PollInterval: time.Second})
		res <- result{l, err}
	}()
	for range 5 { // five polls find it held
		clk.waitSleepers(t, constant(1), nil)
		clk.Advance(time.Second)
	}
	clk.waitSleepers(t, constant(1), nil)
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	r := <-res
	if r.err != nil {
		t.Fatalf("waiting acquire: %v", r.err)
	}
	if rec, _ := getRecord(t, s); rec.LockID != r.l.ID() || rec.Operation != "mutate" {
		t.Errorf("record = %+v", rec)
	}
	if got := clk.Now().Sub(epoch); got != 6*time.Second {
		t.Errorf("acquired after %s of fake time, want 6s", got)
	}

	// The wait runs out.
	go func() {
		l, err := Acquire(ctx, s, Options{Clock: clk, Wait: 3 * time.Second, PollInterval: time.Second})
		res <- result{l, err}
	}()
	done := make(chan struct{})
	go func() {
		r = <-res
		close(done)
	}()
	moved := clk.drive(t, time.Second, constant(1), done)
	if !errors.Is(r.err, ErrLockHeld) || moved != 3*time.Second {
		t.Fatalf("wait that ran out: %v after %s, want ErrLockHeld after 3s", r.err, moved)
	}
}

// TestWaitRefusesServerAtOnce: a leased holder (a server) is refused at
// once even with --wait.
func TestWaitRefusesServerAtOnce(t *testing.T) {
	ctx := context.Background()
	s := mem.New()
	rec := Record{FormatVersion: FormatLeased, LockID: NewLockID(), Operation: "serve", Owner: testOwner, CreatedAt: epoch, LeaseSeconds: 30}
	if _, err := s.PutIfAbsent(ctx, LockKey, encodeRecord(rec)); err != nil {
		t.Fatal(err)
	}
	clk := newFakeClock()
	_, err := Acquire(ctx, s, Options{Clock: clk, Wait: time.Hour})
	var held *HeldError
	if !errors.As(err, &held) || !held.Leased || held.LockID != rec.LockID {
		t.Fatalf("acquire against a server: %v", err)
	}
	if clk.Now() != epoch {
		t.Error("waited for a server's lock")
	}
	if !strings.Contains(err.Error(), "server") {
		t.Errorf("message %q does not say the holder is a server", err)
	}
}

// TestHolderGoneMessage: on every store, a holder recorded on this host
// (and, when both know it, this kernel and pid namespace) whose pid is dead
// is named gone; on another host, another instance, or alive, it is not.
// The refusal and Status agree, and the refusal ends with the one Advice.
func TestHolderGoneMessage(t *testing.T) {
	cases := []struct {
		name     string
		host     string
		instance string // the holder's; this process is "boot-1/pid:[1]"
		alive    bool
		gone     bool
	}{
		{"dead pid on this host", "host-a", "boot-1/pid:[1]", false, true},
		{"dead pid on this host, record without instance", "host-a", "", false, true},
		{"live pid on this host", "host-a", "boot-1/pid:[1]", true, false},
		{"dead pid on another host", "host-b", "boot-1/pid:[1]", false, false},
		{"dead pid in another container with this host name", "host-a", "boot-1/pid:[2]", false, false},
		{"dead pid on another machine with this host name", "host-a", "boot-2/pid:[1]", false, false},
	}
	me := Owner{Host: "host-a", PID: 1, Instance: "boot-1/pid:[1]"}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			s := mem.New() // not a local directory: the check is the same on every store
			if _, err := Acquire(ctx, s, Options{Owner: Owner{Host: c.host, PID: 777, Instance: c.instance}}); err != nil {
				t.Fatal(err)
			}
			var asked int
			_, err := Acquire(ctx, s, Options{Owner: me, StoreURL: "s3://b/g",
				Alive: func(pid int) bool { asked = pid; return c.alive }})
			var held *HeldError
			if !errors.As(err, &held) {
				t.Fatal(err)
			}
			if held.HolderGone != c.gone || strings.Contains(err.Error(), "holder process is gone") != c.gone {
				t.Errorf("gone = %v (%q), want %v", held.HolderGone, err, c.gone)
			}
			if want := Advice(c.gone, UnlockCommand(held.LockID, "s3://b/g")); !strings.HasSuffix(err.Error(), want) {
				t.Errorf("refusal %q does not end with the advice %q", err, want)
			}
			if c.gone && asked != 777 {
				t.Errorf("liveness asked about pid %d, want 777", asked)
			}
			st, err := Status(ctx, s, Options{Owner: me, Alive: func(int) bool { return c.alive }})
			if err != nil || st.HolderGone != c.gone {
				t.Errorf("status = %+v, %v", st, err)
			}
		})
	}
}

// TestUnlockCommandIsOneShellWord: the printed unlock command, pasted into
// sh, bash (and zsh where installed), gives omnigraph exactly the lock id
// and the URL as they are, for hostile URLs too: '?' and '*' (globs in
// zsh), '&', ';', spaces, both quotes, '$(...)', backticks, '!', '~', a
// newline, non-ASCII. A plain URL stays unquoted.
func TestUnlockCommandIsOneShellWord(t *testing.T) {
	urls := []string{
		"s3://bucket/graph",
		"/data/graph",
		"s3://b/p?key_child_coexist=false",
		"s3://b/p?a=1&b=2",
		"s3://b/p*",
		"/tmp/my graph",
		"/tmp/it's",
		`/tmp/"quoted"`,
		"/tmp/$(touch pwned)",
		"/tmp/`touch pwned`",
		"/tmp/a;touch pwned",
		"/tmp/!!",
		"~/g",
		`/tmp/back\slash`,
		"/tmp/line\nbreak",
		"/tmp/fé/ü",
		"/tmp/[ab]",
		"/tmp/{a,b}",
		"/tmp/a|b>c<d",
		"/tmp/#hash",
		"'",
		"",
	}
	if got := UnlockCommand("01ABC", "s3://bucket/graph"); got != "omnigraph lock unlock --id 01ABC --store s3://bucket/graph" {
		t.Fatalf("a plain URL was quoted: %s", got)
	}
	shells := []string{"sh", "bash"}
	if _, err := exec.LookPath("zsh"); err == nil {
		shells = append(shells, "zsh")
	}
	dir := t.TempDir()
	for _, sh := range shells {
		for _, url := range urls {
			if url == "" {
				continue // the placeholder, below
			}
			cmd := UnlockCommand("01ABC", url)
			// omnigraph is a function that prints each argument NUL-terminated.
			script := `omnigraph() { for a in "$@"; do printf '%s\0' "$a"; done; }; ` + cmd
			c := exec.Command(sh, "-c", script)
			c.Dir = dir
			out, err := c.Output()
			if err != nil {
				t.Fatalf("%s -c %q: %v", sh, script, err)
			}
			got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
			want := []string{"lock", "unlock", "--id", "01ABC", "--store", url}
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("%s: %s\n gave %q\n want %q", sh, cmd, got, want)
			}
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Fatalf("%s ran part of a URL as a command (it created %s)", sh, ents[0].Name())
		}
	}
	if got := UnlockCommand("01ABC", ""); !strings.HasSuffix(got, "--store "+PlaceholderURL) {
		t.Errorf("no URL: %s, want the placeholder", got)
	}
}

// TestProcessAliveOS: the default liveness check sees this process alive.
func TestProcessAliveOS(t *testing.T) {
	if !processAlive(osPID()) {
		t.Error("this process is reported dead")
	}
}

// TestParseLeaseSeconds pins OMNIGRAPH_CLUSTER_LEASE_SECONDS: 2-600 whole
// seconds, default 30.
func TestParseLeaseSeconds(t *testing.T) {
	cases := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 30 * time.Second, true},
		{"2", 2 * time.Second, true},
		{" 600 ", 600 * time.Second, true},
		{"45", 45 * time.Second, true},
		{"1", 0, false},
		{"601", 0, false},
		{"30s", 0, false},
		{"-5", 0, false},
		{"2.5", 0, false},
	}
	for _, c := range cases {
		got, err := ParseLeaseSeconds(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseLeaseSeconds(%q) = %s, %v; want %s ok=%v", c.in, got, err, c.want, c.ok)
		}
		if err != nil && !strings.Contains(err.Error(), EnvLeaseSeconds) {
			t.Errorf("error %q does not name the variable", err)
		}
	}
	got, err := LeaseFromEnv(func(k string) string {
		if k == EnvLeaseSeconds {
			return "12"
		}
		return ""
	})
	if err != nil || got != 12*time.Second {
		t.Errorf("LeaseFromEnv = %s, %v", got, err)
	}
}

// TestStatusOfUnknownFormatIsHeld: a record a newer binary wrote is held,
// never replaced, and never unlocked by this binary.
func TestStatusOfUnknownFormatIsHeld(t *testing.T) {
	ctx := context.Background()
	s := mem.New()
	if _, err := s.PutIfAbsent(ctx, LockKey, []byte(`{"format_version":9,"lock_id":"X"}`)); err != nil {
		t.Fatal(err)
	}
	st, err := Status(ctx, s, Options{})
	if err != nil || !st.Held || !st.UnknownFormat {
		t.Fatalf("status = %+v, %v", st, err)
	}
	if _, err := Acquire(ctx, s, Options{}); !errors.Is(err, ErrLockHeld) {
		t.Errorf("acquire over a newer format: %v", err)
	}
	if err := Unlock(ctx, s, "X", Options{}); err == nil {
		t.Error("unlocked a record of a newer format")
	}
	if b, _, _ := s.Get(ctx, LockKey); !strings.Contains(string(b), `"format_version":9`) {
		t.Error("the newer record was changed")
	}
}

// TestPoisonScopesToOneKey pins reused-key poisoning: an unknown outcome
// refuses later writes to that key only, until a read-back settles it or a
// clean shutdown resets the set.
func TestPoisonScopesToOneKey(t *testing.T) {
	p := NewPoison()
	if p.Observe("a", backend.NewError("put", "a", backend.KindTransient, nil)) {
		t.Error("a transient failure poisoned the key")
	}
	if !p.Observe("a", backend.NewError("put", "a", backend.KindUnknown, nil)) {
		t.Fatal("an unknown outcome did not poison the key")
	}
	err := p.Check("a")
	if !errors.Is(err, ErrPoisoned) || !errors.Is(err, backend.ErrUnknown) || strings.Contains(err.Error(), "a:") {
		t.Errorf("check = %v", err)
	}
	if p.Check("b") != nil {
		t.Error("another key is refused")
	}
	p.Settle("a")
	if p.Check("a") != nil {
		t.Error("a settled key is still refused")
	}
	p.Mark("c")
	p.Reset()
	if len(p.Keys()) != 0 {
		t.Errorf("keys after reset = %v", p.Keys())
	}
}

// TestReleaseUnknownPoisonsLockKey: a release whose answer was lost poisons
// the lock record's key; a later acquire through the same set sends nothing
// and is refused with ErrPoisoned, until a clean shutdown.
func TestReleaseUnknownPoisonsLockKey(t *testing.T) {
	ctx := context.Background()
	log, out := captureLogs(t)
	inner := mem.New()
	f := fault.New(inner)
	p := NewPoison()
	opts := Options{Operation: "load", Poison: p, Logger: log}
	a, err := Acquire(ctx, f, opts)
	if err != nil {
		t.Fatal(err)
	}
	f.LoseAnswer(fault.CondPut, 1)
	if err := a.Release(ctx); !errors.Is(err, backend.ErrUnknown) {
		t.Fatalf("release with a lost answer: %v, want ErrUnknown", err)
	}
	if !p.Poisoned(LockKey) {
		t.Fatal("lock key not poisoned")
	}
	writes := f.Writes()
	if _, err := Acquire(ctx, f, opts); !errors.Is(err, ErrPoisoned) {
		t.Fatalf("acquire through a poisoned key: %v", err)
	}
	if f.Writes() != writes {
		t.Error("a poisoned key was written")
	}
	if !strings.Contains(out.String(), `"failure_class":"unknown"`) || !strings.Contains(out.String(), "cluster lock release outcome unknown") {
		t.Errorf("no release-unknown event:\n%s", out)
	}
	p.Reset() // clean shutdown
	if _, err := Acquire(ctx, f, opts); err != nil {
		t.Fatalf("acquire after a clean shutdown: %v", err)
	}
}

// TestAcquireLostAnswerSettledByReadBack: a create whose answer was lost
// is read back; finding our own record it holds the lock, unpoisoned.
func TestAcquireLostAnswerSettledByReadBack(t *testing.T) {
	ctx := context.Background()
	log, _ := captureLogs(t)
	f := fault.New(mem.New())
	p := NewPoison()
	f.LoseAnswer(fault.CondPut, 1)
	l, err := Acquire(ctx, f, Options{Operation: "load", Poison: p, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if rec, _ := getRecord(t, f); rec.LockID != l.ID() || p.Poisoned(LockKey) {
		t.Errorf("record %+v, poisoned %v", rec, p.Poisoned(LockKey))
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("release after a settled create: %v", err)
	}

	// Not applied and unanswered: unknown, poisoned, and the error says how
	// to find out.
	f.FailNth(fault.CondPut, 1, backend.KindUnknown)
	_, err = Acquire(ctx, f, Options{Operation: "load", Poison: p, Logger: log})
	if !errors.Is(err, backend.ErrUnknown) || !p.Poisoned(LockKey) || !strings.Contains(err.Error(), "lock status") {
		t.Errorf("unsettled create: %v (poisoned %v)", err, p.Poisoned(LockKey))
	}
	if strings.Contains(err.Error(), "__cluster") {
		t.Errorf("message names a key: %q", err)
	}
}

// TestTombstoneWithoutConditionalUpdate: a tombstone left by a CAS adapter
// of the same bucket is free for an adapter without CAS too (no endless
// loop).
func TestTombstoneWithoutConditionalUpdate(t *testing.T) {
	ctx := context.Background()
	inner := mem.New()
	a, err := Acquire(ctx, inner, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	b, err := Acquire(ctx, noCAS{inner}, Options{Operation: "load"})
	if err != nil {
		t.Fatalf("acquire over a tombstone without CAS: %v", err)
	}
	if rec, _ := getRecord(t, inner); rec.LockID != b.ID() {
		t.Errorf("record = %+v", rec)
	}
}
