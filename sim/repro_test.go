package sim

import (
	"testing"
)

// reproSeeds are the seeds TestSameSeedSameHistory runs twice.
var reproSeeds = []uint64{3, 7, 11, 29}

// TestSameSeedSameHistory runs each of a few seeds twice and requires the
// same history, line for line: the workload, the fault schedule, every
// concurrent batch's release order and every outcome (commit ids by their
// history names, cid).
func TestSameSeedSameHistory(t *testing.T) {
	for _, seed := range reproSeeds {
		var h [2][]string
		for i := range h {
			if err := runTraced(seed, *opsFlag, nil, func(l []string) { h[i] = l }); err != nil {
				t.Fatalf("seed %d run %d: %v", seed, i+1, err)
			}
		}
		if len(h[0]) == 0 {
			t.Fatalf("seed %d: no history", seed)
		}
		for i := range max(len(h[0]), len(h[1])) {
			var a, b string
			if i < len(h[0]) {
				a = h[0][i]
			}
			if i < len(h[1]) {
				b = h[1][i]
			}
			if a != b {
				t.Errorf("seed %d: the histories differ at line %d:\n  first:  %s\n  second: %s", seed, i+1, a, b)
				break
			}
		}
	}
}
