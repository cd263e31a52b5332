package server

import (
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/omnigraph-go/omnigraph/api"
)

// In open mode (no tokens) any web page the user visits can make the
// browser send requests to the loopback server: after DNS rebinding
// (attacker.example resolves to 127.0.0.1, so the request carries
// Host: attacker.example) or directly across sites (Origin:
// https://attacker.example). So in open mode every request, on every
// route, must be addressed to a loopback name and must not come from
// another site. With tokens a page has no secret, and a reverse proxy may
// use any Host, so nothing is checked.

// openModeGuard refuses, in open mode, a request addressed to a host name
// that is not loopback, or sent by a page of another site (403, before
// routing: no route can skip it).
func (s *Server) openModeGuard(next http.Handler) http.Handler {
	if s.cfg.Tokens != nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, class := foreignRequest(r)
		if f == nil {
			next.ServeHTTP(w, r)
			return
		}
		s.log.Info("request", "method", r.Method, "status", f.Status, "actor", "anonymous", "failure_class", class)
		writeFailure(w, f)
	})
}

// foreignRequest is the open-mode verdict on one request: nil when it is
// addressed to a loopback name and comes from no other site; else the
// refusal and its log class.
func foreignRequest(r *http.Request) (*Failure, string) {
	if !loopbackName(r.Host) {
		return fail(http.StatusForbidden, api.CodeForbidden, "this server runs in open mode (no tokens) and answers only requests addressed to a loopback name (localhost, 127.0.0.1 or [::1]), as a web page's request after DNS rebinding is not; connect to 127.0.0.1 directly, or serve with --tokens to accept other names; nothing was changed"), "foreign_host"
	}
	if o := r.Header.Get("Origin"); o != "" && !loopbackOrigin(o) {
		return fail(http.StatusForbidden, api.CodeForbidden, "this server runs in open mode (no tokens) and refuses requests a web page of another site sends (its Origin is not a loopback address); serve with --tokens to accept them; nothing was changed"), "cross_site"
	}
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return fail(http.StatusForbidden, api.CodeForbidden, "this server runs in open mode (no tokens) and refuses requests a web page of another site sends (Sec-Fetch-Site: cross-site); serve with --tokens to accept them; nothing was changed"), "cross_site"
	}
	return nil, ""
}

// loopbackName reports whether a Host header (name and optional port)
// names this machine's loopback: localhost, 127.0.0.0/8 or ::1.
func loopbackName(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// loopbackOrigin reports whether an Origin header is a page served from a
// loopback name (any port: the same site as the server). "null" (a
// sandboxed page, a file) is not.
func loopbackOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return loopbackName(u.Host)
}
