// Package gocloud adapts any gocloud.dev *blob.Bucket to StorageAdapter. It
// shows backend authors the plugin model: wrap a client, declare what it can
// and cannot do in Capabilities, classify its errors, and prove it with the
// conformance suite.
//
// URLs:
//   - gocloud+mem://name: an in-memory memblob bucket, shared by name within
//     the process (a new name is a new, empty bucket);
//   - gocloud+s3://bucket/prefix: s3blob over the same client and
//     environment contract as package s3 (AWS_ENDPOINT_URL_S3, ...), with
//     the optional key_child_coexist=true parameter.
//
// What the bridge lacks: gocloud.dev has conditional create
// (WriterOptions.IfNotExist) but no compare-and-swap, so
// Capabilities.ConditionalUpdate is false and PutIfMatch returns
// ErrPermanent without sending anything. It also returns no version from a
// write, so Put and PutIfAbsent read the attributes back (one extra request);
// under concurrent overwrites of one key the version Put reports may be a
// later writer's.
package gocloud

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"gocloud.dev/blob"
	"gocloud.dev/blob/memblob"
	"gocloud.dev/blob/s3blob"
	"gocloud.dev/gcerrors"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/internal/cloud"
	"github.com/omnigraph-go/omnigraph/backend/s3"
)

var (
	memMu   sync.Mutex
	memByID = map[string]*blob.Bucket{}
)

func init() {
	backend.Register("gocloud+mem", func(ctx context.Context, u *url.URL) (backend.StorageAdapter, error) {
		if err := backend.CheckParams(u); err != nil {
			return nil, err
		}
		if err := cloud.CheckEnv(); err != nil {
			return nil, err
		}
		prefix := strings.Trim(u.Path, "/")
		if prefix != "" {
			if err := backend.ValidatePrefix(prefix); err != nil {
				return nil, err
			}
			prefix += "/"
		}
		memMu.Lock()
		b, ok := memByID[u.Host]
		if !ok {
			b = memblob.OpenBucket(nil)
			memByID[u.Host] = b
		}
		memMu.Unlock()
		// The shared bucket outlives any one adapter: Close must not close it.
		return backend.WithPrefix(New(b, Options{KeyAndChildCoexist: true, KeepOpen: true}), prefix), nil
	})
	backend.Register("gocloud+s3", func(ctx context.Context, u *url.URL) (backend.StorageAdapter, error) {
		const paramCoexist = "key_child_coexist"
		if err := backend.CheckParams(u, paramCoexist); err != nil {
			return nil, err
		}
		bucket, prefix, err := backend.SplitBucketPrefix(u)
		if err != nil {
			return nil, err
		}
		cfg, err := s3.ConfigFromEnv(bucket)
		if err != nil {
			return nil, err
		}
		st, err := s3.New(ctx, cfg)
		if err != nil {
			return nil, err
		}
		b, err := s3blob.OpenBucket(ctx, st.Client(), bucket, nil)
		if err != nil {
			return nil, backend.NewError("open", "", backend.KindConfiguration, &cloud.Cause{Msg: "gocloud s3blob: cannot open the bucket", Err: err})
		}
		return backend.WithPrefix(New(b, Options{
			KeyAndChildCoexist: cloud.Truthy(u.Query().Get(paramCoexist)),
			StartAfter:         s3StartAfter,
		}), prefix), nil
	})
}

// s3StartAfter passes StartAfter to s3blob's ListObjectsV2 request, so a
// listing page costs one request instead of a scan from the prefix start.
func s3StartAfter(key string) func(as func(any) bool) error {
	return func(as func(any) bool) error {
		var in *awss3.ListObjectsV2Input
		if as(&in) && in.ContinuationToken == nil {
			in.StartAfter = &key
		}
		return nil
	}
}

// Options describe the wrapped bucket.
type Options struct {
	// KeyAndChildCoexist: the bucket can hold "k" and "k/child" together.
	KeyAndChildCoexist bool
	// KeepOpen: Close leaves the bucket open (it is shared).
	KeepOpen bool
	// StartAfter, if set, returns a ListOptions.BeforeList hook that makes
	// the driver start listing after key. Without it List scans from the
	// prefix start and skips.
	StartAfter func(key string) func(as func(any) bool) error
	// RequestTimeout bounds each request; zero means 60 s.
	RequestTimeout time.Duration
}

