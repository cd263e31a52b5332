// Package export writes one snapshot of a graph as the load envelope: the
// strict graph-batch NDJSON that 'omnigraph load' reads (graph/load). Node
// lines come first, then edge lines; within each, types in name order and
// rows in id order, every row with its id. Together with the snapshot's
// schema source (Result.Schema) it is the rebuild path: init with the schema,
// then load the file with --mode overwrite (or append into the empty graph).
//
// Export is a read: it pins one snapshot and takes no lock. It is streamed:
// per table it holds the ids (one string column) and one chunk of rows at a
// time, never the table or the graph. A Blob value is written as
// "base64:<payload>" (an external one as its URI); a value stored in a blob
// area is streamed into its line a piece at a time (lineEncoder), so a
// large value never sits in memory whole, and load streams it back.
package export

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/change"
	"github.com/omnigraph-go/omnigraph/lang/pg"
	"github.com/omnigraph-go/omnigraph/table"
)

// ChunkRows is how many rows one read of a table fetches (by id, in id
// order) before they are written.
var ChunkRows = 4096

// blobChunkRows is ChunkRows for a table with Blob columns.
const blobChunkRows = 64

// Options shape one export.
type Options struct {
	// Types restricts the export to these node or edge types (default:
	// every type). An edge type exported without its endpoint types loads
	// only into a graph that holds those nodes.
	Types []string
}

// Result is what an export wrote.
type Result struct {
	Branch   string         `json:"branch"`
	CommitID string         `json:"commit"`
	Nodes    int            `json:"nodes"`
	Edges    int            `json:"edges"`
	Types    map[string]int `json:"types"`
	// Schema is the .pg source accepted at the snapshot: init a new graph
	// with it before loading the export.
	Schema string `json:"-"`
	// SchemaIdentity is that schema's identity hash.
	SchemaIdentity string `json:"schema_identity"`
}

// Run writes the snapshot's rows to w as load envelope lines.
func Run(ctx context.Context, s *graph.Snapshot, w io.Writer, opts Options) (*Result, error) {
	res, err := run(ctx, s, w, opts)
	return res, s.Explain(ctx, err)
}

func run(ctx context.Context, s *graph.Snapshot, w io.Writer, opts Options) (*Result, error) {
	cat, err := s.Catalog(ctx)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, t := range opts.Types {
		_, isN := cat.Node(t)
		_, isE := cat.Edge(t)
		if !isN && !isE {
			return nil, fmt.Errorf("%w: unknown type %q; the schema has %s", graph.ErrInvalidInput, t, typeList(cat))
		}
		if n, ok := cat.Node(t); ok {
			want[n.Name] = true
		} else if e, ok := cat.Edge(t); ok {
			want[e.Name] = true
		}
	}
	res := &Result{Branch: s.Branch(), CommitID: s.CommitID(), Types: map[string]int{}, Schema: cat.Source, SchemaIdentity: cat.Identity}
	bw := bufio.NewWriterSize(w, 1<<16)
	le := newLineEncoder(ctx, s.Graph().Store(), bw)
	nodes := append([]*pg.NodeType(nil), cat.Nodes...)
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	for _, n := range nodes {
		if len(want) > 0 && !want[n.Name] {
			continue
		}
		c, err := writeTable(ctx, s, le, graph.NodeTableKey(n.Name), func(r change.Row) any {
			data := make(map[string]any, len(n.Properties)+1)
			data[pg.ColID] = r[pg.ColID]
			for _, p := range n.Properties {
				data[p.Name] = le.value(p, r[p.Name])
			}
			return nodeLine{Type: n.Name, Data: data}
		})
		if err != nil {
			return nil, fmt.Errorf("export %s: %w", n.Name, err)
		}
		res.Nodes += c
		res.Types[n.Name] = c
	}
	edges := append([]*pg.EdgeType(nil), cat.Edges...)
	sort.Slice(edges, func(i, j int) bool { return edges[i].Name < edges[j].Name })
	for _, e := range edges {
		if len(want) > 0 && !want[e.Name] {
			continue
		}
		c, err := writeTable(ctx, s, le, graph.EdgeTableKey(e.Name), func(r change.Row) any {
			data := make(map[string]any, len(e.Properties)+1)
			data[pg.ColID] = r[pg.ColID]
			for _, p := range e.Properties {
				data[p.Name] = le.value(p, r[p.Name])
			}
			src, _ := r[pg.ColSrc].(string)
			dst, _ := r[pg.ColDst].(string)
			return edgeLine{Edge: e.Name, From: src, To: dst, Data: data}
		})
		if err != nil {
			return nil, fmt.Errorf("export %s: %w", e.Name, err)
		}
		res.Edges += c
		res.Types[e.Name] = c
	}
	if err := bw.Flush(); err != nil {
		return nil, fmt.Errorf("write the export: %w", err)
	}
	return res, nil
}

// The envelope field order is fixed by these structs, so one snapshot
// always exports to the same bytes.
type nodeLine struct {
	Type string         `json:"type"`
	Data map[string]any `json:"data"`
}

type edgeLine struct {
	Edge string         `json:"edge"`
	From string         `json:"from"`
	To   string         `json:"to"`
	Data map[string]any `json:"data"`
}

