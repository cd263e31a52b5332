package graph_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend/local"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/recovery"
)

// crashChildEnv makes the test binary act as the writer process of
// TestCrashWithARealProcessKill.
const crashChildEnv = "OMNIGRAPH_CRASH_CHILD_DIR"

// TestMain lets the test binary re-exec itself as a crash child.
func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		os.Exit(crashChild(dir))
	}
	os.Exit(m.Run())
}

// crashChild opens the graph in dir, starts a two-table write, and blocks
// forever once its table commits are durable (after Phase B, before the
// publish), after telling the parent so through a marker file. The parent
// SIGKILLs it there.
func crashChild(dir string) int {
	ctx := context.Background()
	store, err := local.New(filepath.Join(dir, "g"))
	if err != nil {
		return 3
	}
	g, err := graph.Open(ctx, store, graph.OpenOptions{Actor: "child"})
	if err != nil {
		return 4
	}
	graph.Failpoints.Set(g.ID(), graph.FailpointPostPhaseB, func() error {
		if err := os.WriteFile(filepath.Join(dir, "at-phase-b"), []byte("1"), 0o644); err != nil {
			os.Exit(5)
		}
		select {} // killed here
	})
	_, _, err = twoTableWrite(ctx, g, "main", graph.KindMutation, "child")
	_ = err
	return 6 // never reached: the parent kills this process first
}

// TestCrashWithARealProcessKill pins item 17's real-restart rule with a real
// OS process: a child process is SIGKILLed between its table commits and
// its publish; the parent (its own process: no gate, intent or failpoint
// of the child) reopens read-write and finds, classifies and rolls the
// write forward from storage alone, with the child's actor and commit, and
// the exact rows.
func TestCrashWithARealProcessKill(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	ctx := context.Background()
	dir := t.TempDir()
	store, err := local.New(filepath.Join(dir, "g"))
	if err != nil {
		t.Fatal(err)
	}
	g0, err := graph.Init(ctx, store, testSchema, graph.InitOptions{Actor: "parent"})
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, g0, "main", graph.KindMutation, "seed")
	g0.Close()

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	marker := filepath.Join(dir, "at-phase-b")
	deadline := time.After(60 * time.Second)
wait:
	for {
		if _, err := os.Stat(marker); err == nil {
			break wait
		}
		select {
		case err := <-exited:
			t.Fatalf("the child exited before its failpoint: %v", err)
		case <-deadline:
			_ = cmd.Process.Kill()
			t.Fatal("the child never reached its failpoint")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := <-exited; err == nil {
		t.Fatal("the child exited cleanly; it was to be killed")
	} else {
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("the child ended with %v, want SIGKILL", err)
		}
	}

	keys, err := recovery.Pending(ctx, store)
	if err != nil || len(keys) != 1 {
		t.Fatalf("after the kill: sidecars %v (%v), want the child's one", keys, err)
	}
	g, err := graph.Open(ctx, store, graph.OpenOptions{Actor: "parent"})
	if err != nil {
		t.Fatalf("read-write open after the kill: %v", err)
	}
	assertConverged(t, g, store)
	rs, err := g.RecoveryAudit(ctx)
	if err != nil || len(rs) != 1 || rs[0].RecoveryKind != recovery.RolledForward || rs[0].RecoveryForActor != "child" || rs[0].Classification != recovery.ClassRolledPastExpected {
		t.Fatalf("audit %+v %v", rs, err)
	}
	st := stateOf(t, g, "main")
	if !sameNames(st.persons, []string{"child", "seed"}) || !sameNames(st.companies, []string{"child", "seed"}) {
		t.Fatalf("rows after recovery %v / %v", st.persons, st.companies)
	}
	if ci, err := g.Commit(ctx, st.commit); err != nil || ci.Actor != "child" || ci.ID != rs[0].CommitID {
		t.Fatalf("head commit %+v %v, want the child's pre-minted commit", ci, err)
	}
	mustWrite(t, g, "main", graph.KindMutation, "after")
}
