package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/omnigraph-go/omnigraph/backend"
	_ "github.com/omnigraph-go/omnigraph/backend/all" // every storage scheme
)

// Exit codes shared by every command.
const (
	exitOK       = 0
	exitError    = 1
	exitUsage    = 2
	exitConflict = 4 // a compare-and-swap the user asked for (--if-commit) lost
)

// app carries the streams of one CLI invocation, so tests can run the CLI
// in-process.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

// commandBuilders are the top-level commands; each command file registers
// its own in an init function.
var commandBuilders []func(*app) *cobra.Command

func register(build func(*app) *cobra.Command) {
	commandBuilders = append(commandBuilders, build)
}

// usageError marks bad invocations (exit 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// exitCodeError carries a specific exit code with its message.
type exitCodeError struct {
	code int
	err  error
}

func (e exitCodeError) Error() string { return e.err.Error() }
func (e exitCodeError) Unwrap() error { return e.err }

func newRootCmd(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:           "omnigraph",
		Short:         "A typed property-graph database that lives in an object store",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{err.Error() + " (see '" + c.CommandPath() + " --help')"}
	})
	for _, build := range commandBuilders {
		root.AddCommand(build(a))
	}
	return root
}

// run executes one CLI invocation and returns its exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr}
	root := newRootCmd(a)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(stderr, "error:", backend.Redact(err.Error()))
	var ue usageError
	var ce exitCodeError
	switch {
	case errors.As(err, &ce):
		return ce.code
	case errors.As(err, &ue), isCobraUsage(err):
		return exitUsage
	}
	return exitError
}

// isCobraUsage recognises cobra's own argument errors, which it returns
// unwrapped.
func isCobraUsage(err error) bool {
	m := err.Error()
	return strings.HasPrefix(m, "unknown command") || strings.HasPrefix(m, "accepts ") ||
		strings.HasPrefix(m, "requires at least") || strings.HasPrefix(m, "unknown flag") ||
		strings.Contains(m, "required flag(s)")
}
