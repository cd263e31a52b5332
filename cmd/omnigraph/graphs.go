package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// graphs list: the graphs a server serves (GET /graphs), those the token
// may read.

func init() {
	register(func(a *app) *cobra.Command {
		c := &cobra.Command{
			Use:   "graphs",
			Short: "The graphs a server serves",
		}
		c.AddCommand(graphsListCmd(a))
		return c
	})
}

func graphsListCmd(a *app) *cobra.Command {
	var t graphTarget
	c := &cobra.Command{
		Use:   "list --server URL [--token T] [--json]",
		Short: "List the graphs of a server that your token may read (GET /graphs)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if t.server == "" {
				return usagef("--server URL is required: graphs are what a server serves (a store holds one graph)")
			}
			cl, err := t.serverClient()
			if err != nil {
				return err
			}
			out, err := cl.Graphs(c.Context())
			if err != nil {
				return t.remoteErr(err)
			}
			if t.json {
				return writeJSON(a.stdout, out)
			}
			for _, g := range out.Graphs {
				fmt.Fprintln(a.stdout, g.GraphID)
			}
			fmt.Fprintf(a.stdout, "%d graphs\n", len(out.Graphs))
			return nil
		},
	}
	c.Flags().StringVar(&t.server, "server", "", "the server's URL (http://HOST:PORT)")
	c.Flags().StringVar(&t.token, "token", "", "bearer token (default $"+envToken+")")
	t.addJSON(c)
	return c
}
