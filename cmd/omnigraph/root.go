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
	"github.com/omnigraph-go/omnigraph/client"
)

// Exit codes shared by every command.
const (
	exitOK       = 0
	exitError    = 1
	exitUsage    = 2
	exitConflict = 4 // a compare-and-swap the user asked for (--if-commit) lost
	// exitConfiguration: the store definitely refused its configuration (a
	// bad bucket name, a missing bucket or container, refused or missing
	// credentials). Running the command again will not help; fixing the
	// URL or the credentials will. For serve it is not exit 2, the code an
	// orchestrator restarts on, so a typo does not become a crash loop.
	exitConfiguration = 8
)

// configurationHint ends the message of an exitConfiguration failure: what
// to fix, since a retry will not.
const configurationHint = "the store refused the configuration, which a retry will not change: check the store URL (its bucket or container name and parameters), that the bucket or container exists, and the credentials for its scheme (see docs/storage.md), then run the command again"

// isConfiguration reports whether err is a definite configuration refusal
// of the store (exitConfiguration).
func isConfiguration(err error) bool {
	if backend.KindOf(err) == backend.KindConfiguration {
		return true
	}
	var ce checkError
	return errors.As(err, &ce) && ce.code == "storage_credentials"
}

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

// usageError marks bad invocations (exit 2). Hint, when set, says where
// to look (the command's --help).
type usageError struct{ msg, hint string }

func (e usageError) Error() string {
	if e.hint == "" {
		return e.msg
	}
	return e.msg + " (" + e.hint + ")"
}

func usagef(format string, args ...any) error { return usageError{msg: fmt.Sprintf(format, args...)} }

// seeHelp is the hint of a usage error of command c.
func seeHelp(c *cobra.Command) string { return "see '" + c.CommandPath() + " --help'" }

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
		// --version prints what 'omnigraph version' prints.
		Version: cliVersion(),
	}
	root.SetVersionTemplate("omnigraph {{.Version}}\n")
	root.InitDefaultVersionFlag()
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{msg: err.Error(), hint: seeHelp(c)}
	})
	for _, build := range commandBuilders {
		root.AddCommand(build(a))
	}
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	storePositional(root)
	usageEverywhere(root)
	return root
}

// usageEverywhere makes every bad invocation of every command a usage error
// (exit 2): argument-count errors, a group command run without (or with an
// unknown) subcommand, and "help" of an unknown command.
func usageEverywhere(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Args != nil {
			check := c.Args
			c.Args = func(c *cobra.Command, args []string) error {
				err := check(c, args)
				var ue usageError
				if err != nil && !errors.As(err, &ue) {
					return usageError{msg: err.Error(), hint: seeHelp(c)}
				}
				return err
			}
		}
		// A group command is never runnable itself: its message lists
		// the subcommands registered, so a new one cannot be left out (a
		// hand-written RunE of a group is replaced).
		if c != root && c.HasSubCommands() {
			c.Args = cobra.ArbitraryArgs
			c.RunE = func(c *cobra.Command, args []string) error {
				names := subcommandNames(c)
				if len(args) > 0 {
					return usageError{msg: fmt.Sprintf("unknown command %q for %q; use one of %s", args[0], c.CommandPath(), strings.Join(names, ", ")), hint: seeHelp(c)}
				}
				return usageError{msg: fmt.Sprintf("%s needs a subcommand: %s", c.CommandPath(), strings.Join(names, ", ")), hint: seeHelp(c)}
			}
		}
		if c.Name() == "help" && c.Parent() == root && c.Run != nil {
			show := c.Run
			c.Run = nil
			c.RunE = func(c *cobra.Command, args []string) error {
				if t, _, err := root.Find(args); t == nil || err != nil {
					return usageError{msg: fmt.Sprintf("no help for %q: there is no such command", strings.Join(args, " ")), hint: "see 'omnigraph --help'"}
				}
				show(c, args)
				return nil
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// subcommandNames lists the subcommands of c a user can run, in cobra's
// order (by name).
func subcommandNames(c *cobra.Command) []string {
	var names []string
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() {
			names = append(names, sub.Name())
		}
	}
	return names
}

// run executes one CLI invocation and returns its exit code. The error goes
// to stderr: as "error: MESSAGE", or, when the invocation asked for JSON
// (--json, or --format json|jsonl), as one line
// {"error":{"code":...,"message":...,"hint":...}}.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	log, err := newLogger(stderr)
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return exitUsage
	}
	ctx = withLogger(ctx, log)
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr}
	root := newRootCmd(a)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	code := exitCodeOf(err)
	var said checkError // storage check's and init's own words say what to set
	if code == exitConfiguration && !errors.As(err, &said) && !strings.Contains(err.Error(), configurationHint) {
		err = fmt.Errorf("%w; %s", err, configurationHint)
	}
	if wantsJSON(cmd, args) {
		writeJSONError(stderr, err, code)
	} else {
		fmt.Fprintln(stderr, "error:", backend.Redact(err.Error()))
	}
	return code
}

// exitCodeOf maps an error to the exit code table of docs/cli.md.
func exitCodeOf(err error) int {
	var ue usageError
	var ce exitCodeError
	switch {
	case errors.As(err, &ce):
		return ce.code
	case errors.As(err, &ue), isCobraUsage(err):
		return exitUsage
	case errors.Is(err, client.ErrUnreachable):
		// Also where a command reached the client without remoteErr.
		return exitUnreachable
	case isConfiguration(err):
		return exitConfiguration
	}
	return exitError
}

// isCobraUsage recognises cobra's own invocation errors that no hook sees:
// an unknown top-level command and a missing required flag.
func isCobraUsage(err error) bool {
	m := err.Error()
	return strings.HasPrefix(m, "unknown command") || strings.Contains(m, "required flag(s)")
}

// storePositional lets every command that takes --store and a fixed number
// of arguments take the store as one more, last argument, as init and load
// do (`omnigraph snapshot ./g`, `omnigraph branch create NAME ./g`). A
// command whose argument count varies (query and mutate take a stored
// query's NAME) keeps --store only, or reads the positional itself.
func storePositional(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if c.Flags().Lookup("store") == nil || c.Args == nil || c.RunE == nil {
			return
		}
		n, fixed := fixedArity(c)
		if !fixed {
			return
		}
		check, runE := c.Args, c.RunE
		c.Args = func(c *cobra.Command, args []string) error {
			if len(args) != n+1 {
				return check(c, args)
			}
			if c.Flags().Changed("store") {
				return usagef("give the graph location once: either URL or --store URL")
			}
			if f := c.Flags().Lookup("server"); f != nil && f.Changed {
				return usagef("%q would be the store, but --server goes through a server: give one of them", args[n])
			}
			return nil
		}
		c.RunE = func(c *cobra.Command, args []string) error {
			if len(args) == n+1 {
				if err := c.Flags().Set("store", args[n]); err != nil {
					return err
				}
				args = args[:n]
			}
			return runE(c, args)
		}
	}
	walk(root)
}

// fixedArity is the one argument count c's validator accepts, if it
// accepts exactly one of 0..6.
func fixedArity(c *cobra.Command) (int, bool) {
	n, count := 0, 0
	for k := 0; k <= 6; k++ {
		if c.Args(c, make([]string, k)) == nil {
			n, count = k, count+1
		}
	}
	return n, count == 1
}
