// Package s3 is the StorageAdapter for Amazon S3 and S3-compatible stores,
// on aws-sdk-go-v2. URLs: s3://bucket/prefix.
//
// Environment contract (read at Open):
//   - credentials: the SDK's default chain (AWS_ACCESS_KEY_ID,
//     AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, profiles, web identity, IMDS...);
//   - endpoint: AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL, else AWS's own;
//     a custom endpoint uses path-style addressing;
//   - region: AWS_REGION, else AWS_DEFAULT_REGION, else us-east-1;
//   - plain http only when the endpoint says http:// or AWS_ALLOW_HTTP is
//     true; AWS_ALLOW_HTTP=false with an http:// endpoint is refused;
//   - OBJECT_STORE_CLIENT_MAX_RETRIES, if set, must be 0.
//
// Conditional writes: PutIfAbsent sends If-None-Match: *, PutIfMatch sends
// If-Match with the ETag, always on a single PutObject (up to 5 GiB), never
// on a multipart upload, whose completion some servers check no condition
// on; only unconditional writes above the threshold go multipart. 412 is Precondition. Every ETag
// the store hands out (on a write, HEAD, GET or in a listing) is normalised
// to one form, the strong quoted "<tag>" (servers differ: some list ETags
// bare, some answer weak W/"<tag>"), so a token from any call is accepted
// by PutIfMatch.
// 409 ConditionalRequestConflict (another conditional write on the key was in
// flight) is Unknown: it says nothing about which writer won.
package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/internal/cloud"
)

// DefaultMultipartThreshold is the object size above which unconditional
// writes use a multipart upload. Conditional writes are always one request.
const DefaultMultipartThreshold = 16 << 20

// partSize is the size of each uploaded part (S3's minimum is 5 MiB).
const partSize = 8 << 20

// maxSinglePut is S3's largest single-request PutObject (5 GiB): the
// largest conditional write (conditions are never sent on multipart
// uploads).
const maxSinglePut = 5 << 30

// Config is everything New needs; ConfigFromEnv fills it from the
// environment contract.
type Config struct {
	Bucket string
	// Endpoint overrides AWS's endpoint (an S3-compatible store or emulator);
	// it must carry a scheme. Empty means AWS.
	Endpoint string
	Region   string
	// HTTPClient replaces the SDK's HTTP client (tests insert fault proxies).
	HTTPClient *http.Client
	// RequestTimeout bounds each request; zero means 60 s.
	RequestTimeout time.Duration
	// MultipartThreshold: unconditional writes larger than this use
	// multipart upload. Zero means DefaultMultipartThreshold.
	MultipartThreshold int64
	// KeyAndChildCoexist declares that "k" and "k/child" may both exist,
	// as on AWS S3 and the S3-compatible object servers (ConfigFromEnv and
	// s3:// URLs set it). A file-backed server (versitygw's posix backend,
	// MinIO in filesystem mode) refuses the second of the two: open it with
	// ?key_child_coexist=false, and `omnigraph storage check` reports the
	// mismatch when the declaration is wrong.
	KeyAndChildCoexist bool
}

// URL parameters accepted by s3:// URLs.
const paramCoexist = "key_child_coexist"

func init() {
	backend.Register("s3", func(ctx context.Context, u *url.URL) (backend.StorageAdapter, error) {
		if err := backend.CheckParams(u, paramCoexist); err != nil {
			return nil, err
		}
		bucket, prefix, err := backend.SplitBucketPrefix(u)
		if err != nil {
			return nil, err
		}
		cfg, err := ConfigFromEnv(bucket)
		if err != nil {
			return nil, err
		}
		if v := u.Query().Get(paramCoexist); v != "" {
			if !cloud.Truthy(v) && !cloud.Falsy(v) {
				return nil, backend.NewError("open", "", backend.KindConfiguration,
					fmt.Errorf("parameter %s=%q: use true or false", paramCoexist, v))
			}
			cfg.KeyAndChildCoexist = cloud.Truthy(v)
		}
		s, err := New(ctx, cfg)
		if err != nil {
			return nil, err
		}
		return backend.WithPrefix(s, prefix), nil
	})
}

