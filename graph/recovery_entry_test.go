package graph

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/recovery"
)

// entryOp drives one real writer entry point (mutation, load) that touches
// Person and Company (and WorksAt for the load).
type entryOp struct {
	name   string
	branch string
	keys   []string
	run    func(ctx context.Context, g *Graph, tag string) error
}

var entryOps = []entryOp{
	{
		name: "MutateQuery", branch: "main", keys: []string{recPerson, recCompany},
		run: func(ctx context.Context, g *Graph, tag string) error {
			src := fmt.Sprintf(`mutation m() { insert Person { name: "p-%s" } insert Company { name: "c-%s" } }`, tag, tag)
			_, err := g.MutateQuery(ctx, src, "", MutateOptions{Branch: "main"})
			return err
		},
	},
	{
		name: "Load", branch: "feat", keys: []string{recPerson, recCompany, EdgeTableKey("WorksAt")},
		run: func(ctx context.Context, g *Graph, tag string) error {
			data := fmt.Sprintf(`{"type":"Person","data":{"name":"p-%s"}}
{"type":"Company","data":{"name":"c-%s"}}
{"edge":"WorksAt","from":"p-%s","to":"c-%s","data":{}}
`, tag, tag, tag, tag)
			_, err := g.Load(ctx, strings.NewReader(data), LoadOptions{Branch: "feat", Mode: LoadAppend})
			return err
		},
	},
}

func rowCounts(t testing.TB, g *Graph, branch string, keys []string) []int64 {
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
					if err := op.run(ctx, r.g, "seed"); op.branch == "main" && err != nil {
						t.Fatal(err)
					}
					if op.branch != "main" {
						if _, err := r.g.CreateBranch(ctx, op.branch, ""); err != nil {
							t.Fatal(err)
						}
					}
					before := stateOf(t, r.g, op.branch)
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
					g, oerr := Open(ctx, r.fault, OpenOptions{})
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
					rs, _ := g.RecoveryAudit(ctx)
					if len(rs) > 1 {
						t.Fatalf("k=%d: %d audit rows for one interrupted write", k, len(rs))
					}
					for _, rec := range rs {
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
