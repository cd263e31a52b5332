package query

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/lang/pg"
	"github.com/omnigraph-go/omnigraph/table"
)

// The query tests build their data by staging table appends straight
// through the write pipeline (BeginWrite → Stage → Commit), so they do not
// depend on the load command. Lines use the load format:
//
//	{"type":"Person","data":{...}}
//	{"edge":"Knows","from":"alice","to":"bob","data":{"id":"k1",...}}
//
// Edge ids may be given as data.id so expected orders are fixed.

func socialSchema(t testing.TB) string {
	t.Helper()
	src, err := os.ReadFile("../../examples/social.pg")
	if err != nil {
		t.Fatalf("read the example schema: %v", err)
	}
	return string(src)
}

// qAppend commits lines to branch as one graph commit.
func qAppend(t testing.TB, g *graph.Graph, branch, lines string) *graph.Result {
	t.Helper()
	ctx := context.Background()
	cat, err := g.Schema(ctx, branch)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]map[string]any{} // table key → rows
	schemas := map[string]*arrow.Schema{}
	n := 0
	for _, line := range strings.Split(lines, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		var env struct {
			Type, Edge, From, To string
			Data                 map[string]any
		}
		if err := json.Unmarshal([]byte(line), &env); err != nil {
			t.Fatalf("fixture line %q: %v", line, err)
		}
		data := env.Data
		if data == nil {
			data = map[string]any{}
		}
		id, _ := data["id"].(string)
		delete(data, "id")
		switch {
		case env.Type != "":
			nt, ok := cat.Node(env.Type)
			if !ok {
				t.Fatalf("fixture: no node type %s", env.Type)
			}
			row, err := nt.CoerceRow(data)
			if err != nil {
				t.Fatalf("fixture line %q: %v", line, err)
			}
			if id == "" {
				if id, err = nt.IDFor(row); err != nil {
					t.Fatal(err)
				}
			}
			row[pg.ColID] = id
			k := graph.NodeTableKey(nt.Name)
			rows[k] = append(rows[k], row)
			schemas[k] = nt.ArrowSchema()
		default:
			et, ok := cat.Edge(env.Edge)
			if !ok {
				t.Fatalf("fixture: no edge type %s", env.Edge)
			}
			row, err := et.CoerceRow(data)
			if err != nil {
				t.Fatalf("fixture line %q: %v", line, err)
			}
			if id == "" {
				n++
				id = fmt.Sprintf("%s-%04d", strings.ToLower(et.Name), n)
			}
			row[pg.ColID], row[pg.ColSrc], row[pg.ColDst] = id, env.From, env.To
			k := graph.EdgeTableKey(et.Name)
			rows[k] = append(rows[k], row)
			schemas[k] = et.ArrowSchema()
		}
	}
	w, err := g.BeginWrite(ctx, branch, graph.WriteOptions{Kind: graph.KindLoad})
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		rec := testRecord(t, schemas[k], rows[k])
		if err := w.Stage(ctx, k, func(ctx context.Context, base *table.Dataset) (*table.Staged, error) {
			return base.StageAppend(ctx, rec)
		}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := w.Commit(ctx)
	if err != nil {
		t.Fatalf("commit fixture: %v", err)
	}
	return res
}

