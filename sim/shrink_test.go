package sim

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var (
	dropFlag   = flag.String("drop", "", "sim: steps whose operation is drawn but not run, e.g. 3,5,10-20 (the shrinker's replays; not -skip, which go test takes)")
	shrinkFlag = flag.Int("shrink", 120, "sim: runs the shrinker may spend on each failing seed (0: no shrinking)")
)

// parseSteps reads "3,5,10-20" into a set of steps.
func parseSteps(v string) (map[int]bool, error) {
	out := map[int]bool{}
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(f, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("step %q: %w", f, err)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return nil, fmt.Errorf("step %q: %w", f, err)
			}
		}
		for i := a; i <= b; i++ {
			out[i] = true
		}
	}
	return out, nil
}

// formatSteps writes a set of steps as parseSteps reads it, with ranges.
func formatSteps(m map[int]bool) string {
	var ks []int
	for k, on := range m {
		if on {
			ks = append(ks, k)
		}
	}
	slices.Sort(ks)
	var parts []string
	for i := 0; i < len(ks); {
		j := i
		for j+1 < len(ks) && ks[j+1] == ks[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", ks[i], ks[j]))
		} else {
			parts = append(parts, strconv.Itoa(ks[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// shrink looks for a shorter failing history in the failing seed's family:
// the same seed, fewer operations run. It first cuts the run after the
// failing step, then drops chunks of steps (halves, quarters, ... single
// steps; a dropped step's operation is still drawn, so the seed's stream
// stays aligned as far as the model's state allows), keeping every variant
// that still fails, within budget runs. It returns the smallest failure
// found (f itself if none is smaller).
func shrink(f *failure, budget int) (*failure, int) {
	best := f
	runs := 0
	// try runs a variant and keeps it when it fails after fewer operations
	try := func(nops int, skip map[int]bool) {
		if runs >= budget {
			return
		}
		runs++
		var g *failure
		if err := runSkipping(f.seed, nops, skip, nil, nil); errors.As(err, &g) && executed(g) < executed(best) {
			best = g
		}
	}
	if best.step < best.ops {
		try(best.step, best.skip) // the run up to the failing step
	}
	for size := max(1, best.step/2); runs < budget; size /= 2 {
		for lo := 1; lo < best.step && runs < budget; lo += size {
			skip := maps.Clone(best.skip)
			if skip == nil {
				skip = map[int]bool{}
			}
			added := false
			for i := lo; i < lo+size && i < best.step; i++ {
				if !skip[i] {
					skip[i], added = true, true
				}
			}
			if added {
				try(best.step, skip)
			}
		}
		if size == 1 {
			break
		}
	}
	return best, runs
}

// executed is how many operations a failing run ran, the failing one
// included.
func executed(g *failure) int {
	n := 0
	for i := 1; i <= g.step; i++ {
		if !g.skip[i] {
			n++
		}
	}
	return n
}

// TestShrinkerFindsAShorterFailure plants a bug the oracle catches at once
// (drop a delete on merge) and requires the shrinker to find a failing
// replay that runs fewer operations than the original failure, and that
// the replay it prints fails again.
func TestShrinkerFindsAShorterFailure(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulation many times")
	}
	bug := plantedBugs[3] // drop a delete on merge
	defer bug.arm()()
	var f *failure
	for seed := uint64(1); seed <= 40 && f == nil; seed++ {
		if err := run(seed, *opsFlag, nil); err != nil {
			errors.As(err, &f)
		}
	}
	if f == nil {
		t.Fatal("no seed of the first 40 fails with the planted bug")
	}
	small, runs := shrink(f, 60)
	count := executed
	t.Logf("seed %d: %d operations run before the failure, shrunk to %d in %d runs: %s", f.seed, count(f), count(small), runs, small.replay())
	if count(small) >= count(f) {
		t.Fatalf("the shrinker found nothing shorter than %d operations", count(f))
	}
	if err := runSkipping(small.seed, small.ops, small.skip, nil, nil); err == nil {
		t.Fatalf("the shrunk replay passes: %s", small.replay())
	}
}
