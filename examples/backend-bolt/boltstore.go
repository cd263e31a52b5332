// Package boltstore is an example out-of-tree OmniGraph backend: a
// backend.StorageAdapter over one bbolt file. It lives in its own module,
// registers the scheme "bolt" from its init, and proves itself with the
// conformance suite in a few lines (boltstore_test.go). docs/backends.md
// walks through it.
//
// A program uses it by importing it for its side effect:
//
//	import _ "example.com/omnigraph-bolt"
//
//	store, err := backend.Open(ctx, "bolt:///var/lib/graphs/store.db")
//
// Every object lives in one bbolt bucket under its key. A value is an 8-byte
// version (the bucket's sequence, so every write gets a new one), an 8-byte
// modification time in Unix nanoseconds, and the object's bytes. bbolt runs
// one read-write transaction at a time, so PutIfAbsent and PutIfMatch
// compare and write inside one transaction: the condition is the store's
// own, not a check followed by a write.
package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// Scheme is the URL scheme this package registers: bolt:///abs/path/file.db.
const Scheme = "bolt"

var _ backend.StorageAdapter = (*Store)(nil)

func init() {
	backend.Register(Scheme, func(ctx context.Context, u *url.URL) (backend.StorageAdapter, error) {
		if err := backend.CheckParams(u); err != nil {
			return nil, err
		}
		if u.Host != "" || u.Path == "" {
			return nil, backend.NewError("open", "", backend.KindConfiguration,
				errors.New("a bolt URL names a file by absolute path: bolt:///path/to/store.db"))
		}
		return Open(ctx, filepath.FromSlash(u.Path))
	})
}

var bucket = []byte("objects")

const header = 16 // version, mod time

// Store is a StorageAdapter over one bbolt file.
type Store struct {
	db   *bolt.DB
	path string
}

// Open opens (creating if needed) the bbolt file at path. Two Opens of one
// path in a process share the file; another process waits up to a second
// for bbolt's file lock, then fails with a Configuration error.
func Open(ctx context.Context, path string) (*Store, error) {
	if err := ctx.Err(); err != nil {
		return nil, backend.NewError("open", "", backend.KindTransient, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, backend.NewError("open", "", backend.KindConfiguration, err)
	}
	db, err := shared.open(abs)
	if err != nil {
		return nil, classify("open", "", err)
	}
	return &Store{db: db, path: abs}, nil
}

// files shares one *bolt.DB per path within the process: bbolt locks the
// file, so a second bolt.Open of it would wait for the first to close.
type files struct {
	mu   sync.Mutex
	dbs  map[string]*bolt.DB
	refs map[string]int
}

var shared = files{dbs: map[string]*bolt.DB{}, refs: map[string]int{}}

func (f *files) open(path string) (*bolt.DB, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if db, ok := f.dbs[path]; ok {
		f.refs[path]++
		return db, nil
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return nil, err
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucket)
		return err
	}); err != nil {
		_ = db.Close()
		return nil, err
	}
	f.dbs[path], f.refs[path] = db, 1
	return db, nil
}

func (f *files) close(path string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refs[path]--
	if f.refs[path] > 0 {
		return nil
	}
	db := f.dbs[path]
	delete(f.dbs, path)
	delete(f.refs, path)
	return db.Close()
}

// classify is the one place a bbolt or OS error becomes a backend kind.
func classify(op, key string, err error) error {
	var be *backend.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &be):
		return err
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		// Checked before the transaction wrote anything: nothing happened.
		return backend.NewError(op, key, backend.KindTransient, err)
	case errors.Is(err, bolterrors.ErrTimeout):
		return backend.NewError(op, key, backend.KindConfiguration, errors.New("the bolt file is locked by another process"))
	case errors.Is(err, bolterrors.ErrDatabaseReadOnly), errors.Is(err, fs.ErrPermission),
		errors.Is(err, syscall.EROFS), errors.Is(err, syscall.ENOSPC):
		return backend.NewError(op, key, backend.KindConfiguration, errno(err))
	case errors.Is(err, bolterrors.ErrDatabaseNotOpen), errors.Is(err, bolterrors.ErrInvalid):
		return backend.NewError(op, key, backend.KindPermanent, err)
	}
	return backend.NewError(op, key, backend.KindUnknown, errno(err))
}