// qDelete deletes node or edge rows by id in one commit.
func qDelete(t testing.TB, g *graph.Graph, branch, key string, ids ...string) {
	t.Helper()
	ctx := context.Background()
	w, err := g.BeginWrite(ctx, branch, graph.WriteOptions{Kind: graph.KindMutation, Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Stage(ctx, key, func(ctx context.Context, base *table.Dataset) (*table.Staged, error) {
		return base.StageChanges(ctx, table.Changes{DeleteKeys: ids})
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

func testRecord(t testing.TB, schema *arrow.Schema, rows []map[string]any) arrow.Record {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i, f := range schema.Fields() {
		for _, r := range rows {
			if err := appendTestValue(b.Field(i), r[f.Name]); err != nil {
				t.Fatalf("column %s: %v", f.Name, err)
			}
		}
	}
	return b.NewRecordBatch()
}

func appendTestValue(b array.Builder, v any) error {
	if v == nil {
		b.AppendNull()
		return nil
	}
	switch bb := b.(type) {
	case *array.StringBuilder:
		bb.Append(v.(string))
	case *array.BooleanBuilder:
		bb.Append(v.(bool))
	case *array.Int32Builder:
		bb.Append(v.(int32))
	case *array.Int64Builder:
		bb.Append(v.(int64))
	case *array.Uint32Builder:
		bb.Append(v.(uint32))
	case *array.Uint64Builder:
		bb.Append(v.(uint64))
	case *array.Float32Builder:
		bb.Append(v.(float32))
	case *array.Float64Builder:
		bb.Append(v.(float64))
	case *array.Date32Builder:
		bb.Append(arrow.Date32(v.(int32)))
	case *array.TimestampBuilder:
		bb.Append(arrow.Timestamp(v.(int64)))
	case *array.BinaryBuilder:
		bb.Append(v.([]byte))
	case *array.FixedSizeListBuilder:
		bb.Append(true)
		vb := bb.ValueBuilder().(*array.Float32Builder)
		for _, x := range v.([]float32) {
			vb.Append(x)
		}
	case *array.ListBuilder:
		bb.Append(true)
		for _, x := range v.([]any) {
			if err := appendTestValue(bb.ValueBuilder(), x); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("no test appender for %T", b)
	}
	return nil
}

// socialFixture is a small graph whose query answers are computed by hand
// in the tests. Knows: alice→bob, alice→carol, bob→carol, carol→dave,
// dave→alice (a cycle), erin→erin (a self-loop). WorksAt: alice, bob →
// acme; carol → globex. Follows: bob→alice twice (parallel edges). Posts
// post1..3 carry hand-made embeddings (docs search examples).
const socialFixture = `
{"type":"Person","data":{"handle":"alice","name":"Alice","age":30,"city":"Lisbon","email":"alice@x.io","joined":"2020-01-01","interests":["chess","go"]}}
{"type":"Person","data":{"handle":"bob","name":"Bob","age":25,"city":"Porto","email":"bob@y.org","joined":"2021-06-15","interests":["chess"]}}
{"type":"Person","data":{"handle":"carol","name":"Carol","age":40,"city":"Lisbon","joined":"2019-03-10"}}
{"type":"Person","data":{"handle":"dave","name":"Dave"}}
{"type":"Person","data":{"handle":"erin","name":"Erin","age":35,"city":"Lisbon","joined":"2023-09-01","interests":["go"]}}
{"type":"Company","data":{"slug":"acme","name":"Acme","industry":"software","founded":1999}}
{"type":"Company","data":{"slug":"globex","name":"Globex","industry":"finance"}}
{"type":"Topic","data":{"slug":"graphs","title":"Graphs"}}
{"type":"Post","data":{"id":"post1","text":"hello graphs","visibility":"public","created":"2024-01-02T03:04:05Z","embedding":[1,0,0,0,0,0,0,0]}}
{"type":"Post","data":{"id":"post2","text":"Graph databases store graphs as nodes and edges","visibility":"public","created":"2024-02-01T00:00:00Z","embedding":[0.8,0.6,0,0,0,0,0,0]}}
{"type":"Post","data":{"id":"post3","text":"Weekend hiking photos","visibility":"friends","created":"2024-03-01T00:00:00Z","embedding":[0,0,0,0,0,0,0,1]}}
{"edge":"Knows","from":"alice","to":"bob","data":{"id":"k1","since":"2015-01-01"}}
{"edge":"Knows","from":"alice","to":"carol","data":{"id":"k2"}}
{"edge":"Knows","from":"bob","to":"carol","data":{"id":"k3"}}
{"edge":"Knows","from":"carol","to":"dave","data":{"id":"k4"}}
{"edge":"Knows","from":"dave","to":"alice","data":{"id":"k5"}}
{"edge":"Knows","from":"erin","to":"erin","data":{"id":"k6"}}
{"edge":"WorksAt","from":"alice","to":"acme","data":{"id":"w1","title":"lead engineer","since":"2019-05-01"}}
{"edge":"WorksAt","from":"bob","to":"acme","data":{"id":"w2","title":"engineer","since":"2021-03-01"}}
{"edge":"WorksAt","from":"carol","to":"globex","data":{"id":"w3","since":"2018-01-01"}}
{"edge":"Follows","from":"bob","to":"alice","data":{"id":"f1"}}
{"edge":"Follows","from":"bob","to":"alice","data":{"id":"f2"}}
{"edge":"Wrote","from":"alice","to":"post1","data":{"id":"wr1"}}
{"edge":"About","from":"post1","to":"graphs","data":{"id":"ab1"}}
`

// newSocialGraph initialises the example schema in store and loads the
// fixture in one commit.
func newSocialGraph(t testing.TB, store backend.StorageAdapter) *graph.Graph {
	t.Helper()
	g, err := graph.Init(context.Background(), store, socialSchema(t), graph.InitOptions{Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	qAppend(t, g, "main", socialFixture)
	return g
}

// rowsText renders a result compactly for comparisons: rows separated by
// " | ", values by ",", JSON spelling of dates.
func rowsText(r *Result) string {
	var rows []string
	for i := range r.Rows {
		var vals []string
		for j := range r.Columns {
			v := r.JSONValue(i, j)
			switch x := v.(type) {
			case json.RawMessage:
				vals = append(vals, string(x))
			case nil:
				vals = append(vals, "null")
			default:
				vals = append(vals, fmt.Sprint(x))
			}
		}
		rows = append(rows, strings.Join(vals, ","))
	}
	return strings.Join(rows, " | ")
}
