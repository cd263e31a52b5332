package load

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/graph"
)

// benchSchema is bench/load's schema: keyed nodes with a string and a
// number, edges with a float.
const benchSchema = `
node Item {
  key: String @key
  n: I64
  label: String
}
edge Link: Item -> Item {
  w: F64
}
`

// blobType adds a type with a Blob property that the file never names: the
// spool runs, and the Item and Link lines must pass it in bulk.
const blobType = `
node Doc {
  slug: String @key
  body: Blob?
}
`

// benchLines writes n lines in bench/load's shape: n/3 Item nodes, then
// Link edges between them.
func benchLines(n int) []byte {
	var b bytes.Buffer
	nodes := n / 3
	for i := 0; i < nodes; i++ {
		fmt.Fprintf(&b, `{"type":"Item","data":{"key":"item-%d","n":%d,"label":"label %d"}}`+"\n", i, i, i%97)
	}
	for i := 0; i < n-nodes; i++ {
		fmt.Fprintf(&b, `{"edge":"Link","from":"item-%d","to":"item-%d","data":{"w":%d.5}}`+"\n", i%nodes, (i*7+1)%nodes, i%10)
	}
	return b.Bytes()
}

// loadCost is what one load of the cost tests did, by count.
type loadCost struct {
	stats         loadStats
	allocsPerRow  float64
	bytesPerRow   float64
	spooled       bool // the input went through the spool
	rows, inBytes int
}