// ConfigFromEnv applies the environment contract (see the package doc).
func ConfigFromEnv(bucket string) (Config, error) {
	if err := cloud.CheckEnv(); err != nil {
		return Config{}, err
	}
	cfg := Config{Bucket: bucket, KeyAndChildCoexist: true}
	cfg.Region = firstEnv("AWS_REGION", "AWS_DEFAULT_REGION")
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	endpoint := firstEnv("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
	if endpoint == "" {
		return cfg, nil
	}
	allow, allowSet := os.LookupEnv("AWS_ALLOW_HTTP")
	switch {
	case strings.HasPrefix(endpoint, "https://"):
	case strings.HasPrefix(endpoint, "http://"):
		if allowSet && cloud.Falsy(allow) {
			return Config{}, backend.NewError("open", "", backend.KindConfiguration,
				fmt.Errorf("the S3 endpoint is plain http but AWS_ALLOW_HTTP=%s; use an https:// endpoint or allow http", allow))
		}
	case strings.Contains(endpoint, "://"):
		return Config{}, backend.NewError("open", "", backend.KindConfiguration,
			fmt.Errorf("the S3 endpoint must start with https:// or http://"))
	default:
		// No scheme: https, unless http is explicitly allowed.
		if cloud.Truthy(allow) {
			endpoint = "http://" + endpoint
		} else {
			endpoint = "https://" + endpoint
		}
	}
	if _, err := url.Parse(endpoint); err != nil {
		return Config{}, backend.NewError("open", "", backend.KindConfiguration, fmt.Errorf("the S3 endpoint is not a valid URL"))
	}
	cfg.Endpoint = endpoint
	return cfg, nil
}

func firstEnv(names ...string) string {
	for _, n := range names {
		if v := strings.TrimSpace(os.Getenv(n)); v != "" {
			return v
		}
	}
	return ""
}

var _ backend.StorageAdapter = (*Store)(nil)

// Store is an S3 bucket as a StorageAdapter (keys relative to the bucket).
type Store struct {
	client    *s3.Client
	bucket    string
	cfg       Config
	req       cloud.Requester
	threshold int64
}

// New builds a Store. It makes no request: a missing bucket shows up as a
// Configuration error on first use.
func New(ctx context.Context, cfg Config) (*Store, error) {
	if err := cloud.CheckEnv(); err != nil {
		return nil, err
	}
	if cfg.Bucket == "" {
		return nil, backend.NewError("open", "", backend.KindConfiguration, errors.New("s3: bucket name is empty"))
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	opts := []func(*config.LoadOptions) error{
		config.WithRegion(cfg.Region),
		// The adapter is the only retry layer: the SDK makes one attempt.
		config.WithRetryer(func() aws.Retryer { return aws.NopRetryer{} }),
		// The SDK's default logger writes WARN lines to stderr (a skipped
		// multipart checksum, an unparsable Date header, an IMDSv1
		// fallback, a response body it could not drain). Every condition
		// that matters reaches the caller as an error; nothing is logged.
		config.WithLogger(logging.Nop{}),
		config.WithClientLogMode(0),
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, config.WithHTTPClient(cfg.HTTPClient))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, backend.NewError("open", "", backend.KindConfiguration, &cloud.Cause{Msg: "loading AWS configuration failed", Err: err})
	}
	if awsCfg.Credentials != nil {
		awsCfg.Credentials = credentialGuard{awsCfg.Credentials}
	}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		o.Logger = logging.Nop{}
		o.ClientLogMode = 0
		o.RetryMaxAttempts = 1
		o.Retryer = aws.NopRetryer{}
		// Stores that omit response checksums are normal; do not log it.
		o.DisableLogOutputChecksumValidationSkipped = true
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
			o.UsePathStyle = true
		}
	})
	th := cfg.MultipartThreshold
	if th <= 0 {
		th = DefaultMultipartThreshold
	}
	return &Store{client: client, bucket: cfg.Bucket, cfg: cfg, req: cloud.Requester{Policy: cloud.DefaultPolicy(cfg.RequestTimeout), Timeout: cfg.RequestTimeout, Classify: classify, Describe: describe, Status: statusOf}, threshold: th}, nil
}