var _ backend.StorageAdapter = (*Store)(nil)

// Store adapts a *blob.Bucket.
type Store struct {
	b    *blob.Bucket
	opts Options
	req  cloud.Requester
}

// New wraps b. The driver's own retries, if any, must be off (the s3
// scheme builds its client with them off).
func New(b *blob.Bucket, opts Options) *Store {
	return &Store{b: b, opts: opts, req: cloud.Requester{Policy: cloud.DefaultPolicy(opts.RequestTimeout), Timeout: opts.RequestTimeout, Classify: classify, Describe: describe, Status: httpStatus, CheckContext: true}}
}

// mode says how a request may be retried (see cloud.Mode).
type mode = cloud.Mode

const (
	read        = cloud.Read
	write       = cloud.Write
	conditional = cloud.Conditional
)

func (s *Store) do(ctx context.Context, op, key string, m mode, fn func(ctx context.Context) error) error {
	return s.req.Do(ctx, op, key, m, fn)
}

// describe names a driver error by its portable code and HTTP status only.
func describe(err error) string {
	msg := "gocloud: " + gcerrors.Code(err).String()
	if st := httpStatus(err); st != 0 {
		msg += fmt.Sprintf(" (HTTP %d)", st)
	}
	return msg
}

// classify maps gocloud's portable error codes to kinds.
func classify(err error, m mode) (backend.Kind, cloud.Verdict) {
	if bucketMissing[apiCode(err)] {
		// gocloud calls a missing bucket NotFound, which would read as a
		// missing key (an empty store); it is a wrong URL.
		return backend.KindConfiguration, cloud.Stop
	}
	switch gcerrors.Code(err) {
	case gcerrors.NotFound:
		return backend.KindNotFound, cloud.Stop
	case gcerrors.FailedPrecondition:
		return backend.KindPrecondition, cloud.Stop
	case gcerrors.PermissionDenied:
		return backend.KindConfiguration, cloud.Stop
	case gcerrors.InvalidArgument, gcerrors.Unimplemented:
		return backend.KindPermanent, cloud.Stop
	case gcerrors.ResourceExhausted:
		if m == conditional {
			return backend.KindUnknown, cloud.Stop
		}
		return backend.KindTransient, cloud.RetryThrottle
	case gcerrors.Canceled, gcerrors.DeadlineExceeded:
		if m == read {
			return backend.KindTransient, cloud.RetryClient
		}
		return backend.KindUnknown, cloud.Stop
	}
	// Unknown to gocloud: the driver's own error may still carry a status.
	switch st := httpStatus(err); {
	case st == http.StatusTooManyRequests || st == http.StatusServiceUnavailable:
		if m == read {
			return backend.KindTransient, cloud.RetryThrottle
		}
		return backend.KindUnknown, cloud.Stop
	case st == http.StatusRequestTimeout || st >= 500:
		if m == read {
			return backend.KindTransient, cloud.RetryClient
		}
		return backend.KindUnknown, cloud.Stop
	case st == http.StatusUnauthorized || st == http.StatusForbidden:
		return backend.KindConfiguration, cloud.Stop
	case st == http.StatusConflict && apiCode(err) == "ConditionalRequestConflict":
		// S3: another conditional write on the key was in flight; the
		// answer does not say who won.
		return backend.KindUnknown, cloud.Stop
	case st >= 400:
		// e.g. 409 from a file-backed S3 store refusing "k" beside "k/x".
		return backend.KindPermanent, cloud.Stop
	}
	kind := cloud.TransportKind(err, m != read)
	switch {
	case cloud.NotSent(err) && m != conditional:
		return kind, cloud.RetryClient
	case kind == backend.KindTransient && m == read:
		return kind, cloud.RetryClient
	}
	return kind, cloud.Stop
}

// bucketMissing are the drivers' error codes for a bucket or container
// that does not exist (S3, Azure).
var bucketMissing = map[string]bool{"NoSuchBucket": true, "ContainerNotFound": true}

