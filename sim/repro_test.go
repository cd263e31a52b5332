package sim

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
)

// reproSeeds are the seeds TestSameSeedSameHistory runs twice.
var reproSeeds = []uint64{3, 7, 11, 29}

// TestSameSeedSameHistory runs each of a few seeds twice and requires the
// same history, line for line (the workload, the fault schedule, every
// concurrent batch's release order and every outcome, commit ids by their
// history names, cid), and the same stored objects: the same keys, their
// ULIDs masked. The bytes differ, and so do some sizes (ids and timestamps,
// RFC 3339 with as many fraction digits as the wall clock had:
// docs/dev/simulation.md).
func TestSameSeedSameHistory(t *testing.T) {
	for _, seed := range reproSeeds {
		var h [2][]string
		var objs [2][]string
		for i := range h {
			err := runSkipping(seed, *opsFlag, nil, nil, func(s *sim) {
				h[i] = s.history
				objs[i] = storedShape(t, s.raw)
			})
			if err != nil {
				t.Fatalf("seed %d run %d: %v", seed, i+1, err)
			}
		}
		if len(h[0]) == 0 || len(objs[0]) == 0 {
			t.Fatalf("seed %d: no history or no objects", seed)
		}
		if i, a, b := firstDiff(h[0], h[1]); i >= 0 {
			t.Errorf("seed %d: the histories differ at line %d:\n  first:  %s\n  second: %s", seed, i+1, a, b)
			continue
		}
		if i, a, b := firstDiff(objs[0], objs[1]); i >= 0 {
			t.Errorf("seed %d: the stored objects differ (%d and %d objects) at %d:\n  first:  %s\n  second: %s", seed, len(objs[0]), len(objs[1]), i+1, a, b)
		}
	}
}

// storedShape lists every stored object's key, ULIDs masked, sorted; the
// lease's heartbeat objects are left out (which of them are still there
// depends on when the heartbeat goroutine last ran against the end of the
// run: one heartbeat apart between runs of seed 29).
func storedShape(t *testing.T, s backend.StorageAdapter) []string {
	t.Helper()
	all, err := backend.ListAll(context.Background(), s, "")
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	var out []string
	for _, a := range all {
		if strings.HasPrefix(a.Key, "__cluster/lease/") {
			continue
		}
		out = append(out, ulidLike.ReplaceAllString(a.Key, "~"))
	}
	slices.Sort(out)
	return out
}

// firstDiff returns the first index where a and b differ (-1: none).
func firstDiff(a, b []string) (int, string, string) {
	for i := range max(len(a), len(b)) {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return i, x, y
		}
	}
	return -1, "", ""
}

// foundSeeds are fresh seeds that once failed, each with the operations it
// needed; TestFoundSeeds keeps them passing.
var foundSeeds = []struct {
	seed uint64
	ops  int
	what string
}{
	{774312538708, 200, "branch create of a taken name from a source deleted concurrently answered not found, not exists"},
}

// TestFoundSeeds replays the seeds the fresh draws found failing once.
func TestFoundSeeds(t *testing.T) {
	for _, f := range foundSeeds {
		if err := run(f.seed, f.ops, nil); err != nil {
			t.Errorf("seed %d (%s): %v", f.seed, f.what, err)
		}
	}
}
