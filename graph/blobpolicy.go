package graph

import (
	"fmt"
	"net/url"
	"strings"
)

// ExternalBlobPolicy decides which external references a writer may store
// in Blob properties (a value that is not "base64:..." bytes but a URI the
// graph does not own). The zero policy allows none: a load or mutation
// that gives one is refused before anything is written. A handle gets its
// policy when it is opened (OpenOptions.ExternalBlobs), so the rule does
// not depend on which door (CLI, HTTP, MCP) the write came through.
//
// A policy is a list of bases: absolute URI prefixes such as
// "s3://media/public/" or "https://cdn.example.com/assets". A reference is
// allowed when its scheme and host equal a base's and its path lies under
// the base's path, compared segment by segment (so "https://cdn.example.com"
// never admits "https://cdn.example.com.evil.org/..." and a base ".../a"
// never admits ".../ab"). References with dot segments or encoded slashes
// are refused outright: they could step out of a base.
//
// Stored references stay readable whatever the policy says later: the
// policy gates new values only.
type ExternalBlobPolicy struct {
	bases []blobBase
}

type blobBase struct {
	raw    string
	scheme string
	host   string
	path   string // decoded, ending in "/"
}

// blobBaseSchemes are the schemes a base may name: object stores and web
// servers. file:// is never allowed: a graph, often served to others,
// must not turn into a way to read the server's own files.
var blobBaseSchemes = map[string]bool{"s3": true, "gs": true, "az": true, "https": true, "http": true}

// NewExternalBlobPolicy builds the policy allowing references under bases.
// A bad base (not an absolute URI of an allowed scheme, user info, a query
// or fragment, dot segments) is an ErrInvalidInput error naming it.
func NewExternalBlobPolicy(bases []string) (ExternalBlobPolicy, error) {
	var p ExternalBlobPolicy
	for _, b := range bases {
		u, err := parseBlobURI(b)
		if err != nil {
			return ExternalBlobPolicy{}, fmt.Errorf("%w: external blob base %q: %v", ErrInvalidInput, b, err)
		}
		if !blobBaseSchemes[u.Scheme] {
			return ExternalBlobPolicy{}, fmt.Errorf("%w: external blob base %q: the scheme must be one of s3, gs, az, https or http", ErrInvalidInput, b)
		}
		if u.Host == "" {
			return ExternalBlobPolicy{}, fmt.Errorf("%w: external blob base %q names no bucket or host", ErrInvalidInput, b)
		}
		p.bases = append(p.bases, blobBase{raw: b, scheme: u.Scheme, host: strings.ToLower(u.Host), path: dirPath(u.Path)})
	}
	return p, nil
}

// Bases are the policy's bases as given.
func (p ExternalBlobPolicy) Bases() []string {
	out := make([]string, len(p.bases))
	for i, b := range p.bases {
		out[i] = b.raw
	}
	return out
}

// Check is the one verdict on an external reference: nil when the policy
// allows uri, else an ErrInvalidInput error that says what to do.
func (p ExternalBlobPolicy) Check(uri string) error {
	if len(p.bases) == 0 {
		return fmt.Errorf("%w: external Blob references are not allowed on this graph (got %q); send the bytes as \"base64:<payload>\", or have the operator allow the URI's location (--external-blob-base)", ErrInvalidInput, uri)
	}
	u, err := parseBlobURI(uri)
	if err != nil {
		return fmt.Errorf("%w: external Blob reference %q: %v", ErrInvalidInput, uri, err)
	}
	host := strings.ToLower(u.Host)
	for _, b := range p.bases {
		if u.Scheme == b.scheme && host == b.host && strings.HasPrefix(u.Path, b.path) && len(u.Path) > len(b.path) {
			return nil
		}
	}
	return fmt.Errorf("%w: external Blob reference %q is outside the locations this graph allows (%s); send the bytes as \"base64:<payload>\" instead", ErrInvalidInput, uri, strings.Join(p.Bases(), ", "))
}

// parseBlobURI parses an absolute URI and refuses what could carry
// credentials or step out of a base.
func parseBlobURI(s string) (*url.URL, error) {
	if strings.ContainsAny(s, "?#\\") {
		return nil, fmt.Errorf("a query, fragment or backslash is not allowed")
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Opaque != "" || !strings.Contains(s, "://") {
		return nil, fmt.Errorf("not an absolute URI (scheme://host/path)")
	}
	if u.User != nil {
		return nil, fmt.Errorf("user info is not allowed (credentials never go into the graph)")
	}
	lower := strings.ToLower(u.EscapedPath())
	if strings.Contains(lower, "%2f") || strings.Contains(lower, "%5c") || strings.Contains(lower, "%2e") {
		return nil, fmt.Errorf("encoded slashes or dots are not allowed")
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if seg == "." || seg == ".." {
			return nil, fmt.Errorf("dot segments are not allowed")
		}
	}
	u.Scheme = strings.ToLower(u.Scheme)
	return u, nil
}

func dirPath(p string) string {
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	if !strings.HasSuffix(p, "/") {
		p += "/"
	}
	return p
}
