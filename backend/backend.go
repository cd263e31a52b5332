// Package backend holds the storage contract every OmniGraph store implements.
//
// The graph engine, the table layer and the recovery sweep touch storage only
// through StorageAdapter. Each method documents its rules as sentences that the
// conformance suite (package conformance) checks against every implementation.
package backend

import (
	"context"
	"time"
)

// Attrs describes one stored object.
type Attrs struct {
	// Key is the object's key relative to the adapter's root.
	Key string
	// Size is the object's length in bytes.
	Size int64
	// Version is an opaque token that changes when the object is rewritten
	// (S3 ETag verbatim, GCS generation, local inode+size+mtime). It is the
	// token PutIfMatch compares against.
	Version string
	// ModTime is the store's last-modified time, as precise as the store keeps it.
	ModTime time.Time
}

// ListOptions shapes one List request.
type ListOptions struct {
	// StartAfter: only keys strictly greater than this one are returned.
	StartAfter string
	// MaxKeys caps the page; zero or less means DefaultPageSize.
	MaxKeys int
}

// DefaultPageSize is the page size used when ListOptions.MaxKeys is not set.
// It matches the largest page S3 serves in one request.
const DefaultPageSize = 1000

// ListPage is one page of a listing.
type ListPage struct {
	// Objects in ascending byte-wise key order.
	Objects []Attrs
	// Truncated reports that more keys follow; pass the last key as
	// StartAfter to read the next page.
	Truncated bool
}

// Capabilities are declared by each adapter as data; callers never guess them
// from a scheme name.
type Capabilities struct {
	// ConditionalCreate: PutIfAbsent is an atomic create with exactly one winner.
	ConditionalCreate bool
	// ConditionalUpdate: PutIfMatch is an atomic compare-and-swap on Version.
	ConditionalUpdate bool
	// AtomicRename: the store can rename an object atomically (local only).
	AtomicRename bool
	// KeyAndChildCoexist: a key "k" and a key "k/child" may both exist.
	KeyAndChildCoexist bool
	// VersionPerWrite: every write yields a new Version, even of identical
	// bytes. S3 ETags are content hashes, so identical rewrites keep the token.
	VersionPerWrite bool
}

// StorageAdapter is the storage contract. Keys are slash-separated relative
// paths accepted by ValidateKey; an invalid key is refused with ErrPermanent
// before any request is made. Every method takes a context first and stops
// when it is cancelled.
type StorageAdapter interface {
	// Get returns the object's bytes and attributes. A missing key is an error
	// satisfying errors.Is(err, ErrNotFound).
	Get(ctx context.Context, key string) ([]byte, Attrs, error)

	// GetRange returns length bytes from offset (length < 0: to the end). A
	// range past the end is truncated to the object; on a zero-byte object it
	// returns an empty slice and no error. A missing key is ErrNotFound.
	GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error)

	// Stat returns the object's attributes. A missing key is ErrNotFound.
	Stat(ctx context.Context, key string) (Attrs, error)

	// Put writes the object, replacing any previous bytes atomically: a reader
	// sees the old bytes or the new ones, never a mix.
	Put(ctx context.Context, key string, data []byte) (Attrs, error)

	// PutIfAbsent creates the object only if the key does not exist, using the
	// store's own condition. Of N concurrent callers exactly one succeeds; the
	// others get ErrPrecondition and the content is the winner's. It is sent
	// once: a lost answer is ErrUnknown, never replayed.
	PutIfAbsent(ctx context.Context, key string, data []byte) (Attrs, error)

	// PutIfMatch replaces the object only if its Version equals version.
	// A changed version is ErrPrecondition, and so is a missing key
	// (backend.MatchMissing: its error also satisfies ErrNotFound, whatever
	// the store answers, AWS S3's 404 or others' 412).
	// Sent once, like PutIfAbsent. Adapters whose Capabilities lack
	// ConditionalUpdate return ErrPermanent.
	PutIfMatch(ctx context.Context, key string, data []byte, version string) (Attrs, error)

	// List returns one page of keys that start with prefix (a plain string
	// prefix, not a directory), in ascending byte order, after
	// opts.StartAfter. Local temp names (name#<digits>) are never listed.
	List(ctx context.Context, prefix string, opts ListOptions) (ListPage, error)

	// Exists reports whether key is an object, or a non-empty "directory"
	// key + "/". A sibling such as "graphical" does not make "graph" exist.
	// Absence is (false, nil), never an error.
	Exists(ctx context.Context, key string) (bool, error)

	// Delete removes the object. Deleting a missing key succeeds.
	Delete(ctx context.Context, key string) error

	// DeletePrefix removes every object whose key starts with prefix. It is
	// idempotent and tolerates objects deleted concurrently by others.
	DeletePrefix(ctx context.Context, prefix string) error

	// Capabilities returns what this adapter guarantees.
	Capabilities() Capabilities

	// Close releases the adapter's resources.
	Close() error
}

// ListAll pages through every key under prefix. It issues one List request per
// page, so callers on a hot path should prefer a single bounded List.
func ListAll(ctx context.Context, s StorageAdapter, prefix string) ([]Attrs, error) {
	var out []Attrs
	opts := ListOptions{}
	for {
		page, err := s.List(ctx, prefix, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Objects...)
		if !page.Truncated || len(page.Objects) == 0 {
			return out, nil
		}
		opts.StartAfter = page.Objects[len(page.Objects)-1].Key
	}
}
