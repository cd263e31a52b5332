// Package load benchmarks `omnigraph load` against two ways to turn the
// same NDJSON into Parquet: the plainest (encoding/json into typed structs,
// Arrow builders, pqarrow with zstd, ids minted as the load mints them) and
// DuckDB (read_json, then COPY ... (FORMAT parquet, COMPRESSION zstd) of
// each type, on every core, ids for the edges from uuid()). All three run
// as child processes on the same generated file in the same run, so the
// bench reports each one's rows/s and peak RSS (the child's max RSS from the
// kernel), omnigraph's rows/s over each baseline's (ratio-pqarrow,
// ratio-duckdb), RSS as a multiple of the input size, and the bytes each
// wrote (the graph's over pqarrow's: bytes-x-pqarrow).
//
//	cd bench/load && go test -run '^$' -bench . -benchtime 1x
//
// OMNIGRAPH_BENCH_LOAD_ROWS sets the row count (default 3,000,000: a third
// nodes, two thirds edges); OMNIGRAPH_BENCH_LOAD_LONG=1 makes it 30,000,000
// (about 2 GB of NDJSON); OMNIGRAPH_BENCH_BIN runs another omnigraph build
// instead of building this tree's. The data is generated into a temporary directory
// and removed afterwards.
package load

import (
	"bufio"
	"bytes"
	crand "crypto/rand"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/oklog/ulid/v2"
)

const schema = `
node Item {
  key: String @key
  n: I64
  label: String
}
edge Link: Item -> Item {
  w: F64
}
`

// envBaseline makes the test binary the baseline child: it converts the
// NDJSON file named by the variable into Parquet files in the directory
// named by envOut, then exits.
// envDuck likewise makes it the DuckDB child.
const (
	envBaseline = "OMNIGRAPH_BENCH_BASELINE_IN"
	envDuck     = "OMNIGRAPH_BENCH_DUCKDB_IN"
	envOut      = "OMNIGRAPH_BENCH_BASELINE_OUT"
)

func TestMain(m *testing.M) {
	if in := os.Getenv(envBaseline); in != "" {
		if err := baseline(in, os.Getenv(envOut)); err != nil {
			fmt.Fprintln(os.Stderr, "baseline:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if in := os.Getenv(envDuck); in != "" {
		if err := duckBaseline(in, os.Getenv(envOut)); err != nil {
			fmt.Fprintln(os.Stderr, "duckdb:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// duckBaseline converts the NDJSON at in to Item and Link Parquet files in
// out with DuckDB on every core: the file read once into a table (typed
// columns given, no sampling), then one zstd COPY per type with the
// columns the graph stores (an edge id from uuid()).
func duckBaseline(in, out string) error {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return err
	}
	defer db.Close()
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	stmts := []string{
		fmt.Sprintf(`SET threads TO %d`, runtime.NumCPU()),
		`SET preserve_insertion_order = true`,
		fmt.Sprintf(`CREATE TABLE raw AS SELECT * FROM read_json(%s, format = 'newline_delimited',
  columns = {type: 'VARCHAR', edge: 'VARCHAR', "from": 'VARCHAR', "to": 'VARCHAR',
             data: 'STRUCT(key VARCHAR, n BIGINT, label VARCHAR, w DOUBLE)'})`, q(in)),
		fmt.Sprintf(`COPY (SELECT data.key AS id, data.key AS key, data.n AS n, data.label AS label
  FROM raw WHERE type = 'Item') TO %s (FORMAT parquet, COMPRESSION zstd)`, q(filepath.Join(out, "item.parquet"))),
		fmt.Sprintf(`COPY (SELECT uuid()::VARCHAR AS id, "from" AS src, "to" AS dst, data.w AS w
  FROM raw WHERE edge = 'Link') TO %s (FORMAT parquet, COMPRESSION zstd)`, q(filepath.Join(out, "link.parquet"))),
	}
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

func rowCount() int {
	if os.Getenv("OMNIGRAPH_BENCH_LOAD_LONG") == "1" {
		return 30_000_000
	}
	if s := os.Getenv("OMNIGRAPH_BENCH_LOAD_ROWS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n >= 3 {
			return n
		}
	}
	return 3_000_000
}

// generate writes n rows: n/3 Item nodes, then the rest as Link edges
// between them.
func generate(path string, n int) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	nodes := n / 3
	for i := 0; i < nodes; i++ {
		fmt.Fprintf(w, `{"type":"Item","data":{"key":"item-%d","n":%d,"label":"label %d"}}`+"\n", i, i, i%97)
	}
	for i := 0; i < n-nodes; i++ {
		fmt.Fprintf(w, `{"edge":"Link","from":"item-%d","to":"item-%d","data":{"w":%d.5}}`+"\n", i%nodes, (i*7+1)%nodes, i%10)
	}
	if err := w.Flush(); err != nil {
		return 0, err
	}
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), f.Close()
}

// child runs a command and returns its wall time, CPU time (user and
// system) and peak RSS in bytes.
func child(cmd *exec.Cmd) (time.Duration, time.Duration, int64, error) {
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("%s: %w: %s", cmd.Args[0], err, stderr.String())
	}
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return wall, cpu, 0, nil
	}
	return wall, cpu, ru.Maxrss * 1024, nil // Linux reports KiB
}

// median of xs (sorted in place).
func median(xs []float64) float64 {
	sort.Float64s(xs)
	if len(xs) == 0 {
		return 0
	}
	return xs[len(xs)/2]
}

// dirBytes is the size of every file under dir.
func dirBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	return n, err
}

