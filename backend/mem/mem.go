// Package mem is the in-memory reference StorageAdapter. It has the real
// conditional semantics (one lock serialises every request), so it is the
// first implementation the conformance suite runs and the default store of
// unit tests. Contents vanish when the process exits.
package mem

import (
	"context"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
)

var _ backend.StorageAdapter = (*Store)(nil)

type object struct {
	data    []byte
	version uint64
	mod     time.Time
}

// Store is an in-memory StorageAdapter.
type Store struct {
	mu      sync.Mutex
	objects map[string]object
	// keys are the objects' keys, sorted: a List or a prefix walk costs
	// O(log n + page), as on an object store, not a scan of every key (a
	// history of thousands of commits would make every write's List cost
	// grow with depth).
	keys []string
	next uint64
}

// New returns an empty store.
func New() *Store { return &Store{objects: map[string]object{}} }

var (
	namedMu sync.Mutex
	named   = map[string]*Store{}
)

func init() {
	backend.Register("mem", func(ctx context.Context, u *url.URL) (backend.StorageAdapter, error) {
		if err := backend.CheckParams(u); err != nil {
			return nil, err
		}
		// mem://name/prefix: stores are shared by name within one process so
		// that two Opens of the same URL see the same data.
		name := u.Host
		namedMu.Lock()
		s, ok := named[name]
		if !ok {
			s = New()
			named[name] = s
		}
		namedMu.Unlock()
		prefix := strings.Trim(u.Path, "/")
		if prefix == "" {
			return s, nil
		}
		if err := backend.ValidatePrefix(prefix); err != nil {
			return nil, err
		}
		return backend.WithPrefix(s, prefix+"/"), nil
	})
}

func (s *Store) attrs(key string, o object) backend.Attrs {
	return backend.Attrs{Key: key, Size: int64(len(o.data)), Version: strconv.FormatUint(o.version, 10), ModTime: o.mod}
}

func (s *Store) put(key string, data []byte) backend.Attrs {
	s.next++
	o := object{data: append([]byte(nil), data...), version: s.next, mod: time.Now()}
	if _, ok := s.objects[key]; !ok {
		i, _ := slices.BinarySearch(s.keys, key)
		s.keys = slices.Insert(s.keys, i, key)
	}
	s.objects[key] = o
	return s.attrs(key, o)
}

// remove deletes one key (the caller holds mu).
func (s *Store) remove(key string) {
	if _, ok := s.objects[key]; !ok {
		return
	}
	delete(s.objects, key)
	if i, ok := slices.BinarySearch(s.keys, key); ok {
		s.keys = slices.Delete(s.keys, i, i+1)
	}
}

// from is the index of the first key at or after k (the caller holds mu).
func (s *Store) from(k string) int {
	i, _ := slices.BinarySearch(s.keys, k)
	return i
}

// Get implements backend.StorageAdapter.
func (s *Store) Get(ctx context.Context, key string) ([]byte, backend.Attrs, error) {
	if err := check(ctx, key); err != nil {
		return nil, backend.Attrs{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.objects[key]
	if !ok {
		return nil, backend.Attrs{}, backend.NewError("get", key, backend.KindNotFound, nil)
	}
	return append([]byte(nil), o.data...), s.attrs(key, o), nil
}

// GetRange implements backend.StorageAdapter.
func (s *Store) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	data, _, err := s.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	return backend.SliceRange(data, offset, length), nil
}

// Stat implements backend.StorageAdapter.
func (s *Store) Stat(ctx context.Context, key string) (backend.Attrs, error) {
	if err := check(ctx, key); err != nil {
		return backend.Attrs{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.objects[key]
	if !ok {
		return backend.Attrs{}, backend.NewError("stat", key, backend.KindNotFound, nil)
	}
	return s.attrs(key, o), nil
}

// Put implements backend.StorageAdapter.
func (s *Store) Put(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	if err := check(ctx, key); err != nil {
		return backend.Attrs{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.put(key, data), nil
}

// PutIfAbsent implements backend.StorageAdapter.
func (s *Store) PutIfAbsent(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	if err := check(ctx, key); err != nil {
		return backend.Attrs{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.objects[key]; ok {
		return backend.Attrs{}, backend.NewError("put-if-absent", key, backend.KindPrecondition, nil)
	}
	return s.put(key, data), nil
}

// PutIfMatch implements backend.StorageAdapter.
func (s *Store) PutIfMatch(ctx context.Context, key string, data []byte, version string) (backend.Attrs, error) {
	if err := check(ctx, key); err != nil {
		return backend.Attrs{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.objects[key]
	if !ok {
		return backend.Attrs{}, backend.MatchMissing("put-if-match", key)
	}
	if strconv.FormatUint(o.version, 10) != version {
		return backend.Attrs{}, backend.NewError("put-if-match", key, backend.KindPrecondition, nil)
	}
	return s.put(key, data), nil
}

// List implements backend.StorageAdapter.
func (s *Store) List(ctx context.Context, prefix string, opts backend.ListOptions) (backend.ListPage, error) {
	if err := ctx.Err(); err != nil {
		return backend.ListPage{}, backend.NewError("list", prefix, backend.KindTransient, err)
	}
	if err := backend.ValidatePrefix(prefix); err != nil {
		return backend.ListPage{}, err
	}
	max := opts.MaxKeys
	if max <= 0 {
		max = backend.DefaultPageSize
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.from(prefix)
	if opts.StartAfter >= prefix {
		i = s.from(opts.StartAfter)
		if i < len(s.keys) && s.keys[i] == opts.StartAfter {
			i++
		}
	}
	var page backend.ListPage
	for ; i < len(s.keys) && strings.HasPrefix(s.keys[i], prefix); i++ {
		if len(page.Objects) == max {
			page.Truncated = true
			break
		}
		k := s.keys[i]
		page.Objects = append(page.Objects, s.attrs(k, s.objects[k]))
	}
	return page, nil
}

// Exists implements backend.StorageAdapter.
func (s *Store) Exists(ctx context.Context, key string) (bool, error) {
	if err := check(ctx, key); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.objects[key]; ok {
		return true, nil
	}
	dir := key + "/"
	i := s.from(dir)
	return i < len(s.keys) && strings.HasPrefix(s.keys[i], dir), nil
}

// Delete implements backend.StorageAdapter.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := check(ctx, key); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.remove(key)
	return nil
}

// DeletePrefix implements backend.StorageAdapter.
func (s *Store) DeletePrefix(ctx context.Context, prefix string) error {
	if err := ctx.Err(); err != nil {
		return backend.NewError("delete-prefix", prefix, backend.KindTransient, err)
	}
	if err := backend.ValidatePrefix(prefix); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	lo := s.from(prefix)
	hi := lo
	for hi < len(s.keys) && strings.HasPrefix(s.keys[hi], prefix) {
		delete(s.objects, s.keys[hi])
		hi++
	}
	s.keys = slices.Delete(s.keys, lo, hi)
	return nil
}

// Capabilities implements backend.StorageAdapter.
func (s *Store) Capabilities() backend.Capabilities {
	return backend.Capabilities{ConditionalCreate: true, ConditionalUpdate: true, KeyAndChildCoexist: true, VersionPerWrite: true}
}

// Close implements backend.StorageAdapter.
func (s *Store) Close() error { return nil }

func check(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return backend.NewError("request", key, backend.KindTransient, err)
	}
	return backend.ValidateKey(key)
}
