package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/internal/testenv"
)

// cliChildEnv makes the test binary act as the omnigraph binary (cliMain,
// with its signal handling), so the lock tests run real OS processes.
const cliChildEnv = "OMNIGRAPH_CLI_CHILD"

// cliBlockEnv names a directory: the child arms the post-Phase-B failpoint
// (table commits durable, manifest not published) of its write, writes the
// marker file "blocked" there and waits until its context is cancelled
// (SIGTERM) or it is killed.
const cliBlockEnv = "OMNIGRAPH_CLI_CHILD_BLOCK"

func TestMain(m *testing.M) {
	if os.Getenv(cliChildEnv) == "1" {
		if dir := os.Getenv(cliBlockEnv); dir != "" {
			afterWriteOpen = func(ctx context.Context, g *graph.Graph) {
				graph.Failpoints.Set(g.ID(), graph.FailpointPostPhaseB, func() error {
					if err := os.WriteFile(filepath.Join(dir, "blocked"), []byte("1"), 0o644); err != nil {
						os.Exit(90)
					}
					<-ctx.Done()
					return ctx.Err()
				})
			}
		}
		code := cliMain(os.Args[1:])
		recordChildPeak()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// childCLI runs one CLI invocation as its own OS process.
func childCLI(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), cliChildEnv+"=1"), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), errb.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), errb.String()
	}
	t.Errorf("running the CLI child %v: %v", args, err)
	return -1, out.String(), errb.String()
}

// personNames counts every Person name on main.
func personNames(t *testing.T, url string) map[string]int {
	t.Helper()
	out := mustCLI(t, "query", "-e", `query q() { match { $p: Person } return { $p.name } }`, "--format", "csv", "--store", url)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	got := map[string]int{}
	for _, l := range lines[1:] { // skip the header
		got[l]++
	}
	return got
}

