package main

import (
	"github.com/spf13/cobra"

	"github.com/omnigraph-go/omnigraph/server"
)

func init() {
	register(func(a *app) *cobra.Command {
		var open bool
		c := &cobra.Command{
			Use:   "openapi [--open]",
			Short: "Print the OpenAPI document of the server's HTTP API",
			Long: "Print the OpenAPI 3.1 document that 'omnigraph serve' answers at GET /openapi.json,\n" +
				"built from the same route table the server mounts. It is what a server with a\n" +
				"--tokens file serves (bearer auth on every route but /healthz and /openapi.json);\n" +
				"--open prints what an open-mode server (no tokens) serves instead. Generate a\n" +
				"client for another language from it (sdk/typescript is generated from it).",
			Args: cobra.NoArgs,
			RunE: func(c *cobra.Command, args []string) error {
				return writeJSON(a.stdout, server.OpenAPI(!open))
			},
		}
		c.Flags().BoolVar(&open, "open", false, "the document of an open-mode server (no security scheme)")
		return c
	})
}
