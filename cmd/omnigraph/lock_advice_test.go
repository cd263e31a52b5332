package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/clusterlock"
	"github.com/omnigraph-go/omnigraph/internal/testenv"
)

// TestKilledHolderAdviceEverywhere pins issue 26 items 15 and 27: a CLI
// writer killed (SIGKILL) while it holds the cluster lock, and not yet
// reaped by its parent (a zombie, as under a supervisor that has not
// collected it), is reported gone on every store, by every command that
// meets the lock: the next CLI writer, a starting server (exit 3), and
// 'lock status' (text and JSON) all end with the one clusterlock.Advice,
// naming the exact unlock command. That command, pasted into sh, is one
// word per argument even for a URL with '?', spaces and quotes, and it
// releases the lock; the next write then succeeds.
func TestKilledHolderAdviceEverywhere(t *testing.T) {
	if testing.Short() {
		t.Skip("runs CLI processes")
	}
	t.Run("local", func(t *testing.T) {
		// A directory name a shell would split and glob.
		killedHolderAdvice(t, filepath.Join(t.TempDir(), "my graph's [copy]?"))
	})
	t.Run("s3", func(t *testing.T) { killedHolderAdvice(t, testenv.S3(t)) })
}

func killedHolderAdvice(t *testing.T, url string) {
	mustCLI(t, "init", "--schema", writeSchema(t), url)

	// A writer that blocks holding the lock; killed, and left unreaped.
	marker := t.TempDir()
	cmd := exec.Command(os.Args[0], "mutate", "-e", `insert Person {name: "killed"}`, "--store", url)
	cmd.Env = append(os.Environ(), cliChildEnv+"=1", cliBlockEnv+"="+marker)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	reaped := false
	defer func() {
		if !reaped {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(marker, "blocked")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the writer never blocked")
		}
	}
	if st := lockStatus(t, url); !st.Held || st.HolderGone || st.Owner == nil || st.Owner.PID != cmd.Process.Pid {
		t.Fatalf("lock status while the writer runs = %+v, want held by pid %d, not gone", st, cmd.Process.Pid)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var st lockStatusJSON
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if st = lockStatus(t, url); st.HolderGone {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lock status never said the killed holder is gone: %+v", st)
		}
	}
	unlock := clusterlock.UnlockCommand(st.LockID, url)
	advice := clusterlock.Advice(true, unlock)
	if st.UnlockCommand != unlock {
		t.Errorf("lock status --json unlock_command %q, want %q", st.UnlockCommand, unlock)
	}

	// The next writer, a starting server and lock status say the same.
	code, _, errs := cli(t, "mutate", "-e", `insert Person {name: "refused"}`, "--store", url)
	if code != exitLockHeld || !strings.Contains(errs, advice) {
		t.Errorf("CLI writer: exit %d, stderr %q\nwant exit 3 with %q", code, errs, advice)
	}
	code, _, errs = cli(t, "serve", "--store", url, "--listen", "127.0.0.1:0")
	if code != exitLockHeld || !strings.Contains(errs, advice) {
		t.Errorf("serve: exit %d, stderr %q\nwant exit 3 with %q", code, errs, advice)
	}
	if out := mustCLI(t, "lock", "status", "--store", url); !strings.Contains(out, advice) || !regexp.MustCompile(`holder gone: +yes`).MatchString(out) {
		t.Errorf("lock status:\n%s\nwant the holder gone and %q", out, advice)
	}

	// The printed command, pasted into a shell, releases the lock.
	script := fmt.Sprintf(`omnigraph() { %s=1 "$OMNIGRAPH_TEST_BIN" "$@"; }; %s`, cliChildEnv, unlock)
	sh := exec.Command("sh", "-c", script)
	sh.Env = append(os.Environ(), "OMNIGRAPH_TEST_BIN="+os.Args[0])
	if out, err := sh.CombinedOutput(); err != nil || !strings.Contains(string(out), "released cluster lock "+st.LockID) {
		t.Fatalf("the printed unlock command in sh: %v\n%s", err, out)
	}
	cmd.Wait()
	reaped = true
	mustCLI(t, "mutate", "-e", `insert Person {name: "after"}`, "--store", url)
	names := personNames(t, url)
	// The killed write committed its tables before it blocked, so the next
	// writer's recovery rolls it forward: once, beside the new write.
	if len(names) != 2 || names["after"] != 1 || names["killed"] != 1 {
		t.Errorf("Person names after unlock and a write: %v, want after and killed once each", names)
	}
}
