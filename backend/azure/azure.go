// Package azure is the StorageAdapter for Azure Blob Storage, on azblob.
// URLs: az://container/prefix (the account is process configuration, never
// part of the URL).
//
// Environment contract (read at Open), first match wins:
//   - AZURE_STORAGE_CONNECTION_STRING: a full connection string;
//   - AZURE_STORAGE_ACCOUNT + AZURE_STORAGE_KEY: shared key;
//   - AZURE_STORAGE_ACCOUNT + AZURE_STORAGE_SAS_TOKEN: a SAS token.
//
// The blob endpoint is https://<account>.blob.core.windows.net unless
// OMNIGRAPH_AZURE_ENDPOINT overrides it (e.g.
// http://127.0.0.1:10000/devstoreaccount1 for Azurite). Plain http, in the
// endpoint or in a connection string, is refused unless
// OMNIGRAPH_AZURE_EMULATOR is true: only an explicitly configured emulator
// gets credentials over http. OBJECT_STORE_CLIENT_MAX_RETRIES, if set, must
// be 0.
//
// Conditional writes: PutIfAbsent sends If-None-Match: * (Azurite answers
// 409 BlobAlreadyExists, Azure may answer 412: both are Precondition);
// PutIfMatch sends If-Match: <etag>. ETags are handed out in one form, the
// strong quoted "<tag>" (List Blobs prints them bare, headers quote them),
// so a listed version swaps like any other. Every write is one Put Blob request
// (never staged blocks), so the condition is on the request that makes the
// object visible; bodies above MaxPutBlobSize are refused as Permanent. The
// SDK's retry policy is off (MaxRetries -1): the adapter is the only retry
// layer.
package azure

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/internal/cloud"
)

// Environment variable names.
const (
	EnvAccount          = "AZURE_STORAGE_ACCOUNT"
	EnvKey              = "AZURE_STORAGE_KEY"
	EnvSASToken         = "AZURE_STORAGE_SAS_TOKEN"
	EnvConnectionString = "AZURE_STORAGE_CONNECTION_STRING"
	// EnvEndpoint overrides the blob service endpoint (the account URL).
	EnvEndpoint = "OMNIGRAPH_AZURE_ENDPOINT"
	// EnvEmulator, when true, allows plain http to the configured endpoint.
	EnvEmulator = "OMNIGRAPH_AZURE_EMULATOR"
)

// Config is everything New needs; ConfigFromEnv fills it.
type Config struct {
	Container string
	// Account and one of Key, SASToken; or ConnectionString alone.
	Account          string
	Key              string
	SASToken         string
	ConnectionString string
	// Endpoint is the account URL; empty means https://<account>.blob.core.windows.net.
	Endpoint string
	// AllowHTTP permits a plain-http endpoint (emulators only).
	AllowHTTP bool
	// HTTPClient replaces the SDK transport (tests insert fault proxies).
	HTTPClient *http.Client
	// RequestTimeout bounds each request; zero means 60 s.
	RequestTimeout time.Duration
}

