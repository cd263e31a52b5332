// Package client is the Go client of omnigraph's HTTP API (omnigraph
// serve): one method per route, with the request and response types the
// server itself uses (package api), so the two cannot disagree.
//
//	c, err := client.New("http://127.0.0.1:8080", client.WithToken(token))
//	g := c.Graph("default")
//	out, err := g.Query(ctx, api.QueryRequest{Query: src, Params: map[string]any{"city": "Berlin"}})
//
// Every failure the server answers is a *Error (errors.As) carrying the
// status and the error envelope; errors.Is matches it against the kinds
// below (ErrNotFound, ErrOutcomeUnknown...). A write whose answer was lost
// is an *Error too, matching ErrOutcomeUnknown, with the check to run
// before sending it again.
//
// Retries happen only where they are safe: a 429 or 503 with Retry-After
// (the server did nothing) is sent again after the wait it asks for, and a
// read (an idempotent route) is sent again after a transport failure. A
// write is never sent twice otherwise.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"github.com/omnigraph-go/omnigraph/api"
)

// Client talks to one server. It is safe for concurrent use.
type Client struct {
	base      *url.URL
	token     string
	hc        *http.Client
	attempts  int
	maxWait   time.Duration
	onRetry   func(Retry)
	sleep     func(context.Context, time.Duration) error
	userAgent string
}

// Option configures a Client.
type Option func(*Client)

// WithToken sends token as the bearer token of every request (the secret
// 'omnigraph token add' printed). Without it the server must run in open
// mode.
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithHTTPClient sends the requests through hc (timeouts, proxies, TLS).
// The default is a client without an overall timeout: give each call a
// context with a deadline instead (a load or an export may take long).
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithRetries sets how many times a request is sent at most (attempts,
// the first included; 1 disables retries) and the longest wait between
// two sends: a Retry-After beyond it is not waited for, the error is
// returned instead. The defaults are 4 attempts and 30 s.
func WithRetries(attempts int, maxWait time.Duration) Option {
	return func(c *Client) { c.attempts, c.maxWait = max(attempts, 1), maxWait }
}

// WithRetryHook calls f before each retry (to log it, or in tests to act
// on it).
func WithRetryHook(f func(Retry)) Option { return func(c *Client) { c.onRetry = f } }

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// Retry describes one retry: the operation, the attempt about to be sent
// (2 for the first retry), the wait before it and the failure that caused
// it.
type Retry struct {
	Operation string
	Attempt   int
	Wait      time.Duration
	Err       error
}

// New makes a client of the server at baseURL (http or https, e.g.
// http://127.0.0.1:8080).
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("omnigraph client: %q is not a server URL: give http://HOST:PORT or https://HOST", baseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("omnigraph client: the server URL takes no query, fragment or credentials (give a token with WithToken)")
	}
	c := &Client{base: u, hc: &http.Client{}, attempts: 4, maxWait: 30 * time.Second, sleep: sleepCtx, userAgent: "omnigraph-go-client"}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// routes are the route table by operation id.
var routes = func() map[string]api.Route {
	m := map[string]api.Route{}
	for _, rt := range api.Routes() {
		m[rt.OperationID] = rt
	}
	return m
}()

func route(op string) api.Route {
	rt, ok := routes[op]
	if !ok {
		panic("omnigraph client: no route " + op)
	}
	return rt
}

// call is one request.
type call struct {
	op     string
	params []string // path parameters, in order
	query  url.Values
	header http.Header
	// in is a JSON body; stream a streamed one (NDJSON), sent as it is
	// read. At most one is set.
	in          any
	stream      io.Reader
	contentType string
	// branch is the branch a write goes to, for the check of an unknown
	// outcome.
	graph, branch string
	// answers are the non-2xx statuses that are answers, not failures (a
	// blob read's 302 and 304); a redirect among them is not followed.
	answers []int
}

// do sends c and decodes a 2xx JSON answer into out (when not nil).
func (cl *Client) do(ctx context.Context, c call, out any) error {
	resp, err := cl.send(ctx, c)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	dec := json.NewDecoder(resp.Body)
	dec.UseNumber()
	if err := dec.Decode(out); err != nil {
		rt := route(c.op)
		if rt.Writes() {
			// The write was answered 2xx: it landed, whatever the body.
			return fmt.Errorf("omnigraph %s: the write landed but its answer could not be read: %w", c.op, err)
		}
		return fmt.Errorf("omnigraph %s: read the answer: %w", c.op, err)
	}
	return nil
}

// send sends c, retrying where it is safe, and returns a 2xx answer whose
// body the caller closes; every other answer is an *Error.
func (cl *Client) send(ctx context.Context, c call) (*http.Response, error) {
	rt := route(c.op)
	var body []byte
	if c.in != nil {
		var err error
		if body, err = json.Marshal(c.in); err != nil {
			return nil, fmt.Errorf("omnigraph %s: encode the request: %w", c.op, err)
		}
	}
	var stream *replayable
	if c.stream != nil {
		stream = newReplayable(c.stream)
	}
	for attempt := 1; ; attempt++ {
		var rd io.Reader
		switch {
		case stream != nil:
			if !stream.rewind() {
				return nil, fmt.Errorf("omnigraph %s: the body was partly sent and cannot be read again, so the request is not retried", c.op)
			}
			rd = stream
		case body != nil:
			rd = bytes.NewReader(body)
		}
		req, err := http.NewRequestWithContext(ctx, rt.Method, cl.base.String()+rt.Expand(c.params...), rd)
		if err != nil {
			return nil, fmt.Errorf("omnigraph %s: %w", c.op, err)
		}
		if len(c.query) > 0 {
			req.URL.RawQuery = c.query.Encode()
		}
		for k, vs := range c.header {
			req.Header[k] = vs
		}
		if rd != nil {
			req.Header.Set("Content-Type", c.contentType)
		}
		if stream != nil {
			// The server answers a refused load (401, 403, 429) before
			// reading it: with 100-continue the body is not sent at all,
			// so it can be sent on the next attempt.
			req.Header.Set("Expect", "100-continue")
		}
		if cl.token != "" && rt.Auth {
			req.Header.Set("Authorization", "Bearer "+cl.token)
		}
		req.Header.Set("User-Agent", cl.userAgent)
		// The caller's span, if its context has one, continues on the
		// server (W3C traceparent); nothing is sent otherwise.
		propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
		var wrote bool
		req = req.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteHeaders: func() { wrote = true }}))
		hc := cl.hc
		if len(c.answers) > 0 {
			nr := *cl.hc
			nr.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
			hc = &nr
		}
		resp, err := hc.Do(req)
		var retryErr error
		var wait time.Duration
		switch {
		case err != nil && ctx.Err() != nil:
			if rt.Writes() && wrote {
				return nil, cl.unknown(c, err)
			}
			return nil, fmt.Errorf("omnigraph %s: %w", c.op, ctx.Err())
		case err != nil && rt.Idempotent:
			retryErr, wait = &unreachableError{op: c.op, msg: "no answer from the server (nothing was done)", err: err}, backoff(attempt)
		case err != nil && rt.Writes() && wrote:
			return nil, cl.unknown(c, err)
		case err != nil:
			return nil, &unreachableError{op: c.op, msg: "the request was not sent (nothing was done)", err: err}
		case resp.StatusCode >= 200 && resp.StatusCode < 300, slices.Contains(c.answers, resp.StatusCode):
			return resp, nil
		default:
			e := readError(c.op, resp)
			if ra := resp.Header.Get("Retry-After"); ra != "" && (resp.StatusCode == 429 || resp.StatusCode == 503) {
				if secs, perr := strconv.Atoi(ra); perr == nil && secs >= 0 {
					e.RetryAfter = time.Duration(secs) * time.Second
					retryErr, wait = e, e.RetryAfter
				}
			}
			if retryErr == nil {
				return nil, e
			}
		}
		if attempt >= cl.attempts || wait > cl.maxWait {
			return nil, retryErr
		}
		if cl.onRetry != nil {
			cl.onRetry(Retry{Operation: c.op, Attempt: attempt + 1, Wait: wait, Err: retryErr})
		}
		if err := cl.sleep(ctx, wait); err != nil {
			return nil, retryErr
		}
	}
}

