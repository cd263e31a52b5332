package merge_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/merge"
)

// propSeed seeds the generated scenarios; each scenario i uses
// rand.NewPCG(propSeed, i), so a failure names its scenario and replays.
const propSeed = 0x15

// propBase: nine people on top of the rig's seed. Side 0 may update and
// delete p0, p3, p6; side 1 p1, p4, p7; nobody deletes p2, p5, p8, the
// only base people new edges may point to. Side 0's new entities are
// prefixed "a", side 1's "b". So two sides' writes never conflict.
const propBase = `{"type":"Person","data":{"handle":"p0","name":"P0"}}
{"type":"Person","data":{"handle":"p1","name":"P1"}}
{"type":"Person","data":{"handle":"p2","name":"P2"}}
{"type":"Person","data":{"handle":"p3","name":"P3"}}
{"type":"Person","data":{"handle":"p4","name":"P4"}}
{"type":"Person","data":{"handle":"p5","name":"P5"}}
{"type":"Person","data":{"handle":"p6","name":"P6"}}
{"type":"Person","data":{"handle":"p7","name":"P7"}}
{"type":"Person","data":{"handle":"p8","name":"P8"}}
`

// op is one generated commit: a load or a mutation.
type op struct{ load, mutate string }

func (o op) String() string { return o.load + o.mutate }

func (r *rig) apply(t testing.TB, branch string, ops []op) {
	t.Helper()
	for _, o := range ops {
		if o.load != "" {
			r.load(t, branch, o.load)
		} else {
			r.mutate(t, branch, o.mutate)
		}
	}
}

// genOps generates n commits of side (0 or 1): person inserts, renames and
// deletes of the side's own base people, edge inserts to stable or own new
// people, weight updates of its own edges, and deletes of the edges from
// its own new people.
func genOps(rng *rand.Rand, side, n int) []op {
	prefix := []string{"a", "b"}[side]
	var own []string // base people this side may still touch
	for i := side; i < 9; i += 3 {
		own = append(own, fmt.Sprintf("p%d", i))
	}
	targets := []string{"p2", "p5", "p8"} // never deleted
	type edge struct{ id, from, to string }
	var edges []edge
	var born []string // this side's new people: every edge from one is its own
	var ops []op
	for i := 0; len(ops) < n; i++ {
		switch k := rng.IntN(6); {
		case k == 0:
			h := fmt.Sprintf("%s%d", prefix, i)
			ops = append(ops, op{load: fmt.Sprintf(`{"type":"Person","data":{"handle":%q,"name":"N%d"}}`, h, rng.IntN(100))})
			targets = append(targets, h)
			born = append(born, h)
		case k == 1 && len(own) > 0:
			h := own[rng.IntN(len(own))]
			ops = append(ops, op{mutate: fmt.Sprintf(`mutation m() { update Person set { name: "R%d" } where handle = %q }`, rng.IntN(100), h)})
		case k == 2 && len(own) > 0:
			j := rng.IntN(len(own))
			ops = append(ops, op{mutate: fmt.Sprintf(`mutation m() { delete Person where handle = %q }`, own[j])})
			own = append(own[:j], own[j+1:]...)
		case k == 3:
			e := edge{fmt.Sprintf("%s-k%d", prefix, i), targets[rng.IntN(len(targets))], targets[rng.IntN(len(targets))]}
			ops = append(ops, op{load: fmt.Sprintf(`{"edge":"Knows","from":%q,"to":%q,"data":{"id":%q,"weight":%d}}`, e.from, e.to, e.id, rng.IntN(10))})
			edges = append(edges, e)
		case k == 4 && len(edges) > 0:
			e := edges[rng.IntN(len(edges))]
			ops = append(ops, op{load: fmt.Sprintf(`{"edge":"Knows","from":%q,"to":%q,"data":{"id":%q,"weight":%d}}`, e.from, e.to, e.id, 10+rng.IntN(10))})
		case k == 5 && len(born) > 0:
			h := born[rng.IntN(len(born))]
			ops = append(ops, op{mutate: fmt.Sprintf(`mutation m() { delete Knows where from = %q }`, h)})
			kept := edges[:0]
			for _, e := range edges {
				if e.from != h {
					kept = append(kept, e)
				}
			}
			edges = kept
		}
	}
	return ops
}

// mainRows renders every table of branch: the entity set.
func mainRows(t testing.TB, g *graph.Graph, branch string) string {
	t.Helper()
	s, err := g.Snapshot(context.Background(), branch)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, p := range s.Tables() {
		fmt.Fprintf(&b, "%s: %s\n", p.Key, strings.Join(snapRows(t, s, p.Key), " "))
	}
	return b.String()
}

func propRig(t testing.TB) *rig {
	t.Helper()
	r := newRig(t)
	r.load(t, "main", propBase)
	return r
}

