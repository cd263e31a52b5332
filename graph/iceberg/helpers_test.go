package iceberg_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/hadoop"
	icetable "github.com/apache/iceberg-go/table"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/iceberg"
	"github.com/omnigraph-go/omnigraph/graph/load"
	"github.com/omnigraph-go/omnigraph/graph/mutate"
	"github.com/omnigraph-go/omnigraph/graph/query"
	"github.com/omnigraph-go/omnigraph/table"
)

// testSchema covers every column kind the Iceberg mapping handles.
const testSchema = `
node Person {
  handle: String @key
  name: String
  age: I32?
  score: F64?
  rank: F32?
  active: Bool?
  born: Date?
  seen: DateTime?
  tags: [String]?
  emb: Vector(3)?
  visits: U32?
  big: I64?
}
node Company {
  slug: String @key
  founded: I64?
}
edge Knows: Person -> Person {
  weight: I32?
}
edge WorksAt: Person -> Company
`

const testSeed = `{"type":"Person","data":{"handle":"ada","name":"Ada","age":36,"score":1.5,"rank":0.25,"active":true,"born":"1815-12-10","seen":"2024-01-31T12:00:00Z","tags":["math","poet"],"emb":[0.5,1,2],"visits":7,"big":9007199254740993}}
{"type":"Person","data":{"handle":"bob","name":"Bob","age":41}}
{"type":"Person","data":{"handle":"cy","name":"Cy","tags":[]}}
{"type":"Company","data":{"slug":"acme","founded":1999}}
{"edge":"Knows","from":"ada","to":"bob","data":{"weight":1}}
{"edge":"Knows","from":"bob","to":"cy"}
{"edge":"WorksAt","from":"ada","to":"acme"}
`

var tableKeys = []string{"node:Person", "node:Company", "edge:Knows", "edge:WorksAt"}

func loadData(t testing.TB, g *graph.Graph, branch, data string) {
	t.Helper()
	if _, err := load.Run(context.Background(), g, strings.NewReader(data), load.Options{Branch: branch, Mode: load.Merge}); err != nil {
		t.Fatalf("load into %s: %v", branch, err)
	}
}

func mutateQ(t testing.TB, g *graph.Graph, branch, src string) {
	t.Helper()
	if _, err := mutate.Query(context.Background(), g, src, "", mutate.Options{Branch: branch}); err != nil {
		t.Fatalf("mutate %s: %s: %v", branch, src, err)
	}
}

