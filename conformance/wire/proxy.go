package wire

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// Proxy is an HTTP proxy on 127.0.0.1 in front of a store's endpoint that
// records every request and can misbehave on chosen ones: forward a request
// and then lose the answer (drop the connection or answer an error status),
// or refuse it without forwarding. Tests point an adapter's endpoint at
// Proxy.URL and count what went over the wire. Any HTTP-based store can be
// put behind it: the proxy knows nothing of the store's protocol.
//
// The Host header is forwarded as received, so signed requests (SigV4)
// still verify at the target.
type Proxy struct {
	// URL is the proxy's base URL, http://127.0.0.1:<port>.
	URL string
	// HostPort is URL without the scheme.
	HostPort string
	// Host, when set before the first request, replaces the Host header of
	// forwarded requests (fake-gcs-server routes reads by Host).
	Host string

	target *url.URL
	mu     sync.Mutex
	seen   []Request
	gen    int // counts Resets
	rules  []*Rule
}

// Request is what the proxy saw of one request.
type Request struct {
	Method string
	Path   string
	Query  url.Values
	Header http.Header
	// Start is when the proxy received the request, End when it finished
	// answering it (zero while it is in flight).
	Start, End time.Time
}

// Rule makes the proxy misbehave on matching requests.
type Rule struct {
	// Match selects requests; nil matches all.
	Match func(r Request) bool
	// Times is how many matching requests the rule applies to (0 means 1).
	Times int
	// Forward sends the request to the target first, so it takes effect.
	Forward bool
	// Status is the answer sent instead of the target's; 0 drops the
	// connection without any answer.
	Status int
	// Header and Body go with Status.
	Header http.Header
	Body   string
	// Delay holds the answer back this long after forwarding (or until the
	// client gives up), so a client with a shorter request timeout sees its
	// request time out after it took effect.
	Delay time.Duration
	// Rewrite, with Forward, passes the target's answer through after
	// rewriting its headers (Status, Header and Body are then unused): a
	// server that prints its ETags differently on some answers.
	Rewrite func(h http.Header)
	// Cut resets the connection as soon as the request's headers arrive,
	// before its body is read and without an answer: a server that judges
	// a large upload by its headers (a failed If-Match) and drops the rest.
	// The request never reaches the target.
	Cut bool
}

// NewProxy starts a proxy to target (a base URL, e.g. http://127.0.0.1:9000)
// and stops it when the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	tu, err := url.Parse(target)
	if err != nil {
		t.Fatalf("proxy target: %v", err)
	}
	p := &Proxy{target: tu}
	srv := httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	p.HostPort = strings.TrimPrefix(srv.URL, "http://")
	return p
}

// Arm adds a rule; rules are tried in the order armed.
func (p *Proxy) Arm(r Rule) {
	if r.Times <= 0 {
		r.Times = 1
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	rr := r
	p.rules = append(p.rules, &rr)
}

// Count returns how many requests matching match were received (nil: all).
func (p *Proxy) Count(match func(r Request) bool) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, r := range p.seen {
		if match == nil || match(r) {
			n++
		}
	}
	return n
}

// Reset forgets the recorded requests and the rules.
func (p *Proxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen, p.rules = nil, nil
	p.gen++
}

// Requests returns a copy of the requests received, in arrival order.
func (p *Proxy) Requests() []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Request(nil), p.seen...)
}

// RoundTrips is the critical-path depth of finished requests: a request's
// depth is 1 + the largest depth of any request that finished before it
// started, and the answer is the largest depth. N requests sent together
// cost 1; N sent one after another cost N. (Give the store a latency well
// above scheduling delays, so requests sent together overlap.)
func RoundTrips(reqs []Request) int {
	sorted := append([]Request(nil), reqs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Start.Before(sorted[j].Start) })
	depth := make([]int, len(sorted))
	most := 0
	for i, r := range sorted {
		depth[i] = 1
		for j := 0; j < i; j++ {
			if !sorted[j].End.IsZero() && !sorted[j].End.After(r.Start) && depth[j]+1 > depth[i] {
				depth[i] = depth[j] + 1
			}
		}
		if !r.End.IsZero() {
			most = max(most, depth[i])
		}
	}
	return most
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	req := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Header: r.Header.Clone(), Start: time.Now()}
	p.mu.Lock()
	p.seen = append(p.seen, req)
	at, gen := len(p.seen)-1, p.gen
	defer func() {
		p.mu.Lock()
		if p.gen == gen { // not Reset meanwhile
			p.seen[at].End = time.Now()
		}
		p.mu.Unlock()
	}()
	var rule *Rule
	for _, ru := range p.rules {
		if ru.Times > 0 && (ru.Match == nil || ru.Match(req)) {
			ru.Times--
			rule = ru
			break
		}
	}
	p.mu.Unlock()

	if rule != nil && rule.Cut {
		reset(w)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "proxy: reading request body", http.StatusBadGateway)
		return
	}
	if rule == nil || rule.Forward {
		resp, err := p.forward(r, body)
		if err != nil {
			http.Error(w, "proxy: "+err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		respBody, _ := io.ReadAll(resp.Body)
		if rule == nil || rule.Rewrite != nil {
			for k, v := range resp.Header {
				w.Header()[k] = v
			}
			if rule != nil {
				rule.Rewrite(w.Header())
			}
			w.WriteHeader(resp.StatusCode)
			_, _ = w.Write(respBody)
			return
		}
	}
	if rule.Delay > 0 {
		t := time.NewTimer(rule.Delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
		}
		t.Stop()
	}
	if rule.Status == 0 {
		// The answer is lost: close the connection without a response.
		reset(w)
		return
	}
	for k, v := range rule.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(rule.Status)
	_, _ = io.WriteString(w, rule.Body)
}

func (p *Proxy) forward(r *http.Request, body []byte) (*http.Response, error) {
	u := *p.target
	u.Path = strings.TrimSuffix(p.target.Path, "/") + r.URL.Path
	u.RawPath = ""
	if r.URL.RawPath != "" {
		u.RawPath = strings.TrimSuffix(p.target.EscapedPath(), "/") + r.URL.RawPath
	}
	u.RawQuery = r.URL.RawQuery
	out, err := http.NewRequest(r.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	out.Header = r.Header.Clone()
	out.Host = r.Host
	if p.Host != "" {
		out.Host = p.Host
	}
	out.ContentLength = int64(len(body))
	return http.DefaultTransport.RoundTrip(out)
}

// reset closes the connection at once (RST), without a response.
func reset(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}
