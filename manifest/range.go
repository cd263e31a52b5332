package manifest

import (
	"context"
	"fmt"
	"slices"

	"github.com/omnigraph-go/omnigraph/backend"
)

// Range returns versions lo..hi (lo >= 1) of one incarnation, oldest
// first: one List of hi-lo+1 keys (more Lists past maxVersionPage) and
// concurrent GETs, so a reader that walks forward from a position pays
// for the versions it reads, whatever the depth below lo. A version
// cleanup pruned is its commit from the archive (Entry.Pruned set, no
// tables). A version missing from the incarnation, or a deletion marker
// within the range, is ErrNotFound-classified.
func (m *Store) Range(ctx context.Context, branch string, incarnation, lo, hi uint64) ([]*Entry, error) {
	if lo == 0 || hi < lo {
		return nil, fmt.Errorf("manifest range %d..%d: want 1 <= lo <= hi", lo, hi)
	}
	n := int(hi - lo + 1)
	out := make([]*Entry, 0, n)
	err := m.versions(ctx, branch, incarnation, hi, func() int { return n - len(out) }, func(e *Entry) (bool, error) {
		if e.Version < lo {
			return false, nil
		}
		out = append(out, e)
		return len(out) < n, nil
	})
	if err != nil {
		return nil, err
	}
	slices.Reverse(out)
	for i, e := range out {
		if e.Version != lo+uint64(i) {
			return nil, fmt.Errorf("version %d of branch %q (incarnation %d) is missing: %w", lo+uint64(i), branch, incarnation, backend.ErrNotFound)
		}
	}
	if len(out) != n {
		return nil, fmt.Errorf("version %d of branch %q (incarnation %d) is missing: %w", lo+uint64(len(out)), branch, incarnation, backend.ErrNotFound)
	}
	return out, nil
}
