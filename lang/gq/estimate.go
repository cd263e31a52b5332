package gq

import (
	"math"
)

// Estimates. Before a read runs, the planner estimates the rows each step
// produces from the data's cardinalities (Stats: table row counts, and the
// traversal index's degree data where it is loaded), so a query whose
// estimate is over its budget is refused before it starts (a cross product
// of disconnected patterns, an unbounded fan-out), and `query --explain`
// shows the estimate per step. The estimate counts what the row budget
// counts: the rows every step outputs, anti-join probes included, plus the
// output rows of the projection.
//
// The rules (estimate_test.go):
//   - a scan binds N rows of its node type for each input row: exactly N
//     with no filter (so a cross product of unfiltered scans is exact), 1
//     for a key lookup, and N times the selectivity of each pushed filter
//     otherwise (= 1/10, != 9/10, <, <=, >, >= 1/3, contains and
//     starts_with 1/4, search, fuzzy and match_text 1/10);
//   - a one-hop expansion multiplies by the mean degree E/N (edges over the
//     rows of the node type it leaves from; both directions add up); an
//     edge binding is one row per edge, the same;
//   - a variable-length expansion (set semantics) multiplies by the sum of
//     d^k over its hop range, at most the nodes it can reach (the rows of
//     the destination type, or the index's count of nodes with an edge in);
//   - a check of a bound endpoint and a filter keep a share of their input,
//     an anti-join keeps all of it (an upper bound), and each of its input
//     rows runs the sub-plan from one row;
//   - numbers saturate at math.MaxInt64 instead of overflowing.

// Stats are the cardinalities an estimate reads.
type Stats interface {
	// NodeRows is the live row count of a node type's table.
	NodeRows(typ string) int64
	// Edge describes an edge type's table.
	Edge(typ string) EdgeStats
}

// EdgeStats are one edge table's cardinalities.
type EdgeStats struct {
	// Rows is the live edge count.
	Rows int64
	// From the traversal index, when it is loaded (0: unknown): the
	// largest number of edges leaving / entering one node (shown by
	// explain), and the number of distinct nodes with an edge out / in
	// (which bounds what a traversal reaches).
	MaxOut, MaxIn    int64
	Sources, Targets int64
}

// Sizes are the bytes the executor holds per row, for the memory estimate.
type Sizes struct {
	// Match is the bytes of one match row of the plan.
	Match int64
	// Out is the bytes of one output row.
	Out int64
}

// StepEstimate is the estimate of one step.
type StepEstimate struct {
	Step Step
	// Depth is the anti-join nesting (0: the top pipeline).
	Depth int
	// Rows is the rows the step outputs in all: for a step inside an
	// anti-join, summed over every probe.
	Rows int64
	// PerInput is the factor the step applies to each input row.
	PerInput float64
	// Total is the running total of rows produced, this step included.
	Total int64
	// MaxDegree is, for an expansion, the largest degree in its direction
	// when the traversal index reports it (0: unknown).
	MaxDegree int64
}

// Estimate is the planner's estimate of one read plan on some data.
type Estimate struct {
	Steps []StepEstimate
	// Output is the projection's rows (before the limit).
	Output int64
	// Rows is every row produced: the steps' and the output's.
	Rows int64
	// Bytes is the memory estimate: the match rows and the output rows
	// materialised (an upper bound: as if none were freed).
	Bytes int64
}

// Selectivities of pushed and standalone filters.
const (
	selEq    = 0.1
	selNe    = 0.9
	selRange = 1.0 / 3
	selText  = 0.1
	selSub   = 0.25
)

