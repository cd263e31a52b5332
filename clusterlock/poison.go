package clusterlock

import (
	"errors"
	"sort"
	"sync"

	"github.com/omnigraph-go/omnigraph/backend"
)

// ErrPoisoned refuses a write to a reused key whose earlier write has an
// unknown outcome. Errors satisfying it also satisfy backend.ErrUnknown.
var ErrPoisoned = errors.New("an earlier write to this key has an unknown outcome; later writes to it are refused until a clean shutdown")

// Poison is the set of reused keys whose last write has an unknown outcome
// (errors.Is(err, backend.ErrUnknown)). Such a write may still land at any
// time, over whatever a later write put there, so a later write to the same
// key could be silently undone: Check refuses it. Other keys are not
// affected. A key leaves the set only when a read-back proves the write took
// effect (Settle) or at a clean shutdown (Reset).
//
// A Poison is safe for concurrent use. Share one per store for the life of
// the process; the zero value is ready to use.
type Poison struct {
	mu   sync.Mutex
	keys map[string]bool
}

// NewPoison returns an empty set.
func NewPoison() *Poison { return &Poison{} }

// Observe marks key when err is an unknown outcome and reports whether it
// did.
func (p *Poison) Observe(key string, err error) bool {
	if err == nil || !errors.Is(err, backend.ErrUnknown) {
		return false
	}
	p.Mark(key)
	return true
}

// Mark adds key to the set.
func (p *Poison) Mark(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.keys == nil {
		p.keys = map[string]bool{}
	}
	p.keys[key] = true
}

// Settle removes key: a read-back proved the uncertain write took effect, so
// it cannot land again.
func (p *Poison) Settle(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.keys, key)
}

// Poisoned reports whether key is in the set.
func (p *Poison) Poisoned(key string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.keys[key]
}

// Check returns a *PoisonedError for a key in the set, else nil.
func (p *Poison) Check(key string) error {
	if p.Poisoned(key) {
		return &PoisonedError{Key: key}
	}
	return nil
}

// Keys lists the set, sorted.
func (p *Poison) Keys() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.keys))
	for k := range p.keys {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Reset empties the set; call it only at a clean shutdown, when every
// request this process sent has been answered or abandoned with the process.
func (p *Poison) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keys = nil
}

// PoisonedError is the refusal of a poisoned key. Key is for the caller's
// own use and never appears in the message.
type PoisonedError struct{ Key string }

func (e *PoisonedError) Error() string { return ErrPoisoned.Error() }

// Is matches ErrPoisoned and backend.ErrUnknown: the key's state is unknown.
func (e *PoisonedError) Is(target error) bool {
	return target == ErrPoisoned || target == backend.ErrUnknown
}
