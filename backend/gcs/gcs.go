// Package gcs is the StorageAdapter for Google Cloud Storage, on
// cloud.google.com/go/storage. URLs: gs://bucket/prefix.
//
// Environment contract (read at Open):
//   - credentials: Application Default Credentials
//     (GOOGLE_APPLICATION_CREDENTIALS, gcloud's user credentials, the
//     metadata server);
//   - STORAGE_EMULATOR_HOST (host:port or a URL) points the client at an
//     emulator such as fake-gcs-server, without authentication;
//   - OBJECT_STORE_CLIENT_MAX_RETRIES, if set, must be 0.
//
// Conditional writes: PutIfAbsent sends ifGenerationMatch=0; the version
// token is the object generation in decimal, and PutIfMatch sends
// ifGenerationMatch=<generation>. 412 is Precondition. The client's own
// retries are off (RetryNever): the adapter is the only retry layer.
package gcs

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/internal/cloud"
)

// Config is everything New needs.
type Config struct {
	Bucket string
	// Endpoint overrides the JSON API endpoint (e.g. a test proxy), as
	// "http://host:port/storage/v1/". Empty: Google, or STORAGE_EMULATOR_HOST.
	Endpoint string
	// HTTPClient replaces the client's transport (no authentication is added).
	HTTPClient *http.Client
	// RequestTimeout bounds each request; zero means 60 s.
	RequestTimeout time.Duration
}

func init() {
	backend.Register("gs", func(ctx context.Context, u *url.URL) (backend.StorageAdapter, error) {
		if err := backend.CheckParams(u); err != nil {
			return nil, err
		}
		bucket, prefix, err := backend.SplitBucketPrefix(u)
		if err != nil {
			return nil, err
		}
		s, err := New(ctx, Config{Bucket: bucket})
		if err != nil {
			return nil, err
		}
		return backend.WithPrefix(s, prefix), nil
	})
}

var _ backend.StorageAdapter = (*Store)(nil)

// Store is a GCS bucket as a StorageAdapter.
type Store struct {
	client *storage.Client
	bucket *storage.BucketHandle
	cfg    Config
	req    cloud.Requester
}

// New builds a Store; it makes no request.
func New(ctx context.Context, cfg Config) (*Store, error) {
	if err := cloud.CheckEnv(); err != nil {
		return nil, err
	}
	if cfg.Bucket == "" {
		return nil, backend.NewError("open", "", backend.KindConfiguration, errors.New("gcs: bucket name is empty"))
	}
	var opts []option.ClientOption
	if cfg.Endpoint != "" {
		opts = append(opts, option.WithEndpoint(cfg.Endpoint), option.WithoutAuthentication())
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	client, err := storage.NewClient(ctx, opts...)
	if err != nil {
		return nil, backend.NewError("open", "", backend.KindConfiguration, &cloud.Cause{Msg: "gcs: creating the client failed (check GOOGLE_APPLICATION_CREDENTIALS or STORAGE_EMULATOR_HOST)", Err: err})
	}
	// The adapter is the only retry layer.
	client.SetRetry(storage.WithPolicy(storage.RetryNever))
	return &Store{client: client, bucket: client.Bucket(cfg.Bucket), cfg: cfg, req: cloud.Requester{Policy: cloud.DefaultPolicy(cfg.RequestTimeout), Timeout: cfg.RequestTimeout, Classify: classify, Describe: describe, Status: storeStatus}}, nil
}

// Client exposes the SDK client (tests use it to create buckets).
func (s *Store) Client() *storage.Client { return s.client }

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

func status(err error) int {
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		return ge.Code
	}
	return 0
}

// storeStatus is the HTTP status GCS answered with, or 0. The client turns
// some 404 answers into sentinels (a missing bucket or object) that carry
// no code; they were 404s.
func storeStatus(err error) int {
	if errors.Is(err, storage.ErrBucketNotExist) || errors.Is(err, storage.ErrObjectNotExist) {
		return http.StatusNotFound
	}
	return status(err)
}