// run is one child's outcome.
type run struct {
	wall, cpu time.Duration
	rss       int64
	bytes     int64
}

func (r run) rate(n int) float64 { return float64(n) / r.wall.Seconds() }

func BenchmarkLoadVsParquet(b *testing.B) {
	n := rowCount()
	dir := b.TempDir()
	bin := os.Getenv("OMNIGRAPH_BENCH_BIN") // another build to compare, else this tree's
	if bin == "" {
		bin = filepath.Join(dir, "omnigraph")
		build := exec.Command("go", "build", "-o", bin, "./cmd/omnigraph")
		build.Dir = filepath.Join("..", "..") // the repository root
		if out, err := build.CombinedOutput(); err != nil {
			b.Fatalf("build omnigraph: %v\n%s", err, out)
		}
	}
	data := filepath.Join(dir, "data.jsonl")
	size, err := generate(data, n)
	if err != nil {
		b.Fatal(err)
	}
	schemaFile := filepath.Join(dir, "schema.pg")
	if err := os.WriteFile(schemaFile, []byte(schema), 0o644); err != nil {
		b.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	mb := func(x int64) float64 { return float64(x) / (1 << 20) }
	measure := func(out string, cmd *exec.Cmd) run {
		wall, cpu, rss, err := child(cmd)
		if err != nil {
			b.Fatal(err)
		}
		bytes, err := dirBytes(out)
		if err != nil {
			b.Fatal(err)
		}
		if err := os.RemoveAll(out); err != nil {
			b.Fatal(err)
		}
		return run{wall, cpu, rss, bytes}
	}
	baselineCmd := func(env, out string) *exec.Cmd {
		if err := os.MkdirAll(out, 0o755); err != nil {
			b.Fatal(err)
		}
		c := exec.Command(self)
		c.Env = append(os.Environ(), env+"="+data, envOut+"="+out)
		return c
	}
	// Per iteration: omnigraph's rows/s over DuckDB's and pqarrow's, its
	// CPU seconds over DuckDB's, its RSS over the input; medians reported.
	var xDuck, xPq, cpuDuck, rssIn []float64
	b.ResetTimer()
	for it := 0; it < b.N; it++ {
		g := filepath.Join(dir, fmt.Sprintf("graph-%d", it))
		if out, err := exec.Command(bin, "init", "--schema", schemaFile, g).CombinedOutput(); err != nil {
			b.Fatalf("init: %v\n%s", err, out)
		}
		og := measure(g, exec.Command(bin, "load", "--data", data, "--mode", "append", g))
		pq := filepath.Join(dir, fmt.Sprintf("parquet-%d", it))
		pqr := measure(pq, baselineCmd(envBaseline, pq))
		dk := filepath.Join(dir, fmt.Sprintf("duckdb-%d", it))
		dkr := measure(dk, baselineCmd(envDuck, dk))
		xDuck = append(xDuck, og.rate(n)/dkr.rate(n))
		xPq = append(xPq, og.rate(n)/pqr.rate(n))
		cpuDuck = append(cpuDuck, og.cpu.Seconds()/dkr.cpu.Seconds())
		rssIn = append(rssIn, float64(og.rss)/float64(size))
		b.ReportMetric(og.rate(n), "load_rows/s")
		b.ReportMetric(pqr.rate(n), "parquet_rows/s")
		b.ReportMetric(dkr.rate(n), "duckdb_rows/s")

		b.ReportMetric(mb(og.rss), "load_rss_MiB")
		b.ReportMetric(mb(pqr.rss), "parquet_rss_MiB")
		b.ReportMetric(mb(dkr.rss), "duckdb_rss_MiB")

		b.ReportMetric(float64(og.bytes)/float64(pqr.bytes), "bytes-x-pqarrow")
		b.ReportMetric(0, "ns/op")
		b.Logf("%d rows (%.0f MiB NDJSON), %d cores:\n"+
			"  omnigraph load        %6.2fs (cpu %5.2fs) %9.0f rows/s  peak RSS %5.0f MiB (%.2fx input)  wrote %6.1f MiB\n"+
			"  encoding/json+pqarrow %6.2fs (cpu %5.2fs) %9.0f rows/s  peak RSS %5.0f MiB (%.2fx input)  wrote %6.1f MiB\n"+
			"  duckdb                %6.2fs (cpu %5.2fs) %9.0f rows/s  peak RSS %5.0f MiB (%.2fx input)  wrote %6.1f MiB\n"+
			"  omnigraph rows/s over pqarrow's %.2f, over duckdb's %.2f; bytes over pqarrow's %.2f",
			n, mb(size), runtime.NumCPU(),
			og.wall.Seconds(), og.cpu.Seconds(), og.rate(n), mb(og.rss), float64(og.rss)/float64(size), mb(og.bytes),
			pqr.wall.Seconds(), pqr.cpu.Seconds(), pqr.rate(n), mb(pqr.rss), float64(pqr.rss)/float64(size), mb(pqr.bytes),
			dkr.wall.Seconds(), dkr.cpu.Seconds(), dkr.rate(n), mb(dkr.rss), float64(dkr.rss)/float64(size), mb(dkr.bytes),
			og.rate(n)/pqr.rate(n), og.rate(n)/dkr.rate(n), float64(og.bytes)/float64(pqr.bytes))
	}
	// Medians over the iterations: a shared machine makes single runs noisy.
	b.ReportMetric(median(xPq), "ratio-pqarrow")
	b.ReportMetric(median(xDuck), "ratio-duckdb")
	b.ReportMetric(median(cpuDuck), "cpu-x-duckdb")
	b.ReportMetric(median(rssIn), "load_rss/input")
	b.Logf("medians over %d runs: rows/s over duckdb's %.2f, over pqarrow's %.2f; CPU seconds over duckdb's %.2f; peak RSS over input %.2f",
		b.N, median(xDuck), median(xPq), median(cpuDuck), median(rssIn))
}

// The baseline's typed lines.
type envelope struct {
	Type string          `json:"type"`
	Edge string          `json:"edge"`
	From string          `json:"from"`
	To   string          `json:"to"`
	Data json.RawMessage `json:"data"`
}

type itemData struct {
	Key   string `json:"key"`
	N     int64  `json:"n"`
	Label string `json:"label"`
}

type linkData struct {
	W float64 `json:"w"`
}

// sink streams one type's rows to a zstd Parquet file.
type sink struct {
	rb *array.RecordBuilder
	w  *pqarrow.FileWriter
}

func newSink(path string, s *arrow.Schema) (*sink, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd))
	w, err := pqarrow.NewFileWriter(s, f, props, pqarrow.DefaultWriterProps())
	if err != nil {
		return nil, err
	}
	return &sink{rb: array.NewRecordBuilder(memory.DefaultAllocator, s), w: w}, nil
}

