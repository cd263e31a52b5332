package graph_test

import (
	"context"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/fault"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/recovery"
)

// TestCrashAtEveryWriteOfRecovery pins item 18 for recovery itself: the
// open-time sweep of an interrupted write that needs a rollback (its
// second table commit failed) is crashed at every one of its own writes
// (restore, publish, audit, sidecar delete), and on a first-touch branch
// write also part way through a DeletePrefix; each time a restarted
// process recovers again. The end state is always the acknowledged rows
// exactly, manifest == HEAD, one audit row, no sidecar.
func TestCrashAtEveryWriteOfRecovery(t *testing.T) {
	ctx := context.Background()
	for _, op := range writeOps {
		t.Run(op.name, func(t *testing.T) {
			// k = 0 crashes part way through the first DeletePrefix of
			// the recovery (if it makes one); k >= 1 at its k-th write.
			for k := 0; ; k++ {
				r := newCrashRig(t, "mem")
				op.setup(t, r.g)
				before := stateOf(t, r.g, op.branch)
				// Interrupt the write so that recovery must roll it back:
				// main fails its second table commit; the branch load
				// crashes right after forking and committing its first
				// table.
				var w *graph.Write
				var err error
				if op.branch == "main" {
					r.fault.FailNth(fault.CondPut, 3, backend.KindPermanent) // sidecar, Company, Person
					w, _, err = twoTableWrite(ctx, r.g, op.branch, op.kind, "x")
				} else {
					clear := graph.Failpoints.Set(r.g.ID(), graph.FailpointPostPhaseA, func() error {
						r.fault.CrashAfterWrite(r.fault.Writes() + 2) // the fork, then its commit
						return nil
					})
					w, _, err = twoTableWrite(ctx, r.g, op.branch, op.kind, "x")
					clear()
				}
				if err == nil {
					t.Fatal("the interrupted write succeeded")
				}
				r.fault.Heal()
				r.fault.Reset()
				// Crash the recovery at its k-th write (and, for the fork
				// delete, part way through its DeletePrefix).
				if k == 0 {
					r.fault.CrashDeletePrefixAfter(1)
				} else {
					r.fault.CrashAtWrite(k)
				}
				_, oerr := graph.Open(ctx, r.fault, graph.OpenOptions{Process: graph.NewProcess()})
				crashed := r.fault.Crashed()
				r.fault.Heal()
				r.fault.CrashDeletePrefixAfter(-1)
				if !crashed && oerr != nil {
					t.Fatalf("k=%d: recovery failed without a crash: %v", k, oerr)
				}
				g, err := graph.Open(ctx, r.fault, graph.OpenOptions{Process: graph.NewProcess()})
				if err != nil {
					t.Fatalf("k=%d: recover again after a crash in recovery (%v): %v", k, oerr, err)
				}
				assertConverged(t, g, r.fault)
				st := stateOf(t, g, op.branch)
				if !sameNames(st.persons, before.persons) || !sameNames(st.companies, before.companies) || containsStr(st.commits, w.CommitID()) {
					t.Fatalf("k=%d: after recovery %v / %v, want the acknowledged %v / %v", k, st.persons, st.companies, before.persons, before.companies)
				}
				for _, id := range before.commits {
					if !containsStr(st.commits, id) {
						t.Fatalf("k=%d: acknowledged commit %s lost", k, id)
					}
				}
				rs, err := g.RecoveryAudit(ctx)
				if err != nil {
					t.Fatal(err)
				}
				n := 0
				for _, rec := range rs {
					if rec.OperationID == w.OperationID() {
						n++
						// A fork delete interrupted part way resumes as
						// residue of an absent ref: Discarded, equally
						// invisible.
						if rec.RecoveryKind != recovery.RolledBack && (op.branch == "main" || rec.RecoveryKind != recovery.Discarded) {
							t.Fatalf("k=%d: recovery kind %s, want RolledBack", k, rec.RecoveryKind)
						}
					}
				}
				if n != 1 {
					t.Fatalf("k=%d: %d audit rows for the interrupted write, want 1", k, n)
				}
				mustWrite(t, g, op.branch, op.kind, "after")
				if !crashed && k > 0 {
					t.Logf("%d crash points in recovery", k-1)
					if k < 3 {
						t.Fatalf("recovery made only %d writes", k-1)
					}
					break
				}
				if k > 40 {
					t.Fatal("recovery never finished its writes")
				}
			}
		})
	}
}
