package sim

import (
	"math/rand/v2"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/fault"
)

// planted is a deliberately planted bug: a storage wrapper that misbehaves,
// or an engine seam switched on for the run (arm returns the switch-off).
type planted struct {
	name   string
	wrap   func(backend.StorageAdapter) backend.StorageAdapter
	arm    func() (disarm func())
	faults func(r *rand.Rand, inj *fault.Injector) string
}
