package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/fault"
	"github.com/omnigraph-go/omnigraph/internal/plant"
)

// planted is a deliberately planted bug: a storage wrapper that misbehaves
// (wrap, below the fault injector), or an engine seam of internal/plant
// switched on while its seeds run (arm returns the switch-off). faults, when set,
// replaces the run's fault schedule.
type planted struct {
	name   string
	wrap   func(backend.StorageAdapter) backend.StorageAdapter
	arm    func() (disarm func())
	faults func(r *rand.Rand, inj *fault.Injector) string
}

func seam(b plant.Bug) func() func() { return func() func() { return plant.Set(b, true) } }

// plantedBugs are the bugs the meta-test plants, one at a time.
var plantedBugs = []*planted{
	{name: "publish twice after a lost answer", arm: seam(plant.PublishTwice)},
	{name: "skip the pre-arm check", arm: seam(plant.SkipPreArmCheck)},
	{name: "roll forward without confirmation", arm: seam(plant.RollForwardUnconfirmed)},
	{name: "drop a delete on merge", arm: seam(plant.MergeDropDelete)},
	{name: "a store that acknowledges a fragment write it drops", wrap: func(s backend.StorageAdapter) backend.StorageAdapter {
		return &dropper{StorageAdapter: s}
	}},
}

// dropper acknowledges every fifth data-fragment Put without storing it.
type dropper struct {
	backend.StorageAdapter
	n atomic.Int64
}

func (d *dropper) Put(ctx context.Context, key string, b []byte) (backend.Attrs, error) {
	if strings.Contains(key, "/data/") && d.n.Add(1)%5 == 0 {
		return backend.Attrs{Key: key, Size: int64(len(b)), Version: "dropped"}, nil
	}
	return d.StorageAdapter.Put(ctx, key, b)
}

// TestPlantedBugsAreCaught is the meta-test: with each planted bug some
// seed among the first 200 (of 200 operations) must fail. It reports the
// first failing seed of each.
func TestPlantedBugsAreCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulation once per planted bug")
	}
	for _, bug := range plantedBugs {
		t.Run(strings.ReplaceAll(bug.name, " ", "_"), func(t *testing.T) {
			seed, err := firstFailing(bug, 200, *opsFlag)
			if err == nil {
				t.Fatalf("planted bug %q: all 200 seeds passed; the oracle does not catch it", bug.name)
			}
			msg := err.Error()
			if i := strings.Index(msg, "\nhistory:"); i > 0 {
				msg = msg[:i]
			}
			t.Logf("caught by seed %d: %s", seed, msg)
		})
	}
}

// firstFailing runs seeds 1..n with bug planted and returns the smallest
// failing seed and its failure.
func firstFailing(bug *planted, n, ops int) (uint64, error) {
	if bug.arm != nil {
		// once for all the parallel runs: per run, interleaved restores
		// could leave the switch on for the next bug
		defer bug.arm()()
	}
	var (
		mu    sync.Mutex
		best  uint64
		first error
		next  atomic.Uint64
		wg    sync.WaitGroup
	)
	for range max(1, runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				seed := next.Add(1)
				mu.Lock()
				stop := seed > uint64(n) || (best != 0 && seed > best)
				mu.Unlock()
				if stop {
					return
				}
				if err := run(seed, ops, bug); err != nil {
					mu.Lock()
					if best == 0 || seed < best {
						best, first = seed, err
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if first == nil {
		return 0, nil
	}
	return best, fmt.Errorf("%w", first)
}