// backoff is the wait before resending a read after a transport failure.
func backoff(attempt int) time.Duration {
	return min(100*time.Millisecond<<(attempt-1), 2*time.Second)
}

// unknown is the error of a write whose request was sent but whose answer
// never came: it may have landed.
func (cl *Client) unknown(c call, err error) *Error {
	branch := c.branch
	if branch == "" {
		branch = "main"
	}
	check := "GET /graphs/" + c.graph + "/commits?branch=" + url.QueryEscape(branch)
	return &Error{
		Operation: c.op,
		Message:   "the connection failed after the write was sent, so it may have landed: check " + check + " before sending it again",
		Details:   api.ErrorOutput{OutcomeUnknown: &api.OutcomeUnknown{Branch: branch, Check: check}},
		Err:       err,
	}
}

// readError reads an error answer (the envelope; any other body becomes
// the message).
func readError(op string, resp *http.Response) *Error {
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	e := &Error{Operation: op, Status: resp.StatusCode}
	if err := json.Unmarshal(b, &e.Details); err != nil || e.Details.Error == "" {
		msg := strings.TrimSpace(string(b))
		if msg == "" || len(msg) > 300 {
			msg = http.StatusText(resp.StatusCode)
		}
		e.Details = api.ErrorOutput{Error: msg}
	}
	e.Code, e.Message, e.Reason = e.Details.Code, e.Details.Error, e.Details.Reason
	return e
}

// replayable reads a streamed body and knows whether it can be sent
// again: when nothing of it was read yet, or when it can seek back.
type replayable struct {
	r      io.Reader
	read   int64
	start  int64
	seeker io.Seeker
}

func newReplayable(r io.Reader) *replayable {
	p := &replayable{r: r}
	if s, ok := r.(io.Seeker); ok {
		if off, err := s.Seek(0, io.SeekCurrent); err == nil {
			p.seeker, p.start = s, off
		}
	}
	return p
}

func (p *replayable) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.read += int64(n)
	return n, err
}

// rewind prepares the body for a new attempt.
func (p *replayable) rewind() bool {
	if p.read == 0 {
		return true
	}
	if p.seeker == nil {
		return false
	}
	if _, err := p.seeker.Seek(p.start, io.SeekStart); err != nil {
		return false
	}
	p.read = 0
	return true
}