// credentialGuard marks a failure to find credentials, so classify calls it
// a Configuration error rather than a transport failure (the SDK reports it
// as "get identity: ..." before any request is sent).
type credentialGuard struct{ aws.CredentialsProvider }

func (g credentialGuard) Retrieve(ctx context.Context) (aws.Credentials, error) {
	c, err := g.CredentialsProvider.Retrieve(ctx)
	if err != nil {
		return c, &credentialsError{err}
	}
	return c, nil
}

// credentialsError is a credentials chain that found nothing usable.
type credentialsError struct{ err error }

func (e *credentialsError) Error() string {
	return "no usable AWS credentials: " + e.err.Error()
}
func (e *credentialsError) Unwrap() error { return e.err }

// noCredentialsMsg is what a user reads when the chain found nothing.
const noCredentialsMsg = "credentials are missing: no AWS credentials were found; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE)"

// Client exposes the SDK client (tests use it to create buckets).
func (s *Store) Client() *s3.Client { return s.client }

// mode says how a request may be retried (see cloud.Mode).
type mode = cloud.Mode

const (
	read        = cloud.Read
	write       = cloud.Write
	conditional = cloud.Conditional
)

// do runs one logical request under the retry rules of m and classifies
// the final error.
func (s *Store) do(ctx context.Context, op, key string, m mode, fn func(ctx context.Context) error) error {
	return s.req.Do(ctx, op, key, m, fn)
}

// throttleCodes are the S3 error codes that mean "slow down".
var throttleCodes = map[string]bool{
	"SlowDown": true, "Throttling": true, "ThrottlingException": true,
	"RequestLimitExceeded": true, "TooManyRequests": true, "RequestThrottled": true,
}

// configCodes mean the bucket, credentials or settings are wrong.
var configCodes = map[string]bool{
	"NoSuchBucket": true, "AccessDenied": true, "InvalidAccessKeyId": true,
	"SignatureDoesNotMatch": true, "InvalidBucketName": true, "AllAccessDisabled": true,
	"AuthorizationHeaderMalformed": true, "ExpiredToken": true, "InvalidToken": true,
	"PermanentRedirect": true, "XAdminUserNotFound": true, "NotImplemented": true,
}

// apiParts returns the HTTP status and S3 error code carried by err
// (zero and "" when absent).
func apiParts(err error) (status int, code string) {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	return status, code
}

// statusOf is the HTTP status an S3 answer carried, or 0.
func statusOf(err error) int {
	status, _ := apiParts(err)
	return status
}

