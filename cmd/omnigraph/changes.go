package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/client"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/changes"
	"github.com/omnigraph-go/omnigraph/graph/diff"
	"github.com/omnigraph-go/omnigraph/graph/export"
)

// The change feed (docs/changes.md): `changes poll` prints the entity
// changes of a branch commit by commit from a cursor, `changes baseline`
// writes a head's entities to a file and prints the cursor after it. Both
// run on the store (--store) or through a server (--server); the local
// pages go through the API's wire form, so both modes print the same.
// (`commit changes ID` is one commit's diff.)

func init() {
	register(func(a *app) *cobra.Command {
		c := &cobra.Command{
			Use:   "changes",
			Short: "Follow a branch's changes: poll the change feed from a cursor, or take a baseline",
			Long: "poll prints the entity changes of each commit of a branch (first-parent order)\n" +
				"after a cursor, or from a start (now, beginning, after:COMMIT_ID), and the cursor\n" +
				"to poll from next. When cleanup removed history a cursor needs (change_feed_gap),\n" +
				"baseline writes the branch head's entities to a file and prints the cursor that\n" +
				"resumes after it. The server keeps no consumer state: store the cursor with what\n" +
				"you did with the changes. See docs/changes.md.",
		}
		c.AddCommand(changesPollCmd(a), changesBaselineCmd(a))
		return c
	})
}

// feedFlags are the filter flags poll and baseline share.
type feedFlags struct {
	kinds, types, ops []string
}

func (f *feedFlags) add(c *cobra.Command, opsWhat string) {
	c.Flags().StringSliceVar(&f.kinds, "kind", nil, "only node or only edge changes (node, edge)")
	c.Flags().StringSliceVar(&f.types, "type", nil, "only these node or edge types (repeat, or comma-separated)")
	c.Flags().StringSliceVar(&f.ops, "op", nil, opsWhat)
}

func (f *feedFlags) filter() changes.Filter {
	out := changes.Filter{Kinds: f.kinds, Types: f.types}
	for _, o := range f.ops {
		out.Ops = append(out.Ops, diff.Op(o))
	}
	return out
}

