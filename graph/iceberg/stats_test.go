package iceberg_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	ice "github.com/apache/iceberg-go"
	icetable "github.com/apache/iceberg-go/table"
)

// statsBatch is one batch of n Persons whose handles fall in three ranges, with
// nulls, long and multi-byte names (past truncate(16)) and every
// primitive kind of testSchema.
func statsBatch(prefix string, n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("%s-ünïcödé-näme-%03d-and-more", prefix, i)
		if i%3 == 0 {
			name = prefix + "-" // the smallest; the largest is long
		}
		age := fmt.Sprintf("%d", 20+i)
		if i%4 == 1 {
			age = "null"
		}
		fmt.Fprintf(&b, `{"type":"Person","data":{"handle":"%s%02d","name":"%s","age":%s,"score":%g,"rank":%g,"active":%t,"born":"19%02d-01-0%d","seen":"2024-0%d-01T00:00:00Z","visits":%d,"big":%d,"tags":["t"]}}`+"\n",
			prefix, i, name, age, float64(i)+0.5, float32(i)+0.25, i%2 == 0, 50+i, 1+i%9, 1+i%9, i*7, int64(i)*1_000_000_007)
	}
	return b.String()
}

// parquetColumns reads a data file (a file:// URI) with pqarrow.
func parquetColumns(t *testing.T, uri string) arrow.Table {
	t.Helper()
	f, err := os.Open(strings.TrimPrefix(uri, "file://"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pr, err := file.NewParquetReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// literalOf is value i of column a as an Iceberg literal of type typ, as
// a reader would compare it (U32/U64 read as long).
func literalOf(a arrow.Array, i int) ice.Literal {
	switch c := a.(type) {
	case *array.String:
		return ice.StringLiteral(c.Value(i))
	case *array.Boolean:
		return ice.BoolLiteral(c.Value(i))
	case *array.Int32:
		return ice.Int32Literal(c.Value(i))
	case *array.Int64:
		return ice.Int64Literal(c.Value(i))
	case *array.Uint32:
		return ice.Int64Literal(int64(c.Value(i)))
	case *array.Uint64:
		return ice.Int64Literal(int64(c.Value(i)))
	case *array.Float32:
		return ice.Float32Literal(c.Value(i))
	case *array.Float64:
		return ice.Float64Literal(c.Value(i))
	case *array.Date32:
		return ice.DateLiteral(c.Value(i))
	case *array.Timestamp:
		return ice.TimestampLiteral(c.Value(i))
	}
	return nil
}

// less orders two literals of one type as Iceberg does.
func less(a, b ice.Literal) bool {
	switch x := a.(type) {
	case ice.StringLiteral:
		return string(x) < string(b.(ice.StringLiteral))
	case ice.BoolLiteral:
		return !bool(x) && bool(b.(ice.BoolLiteral))
	case ice.Int32Literal:
		return x < b.(ice.Int32Literal)
	case ice.Int64Literal:
		return x < b.(ice.Int64Literal)
	case ice.Float32Literal:
		return x < b.(ice.Float32Literal)
	case ice.Float64Literal:
		return x < b.(ice.Float64Literal)
	case ice.DateLiteral:
		return x < b.(ice.DateLiteral)
	case ice.TimestampLiteral:
		return x < b.(ice.TimestampLiteral)
	}
	panic(fmt.Sprintf("less: %T", a))
}

// truncated is truncate(16) of a string bound: the first 16 code points,
// and for an upper bound the last of them incremented.
func truncated(s string, upper bool) string {
	r := []rune(s)
	if len(r) <= 16 {
		return s
	}
	r = r[:16]
	if upper {
		r[15]++
	}
	return string(r)
}

// nameIDs parses the table's schema.name-mapping.default (top level).
func nameIDs(t *testing.T, tbl *icetable.Table) map[string]int {
	t.Helper()
	var nm ice.NameMapping
	if err := json.Unmarshal([]byte(tbl.Properties()["schema.name-mapping.default"]), &nm); err != nil {
		t.Fatalf("name mapping: %v", err)
	}
	out := map[string]int{}
	for _, f := range nm {
		for _, n := range f.Names {
			out[n] = *f.FieldID
		}
	}
	return out
}

// liveEntries reads the current snapshot's live manifest entries with
// iceberg-go.
func liveEntries(t *testing.T, tbl *icetable.Table) []ice.ManifestEntry {
	t.Helper()
	fs, err := tbl.FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	mfs, err := tbl.CurrentSnapshot().Manifests(fs)
	if err != nil {
		t.Fatal(err)
	}
	var out []ice.ManifestEntry
	for _, mf := range mfs {
		es, err := mf.FetchEntries(fs, true)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, es...)
	}
	return out
}

// TestColumnStatistics: every data file's manifest entry carries
// value_counts, null_value_counts and lower/upper bounds (Iceberg's
// single-value binary form, strings truncated as truncate(16)) for every
// top-level primitive column, read back with iceberg-go and checked against
// the rows of the Parquet file itself; each position-delete file's entry
// bounds file_path by its data file and pos by the deleted offsets; and
// iceberg-go's scan planning with a key-range filter keeps only the file
// whose keys fall in the range (today's main writes no statistics and
// plans every file), reading the same rows as the graph.
func TestColumnStatistics(t *testing.T) {
	ctx := context.Background()
	r := newLocalRig(t)
	r.init(testSchema)
	for _, p := range []string{"a", "m", "x"} {
		loadData(t, r.g, "main", statsBatch(p, 12))
	}
	mutateQ(t, r.g, "main", `query q() { delete Person where handle = "m03" }`)
	mutateQ(t, r.g, "main", `query q() { delete Person where handle = "m07" }`)
	r.sync()
	// A later snapshot keeps the delete file (an EXISTING entry): its
	// statistics come from the sync state, not from reading it again.
	loadData(t, r.g, "main", statsBatch("z", 5))
	r.sync()
	tbl := r.loadTable(r.open(), "node:Person")
	ids := nameIDs(t, tbl)
	schema := tbl.Schema()

	var dataFiles, deleteFiles int
	for _, e := range liveEntries(t, tbl) {
		df := e.DataFile()
		if df.ContentType() == ice.EntryContentPosDeletes {
			if e.Status() != ice.EntryStatusEXISTING {
				t.Errorf("the delete file's entry is %v, want EXISTING (kept from the previous snapshot)", e.Status())
			}
			deleteFiles++
			checkDeleteStats(t, df)
			continue
		}
		dataFiles++
		pt := parquetColumns(t, df.FilePath())
		lower, upper := df.LowerBoundValues(), df.UpperBoundValues()
		checked := 0
		for c, f := range pt.Schema().Fields() {
			id, ok := ids[f.Name]
			if !ok {
				t.Fatalf("column %s of %s resolves to no field id", f.Name, df.FilePath())
			}
			field, _ := schema.FindFieldByID(id)
			typ, primitive := field.Type.(ice.PrimitiveType)
			if !primitive {
				if _, ok := df.ValueCounts()[id]; ok {
					t.Errorf("%s: nested column %s has a value count", df.FilePath(), f.Name)
				}
				continue
			}
			var nulls int64
			var lo, hi ice.Literal
			for _, chunk := range pt.Column(c).Data().Chunks() {
				for i := 0; i < chunk.Len(); i++ {
					if chunk.IsNull(i) {
						nulls++
						continue
					}
					v := literalOf(chunk, i)
					if lo == nil || less(v, lo) {
						lo = v
					}
					if hi == nil || less(hi, v) {
						hi = v
					}
				}
			}
			if got := df.ValueCounts()[id]; got != pt.NumRows() {
				t.Errorf("%s: %s value count %d, the file has %d rows", df.FilePath(), f.Name, got, pt.NumRows())
			}
			if got, ok := df.NullValueCounts()[id]; !ok || got != nulls {
				t.Errorf("%s: %s null count %d (%v), the file has %d nulls", df.FilePath(), f.Name, got, ok, nulls)
			}
			if lo == nil {
				continue
			}
			if s, ok := lo.(ice.StringLiteral); ok {
				lo, hi = ice.StringLiteral(truncated(string(s), false)), ice.StringLiteral(truncated(string(hi.(ice.StringLiteral)), true))
			}
			for _, b := range []struct {
				name string
				raw  []byte
				want ice.Literal
			}{{"lower", lower[id], lo}, {"upper", upper[id], hi}} {
				got, err := ice.LiteralFromBytes(typ, b.raw)
				if err != nil {
					t.Errorf("%s: %s %s bound %x: %v", df.FilePath(), f.Name, b.name, b.raw, err)
					continue
				}
				if !got.Equals(b.want) {
					t.Errorf("%s: %s %s bound %v, the rows give %v", df.FilePath(), f.Name, b.name, got, b.want)
				}
			}
			checked++
		}
		if checked < 10 {
			t.Errorf("%s: bounds checked for %d columns, want every primitive one", df.FilePath(), checked)
		}
	}
	if dataFiles != 4 || deleteFiles != 1 {
		t.Fatalf("%d data files and %d delete files, want 4 and 1", dataFiles, deleteFiles)
	}

	// Scan planning prunes by the bounds.
	filter := ice.NewAnd(ice.GreaterThanEqual(ice.Reference("handle"), "m"), ice.LessThan(ice.Reference("handle"), "n"))
	tasks, err := tbl.Scan(icetable.WithRowFilter(filter)).PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 1 || len(tasks[0].DeleteFiles) != 1 {
		t.Fatalf("a scan of handles m..n plans %d files, want the one holding them (with its delete file)", len(tasks))
	}
	at, err := tbl.Scan(icetable.WithRowFilter(filter), icetable.WithSelectedFields("handle")).ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	var got []string
	for _, chunk := range at.Column(0).Data().Chunks() {
		for i := 0; i < chunk.Len(); i++ {
			got = append(got, chunk.(*array.String).Value(i))
		}
	}
	slices.Sort(got)
	var want []string
	for i := 0; i < 12; i++ {
		if i != 3 && i != 7 {
			want = append(want, fmt.Sprintf("m%02d", i))
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("filtered scan read %v, want %v", got, want)
	}
	for _, f := range []ice.BooleanExpression{ice.LessThan(ice.Reference("age"), int32(0)), ice.GreaterThan(ice.Reference("score"), 1e9)} {
		if tasks, err := tbl.Scan(icetable.WithRowFilter(f)).PlanFiles(ctx); err != nil || len(tasks) != 0 {
			t.Fatalf("a filter no row meets (%v) plans %d files (%v), want none", f, len(tasks), err)
		}
	}
}

// checkDeleteStats checks a position-delete entry's statistics against
// the rows of its Parquet file.
func checkDeleteStats(t *testing.T, df ice.DataFile) {
	t.Helper()
	const pathID, posID = 2147483546, 2147483545
	pt := parquetColumns(t, df.FilePath())
	paths := map[string]bool{}
	lo, hi := int64(math.MaxInt64), int64(-1)
	for _, chunk := range pt.Column(0).Data().Chunks() {
		for i := 0; i < chunk.Len(); i++ {
			paths[chunk.(*array.String).Value(i)] = true
		}
	}
	for _, chunk := range pt.Column(1).Data().Chunks() {
		for i := 0; i < chunk.Len(); i++ {
			v := chunk.(*array.Int64).Value(i)
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	if len(paths) != 1 {
		t.Fatalf("delete file names %d data files", len(paths))
	}
	var path string
	for p := range paths {
		path = p
	}
	for id, want := range map[int]int64{pathID: pt.NumRows(), posID: pt.NumRows()} {
		if df.ValueCounts()[id] != want || df.NullValueCounts()[id] != 0 {
			t.Errorf("delete file field %d: %d values, %d nulls; the file has %d rows", id, df.ValueCounts()[id], df.NullValueCounts()[id], want)
		}
	}
	for _, b := range [][]byte{df.LowerBoundValues()[pathID], df.UpperBoundValues()[pathID]} {
		if string(b) != path || !utf8.Valid(b) {
			t.Errorf("delete file file_path bound %q, want %q", b, path)
		}
	}
	l, err1 := ice.LiteralFromBytes(ice.PrimitiveTypes.Int64, df.LowerBoundValues()[posID])
	h, err2 := ice.LiteralFromBytes(ice.PrimitiveTypes.Int64, df.UpperBoundValues()[posID])
	if err1 != nil || err2 != nil || !l.Equals(ice.Int64Literal(lo)) || !h.Equals(ice.Int64Literal(hi)) {
		t.Errorf("delete file pos bounds %v..%v (%v %v), the rows give %d..%d", l, h, err1, err2, lo, hi)
	}
}