// errno keeps only the errno of an OS error, never the file's path.
func errno(err error) error {
	var en syscall.Errno
	if errors.As(err, &en) {
		return en
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

type object struct {
	version uint64
	mod     time.Time
	data    []byte
}

func decode(v []byte) object {
	return object{
		version: binary.BigEndian.Uint64(v[:8]),
		mod:     time.Unix(0, int64(binary.BigEndian.Uint64(v[8:16]))),
		data:    v[header:],
	}
}

func (o object) attrs(key string) backend.Attrs {
	return backend.Attrs{Key: key, Size: int64(len(o.data)), Version: strconv.FormatUint(o.version, 10), ModTime: o.mod}
}

// start refuses a cancelled context and an invalid key before any work.
func start(ctx context.Context, op, key string) error {
	if err := ctx.Err(); err != nil {
		return backend.NewError(op, key, backend.KindTransient, err)
	}
	return backend.ValidateKey(key)
}

// view runs fn in a read transaction.
func (s *Store) view(ctx context.Context, op, key string, fn func(b *bolt.Bucket) error) error {
	if err := start(ctx, op, key); err != nil {
		return err
	}
	return classify(op, key, s.db.View(func(tx *bolt.Tx) error { return fn(tx.Bucket(bucket)) }))
}

// write runs fn in a read-write transaction. The context is checked again
// once the transaction holds bbolt's writer lock (a caller that gave up
// while waiting for it writes nothing); after that the write commits whole
// or not at all.
func (s *Store) write(ctx context.Context, op, key string, fn func(b *bolt.Bucket) error) error {
	if err := start(ctx, op, key); err != nil {
		return err
	}
	return classify(op, key, s.db.Update(func(tx *bolt.Tx) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		return fn(tx.Bucket(bucket))
	}))
}

// store writes data under key with the bucket's next sequence as version.
func store(b *bolt.Bucket, key string, data []byte) (backend.Attrs, error) {
	seq, err := b.NextSequence()
	if err != nil {
		return backend.Attrs{}, err
	}
	o := object{version: seq, mod: time.Now(), data: data}
	v := make([]byte, header+len(data))
	binary.BigEndian.PutUint64(v[:8], o.version)
	binary.BigEndian.PutUint64(v[8:16], uint64(o.mod.UnixNano()))
	copy(v[header:], data)
	return o.attrs(key), b.Put([]byte(key), v)
}

// Get implements backend.StorageAdapter.
func (s *Store) Get(ctx context.Context, key string) ([]byte, backend.Attrs, error) {
	var data []byte
	var a backend.Attrs
	err := s.view(ctx, "get", key, func(b *bolt.Bucket) error {
		v := b.Get([]byte(key))
		if v == nil {
			return backend.NewError("get", key, backend.KindNotFound, nil)
		}
		o := decode(v)
		data, a = bytes.Clone(o.data), o.attrs(key) // bbolt's memory is valid only inside the transaction
		if data == nil {
			data = []byte{}
		}
		return nil
	})
	return data, a, err
}

// GetRange implements backend.StorageAdapter.
func (s *Store) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	var data []byte
	err := s.view(ctx, "get-range", key, func(b *bolt.Bucket) error {
		v := b.Get([]byte(key))
		if v == nil {
			return backend.NewError("get-range", key, backend.KindNotFound, nil)
		}
		data = backend.SliceRange(decode(v).data, offset, length)
		return nil
	})
	return data, err
}

// Stat implements backend.StorageAdapter.
func (s *Store) Stat(ctx context.Context, key string) (backend.Attrs, error) {
	var a backend.Attrs
	err := s.view(ctx, "stat", key, func(b *bolt.Bucket) error {
		v := b.Get([]byte(key))
		if v == nil {
			return backend.NewError("stat", key, backend.KindNotFound, nil)
		}
		a = decode(v).attrs(key)
		return nil
	})
	return a, err
}

// Put implements backend.StorageAdapter.
func (s *Store) Put(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	var a backend.Attrs
	err := s.write(ctx, "put", key, func(b *bolt.Bucket) (err error) {
		a, err = store(b, key, data)
		return err
	})
	return a, err
}

// PutIfAbsent implements backend.StorageAdapter: the check and the write
// are one transaction.
func (s *Store) PutIfAbsent(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	var a backend.Attrs
	err := s.write(ctx, "put-if-absent", key, func(b *bolt.Bucket) (err error) {
		if b.Get([]byte(key)) != nil {
			return backend.NewError("put-if-absent", key, backend.KindPrecondition, nil)
		}
		a, err = store(b, key, data)
		return err
	})
	return a, err
}