// classify maps an S3 failure to a kind and a retry verdict, from the typed
// error code and the HTTP status only.
func classify(err error, m mode) (backend.Kind, cloud.Verdict) {
	var ce *credentialsError
	if errors.As(err, &ce) {
		return backend.KindConfiguration, cloud.Stop
	}
	status, code := apiParts(err)
	if status == 0 && code == "" {
		kind := cloud.TransportKind(err, m != read)
		switch {
		case cloud.NotSent(err) && m != conditional:
			return kind, cloud.RetryClient
		case kind == backend.KindTransient && m == read:
			return kind, cloud.RetryClient
		}
		return kind, cloud.Stop
	}
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	throttle := throttleCodes[code] || status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable
	switch {
	case configCodes[code] || status == http.StatusUnauthorized || status == http.StatusForbidden:
		return backend.KindConfiguration, cloud.Stop
	case errors.As(err, &nsk) || errors.As(err, &nf) || code == "NoSuchKey" || code == "NotFound" || status == http.StatusNotFound:
		return backend.KindNotFound, cloud.Stop
	case code == "PreconditionFailed" || status == http.StatusPreconditionFailed || status == http.StatusNotModified:
		return backend.KindPrecondition, cloud.Stop
	case code == "ConditionalRequestConflict":
		// A concurrent conditional write on the same key was in flight: it
		// does not say who won, so it is neither a loss nor retryable.
		return backend.KindUnknown, cloud.Stop
	case throttle:
		switch m {
		case read:
			return backend.KindTransient, cloud.RetryThrottle
		case write:
			// An explicit throttle (429 or an S3 throttle code) is a refusal
			// before any effect; a bare 503 may come from a proxy after the
			// write landed, so it is not proof.
			if throttleCodes[code] || status == http.StatusTooManyRequests {
				return backend.KindTransient, cloud.RetryThrottle
			}
			return backend.KindUnknown, cloud.Stop
		}
		return backend.KindUnknown, cloud.Stop
	case code == "RequestTimeout" || status == http.StatusRequestTimeout || status >= 500:
		if m == read {
			return backend.KindTransient, cloud.RetryClient
		}
		return backend.KindUnknown, cloud.Stop
	case status == http.StatusConflict:
		// Other conflicts (a file-backed store refusing "k" beside "k/x").
		return backend.KindPermanent, cloud.Stop
	case status >= 400:
		return backend.KindPermanent, cloud.Stop
	}
	return backend.KindUnknown, cloud.Stop
}

func describe(err error) string {
	var ce *credentialsError
	if errors.As(err, &ce) {
		return noCredentialsMsg
	}
	status, code := apiParts(err)
	if status == 0 && code == "" {
		return cloud.TransportMsg(err)
	}
	msg := fmt.Sprintf("s3 HTTP %d", status)
	if code != "" {
		msg += " " + code
	}
	var ae smithy.APIError
	if errors.As(err, &ae) && ae.ErrorMessage() != "" {
		msg += ": " + ae.ErrorMessage()
	}
	return msg
}

func attrsOf(key string, size int64, etag *string, mod *time.Time) backend.Attrs {
	a := backend.Attrs{Key: key, Size: size, Version: cloud.CanonicalETag(aws.ToString(etag))}
	if mod != nil {
		a.ModTime = *mod
	}
	return a
}

// Get implements backend.StorageAdapter.
func (s *Store) Get(ctx context.Context, key string) ([]byte, backend.Attrs, error) {
	if err := backend.ValidateKey(key); err != nil {
		return nil, backend.Attrs{}, err
	}
	var data []byte
	var a backend.Attrs
	err := s.do(ctx, "get", key, read, func(ctx context.Context) error {
		out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: &key})
		if err != nil {
			return err
		}
		data, err = cloud.ReadAllSized(out.Body, aws.ToInt64(out.ContentLength))
		if err != nil {
			return err
		}
		a = attrsOf(key, int64(len(data)), out.ETag, out.LastModified)
		return nil
	})
	if err != nil {
		return nil, backend.Attrs{}, err
	}
	if a.Version == "" {
		return nil, backend.Attrs{}, backend.NewError("get", key, backend.KindPermanent, errors.New("the store returned no ETag"))
	}
	return data, a, nil
}

// GetRange implements backend.StorageAdapter.
func (s *Store) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	fetch := func(ctx context.Context, offset, length int64) (data []byte, err error) {
		rng := fmt.Sprintf("bytes=%d-", offset)
		if length > 0 {
			rng = fmt.Sprintf("bytes=%d-%d", offset, offset+length-1)
		}
		err = s.do(ctx, "get_range", key, read, func(ctx context.Context) error {
			out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: &key, Range: &rng})
			if err != nil {
				return err
			}
			data, err = cloud.ReadAllSized(out.Body, aws.ToInt64(out.ContentLength))
			return err
		})
		return data, err
	}
	return cloud.GetRange(ctx, s, key, offset, length, fetch, func(err error) bool {
		status, _ := apiParts(err)
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
		out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: &key})
		if err != nil {
			return err
		}
		a = attrsOf(key, aws.ToInt64(out.ContentLength), out.ETag, out.LastModified)
		return nil
	})
	if err == nil && a.Version == "" {
		return backend.Attrs{}, backend.NewError("stat", key, backend.KindPermanent, errors.New("the store returned no ETag"))
	}
	return a, err
}

