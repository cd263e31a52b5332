// Command omnigraph is the CLI over any storage URL: a plain directory,
// file://, mem://, s3://, gs:// or az://.
package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	os.Exit(cliMain(os.Args[1:]))
}

// cliMain runs the CLI as a process: Ctrl-C (SIGINT) and SIGTERM cancel the
// command's context, so a write settles or aborts and its cluster lock is
// released (on a fresh context) before the process exits. A second signal
// after the first is handled by the default action again, so a stuck
// command can still be interrupted.
func cliMain(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // restore the default action for a second signal
	}()
	// The engine's own events (the manifest store's re-issues) go to
	// slog's default logger: in the binary, the CLI's.
	if log, err := newLogger(os.Stderr); err == nil {
		slog.SetDefault(log)
	}
	defer startProfiles(os.Stderr)()
	return run(ctx, args, os.Stdin, os.Stdout, os.Stderr)
}
