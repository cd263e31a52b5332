package clusterlock_test

// The test driver: this test binary, re-executed with envMode set, is a
// small lock client (hold an unleased lock; serve under a leased lock and
// write acknowledged objects through the guard). The parent starts it,
// reads its stdout lines and kills it.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
	_ "github.com/omnigraph-go/omnigraph/backend/all"
	"github.com/omnigraph-go/omnigraph/clusterlock"
)

const (
	envMode  = "OMNIGRAPH_CLUSTERLOCK_CHILD" // "hold" or "serve"
	envURL   = "OMNIGRAPH_CLUSTERLOCK_URL"
	envLease = "OMNIGRAPH_CLUSTER_LEASE_SECONDS"
)

// Exit codes of the driver.
const (
	exitLost = 2 // the lease was lost: the server's exit code
	exitHeld = 3 // refused: state_lock_held
	exitFail = 1
)

// TestDriverChild is the body of a driver process; it does nothing in a
// normal run.
func TestDriverChild(t *testing.T) {
	mode := os.Getenv(envMode)
	if mode == "" {
		t.Skip("the lock test driver; runs only in a child process")
	}
	os.Exit(driver(mode, os.Getenv(envURL)))
}

func driver(mode, url string) int {
	ctx := context.Background()
	s, err := backend.Open(ctx, url)
	if err != nil {
		fmt.Printf("ERROR open %s\n", backend.KindOf(err))
		return exitFail
	}
	switch mode {
	case "hold":
		l, err := clusterlock.Acquire(ctx, s, clusterlock.Options{Operation: "load"})
		if err != nil {
			fmt.Printf("ERROR %v\n", err)
			return exitFail
		}
		fmt.Printf("LOCKED %s\n", l.ID())
		_, _ = io.Copy(io.Discard, os.Stdin) // hold until killed
		return 0
	case "serve":
		lease, err := clusterlock.LeaseFromEnv(os.Getenv)
		if err != nil {
			fmt.Printf("ERROR %v\n", err)
			return exitFail
		}
		l, err := clusterlock.AcquireLeased(ctx, s, clusterlock.Options{Lease: lease,
			OnLost: func(err error) {
				fmt.Printf("LOST %v\n", err)
				os.Exit(exitLost)
			}})
		var held *clusterlock.HeldError
		switch {
		case errors.As(err, &held):
			fmt.Printf("HELD %s %v\n", held.LockID, held.HeartbeatsContinue)
			return exitHeld
		case err != nil:
			fmt.Printf("ERROR %v\n", err)
			return exitFail
		}
		fmt.Printf("LEASED %s\n", l.ID())
		g := l.Guard(s)
		stop := make(chan struct{})
		go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(stop) }()
		for n := 1; ; n++ {
			select {
			case <-stop:
				if err := l.Release(ctx); err != nil {
					fmt.Printf("ERROR release %v\n", err)
					return exitFail
				}
				return 0
			case <-time.After(100 * time.Millisecond):
			}
			key := fmt.Sprintf("data/%s-%06d", l.ID(), n)
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := g.PutIfAbsent(wctx, key, []byte(strconv.Itoa(n)))
			cancel()
			if err == nil {
				fmt.Printf("ACK %s\n", key)
			}
		}
	}
	fmt.Printf("ERROR unknown mode %q\n", mode)
	return exitFail
}

// child is a running driver process.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	done  chan struct{}
	code  int
}

func startChild(t *testing.T, mode, url string, env ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestDriverChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), append([]string{envMode + "=" + mode, envURL + "=" + url}, env...)...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, stdin: stdin, lines: make(chan string, 10000), done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
		_ = cmd.Wait()
		c.code = cmd.ProcessState.ExitCode()
		close(c.done)
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-c.done })
	return c
}

// expect returns the first line starting with one of prefixes, within a
// generous hang guard (not a timing assertion).
func (c *child) expect(t *testing.T, prefixes ...string) string {
	t.Helper()
	guard := time.After(90 * time.Second)
	for {
		select {
		case l, ok := <-c.lines:
			if !ok {
				t.Fatalf("driver exited without printing %v", prefixes)
			}
			for _, p := range prefixes {
				if strings.HasPrefix(l, p) {
					return l
				}
			}
		case <-guard:
			t.Fatalf("hang guard: driver printed no %v", prefixes)
		}
	}
}

func (c *child) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-c.done:
		return c.code
	case <-time.After(90 * time.Second):
		t.Fatal("hang guard: driver did not exit")
	}
	return -1
}

// TestCrossProcessKilledHolder: a process holding an unleased lock on a
// local root is killed (kill -9); the next writer is refused naming the
// lock and saying the holder is gone, and the exact-id unlock frees it.
func TestCrossProcessKilledHolder(t *testing.T) {
	dir := t.TempDir()
	c := startChild(t, "hold", dir)
	id := strings.Fields(c.expect(t, "LOCKED", "ERROR"))[1]
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c.wait(t)

	ctx := context.Background()
	s, err := backend.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = clusterlock.Acquire(ctx, s, clusterlock.Options{Operation: "mutate", StoreURL: dir})
	var held *clusterlock.HeldError
	if !errors.As(err, &held) || held.LockID != id || !held.HolderGone {
		t.Fatalf("after kill -9 of the holder: %v", err)
	}
	for _, part := range []string{"holder process is gone", "omnigraph lock unlock --id " + id + " --store " + dir} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("message %q lacks %q", err, part)
		}
	}
	if err := clusterlock.Unlock(ctx, s, clusterlock.NewLockID(), clusterlock.Options{}); !errors.Is(err, clusterlock.ErrWrongID) {
		t.Errorf("wrong-id unlock: %v", err)
	}
	if err := clusterlock.Unlock(ctx, s, id, clusterlock.Options{}); err != nil {
		t.Fatalf("exact-id unlock: %v", err)
	}
	l, err := clusterlock.Acquire(ctx, s, clusterlock.Options{Operation: "mutate"})
	if err != nil {
		t.Fatalf("acquire after unlock: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