// EstimateRead estimates rp on data described by st.
func EstimateRead(rp *ReadPlan, st Stats, sz Sizes) *Estimate {
	e := &Estimate{}
	var total, bytes float64
	var walk func(steps []Step, in float64, depth int) float64
	walk = func(steps []Step, in float64, depth int) float64 {
		rows := in
		for _, s := range steps {
			factor := 1.0
			out := rows
			var maxDeg int64
			switch s := s.(type) {
			case *ScanStep:
				factor = scanRows(s, st)
				out = rows * factor
			case *ExpandStep:
				factor = expandFactor(rp, s, st)
				out = rows * factor
				es := st.Edge(s.Edge.Name)
				switch s.Dir {
				case Out:
					maxDeg = es.MaxOut
				case In:
					maxDeg = es.MaxIn
				default:
					if es.MaxOut > 0 && es.MaxIn > 0 {
						maxDeg = es.MaxOut + es.MaxIn
					}
				}
			case *FilterStep:
				factor = selectivity(s.Pred)
				out = rows * factor
			case *AntiJoinStep:
				walk(s.Steps, rows, depth+1)
			}
			if factor == 0 {
				out = 0 // not NaN when rows saturated to +Inf
			}
			if _, isFilter := s.(*FilterStep); !isFilter {
				if _, isAnti := s.(*AntiJoinStep); !isAnti {
					total += out
					bytes += out * float64(sz.Match)
				}
			}
			rows = out
			e.Steps = append(e.Steps, StepEstimate{Step: s, Depth: depth, Rows: sat(out), PerInput: factor, Total: sat(total), MaxDegree: maxDeg})
		}
		return rows
	}
	rows := walk(rp.Steps, 1, 0)
	out := rows
	if rp.Grouped {
		group := false
		for _, c := range rp.Columns {
			group = group || c.Group
		}
		if !group {
			out = 1
		}
	}
	total += out
	bytes += out * float64(sz.Out)
	e.Output, e.Rows, e.Bytes = sat(out), sat(total), sat(bytes)
	return e
}

// sat converts to int64, saturating.
func sat(f float64) int64 {
	switch {
	case f >= math.MaxInt64 || math.IsInf(f, 1) || math.IsNaN(f):
		return math.MaxInt64
	case f <= 0:
		return 0
	}
	return int64(math.Ceil(f))
}

func scanRows(s *ScanStep, st Stats) float64 {
	n := float64(max(st.NodeRows(s.Node.Name), 0))
	if s.Key != nil {
		return math.Min(1, n)
	}
	for _, p := range s.Where {
		n *= selectivity(p)
	}
	return n
}

func selectivity(p *Predicate) float64 {
	switch {
	case p.Op.TextOp():
		return selText
	case p.Op == OpEq:
		return selEq
	case p.Op == OpNe:
		return selNe
	case p.Op == OpContains, p.Op == OpStartsWith:
		return selSub
	}
	return selRange
}

// expandFactor is the rows one input row of s yields.
func expandFactor(rp *ReadPlan, s *ExpandStep, st Stats) float64 {
	es := st.Edge(s.Edge.Name)
	from := float64(max(st.NodeRows(rp.Vars[s.From].Node.Name), 1))
	to := float64(max(st.NodeRows(s.ToNode.Name), 0))
	e := float64(max(es.Rows, 0))
	var d, reachCap float64
	switch s.Dir {
	case Out:
		d = e / from
		reachCap = capCount(to, es.Targets)
	case In:
		d = e / from
		reachCap = capCount(to, es.Sources)
	default:
		d = 2 * e / from
		reachCap = to
	}
	if s.MinHops > s.MaxHops {
		return 0
	}
	if s.EdgeVar >= 0 {
		if s.ToBound {
			// The edges between two given nodes.
			return d / math.Max(to, 1)
		}
		return d
	}
	// Set semantics: each destination once per input row.
	reach := 0.0
	pow := 1.0
	for k := 1; k <= s.MaxHops && reach < reachCap; k++ {
		pow *= d
		if k >= s.MinHops {
			reach += pow
		}
		if pow == 0 {
			break
		}
	}
	reach = math.Min(reach, reachCap)
	if s.ToBound {
		// A check: the share of the destinations' type that is reached.
		if to == 0 {
			return 0
		}
		return math.Min(1, reach/to)
	}
	return reach
}

func capCount(n float64, known int64) float64 {
	if known > 0 {
		return math.Min(n, float64(known))
	}
	return n
}
