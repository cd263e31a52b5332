package gq

import (
	"math"
	"strings"
	"testing"
)

// fakeStats are hand-set cardinalities.
type fakeStats struct {
	nodes map[string]int64
	edges map[string]EdgeStats
}

func (f fakeStats) NodeRows(typ string) int64 { return f.nodes[typ] }
func (f fakeStats) Edge(typ string) EdgeStats { return f.edges[typ] }

var testStats = fakeStats{
	nodes: map[string]int64{"Person": 30, "Company": 5, "Post": 100},
	edges: map[string]EdgeStats{"Knows": {Rows: 300}, "WorksAt": {Rows: 30}, "Wrote": {Rows: 100}},
}

func estimateOf(t *testing.T, src string, st Stats) *Estimate {
	t.Helper()
	p := mustPlan(t, src, "")
	return EstimateRead(p.Read, st, Sizes{Match: 10, Out: 100})
}

func stepRows(e *Estimate) []int64 {
	out := make([]int64, len(e.Steps))
	for i, s := range e.Steps {
		out[i] = s.Rows
	}
	return out
}

func sameRows(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestEstimateRules pins each rule of estimate.go on hand-set
// cardinalities: 30 people, 300 knows edges (mean degree 10), 5
// companies, 30 works-at edges.
func TestEstimateRules(t *testing.T) {
	for _, c := range []struct {
		name  string
		src   string
		steps []int64
		rows  int64 // every row produced, output included
		out   int64
	}{
		{"scan", `query q() { match { $p: Person } return { $p.name } }`, []int64{30}, 60, 30},
		{"key lookup", `query q() { match { $p: Person { handle: "a" } } return { $p.name } }`, []int64{1}, 2, 1},
		{"equality filter", `query q() { match { $p: Person { name: "a" } } return { $p.name } }`, []int64{3}, 6, 3},
		{"range filter", `query q() { match { $p: Person  $p.age > 3 } return { $p.name } }`, []int64{10}, 20, 10},
		{"cross product is exact", `query q() { match { $a: Person  $b: Person  $c: Person } return { count($a) as n } }`, []int64{30, 900, 27000}, 27931, 1},
		{"one hop", `query q() { match { $p: Person  $p knows $f } return { $f.name } }`, []int64{30, 300}, 630, 300},
		{"both directions", `query q() { match { $p: Person { handle: "a" }  $p <knows> $f } return { $f.name } }`, []int64{1, 20}, 41, 20},
		{"hops capped by the nodes", `query q() { match { $p: Person { handle: "a" }  $p knows{1,3} $f } return { $f.name } }`, []int64{1, 30}, 61, 30},
		{"edge binding", `query q() { match { $p: Person  $p $w:worksAt $c } return { $w.title } }`, []int64{30, 30}, 90, 30},
		{"filter first", `query q() { match { $p: Person  $p knows $f  $f.age < 3 } return { $f.name } }`, []int64{10, 100}, 210, 100},
		{"standalone filter", `query q() { match { $p: Person  $p knows $f  $f.age < $p.age } return { $f.name } }`, []int64{30, 300, 100}, 430, 100},
		{"anti-join keeps its input", `query q() { match { $p: Person  not { $p worksAt $_ } } return { $p.name } }`, []int64{30, 30, 30}, 90, 30},
		{"grouped without keys", `query q() { match { $p: Person  $p knows $f } return { count($f) as n } }`, []int64{30, 300}, 331, 1},
		{"grouped with keys", `query q() { match { $p: Person  $p knows $f } return { $p.city, count($f) as n } }`, []int64{30, 300}, 630, 300},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := estimateOf(t, c.src, testStats)
			if !sameRows(stepRows(e), c.steps) || e.Rows != c.rows || e.Output != c.out {
				t.Fatalf("steps %v rows %d output %d, want %v rows %d output %d", stepRows(e), e.Rows, e.Output, c.steps, c.rows, c.out)
			}
			var want int64
			for i, s := range e.Steps {
				if _, f := s.Step.(*FilterStep); !f {
					if _, a := s.Step.(*AntiJoinStep); !a {
						want += c.steps[i]
					}
				}
			}
			if e.Bytes != want*10+c.out*100 {
				t.Fatalf("bytes %d, want %d", e.Bytes, want*10+c.out*100)
			}
		})
	}
}

// TestEstimateUsesIndexDegrees: the traversal index's count of nodes with
// an edge in caps a traversal's reach.
func TestEstimateUsesIndexDegrees(t *testing.T) {
	src := `query q() { match { $p: Person { handle: "a" }  $p knows{1,4} $f } return { $f.name } }`
	st := fakeStats{nodes: testStats.nodes, edges: map[string]EdgeStats{"Knows": {Rows: 300, MaxOut: 40, Targets: 12}}}
	if e := estimateOf(t, src, st); e.Steps[1].Rows != 12 || e.Steps[1].MaxDegree != 40 {
		t.Fatalf("reach %d (max degree %d), want 12 (40)", e.Steps[1].Rows, e.Steps[1].MaxDegree)
	}
}

// TestEstimateSaturates: an eight-way cross product of a large table
// saturates at math.MaxInt64 instead of overflowing.
func TestEstimateSaturates(t *testing.T) {
	st := fakeStats{nodes: map[string]int64{"Person": math.MaxInt32}}
	e := estimateOf(t, `query q() { match { $a: Person $b: Person $c: Person $d: Person $e: Person $f: Person $g: Person $h: Person } return { count($a) as n } }`, st)
	if e.Rows != math.MaxInt64 || e.Bytes != math.MaxInt64 || e.Steps[7].Rows != math.MaxInt64 {
		t.Fatalf("rows %d bytes %d last %d", e.Rows, e.Bytes, e.Steps[7].Rows)
	}
}

// TestExplainShowsEstimates: explain is String with each step's estimate
// at the end of its line and a summary.
func TestExplainShowsEstimates(t *testing.T) {
	p := mustPlan(t, `query q() { match { $a: Person  $b: Person  $a knows $c  not { $c worksAt $_ } } return { count($a) as n } }`, "")
	e := EstimateRead(p.Read, testStats, Sizes{Match: 10, Out: 100})
	got := p.Explain(e)
	want := `query q()
read
  scan $a Person  -- est. 30 rows
  expand $a out Knows -> $c Person  -- est. 300 rows (10 per input row)
  scan $b Person  -- est. 9000 rows (30 per input row: a cross product)
  antijoin on $c  -- est. 9000 rows
    expand $c out WorksAt -> $_3 Company  -- est. 9000 rows (1 per input row)
  column n I64 = count($a)
estimate: 1 output rows, 18331 rows produced in all, about 183400 bytes materialised
`
	if got != want {
		t.Fatalf("explain:\n%s\nwant:\n%s", got, want)
	}
	if strings.Count(p.String(), "est.") != 0 {
		t.Fatal("String must stay without estimates")
	}
}
