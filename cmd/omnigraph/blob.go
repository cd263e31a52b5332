package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/omnigraph-go/omnigraph/client"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/blob"
	"github.com/omnigraph-go/omnigraph/manifest"
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
	b.t.addServer(c)
}

// check refuses what no mode can read: both --branch and --snapshot, an
// ENTITY other than node or edge.
func (b *blobTarget) check(args []string) error {
	if b.branch != "" && b.snapshot != "" {
		return usagef("read either a branch (--branch) or a commit (--snapshot), not both")
	}
	if args[0] != blob.Node && args[0] != blob.Edge {
		return usagef("ENTITY is %q; give node or edge", args[0])
	}
	return nil
}

// open resolves the cell named by args (ENTITY TYPE ID PROP) read-only;
// done closes the graph.
func (b *blobTarget) open(ctx context.Context, args []string) (*blob.Cell, func(), error) {
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
		Use:   "get ENTITY TYPE ID PROP [--branch B | --snapshot COMMIT] [--offset N] [--length N] [--out FILE] (--store URL | --server URL)",
		Short: "Write the bytes of one Blob value (or a range of them)",
		Long: "Write the raw bytes of one Blob value to standard output, or to --out FILE\n" +
			"(written beside it and renamed once complete, so a failed read leaves an\n" +
			"existing FILE as it was). --offset N starts at byte N; --length N writes at\n" +
			"most N bytes (a range past the end stops at the end; an offset past the end\n" +
			"is an error). The value is read a piece (4 MiB) at a time, so memory does\n" +
			"not grow with its size. An external value (a URI) has no bytes in the\n" +
			"graph: fetch it from its URI, which 'blob stat' shows. A failure after\n" +
			"bytes went to standard output cannot take them back: the exit code says\n" +
			"the output is incomplete. With --server the bytes come from the server's blob\n" +
			"route (GET, with a Range for --offset/--length), streamed the same way.",
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
			if err := b.check(args); err != nil {
				return err
			}
			srv, err := b.t.serverGraph(c)
			if err != nil {
				return err
			}
			if srv != nil {
				read, done, err := b.remoteRead(ctx, srv, args, offset, length)
				if err != nil {
					return err
				}
				defer done()
				return writeOutput(out, a.stdout, read)
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
			return writeOutput(out, a.stdout, func(w io.Writer) error { return cell.Read(ctx, w, off, n) })
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
		Use:   "stat ENTITY TYPE ID PROP [--branch B | --snapshot COMMIT] [--json] (--store URL | --server URL)",
		Short: "Describe one Blob value: size, SHA-256 and ETag, or its external URI",
		Long: "Describe one Blob value without reading its bytes: kind managed (its size, the\n" +
			"SHA-256 of its bytes, and its ETag, the validator the server sends) or kind\n" +
			"external (the URI it refers to), and the branch and commit it was read at.",
		Args: cobra.ExactArgs(4),
		RunE: func(c *cobra.Command, args []string) error {
			if err := b.check(args); err != nil {
				return err
			}
			srv, err := b.t.serverGraph(c)
			if err != nil {
				return err
			}
			var info blob.Info
			if srv != nil {
				if info, err = b.remoteStat(c.Context(), srv, args); err != nil {
					return err
				}
			} else {
				cell, done, err := b.open(c.Context(), args)
				if err != nil {
					return err
				}
				info = cell.Info()
				done()
			}
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

// ref is the client's name of the value args select.
func blobRef(args []string) client.BlobRef {
	return client.BlobRef{Entity: args[0], Type: args[1], ID: args[2], Property: args[3]}
}

// remoteRead is 'blob get --server': it asks the server for the bytes
// (a refusal is returned here, before any output is created) and returns
// the copy of them, which fails when the answer ends short.
func (b *blobTarget) remoteRead(ctx context.Context, g *client.Graph, args []string, offset, length int64) (read func(io.Writer) error, done func(), err error) {
	// A read past the end of a non-empty value asks for an offset the server
	// refuses (416), as the local mode refuses it.
	resp, err := g.Blob(ctx, blobRef(args), client.BlobOptions{Branch: b.branch, Snapshot: b.snapshot, Offset: offset, Length: max(length, 0)})
	if err != nil {
		return nil, nil, b.t.remoteErr(err)
	}
	if resp.URI != "" {
		resp.Close()
		return nil, nil, fmt.Errorf("%w: %s.%s of %q refers to %s; fetch it from there ('blob stat' shows the reference)", blob.ErrExternal, args[1], args[3], args[2], resp.URI)
	}
	return func(w io.Writer) error {
		n, err := io.Copy(w, resp.Body)
		if err == nil && n != resp.Length {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			return fmt.Errorf("the server's answer ended after %d of %d bytes: %w", n, resp.Length, err)
		}
		return nil
	}, func() { resp.Close() }, nil
}

// remoteStat is 'blob stat --server': a HEAD of the value. A HEAD's
// refusal has no body, so a refused HEAD is asked again as a one-byte GET
// for the server's message and code; a --snapshot read asks the commit's
// branch (the local mode reports the branch the commit was made on).
func (b *blobTarget) remoteStat(ctx context.Context, g *client.Graph, args []string) (blob.Info, error) {
	ref := blobRef(args)
	opts := client.BlobOptions{Branch: b.branch, Snapshot: b.snapshot}
	head, err := g.BlobHead(ctx, ref, opts)
	if err != nil {
		var ce *client.Error
		if errors.As(err, &ce) && ce.Status != 0 && ce.Code == "" {
			opts.Length = 1
			if resp, gerr := g.Blob(ctx, ref, opts); gerr != nil {
				err = gerr
			} else {
				resp.Close()
			}
		}
		return blob.Info{}, b.t.remoteErr(err)
	}
	head.Close()
	info := blob.Info{Selector: blob.Selector{Entity: ref.Entity, Type: ref.Type, ID: ref.ID, Property: ref.Property},
		Branch: b.branch, Snapshot: head.Snapshot}
	if info.Branch == "" {
		info.Branch = manifest.MainBranch
	}
	if b.snapshot != "" {
		c, err := g.Commit(ctx, head.Snapshot)
		if err != nil {
			return blob.Info{}, b.t.remoteErr(err)
		}
		info.Branch = c.GraphBranch
	}
	if head.URI != "" {
		info.Kind, info.URI = "external", head.URI
		return info, nil
	}
	size := head.Size
	info.Kind, info.Size, info.ETag, info.SHA256 = "managed", &size, head.ETag, strings.Trim(head.ETag, `"`)
	return info, nil
}