func changesPollCmd(a *app) *cobra.Command {
	var t graphTarget
	var ff feedFlags
	var in api.PollRequest
	c := &cobra.Command{
		Use:   "poll [--branch B] (--cursor C | --start now|beginning|after:ID | --page-token T) [--kind K] [--type T]... [--op insert|update|delete]... [--limit N] [--json] (--store URL | URL | --server URL)",
		Short: "Print the entity changes of each commit after a cursor, then the cursor to poll from next",
		Long: "One poll walks the branch's first-parent commits from the position to the head as\n" +
			"it was when the poll began (at most --max-commits, default 128), one block per\n" +
			"commit: its cause (commit, parent, actor, time) and its changes against its first\n" +
			"parent, with before and after images. A commit larger than a page (--limit\n" +
			"changes, default 1000; --max-bytes, default 4 MiB) is fetched page by page; the\n" +
			"cursor is printed once the last page is in (--page-token fetches one raw page).\n" +
			"Without a cursor the feed starts --start now (the default: nothing before the\n" +
			"head), beginning, or after:COMMIT_ID. A cursor carries its branch and filter.\n" +
			"caught_up says no commit waited beyond the cursor. Exit 1 with change_feed_gap\n" +
			"when cleanup removed history the cursor needs: run 'omnigraph changes baseline'.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			ctx := c.Context()
			if err := t.storeArg(args); err != nil {
				return err
			}
			n := 0
			for _, s := range []string{in.Cursor, in.Start, in.PageToken} {
				if s != "" {
					n++
				}
			}
			if n > 1 {
				return usagef("give one position: --cursor C, --start now|beginning|after:ID or --page-token T")
			}
			if in.Start != "" {
				if _, err := changes.ParseStart(in.Start); err != nil {
					return usageError{msg: "--start: " + err.Error()}
				}
			}
			if in.Limit < 0 || in.MaxBytes < 0 || in.MaxCommits < 0 {
				return usagef("--limit, --max-bytes and --max-commits are positive (0: the default)")
			}
			in.Kinds, in.Types, in.Ops = ff.kinds, ff.types, ff.ops
			sg, err := t.serverGraph(c)
			if err != nil {
				return err
			}
			var next func(api.PollRequest) (*api.ChangeFeedOutput, error)
			if sg != nil {
				next = func(r api.PollRequest) (*api.ChangeFeedOutput, error) {
					p, err := sg.PollChanges(ctx, r)
					return p, t.remoteErr(err)
				}
			} else {
				g, done, err := t.openGraph(ctx, false)
				if err != nil {
					return err
				}
				defer done()
				next = func(r api.PollRequest) (*api.ChangeFeedOutput, error) { return pollLocal(ctx, g, r) }
			}
			return printPoll(a.stdout, in, next, t.json)
		},
	}
	c.Flags().StringVar(&in.Branch, "branch", "", "the branch (default: the cursor's, else main)")
	c.Flags().StringVar(&in.Cursor, "cursor", "", "the cursor the last poll printed")
	c.Flags().StringVar(&in.Start, "start", "", "without a cursor: now (default), beginning or after:COMMIT_ID")
	c.Flags().StringVar(&in.PageToken, "page-token", "", "fetch exactly this page of a poll (its next_page_token)")
	c.Flags().IntVar(&in.Limit, "limit", 0, "at most this many changes a page (default 1000, at most 8192)")
	c.Flags().Int64Var(&in.MaxBytes, "max-bytes", 0, "at most this many bytes of changes a page (default 4 MiB, at most 32 MiB)")
	c.Flags().IntVar(&in.MaxCommits, "max-commits", 0, "at most this many commits a poll (default 128, at most 512)")
	ff.add(c, "only these ops: insert, update, delete (repeat, or comma-separated)")
	t.addStore(c)
	t.addServer(c)
	t.addJSON(c)
	return c
}

// storeArg takes the graph location given as the argument.
func (t *graphTarget) storeArg(args []string) error {
	if len(args) == 1 {
		if t.store != "" {
			return usagef("give the graph once: --store URL or the URL as the argument")
		}
		t.store = args[0]
	}
	return nil
}

// pollLocal is one poll on an open graph, in the API's wire form.
func pollLocal(ctx context.Context, g *graph.Graph, in api.PollRequest) (*api.ChangeFeedOutput, error) {
	req := changes.Request{Branch: in.Branch, Cursor: in.Cursor, PageToken: in.PageToken,
		Filter:     (&feedFlags{kinds: in.Kinds, types: in.Types, ops: in.Ops}).filter(),
		MaxChanges: in.Limit, MaxBytes: in.MaxBytes, MaxCommits: in.MaxCommits}
	if in.Start != "" {
		st, err := changes.ParseStart(in.Start)
		if err != nil {
			return nil, err
		}
		req.Start = &st
	}
	p, err := changes.Poll(ctx, g, req)
	if err != nil {
		return nil, err
	}
	// changes.Page has the API's member names: the wire form is one
	// encoding away, and numbers come out as the server sends them.
	b, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	var out api.ChangeFeedOutput
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return &out, dec.Decode(&out)
}