// condition is the precondition of one write.
type condition struct {
	ifNoneMatch bool
	ifMatch     string
}

func (s *Store) write(ctx context.Context, op, key string, data []byte, c condition) (backend.Attrs, error) {
	if err := backend.ValidateKey(key); err != nil {
		return backend.Attrs{}, err
	}
	m := write
	if c.ifNoneMatch || c.ifMatch != "" {
		m = conditional
	}
	// A condition never rides on a multipart upload: some S3-compatible
	// servers ignore it on CompleteMultipartUpload, and the engine's
	// fencing rests on conditional writes. Conditional writes are one
	// PutObject up to S3's single-request limit; only plain writes split.
	switch {
	case m == conditional && int64(len(data)) > maxSinglePut:
		return backend.Attrs{}, backend.NewError(op, key, backend.KindPermanent,
			fmt.Errorf("a conditional write of %d bytes is above S3's single-request limit (5 GiB), and conditions are never sent on multipart uploads", len(data)))
	case m != conditional && int64(len(data)) > s.threshold:
		return s.multipart(ctx, op, key, data)
	}
	var etag *string
	body := &sentBody{data: data}
	err := s.do(ctx, op, key, m, func(ctx context.Context) error {
		body.Seek(0, io.SeekStart)
		in := &s3.PutObjectInput{Bucket: &s.bucket, Key: &key, Body: body, ContentLength: aws.Int64(int64(len(data)))}
		if c.ifNoneMatch {
			in.IfNoneMatch = aws.String("*")
		}
		if c.ifMatch != "" {
			in.IfMatch = aws.String(c.ifMatch)
		}
		out, err := s.client.PutObject(ctx, in)
		if err != nil {
			return err
		}
		etag = out.ETag
		return nil
	})
	if err != nil && m == conditional && backend.KindOf(err) == backend.KindUnknown && !body.sent() {
		return backend.Attrs{}, s.unsent(ctx, op, key, c, err)
	}
	if err != nil {
		return backend.Attrs{}, err
	}
	return s.written(ctx, op, key, int64(len(data)), etag)
}

// sentBody is a PutObject body that knows whether the transport read all
// of it since the last rewind (the SDK reads it once to sign or checksum,
// then seeks back to the start).
type sentBody struct {
	data []byte
	off  int
}

func (b *sentBody) Read(p []byte) (int, error) {
	if b.off >= len(b.data) {
		return 0, io.EOF
	}
	n := copy(p, b.data[b.off:])
	b.off += n
	return n, nil
}

func (b *sentBody) Seek(offset int64, whence int) (int64, error) {
	var abs int64
	switch whence {
	case io.SeekStart:
		abs = offset
	case io.SeekCurrent:
		abs = int64(b.off) + offset
	case io.SeekEnd:
		abs = int64(len(b.data)) + offset
	}
	if abs < 0 || abs > int64(len(b.data)) {
		return 0, errors.New("s3: seek outside the body")
	}
	b.off = int(abs)
	return abs, nil
}

// sent reports whether the last attempt read the whole body.
func (b *sentBody) sent() bool { return b.off >= len(b.data) }