// measureLoad appends data to a fresh graph of schema on the memory store
// and counts its allocations (the runtime's counters: the load's own
// goroutines included, nothing else runs in this test) and its stats.
func measureLoad(t *testing.T, schema string, data []byte, rows int) loadCost {
	t.Helper()
	ctx := context.Background()
	g, err := graph.Init(ctx, mem.New(), schema, graph.InitOptions{Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	opts := Options{Mode: Append}
	in, err := prepare(ctx, g, opts)
	if err != nil {
		t.Fatal(err)
	}
	src := bytes.NewReader(data)
	spooled := in.reader(src) != src
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	res, err := in.run(g, src, opts)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Nodes + res.Edges; got != rows {
		t.Fatalf("loaded %d rows, want %d", got, rows)
	}
	return loadCost{
		stats:        in.stats,
		allocsPerRow: float64(after.Mallocs-before.Mallocs) / float64(rows),
		bytesPerRow:  float64(after.TotalAlloc-before.TotalAlloc) / float64(rows),
		spooled:      spooled,
		rows:         rows,
		inBytes:      len(data),
	}
}

// TestLoadCosts guards the bulk load's cost per row by counts that do not
// depend on the machine (issue 37): the Blob spool cost 55% of a load's CPU
// on a schema without Blob properties and no test noticed. At 100k rows of
// bench/load's shape:
//   - a Blob-free schema never enters the spool, and every line takes the
//     fast parser (no byte is decoded twice);
//   - with a Blob type in the schema that the file does not use, the spool
//     follows only each line's head (up to its type name) and copies the
//     rest in bulk, and decodes no name;
//   - allocations and allocated bytes per row stay within limits set just
//     above the numbers measured after the fix (docs/dev/performance.md).
//     Doubling the work per row (a second decode of each line, a string
//     per member name) doubles at least one of these counts.
func TestLoadCosts(t *testing.T) {
	if testing.Short() {
		t.Skip("loads 100k rows twice")
	}
	const rows = 100_000
	data := benchLines(rows)
	// Two parse workers whatever the machine: each has builders of its own.
	defer func(w int) { parseWorkers = w }(parseWorkers)
	parseWorkers = 2
	// The limits: measured (docs/dev/performance.md) plus a margin.
	const (
		maxAllocsPerRow = 1.0
		maxBytesPerRow  = 950.0
		// maxHead is the bytes the spool follows a line: `{"edge":"Link"`
		// is 14; the limit leaves room for a longer type name.
		maxHead = 24
	)
	for _, tc := range []struct {
		name    string
		schema  string
		spooled bool
	}{
		{"blob-free", benchSchema, false},
		{"blob-type-unused", benchSchema + blobType, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := measureLoad(t, tc.schema, data, rows)
			t.Logf("%d rows, %d bytes: %.2f allocs/row, %.0f bytes allocated/row; spool followed %d bytes (%.1f a line), copied %d; %d names decoded; %d lines (%d bytes) parsed twice",
				rows, c.inBytes, c.allocsPerRow, c.bytesPerRow, c.stats.followed, float64(c.stats.followed)/rows, c.stats.copied,
				c.stats.unescaped, c.stats.strictLines, c.stats.strictBytes)
			if c.spooled != tc.spooled {
				t.Fatalf("input through the spool: %v, want %v", c.spooled, tc.spooled)
			}
			if !tc.spooled && (c.stats.followed != 0 || c.stats.copied != 0) {
				t.Fatalf("a Blob-free schema's load went through the spool: %+v", c.stats)
			}
			if tc.spooled {
				if c.stats.followed+c.stats.copied != int64(c.inBytes) {
					t.Fatalf("the spool passed %d bytes of %d", c.stats.followed+c.stats.copied, c.inBytes)
				}
				if c.stats.followed > maxHead*rows {
					t.Fatalf("the spool followed %d bytes byte by byte (%.1f a line), want at most %d a line: lines of types without a Blob property must be copied in bulk",
						c.stats.followed, float64(c.stats.followed)/rows, maxHead)
				}
			}
			if c.stats.unescaped != 0 {
				t.Fatalf("the spool decoded %d names; these lines hold no escape", c.stats.unescaped)
			}
			if c.stats.strictLines != 0 {
				t.Fatalf("%d lines (%d bytes) went through the strict parser after the fast one", c.stats.strictLines, c.stats.strictBytes)
			}
			if c.allocsPerRow > maxAllocsPerRow {
				t.Fatalf("%.2f allocations a row, limit %.2f", c.allocsPerRow, maxAllocsPerRow)
			}
			if c.bytesPerRow > maxBytesPerRow {
				t.Fatalf("%.0f bytes allocated a row, limit %.0f", c.bytesPerRow, maxBytesPerRow)
			}
		})
	}
}

// shapeLines writes nodes Item nodes, then edges Link edges between them
// (bench/load's lines).
func shapeLines(nodes, edges int) []byte {
	var b bytes.Buffer
	for i := 0; i < nodes; i++ {
		fmt.Fprintf(&b, `{"type":"Item","data":{"key":"item-%d","n":%d,"label":"label %d"}}`+"\n", i, i, i%97)
	}
	for i := 0; i < edges; i++ {
		fmt.Fprintf(&b, `{"edge":"Link","from":"item-%d","to":"item-%d","data":{"w":%d.5}}`+"\n", i%nodes, (i*7+1)%nodes, i%10)
	}
	return b.Bytes()
}

// TestLoadHeldBytes asserts the memory model of a columnar load by count,
// not by RSS (issue 37): once the file is read, what the load holds is the
// node keys (the key set, about 31 bytes an id besides its bytes), each
// distinct endpoint value interned once (about 28 bytes besides its bytes),
// two 4-byte endpoint numbers an edge, and the compressed fragments. So
// doubling the edges adds their numbers and their compressed rows, nothing
// like their input bytes (64 an edge here), and a node costs a bounded
// number of bytes.
func TestLoadHeldBytes(t *testing.T) {
	const nodes = 50_000
	// The limits: measured (docs/dev/performance.md) plus a margin.
	const (
		maxPerNode        = 120.0 // key set + interned endpoint values, per node
		maxPerExtraEdge   = 16.0  // endpoint numbers + compressed rows
		maxFragsPerInByte = 0.15  // compressed fragments over the input
	)
	ctx := context.Background()
	g, err := graph.Init(ctx, mem.New(), benchSchema, graph.InitOptions{Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	held := func(edges int) (keys, ends, frags int64, in int) {
		t.Helper()
		data := shapeLines(nodes, edges)
		in0, err := prepare(ctx, g, Options{Mode: Append})
		if err != nil {
			t.Fatal(err)
		}
		bl := newBulkLoad(ctx, in0.snap, in0)
		defer bl.release()
		if err := bl.read(in0.reader(bytes.NewReader(data)), nil); err != nil {
			t.Fatal(err)
		}
		keys, ends, frags = bl.heldBytes()
		return keys, ends, frags, len(data)
	}
	k1, e1, f1, in1 := held(2 * nodes)
	k2, e2, f2, in2 := held(4 * nodes)
	total1, total2 := k1+e1+f1, k2+e2+f2
	perNode := float64(k1+e1-int64(2*nodes)*8) / nodes
	perEdge := float64(total2-total1) / (2 * nodes)
	t.Logf("%d nodes, %d edges (%d bytes in): keys %d, endpoints %d, fragments %d = %d held", nodes, 2*nodes, in1, k1, e1, f1, total1)
	t.Logf("%d nodes, %d edges (%d bytes in): keys %d, endpoints %d, fragments %d = %d held", nodes, 4*nodes, in2, k2, e2, f2, total2)
	t.Logf("%.1f bytes a node (keys and interned values), %.1f bytes an added edge (input %.1f), fragments %.3f of the input",
		perNode, perEdge, float64(in2-in1)/(2*nodes), float64(f2)/float64(in2))
	if k2 != k1 {
		t.Errorf("the key set grew with the edges: %d -> %d bytes", k1, k2)
	}
	if perNode > maxPerNode {
		t.Errorf("%.1f bytes held a node, limit %.0f", perNode, maxPerNode)
	}
	if perEdge > maxPerExtraEdge {
		t.Errorf("%.1f bytes held an added edge, limit %.0f", perEdge, maxPerExtraEdge)
	}
	if r := float64(f2) / float64(in2); r > maxFragsPerInByte {
		t.Errorf("compressed fragments %.3f of the input, limit %.2f", r, maxFragsPerInByte)
	}
}
