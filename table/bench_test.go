package table

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/omnigraph-go/omnigraph/backend/counter"
	"github.com/omnigraph-go/omnigraph/backend/local"
	"github.com/omnigraph-go/omnigraph/backend/mem"
)

// benchRecord builds n rows with ids drawn from perm (so key statistics do
// not prune fragments).
func benchRecord(ids []string, from, n int) arrow.Record {
	b := array.NewRecordBuilder(memory.DefaultAllocator, personSchema)
	defer b.Release()
	for i := from; i < from+n; i++ {
		b.Field(0).(*array.StringBuilder).Append(ids[i])
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("name-%d", i))
		b.Field(2).(*array.Int64Builder).Append(int64(i % 97))
	}
	return b.NewRecordBatch()
}

func shuffledIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("id%08d", i)
	}
	r := rand.New(rand.NewPCG(1, 2))
	r.Shuffle(n, func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	return ids
}

// BenchmarkAppendVsParquet appends batches through StageAppend+Commit and
// writes the same batches straight to Parquet with pqarrow (zstd) into the
// same kind of store, and reports the time ratio table/parquet.
func BenchmarkAppendVsParquet(b *testing.B) {
	const batches, rowsPer = 40, 10_000
	ids := shuffledIDs(batches * rowsPer)
	recs := make([]arrow.Record, batches)
	for i := range recs {
		recs[i] = benchRecord(ids, i*rowsPer, rowsPer)
	}
	defer releaseAll(recs)
	ctx := context.Background()
	for n := 0; n < b.N; n++ {
		// Baseline: pqarrow straight into the store.
		raw := mem.New()
		t0 := time.Now()
		for i, r := range recs {
			var buf bytes.Buffer
			props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd))
			w, err := pqarrow.NewFileWriter(personSchema, &buf, props, pqarrow.DefaultWriterProps())
			if err != nil {
				b.Fatal(err)
			}
			if err := w.Write(r); err != nil {
				b.Fatal(err)
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
			if _, err := raw.Put(ctx, fmt.Sprintf("raw/%d.parquet", i), buf.Bytes()); err != nil {
				b.Fatal(err)
			}
		}
		baseline := time.Since(t0)

		store := counter.New(mem.New())
		ds, err := Create(ctx, store, testPath, personSchema, "id")
		if err != nil {
			b.Fatal(err)
		}
		store.Reset()
		t1 := time.Now()
		for _, r := range recs {
			st, err := ds.StageAppend(ctx, r)
			if err != nil {
				b.Fatal(err)
			}
			if ds, err = Commit(ctx, st); err != nil {
				b.Fatal(err)
			}
		}
		tableT := time.Since(t1)
		c := store.Snapshot()
		ratio := float64(tableT) / float64(baseline)
		rowsPerSec := float64(batches*rowsPer) / tableT.Seconds()
		b.ReportMetric(ratio, "x_parquet_time")
		b.ReportMetric(rowsPerSec, "rows/s")
		b.Logf("append %d batches x %d rows: table %v, raw pqarrow %v, ratio %.2fx; requests %s (%.1f per commit)",
			batches, rowsPer, tableT, baseline, ratio, c, float64(c.Total)/batches)
	}
}

// BenchmarkLookupVsScan compares a point lookup through the key index with
// a full scan for the same key at 1M rows, reporting time and request ratios.
func BenchmarkLookupVsScan(b *testing.B) {
	const total, perFrag = 1_000_000, 250_000
	ctx := context.Background()
	ids := shuffledIDs(total)
	// The local filesystem store serves ranged reads without copying whole
	// objects, like an object store does.
	disk, err := local.New(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	store := counter.New(disk)
	ds, err := Create(ctx, store, testPath, personSchema, "id")
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < total; i += perFrag {
		r := benchRecord(ids, i, perFrag)
		st, err := ds.StageAppend(ctx, r)
		r.Release()
		if err != nil {
			b.Fatal(err)
		}
		if ds, err = Commit(ctx, st); err != nil {
			b.Fatal(err)
		}
	}
	st, err := ds.StageCreateIndex(ctx, "id")
	if err != nil {
		b.Fatal(err)
	}
	if ds, err = Commit(ctx, st); err != nil {
		b.Fatal(err)
	}
	probe := []string{ids[12345], ids[500_001], ids[999_999]}
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		const lookups = 30
		store.Reset()
		t0 := time.Now()
		for i := 0; i < lookups; i++ {
			// A fresh handle each time: the index directory is not cached.
			h, err := OpenVersion(ctx, store, testPath, MainBranch, ds.Version())
			if err != nil {
				b.Fatal(err)
			}
			rec, err := h.Lookup(ctx, probe[i%len(probe)])
			if err != nil || rec.NumRows() != 1 {
				b.Fatalf("lookup: %v", err)
			}
			rec.Release()
		}
		lookupT := time.Since(t0) / lookups
		lc := store.Snapshot()

		const scans = 3
		store.Reset()
		t1 := time.Now()
		for i := 0; i < scans; i++ {
			h, err := OpenVersion(ctx, store, testPath, MainBranch, ds.Version())
			if err != nil {
				b.Fatal(err)
			}
			recs, err := h.Scan(ctx, ScanOptions{Filter: In("id", probe[i%len(probe)])})
			if err != nil || rows(recs) != 1 {
				b.Fatalf("scan: %v", err)
			}
			releaseAll(recs)
		}
		scanT := time.Since(t1) / scans
		sc := store.Snapshot()
		ratio := float64(scanT) / float64(lookupT)
		b.ReportMetric(ratio, "x_faster_than_scan")
		b.ReportMetric(float64(lc.Total)/lookups, "req/lookup")
		b.ReportMetric(float64(sc.Total)/scans, "req/scan")
		b.Logf("1M rows in %d fragments: indexed lookup %v (%.1f requests: %s / %d), full scan %v (%.1f requests), lookup is %.0fx faster",
			total/perFrag, lookupT, float64(lc.Total)/lookups, lc, lookups, scanT, float64(sc.Total)/scans, ratio)
	}
}