// canon renders value i of a column so that the graph's Arrow types and
// the Iceberg reader's agree: integers of any width as decimal, floats at
// their own precision, dates as days, timestamps as microseconds, lists
// bracketed.
func canon(a arrow.Array, i int) string {
	if a.IsNull(i) {
		return "null"
	}
	switch c := a.(type) {
	case *array.String:
		return strconv.Quote(c.Value(i))
	case *array.LargeString:
		return strconv.Quote(c.Value(i))
	case *array.Boolean:
		return strconv.FormatBool(c.Value(i))
	case *array.Int32:
		return strconv.FormatInt(int64(c.Value(i)), 10)
	case *array.Int64:
		return strconv.FormatInt(c.Value(i), 10)
	case *array.Uint32:
		return strconv.FormatUint(uint64(c.Value(i)), 10)
	case *array.Uint64:
		return strconv.FormatUint(c.Value(i), 10)
	case *array.Float32:
		return strconv.FormatFloat(float64(c.Value(i)), 'g', -1, 32)
	case *array.Float64:
		return strconv.FormatFloat(c.Value(i), 'g', -1, 64)
	case *array.Date32:
		return strconv.FormatInt(int64(c.Value(i)), 10)
	case *array.Timestamp:
		return strconv.FormatInt(int64(c.Value(i)), 10)
	case *array.Binary:
		return fmt.Sprintf("%x", c.Value(i))
	case array.ListLike:
		lo, hi := c.ValueOffsets(i)
		vals := c.ListValues()
		parts := make([]string, 0, hi-lo)
		for j := lo; j < hi; j++ {
			parts = append(parts, canon(vals, int(j)))
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	return fmt.Sprintf("?%s:%s", a.DataType(), a.ValueStr(i))
}

// renderRecords renders rows as sorted "col=v|col=v" lines over the given
// columns (every column of the first record when cols is nil).
func renderRecords(recs []arrow.RecordBatch, cols []string) []string {
	var out []string
	for _, r := range recs {
		idx := make([]int, 0, len(cols))
		for _, c := range cols {
			ix := r.Schema().FieldIndices(c)
			if len(ix) == 0 {
				idx = append(idx, -1)
				continue
			}
			idx = append(idx, ix[0])
		}
		for row := 0; row < int(r.NumRows()); row++ {
			parts := make([]string, len(cols))
			for k, c := range cols {
				v := "absent"
				if idx[k] >= 0 {
					v = canon(r.Column(idx[k]), row)
				}
				parts[k] = c + "=" + v
			}
			out = append(out, strings.Join(parts, "|"))
		}
	}
	sort.Strings(out)
	return out
}

// graphRows renders one table of a graph snapshot (what `omnigraph query`
// reads) with its own column names.
func graphRows(t testing.TB, s *graph.Snapshot, key string) ([]string, []string) {
	t.Helper()
	ctx := context.Background()
	ds, err := s.OpenTable(ctx, key)
	if err != nil {
		t.Fatalf("open %s: %v", key, err)
	}
	recs, err := ds.Scan(ctx, table.ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cols := make([]string, 0)
	for _, f := range ds.Schema().Fields() {
		cols = append(cols, f.Name)
	}
	out := renderRecords(recs, cols)
	for _, r := range recs {
		r.Release()
	}
	return out, cols
}

// queryIDs runs an `omnigraph query` read of every id of a node type.
func queryIDs(t testing.TB, s *graph.Snapshot, typ string) []string {
	t.Helper()
	res, err := query.Run(context.Background(), s, fmt.Sprintf("query q() { match { $x: %s } return { $x } }", typ), "", nil)
	if err != nil {
		t.Fatalf("query %s: %v", typ, err)
	}
	var out []string
	for i := range res.Rows {
		var node struct {
			ID string `json:"id"`
		}
		raw, _ := res.JSONValue(i, 0).(json.RawMessage)
		if err := json.Unmarshal(raw, &node); err != nil || node.ID == "" {
			t.Fatalf("query %s: row %d: %s (%v)", typ, i, raw, err)
		}
		out = append(out, node.ID)
	}
	sort.Strings(out)
	return out
}

// staticCatalog opens the static metadata with iceberg-go's own Hadoop
// catalog, warehouse <root>/_iceberg.
func staticCatalog(t testing.TB, root string, props ice.Properties) catalog.Catalog {
	t.Helper()
	if props == nil {
		props = ice.Properties{}
	}
	c, err := hadoop.NewCatalog("static", iceberg.WarehouseOf(root), props)
	if err != nil {
		t.Fatalf("hadoop catalog: %v", err)
	}
	return c
}

// scanSelector picks what to scan: a ref, or a snapshot id.
type scanSelector struct {
	ref      string
	snapshot int64
}

// icebergRows scans a table with iceberg-go's own scanner.
func icebergRows(t testing.TB, tbl *icetable.Table, sel scanSelector, cols []string) []string {
	t.Helper()
	ctx := context.Background()
	var scan *icetable.Scan
	switch {
	case sel.snapshot != 0:
		scan = tbl.Scan(icetable.WithSnapshotID(sel.snapshot))
	default:
		var err error
		scan, err = tbl.Scan().UseRef(sel.ref)
		if err != nil {
			t.Fatalf("scan ref %s: %v", sel.ref, err)
		}
	}
	at, err := scan.ToArrowTable(ctx)
	if err != nil {
		t.Fatalf("iceberg scan of %s (%+v): %v", tbl.Identifier(), sel, err)
	}
	defer at.Release()
	tr := array.NewTableReader(at, math.MaxInt32)
	defer tr.Release()
	var recs []arrow.RecordBatch
	for tr.Next() {
		r := tr.RecordBatch()
		r.Retain()
		recs = append(recs, r)
	}
	out := renderRecords(recs, cols)
	for _, r := range recs {
		r.Release()
	}
	return out
}

// snapshotOfCommit finds the snapshot whose summary names a graph commit.
func snapshotOfCommit(tbl *icetable.Table, commit string) (int64, bool) {
	for _, s := range tbl.Metadata().Snapshots() {
		if s.Summary != nil && s.Summary.Properties[iceberg.SummaryCommitID] == commit {
			return s.SnapshotID, true
		}
	}
	return 0, false
}

func httpGet(t testing.TB, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
