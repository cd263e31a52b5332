// Package cloud holds what the object-store adapters (s3, gcs, azure,
// gocloud) share: the one retry layer, the per-request timeout, the
// environment rules common to all of them, and a prefix deleter.
//
// Retries live here and nowhere else: every adapter switches its SDK's own
// retryer off and routes each request through Policy.Do or Once.
package cloud

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
)

// Limits of the retry layer, shared by every cloud adapter.
const (
	// MaxClientRetries bounds retries after a transient transport or server
	// failure of a request that is safe to repeat.
	MaxClientRetries = 3
	// MaxThrottleRetries bounds retries after the store asked us to slow
	// down (S3 SlowDown, HTTP 429, 503).
	MaxThrottleRetries = 3
	// DefaultRequestTimeout bounds every single request: the SDKs have no
	// default timeout and a hung server would otherwise block forever.
	DefaultRequestTimeout = 60 * time.Second
)

// Verdict is what the classifier says about one failed attempt.
type Verdict int

const (
	// Stop: return the error to the caller.
	Stop Verdict = iota
	// RetryClient: a transient failure that provably had no effect, or a
	// read; counts against MaxClientRetries.
	RetryClient
	// RetryThrottle: the store refused the request to slow us down;
	// counts against MaxThrottleRetries.
	RetryThrottle
)

// Policy runs repeatable requests with bounded retries and a per-attempt
// timeout.
type Policy struct {
	MaxClient   int
	MaxThrottle int
	// Backoff is the first pause; it doubles per retry (with jitter) up to 2 s.
	Backoff time.Duration
	// Timeout bounds each attempt; zero means DefaultRequestTimeout.
	Timeout time.Duration
}

// DefaultPolicy is the policy for reads and for writes whose failure proves
// they had no effect.
func DefaultPolicy(timeout time.Duration) Policy {
	return Policy{MaxClient: MaxClientRetries, MaxThrottle: MaxThrottleRetries, Backoff: 50 * time.Millisecond, Timeout: timeout}
}

// Do calls fn until it succeeds, judge says Stop, a retry budget is spent,
// or ctx ends. Each call gets its own timeout derived from ctx.
func (p Policy) Do(ctx context.Context, fn func(ctx context.Context) error, judge func(error) Verdict) error {
	client, throttle := 0, 0
	for attempt := 0; ; attempt++ {
		err := Once(ctx, p.Timeout, fn)
		if err == nil {
			return nil
		}
		switch judge(err) {
		case RetryClient:
			if client >= p.MaxClient {
				return err
			}
			client++
		case RetryThrottle:
			if throttle >= p.MaxThrottle {
				return err
			}
			throttle++
		default:
			return err
		}
		if ctx.Err() != nil {
			return err
		}
		if !sleep(ctx, p.pause(attempt)) {
			return err
		}
	}
}