var containerName = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9]|-[a-z0-9]){2,62}$`)

func init() {
	backend.Register("az", func(ctx context.Context, u *url.URL) (backend.StorageAdapter, error) {
		if err := backend.CheckParams(u); err != nil {
			return nil, err
		}
		if u.User != nil || u.Port() != "" {
			return nil, backend.NewError("open", "", backend.KindConfiguration,
				errors.New("az:// URLs take a container name only (az://container/prefix); the account comes from AZURE_STORAGE_ACCOUNT"))
		}
		bucket, prefix, err := backend.SplitBucketPrefix(u)
		if err != nil {
			return nil, err
		}
		cfg, err := ConfigFromEnv(bucket)
		if err != nil {
			return nil, err
		}
		s, err := New(ctx, cfg)
		if err != nil {
			return nil, err
		}
		return backend.WithPrefix(s, prefix), nil
	})
}

func configErr(format string, args ...any) error {
	return backend.NewError("open", "", backend.KindConfiguration, fmt.Errorf(format, args...))
}

// ConfigFromEnv applies the environment contract (see the package doc).
func ConfigFromEnv(containerName string) (Config, error) {
	if err := cloud.CheckEnv(); err != nil {
		return Config{}, err
	}
	cfg := Config{
		Container:        containerName,
		Account:          strings.TrimSpace(os.Getenv(EnvAccount)),
		Key:              strings.TrimSpace(os.Getenv(EnvKey)),
		SASToken:         strings.TrimPrefix(strings.TrimSpace(os.Getenv(EnvSASToken)), "?"),
		ConnectionString: strings.TrimSpace(os.Getenv(EnvConnectionString)),
		Endpoint:         strings.TrimSpace(os.Getenv(EnvEndpoint)),
		AllowHTTP:        cloud.Truthy(os.Getenv(EnvEmulator)),
	}
	if cfg.ConnectionString == "" && cfg.Account == "" {
		return Config{}, configErr("azure: set %s (with %s or %s), or %s", EnvAccount, EnvKey, EnvSASToken, EnvConnectionString)
	}
	return cfg, nil
}

var _ backend.StorageAdapter = (*Store)(nil)

// Store is an Azure Blob container as a StorageAdapter.
type Store struct {
	client *container.Client
	cfg    Config
	req    cloud.Requester

	// markers remembers the service's continuation marker for the page
	// that ended at a given key, so List with StartAfter usually costs one
	// request (Azure has no start-after parameter).
	mu      sync.Mutex
	markers map[string]string
}

// New builds a Store; it makes no request.
func New(ctx context.Context, cfg Config) (*Store, error) {
	if err := cloud.CheckEnv(); err != nil {
		return nil, err
	}
	if !containerName.MatchString(cfg.Container) {
		return nil, configErr("azure: container name must be 3-63 lowercase letters, digits and single hyphens")
	}
	opts := &container.ClientOptions{ClientOptions: policy.ClientOptions{
		// The adapter is the only retry layer.
		Retry: policy.RetryOptions{MaxRetries: -1},
	}}
	switch {
	case cfg.HTTPClient != nil:
		opts.Transport = cfg.HTTPClient
	case cfg.AllowHTTP:
		opts.Transport = emulatorClient()
	}
	var (
		client *container.Client
		err    error
	)
	switch {
	case cfg.ConnectionString != "":
		if connStringHTTP(cfg.ConnectionString) && !cfg.AllowHTTP {
			return nil, configErr("azure: the connection string uses plain http; set %s=true only for a local emulator", EnvEmulator)
		}
		opts.InsecureAllowCredentialWithHTTP = cfg.AllowHTTP
		client, err = container.NewClientFromConnectionString(cfg.ConnectionString, cfg.Container, opts)
	default:
		endpoint := cfg.Endpoint
		if endpoint == "" {
			if cfg.Account == "" {
				return nil, configErr("azure: %s is not set", EnvAccount)
			}
			endpoint = "https://" + cfg.Account + ".blob.core.windows.net"
		}
		eu, perr := url.Parse(endpoint)
		if perr != nil || eu.Host == "" || (eu.Scheme != "https" && eu.Scheme != "http") {
			return nil, configErr("azure: %s must be an https:// URL", EnvEndpoint)
		}
		if eu.Scheme == "http" && !cfg.AllowHTTP {
			return nil, configErr("azure: endpoint is plain http; set %s=true only for a local emulator such as Azurite", EnvEmulator)
		}
		opts.InsecureAllowCredentialWithHTTP = cfg.AllowHTTP
		containerURL := strings.TrimSuffix(endpoint, "/") + "/" + cfg.Container
		switch {
		case cfg.Key != "":
			cred, cerr := container.NewSharedKeyCredential(cfg.Account, cfg.Key)
			if cerr != nil {
				return nil, configErr("azure: %s is not a valid account key", EnvKey)
			}
			client, err = container.NewClientWithSharedKeyCredential(containerURL, cred, opts)
		case cfg.SASToken != "":
			client, err = container.NewClientWithNoCredential(containerURL+"?"+cfg.SASToken, opts)
		default:
			return nil, configErr("azure: set %s or %s for account %s", EnvKey, EnvSASToken, EnvAccount)
		}
	}
	if err != nil {
		// The SDK's message may echo the connection string: keep only a summary.
		return nil, configErr("azure: cannot build the client from the configured credentials")
	}
	return &Store{client: client, cfg: cfg, req: cloud.Requester{Policy: cloud.DefaultPolicy(cfg.RequestTimeout), Timeout: cfg.RequestTimeout, Classify: classify, Describe: describe, Status: storeStatus}, markers: map[string]string{}}, nil
}

// connStringHTTP reports whether a connection string sends requests over
// plain http.
func connStringHTTP(cs string) bool {
	for _, part := range strings.Split(cs, ";") {
		k, v, _ := strings.Cut(part, "=")
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "defaultendpointsprotocol":
			if strings.EqualFold(strings.TrimSpace(v), "http") {
				return true
			}
		case "blobendpoint":
			if strings.HasPrefix(strings.ToLower(strings.TrimSpace(v)), "http://") {
				return true
			}
		case "usedevelopmentstorage":
			if cloud.Truthy(v) {
				return true
			}
		}
	}
	return false
}

// Client exposes the SDK container client (tests create containers with it).
func (s *Store) Client() *container.Client { return s.client }

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

func respParts(err error) (status int, code string) {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode, re.ErrorCode
	}
	return 0, ""
}

// storeStatus is the HTTP status Azure answered with, or 0.
func storeStatus(err error) int {
	status, _ := respParts(err)
	return status
}

var configCodes = map[string]bool{
	"ContainerNotFound": true, "AuthenticationFailed": true, "AuthorizationFailure": true,
	"AuthorizationPermissionMismatch": true, "InvalidAuthenticationInfo": true, "AccountIsDisabled": true,
	"InsufficientAccountPermissions": true, "ContainerBeingDeleted": true, "ContainerDisabled": true,
	"InvalidHeaderValue": true,
}

// classify maps an Azure failure to a kind and retry verdict from
// azcore.ResponseError's status and error code only.
func classify(err error, m mode) (backend.Kind, cloud.Verdict) {
	status, code := respParts(err)
	switch {
	case status == 0:
		kind := cloud.TransportKind(err, m != read)
		switch {
		case cloud.NotSent(err) && m != conditional:
			return kind, cloud.RetryClient
		case kind == backend.KindTransient && m == read:
			return kind, cloud.RetryClient
		}
		return kind, cloud.Stop
	case configCodes[code] || status == http.StatusUnauthorized || status == http.StatusForbidden:
		return backend.KindConfiguration, cloud.Stop
	case status == http.StatusNotFound:
		return backend.KindNotFound, cloud.Stop
	case code == "BlobAlreadyExists" || code == "ConditionNotMet" ||
		status == http.StatusPreconditionFailed || status == http.StatusNotModified:
		return backend.KindPrecondition, cloud.Stop
	case code == "ServerBusy" || status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable:
		switch {
		case m == read:
			return backend.KindTransient, cloud.RetryThrottle
		case m == write && (code == "ServerBusy" || status == http.StatusTooManyRequests):
			// An explicit throttle refusal: nothing was applied.
			return backend.KindTransient, cloud.RetryThrottle
		}
		return backend.KindUnknown, cloud.Stop
	case code == "OperationTimedOut" || status == http.StatusRequestTimeout || status >= 500:
		if m == read {
			return backend.KindTransient, cloud.RetryClient
		}
		return backend.KindUnknown, cloud.Stop
	case status >= 400:
		return backend.KindPermanent, cloud.Stop
	}
	return backend.KindUnknown, cloud.Stop
}

// describe summarises err from its typed parts: the SDK's own message
// repeats the request URL (with any SAS signature).
func describe(err error) string {
	status, code := respParts(err)
	if status == 0 {
		return cloud.TransportMsg(err)
	}
	msg := fmt.Sprintf("azure HTTP %d", status)
	if code != "" {
		msg += " " + code
	}
	return msg
}

func attrs(key string, size int64, etag *azcore.ETag, mod *time.Time) backend.Attrs {
	a := backend.Attrs{Key: key, Size: size}
	if etag != nil {
		// Listings print the ETag bare, headers quote it: one form.
		a.Version = cloud.CanonicalETag(string(*etag))
	}
	if mod != nil {
		a.ModTime = *mod
	}
	return a
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// Get implements backend.StorageAdapter.
func (s *Store) Get(ctx context.Context, key string) ([]byte, backend.Attrs, error) {
	if err := backend.ValidateKey(key); err != nil {
		return nil, backend.Attrs{}, err
	}
	var data []byte
	var a backend.Attrs
	err := s.do(ctx, "get", key, read, func(ctx context.Context) error {
		resp, err := s.client.NewBlobClient(key).DownloadStream(ctx, nil)
		if err != nil {
			return err
		}
		data, err = cloud.ReadAllSized(resp.Body, contentLength(resp.ContentLength))
		if err != nil {
			return err
		}
		a = attrs(key, int64(len(data)), resp.ETag, resp.LastModified)
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
		count := length
		if count < 0 {
			count = 0 // azblob: zero means to the end
		}
		err = s.do(ctx, "get_range", key, read, func(ctx context.Context) error {
			resp, err := s.client.NewBlobClient(key).DownloadStream(ctx, &blob.DownloadStreamOptions{Range: blob.HTTPRange{Offset: offset, Count: count}})
			if err != nil {
				return err
			}
			data, err = cloud.ReadAllSized(resp.Body, contentLength(resp.ContentLength))
			return err
		})
		return data, err
	}
	return cloud.GetRange(ctx, s, key, offset, length, fetch, func(err error) bool {
		status, _ := respParts(err)
		return status == http.StatusRequestedRangeNotSatisfiable
	})
}

// Stat implements backend.StorageAdapter.
func (s *Store) Stat(ctx context.Context, key string) (backend.Attrs, error) {
	if err := backend.ValidateKey(key); err != nil {
		return backend.Attrs{}, err
	}
	var a backend.Attrs
	err := s.do(ctx, "stat", key, read, func(ctx context.Context) error {
		resp, err := s.client.NewBlobClient(key).GetProperties(ctx, nil)
		if err != nil {
			return err
		}
		a = attrs(key, deref(resp.ContentLength), resp.ETag, resp.LastModified)
		return nil
	})
	return a, err
}

// MaxPutBlobSize is the largest object one Put Blob request carries. The
// adapter writes every object, conditional or not, in one such request, so
// the condition always rides on the request that makes the object visible;
// a larger body is refused before anything is sent.
const MaxPutBlobSize = 5000 << 20

// maxPut is MaxPutBlobSize; tests lower it.
var maxPut int64 = MaxPutBlobSize

func (s *Store) write(ctx context.Context, op, key string, data []byte, m mode, cond *blob.ModifiedAccessConditions) (backend.Attrs, error) {
	if err := backend.ValidateKey(key); err != nil {
		return backend.Attrs{}, err
	}
	if int64(len(data)) > maxPut {
		return backend.Attrs{}, backend.NewError(op, key, backend.KindPermanent,
			fmt.Errorf("the object is %d bytes; Azure Blob Storage takes at most %d bytes in one Put Blob request, and this adapter writes every object (and its condition) in one request", len(data), maxPut))
	}
	var a backend.Attrs
	err := s.do(ctx, op, key, m, func(ctx context.Context) error {
		var opts *blockblob.UploadOptions
		if cond != nil {
			opts = &blockblob.UploadOptions{AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: cond}}
		}
		// Put Blob: one request carries the whole object and its condition.
		resp, err := s.client.NewBlockBlobClient(key).Upload(ctx, streaming.NopCloser(bytes.NewReader(data)), opts)
		if err != nil {
			return err
		}
		a = attrs(key, int64(len(data)), resp.ETag, resp.LastModified)
		return nil
	})
	if err != nil {
		if backend.IsNotFound(err) {
			// A write has no object to miss: the container is missing.
			return backend.Attrs{}, backend.NewError(op, key, backend.KindConfiguration, errors.Unwrap(err))
		}
		return backend.Attrs{}, err
	}
	if a.Version == "" {
		return backend.Attrs{}, backend.NewError(op, key, backend.KindPermanent, errors.New("the store answered without an ETag"))
	}
	return a, nil
}

// Put implements backend.StorageAdapter.
func (s *Store) Put(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	return s.write(ctx, "put", key, data, write, nil)
}

// PutIfAbsent implements backend.StorageAdapter with If-None-Match: *.
func (s *Store) PutIfAbsent(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	any := azcore.ETagAny
	return s.write(ctx, "put_if_absent", key, data, conditional, &blob.ModifiedAccessConditions{IfNoneMatch: &any})
}

// PutIfMatch implements backend.StorageAdapter with If-Match: <etag>. Azure
// answers 412 for a missing blob too, so a 412 is followed by one Stat to
// tell NotFound from a lost race.
func (s *Store) PutIfMatch(ctx context.Context, key string, data []byte, version string) (backend.Attrs, error) {
	if cloud.CanonicalETag(version) == "" {
		// An empty token matches nothing; it must never become an
		// unconditional write.
		if _, err := s.Stat(ctx, key); err != nil {
			return backend.Attrs{}, backend.NormalizeMatch("put_if_match", key, err)
		}
		return backend.Attrs{}, backend.NewError("put_if_match", key, backend.KindPrecondition, errors.New("empty version token"))
	}
	etag := azcore.ETag(cloud.CanonicalETag(version))
	a, err := s.write(ctx, "put_if_match", key, data, conditional, &blob.ModifiedAccessConditions{IfMatch: &etag})
	if backend.IsPrecondition(err) {
		if _, serr := s.Stat(ctx, key); backend.IsNotFound(serr) {
			return backend.Attrs{}, backend.MatchMissing("put_if_match", key)
		}
	}
	return a, err
}

const (
	maxMarkers = 1024
	// maxServicePage is the largest page Azure serves.
	maxServicePage = 5000
)

func markerKey(prefix, last string) string { return prefix + "\x00" + last }

// List implements backend.StorageAdapter. Azure lists in byte order but has
// no start-after: a page that continues a previous one reuses the remembered
// continuation marker; otherwise it pages from the prefix start and skips.
func (s *Store) List(ctx context.Context, prefix string, opts backend.ListOptions) (backend.ListPage, error) {
	if err := backend.ValidatePrefix(prefix); err != nil {
		return backend.ListPage{}, err
	}
	max := cloud.PageSize(opts)
	var marker string
	if opts.StartAfter != "" {
		s.mu.Lock()
		marker = s.markers[markerKey(prefix, opts.StartAfter)]
		s.mu.Unlock()
	}
	// Continuing from a remembered marker (or from the start) pages line
	// up with the caller's; scanning for StartAfter uses the largest pages.
	size := max
	if opts.StartAfter != "" && marker == "" {
		size = maxServicePage
	}
	var page backend.ListPage
	for {
		var (
			items []*container.BlobItem
			next  string
		)
		lo := &container.ListBlobsFlatOptions{MaxResults: int32ptr(int32(size))}
		if prefix != "" {
			lo.Prefix = &prefix
		}
		if marker != "" {
			lo.Marker = &marker
		}
		err := s.do(ctx, "list", prefix, read, func(ctx context.Context) error {
			resp, err := s.client.NewListBlobsFlatPager(lo).NextPage(ctx)
			if err != nil {
				return err
			}
			items, next = resp.Segment.BlobItems, ""
			if resp.NextMarker != nil {
				next = *resp.NextMarker
			}
			return nil
		})
		if err != nil {
			return backend.ListPage{}, err
		}
		for i, it := range items {
			if it.Name == nil {
				continue
			}
			name := *it.Name
			if opts.StartAfter != "" && name <= opts.StartAfter {
				continue
			}
			if len(page.Objects) == max {
				page.Truncated = true
				return page, nil
			}
			var size int64
			var etag *azcore.ETag
			var mod *time.Time
			if p := it.Properties; p != nil {
				size, etag, mod = deref(p.ContentLength), p.ETag, p.LastModified
			}
			page.Objects = append(page.Objects, attrs(name, size, etag, mod))
			if len(page.Objects) == max && i == len(items)-1 && next != "" {
				s.remember(markerKey(prefix, name), next)
			}
		}
		if next == "" {
			return page, nil
		}
		if len(page.Objects) == max {
			page.Truncated = true
			return page, nil
		}
		marker = next
	}
}

func (s *Store) remember(k, marker string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.markers) >= maxMarkers {
		clear(s.markers)
	}
	s.markers[k] = marker
}

func int32ptr(v int32) *int32 { return &v }

// Exists implements backend.StorageAdapter: properties, then a one-key
// listing of key + "/".
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
		_, err := s.client.NewBlobClient(key).Delete(ctx, nil)
		return err
	})
	if backend.IsNotFound(err) {
		return nil // a missing container is Configuration, not NotFound
	}
	return err
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
		VersionPerWrite:    true, // Azure ETags are per write, not content hashes
	}
}

// Close implements backend.StorageAdapter.
func (s *Store) Close() error { return nil }

// CreateContainer creates the container if it does not exist (emulator set-up).
func (s *Store) CreateContainer(ctx context.Context) error {
	err := s.do(ctx, "create_container", "", write, func(ctx context.Context) error {
		_, err := s.client.Create(ctx, nil)
		return err
	})
	if _, code := respParts(err); code == "ContainerAlreadyExists" {
		return nil
	}
	return err
}

// emulatorClient serves a local emulator. Azurite closes idle keep-alive
// connections after 5 s by default; a write sent on one as it closes is
// reset after it was sent, which makes its outcome unknown. Dropping idle
// connections sooner than the emulator does avoids that race.
func emulatorClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.IdleConnTimeout = 3 * time.Second
	return &http.Client{Transport: tr}
}

// contentLength is an announced body length (0: unknown).
func contentLength(n *int64) int64 {
	if n == nil {
		return 0
	}
	return *n
}
