package wire_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/conformance/wire"
)

// objectServer is a minimal HTTP object store over mem: GET, PUT (with
// If-None-Match: * or If-Match: <etag>) and DELETE of /o/<key>.
func objectServer(t *testing.T) string {
	st := mem.New()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := strings.TrimPrefix(r.URL.Path, "/o/")
		ctx := r.Context()
		var a backend.Attrs
		var err error
		switch r.Method {
		case http.MethodHead:
			a, err = st.Stat(ctx, key)
			if err == nil {
				w.Header().Set("ETag", `"`+a.Version+`"`)
				w.Header().Set("Content-Length", fmt.Sprint(a.Size))
				return
			}
		case http.MethodGet:
			var data []byte
			data, a, err = st.Get(ctx, key)
			if err == nil {
				w.Header().Set("ETag", `"`+a.Version+`"`)
				_, _ = w.Write(data)
				return
			}
		case http.MethodPut:
			body, _ := io.ReadAll(r.Body)
			switch {
			case r.Header.Get("If-None-Match") == "*":
				a, err = st.PutIfAbsent(ctx, key, body)
			case r.Header.Get("If-Match") != "":
				// Strong comparison: a weak or bare tag does not match.
				v := r.Header.Get("If-Match")
				if !strings.HasPrefix(v, `"`) {
					v = "no match: " + v
				}
				a, err = st.PutIfMatch(ctx, key, body, strings.Trim(v, `"`))
			default:
				a, err = st.Put(ctx, key, body)
			}
			if err == nil {
				w.Header().Set("ETag", `"`+a.Version+`"`)
				return
			}
		case http.MethodDelete:
			if err = st.Delete(ctx, key); err == nil {
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		switch {
		case errors.Is(err, backend.ErrPrecondition):
			w.WriteHeader(http.StatusPreconditionFailed)
		case errors.Is(err, backend.ErrNotFound):
			w.WriteHeader(http.StatusNotFound)
		default:
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

type mode int

const (
	read mode = iota
	write
	conditional
)

// httpStore is a client of objectServer with the retry policy the wire
// rules ask for. Only the methods Run calls are implemented.
type httpStore struct {
	backend.StorageAdapter
	base   string
	client *http.Client
	// Broken variants for the meta-test.
	retryConditional bool // treats a conditional write like a plain one
	throttleRetries  int  // read throttle budget (default 3)
	verbatimETags    bool // hands ETags out as the server printed them
}

func (s *httpStore) do(ctx context.Context, op, method, key string, body []byte, hdr http.Header, m mode) (*http.Response, []byte, error) {
	if s.retryConditional && m == conditional {
		m = write
	}
	maxThrottle := wire.MaxThrottleRetries
	if s.throttleRetries > 0 && m == read {
		maxThrottle = s.throttleRetries
	}
	var clientRetries, throttleRetries int
	for {
		req, err := http.NewRequestWithContext(ctx, method, s.base+"/o/"+key, bytes.NewReader(body))
		if err != nil {
			return nil, nil, backend.NewError(op, key, backend.KindPermanent, err)
		}
		for k, v := range hdr {
			req.Header[k] = v
		}
		resp, err := s.client.Do(req)
		var data []byte
		if err == nil {
			data, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		var kind backend.Kind
		var retry *int
		budget := wire.MaxClientRetries
		switch {
		case err != nil && m == read:
			kind, retry = backend.KindTransient, &clientRetries
		case err != nil:
			return nil, nil, backend.NewError(op, key, backend.KindUnknown, err)
		case resp.StatusCode < 300:
			return resp, data, nil
		case resp.StatusCode == http.StatusPreconditionFailed:
			return nil, nil, backend.NewError(op, key, backend.KindPrecondition, nil)
		case resp.StatusCode == http.StatusNotFound && m == conditional:
			return nil, nil, backend.MatchMissing(op, key)
		case resp.StatusCode == http.StatusNotFound:
			return nil, nil, backend.NewError(op, key, backend.KindNotFound, nil)
		case resp.StatusCode == http.StatusTooManyRequests && m != conditional,
			resp.StatusCode == http.StatusServiceUnavailable && m == read:
			kind, retry, budget = backend.KindTransient, &throttleRetries, maxThrottle
		case resp.StatusCode >= 500 && m == read:
			kind, retry = backend.KindTransient, &clientRetries
		default:
			return nil, nil, backend.NewError(op, key, backend.KindUnknown, fmt.Errorf("HTTP %d", resp.StatusCode))
		}
		if *retry >= budget {
			return nil, nil, backend.NewError(op, key, kind, fmt.Errorf("gave up after %d retries", *retry))
		}
		*retry++
	}
}

func (s *httpStore) version(resp *http.Response) string {
	v := resp.Header.Get("ETag")
	if s.verbatimETags {
		return v
	}
	return strings.Trim(strings.TrimPrefix(v, "W/"), `"`)
}

func (s *httpStore) Get(ctx context.Context, key string) ([]byte, backend.Attrs, error) {
	resp, data, err := s.do(ctx, "get", http.MethodGet, key, nil, nil, read)
	if err != nil {
		return nil, backend.Attrs{}, err
	}
	return data, backend.Attrs{Key: key, Size: int64(len(data)), Version: s.version(resp)}, nil
}

func (s *httpStore) put(ctx context.Context, op, key string, data []byte, hdr http.Header, m mode) (backend.Attrs, error) {
	resp, _, err := s.do(ctx, op, http.MethodPut, key, data, hdr, m)
	if err != nil {
		return backend.Attrs{}, err
	}
	return backend.Attrs{Key: key, Size: int64(len(data)), Version: s.version(resp)}, nil
}

func (s *httpStore) Put(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	return s.put(ctx, "put", key, data, nil, write)
}

func (s *httpStore) PutIfAbsent(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	return s.put(ctx, "put-if-absent", key, data, http.Header{"If-None-Match": {"*"}}, conditional)
}

func (s *httpStore) PutIfMatch(ctx context.Context, key string, data []byte, v string) (backend.Attrs, error) {
	return s.put(ctx, "put-if-match", key, data, http.Header{"If-Match": {`"` + v + `"`}}, conditional)
}

func (s *httpStore) Stat(ctx context.Context, key string) (backend.Attrs, error) {
	resp, _, err := s.do(ctx, "stat", http.MethodHead, key, nil, nil, read)
	if err != nil {
		return backend.Attrs{}, err
	}
	return backend.Attrs{Key: key, Size: resp.ContentLength, Version: s.version(resp)}, nil
}

func (s *httpStore) Delete(ctx context.Context, key string) error {
	_, _, err := s.do(ctx, "delete", http.MethodDelete, key, nil, nil, write)
	if backend.IsNotFound(err) {
		return nil
	}
	return err
}

// spec runs the rules against objectServer through the proxy, with the
// client variant configure picks.
func spec(configure func(*httpStore)) wire.Spec {
	return wire.Spec{
		Open: func(t *testing.T) (backend.StorageAdapter, *wire.Proxy) {
			p := wire.NewProxy(t, objectServer(t))
			// No keep-alive: net/http would otherwise replay an idempotent
			// GET whose answer was dropped on a reused connection, hiding
			// the adapter's own retry count.
			s := &httpStore{base: p.URL, client: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}}
			configure(s)
			return s, p
		},
		IsWrite:  wire.IsMethod(http.MethodPut),
		IsRead:   wire.IsMethod(http.MethodGet),
		Throttle: wire.Rule{Status: http.StatusTooManyRequests, Body: "slow down"},
	}
}

// TestReferenceHTTPStorePasses: a client that sends conditional requests
// once and retries reads and plain writes within 3+3 passes every wire rule.
func TestReferenceHTTPStorePasses(t *testing.T) {
	wire.Run(t, spec(func(*httpStore) {}))
}

var brokenClients = []struct {
	name      string
	configure func(*httpStore)
	rule      string // the case that must fail
}{
	{"retriesConditional", func(s *httpStore) { s.retryConditional = true }, "create throttled"},
	{"retriesConditional", func(s *httpStore) { s.retryConditional = true }, "swap throttled"},
	{"unboundedThrottle", func(s *httpStore) { s.throttleRetries = 10 }, "read throttled always"},
	{"unboundedThrottle", func(s *httpStore) { s.throttleRetries = 10 }, "read 429 always"},
	{"verbatimETags", func(s *httpStore) { s.verbatimETags = true }, "ETagForms"},
}

const envBroken = "WIRE_BROKEN_CLIENT"

// TestBrokenClientChild runs the rules on one broken client; it only does
// so in the child process TestWireCatchesBrokenClients starts.
func TestBrokenClientChild(t *testing.T) {
	name := os.Getenv(envBroken)
	if name == "" {
		t.Skip("helper for TestWireCatchesBrokenClients")
	}
	for _, b := range brokenClients {
		if b.name+"/"+b.rule == name {
			wire.Run(t, spec(b.configure))
			return
		}
	}
	t.Fatalf("no broken client %q", name)
}

// TestWireCatchesBrokenClients: the rules can fail. A client that retries a
// throttled conditional request, or retries throttled reads past the
// budget, fails the rule that pins it.
func TestWireCatchesBrokenClients(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	for _, b := range brokenClients {
		t.Run(b.name+"/"+b.rule, func(t *testing.T) {
			sub := strings.ReplaceAll(b.rule, " ", "_")
			cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenClientChild$/^"+sub+"$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), envBroken+"="+b.name+"/"+b.rule)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the wire rules passed a client that breaks %q:\n%s", b.rule, out)
			}
			if !strings.Contains(string(out), "--- FAIL: TestBrokenClientChild/"+sub) {
				t.Fatalf("expected %q to fail, got:\n%s", b.rule, out)
			}
		})
	}
}
