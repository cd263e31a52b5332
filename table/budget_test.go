package table

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/omnigraph-go/omnigraph/backend/counter"
)

// TestRequestBudgets asserts the request counts of the hot paths, and that
// they do not grow with history depth.
func TestRequestBudgets(t *testing.T) {
	ctx := context.Background()
	var results []string
	for _, depth := range []int{10, 1000} {
		t.Run(fmt.Sprintf("depth_%d", depth), func(t *testing.T) {
			store, cnt := countedStore()
			ds := mustCreate(t, store)
			for i := 0; ds.Version() < uint64(depth); i++ {
				ds = mustAppend(t, ds, people("h", i, 1))
			}
			check := func(name string, want counter.Counts, run func()) {
				t.Helper()
				cnt.Reset()
				run()
				got := cnt.Snapshot()
				got.RoundTrips = 0
				if got != want {
					t.Fatalf("%s at depth %d: %s, want %s", name, depth, got, want)
				}
				results = append(results, fmt.Sprintf("%s@%d: %s", name, depth, got))
			}
			check("open known version", counter.Counts{Get: 1, Total: 1}, func() {
				d, err := OpenVersion(ctx, store, testPath, MainBranch, ds.Version())
				if err != nil || d.Version() != ds.Version() {
					t.Fatal(err)
				}
			})
			check("open latest", counter.Counts{List: 1, Get: 1, Total: 2}, func() {
				d, err := Open(ctx, store, testPath, MainBranch)
				if err != nil || d.Version() != ds.Version() {
					t.Fatal(err)
				}
			})
			check("latest version", counter.Counts{List: 1, Total: 1}, func() {
				if v, err := LatestVersion(ctx, store, testPath, MainBranch); err != nil || v != ds.Version() {
					t.Fatal(v, err)
				}
			})
			rec := record(t, people("new", 0, 3))
			defer rec.Release()
			check("append commit", counter.Counts{Put: 1, CondPut: 1, Total: 2}, func() {
				st, err := ds.StageAppend(ctx, rec)
				if err != nil {
					t.Fatal(err)
				}
				ds, err = Commit(ctx, st)
				if err != nil {
					t.Fatal(err)
				}
			})
			check("transaction at", counter.Counts{Get: 1, Total: 1}, func() {
				if tx, err := ds.TransactionAt(ctx, 5); err != nil || tx.ReadVersion != 4 {
					t.Fatal(tx, err)
				}
			})
		})
	}
	for _, r := range results {
		t.Log(r)
	}
}

// TestParquetReadableDirectly reads a fragment with arrow-go's own Parquet
// reader, not through this package, and compares rows.
func TestParquetReadableDirectly(t *testing.T) {
	ctx := context.Background()
	store := newStore()
	ds := mustCreate(t, store)
	rows := people("p", 0, 1000)
	rows[7].age = -1 // a null
	ds = mustAppend(t, ds, rows)
	f := ds.Manifest().Fragments[0]
	data, _, err := store.Get(ctx, testPath+"/"+f.Path)
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	cc, err := rdr.MetaData().RowGroup(0).ColumnChunk(0)
	if err != nil {
		t.Fatal(err)
	}
	if c := cc.Compression().String(); c != "ZSTD" {
		t.Fatalf("compression = %s, want ZSTD", c)
	}
	tbl, err := pqarrow.ReadTable(ctx, bytes.NewReader(data), nil, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	tr := arrowTableRecords(t, tbl)
	defer releaseAll(tr)
	if got := renderRecs(tr); !equalRows(got, render(rows)) {
		t.Fatalf("direct read differs: %d rows vs %d", len(got), len(rows))
	}
}

func arrowTableRecords(t *testing.T, tbl arrow.Table) []arrow.Record {
	t.Helper()
	var out []arrow.Record
	tr := newTableReader(tbl)
	defer tr.Release()
	for tr.Next() {
		r := tr.RecordBatch()
		r.Retain()
		out = append(out, r)
	}
	return out
}
