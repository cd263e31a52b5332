package main

import (
	"context"
	"io"
	"log/slog"
	"os"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/logging"
	"github.com/omnigraph-go/omnigraph/backend/poison"
)

// cliLogLevel is the CLI's level when OMNIGRAPH_LOG_LEVEL is unset: a
// command already prints its error, so only what it would not say (a
// storage failure's class, an unknown outcome, a re-issued publish) is
// logged.
const cliLogLevel = "warn"

// newLogger is the CLI's structured logger (OMNIGRAPH_LOG_FORMAT=text|json,
// OMNIGRAPH_LOG_LEVEL) on w.
func newLogger(w io.Writer) (*slog.Logger, error) {
	level := os.Getenv(logging.EnvLevel)
	if level == "" {
		level = cliLogLevel
	}
	return logging.New(w, os.Getenv(logging.EnvFormat), level)
}

type loggerKey struct{}

func withLogger(ctx context.Context, log *slog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, log)
}

// loggerFrom is the invocation's logger (slog's default outside run).
func loggerFrom(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok {
		return l
	}
	return slog.Default()
}

// wrapStore puts the process's storage policy around a store the CLI
// opened: writes to a key whose earlier write had an unknown outcome are
// refused (seed 001, reused-key poisoning), and every failed request is
// logged by class, never by text or key.
func wrapStore(ctx context.Context, s backend.StorageAdapter) backend.StorageAdapter {
	return logging.Wrap(poison.Wrap(s), loggerFrom(ctx))
}