func (s *sink) flush(force bool) error {
	if s.rb.Field(0).Len() == 0 || !force && s.rb.Field(0).Len() < 64*1024 {
		return nil
	}
	rec := s.rb.NewRecordBatch()
	defer rec.Release()
	return s.w.Write(rec)
}

func (s *sink) close() error {
	if err := s.flush(true); err != nil {
		return err
	}
	return s.w.Close() // closes the file too
}

// baseline converts the NDJSON at in to Item and Link Parquet files in out.
func baseline(in, out string) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	items, err := newSink(filepath.Join(out, "item.parquet"), arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "key", Type: arrow.BinaryTypes.String},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64},
		{Name: "label", Type: arrow.BinaryTypes.String},
	}, nil))
	if err != nil {
		return err
	}
	links, err := newSink(filepath.Join(out, "link.parquet"), arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "src", Type: arrow.BinaryTypes.String},
		{Name: "dst", Type: arrow.BinaryTypes.String},
		{Name: "w", Type: arrow.PrimitiveTypes.Float64},
	}, nil))
	if err != nil {
		return err
	}
	ts := ulid.Timestamp(time.Now())
	entropy := ulid.Monotonic(crand.Reader, 1)
	r := bufio.NewReaderSize(f, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var env envelope
			if err := json.Unmarshal(line, &env); err != nil {
				return err
			}
			switch {
			case env.Type == "Item":
				var d itemData
				if err := json.Unmarshal(env.Data, &d); err != nil {
					return err
				}
				items.rb.Field(0).(*array.StringBuilder).Append(d.Key)
				items.rb.Field(1).(*array.StringBuilder).Append(d.Key)
				items.rb.Field(2).(*array.Int64Builder).Append(d.N)
				items.rb.Field(3).(*array.StringBuilder).Append(d.Label)
				if err := items.flush(false); err != nil {
					return err
				}
			case env.Edge == "Link":
				var d linkData
				if err := json.Unmarshal(env.Data, &d); err != nil {
					return err
				}
				links.rb.Field(0).(*array.StringBuilder).Append(ulid.MustNew(ts, entropy).String())
				links.rb.Field(1).(*array.StringBuilder).Append(env.From)
				links.rb.Field(2).(*array.StringBuilder).Append(env.To)
				links.rb.Field(3).(*array.Float64Builder).Append(d.W)
				if err := links.flush(false); err != nil {
					return err
				}
			default:
				return fmt.Errorf("unexpected line %s", line)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if err := items.close(); err != nil {
		return err
	}
	return links.close()
}
