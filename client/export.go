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

// ExportOptions choose what an export reads: a branch head (default
// main) or the commit in Snapshot, and optionally only some types.
type ExportOptions struct {
	Branch   string
	Snapshot string
	Types    []string
}

// Export is a streamed export (GET export): the graph batch of one
// snapshot, one node or edge per line, read as it arrives. Close it when
// done.
type Export struct {
	// Commit is the commit the export reads.
	Commit string
	// SchemaIdentity is the identity of that commit's schema (Schema or
	// SchemaAt answers the source).
	SchemaIdentity string
	resp           *http.Response
	n              int
}

// ErrExportCut: the export ended before its last line (the server failed
// after the first bytes, or the connection dropped): discard what was read.
var ErrExportCut = errors.New("the export was cut short: discard what was read")

// Export starts an export. Every check (policy, branch, types) happens
// before the first line, so those failures are returned here as *Error.
func (g *Graph) Export(ctx context.Context, opts ExportOptions) (*Export, error) {
	c := g.call("export")
	c.query = url.Values{}
	if opts.Branch != "" {
		c.query.Set("branch", opts.Branch)
	}
	if opts.Snapshot != "" {
		c.query.Set("snapshot", opts.Snapshot)
	}
	for _, t := range opts.Types {
		c.query.Add("type", t)
	}
	resp, err := g.c.send(ctx, c)
	if err != nil {
		return nil, err
	}
	return &Export{Commit: resp.Header.Get(api.HeaderGraphCommit), SchemaIdentity: resp.Header.Get(api.HeaderSchemaIdentity), resp: resp}, nil
}

// Lines yields each line of the export as it arrives (without its
// newline; the slice is valid until the next one). After the last line
// it checks the export was complete: a cut export ends with
// ErrExportCut, and nothing yielded before it may be trusted.
func (e *Export) Lines() iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		if e.resp == nil {
			yield(nil, errors.New("omnigraph export: the export was already read or closed"))
			return
		}
		defer e.Close()
		br := bufio.NewReaderSize(e.resp.Body, 64<<10)
		for {
			line, err := readLine(br)
			if len(line) > 0 && line[len(line)-1] == '\n' {
				e.n++
				if !yield(bytes.TrimSuffix(line, []byte("\n")), nil) {
					return
				}
			}
			if err == io.EOF {
				if want := e.resp.Trailer.Get(api.TrailerExportEntities); want == "" || want != strconv.Itoa(e.n) {
					yield(nil, fmt.Errorf("omnigraph export: %w (read %d lines, the server's count is %q)", ErrExportCut, e.n, want))
				}
				return
			}
			if err != nil {
				yield(nil, fmt.Errorf("omnigraph export: %w: %v", ErrExportCut, err))
				return
			}
		}
	}
}

// readLine reads up to and including the next newline, gathering a
// line longer than br's buffer whole (the slice is valid until the next
// read). At the end it returns what is left with io.EOF.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		return line, err
	}
	long := append([]byte(nil), line...)
	for errors.Is(err, bufio.ErrBufferFull) {
		line, err = br.ReadSlice('\n')
		long = append(long, line...)
	}
	return long, err
}

// Records yields each line decoded as a graph-batch record (numbers as
// json.Number), with the same completeness check as Lines.
func (e *Export) Records() iter.Seq2[api.Record, error] {
	return func(yield func(api.Record, error) bool) {
		for line, err := range e.Lines() {
			if err != nil {
				yield(api.Record{}, err)
				return
			}
			var r api.Record
			dec := json.NewDecoder(bytes.NewReader(line))
			dec.UseNumber()
			if err := dec.Decode(&r); err != nil {
				yield(api.Record{}, fmt.Errorf("omnigraph export: line %d: %w", e.n, err))
				return
			}
			if !yield(r, nil) {
				return
			}
		}
	}
}

// WriteTo copies the export to w as it arrives, byte for byte, holding
// no line whole (a line can carry a large Blob value), then checks it was
// complete as Lines does: a cut export returns ErrExportCut after the
// bytes it had, which must then be discarded.
func (e *Export) WriteTo(w io.Writer) (int64, error) {
	if e.resp == nil {
		return 0, errors.New("omnigraph export: the export was already read or closed")
	}
	defer e.Close()
	lc := &lineCounter{w: w}
	n, err := io.Copy(lc, e.resp.Body)
	if err != nil {
		if lc.werr != nil {
			return n, lc.werr
		}
		return n, fmt.Errorf("omnigraph export: %w: %v", ErrExportCut, err)
	}
	e.n = lc.lines
	if want := e.resp.Trailer.Get(api.TrailerExportEntities); want == "" || want != strconv.Itoa(lc.lines) || !lc.ended {
		return n, fmt.Errorf("omnigraph export: %w (read %d lines, the server's count is %q)", ErrExportCut, lc.lines, want)
	}
	return n, nil
}

// lineCounter passes bytes on and counts the newlines among them.
type lineCounter struct {
	w     io.Writer
	lines int
	ended bool // the last byte was a newline (or nothing was written)
	werr  error
}

func (l *lineCounter) Write(p []byte) (int, error) {
	n, err := l.w.Write(p)
	if err != nil {
		l.werr = err
		return n, err
	}
	l.lines += bytes.Count(p, []byte{'\n'})
	if len(p) > 0 {
		l.ended = p[len(p)-1] == '\n'
	}
	return n, nil
}

// Close ends the export, reading or not.
func (e *Export) Close() error {
	if e.resp == nil {
		return nil
	}
	err := e.resp.Body.Close()
	e.resp = nil
	return err
}
