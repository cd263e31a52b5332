package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/blob"
)

// blobTarget is what both blob subcommands select: the cell and the
// snapshot.
type blobTarget struct {
	t                graphTarget
	branch, snapshot string
}

func (b *blobTarget) add(c *cobra.Command) {
	c.Flags().StringVar(&b.branch, "branch", "", "branch to read (default main)")
	c.Flags().StringVar(&b.snapshot, "snapshot", "", "commit id to read instead of a branch head (time travel)")
	b.t.addStore(c)
}

// open resolves the cell named by args (ENTITY TYPE ID PROP) read-only;
// done closes the graph.
func (b *blobTarget) open(ctx context.Context, args []string) (*blob.Cell, func(), error) {
	if b.branch != "" && b.snapshot != "" {
		return nil, nil, usagef("read either a branch (--branch) or a commit (--snapshot), not both")
	}
	if args[0] != blob.Node && args[0] != blob.Edge {
		return nil, nil, usagef("ENTITY is %q; give node or edge", args[0])
	}
	g, done, err := b.t.openGraph(ctx, false)
	if err != nil {
		return nil, nil, err
	}
	var snap *graph.Snapshot
	if b.snapshot != "" {
		snap, err = g.SnapshotAt(ctx, b.snapshot)
	} else {
		snap, err = g.Snapshot(ctx, b.branch)
	}
	if err == nil {
		var c *blob.Cell
		if c, err = blob.Open(ctx, snap, blob.Selector{Entity: args[0], Type: args[1], ID: args[2], Property: args[3]}); err == nil {
			return c, done, nil
		}
	}
	done()
	return nil, nil, err
}

func init() {
	register(func(a *app) *cobra.Command {
		c := &cobra.Command{
			Use:   "blob",
			Short: "Read Blob property values (the bytes queries cannot return)",
			Long: "Read one Blob value, selected by ENTITY (node or edge), TYPE, ID and PROP, at\n" +
				"the head of a branch (default main) or at a past commit (--snapshot).\n" +
				"'blob get' writes the bytes (or a range of them) to standard output or --out;\n" +
				"'blob stat' describes the value: its size, SHA-256 and ETag, or, for an\n" +
				"external value, its URI.",
		}
		c.AddCommand(blobGetCmd(a), blobStatCmd(a))
		return c
	})
}

func blobGetCmd(a *app) *cobra.Command {
	var b blobTarget
	var offset, length int64
	var out string
	c := &cobra.Command{
		Use:   "get ENTITY TYPE ID PROP [--branch B | --snapshot COMMIT] [--offset N] [--length N] [--out FILE] --store URL",
		Short: "Write the bytes of one Blob value (or a range of them)",
		Long: "Write the raw bytes of one Blob value to standard output, or to --out FILE\n" +
			"(written beside it and renamed once complete, so a failed read leaves an\n" +
			"existing FILE as it was). --offset N starts at byte N; --length N writes at\n" +
			"most N bytes (a range past the end stops at the end; an offset past the end\n" +
			"is an error). The value is read a piece (4 MiB) at a time, so memory does\n" +
			"not grow with its size. An external value (a URI) has no bytes in the\n" +
			"graph: fetch it from its URI, which 'blob stat' shows. A failure after\n" +
			"bytes went to standard output cannot take them back: the exit code says\n" +
			"the output is incomplete.",
		Args: cobra.ExactArgs(4),
		RunE: func(c *cobra.Command, args []string) error {
			ctx := c.Context()
			if offset < 0 {
				return usagef("--offset must be 0 or more")
			}
			if c.Flags().Changed("length") && length < 1 {
				return usagef("--length must be 1 or more (leave it out to read to the end)")
			}
			if !c.Flags().Changed("length") {
				length = -1
			}
			cell, done, err := b.open(ctx, args)
			if err != nil {
				return err
			}
			defer done()
			off, n, err := cell.Range(offset, length)
			if err != nil {
				return err
			}
			if out == "" || out == "-" {
				return cell.Read(ctx, a.stdout, off, n)
			}
			tmp, err := createAtomic(out, 0o600)
			if err != nil {
				return fmt.Errorf("create the output file: %w", err)
			}
			defer tmp.Abort()
			if err := cell.Read(ctx, tmp, off, n); err != nil {
				return err
			}
			if err := tmp.Commit(); err != nil {
				return fmt.Errorf("write the output file: %w", err)
			}
			return nil
		},
	}
	c.Flags().Int64Var(&offset, "offset", 0, "the first byte to write")
	c.Flags().Int64Var(&length, "length", 0, "at most this many bytes (default: to the end)")
	c.Flags().StringVar(&out, "out", "-", "file to write the bytes to; - is standard output")
	b.add(c)
	return c
}

func blobStatCmd(a *app) *cobra.Command {
	var b blobTarget
	c := &cobra.Command{
		Use:   "stat ENTITY TYPE ID PROP [--branch B | --snapshot COMMIT] [--json] --store URL",
		Short: "Describe one Blob value: size, SHA-256 and ETag, or its external URI",
		Long: "Describe one Blob value without reading its bytes: kind managed (its size, the\n" +
			"SHA-256 of its bytes, and its ETag, the validator the server sends) or kind\n" +
			"external (the URI it refers to), and the branch and commit it was read at.",
		Args: cobra.ExactArgs(4),
		RunE: func(c *cobra.Command, args []string) error {
			cell, done, err := b.open(c.Context(), args)
			if err != nil {
				return err
			}
			defer done()
			info := cell.Info()
			if b.t.json {
				return writeJSON(a.stdout, info)
			}
			return writeBlobInfo(a.stdout, info)
		},
	}
	b.add(c)
	b.t.addJSON(c)
	return c
}

func writeBlobInfo(w io.Writer, info blob.Info) error {
	fmt.Fprintf(w, "%s %s %q .%s\n", info.Entity, info.Type, info.ID, info.Property)
	fmt.Fprintf(w, "kind:     %s\n", info.Kind)
	if info.Kind == "external" {
		fmt.Fprintf(w, "uri:      %s\n", info.URI)
	} else {
		fmt.Fprintf(w, "size:     %d bytes\n", *info.Size)
		fmt.Fprintf(w, "sha256:   %s\n", info.SHA256)
		fmt.Fprintf(w, "etag:     %s\n", info.ETag)
	}
	_, err := fmt.Fprintf(w, "branch:   %s\ncommit:   %s\n", info.Branch, info.Snapshot)
	return err
}
