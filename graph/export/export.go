// Package export writes one snapshot of a graph as the load envelope: the
// strict graph-batch NDJSON that 'omnigraph load' reads (graph/load). Node
// lines come first, then edge lines; within each, types in name order and
// rows in id order, every row with its id. Together with the snapshot's
// schema source (Result.Schema) it is the rebuild path: init with the schema,
// then load the file with --mode overwrite (or append into the empty graph).
//
// Export is a read: it pins one snapshot and takes no lock. It is streamed:
// per table it holds the ids (one string column) and one chunk of rows at a
// time, never the table or the graph.
package export

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/change"
	"github.com/omnigraph-go/omnigraph/lang/pg"
	"github.com/omnigraph-go/omnigraph/table"
)

// ChunkRows is how many rows one read of a table fetches (by id, in id
// order) before they are written.
var ChunkRows = 4096

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
	nodes := append([]*pg.NodeType(nil), cat.Nodes...)
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	for _, n := range nodes {
		if len(want) > 0 && !want[n.Name] {
			continue
		}
		c, err := writeTable(ctx, s, bw, graph.NodeTableKey(n.Name), func(r change.Row) any {
			data := make(map[string]any, len(n.Properties)+1)
			data[pg.ColID] = r[pg.ColID]
			for _, p := range n.Properties {
				data[p.Name] = p.JSONValue(r[p.Name])
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
		c, err := writeTable(ctx, s, bw, graph.EdgeTableKey(e.Name), func(r change.Row) any {
			data := make(map[string]any, len(e.Properties)+1)
			data[pg.ColID] = r[pg.ColID]
			for _, p := range e.Properties {
				data[p.Name] = p.JSONValue(r[p.Name])
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
func writeTable(ctx context.Context, s *graph.Snapshot, w io.Writer, key string, line func(change.Row) any) (int, error) {
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
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	n := 0
	for start := 0; start < len(ids); start += ChunkRows {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		chunk := ids[start:min(start+ChunkRows, len(ids))]
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
			if err := enc.Encode(line(r)); err != nil {
				return n, fmt.Errorf("encode row %v: %w", r[pg.ColID], err)
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