func (p Policy) pause(attempt int) time.Duration {
	d := p.Backoff << attempt
	if d <= 0 || d > 2*time.Second {
		d = 2 * time.Second
	}
	// Full jitter in [d/2, d): racing clients spread out.
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Once runs fn exactly once under a per-request timeout (zero means
// DefaultRequestTimeout).
func Once(ctx context.Context, timeout time.Duration, fn func(ctx context.Context) error) error {
	if timeout <= 0 {
		timeout = DefaultRequestTimeout
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return fn(rctx)
}

// Truthy reports whether an environment value means yes
// (1, true, yes, on; any case).
func Truthy(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

// Falsy reports whether an environment value explicitly means no
// (0, false, no, off; any case).
func Falsy(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "0", "false", "no", "off":
		return true
	}
	return false
}

// MaxRetriesEnv is the variable that other object-store clients read for
// their own retry count. OmniGraph keeps retries in one layer, so it may only
// be unset or "0".
const MaxRetriesEnv = "OBJECT_STORE_CLIENT_MAX_RETRIES"

// CheckEnv refuses settings that would add a second retry layer.
func CheckEnv() error {
	if v := strings.TrimSpace(os.Getenv(MaxRetriesEnv)); v != "" && v != "0" {
		return backend.NewError("open", "", backend.KindConfiguration,
			fmt.Errorf("%s=%q: OmniGraph retries in exactly one layer and needs client retries off; unset it or set it to 0", MaxRetriesEnv, v))
	}
	return nil
}

// NotSent reports whether err proves the request never reached the server:
// the connection could not be made (refused, no route, DNS failure).
func NotSent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}

// TransportKind classifies an error that carries no HTTP status: a request
// that was never sent is Transient; a timeout or broken connection is
// Transient for a read but Unknown for a mutation, because the server may
// have applied it; anything else is Unknown.
func TransportKind(err error, mutation bool) backend.Kind {
	if NotSent(err) {
		return backend.KindTransient
	}
	var ne net.Error
	timeout := errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		(errors.As(err, &ne) && ne.Timeout())
	var op *net.OpError
	broken := errors.As(err, &op) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
	if (timeout || broken) && !mutation {
		return backend.KindTransient
	}
	return backend.KindUnknown
}

// DeleteKeys deletes every key with up to 8 requests in flight, returning
// the first error.
func DeleteKeys(ctx context.Context, keys []string, del func(ctx context.Context, key string) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	sem := make(chan struct{}, 8)
	for _, k := range keys {
		sem <- struct{}{}
		wg.Add(1)
		go func(k string) {
			defer wg.Done()
			defer func() { <-sem }()
			if err := del(ctx, k); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}(k)
	}
	wg.Wait()
	return first
}

// DeletePrefix lists every key under prefix in s and deletes them. It is
// idempotent: Delete of a missing key succeeds, so concurrent deleters do
// not fail each other.
func DeletePrefix(ctx context.Context, s backend.StorageAdapter, prefix string) error {
	opts := backend.ListOptions{}
	for {
		page, err := s.List(ctx, prefix, opts)
		if err != nil {
			return err
		}
		keys := make([]string, len(page.Objects))
		for i, o := range page.Objects {
			keys[i] = o.Key
		}
		if err := DeleteKeys(ctx, keys, s.Delete); err != nil {
			return err
		}
		if !page.Truncated || len(page.Objects) == 0 {
			return nil
		}
		opts.StartAfter = keys[len(keys)-1]
	}
}

// Cause wraps an SDK error with a short message built from its typed parts
// (status, code), so request URLs (bucket and path) and SDK chatter stay out
// of the message while errors.Is/As still reach the original chain. Status
// is the HTTP status the store answered (0: none), for
// backend.StoreStatus.
type Cause struct {
	Msg    string
	Err    error
	Status int
}

func (c *Cause) Error() string { return c.Msg }
func (c *Cause) Unwrap() error { return c.Err }

// StoreStatus implements backend.StoreStatus's interface.
func (c *Cause) StoreStatus() int { return c.Status }

// TransportMsg describes an error without an HTTP status, without the URL
// that net/http puts in its errors.
func TransportMsg(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "request timed out"
	case errors.Is(err, context.Canceled):
		return "request cancelled"
	case NotSent(err):
		return "cannot connect to the storage endpoint"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return "transport error: " + ue.Err.Error()
	}
	return "transport error: " + err.Error()
}

// Exists answers Exists for a flat object store: a metadata read of key,
// then (only when it is missing) a one-key listing of key + "/", so that a
// sibling such as "graphical" never makes "graph" exist.
func Exists(ctx context.Context, s backend.StorageAdapter, key string) (bool, error) {
	_, err := s.Stat(ctx, key)
	if err == nil {
		return true, nil
	}
	if !backend.IsNotFound(err) {
		return false, err
	}
	page, err := s.List(ctx, key+"/", backend.ListOptions{MaxKeys: 1})
	if err != nil {
		return false, err
	}
	return len(page.Objects) > 0, nil
}

// CanonicalETag is the one form of an ETag used as a version token: the
// tag in double quotes, strong (without a W/ prefix); empty stays empty.
// Stores print ETags differently from answer to answer (quoted in headers,
// bare in listings, weak behind some proxies), and PutIfMatch compares
// tokens as strings, so adapters hand out and send only this form.
func CanonicalETag(etag string) string {
	t := strings.TrimSpace(etag)
	t = strings.TrimPrefix(t, "W/")
	t = strings.TrimSuffix(strings.TrimPrefix(t, `"`), `"`)
	if t == "" {
		return ""
	}
	return `"` + t + `"`
}