// writeTable writes one table's live rows in id order: first its ids (one
// column), sorted; then the rows chunk by chunk, looked up by id.
func writeTable(ctx context.Context, s *graph.Snapshot, le *lineEncoder, key string, line func(change.Row) any) (int, error) {
	if _, ok := s.Pin(key); !ok {
		return 0, nil
	}
	ds, err := s.OpenTable(ctx, key)
	if err != nil {
		return 0, err
	}
	recs, err := ds.Scan(ctx, table.ScanOptions{Columns: []string{pg.ColID}})
	if err != nil {
		return 0, err
	}
	var ids []string
	for _, r := range recs {
		col, ok := r.Column(0).(*array.String)
		if !ok {
			r.Release()
			return 0, fmt.Errorf("table %s: id column is not a string column", key)
		}
		for i := 0; i < col.Len(); i++ {
			ids = append(ids, col.Value(i))
		}
		r.Release()
	}
	sort.Strings(ids)
	n := 0
	step := ChunkRows
	for _, f := range ds.Schema().Fields() {
		if table.IsBlobType(f.Type) {
			// Inline Blob values are up to table.BlobInlineMax each: a
			// smaller chunk keeps the rows held under a few MiB.
			step = max(1, min(step, blobChunkRows))
		}
	}
	for start := 0; start < len(ids); start += step {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		chunk := ids[start:min(start+step, len(ids))]
		rec, err := ds.Lookup(ctx, chunk...)
		if err != nil {
			return n, err
		}
		rows := change.RecordRows(rec)
		rec.Release()
		if len(rows) != len(chunk) {
			return n, fmt.Errorf("table %s: %d of %d rows read back; the snapshot is inconsistent", key, len(rows), len(chunk))
		}
		sort.Slice(rows, func(i, j int) bool { return rows[i][pg.ColID].(string) < rows[j][pg.ColID].(string) })
		for _, r := range rows {
			if err := le.emit(line(r)); err != nil {
				return n, fmt.Errorf("write row %v: %w", r[pg.ColID], err)
			}
			n++
		}
	}
	return n, nil
}

func typeList(cat *pg.Catalog) string {
	var names []string
	for _, n := range cat.Nodes {
		names = append(names, n.Name)
	}
	for _, e := range cat.Edges {
		names = append(names, e.Name)
	}
	return strings.Join(names, ", ")
}

// lineEncoder writes envelope lines. A Blob value stored in a blob area is
// given to the line as a placeholder string (value); emit encodes the line,
// then writes it with each placeholder replaced by "base64:" and the value
// streamed from its pieces (table.ReadBlob, one piece at a time) through a
// base64 encoder.
type lineEncoder struct {
	ctx   context.Context
	store backend.StorageAdapter
	w     io.Writer
	buf   bytes.Buffer
	enc   *json.Encoder
	// tag starts every placeholder of this export: random, so no stored
	// string can be taken for one.
	tag     string
	pending []table.Blob
}

func newLineEncoder(ctx context.Context, store backend.StorageAdapter, w io.Writer) *lineEncoder {
	var b [12]byte
	_, _ = rand.Read(b[:])
	le := &lineEncoder{ctx: ctx, store: store, w: w, tag: "omnigraph-export-blob-" + hex.EncodeToString(b[:]) + "-"}
	le.enc = json.NewEncoder(&le.buf)
	le.enc.SetEscapeHTML(false)
	return le
}

// value is p's JSON value of v for the current line.
func (le *lineEncoder) value(p *pg.Property, v any) any {
	if b, ok := v.(table.Blob); ok && b.Stored() {
		le.pending = append(le.pending, b)
		return le.tag + strconv.Itoa(len(le.pending)-1)
	}
	return p.JSONValue(v)
}

// emit writes one line and resets the placeholders.
func (le *lineEncoder) emit(line any) error {
	defer func() { le.pending = le.pending[:0] }()
	le.buf.Reset()
	if err := le.enc.Encode(line); err != nil {
		return err
	}
	out := le.buf.Bytes()
	for len(le.pending) > 0 {
		i := bytes.Index(out, []byte(`"`+le.tag))
		if i < 0 {
			return fmt.Errorf("a Blob placeholder went missing from its line")
		}
		end := bytes.IndexByte(out[i+1:], '"')
		n, err := strconv.Atoi(string(out[i+1+len(le.tag) : i+1+end]))
		if err != nil || n >= len(le.pending) {
			return fmt.Errorf("a Blob placeholder went missing from its line")
		}
		if _, err := le.w.Write(out[:i]); err != nil {
			return err
		}
		if _, err := io.WriteString(le.w, `"base64:`); err != nil {
			return err
		}
		b64 := base64.NewEncoder(base64.StdEncoding, le.w)
		if err := table.ReadBlob(le.ctx, le.store, le.pending[n], 0, le.pending[n].Size, b64); err != nil {
			return err
		}
		if err := b64.Close(); err != nil {
			return err
		}
		if _, err := io.WriteString(le.w, `"`); err != nil {
			return err
		}
		out = out[i+1+end+1:]
		le.pending[n] = table.Blob{}
		if allDone(le.pending) {
			break
		}
	}
	_, err := le.w.Write(out)
	return err
}

func allDone(bs []table.Blob) bool {
	for _, b := range bs {
		if b.Stored() {
			return false
		}
	}
	return true
}
