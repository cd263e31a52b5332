package merge_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/merge"
)

// TestMergeCrashAtEveryWrite: for a three-way merge with effects on several
// tables, and for a fast-forward, crash at (not applied) and after
// (applied, answer lost) every storage write k, reopen read-write in a fresh
// process (the open-time sweep runs), and check that every branch holds
// either the full merge or none of it, and that the graph takes the merge
// (again) and another write.
func TestMergeCrashAtEveryWrite(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		prep func(t *testing.T, r *rig)
	}{
		{"three-way", func(t *testing.T, r *rig) {
			r.branch(t, "f", "main")
			r.load(t, "f", `{"type":"Person","data":{"handle":"dan","name":"Dan"}}
{"edge":"Knows","from":"dan","to":"ada","data":{"id":"k2"}}
{"type":"Company","data":{"slug":"initech"}}`)
			r.mutate(t, "f", `mutation m() { delete Knows where from = "ada" }`)
			r.load(t, "main", `{"type":"Person","data":{"handle":"eve","name":"Eve"}}`)
		}},
		{"fast-forward", func(t *testing.T, r *rig) {
			r.branch(t, "f", "main")
			r.load(t, "f", `{"type":"Person","data":{"handle":"dan","name":"Dan"}}
{"edge":"Knows","from":"dan","to":"ada","data":{"id":"k2"}}`)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ref := newRig(t)
			tc.prep(t, ref)
			before := image(t, ref.g)
			ref.fault.Reset()
			if _, err := merge.Run(ctx, ref.g, "f", "main", merge.Options{}); err != nil {
				t.Fatal(err)
			}
			writes := ref.fault.Writes()
			after := image(t, ref.g)
			if after == before || writes < 3 {
				t.Fatalf("the reference merge made %d writes", writes)
			}
			landed := map[bool]int{}
			for _, mode := range []string{"at", "after"} {
				for k := 1; k <= writes; k++ {
					r := newRig(t)
					tc.prep(t, r)
					if image(t, r.g) != before {
						t.Fatal("the seed is not deterministic")
					}
					r.fault.Reset()
					if mode == "at" {
						r.fault.CrashAtWrite(k)
					} else {
						r.fault.CrashAfterWrite(k)
					}
					_, err := merge.Run(ctx, r.g, "f", "main", merge.Options{})
					crashed := r.fault.Crashed()
					r.fault.Heal()
					where := fmt.Sprintf("%s k=%d (err %v)", mode, k, err)
					if crashed && err != nil && !errors.Is(err, backend.ErrUnknown) && !errors.Is(err, graph.ErrRecoveryRequired) {
						t.Errorf("%s: a crash surfaced as an untyped error", where)
					}
					g, oerr := graph.Open(ctx, r.count, graph.OpenOptions{Process: graph.NewProcess(), Actor: "tester"})
					if oerr != nil {
						t.Fatalf("%s: reopen: %v", where, oerr)
					}
					got := image(t, g)
					switch got {
					case after:
						landed[true]++
					case before:
						landed[false]++
						if err == nil {
							t.Fatalf("%s: an acknowledged merge is not visible", where)
						}
						// The merge can be run again, and lands.
						if _, err := merge.Run(ctx, g, "f", "main", merge.Options{}); err != nil {
							t.Fatalf("%s: merge again: %v", where, err)
						}
						if image(t, g) != after {
							t.Fatalf("%s: the merge run again is not the reference", where)
						}
					default:
						t.Fatalf("%s: a mix:\n%s\nbefore\n%s\nafter\n%s", where, got, before, after)
					}
					// Both branches take writes.
					r.g = g
					r.load(t, "main", `{"type":"Person","data":{"handle":"next","name":"N"}}`)
					r.load(t, "f", `{"type":"Person","data":{"handle":"next","name":"N"}}`)
				}
			}
			if landed[true] == 0 || landed[false] == 0 {
				t.Errorf("the harness never saw both outcomes: %v", landed)
			}
		})
	}
}

// TestMergeFastForwardCostIsIndependentOfHistoryDepth: a fast-forward
// costs the same requests at history depth 10 and 200 (O(tables touched)).
func TestMergeFastForwardCostIsIndependentOfHistoryDepth(t *testing.T) {
	ctx := context.Background()
	cost := func(depth int) int {
		r := newRig(t)
		for i := 0; i < depth; i++ {
			r.load(t, "main", fmt.Sprintf(`{"type":"Company","data":{"slug":"c%d"}}`, i))
		}
		r.branch(t, "f", "main")
		r.mutate(t, "f", `mutation m() { update Person set { name: "AdaF" } where handle = "ada" }`)
		// A warm handle, as a server has: the branch heads are cached.
		if _, err := r.g.Snapshot(ctx, "main"); err != nil {
			t.Fatal(err)
		}
		r.count.Reset()
		res, err := merge.Run(ctx, r.g, "f", "main", merge.Options{})
		if err != nil || res.Outcome != merge.FastForward {
			t.Fatalf("%+v %v", res, err)
		}
		c := r.count.Snapshot()
		t.Logf("depth %d: %s", depth, c)
		return c.Total
	}
	shallow, deep := cost(10), cost(200)
	if shallow != deep {
		t.Errorf("a fast-forward costs %d requests at depth 10 and %d at depth 200", shallow, deep)
	}
	if shallow > 30 {
		t.Errorf("a one-table fast-forward costs %d requests", shallow)
	}
}
