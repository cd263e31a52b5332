package iceberg_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	ice "github.com/apache/iceberg-go"
	icetable "github.com/apache/iceberg-go/table"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/load"
	"github.com/omnigraph-go/omnigraph/table"
)

// TestBlobColumnReadsAsStruct: a Blob column reads through Iceberg as
// struct<size, sha256, data, ref, uri>: every managed value's length and
// digest, the bytes of inline values, null data and a ref for values
// stored in the blob area, the URI of an external one, and null for a
// null cell. A later write keeps the struct's field ids.
func TestBlobColumnReadsAsStruct(t *testing.T) {
	ctx := context.Background()
	r := newLocalRig(t)
	r.init("node Doc {\n  slug: String @key\n  body: Blob?\n}\n")
	r.g.Close()
	pol, err := graph.NewExternalBlobPolicy([]string{"s3://media/"})
	if err != nil {
		t.Fatal(err)
	}
	g, err := graph.Open(ctx, r.store, graph.OpenOptions{ExternalBlobs: pol})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	r.g = g
	small := []byte("hello")
	big := make([]byte, table.BlobInlineMax+1)
	for i := range big {
		big[i] = byte(i)
	}
	data := fmt.Sprintf(`{"type":"Doc","data":{"slug":"s","body":"base64:%s"}}
{"type":"Doc","data":{"slug":"b","body":"base64:%s"}}
{"type":"Doc","data":{"slug":"e","body":"s3://media/x.png"}}
{"type":"Doc","data":{"slug":"n"}}
`, base64.StdEncoding.EncodeToString(small), base64.StdEncoding.EncodeToString(big))
	if _, err := load.Run(ctx, g, strings.NewReader(data), load.Options{Mode: load.Merge}); err != nil {
		t.Fatal(err)
	}
	r.sync()
	tbl := r.loadTable(r.open(), "node:Doc")
	f, ok := tbl.Schema().FindFieldByName("body")
	st, isStruct := f.Type.(*ice.StructType)
	if !ok || !isStruct {
		t.Fatalf("body column: %v", f)
	}
	var names []string
	for _, sf := range st.FieldList {
		names = append(names, sf.Name)
	}
	if !slices.Equal(names, []string{"size", "sha256", "data", "ref", "uri"}) {
		t.Fatalf("body fields %v, want size, sha256, data, ref, uri", names)
	}
	want := []string{
		fmt.Sprintf("b|size=%d|sha=%s|data=null|ref=stored|uri=null", len(big), table.InlineBlob(big).SHA256),
		"e|size=null|sha=null|data=null|ref=null|uri=s3://media/x.png",
		"n|null",
		fmt.Sprintf("s|size=5|sha=%s|data=%x|ref=null|uri=null", table.InlineBlob(small).SHA256, small),
	}
	if got := blobRows(t, tbl); !slices.Equal(got, want) {
		t.Fatalf("iceberg-go read\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A later write: the column keeps its ids.
	if _, err := load.Run(ctx, g, strings.NewReader(`{"type":"Doc","data":{"slug":"t","body":"base64:aGk="}}`), load.Options{Mode: load.Merge}); err != nil {
		t.Fatal(err)
	}
	r.sync()
	tbl2 := r.loadTable(r.open(), "node:Doc")
	f2, _ := tbl2.Schema().FindFieldByName("body")
	if !f2.Type.Equals(f.Type) || f2.ID != f.ID {
		t.Fatalf("body changed from %v (%d) to %v (%d)", f.Type, f.ID, f2.Type, f2.ID)
	}
	if got := blobRows(t, tbl2); len(got) != 5 {
		t.Fatalf("after the second write: %v", got)
	}
}

// blobRows reads slug and body of every Doc row, sorted.
func blobRows(t *testing.T, tbl *icetable.Table) []string {
	t.Helper()
	at, err := tbl.Scan().ToArrowTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	tr := array.NewTableReader(at, math.MaxInt32)
	defer tr.Release()
	var out []string
	for tr.Next() {
		rec := tr.RecordBatch()
		slugs := rec.Column(rec.Schema().FieldIndices("slug")[0])
		body := rec.Column(rec.Schema().FieldIndices("body")[0]).(*array.Struct)
		bt := body.DataType().(interface{ FieldIdx(string) (int, bool) })
		field := func(name string, i int) string {
			k, ok := bt.FieldIdx(name)
			if !ok {
				return "absent"
			}
			return canon(body.Field(k), i)
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			slug := strings.Trim(canon(slugs, i), `"`)
			if body.IsNull(i) {
				out = append(out, slug+"|null")
				continue
			}
			ref := field("ref", i)
			if strings.HasPrefix(ref, `"nodes/Doc/_blobs/`) {
				ref = "stored"
			}
			out = append(out, fmt.Sprintf("%s|size=%s|sha=%s|data=%s|ref=%s|uri=%s", slug, field("size", i),
				strings.Trim(field("sha256", i), `"`), field("data", i), ref, strings.Trim(field("uri", i), `"`)))
		}
	}
	slices.Sort(out)
	return out
}