// printPoll runs one poll (its pages, unless a page token asks for one)
// and prints it as it arrives: text, or one JSON object whose blocks are
// written page by page. The cursor comes after the last page only.
func printPoll(w io.Writer, in api.PollRequest, next func(api.PollRequest) (*api.ChangeFeedOutput, error), asJSON bool) error {
	one := in.PageToken != ""
	bw := bufio.NewWriter(w)
	defer bw.Flush()
	first := true
	var last *api.ChangeFeedOutput
	blocks := 0
	for {
		p, err := next(in)
		if err != nil {
			if !first && asJSON {
				// The object is cut: say so, and print no cursor.
				bw.WriteString("\n")
			}
			return err
		}
		if one && asJSON {
			return writeJSON(bw, p)
		}
		if first && asJSON {
			fmt.Fprintf(bw, "{\"branch\":%q,\"blocks\":[", p.Branch)
		}
		for _, b := range p.Blocks {
			if asJSON {
				if blocks > 0 {
					bw.WriteString(",")
				}
				enc, err := json.Marshal(b)
				if err != nil {
					return err
				}
				bw.Write(enc)
			} else {
				printBlock(bw, b)
			}
			blocks++
		}
		first, last = false, p
		if p.NextPageToken == "" || one {
			break
		}
		in = api.PollRequest{PageToken: p.NextPageToken, Branch: in.Branch, Limit: in.Limit, MaxBytes: in.MaxBytes, MaxCommits: in.MaxCommits}
	}
	if asJSON {
		tail, err := json.Marshal(struct {
			Cursor        string `json:"cursor,omitempty"`
			NextPageToken string `json:"next_page_token,omitempty"`
			CaughtUp      bool   `json:"caught_up"`
			Head          string `json:"head_commit_id"`
		}{last.Cursor, last.NextPageToken, last.CaughtUp, last.HeadCommitID})
		if err != nil {
			return err
		}
		bw.WriteString("],")
		bw.Write(tail[1:])
		bw.WriteString("\n")
		return nil
	}
	fmt.Fprintf(bw, "%d blocks\n", blocks)
	switch {
	case last.NextPageToken != "":
		fmt.Fprintf(bw, "next page: %s\n", last.NextPageToken)
	case last.CaughtUp:
		fmt.Fprintf(bw, "caught up with %s\ncursor: %s\n", last.HeadCommitID, last.Cursor)
	default:
		fmt.Fprintf(bw, "more commits wait: poll again with the cursor\ncursor: %s\n", last.Cursor)
	}
	return nil
}