// unsent settles a conditional PutObject that failed without an answer
// before its body was read to the end (the server answered early and reset
// the connection, as a server that checks If-Match before reading the body
// may do). S3 applies a PUT only with its whole Content-Length, so the write
// did not land; one metadata read tells a lost condition (Precondition)
// from a failure worth retrying (Transient). If that read fails, the
// outcome stays Unknown.
func (s *Store) unsent(ctx context.Context, op, key string, c condition, sendErr error) error {
	a, err := s.Stat(ctx, key)
	switch {
	case err != nil && !backend.IsNotFound(err):
		return sendErr
	case c.ifNoneMatch && err == nil:
		return backend.NewError(op, key, backend.KindPrecondition, errors.New("the key exists (settled by a read after the store cut the request before its body was sent)"))
	case c.ifMatch != "" && err != nil:
		return backend.MatchMissing(op, key)
	case c.ifMatch != "" && a.Version != c.ifMatch:
		return backend.NewError(op, key, backend.KindPrecondition, errors.New("the version moved (settled by a read after the store cut the request before its body was sent)"))
	}
	// The send error's own class (Unknown) must not stay in the chain.
	return backend.NewError(op, key, backend.KindTransient, fmt.Errorf("the store cut the request before its body was sent, so it did not take effect (%s)", sendErr))
}

// written builds a write's attributes. A store that omits the ETag gets
// one HEAD; if it is still missing, the write is reported as done but the
// adapter cannot offer a version, which is Permanent.
func (s *Store) written(ctx context.Context, op, key string, size int64, etag *string) (backend.Attrs, error) {
	if v := cloud.CanonicalETag(aws.ToString(etag)); v != "" {
		return backend.Attrs{Key: key, Size: size, Version: v, ModTime: time.Now()}, nil
	}
	a, err := s.Stat(ctx, key)
	if err != nil {
		return backend.Attrs{}, backend.NewError(op, key, backend.KindUnknown, fmt.Errorf("write answered without an ETag and the read-back failed: %w", err))
	}
	return a, nil
}

// multipart uploads data in parts, unconditionally (write never sends a
// condition this way). CompleteMultipartUpload makes the object visible and
// is a plain write.
func (s *Store) multipart(ctx context.Context, op, key string, data []byte) (backend.Attrs, error) {
	var uploadID *string
	err := s.do(ctx, op, key, read, func(ctx context.Context) error {
		out, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &s.bucket, Key: &key})
		if err != nil {
			return err
		}
		uploadID = out.UploadId
		return nil
	})
	if err != nil {
		return backend.Attrs{}, err
	}
	abort := func() {
		// Best effort: a leftover upload costs storage, not correctness.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_, _ = s.client.AbortMultipartUpload(actx, &s3.AbortMultipartUploadInput{Bucket: &s.bucket, Key: &key, UploadId: uploadID})
	}
	var parts []types.CompletedPart
	for i, off := int32(1), 0; off < len(data); i, off = i+1, off+partSize {
		end := min(off+partSize, len(data))
		chunk := data[off:end]
		num := i
		// Parts go to a fresh upload id, so repeating one is safe.
		err := s.do(ctx, op, key, read, func(ctx context.Context) error {
			out, err := s.client.UploadPart(ctx, &s3.UploadPartInput{
				Bucket: &s.bucket, Key: &key, UploadId: uploadID, PartNumber: aws.Int32(num),
				Body: bytes.NewReader(chunk), ContentLength: aws.Int64(int64(len(chunk))),
			})
			if err != nil {
				return err
			}
			parts = append(parts, types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(num)})
			return nil
		})
		if err != nil {
			abort()
			return backend.Attrs{}, err
		}
	}
	var etag *string
	err = s.do(ctx, op, key, write, func(ctx context.Context) error {
		in := &s3.CompleteMultipartUploadInput{
			Bucket: &s.bucket, Key: &key, UploadId: uploadID,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
		}
		out, err := s.client.CompleteMultipartUpload(ctx, in)
		if err != nil {
			return err
		}
		etag = out.ETag
		return nil
	})
	if err != nil {
		if k := backend.KindOf(err); k == backend.KindPrecondition || k == backend.KindNotFound {
			abort()
		}
		return backend.Attrs{}, err
	}
	return s.written(ctx, op, key, int64(len(data)), etag)
}

