package query

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/omnigraph-go/omnigraph/lang/pg"
)

func edgeRecord(t *testing.T, edges [][2]string) arrow.Record {
	et := &pg.EdgeType{Name: "E", From: "N", To: "N"}
	rows := make([]map[string]any, len(edges))
	for i, e := range edges {
		rows[i] = map[string]any{pg.ColID: fmt.Sprintf("e%03d", i), pg.ColSrc: e[0], pg.ColDst: e[1]}
	}
	return testRecord(t, et.ArrowSchema(), rows)
}

// bfsReach is the specification of multi-hop reachability (the original
// system's breadth-first search), computed from shortest distances: a node
// other than s is reported when its distance from s lies in [min, max]; a
// node with a self-loop is also reported when its distance plus one does (s
// has distance 0). A cycle back to s never reports s.
func bfsReach(adj map[string][]string, s string, minHops, maxHops int) []string {
	dist := map[string]int{s: 0}
	queue := []string{s}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, o := range adj[n] {
			if _, ok := dist[o]; !ok {
				dist[o] = dist[n] + 1
				queue = append(queue, o)
			}
		}
	}
	in := func(k int) bool { return k >= minHops && k <= maxHops }
	var out []string
	for n, k := range dist {
		selfLoop := slices.Contains(adj[n], n)
		if (n != s && in(k)) || (selfLoop && in(k+1)) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// TestCSRReachMatchesSpec compares the frontier search over the CSR/CSC
// index with the distance-based specification (bfsReach) on random
// multigraphs with self-loops and cycles, in every direction and hop range.
func TestCSRReachMatchesSpec(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for trial := 0; trial < 40; trial++ {
		nodes := 2 + rng.IntN(7)
		var edges [][2]string
		for i := rng.IntN(14); i >= 0; i-- {
			edges = append(edges, [2]string{fmt.Sprintf("n%d", rng.IntN(nodes)), fmt.Sprintf("n%d", rng.IntN(nodes))})
		}
		rec := edgeRecord(t, edges)
		ix := buildEdgeIndex(rec.Schema(), []arrow.Record{rec})
		out, in, both := map[string][]string{}, map[string][]string{}, map[string][]string{}
		for _, e := range edges {
			out[e[0]] = append(out[e[0]], e[1])
			in[e[1]] = append(in[e[1]], e[0])
			both[e[0]] = append(both[e[0]], e[1])
			if e[0] != e[1] {
				both[e[1]] = append(both[e[1]], e[0])
			}
		}
		var sc reachScratch
		for _, d := range []struct {
			d   dir
			adj map[string][]string
		}{{dirOut, out}, {dirIn, in}, {dirBoth, both}} {
			for s := range ix.nodes {
				for minH := 1; minH <= 3; minH++ {
					for maxH := minH; maxH <= 4; maxH++ {
						var got []string
						for _, o := range ix.reach(int32(s), d.d, minH, maxH, &sc) {
							got = append(got, ix.nodes[o])
						}
						slices.Sort(got)
						want := bfsReach(d.adj, ix.nodes[s], minH, maxH)
						if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
							t.Fatalf("trial %d dir %d from %s {%d,%d}: got %v want %v (edges %v)", trial, d.d, ix.nodes[s], minH, maxH, got, want, edges)
						}
					}
				}
			}
		}
	}
}

// TestCSRLayout checks the offsets and the edge rows of both directions.
func TestCSRLayout(t *testing.T) {
	rec := edgeRecord(t, [][2]string{{"a", "b"}, {"a", "c"}, {"b", "c"}, {"c", "a"}, {"a", "b"}})
	ix := buildEdgeIndex(rec.Schema(), []arrow.Record{rec})
	a, b, c := ix.dense["a"], ix.dense["b"], ix.dense["c"]
	if got := ix.out(a); !slices.Equal(got, []int32{0, 1, 4}) {
		t.Fatalf("out(a) = %v", got)
	}
	if got := ix.in(c); !slices.Equal(got, []int32{1, 2}) {
		t.Fatalf("in(c) = %v", got)
	}
	if got := ix.in(b); !slices.Equal(got, []int32{0, 4}) {
		t.Fatalf("in(b) = %v", got)
	}
	if got := ix.out(c); len(got) != 1 || ix.dst[got[0]] != a {
		t.Fatalf("out(c) = %v", got)
	}
	if id := ix.rows.value(4, pg.ColID); id != "e004" {
		t.Fatalf("edge row 4 id = %v", id)
	}
}

// TestReachExcludesSourceOnCycles pins the original system's multi-hop
// rule on small graphs worked out by hand: the source is visited before the
// first hop, so a cycle back to it never reports it; a node is reported at
// the hop that first reaches it; a self-loop is one hop of its own.
func TestReachExcludesSourceOnCycles(t *testing.T) {
	tests := []struct {
		name       string
		edges      [][2]string
		d          dir
		from       string
		minH, maxH int
		want       []string
	}{
		{"cycle back to the source is not reported", [][2]string{{"a", "b"}, {"b", "c"}, {"c", "a"}}, dirOut, "a", 1, 5, []string{"b", "c"}},
		{"two-cycle back to the source", [][2]string{{"a", "b"}, {"b", "a"}}, dirOut, "a", 2, 2, nil},
		{"self-loop on the source is a hop", [][2]string{{"a", "a"}, {"a", "b"}}, dirOut, "a", 1, 5, []string{"a", "b"}},
		{"self-loop on the source needs min 1", [][2]string{{"a", "a"}}, dirOut, "a", 2, 2, nil},
		{"chain 2..3", [][2]string{{"A", "B"}, {"B", "C"}, {"C", "D"}}, dirOut, "A", 2, 3, []string{"C", "D"}},
		{"chain exactly 2", [][2]string{{"A", "B"}, {"B", "C"}, {"C", "D"}}, dirOut, "A", 2, 2, []string{"C"}},
		{"a node first reached at hop 1 is not reported at hop 2", [][2]string{{"a", "b"}, {"a", "c"}, {"b", "c"}, {"c", "d"}}, dirOut, "a", 2, 2, []string{"d"}},
		{"self-loop one hop past the first reach", [][2]string{{"a", "b"}, {"b", "b"}}, dirOut, "a", 2, 2, []string{"b"}},
		{"backwards", [][2]string{{"a", "b"}, {"b", "c"}, {"c", "a"}}, dirIn, "a", 1, 3, []string{"b", "c"}},
		{"undirected never returns to the source", [][2]string{{"a", "b"}, {"b", "c"}}, dirBoth, "b", 1, 2, []string{"a", "c"}},
		{"parallel edges report once", [][2]string{{"a", "b"}, {"a", "b"}, {"b", "c"}, {"b", "c"}}, dirOut, "a", 1, 2, []string{"b", "c"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := edgeRecord(t, tc.edges)
			ix := buildEdgeIndex(rec.Schema(), []arrow.Record{rec})
			var sc reachScratch
			var got []string
			for _, o := range ix.reach(ix.dense[tc.from], tc.d, tc.minH, tc.maxH, &sc) {
				got = append(got, ix.nodes[o])
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("reach from %s {%d,%d}: got %v, want %v", tc.from, tc.minH, tc.maxH, got, tc.want)
			}
		})
	}
}