// printBlock prints one block: its commit, then a line per change.
func printBlock(w io.Writer, b api.ChangeBlock) {
	c := b.Cause
	when := time.UnixMicro(c.AuthoredAt).UTC().Format(time.RFC3339)
	fmt.Fprintf(w, "commit %s on %s (version %d) by %s at %s: %d changes\n", c.GraphCommitID, c.AuthoredBranch, c.GraphManifestVersion, orDash(c.ActorID), when, len(b.Changes))
	for _, ch := range b.Changes {
		fmt.Fprintf(w, "  %s\n", changeLine(ch))
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func changesBaselineCmd(a *app) *cobra.Command {
	var t graphTarget
	var ff feedFlags
	var branch, out string
	c := &cobra.Command{
		Use:   "baseline --out FILE [--branch B] [--kind K] [--type T]... [--op O]... [--json] (--store URL | URL | --server URL)",
		Short: "Write a branch head's entities to a file (graph-batch NDJSON) and print the cursor that resumes the feed after it",
		Long: "The way back after change_feed_gap, or the first step of a new consumer: install\n" +
			"the file (it is what 'omnigraph load' reads), then poll from the printed cursor;\n" +
			"the first commit after the head is the first block. --kind and --type select the\n" +
			"entities and bind the cursor's filter; --op binds only the cursor's. The file is\n" +
			"written to a temporary name, synced and renamed into place, so FILE is whole or\n" +
			"absent, and the cursor is printed only after that.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			ctx := c.Context()
			if out == "" || out == "-" {
				return usagef("--out FILE is required: where the entities go (standard output carries the cursor)")
			}
			if err := t.storeArg(args); err != nil {
				return err
			}
			if st, err := os.Stat(out); err == nil && st.IsDir() {
				return usagef("--out %s is a directory; give a file", out)
			}
			if _, err := os.Stat(filepath.Dir(out)); err != nil {
				return usagef("--out: the directory of %s does not exist", out)
			}
			sg, err := t.serverGraph(c)
			if err != nil {
				return err
			}
			var res baselineResult
			if sg != nil {
				res, err = baselineRemote(ctx, sg, api.BaselineRequest{Branch: branch, Kinds: ff.kinds, Types: ff.types, Ops: ff.ops}, out)
				err = t.remoteErr(err)
			} else {
				res, err = t.baselineLocal(ctx, branch, ff.filter(), out)
			}
			if err != nil {
				return err
			}
			if t.json {
				return writeJSON(a.stdout, res)
			}
			fmt.Fprintf(a.stdout, "wrote %d entities of %s at commit %s to %s\ncursor: %s\n", res.Entities, res.Branch, res.Baseline.SnapshotCommitID, res.Out, res.Baseline.ResumeCursor)
			return nil
		},
	}
	c.Flags().StringVar(&out, "out", "", "the file the entities are written to (replaced whole)")
	c.Flags().StringVar(&branch, "branch", "", "the branch (default main)")
	ff.add(c, "the resumed feed's ops only: insert, update, delete")
	t.addStore(c)
	t.addServer(c)
	t.addJSON(c)
	return c
}

// baselineResult is what baseline prints: the final record of the
// baseline plus where the entities went.
type baselineResult struct {
	Baseline api.BaselineEnd `json:"baseline"`
	Branch   string          `json:"branch"`
	Out      string          `json:"out"`
	Entities int             `json:"entities"`
}

func (t *graphTarget) baselineLocal(ctx context.Context, branch string, f changes.Filter, out string) (baselineResult, error) {
	g, done, err := t.openGraph(ctx, false)
	if err != nil {
		return baselineResult{}, err
	}
	defer done()
	snap, err := g.Snapshot(ctx, branch)
	if err != nil {
		return baselineResult{}, err
	}
	cursor, err := changes.CursorAt(ctx, g, snap, f)
	if err != nil {
		return baselineResult{}, err
	}
	types, err := changes.BaselineTypes(ctx, snap, f)
	if err != nil {
		return baselineResult{}, err
	}
	n := 0
	err = writeWhole(out, func(w io.Writer) error {
		if len(types) == 0 {
			return nil
		}
		res, err := export.Run(ctx, snap, w, export.Options{Types: types})
		if err == nil {
			n = res.Nodes + res.Edges
		}
		return err
	})
	if err != nil {
		return baselineResult{}, err
	}
	return baselineResult{Baseline: api.BaselineEnd{SnapshotCommitID: snap.CommitID(), ResumeCursor: cursor}, Branch: snap.Branch(), Out: out, Entities: n}, nil
}

func baselineRemote(ctx context.Context, sg *client.Graph, req api.BaselineRequest, out string) (baselineResult, error) {
	b, err := sg.Baseline(ctx, req)
	if err != nil {
		return baselineResult{}, err
	}
	defer b.Close()
	n := 0
	err = writeWhole(out, func(w io.Writer) error {
		for line, err := range b.Lines() {
			if err != nil {
				return err
			}
			if _, err := w.Write(append(line, '\n')); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return baselineResult{}, err
	}
	branch := req.Branch
	if branch == "" {
		branch = "main"
	}
	return baselineResult{Baseline: *b.End(), Branch: branch, Out: out, Entities: n}, nil
}

// writeWhole writes path through fill with writeOutput (a regular file
// is the old one or the whole new one, never a part; a FIFO or descriptor
// is written directly), buffered, since fill writes line by line.
func writeWhole(path string, fill func(io.Writer) error) error {
	return writeOutput(path, nil, func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 1<<20)
		if err := fill(bw); err != nil {
			return err
		}
		if err := bw.Flush(); err != nil {
			return fmt.Errorf("write the output file: %w", err)
		}
		return nil
	})
}