// lockStatus is `lock status --json` of url, in-process.
func lockStatus(t *testing.T, url string) lockStatusJSON {
	t.Helper()
	var st lockStatusJSON
	if err := json.Unmarshal([]byte(mustCLI(t, "lock", "status", "--store", url, "--json")), &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestConcurrentCLIWriters pins issue 13's writer fence with real
// processes: N = 2, 4, 8 concurrent CLI writer processes on one local graph.
// Without --wait every write either exits 0 and its node is present exactly
// once, or exits 3 (state_lock_held) and its node is absent; nothing else.
// With --wait 30s every write succeeds and is present exactly once.
func TestConcurrentCLIWriters(t *testing.T) {
	if testing.Short() {
		t.Skip("runs hundreds of CLI processes")
	}
	for _, n := range []int{2, 4, 8} {
		t.Run(fmt.Sprintf("N=%d", n), func(t *testing.T) {
			concurrentCLIWriters(t, filepath.Join(t.TempDir(), "g"), n, writesPerProcess)
		})
	}
}

// TestConcurrentCLIWritersS3 is TestConcurrentCLIWriters on the S3 emulator.
func TestConcurrentCLIWritersS3(t *testing.T) {
	url := testenv.S3(t)
	for _, n := range []int{2, 4, 8} {
		t.Run(fmt.Sprintf("N=%d", n), func(t *testing.T) {
			// A sub-path of the test prefix, before the URL's parameters.
			base, params, _ := strings.Cut(url, "?")
			sub := fmt.Sprintf("%s/n%d", base, n)
			if params != "" {
				sub += "?" + params
			}
			concurrentCLIWriters(t, sub, n, writesPerProcess)
		})
	}
}

// writesPerProcess is the 50 writes per writer process, for every N.
const writesPerProcess = 50

func concurrentCLIWriters(t *testing.T, url string, n, writes int) {
	mustCLI(t, "init", "--schema", writeSchema(t), url)
	type result struct {
		name   string
		code   int
		stderr string
	}
	phase := func(tag string, extra ...string) []result {
		var mu sync.Mutex
		var res []result
		var wg sync.WaitGroup
		for w := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range writes {
					name := fmt.Sprintf("%s-w%d-%d", tag, w, i)
					args := append([]string{"mutate", "-e", fmt.Sprintf("insert Person {name: %q}", name), "--store", url}, extra...)
					code, _, errs := childCLI(t, nil, args...)
					mu.Lock()
					res = append(res, result{name, code, errs})
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		return res
	}
	committed := map[string]bool{} // over both phases
	check := func(res []result, mayRefuse bool) {
		t.Helper()
		got := personNames(t, url)
		ok, refused := 0, 0
		for _, r := range res {
			switch {
			case r.code == exitOK:
				ok++
				committed[r.name] = true
				if got[r.name] != 1 {
					t.Errorf("write %s exited 0 but its node is present %d times", r.name, got[r.name])
				}
			case r.code == exitLockHeld && mayRefuse:
				refused++
				if got[r.name] != 0 {
					t.Errorf("write %s was refused (exit 3) but its node is present %d times", r.name, got[r.name])
				}
				if !strings.Contains(r.stderr, "state_lock_held") || !strings.Contains(r.stderr, "omnigraph lock unlock --id ") {
					t.Errorf("write %s: refusal %q does not name the lock and its unlock command", r.name, r.stderr)
				}
			default:
				t.Errorf("write %s: exit %d: %s", r.name, r.code, r.stderr)
			}
		}
		for name := range committed {
			if got[name] != 1 {
				t.Errorf("committed node %s is present %d times", name, got[name])
			}
			delete(got, name)
		}
		for name, c := range got {
			if !committed[name] {
				t.Errorf("node %s is present %d times but no write of it exited 0", name, c)
			}
		}
		if st := lockStatus(t, url); st.Held {
			t.Errorf("the lock is still held after every writer exited: %+v", st)
		}
		t.Logf("%d writes: %d committed, %d refused with state_lock_held", len(res), ok, refused)
	}
	start := time.Now()
	check(phase("free"), true)
	t.Logf("without --wait: %s", time.Since(start).Round(time.Millisecond))
	start = time.Now()
	check(phase("wait", "--wait", "30s"), false)
	t.Logf("with --wait 30s: %s", time.Since(start).Round(time.Millisecond))
	if pend := pendingRecoveries(t, url); pend != 0 {
		t.Errorf("%d recovery sidecars pending after clean writers", pend)
	}
}

func pendingRecoveries(t *testing.T, url string) int {
	t.Helper()
	var rl struct {
		Pending []json.RawMessage `json:"pending"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, "recovery", "list", "--store", url, "--json")), &rl); err != nil {
		t.Fatal(err)
	}
	return len(rl.Pending)
}

// blockedWriter starts a CLI writer process that inserts Person name and
// blocks after its table commits, before its publish, holding the lock.
func blockedWriter(t *testing.T, url, name string) (*exec.Cmd, <-chan error, *bytes.Buffer) {
	t.Helper()
	marker := t.TempDir()
	cmd := exec.Command(os.Args[0], "mutate", "-e", fmt.Sprintf("insert Person {name: %q}", name), "--store", url)
	cmd.Env = append(os.Environ(), cliChildEnv+"=1", cliBlockEnv+"="+marker)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.After(60 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(marker, "blocked")); err == nil {
			return cmd, exited, &errb
		}
		select {
		case err := <-exited:
			t.Fatalf("the writer exited before it blocked: %v: %s", err, errb.String())
		case <-deadline:
			_ = cmd.Process.Kill()
			t.Fatal("the writer never blocked")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestKilledLockHolder pins "kill -9 of a lock holder mid-write: the next
// write refuses naming the lock and that its holder is gone; `lock unlock
// --id` releases it; the following write recovers the intent and
// succeeds", with the killed write present exactly once (it had committed
// its tables, so recovery rolls it forward) and nothing else changed.
func TestKilledLockHolder(t *testing.T) {
	if testing.Short() {
		t.Skip("runs CLI processes")
	}
	url := filepath.Join(t.TempDir(), "g")
	mustCLI(t, "init", "--schema", writeSchema(t), url)
	mustCLI(t, "mutate", "-e", `insert Person {name: "seed"}`, "--store", url)

	cmd, exited, _ := blockedWriter(t, url, "killed")
	st := lockStatus(t, url)
	if !st.Held || st.Owner == nil || st.Owner.PID != cmd.Process.Pid || st.Operation != "mutate" || st.HolderGone || st.Leased {
		t.Fatalf("lock status while the writer blocks = %+v, want held by pid %d for mutate", st, cmd.Process.Pid)
	}
	id := st.LockID
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited

	// The next write refuses at once, naming the lock, its gone holder and
	// the exact unlock command.
	code, out, errs := cli(t, "mutate", "-e", `insert Person {name: "refused"}`, "--store", url)
	wantCmd := "omnigraph lock unlock --id " + id + " --store " + url
	if code != exitLockHeld || out != "" || !strings.Contains(errs, "state_lock_held") || !strings.Contains(errs, "holder process is gone") || !strings.Contains(errs, wantCmd) {
		t.Fatalf("write after the kill: exit %d, stderr %q; want exit 3 naming the gone holder and %q", code, errs, wantCmd)
	}
	code, _, errs = cli(t, "mutate", "-e", `insert Person {name: "refused"}`, "--store", url, "--json", "--wait", "1s")
	var je jsonError
	if code != exitLockHeld || json.Unmarshal([]byte(errs), &je) != nil || je.Error.Code != "state_lock_held" || !strings.Contains(je.Error.Message, id) {
		t.Fatalf("--json write after the kill: exit %d, %q; want exit 3, code state_lock_held naming %s", code, errs, id)
	}
	if st := lockStatus(t, url); !st.Held || st.LockID != id || !st.HolderGone {
		t.Fatalf("lock status after the kill = %+v, want held by %s, holder gone", st, id)
	}
	// Reads go on while the lock is held, and see only what was published.
	if got := personNames(t, url); len(got) != 1 || got["seed"] != 1 {
		t.Fatalf("read while the lock is held: %v, want only seed", got)
	}
	if p := pendingRecoveries(t, url); p != 1 {
		t.Fatalf("pending sidecars while the lock is held = %d, want the killed write's 1", p)
	}

	if code, _, errs := cli(t, "lock", "unlock", "--id", "01WRONGWRONGWRONGWRONGWRON", "--store", url); code != exitError || !strings.Contains(errs, "lock_wrong_id") {
		t.Fatalf("unlock with a wrong id: exit %d, %q; want exit 1 lock_wrong_id", code, errs)
	}
	if st := lockStatus(t, url); !st.Held || st.LockID != id {
		t.Fatalf("a wrong-id unlock changed the lock: %+v", st)
	}
	if out := mustCLI(t, "lock", "unlock", "--id", id, "--store", url); !strings.Contains(out, id) {
		t.Fatalf("unlock said %q", out)
	}
	if st := lockStatus(t, url); st.Held {
		t.Fatalf("lock still held after unlock: %+v", st)
	}

	// The following write recovers the killed write's intent and succeeds.
	mustCLI(t, "mutate", "-e", `insert Person {name: "after"}`, "--store", url)
	got := personNames(t, url)
	if len(got) != 3 || got["seed"] != 1 || got["after"] != 1 || got["killed"] != 1 {
		t.Fatalf("after recovery: %v; want seed, killed (rolled forward) and after, once each", got)
	}
	if p := pendingRecoveries(t, url); p != 0 {
		t.Fatalf("pending sidecars after the recovering write = %d", p)
	}
	if rec := mustCLI(t, "recovery", "list", "--store", url); !strings.Contains(rec, "RolledForward") {
		t.Fatalf("recovery list does not show the roll-forward:\n%s", rec)
	}
}

// TestTerminatedWriterReleasesLock pins "SIGTERM of a CLI writer lets its
// write settle or abort, then releases the lock": no unlock is needed, and
// the next write succeeds with the interrupted write present at most once.
func TestTerminatedWriterReleasesLock(t *testing.T) {
	if testing.Short() {
		t.Skip("runs CLI processes")
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			url := filepath.Join(t.TempDir(), "g")
			mustCLI(t, "init", "--schema", writeSchema(t), url)
			cmd, exited, errb := blockedWriter(t, url, "interrupted")
			if st := lockStatus(t, url); !st.Held {
				t.Fatalf("lock not held while the writer blocks: %+v", st)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if err := <-exited; err == nil {
				t.Fatalf("the interrupted writer exited 0: %s", errb.String())
			} else if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitError {
				t.Fatalf("the interrupted writer ended with %v (%s), want exit 1", err, errb.String())
			}
			if st := lockStatus(t, url); st.Held {
				t.Fatalf("the lock is still held after %v: %+v", sig, st)
			}
			mustCLI(t, "mutate", "-e", `insert Person {name: "next"}`, "--store", url)
			got := personNames(t, url)
			if got["next"] != 1 || got["interrupted"] > 1 || len(got) != 1+got["interrupted"] {
				t.Fatalf("after the interrupted write: %v", got)
			}
		})
	}
}