type propScenario struct {
	a, b []op
	// targetMoves: main gets side 1's commits too (a three-way merge).
	targetMoves bool
}

func propScenarios(t testing.TB) []propScenario {
	t.Helper()
	t.Logf("property seed %#x", propSeed)
	var out []propScenario
	for i := uint64(0); i < 8; i++ {
		rng := rand.New(rand.NewPCG(propSeed, i))
		out = append(out, propScenario{a: genOps(rng, 0, 3+rng.IntN(3)), b: genOps(rng, 1, 3+rng.IntN(3)), targetMoves: i%2 == 1})
	}
	return out
}

// TestMergePropertyTwiceIsAlreadyUpToDate: merging a branch into its parent
// a second time is already_up_to_date and changes nothing (no commit, same
// rows), whether the first merge was a fast-forward or three-way.
func TestMergePropertyTwiceIsAlreadyUpToDate(t *testing.T) {
	ctx := context.Background()
	for i, sc := range propScenarios(t) {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			r := propRig(t)
			r.branch(t, "f", "main")
			r.apply(t, "f", sc.a)
			want := merge.FastForward
			if sc.targetMoves {
				r.apply(t, "main", sc.b)
				want = merge.Merged
			}
			res, err := merge.Run(ctx, r.g, "f", "main", merge.Options{})
			if err != nil || res.Outcome != want {
				t.Fatalf("first merge: %+v %v; want %s (ops %v / %v)", res, err, want, sc.a, sc.b)
			}
			rowsAfter := mainRows(t, r.g, "main")
			commits, err := r.g.Commits(ctx, "main", 0)
			if err != nil {
				t.Fatal(err)
			}
			again, err := merge.Run(ctx, r.g, "f", "main", merge.Options{})
			if err != nil || again.Outcome != merge.AlreadyUpToDate || again.Commit != nil {
				t.Fatalf("second merge: %+v %v; want already_up_to_date", again, err)
			}
			if got := mainRows(t, r.g, "main"); got != rowsAfter {
				t.Errorf("the second merge changed main:\n%s\nwant\n%s", got, rowsAfter)
			}
			if c, _ := r.g.Commits(ctx, "main", 0); len(c) != len(commits) {
				t.Errorf("the second merge committed: %d commits, had %d", len(c), len(commits))
			}
		})
	}
}

// TestMergePropertyOrderDoesNotMatter: branches a and b fork from main and
// make conflict-free changes; merging a then b into main gives the same
// entity set as b then a, and both equal replaying a's and b's writes on
// main directly.
func TestMergePropertyOrderDoesNotMatter(t *testing.T) {
	ctx := context.Background()
	for i, sc := range propScenarios(t) {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			var got []string
			for _, order := range [][2]string{{"a", "b"}, {"b", "a"}} {
				r := propRig(t)
				r.branch(t, "a", "main")
				r.branch(t, "b", "main")
				r.apply(t, "a", sc.a)
				r.apply(t, "b", sc.b)
				for j, br := range order {
					res, err := merge.Run(ctx, r.g, br, "main", merge.Options{})
					if want := []merge.Outcome{merge.FastForward, merge.Merged}[j]; err != nil || res.Outcome != want {
						t.Fatalf("merge %s (order %v): %+v %v; want %s", br, order, res, err, want)
					}
				}
				got = append(got, mainRows(t, r.g, "main"))
			}
			if got[0] != got[1] {
				t.Fatalf("a then b:\n%s\nb then a:\n%s\nops a %v\nops b %v", got[0], got[1], sc.a, sc.b)
			}
			r := propRig(t)
			r.apply(t, "main", sc.a)
			r.apply(t, "main", sc.b)
			if want := mainRows(t, r.g, "main"); got[0] != want {
				t.Errorf("merged:\n%s\nreplayed:\n%s", got[0], want)
			}
		})
	}
}

// TestMergePropertyEqualsReplay: a branch created, written and merged into
// a target that did not move equals replaying its commits on the target.
func TestMergePropertyEqualsReplay(t *testing.T) {
	ctx := context.Background()
	for i, sc := range propScenarios(t) {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			ops := append(append([]op(nil), sc.a...), sc.b...) // both sides' kinds of write
			r := propRig(t)
			r.branch(t, "f", "main")
			r.apply(t, "f", ops)
			res, err := merge.Run(ctx, r.g, "f", "main", merge.Options{})
			if err != nil || res.Outcome != merge.FastForward {
				t.Fatalf("%+v %v", res, err)
			}
			merged := mainRows(t, r.g, "main")
			if src := mainRows(t, r.g, "f"); merged != src {
				t.Errorf("main is not the source:\n%s\nwant\n%s", merged, src)
			}
			re := propRig(t)
			re.apply(t, "main", ops)
			if want := mainRows(t, re.g, "main"); merged != want {
				t.Errorf("merged:\n%s\nreplayed:\n%s\nops %v", merged, want, ops)
			}
		})
	}
}
