package graph

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/omnigraph-go/omnigraph/backend"
)

// heldPuts is the store a write stages an existing table through: a plain
// Put of a new data file (a fragment, a deletion vector: fresh unique
// names, referenced by nothing until the table version that names them
// commits) is held in memory instead of sent, and flush sends them in the
// round trip of Commit that arms the recovery intent, so staging a
// one-row insert costs no round trip of its own. Reads of a held file are
// answered from memory. A conditional write (the table version's commit)
// flushes first, so a committed version can never name a file that is not
// stored, whoever commits the stage. At most heldBytes are held: a large
// write (a compaction, a bulk load) sends the rest as it stages, as before,
// so holding never keeps a big write's output in memory.
type heldPuts struct {
	backend.StorageAdapter
	mu    sync.Mutex
	held  map[string][]byte
	order []string
	size  int64 // bytes held
}

// heldBytes bounds the bytes a stage holds back (small writes are what a
// saved round trip is worth something to).
const heldBytes = 8 << 20

var errRangeOutside = errors.New("negative range offset")

func newHeldPuts(s backend.StorageAdapter) *heldPuts {
	return &heldPuts{StorageAdapter: s, held: map[string][]byte{}}
}

// holdable: the data files a stage writes under fresh names.
func holdable(key string) bool {
	return strings.Contains(key, "/data/") && strings.HasSuffix(key, ".parquet") || strings.Contains(key, "/_deletions/")
}

func (h *heldPuts) Put(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	if !holdable(key) {
		return h.StorageAdapter.Put(ctx, key, data)
	}
	h.mu.Lock()
	old, ok := h.held[key]
	if !ok && h.size+int64(len(data)) > heldBytes {
		h.mu.Unlock()
		return h.StorageAdapter.Put(ctx, key, data) // over the budget: now
	}
	if !ok {
		h.order = append(h.order, key)
	}
	h.held[key] = data
	h.size += int64(len(data)) - int64(len(old))
	h.mu.Unlock()
	return backend.Attrs{Key: key, Size: int64(len(data))}, nil
}

func (h *heldPuts) get(key string) ([]byte, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	b, ok := h.held[key]
	return b, ok
}

func (h *heldPuts) Get(ctx context.Context, key string) ([]byte, backend.Attrs, error) {
	if b, ok := h.get(key); ok {
		return append([]byte(nil), b...), backend.Attrs{Key: key, Size: int64(len(b))}, nil
	}
	return h.StorageAdapter.Get(ctx, key)
}

func (h *heldPuts) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if b, ok := h.get(key); ok {
		if off < 0 {
			return nil, backend.NewError("get_range", key, backend.KindPermanent, errRangeOutside)
		}
		off = min(off, int64(len(b))) // past the end: truncated, as the contract says
		end := int64(len(b))
		if n >= 0 && off+n < end {
			end = off + n
		}
		return append([]byte(nil), b[off:end]...), nil
	}
	return h.StorageAdapter.GetRange(ctx, key, off, n)
}

func (h *heldPuts) Stat(ctx context.Context, key string) (backend.Attrs, error) {
	if b, ok := h.get(key); ok {
		return backend.Attrs{Key: key, Size: int64(len(b))}, nil
	}
	return h.StorageAdapter.Stat(ctx, key)
}

func (h *heldPuts) Exists(ctx context.Context, key string) (bool, error) {
	if _, ok := h.get(key); ok {
		return true, nil
	}
	return h.StorageAdapter.Exists(ctx, key)
}

func (h *heldPuts) PutIfAbsent(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	if err := h.flush(ctx); err != nil {
		return backend.Attrs{}, err
	}
	return h.StorageAdapter.PutIfAbsent(ctx, key, data)
}

func (h *heldPuts) PutIfMatch(ctx context.Context, key string, data []byte, version string) (backend.Attrs, error) {
	if err := h.flush(ctx); err != nil {
		return backend.Attrs{}, err
	}
	return h.StorageAdapter.PutIfMatch(ctx, key, data, version)
}

// flush sends the held files, up to 16 at a time, and forgets them once
// stored; a failure keeps the ones not stored.
func (h *heldPuts) flush(ctx context.Context) error {
	h.mu.Lock()
	keys := h.order
	h.order = nil
	h.mu.Unlock()
	if len(keys) == 0 {
		return nil
	}
	errs := make([]error, len(keys))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i, k := range keys {
		b, _ := h.get(k)
		wg.Add(1)
		sem <- struct{}{}
		go func(i int, k string, b []byte) {
			defer wg.Done()
			defer func() { <-sem }()
			_, errs[i] = h.StorageAdapter.Put(ctx, k, b)
		}(i, k, b)
	}
	wg.Wait()
	h.mu.Lock()
	defer h.mu.Unlock()
	var first error
	for i, k := range keys {
		if errs[i] != nil {
			h.order = append(h.order, k)
			if first == nil {
				first = errs[i]
			}
			continue
		}
		h.size -= int64(len(h.held[k]))
		delete(h.held, k)
	}
	return first
}
