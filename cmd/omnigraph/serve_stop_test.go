package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/fault"
	"github.com/omnigraph-go/omnigraph/graph"
)

// serveFaultEnv makes a serve child inject one failure (tests only):
//
//   - recovery_required: the first write stops after its table commits,
//     before its publish (the post-Phase-B failpoint): RecoveryRequired.
//   - opaque_failure: the first write fails after its intent is armed with
//     an error that carries no typed evidence.
//   - panic: the first write panics after its table commits.
//   - startup_unknown: the first storage request of the start has an
//     unknown outcome.
//   - startup_configuration: the first storage request of the start is
//     refused as a configuration error (a bad bucket, missing credentials).
const serveFaultEnv = "OMNIGRAPH_CLI_CHILD_SERVE_FAULT"

func init() {
	if os.Getenv(cliChildEnv) != "1" {
		return
	}
	once := func(err error) func() error {
		var fired atomic.Bool
		return func() error {
			if fired.CompareAndSwap(false, true) {
				return err
			}
			return nil
		}
	}
	switch os.Getenv(serveFaultEnv) {
	case "recovery_required":
		afterWriteOpen = func(_ context.Context, g *graph.Graph) {
			graph.Failpoints.Set(g.ID(), graph.FailpointPostPhaseB, once(errors.New("injected: stopped after the table commits")))
		}
	case "opaque_failure":
		afterWriteOpen = func(_ context.Context, g *graph.Graph) {
			graph.Failpoints.Set(g.ID(), graph.FailpointPostPhaseA, once(errors.New("injected: opaque")))
		}
	case "panic":
		afterWriteOpen = func(_ context.Context, g *graph.Graph) {
			fired := once(errors.New("injected: panic"))
			// Post-Phase-B runs on the request's goroutine (Phase A's arm
			// runs on one of its own, where a panic is not the server's).
			graph.Failpoints.Set(g.ID(), graph.FailpointPostPhaseB, func() error {
				if err := fired(); err != nil {
					panic(err)
				}
				return nil
			})
		}
	case "startup_unknown":
		wrapServedStore = func(s backend.StorageAdapter) backend.StorageAdapter {
			inj := fault.New(s)
			inj.FailNth(fault.Any, 1, backend.KindUnknown)
			return inj
		}
	case "startup_configuration":
		wrapServedStore = func(s backend.StorageAdapter) backend.StorageAdapter {
			inj := fault.New(s)
			inj.FailNth(fault.Any, 1, backend.KindConfiguration)
			return inj
		}
	}
}

