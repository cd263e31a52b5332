package backend

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// Opener builds an adapter from a parsed storage URL. It must reject query
// parameters it does not understand (see CheckParams).
type Opener func(ctx context.Context, u *url.URL) (StorageAdapter, error)

var (
	regMu    sync.RWMutex
	registry = map[string]Opener{}
)

// Register makes a scheme available to Open. Registering a scheme twice is a
// programming error and panics.
func Register(scheme string, open Opener) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := registry[scheme]; dup {
		panic("backend: scheme registered twice: " + scheme)
	}
	registry[scheme] = open
}

// Schemes lists the registered schemes in order.
func Schemes() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	out := make([]string, 0, len(registry))
	for s := range registry {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// Open returns the adapter for a storage URL. A plain path (absolute or
// relative) means the local filesystem, as does file://. The backend packages
// register themselves; import package omnigraph/backend/all for every one.
func Open(ctx context.Context, raw string) (StorageAdapter, error) {
	u, err := ParseURL(raw)
	if err != nil {
		return nil, err
	}
	regMu.RLock()
	open, ok := registry[u.Scheme]
	regMu.RUnlock()
	if !ok {
		return nil, NewError("open", "", KindConfiguration,
			fmt.Errorf("unknown storage scheme %q; supported: %s (or a plain directory path)", u.Scheme, strings.Join(Schemes(), ", ")))
	}
	return open(ctx, u)
}

// ParseURL turns a storage URL or plain path into a URL. Plain paths become
// file:// URLs with an absolute path.
func ParseURL(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, NewError("open", "", KindConfiguration, fmt.Errorf("empty storage URL; give a directory path or a URL such as s3://bucket/prefix"))
	}
	if !strings.Contains(raw, "://") {
		abs, err := filepath.Abs(raw)
		if err != nil {
			return nil, NewError("open", "", KindConfiguration, err)
		}
		return &url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, NewError("open", "", KindConfiguration, fmt.Errorf("cannot parse storage URL %q: %v", Redact(raw), errorText(err)))
	}
	u.Scheme = strings.ToLower(u.Scheme)
	return u, nil
}

// errorText keeps url.Error from repeating the unredacted URL.
func errorText(err error) string {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err.Error()
	}
	return err.Error()
}

// CheckParams returns a Configuration error naming the first query parameter
// of u that is not in allowed, and listing the allowed ones.
func CheckParams(u *url.URL, allowed ...string) error {
	q := u.Query()
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		found := false
		for _, a := range allowed {
			if k == a {
				found = true
				break
			}
		}
		if !found {
			list := "none"
			if len(allowed) > 0 {
				list = strings.Join(allowed, ", ")
			}
			return NewError("open", "", KindConfiguration,
				fmt.Errorf("unknown parameter %q for %s:// URLs; supported parameters: %s", k, u.Scheme, list))
		}
	}
	return nil
}

// SplitBucketPrefix splits bucket-style URLs (s3://bucket/a/b) into the
// bucket and the key prefix ("a/b/", or "" for the bucket root).
func SplitBucketPrefix(u *url.URL) (bucket, prefix string, err error) {
	bucket = u.Host
	if bucket == "" {
		return "", "", NewError("open", "", KindConfiguration, fmt.Errorf("%s:// URL needs a bucket or container name, like %s://name/prefix", u.Scheme, u.Scheme))
	}
	prefix = strings.Trim(u.Path, "/")
	if prefix != "" {
		if err := ValidatePrefix(prefix); err != nil {
			return "", "", err
		}
		prefix += "/"
	}
	return bucket, prefix, nil
}