// apiCode is the store's error code in the driver's error chain (S3's
// "ConditionalRequestConflict"), or "".
func apiCode(err error) string {
	var withCode interface{ ErrorCode() string }
	if errors.As(err, &withCode) {
		return withCode.ErrorCode()
	}
	return ""
}

// httpStatus finds an HTTP status in the driver's error chain (the AWS,
// Google and Azure SDK errors all expose one), or 0.
func httpStatus(err error) int {
	var withStatus interface{ HTTPStatusCode() int }
	if errors.As(err, &withStatus) {
		return withStatus.HTTPStatusCode()
	}
	return 0
}

func attrsOf(key string, a *blob.Attributes) backend.Attrs {
	return backend.Attrs{Key: key, Size: a.Size, Version: a.ETag, ModTime: a.ModTime}
}

// Get implements backend.StorageAdapter.
func (s *Store) Get(ctx context.Context, key string) ([]byte, backend.Attrs, error) {
	if err := backend.ValidateKey(key); err != nil {
		return nil, backend.Attrs{}, err
	}
	var data []byte
	var a backend.Attrs
	err := s.do(ctx, "get", key, read, func(ctx context.Context) error {
		r, err := s.b.NewReader(ctx, key, nil)
		if err != nil {
			return err
		}
		data, err = cloud.ReadAll(r)
		if err != nil {
			return err
		}
		a = backend.Attrs{Key: key, Size: int64(len(data)), ModTime: r.ModTime()}
		// The reader carries no ETag; one attributes read supplies it.
		attrs, err := s.b.Attributes(ctx, key)
		if err != nil {
			return err
		}
		a.Version = attrs.ETag
		return nil
	})
	if err != nil {
		return nil, backend.Attrs{}, err
	}
	return cloud.NonNil(data), a, nil
}

// GetRange implements backend.StorageAdapter.
func (s *Store) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	fetch := func(ctx context.Context, offset, length int64) (data []byte, err error) {
		err = s.do(ctx, "get_range", key, read, func(ctx context.Context) error {
			// Bound the range by the object's size: drivers disagree about
			// ranges that start at or past the end.
			attrs, err := s.b.Attributes(ctx, key)
			if err != nil {
				return err
			}
			if offset >= attrs.Size {
				data = []byte{}
				return nil
			}
			n := length
			if n < 0 || offset+n > attrs.Size {
				n = attrs.Size - offset
			}
			r, err := s.b.NewRangeReader(ctx, key, offset, n, nil)
			if err != nil {
				return err
			}
			data, err = cloud.ReadAll(r)
			return err
		})
		return data, err
	}
	return cloud.GetRange(ctx, s, key, offset, length, fetch, nil)
}

// Stat implements backend.StorageAdapter.
func (s *Store) Stat(ctx context.Context, key string) (backend.Attrs, error) {
	if err := backend.ValidateKey(key); err != nil {
		return backend.Attrs{}, err
	}
	var a backend.Attrs
	err := s.do(ctx, "stat", key, read, func(ctx context.Context) error {
		attrs, err := s.b.Attributes(ctx, key)
		if err != nil {
			return err
		}
		a = attrsOf(key, attrs)
		return nil
	})
	return a, err
}

func (s *Store) write(ctx context.Context, op, key string, data []byte, m mode, opts *blob.WriterOptions) (backend.Attrs, error) {
	if err := backend.ValidateKey(key); err != nil {
		return backend.Attrs{}, err
	}
	err := s.do(ctx, op, key, m, func(ctx context.Context) error {
		w, err := s.b.NewWriter(ctx, key, opts)
		if err != nil {
			return err
		}
		if _, err := io.Copy(w, bytes.NewReader(data)); err != nil {
			_ = w.Close()
			return err
		}
		return w.Close()
	})
	if err != nil {
		return backend.Attrs{}, err
	}
	a, err := s.Stat(ctx, key)
	if err != nil {
		// The write landed; only its version is unknown.
		return backend.Attrs{}, backend.NewError(op, key, backend.KindUnknown, fmt.Errorf("written, but reading its version back failed: %w", err))
	}
	return a, nil
}

// Put implements backend.StorageAdapter.
func (s *Store) Put(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	return s.write(ctx, "put", key, data, write, &blob.WriterOptions{ContentType: "application/octet-stream"})
}