// classify maps a GCS failure to a kind and a retry verdict from the typed
// errors the client returns (googleapi.Error codes and its sentinels).
func classify(err error, m mode) (backend.Kind, cloud.Verdict) {
	code := status(err)
	switch {
	case errors.Is(err, storage.ErrBucketNotExist):
		return backend.KindConfiguration, cloud.Stop
	case errors.Is(err, storage.ErrObjectNotExist):
		return backend.KindNotFound, cloud.Stop
	case code == 0:
		kind := cloud.TransportKind(err, m != read)
		switch {
		case cloud.NotSent(err) && m != conditional:
			return kind, cloud.RetryClient
		case kind == backend.KindTransient && m == read:
			return kind, cloud.RetryClient
		}
		return kind, cloud.Stop
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return backend.KindConfiguration, cloud.Stop
	case code == http.StatusNotFound:
		if m == conditional {
			// GCS answers 412, not 404, for a missing object under a
			// generation condition: a 404 here means the bucket is missing.
			return backend.KindConfiguration, cloud.Stop
		}
		return backend.KindNotFound, cloud.Stop
	case code == http.StatusPreconditionFailed || code == http.StatusNotModified:
		return backend.KindPrecondition, cloud.Stop
	case code == http.StatusTooManyRequests:
		if m == conditional {
			return backend.KindUnknown, cloud.Stop
		}
		return backend.KindTransient, cloud.RetryThrottle
	case code == http.StatusServiceUnavailable && m == read:
		return backend.KindTransient, cloud.RetryThrottle
	case code == http.StatusRequestTimeout || code >= 500:
		if m == read {
			return backend.KindTransient, cloud.RetryClient
		}
		return backend.KindUnknown, cloud.Stop
	case code >= 400:
		return backend.KindPermanent, cloud.Stop
	}
	return backend.KindUnknown, cloud.Stop
}

func describe(err error) string {
	switch {
	case errors.Is(err, storage.ErrBucketNotExist):
		return "gcs: bucket does not exist"
	case errors.Is(err, storage.ErrObjectNotExist):
		return "gcs: object does not exist"
	}
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		msg := fmt.Sprintf("gcs HTTP %d", ge.Code)
		if len(ge.Errors) > 0 && ge.Errors[0].Reason != "" {
			msg += " " + ge.Errors[0].Reason
		}
		if ge.Message != "" {
			msg += ": " + ge.Message
		}
		return msg
	}
	return cloud.TransportMsg(err)
}

func version(gen int64) string { return strconv.FormatInt(gen, 10) }

// Get implements backend.StorageAdapter.
func (s *Store) Get(ctx context.Context, key string) ([]byte, backend.Attrs, error) {
	if err := backend.ValidateKey(key); err != nil {
		return nil, backend.Attrs{}, err
	}
	var data []byte
	var a backend.Attrs
	err := s.do(ctx, "get", key, read, func(ctx context.Context) error {
		r, err := s.bucket.Object(key).NewReader(ctx)
		if err != nil {
			return err
		}
		data, err = cloud.ReadAllSized(r, r.Remain())
		if err != nil {
			return err
		}
		a = backend.Attrs{Key: key, Size: int64(len(data)), Version: version(r.Attrs.Generation), ModTime: r.Attrs.LastModified}
		return nil
	})
	if err != nil {
		return nil, backend.Attrs{}, err
	}
	return data, a, nil
}

// GetRange implements backend.StorageAdapter.
func (s *Store) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	fetch := func(ctx context.Context, offset, length int64) (data []byte, err error) {
		err = s.do(ctx, "get_range", key, read, func(ctx context.Context) error {
			r, err := s.bucket.Object(key).NewRangeReader(ctx, offset, length)
			if err != nil {
				return err
			}
			data, err = cloud.ReadAllSized(r, r.Remain())
			return err
		})
		return data, err
	}
	return cloud.GetRange(ctx, s, key, offset, length, fetch, func(err error) bool {
		return status(err) == http.StatusRequestedRangeNotSatisfiable
	})
}

// Stat implements backend.StorageAdapter.
func (s *Store) Stat(ctx context.Context, key string) (backend.Attrs, error) {
	if err := backend.ValidateKey(key); err != nil {
		return backend.Attrs{}, err
	}
	var a backend.Attrs
	err := s.do(ctx, "stat", key, read, func(ctx context.Context) error {
		oa, err := s.bucket.Object(key).Attrs(ctx)
		if err != nil {
			return err
		}
		a = backend.Attrs{Key: key, Size: oa.Size, Version: version(oa.Generation), ModTime: oa.Updated}
		return nil
	})
	return a, err
}

// castagnoli is the CRC32C table (read only).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func (s *Store) write(ctx context.Context, op, key string, data []byte, m mode, cond *storage.Conditions) (backend.Attrs, error) {
	var a backend.Attrs
	err := s.do(ctx, op, key, m, func(ctx context.Context) error {
		obj := s.bucket.Object(key)
		if cond != nil {
			obj = obj.If(*cond)
		}
		w := obj.NewWriter(ctx)
		// One request carries the whole object and its precondition; there
		// is no resumable session whose chunks could be retried underneath.
		w.ChunkSize = 0
		// The object's CRC32C travels with it: the store refuses a body
		// that did not arrive whole (a write cancelled mid-body must leave
		// nothing, never the bytes that got through).
		w.CRC32C = crc32.Checksum(data, castagnoli)
		w.SendCRC32C = true
		if _, err := w.Write(data); err != nil {
			_ = w.Close()
			return err
		}
		if err := w.Close(); err != nil {
			return err
		}
		oa := w.Attrs()
		a = backend.Attrs{Key: key, Size: oa.Size, Version: version(oa.Generation), ModTime: oa.Updated}
		return nil
	})
	if backend.IsNotFound(err) {
		// A write has no object to miss: the bucket is missing.
		return backend.Attrs{}, backend.NewError(op, key, backend.KindConfiguration, fmt.Errorf("the gcs bucket does not exist: %w", errors.Unwrap(err)))
	}
	return a, err
}

