package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strconv"

	"github.com/omnigraph-go/omnigraph/api"
)

// PollChanges is GET changes: one page of the change feed of a branch
// (docs/changes.md). A terminal page has Cursor (store it with what the
// blocks did, and pass it next time); a page with NextPageToken ends
// inside a block: poll again with PageToken set to it (and nothing else)
// before the cursor comes.
func (g *Graph) PollChanges(ctx context.Context, req api.PollRequest) (*api.ChangeFeedOutput, error) {
	c := g.call("pollChanges")
	c.query = url.Values{}
	for k, v := range map[string]string{"branch": req.Branch, "cursor": req.Cursor, "start": req.Start, "page_token": req.PageToken} {
		if v != "" {
			c.query.Set(k, v)
		}
	}
	for k, v := range map[string]int64{"limit": int64(req.Limit), "max_bytes": req.MaxBytes, "max_commits": int64(req.MaxCommits)} {
		if v != 0 {
			c.query.Set(k, strconv.FormatInt(v, 10))
		}
	}
	for k, vs := range map[string][]string{"kind": req.Kinds, "type": req.Types, "op": req.Ops} {
		for _, v := range vs {
			c.query.Add(k, v)
		}
	}
	var out api.ChangeFeedOutput
	return &out, g.c.do(ctx, c, &out)
}

// Poll runs one whole poll: it follows the page tokens of a block split
// over pages and yields each page, ending with the terminal one (which
// has the cursor). An error ends it.
func (g *Graph) Poll(ctx context.Context, req api.PollRequest) iter.Seq2[*api.ChangeFeedOutput, error] {
	return func(yield func(*api.ChangeFeedOutput, error) bool) {
		for {
			p, err := g.PollChanges(ctx, req)
			if err != nil {
				yield(nil, err)
				return
			}
			if !yield(p, nil) || p.NextPageToken == "" {
				return
			}
			req = api.PollRequest{PageToken: p.NextPageToken, Branch: req.Branch, Limit: req.Limit, MaxBytes: req.MaxBytes, MaxCommits: req.MaxCommits}
		}
	}
}

// Baseline is a streamed baseline (POST changes/baseline): the entities
// of a branch head, one graph-batch line each, then the record with the
// cursor that resumes the feed after that head. Close it when done.
type Baseline struct {
	// Commit is the commit the baseline is.
	Commit string
	resp   *http.Response
	end    *api.BaselineEnd
	n      int
}

// ErrBaselineCut: the baseline ended before its final record (the server
// failed after the first bytes, or the connection dropped): discard what
// was read, and take another.
var ErrBaselineCut = errors.New("the baseline was cut short: discard what was read")

// Baseline starts a baseline. Every check (policy, branch, filter)
// happens before the first line, so those failures are returned here.
func (g *Graph) Baseline(ctx context.Context, req api.BaselineRequest) (*Baseline, error) {
	c := g.json("captureChangeBaseline", req)
	resp, err := g.c.send(ctx, c)
	if err != nil {
		return nil, err
	}
	return &Baseline{Commit: resp.Header.Get(api.HeaderGraphCommit), resp: resp}, nil
}

// Lines yields each entity line (graph-batch NDJSON, without its
// newline; valid until the next one). It ends after the final record,
// which End then returns; a stream without it ends with ErrBaselineCut.
func (b *Baseline) Lines() iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		if b.resp == nil {
			yield(nil, errors.New("omnigraph baseline: the baseline was already read or closed"))
			return
		}
		defer b.Close()
		br := bufio.NewReaderSize(b.resp.Body, 64<<10)
		for {
			line, err := readLine(br)
			if len(line) > 0 && line[len(line)-1] == '\n' {
				line = bytes.TrimSuffix(line, []byte("\n"))
				if b.end != nil {
					yield(nil, fmt.Errorf("omnigraph baseline: a line after the baseline record: %w", ErrBaselineCut))
					return
				}
				if bytes.HasPrefix(line, []byte(`{"baseline":`)) {
					var rec api.BaselineRecord
					if err := json.Unmarshal(line, &rec); err != nil || rec.Baseline.ResumeCursor == "" {
						yield(nil, fmt.Errorf("omnigraph baseline: the final record does not decode: %w", ErrBaselineCut))
						return
					}
					b.end = &rec.Baseline
					continue
				}
				b.n++
				if !yield(line, nil) {
					return
				}
			}
			if err == io.EOF {
				if b.end == nil {
					yield(nil, fmt.Errorf("omnigraph baseline: %w (read %d lines, no final record)", ErrBaselineCut, b.n))
				}
				return
			}
			if err != nil {
				yield(nil, fmt.Errorf("omnigraph baseline: %w: %v", ErrBaselineCut, err))
				return
			}
		}
	}
}

// End is the baseline's final record, once Lines read it whole (nil
// before, or when the stream was cut).
func (b *Baseline) End() *api.BaselineEnd { return b.end }

// Close ends the baseline, read or not.
func (b *Baseline) Close() error {
	if b.resp == nil {
		return nil
	}
	err := b.resp.Body.Close()
	b.resp = nil
	return err
}