// PutIfAbsent implements backend.StorageAdapter with WriterOptions.IfNotExist.
func (s *Store) PutIfAbsent(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	// Above 16 MiB, s3blob's transfer manager sends the condition on
	// CompleteMultipartUpload, which some S3-compatible servers do not
	// check: the bridge relies on the store's verdict (storage check and
	// init run LargeConditionalCreate) where the native s3 adapter never
	// sends a condition on a multipart upload.
	return s.write(ctx, "put_if_absent", key, data, conditional, &blob.WriterOptions{ContentType: "application/octet-stream", IfNotExist: true})
}

// ErrNoCompareAndSwap is the cause PutIfMatch reports: gocloud.dev has no
// portable compare-and-swap.
var ErrNoCompareAndSwap = errors.New("the gocloud.dev bridge has no compare-and-swap (Capabilities.ConditionalUpdate is false); use the native s3, gs or az backend")

// PutIfMatch implements backend.StorageAdapter: always ErrPermanent.
func (s *Store) PutIfMatch(ctx context.Context, key string, data []byte, version string) (backend.Attrs, error) {
	if err := backend.ValidateKey(key); err != nil {
		return backend.Attrs{}, err
	}
	return backend.Attrs{}, backend.NewError("put_if_match", key, backend.KindPermanent, ErrNoCompareAndSwap)
}

// List implements backend.StorageAdapter.
func (s *Store) List(ctx context.Context, prefix string, opts backend.ListOptions) (backend.ListPage, error) {
	if err := backend.ValidatePrefix(prefix); err != nil {
		return backend.ListPage{}, err
	}
	max := cloud.PageSize(opts)
	lo := &blob.ListOptions{Prefix: prefix}
	if opts.StartAfter != "" && s.opts.StartAfter != nil {
		lo.BeforeList = s.opts.StartAfter(opts.StartAfter)
	}
	var page backend.ListPage
	token := blob.FirstPageToken
	for {
		var objs []*blob.ListObject
		var next []byte
		err := s.do(ctx, "list", prefix, read, func(ctx context.Context) error {
			var err error
			objs, next, err = s.b.ListPage(ctx, token, max, lo)
			return err
		})
		if err != nil {
			return backend.ListPage{}, err
		}
		for _, o := range objs {
			if o.IsDir || (opts.StartAfter != "" && o.Key <= opts.StartAfter) {
				continue
			}
			if len(page.Objects) == max {
				page.Truncated = true
				return page, nil
			}
			// Listings carry no ETag: Version stays empty (Stat has it).
			page.Objects = append(page.Objects, backend.Attrs{Key: o.Key, Size: o.Size, ModTime: o.ModTime})
		}
		if len(next) == 0 {
			return page, nil
		}
		if len(page.Objects) == max {
			page.Truncated = true
			return page, nil
		}
		token = next
	}
}

// Exists implements backend.StorageAdapter.
func (s *Store) Exists(ctx context.Context, key string) (bool, error) {
	if err := backend.ValidateKey(key); err != nil {
		return false, err
	}
	return cloud.Exists(ctx, s, key)
}

// Delete implements backend.StorageAdapter.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := backend.ValidateKey(key); err != nil {
		return err
	}
	err := s.do(ctx, "delete", key, write, func(ctx context.Context) error {
		return s.b.Delete(ctx, key)
	})
	return cloud.IgnoreNotFound(err)
}

// DeletePrefix implements backend.StorageAdapter.
func (s *Store) DeletePrefix(ctx context.Context, prefix string) error {
	if err := backend.ValidatePrefix(prefix); err != nil {
		return err
	}
	return cloud.DeletePrefix(ctx, s, prefix)
}

// Capabilities implements backend.StorageAdapter.
func (s *Store) Capabilities() backend.Capabilities {
	return backend.Capabilities{
		ConditionalCreate:  true,
		ConditionalUpdate:  false,
		KeyAndChildCoexist: s.opts.KeyAndChildCoexist,
	}
}

// Close implements backend.StorageAdapter.
func (s *Store) Close() error {
	if s.opts.KeepOpen {
		return nil
	}
	return s.b.Close()
}