// Put implements backend.StorageAdapter.
func (s *Store) Put(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	if err := backend.ValidateKey(key); err != nil {
		return backend.Attrs{}, err
	}
	return s.write(ctx, "put", key, data, write, nil)
}

// PutIfAbsent implements backend.StorageAdapter with ifGenerationMatch=0.
func (s *Store) PutIfAbsent(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	if err := backend.ValidateKey(key); err != nil {
		return backend.Attrs{}, err
	}
	return s.write(ctx, "put_if_absent", key, data, conditional, &storage.Conditions{DoesNotExist: true})
}

// PutIfMatch implements backend.StorageAdapter with
// ifGenerationMatch=<version>. GCS answers 412 for a missing object too, so
// a 412 is followed by one Stat to tell NotFound from a lost race.
func (s *Store) PutIfMatch(ctx context.Context, key string, data []byte, ver string) (backend.Attrs, error) {
	if err := backend.ValidateKey(key); err != nil {
		return backend.Attrs{}, err
	}
	gen, perr := strconv.ParseInt(ver, 10, 64)
	var (
		a   backend.Attrs
		err error
	)
	if perr != nil || gen <= 0 {
		// Not a generation: it cannot match, so nothing is sent.
		err = backend.NewError("put_if_match", key, backend.KindPrecondition, fmt.Errorf("version %q is not a GCS generation", ver))
	} else {
		a, err = s.write(ctx, "put_if_match", key, data, conditional, &storage.Conditions{GenerationMatch: gen})
	}
	if backend.IsPrecondition(err) {
		if _, serr := s.Stat(ctx, key); backend.IsNotFound(serr) {
			return backend.Attrs{}, backend.MatchMissing("put_if_match", key)
		}
	}
	return a, err
}

// List implements backend.StorageAdapter with one request per page.
func (s *Store) List(ctx context.Context, prefix string, opts backend.ListOptions) (backend.ListPage, error) {
	if err := backend.ValidatePrefix(prefix); err != nil {
		return backend.ListPage{}, err
	}
	max := cloud.PageSize(opts)
	q := &storage.Query{Prefix: prefix}
	if opts.StartAfter != "" {
		// StartOffset is inclusive; no key holds a NUL byte, so this is the
		// smallest name after StartAfter.
		q.StartOffset = opts.StartAfter + "\x00"
	}
	if err := q.SetAttrSelection([]string{"Name", "Size", "Generation", "Updated"}); err != nil {
		return backend.ListPage{}, backend.NewError("list", prefix, backend.KindPermanent, err)
	}
	var page backend.ListPage
	err := s.do(ctx, "list", prefix, read, func(ctx context.Context) error {
		page = backend.ListPage{}
		it := s.bucket.Objects(ctx, q)
		pager := iterator.NewPager(it, max, "")
		var objs []*storage.ObjectAttrs
		next, err := pager.NextPage(&objs)
		if err != nil {
			return err
		}
		for _, o := range objs {
			page.Objects = append(page.Objects, backend.Attrs{Key: o.Name, Size: o.Size, Version: version(o.Generation), ModTime: o.Updated})
		}
		page.Truncated = next != ""
		return nil
	})
	return page, err
}

// Exists implements backend.StorageAdapter: a metadata read, then a
// one-key listing of key + "/".
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
		return s.bucket.Object(key).Delete(ctx)
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
		ConditionalUpdate:  true,
		KeyAndChildCoexist: true,
		VersionPerWrite:    true, // every write makes a new generation
	}
}

// Close implements backend.StorageAdapter.
func (s *Store) Close() error { return s.client.Close() }

// CreateBucket creates the bucket if it does not exist (emulator set-up).
func (s *Store) CreateBucket(ctx context.Context, project string) error {
	err := s.do(ctx, "create_bucket", "", write, func(ctx context.Context) error {
		return s.bucket.Create(ctx, project, nil)
	})
	if status(err) == http.StatusConflict {
		return nil // already there
	}
	return err
}