// TestServeProcessStopCauses pins seed 001's "When the server stops"
// through the real binary on a local graph with two served graphs
// (--config): a write that returns RecoveryRequired (its table commits
// are in storage, not adopted in memory) answers 503 recovery_required,
// one that fails opaquely answers 500 with outcome_unknown, and one that
// panics answers 500 outcome_unknown of class panic; in every case
// the server closes admission for every graph (the other graph's requests
// are refused too) and exits 2, releasing its unleased locks, so a
// restart needs no operator step. The restarted server's read-write open
// resolves the intent: the failed write is there at most once, nothing is
// pending, the other graph got nothing, and writes land again.
func TestServeProcessStopCauses(t *testing.T) {
	for _, tc := range []struct {
		cause, want string
		status      int
	}{
		{"recovery_required", `"recovery_required":{"operation_id":"`, 503},
		{"opaque_failure", `"outcome_unknown":{"check":"GET /graphs/people/commits"}`, 500},
		{"panic", `"failure_class":"panic"`, 500},
	} {
		t.Run(tc.cause, func(t *testing.T) {
			root := t.TempDir()
			people, orders := filepath.Join(root, "people"), filepath.Join(root, "orders")
			for _, dir := range []string{people, orders} {
				mustCLI(t, "init", "--schema", writeSchema(t), dir)
			}
			cfg := filepath.Join(root, "serve.json")
			if err := os.WriteFile(cfg, []byte(`{"version":1,"graphs":{"people":"people","orders":"orders"}}`), 0o600); err != nil {
				t.Fatal(err)
			}
			mut := func(name string) string {
				return `{"query":"mutation m() { insert Person { name: \"` + name + `\" } }"}`
			}
			base, _, wait := startServeEnv(t, []string{serveFaultEnv + "=" + tc.cause}, "--config", cfg)
			st, body, _ := raw(t, "POST", base+"/graphs/people/mutate", "", "application/json", mut("failed"))
			if st != tc.status || !strings.Contains(body, tc.want) || strings.Contains(body, "injected") {
				t.Fatalf("the failing write: %d %s, want %d with %s", st, body, tc.status, tc.want)
			}
			if code := wait(); code != exitServerStopped {
				t.Fatalf("after %s the server exited %d, want %d", tc.cause, code, exitServerStopped)
			}
			for _, dir := range []string{people, orders} {
				if st := lockStatus(t, dir); st.Held {
					t.Fatalf("%s: a server that stopped on %s must release its unleased lock: %+v", dir, tc.cause, st)
				}
			}

			base, cmd, wait := startServe(t, "--config", cfg)
			for _, g := range []string{"people", "orders"} {
				if st, body, _ := raw(t, "POST", base+"/graphs/"+g+"/mutate", "", "application/json", mut("after")); st != 200 {
					t.Fatalf("%s: a write after the restart: %d %s", g, st, body)
				}
			}
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if code := wait(); code != 0 {
				t.Fatalf("SIGTERM: exit %d", code)
			}
			if got := personNames(t, people); got["after"] != 1 || got["failed"] > 1 || len(got) > 2 {
				t.Fatalf("people after the restart: %v", got)
			}
			if got := personNames(t, orders); len(got) != 1 || got["after"] != 1 {
				t.Fatalf("orders after the restart: %v", got)
			}
			if n := pendingRecoveries(t, people); n != 0 {
				t.Fatalf("%d recovery intents pending after the restart", n)
			}
		})
	}
}

// TestServeProcessUncertainStartup: a start whose storage request has an
// unknown outcome serves nothing and exits 2 (seed 001: an uncertain
// startup), naming no storage key; a definite refusal keeps its own code
// (no graph at the location: 1); the next clean start serves.
func TestServeProcessUncertainStartup(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "graph")
	mustCLI(t, "init", "--schema", writeSchema(t), dir)
	base, _, _, code, stderr := tryServe(t, []string{serveFaultEnv + "=startup_unknown"}, "--store", dir)
	if base != "" || code != exitServerStopped || !strings.Contains(stderr, "uncertain startup") || strings.Contains(stderr, "__manifest") {
		t.Fatalf("a start with an unknown storage outcome: served %q, exit %d, want %d:\n%s", base, code, exitServerStopped, stderr)
	}
	if st := lockStatus(t, dir); st.Held {
		t.Fatalf("a refused start holds the lock: %+v", st)
	}
	if base, _, _, code, stderr := tryServe(t, nil, "--store", filepath.Join(t.TempDir(), "nothing")); base != "" || code != exitError {
		t.Fatalf("serve of no graph: served %q, exit %d, want %d:\n%s", base, code, exitError, stderr)
	}
	// A definite configuration refusal (InvalidBucketName, NoSuchBucket,
	// AccessDenied are configuration errors) is not uncertain: its own
	// exit code, not 2 (which an orchestrator restarts on), and what to fix.
	base, _, _, code, stderr = tryServe(t, []string{serveFaultEnv + "=startup_configuration"}, "--store", dir)
	if base != "" || code != exitConfiguration || strings.Contains(stderr, "uncertain startup") || !strings.Contains(stderr, "failure_class=storage_configuration") ||
		!strings.Contains(stderr, "bucket or container name") || !strings.Contains(stderr, "credentials") || strings.Contains(stderr, "__manifest") {
		t.Fatalf("a start refused as a configuration error: served %q, exit %d, want %d:\n%s", base, code, exitConfiguration, stderr)
	}
	base, cmd, wait := startServe(t, "--store", dir)
	if st, body, _ := raw(t, "GET", base+"/graphs/default/branches", "", "", ""); st != 200 {
		t.Fatalf("after a clean start: %d %s", st, body)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := wait(); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}
}
