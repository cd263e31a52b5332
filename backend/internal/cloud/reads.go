package cloud

import (
	"context"
	"io"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
)

// Statter is the part of an adapter the shared read helpers call back into.
type Statter interface {
	Stat(ctx context.Context, key string) (backend.Attrs, error)
}

// RangeFunc reads length bytes of key from offset (length < 0: to the end).
// It runs the store's request under the adapter's own retry layer.
type RangeFunc func(ctx context.Context, offset, length int64) ([]byte, error)

// GetRange is the store-independent part of StorageAdapter.GetRange: the key
// rule, negative offsets read from 0, a zero-length range and a range that
// starts at or past the end are an empty answer once the object is known to
// exist. pastEnd reports whether fetch's error is the store's "range not
// satisfiable" (nil when the store never says so).
func GetRange(ctx context.Context, s Statter, key string, offset, length int64, fetch RangeFunc, pastEnd func(error) bool) ([]byte, error) {
	if err := backend.ValidateKey(key); err != nil {
		return nil, err
	}
	if offset < 0 {
		offset = 0
	}
	if length == 0 {
		return emptyIfExists(ctx, s, key)
	}
	data, err := fetch(ctx, offset, length)
	if err != nil {
		if pastEnd != nil && pastEnd(err) {
			return emptyIfExists(ctx, s, key)
		}
		return nil, err
	}
	return NonNil(data), nil
}

func emptyIfExists(ctx context.Context, s Statter, key string) ([]byte, error) {
	if _, err := s.Stat(ctx, key); err != nil {
		return nil, err
	}
	return []byte{}, nil
}

// ReadAll reads and closes a response body.
func ReadAll(body io.ReadCloser) ([]byte, error) {
	defer body.Close()
	return io.ReadAll(body)
}

// maxPresized bounds the announced length ReadAllSized trusts for its one
// allocation.
const maxPresized = 256 << 20

// ReadAllSized is ReadAll for a body whose length the response announced
// (size; 0 or less: unknown): it reads into one buffer of that size instead
// of growing one by doubling, so a 4 MiB read holds 4 MiB, not up to three
// times that in garbage. A body shorter or longer than announced reads as
// it is, as with ReadAll.
func ReadAllSized(body io.ReadCloser, size int64) ([]byte, error) {
	defer body.Close()
	if size <= 0 || size > maxPresized {
		return io.ReadAll(body)
	}
	buf := make([]byte, size)
	n, err := io.ReadFull(body, buf)
	switch {
	case err == io.ErrUnexpectedEOF || err == io.EOF:
		return buf[:n], nil
	case err != nil:
		return nil, err
	}
	rest, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	return append(buf, rest...), nil
}

// NonNil answers an empty object as a non-nil empty slice, as the contract
// requires of Get and GetRange.
func NonNil(data []byte) []byte {
	if data == nil {
		return []byte{}
	}
	return data
}

// PageSize is the page size a List request asks for: MaxKeys, bounded by
// backend.DefaultPageSize.
func PageSize(opts backend.ListOptions) int {
	if opts.MaxKeys <= 0 || opts.MaxKeys > backend.DefaultPageSize {
		return backend.DefaultPageSize
	}
	return opts.MaxKeys
}

// IgnoreNotFound makes deleting a missing key a success, as the contract says.
func IgnoreNotFound(err error) error {
	if backend.IsNotFound(err) {
		return nil
	}
	return err
}

// Mode says how a request may be retried and how an ambiguous failure reads.
type Mode int

const (
	Read        Mode = iota // repeatable; every transient failure is retried
	Write                   // unconditional Put/Delete: retried only when the failure proves no effect; once for a reused key (backend.ReusedKey)
	Conditional             // PutIfAbsent/PutIfMatch: exactly one attempt
)

// Requester runs one adapter's requests under the retry rules of their Mode
// and turns the final error into a classified backend.Error.
type Requester struct {
	// Policy retries reads and writes whose failure proves no effect.
	Policy Policy
	// Timeout bounds the single attempt of a conditional request.
	Timeout time.Duration
	// Classify maps a store error to its kind and retry verdict.
	Classify func(err error, m Mode) (backend.Kind, Verdict)
	// Describe is the credential-free message of a store error.
	Describe func(err error) string
	// Status is the HTTP status a store error carries (0: none); the
	// classified error reports it through backend.StoreStatus.
	Status func(err error) int
	// CheckContext refuses a dead context before anything is sent, for
	// drivers that never look at it.
	CheckContext bool
}

// Do runs fn as the request op on key.
func (r Requester) Do(ctx context.Context, op, key string, m Mode, fn func(ctx context.Context) error) error {
	var err error
	switch {
	case r.CheckContext && ctx.Err() != nil:
		err = ctx.Err()
	case m == Conditional, m == Write && backend.IsReusedKey(ctx):
		// Conditionals and writes to reused keys make one attempt; their
		// owner resolves an ambiguous answer.
		err = Once(ctx, r.Timeout, fn)
	default:
		err = r.Policy.Do(ctx, fn, func(err error) Verdict {
			_, v := r.Classify(err, m)
			return v
		})
	}
	if err == nil {
		return nil
	}
	kind, _ := r.Classify(err, m)
	status := 0
	if r.Status != nil {
		status = r.Status(err)
	}
	return backend.NewError(op, key, kind, &Cause{Msg: r.Describe(err), Err: err, Status: status})
}
