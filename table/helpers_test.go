package table

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/mem"
)

const testPath = "nodes/Person"

var personSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.BinaryTypes.String},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "age", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
}, nil)

// person is one test row; age < 0 stands for null.
type person struct {
	id, name string
	age      int64
}

func people(prefix string, from, n int) []person {
	out := make([]person, n)
	for i := range out {
		out[i] = person{id: fmt.Sprintf("%s%06d", prefix, from+i), name: fmt.Sprintf("name-%d", from+i), age: int64(from + i)}
	}
	return out
}

func record(t testing.TB, rows []person) arrow.Record {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, personSchema)
	defer b.Release()
	for _, p := range rows {
		b.Field(0).(*array.StringBuilder).Append(p.id)
		b.Field(1).(*array.StringBuilder).Append(p.name)
		if p.age < 0 {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.Int64Builder).Append(p.age)
		}
	}
	return b.NewRecordBatch()
}

// rowsOf renders every live row of ds as "id|name|age", sorted.
func rowsOf(t testing.TB, ds *Dataset) []string {
	t.Helper()
	recs, err := ds.Scan(context.Background(), ScanOptions{})
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	defer releaseAll(recs)
	return renderRecs(recs)
}

func renderRecs(recs []arrow.Record) []string {
	out := []string{}
	for _, r := range recs {
		for i := 0; i < int(r.NumRows()); i++ {
			parts := make([]string, r.NumCols())
			for c := range parts {
				if r.Column(c).IsNull(i) {
					parts[c] = "null"
				} else {
					parts[c] = r.Column(c).ValueStr(i)
				}
			}
			out = append(out, strings.Join(parts, "|"))
		}
	}
	sort.Strings(out)
	return out
}

func render(rows []person) []string {
	out := []string{}
	for _, p := range rows {
		age := fmt.Sprint(p.age)
		if p.age < 0 {
			age = "null"
		}
		out = append(out, p.id+"|"+p.name+"|"+age)
	}
	sort.Strings(out)
	return out
}

func equalRows(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func newStore() backend.StorageAdapter { return mem.New() }

func mustCreate(t testing.TB, store backend.StorageAdapter) *Dataset {
	t.Helper()
	ds, err := Create(context.Background(), store, testPath, personSchema, "id")
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	return ds
}

func mustCommit(t testing.TB, st *Staged, err error) *Dataset {
	t.Helper()
	if err != nil {
		t.Fatalf("stage: %v", err)
	}
	ds, err := Commit(context.Background(), st)
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	return ds
}

func mustAppend(t testing.TB, ds *Dataset, rows []person) *Dataset {
	t.Helper()
	rec := record(t, rows)
	defer rec.Release()
	st, err := ds.StageAppend(context.Background(), rec)
	return mustCommit(t, st, err)
}

// keysOf lists every object key in the store.
func keysOf(t testing.TB, store backend.StorageAdapter) []string {
	t.Helper()
	objs, err := backend.ListAll(context.Background(), store, "")
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.Key
	}
	return out
}

// mc adapts a Stage call's two results into mustCommit.
func mc(t testing.TB) func(*Staged, error) *Dataset {
	return func(st *Staged, err error) *Dataset {
		t.Helper()
		return mustCommit(t, st, err)
	}
}