// PutIfMatch implements backend.StorageAdapter: the compare and the write
// are one transaction.
func (s *Store) PutIfMatch(ctx context.Context, key string, data []byte, version string) (backend.Attrs, error) {
	var a backend.Attrs
	err := s.write(ctx, "put-if-match", key, func(b *bolt.Bucket) (err error) {
		v := b.Get([]byte(key))
		if v == nil {
			return backend.MatchMissing("put-if-match", key)
		}
		if strconv.FormatUint(decode(v).version, 10) != version {
			return backend.NewError("put-if-match", key, backend.KindPrecondition, nil)
		}
		a, err = store(b, key, data)
		return err
	})
	return a, err
}

// List implements backend.StorageAdapter. bbolt keeps keys in byte order,
// which is the order List promises.
func (s *Store) List(ctx context.Context, prefix string, opts backend.ListOptions) (backend.ListPage, error) {
	if err := ctx.Err(); err != nil {
		return backend.ListPage{}, backend.NewError("list", prefix, backend.KindTransient, err)
	}
	if err := backend.ValidatePrefix(prefix); err != nil {
		return backend.ListPage{}, err
	}
	max := opts.MaxKeys
	if max <= 0 {
		max = backend.DefaultPageSize
	}
	var page backend.ListPage
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucket).Cursor()
		k, v := c.Seek([]byte(prefix))
		if opts.StartAfter >= prefix {
			k, v = c.Seek([]byte(opts.StartAfter))
			if k != nil && string(k) == opts.StartAfter {
				k, v = c.Next()
			}
		}
		for ; k != nil && bytes.HasPrefix(k, []byte(prefix)); k, v = c.Next() {
			if len(page.Objects) == max {
				page.Truncated = true
				break
			}
			page.Objects = append(page.Objects, decode(v).attrs(string(k)))
		}
		return nil
	})
	return page, classify("list", prefix, err)
}

// Exists implements backend.StorageAdapter: an object, or any key below
// key + "/".
func (s *Store) Exists(ctx context.Context, key string) (bool, error) {
	var ok bool
	err := s.view(ctx, "exists", key, func(b *bolt.Bucket) error {
		if b.Get([]byte(key)) != nil {
			ok = true
			return nil
		}
		dir := []byte(key + "/")
		k, _ := b.Cursor().Seek(dir)
		ok = k != nil && bytes.HasPrefix(k, dir)
		return nil
	})
	return ok, err
}

// Delete implements backend.StorageAdapter; a missing key succeeds.
func (s *Store) Delete(ctx context.Context, key string) error {
	return s.write(ctx, "delete", key, func(b *bolt.Bucket) error { return b.Delete([]byte(key)) })
}

// DeletePrefix implements backend.StorageAdapter, in one transaction.
func (s *Store) DeletePrefix(ctx context.Context, prefix string) error {
	if err := ctx.Err(); err != nil {
		return backend.NewError("delete-prefix", prefix, backend.KindTransient, err)
	}
	if err := backend.ValidatePrefix(prefix); err != nil {
		return err
	}
	return classify("delete-prefix", prefix, s.db.Update(func(tx *bolt.Tx) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		c := tx.Bucket(bucket).Cursor()
		for k, _ := c.Seek([]byte(prefix)); k != nil && bytes.HasPrefix(k, []byte(prefix)); k, _ = c.Seek([]byte(prefix)) {
			if err := c.Delete(); err != nil {
				return err
			}
		}
		return nil
	}))
}

// Capabilities implements backend.StorageAdapter. Keys are flat, so k and
// k/child coexist; the version is a per-file sequence, new on every write.
func (s *Store) Capabilities() backend.Capabilities {
	return backend.Capabilities{ConditionalCreate: true, ConditionalUpdate: true, KeyAndChildCoexist: true, VersionPerWrite: true}
}

// Close implements backend.StorageAdapter; the file closes with its last
// Store.
func (s *Store) Close() error {
	if err := shared.close(s.path); err != nil {
		return classify("close", "", err)
	}
	return nil
}

// String names the store without its path.
func (s *Store) String() string { return fmt.Sprintf("%s store", Scheme) }
