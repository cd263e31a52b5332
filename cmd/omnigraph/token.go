package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/omnigraph-go/omnigraph/server"
)

func init() {
	register(func(a *app) *cobra.Command {
		c := &cobra.Command{
			Use:   "token",
			Short: "Manage the server's bearer tokens file",
			Args:  cobra.NoArgs,
		}
		var file string
		add := &cobra.Command{
			Use:   "add ACTOR --tokens FILE",
			Short: "Create a bearer secret for ACTOR; print it once and store only its hash",
			Long: "Generate a random 32-byte secret for ACTOR, store its SHA-256 in the tokens\n" +
				"file (created if absent, mode 0600; an existing secret of ACTOR is replaced)\n" +
				"and print the secret on stdout. It is printed only this once: the file holds\n" +
				"only its hash. Restart the server to pick up the change.",
			Args: cobra.ExactArgs(1),
			RunE: func(c *cobra.Command, args []string) error {
				if file == "" {
					return usagef("--tokens FILE is required")
				}
				f := &server.TokensFile{Version: server.TokensFormat, Tokens: []server.TokenEntry{}}
				b, err := os.ReadFile(file)
				switch {
				case err == nil:
					if f, err = server.ParseTokens(b); err != nil {
						return err
					}
				case errors.Is(err, fs.ErrNotExist):
				default:
					return fmt.Errorf("read the tokens file: %w", err)
				}
				secret, err := f.Add(args[0], time.Now())
				if err != nil {
					return usageError{msg: err.Error()}
				}
				// Written beside the file, fsynced, then renamed: a crash leaves
				// the old file or the new one, never an empty one.
				if err := writeFileAtomic(file, f.Encode(), 0o600); err != nil {
					return fmt.Errorf("store the tokens file: %w", err)
				}
				fmt.Fprintln(a.stdout, secret)
				fmt.Fprintf(a.stderr, "stored the hash of a new secret for %s in %s; the secret above is not stored anywhere: keep it now\n", args[0], file)
				return nil
			},
		}
		add.Flags().StringVar(&file, "tokens", "", "the tokens file (required)")
		c.AddCommand(add)
		return c
	})
}
