// Package poison is a StorageAdapter wrapper for reused keys: a write whose
// outcome is unknown (errors.Is(err, backend.ErrUnknown)) to a key that is
// written more than once may still land at any time, over whatever a later
// write put there, silently undoing it. So once an overwrite (Put,
// PutIfMatch) or a Delete of a key has an unknown outcome, the wrapper
// refuses every later write to that key, before it is sent, until a clean
// shutdown (Close). Other keys and all reads are unaffected.
//
// A PutIfAbsent whose outcome is unknown does not poison its key: a create
// can only land on an absent key, and its owner settles it by re-issuing or
// reading back (the manifest re-issue rule). It is still refused on a key
// that is already poisoned.
//
// The design is clusterlock.Poison's (which guards the lock record); this
// package is the general wrapper the engine puts around a graph's store.
// Package backend cannot import clusterlock, so the set lives here.
package poison

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
)

// ErrPoisoned matches every refusal. Refusals also match backend.ErrUnknown:
// the key's state is unknown (the refused request itself was never sent).
var ErrPoisoned = errors.New("an earlier write to this key has an unknown outcome; later writes to it are refused until a clean shutdown")

// Error is the refusal of a write to a poisoned key. Key is for the
// caller's own use and never appears in the message.
type Error struct {
	Op  string
	Key string
}

func (e *Error) Error() string { return e.Op + ": " + ErrPoisoned.Error() }

// Is matches ErrPoisoned and backend.ErrUnknown.
func (e *Error) Is(target error) bool { return target == ErrPoisoned || target == backend.ErrUnknown }

// Store is the wrapper. It is safe for concurrent use.
type Store struct {
	inner backend.StorageAdapter

	mu   sync.Mutex
	keys map[string]bool
}

var _ backend.StorageAdapter = (*Store)(nil)

// Wrap returns s behind a poison set. Share one wrapper per store for the
// life of the process.
func Wrap(s backend.StorageAdapter) *Store { return &Store{inner: s} }

// Unwrap returns the wrapped adapter.
func (p *Store) Unwrap() backend.StorageAdapter { return p.inner }

// Poisoned reports whether writes to key are refused.
func (p *Store) Poisoned(key string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.keys[key]
}

// Keys lists the poisoned keys, sorted.
func (p *Store) Keys() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.keys))
	for k := range p.keys {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Settle lifts the refusal of key: the caller proved (by a read-back) that
// the uncertain write took effect, so it cannot land again.
func (p *Store) Settle(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.keys, key)
}

func (p *Store) mark(key string, err error) {
	if err == nil || !errors.Is(err, backend.ErrUnknown) || errors.Is(err, ErrPoisoned) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.keys == nil {
		p.keys = map[string]bool{}
	}
	p.keys[key] = true
}

func (p *Store) check(op, key string) error {
	if p.Poisoned(key) {
		return &Error{Op: op, Key: key}
	}
	return nil
}

// Put implements backend.StorageAdapter.
func (p *Store) Put(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	if err := p.check("put", key); err != nil {
		return backend.Attrs{}, err
	}
	a, err := p.inner.Put(ctx, key, data)
	p.mark(key, err)
	return a, err
}

// PutIfAbsent implements backend.StorageAdapter; it never poisons.
func (p *Store) PutIfAbsent(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	if err := p.check("put-if-absent", key); err != nil {
		return backend.Attrs{}, err
	}
	return p.inner.PutIfAbsent(ctx, key, data)
}

// PutIfMatch implements backend.StorageAdapter.
func (p *Store) PutIfMatch(ctx context.Context, key string, data []byte, version string) (backend.Attrs, error) {
	if err := p.check("put-if-match", key); err != nil {
		return backend.Attrs{}, err
	}
	a, err := p.inner.PutIfMatch(ctx, key, data, version)
	p.mark(key, err)
	return a, err
}

// Delete implements backend.StorageAdapter.
func (p *Store) Delete(ctx context.Context, key string) error {
	if err := p.check("delete", key); err != nil {
		return err
	}
	err := p.inner.Delete(ctx, key)
	p.mark(key, err)
	return err
}

// DeletePrefix implements backend.StorageAdapter. It is refused when a
// poisoned key lies under prefix (deleting it is a write to it); its own
// unknown outcome poisons nothing, because no single key is known to be
// affected.
func (p *Store) DeletePrefix(ctx context.Context, prefix string) error {
	if hit := p.poisonedUnder(prefix); hit != "" {
		return &Error{Op: "delete-prefix", Key: hit}
	}
	return p.inner.DeletePrefix(ctx, prefix)
}

// Get implements backend.StorageAdapter.
func (p *Store) Get(ctx context.Context, key string) ([]byte, backend.Attrs, error) {
	return p.inner.Get(ctx, key)
}

// GetRange implements backend.StorageAdapter.
func (p *Store) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	return p.inner.GetRange(ctx, key, offset, length)
}

// Stat implements backend.StorageAdapter.
func (p *Store) Stat(ctx context.Context, key string) (backend.Attrs, error) {
	return p.inner.Stat(ctx, key)
}

// List implements backend.StorageAdapter.
func (p *Store) List(ctx context.Context, prefix string, opts backend.ListOptions) (backend.ListPage, error) {
	return p.inner.List(ctx, prefix, opts)
}

// Exists implements backend.StorageAdapter.
func (p *Store) Exists(ctx context.Context, key string) (bool, error) {
	return p.inner.Exists(ctx, key)
}

var _ backend.TempSweeper = (*Store)(nil)

// SweepTemp implements backend.TempSweeper. A sweep deletes under prefix,
// so it is refused like DeletePrefix while a poisoned key lies under it (its
// uncertain write may be the very temp object the sweep would remove).
func (p *Store) SweepTemp(ctx context.Context, prefix string, olderThan time.Time, dryRun bool) (backend.TempSwept, bool, error) {
	if hit := p.poisonedUnder(prefix); hit != "" {
		return backend.TempSwept{}, true, &Error{Op: "sweep-temp", Key: hit}
	}
	return backend.SweepTempBelow(ctx, p.inner, prefix, olderThan, dryRun)
}

// poisonedUnder returns a poisoned key under prefix, or "".
func (p *Store) poisonedUnder(prefix string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range p.keys {
		if strings.HasPrefix(k, prefix) {
			return k
		}
	}
	return ""
}

// Capabilities implements backend.StorageAdapter.
func (p *Store) Capabilities() backend.Capabilities { return p.inner.Capabilities() }

// Close is the clean shutdown: it forgets the poisoned keys and closes the
// wrapped adapter. Call it only when every request this process sent has
// been answered or abandoned.
func (p *Store) Close() error {
	p.mu.Lock()
	p.keys = nil
	p.mu.Unlock()
	return p.inner.Close()
}
