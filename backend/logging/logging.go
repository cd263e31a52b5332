// Package logging gives OmniGraph its structured logs (log/slog): a
// constructor that reads the format and level from the environment, and a
// StorageAdapter wrapper that logs every failed storage request.
//
// A storage-failure log line carries the request's operation, the failure
// class (backend.Kind), the HTTP status the store answered (when it
// answered one), and whether its uncertainty is scoped to the request's own
// keys. It never carries an error's message, a storage key or path, or
// credentials: error texts can name all three.
package logging

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
)

// Environment variables read by FromEnv.
const (
	// EnvFormat selects the line format: "text" (the default) or "json".
	EnvFormat = "OMNIGRAPH_LOG_FORMAT"
	// EnvLevel selects the lowest level logged: debug, info (the default),
	// warn or error.
	EnvLevel = "OMNIGRAPH_LOG_LEVEL"
)

// New returns a logger writing to w in format ("json" or "text"; empty:
// text) at level ("debug", "info", "warn", "error"; empty: info).
func New(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	switch strings.ToLower(strings.TrimSpace(level)) {
	case "", "info":
		lv = slog.LevelInfo
	case "debug":
		lv = slog.LevelDebug
	case "warn", "warning":
		lv = slog.LevelWarn
	case "error":
		lv = slog.LevelError
	default:
		return nil, fmt.Errorf("%s=%q: want debug, info, warn or error", EnvLevel, level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(strings.TrimSpace(format)) {
	case "", "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("%s=%q: want json or text", EnvFormat, format)
}

// FromEnv is New with the format and level from OMNIGRAPH_LOG_FORMAT and
// OMNIGRAPH_LOG_LEVEL. The CLI (and later the server) calls it once at
// start, installs the result with slog.SetDefault (the manifest store's
// publish events go to slog.Default()) and wraps each store with Wrap.
func FromEnv(w io.Writer) (*slog.Logger, error) {
	return New(w, os.Getenv(EnvFormat), os.Getenv(EnvLevel))
}

// Attrs are the attributes of a storage-failure log line for err: the
// failure class, the HTTP status the store answered (backend.StoreStatus;
// absent when the request got no HTTP answer: a transport failure, a local
// store, a refusal before sending), whether the outcome is definite and
// whether its uncertainty is scoped to the request's own keys. Nothing else
// of err is used. The status is the store's own (a missing S3 bucket is
// configuration with status 404), never one derived from the class.
func Attrs(err error, scoped bool) []any {
	k := backend.KindOf(err)
	out := []any{"failure_class", k.String()}
	if st := backend.StoreStatus(err); st != 0 {
		out = append(out, "status", st)
	}
	return append(out, "definite", k != backend.KindUnknown, "scoped", scoped)
}

// level is how loud a failure of kind k is: a missing key and a lost
// condition are ordinary answers (debug), an unknown outcome is an error,
// the rest warnings.
func level(k backend.Kind) slog.Level {
	switch k {
	case backend.KindNotFound, backend.KindPrecondition:
		return slog.LevelDebug
	case backend.KindUnknown:
		return slog.LevelError
	}
	return slog.LevelWarn
}

// Wrap returns s with every failed request logged to log (nil:
// slog.Default() at each failure) as "storage request failed", with op,
// failure_class, status (the store's, when it answered one), definite and
// scoped (always true: a request's effect is confined to the keys it
// names).
func Wrap(s backend.StorageAdapter, log *slog.Logger) backend.StorageAdapter {
	return &Store{inner: s, log: log}
}

// Store is the logging wrapper.
type Store struct {
	inner backend.StorageAdapter
	log   *slog.Logger
}

var _ backend.StorageAdapter = (*Store)(nil)

// Unwrap returns the wrapped adapter.
func (s *Store) Unwrap() backend.StorageAdapter { return s.inner }

func (s *Store) note(ctx context.Context, op string, err error) {
	if err == nil {
		return
	}
	log := s.log
	if log == nil {
		log = slog.Default()
	}
	k := backend.KindOf(err)
	log.Log(ctx, level(k), "storage request failed", append([]any{"op", op}, Attrs(err, true)...)...)
}

// Get implements backend.StorageAdapter.
func (s *Store) Get(ctx context.Context, key string) ([]byte, backend.Attrs, error) {
	b, a, err := s.inner.Get(ctx, key)
	s.note(ctx, "get", err)
	return b, a, err
}

// GetRange implements backend.StorageAdapter.
func (s *Store) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	b, err := s.inner.GetRange(ctx, key, offset, length)
	s.note(ctx, "get_range", err)
	return b, err
}

// Stat implements backend.StorageAdapter.
func (s *Store) Stat(ctx context.Context, key string) (backend.Attrs, error) {
	a, err := s.inner.Stat(ctx, key)
	s.note(ctx, "stat", err)
	return a, err
}

// Put implements backend.StorageAdapter.
func (s *Store) Put(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	a, err := s.inner.Put(ctx, key, data)
	s.note(ctx, "put", err)
	return a, err
}

// PutIfAbsent implements backend.StorageAdapter.
func (s *Store) PutIfAbsent(ctx context.Context, key string, data []byte) (backend.Attrs, error) {
	a, err := s.inner.PutIfAbsent(ctx, key, data)
	s.note(ctx, "put_if_absent", err)
	return a, err
}

// PutIfMatch implements backend.StorageAdapter.
func (s *Store) PutIfMatch(ctx context.Context, key string, data []byte, version string) (backend.Attrs, error) {
	a, err := s.inner.PutIfMatch(ctx, key, data, version)
	s.note(ctx, "put_if_match", err)
	return a, err
}

// List implements backend.StorageAdapter.
func (s *Store) List(ctx context.Context, prefix string, opts backend.ListOptions) (backend.ListPage, error) {
	p, err := s.inner.List(ctx, prefix, opts)
	s.note(ctx, "list", err)
	return p, err
}

// Exists implements backend.StorageAdapter.
func (s *Store) Exists(ctx context.Context, key string) (bool, error) {
	ok, err := s.inner.Exists(ctx, key)
	s.note(ctx, "exists", err)
	return ok, err
}

// Delete implements backend.StorageAdapter.
func (s *Store) Delete(ctx context.Context, key string) error {
	err := s.inner.Delete(ctx, key)
	s.note(ctx, "delete", err)
	return err
}

// DeletePrefix implements backend.StorageAdapter.
func (s *Store) DeletePrefix(ctx context.Context, prefix string) error {
	err := s.inner.DeletePrefix(ctx, prefix)
	s.note(ctx, "delete_prefix", err)
	return err
}

var _ backend.TempSweeper = (*Store)(nil)

// SweepTemp implements backend.TempSweeper.
func (s *Store) SweepTemp(ctx context.Context, prefix string, olderThan time.Time, dryRun bool) (backend.TempSwept, bool, error) {
	res, ok, err := backend.SweepTempBelow(ctx, s.inner, prefix, olderThan, dryRun)
	s.note(ctx, "sweep_temp", err)
	return res, ok, err
}

// Capabilities implements backend.StorageAdapter.
func (s *Store) Capabilities() backend.Capabilities { return s.inner.Capabilities() }

// Close implements backend.StorageAdapter.
func (s *Store) Close() error {
	err := s.inner.Close()
	s.note(context.Background(), "close", err)
	return err
}
