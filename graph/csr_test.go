package graph

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/omnigraph-go/omnigraph/graph/pg"
)

func edgeRecord(t *testing.T, edges [][2]string) arrow.Record {
	et := &pg.EdgeType{Name: "E", From: "N", To: "N"}
	rows := make([]map[string]any, len(edges))
	for i, e := range edges {
		rows[i] = map[string]any{pg.ColID: fmt.Sprintf("e%03d", i), pg.ColSrc: e[0], pg.ColDst: e[1]}
	}
	return testRecord(t, et.ArrowSchema(), rows)
}

// walkReach is the specification of multi-hop reachability by brute force:
// every walk of min..max edges, destinations deduplicated.
func walkReach(adj map[string][]string, s string, minHops, maxHops int) []string {
	found := map[string]bool{}
	var walk func(n string, k int)
	walk = func(n string, k int) {
		if k >= minHops {
			found[n] = true
		}
		if k == maxHops {
			return
		}
		for _, o := range adj[n] {
			walk(o, k+1)
		}
	}
	for _, o := range adj[s] {
		walk(o, 1)
	}
	out := make([]string, 0, len(found))
	for n := range found {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// TestCSRReachMatchesWalks compares the frontier search over the CSR/CSC
// index with brute-force walk enumeration on random multigraphs with
// self-loops and cycles, in every direction and hop range.
func TestCSRReachMatchesWalks(t *testing.T) {
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
						want := walkReach(d.adj, ix.nodes[s], minH, maxH)
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
