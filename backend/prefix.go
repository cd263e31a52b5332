package backend

import (
	"context"
	"strings"
)

// WithPrefix returns an adapter that stores every key under prefix (which
// ends in "/") in inner. Keys handed back by List are relative again. Graph
// URLs such as s3://bucket/graphs/g use it so a graph sees keys from its root.
func WithPrefix(inner StorageAdapter, prefix string) StorageAdapter {
	if prefix == "" {
		return inner
	}
	return &prefixed{inner: inner, prefix: prefix}
}

var _ StorageAdapter = (*prefixed)(nil)

type prefixed struct {
	inner  StorageAdapter
	prefix string
}

// Unwrap returns the adapter below the prefix.
func (p *prefixed) Unwrap() StorageAdapter { return p.inner }

func (p *prefixed) strip(a Attrs) Attrs {
	a.Key = strings.TrimPrefix(a.Key, p.prefix)
	return a
}

func (p *prefixed) Get(ctx context.Context, key string) ([]byte, Attrs, error) {
	if err := ValidateKey(key); err != nil {
		return nil, Attrs{}, err
	}
	b, a, err := p.inner.Get(ctx, p.prefix+key)
	return b, p.strip(a), err
}

func (p *prefixed) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	return p.inner.GetRange(ctx, p.prefix+key, off, n)
}

func (p *prefixed) Stat(ctx context.Context, key string) (Attrs, error) {
	if err := ValidateKey(key); err != nil {
		return Attrs{}, err
	}
	a, err := p.inner.Stat(ctx, p.prefix+key)
	return p.strip(a), err
}

func (p *prefixed) Put(ctx context.Context, key string, data []byte) (Attrs, error) {
	if err := ValidateKey(key); err != nil {
		return Attrs{}, err
	}
	a, err := p.inner.Put(ctx, p.prefix+key, data)
	return p.strip(a), err
}

func (p *prefixed) PutIfAbsent(ctx context.Context, key string, data []byte) (Attrs, error) {
	if err := ValidateKey(key); err != nil {
		return Attrs{}, err
	}
	a, err := p.inner.PutIfAbsent(ctx, p.prefix+key, data)
	return p.strip(a), err
}

func (p *prefixed) PutIfMatch(ctx context.Context, key string, data []byte, version string) (Attrs, error) {
	if err := ValidateKey(key); err != nil {
		return Attrs{}, err
	}
	a, err := p.inner.PutIfMatch(ctx, p.prefix+key, data, version)
	return p.strip(a), err
}

func (p *prefixed) List(ctx context.Context, prefix string, opts ListOptions) (ListPage, error) {
	if err := ValidatePrefix(prefix); err != nil {
		return ListPage{}, err
	}
	if opts.StartAfter != "" {
		opts.StartAfter = p.prefix + opts.StartAfter
	}
	page, err := p.inner.List(ctx, p.prefix+prefix, opts)
	for i := range page.Objects {
		page.Objects[i] = p.strip(page.Objects[i])
	}
	return page, err
}

func (p *prefixed) Exists(ctx context.Context, key string) (bool, error) {
	if err := ValidateKey(key); err != nil {
		return false, err
	}
	return p.inner.Exists(ctx, p.prefix+key)
}

func (p *prefixed) Delete(ctx context.Context, key string) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	return p.inner.Delete(ctx, p.prefix+key)
}

func (p *prefixed) DeletePrefix(ctx context.Context, prefix string) error {
	if err := ValidatePrefix(prefix); err != nil {
		return err
	}
	return p.inner.DeletePrefix(ctx, p.prefix+prefix)
}

func (p *prefixed) Capabilities() Capabilities { return p.inner.Capabilities() }
func (p *prefixed) Close() error               { return p.inner.Close() }
