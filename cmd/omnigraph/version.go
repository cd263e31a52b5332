package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/omnigraph-go/omnigraph/internal/buildinfo"
	"github.com/omnigraph-go/omnigraph/server"
)

// cliVersion is this binary's build in one line (buildinfo): what the
// lock records (binary_version) and the server's logs show.
func cliVersion() string { return buildinfo.Read().String() }

func init() {
	register(func(a *app) *cobra.Command {
		var asJSON bool
		c := &cobra.Command{
			Use:   "version [--json]",
			Short: "Print the module version, VCS revision, build date and Go version of this binary",
			Long: "Print which build of omnigraph this is: the module version (a release, or (devel) for a\n" +
				"build from a checkout), the VCS revision it was built from (and whether the tree had\n" +
				"uncommitted changes), when it was built (make build records it; otherwise the commit's\n" +
				"time) and the Go toolchain. 'omnigraph --version' prints the same line.",
			Args: cobra.NoArgs,
			RunE: func(c *cobra.Command, args []string) error {
				in := buildinfo.Read()
				if asJSON {
					return writeJSON(a.stdout, server.BuildOutput(in))
				}
				_, err := fmt.Fprintf(a.stdout, "omnigraph %s\n", in)
				return err
			},
		}
		c.Flags().BoolVar(&asJSON, "json", false, "print {version, revision, modified, build_date, commit_date, go_version}")
		return c
	})
}
