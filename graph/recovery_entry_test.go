package graph_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/load"
	"github.com/omnigraph-go/omnigraph/graph/mutate"
	"github.com/omnigraph-go/omnigraph/recovery"
)

// entryOp drives one real writer entry point (mutation, load) that touches
// Person and Company (and WorksAt for the load).
type entryOp struct {
	name   string
	branch string
	keys   []string
	run    func(ctx context.Context, g *graph.Graph, tag string) error
}

var entryOps = []entryOp{
	{
		name: "MutateQuery", branch: "main", keys: []string{recPerson, recCompany},
		run: func(ctx context.Context, g *graph.Graph, tag string) error {
			src := fmt.Sprintf(`mutation m() { insert Person { name: "p-%s" } insert Company { name: "c-%s" } }`, tag, tag)
			_, err := mutate.Query(ctx, g, src, "", mutate.Options{Branch: "main"})
			return err
		},
	},
	{
		name: "Load", branch: "feat", keys: []string{recPerson, recCompany, graph.EdgeTableKey("WorksAt")},
		run: func(ctx context.Context, g *graph.Graph, tag string) error {
			data := fmt.Sprintf(`{"type":"Person","data":{"name":"p-%s"}}
{"type":"Company","data":{"name":"c-%s"}}
{"edge":"WorksAt","from":"p-%s","to":"c-%s","data":{}}
`, tag, tag, tag, tag)
			_, err := load.Run(ctx, g, strings.NewReader(data), load.Options{Branch: "feat", Mode: load.Append})
			return err
		},
	},
}

func rowCounts(t testing.TB, g *graph.Graph, branch string, keys []string) []int64 {
	t.Helper()
	s, err := g.Snapshot(context.Background(), branch)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int64, len(keys))
	for i, k := range keys {
		out[i] = liveRows(t, s, k)
	}
	return out
}

// TestCrashAtEveryWriteEntryPoints is the crash harness over the real
// mutation and load entry points: for every k, crash at the k-th storage
// write, reopen read-write, and check the graph opens converged, the
// acknowledged history is intact, and the write is all or nothing.
func TestCrashAtEveryWriteEntryPoints(t *testing.T) {
	ctx := context.Background()
	for _, op := range entryOps {
		for _, after := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/after=%v", op.name, after), func(t *testing.T) {
				kinds := map[recovery.Kind]int{}
				for k := 1; ; k++ {
					r := newCrashRig(t, "mem")
					// The branch exists before the seed is written there,
					// and the seed must land: the crash interrupts a write
					// over acknowledged rows, never over an empty table.
					if op.branch != "main" {
						if _, err := r.g.CreateBranch(ctx, op.branch, ""); err != nil {
							t.Fatal(err)
						}
					}
					if err := op.run(ctx, r.g, "seed"); err != nil {
						t.Fatalf("seed write: %v", err)
					}
					before := stateOf(t, r.g, op.branch)
					if !containsStr(before.persons, "p-seed") || !containsStr(before.companies, "c-seed") {
						t.Fatalf("the seed rows are missing before the crash: %+v", before)
					}
					rowsBefore := rowCounts(t, r.g, op.branch, op.keys)
					r.fault.Reset()
					if after {
						r.fault.CrashAfterWrite(k)
					} else {
						r.fault.CrashAtWrite(k)
					}
					err := op.run(ctx, r.g, fmt.Sprintf("k%d", k))
					crashed := r.fault.Crashed()
					r.fault.Heal()
					g, oerr := graph.Open(ctx, r.fault, graph.OpenOptions{Process: graph.NewProcess()}) // a restarted process
					if oerr != nil {
						t.Fatalf("k=%d: reopen: %v (write error %v)", k, oerr, err)
					}
					assertConverged(t, g, r.fault)
					after := stateOf(t, g, op.branch)
					for _, id := range before.commits {
						if !containsStr(after.commits, id) {
							t.Fatalf("k=%d: acknowledged commit %s lost", k, id)
						}
					}
					rowsAfter := rowCounts(t, g, op.branch, op.keys)
					landed := rowsAfter[0] != rowsBefore[0]
					for i := range op.keys {
						if want := rowsBefore[i] + map[bool]int64{true: 1, false: 0}[landed]; rowsAfter[i] != want {
							t.Fatalf("k=%d: %s has %d rows, want %d: the write is half-visible (rows before %v after %v)", k, op.keys[i], rowsAfter[i], want, rowsBefore, rowsAfter)
						}
					}
					if err == nil && !landed {
						t.Fatalf("k=%d: an acknowledged write is not visible", k)
					}
					// Content, not only counts: the seed rows survive and
					// the interrupted write's rows are there exactly when
					// it landed.
					tag := fmt.Sprintf("k%d", k)
					wantP, wantC := before.persons, before.companies
					if landed {
						wantP, wantC = withName(wantP, "p-"+tag), withName(wantC, "c-"+tag)
					}
					if !sameNames(after.persons, wantP) || !sameNames(after.companies, wantC) {
						t.Fatalf("k=%d: rows %v / %v, want %v / %v", k, after.persons, after.companies, wantP, wantC)
					}
					// A restarted process may also retire the acknowledged
					// seed's sidecar (its delete rides with the next write's
					// Phase A); at most one row per operation either way.
					rs, _ := g.RecoveryAudit(ctx)
					perOp := map[string]int{}
					for _, rec := range rs {
						if perOp[rec.OperationID]++; perOp[rec.OperationID] > 1 {
							t.Fatalf("k=%d: %d audit rows for operation %s", k, perOp[rec.OperationID], rec.OperationID)
						}
						kinds[rec.RecoveryKind]++
					}
					if !crashed {
						if err != nil {
							t.Fatalf("k=%d: no crash, yet the write failed: %v", k, err)
						}
						t.Logf("%d crash points; recovery kinds %v", k-1, kinds)
						break
					}
					if k > 80 {
						t.Fatal("the write never finished")
					}
				}
				if kinds[recovery.RolledForward] == 0 {
					t.Errorf("never rolled forward: %v", kinds)
				}
			})
		}
	}
}