// Put implements backend.StorageAdapter.
func (s *Store) Put(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	return s.write(ctx, "put", key, data, condition{})
}

// PutIfAbsent implements backend.StorageAdapter with If-None-Match: *.
func (s *Store) PutIfAbsent(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	return s.write(ctx, "put_if_absent", key, data, condition{ifNoneMatch: true})
}

// PutIfMatch implements backend.StorageAdapter with If-Match: <etag>.
// AWS S3 answers 404 NoSuchKey when the key is missing, other servers 412:
// both are a Precondition failure (backend.MatchMissing for the 404).
func (s *Store) PutIfMatch(ctx context.Context, key string, data []byte, version string) (backend.Attrs, error) {
	version = cloud.CanonicalETag(version)
	if version == "" {
		// An empty token matches nothing; it must never become an
		// unconditional write.
		if _, err := s.Stat(ctx, key); err != nil {
			return backend.Attrs{}, backend.NormalizeMatch("put_if_match", key, err)
		}
		return backend.Attrs{}, backend.NewError("put_if_match", key, backend.KindPrecondition, errors.New("empty version token"))
	}
	a, err := s.write(ctx, "put_if_match", key, data, condition{ifMatch: version})
	return a, backend.NormalizeMatch("put_if_match", key, err)
}

// List implements backend.StorageAdapter.
func (s *Store) List(ctx context.Context, prefix string, opts backend.ListOptions) (backend.ListPage, error) {
	if err := backend.ValidatePrefix(prefix); err != nil {
		return backend.ListPage{}, err
	}
	max := cloud.PageSize(opts)
	in := &s3.ListObjectsV2Input{Bucket: &s.bucket, MaxKeys: aws.Int32(int32(max))}
	if prefix != "" {
		in.Prefix = aws.String(prefix)
	}
	if opts.StartAfter != "" {
		in.StartAfter = aws.String(opts.StartAfter)
	}
	var page backend.ListPage
	err := s.do(ctx, "list", prefix, read, func(ctx context.Context) error {
		out, err := s.client.ListObjectsV2(ctx, in)
		if err != nil {
			return err
		}
		page = backend.ListPage{Truncated: aws.ToBool(out.IsTruncated)}
		for _, o := range out.Contents {
			page.Objects = append(page.Objects, attrsOf(aws.ToString(o.Key), aws.ToInt64(o.Size), o.ETag, o.LastModified))
		}
		return nil
	})
	return page, err
}

// Exists implements backend.StorageAdapter: a HEAD, then a one-key listing
// of key + "/".
func (s *Store) Exists(ctx context.Context, key string) (bool, error) {
	if err := backend.ValidateKey(key); err != nil {
		return false, err
	}
	return cloud.Exists(ctx, s, key)
}

// Delete implements backend.StorageAdapter (S3 answers 204 for a missing key).
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := backend.ValidateKey(key); err != nil {
		return err
	}
	err := s.do(ctx, "delete", key, write, func(ctx context.Context) error {
		_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.bucket, Key: &key})
		return err
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
		KeyAndChildCoexist: s.cfg.KeyAndChildCoexist,
		// ETags are content hashes: rewriting identical bytes keeps the token.
		VersionPerWrite: false,
	}
}

// Close implements backend.StorageAdapter.
func (s *Store) Close() error { return nil }

// CreateBucket creates the store's bucket if it does not exist (tests and
// first-time setup on emulators).
func (s *Store) CreateBucket(ctx context.Context) error {
	err := s.do(ctx, "create_bucket", "", write, func(ctx context.Context) error {
		_, err := s.client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &s.bucket})
		return err
	})
	if err == nil {
		return nil
	}
	var owned *types.BucketAlreadyOwnedByYou
	var exists *types.BucketAlreadyExists
	if errors.As(err, &owned) || errors.As(err, &exists) {
		return nil
	}
	if _, code := apiParts(err); code == "BucketAlreadyOwnedByYou" || code == "BucketAlreadyExists" {
		return nil
	}
	return err
}
