package load

// The columnar load path (append loads of types without @unique groups or
// @card): each line is parsed straight into Arrow builders (no per-row
// map), the batches are encoded as they arrive (Parquet row groups of
// rowGroupRows rows, a new fragment every fragmentRows rows), and
// validation runs on what is kept: the ids of the file per table (for
// duplicates, key conflicts and endpoints) and the interned edge endpoints.
// Memory is the key sets, the interned endpoints and the compressed
// fragments, not the rows.
//
// The work runs as a pipeline (pipeline.go): parse workers turn chunks of
// lines into batches of rows on every core, one goroutine applies the
// chunks in line order (ids, counts, the lines the fast parser left), and
// each table's batches are encoded, and an edge table's endpoints
// interned, on goroutines of their own. Lines the fast parser (fast.go)
// does not handle in one pass (escapes, nested values, odd member order,
// anything wrong) go through the strict row parser (parseLoadLine) in line
// order, so every error message is the row path's.

import (
	"context"
	crand "crypto/rand"
	"fmt"
	"io"
	"math/bits"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/oklog/ulid/v2"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/change"
	"github.com/omnigraph-go/omnigraph/lang/pg"
	"github.com/omnigraph-go/omnigraph/table"
)

// Sizes of what a bulk load writes (docs/loading.md); variables so tests
// can make them small.
var (
	// rowGroupRows rows make one Parquet row group (the table layer's
	// row-group bound).
	rowGroupRows = 16 * 1024
	// fragmentRows bounds one fragment file of a load (the compaction
	// target): a larger table gets several.
	fragmentRows int64 = 1 << 20
)

// columnar reports whether a load takes the columnar path: an append
// (strict insert) or an overwrite where no type has a @unique group other
// than its key or a @card bound (those checks need the rows; the row path
// keeps them, and merge, which replaces rows by id).
func columnar(cat *pg.Catalog, opts Options) bool {
	switch {
	case opts.Mode == Overwrite:
	case opts.Mode == Append && len(opts.Replace) == 0:
	default:
		return false
	}
	for _, n := range cat.Nodes {
		for _, g := range n.Unique {
			if !sameSet(g, n.Key) {
				return false
			}
		}
	}
	for _, e := range cat.Edges {
		if len(e.Unique) > 0 || e.Card.Min > 0 || e.Card.Max >= 0 {
			return false
		}
	}
	return true
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) || len(a) == 0 {
		return false
	}
	m := map[string]bool{}
	for _, x := range a {
		m[x] = true
	}
	for _, x := range b {
		if !m[x] {
			return false
		}
	}
	return true
}

// column roles of a table's schema fields.
const (
	roleProp = iota
	roleID
	roleSrc
	roleDst
	roleNull // a column that is not a property: NULL
)

type bulkColumn struct {
	role int
	prop int // index into bulkTable.props for roleProp
}

// pendingEnd is an edge endpoint value not among the file's nodes (of its
// type): its first line and row in the table's rows as written.
type pendingEnd struct {
	line int32
	row  int64
	node string // the endpoint
}

// lineRun says that rows row..row+n-1 of a table came from lines
// line..line+n-1.
type lineRun struct {
	line int32
	row  int64
	n    int64
}

// bulkTable is one table's share of a columnar load. Its fixed part (the
// schema, properties and columns) is set when it is made and only read
// after, by every parse worker; the rest belongs to the goroutine that
// applies the chunks.
type bulkTable struct {
	key    string
	node   *pg.NodeType
	edge   *pg.EdgeType
	props  []*pg.Property
	fast   []fastKind
	propIx map[string]int
	schema *arrow.Schema
	cols   []bulkColumn
	// rb holds the rows of lines the strict parser read, in line order
	// between the parse workers' batches.
	rb *array.RecordBuilder
	// ids are the file's ids of the table (derived keys and data.id; not
	// minted ULIDs) with the line that gave each (keyset.go).
	ids *keySet
	// dupEdges are the edge ids the file gives more than once: the last
	// line of each wins (as in the original), applied once parsing ends.
	dupEdges map[string]bool
	rows     int
	// frags are the closed fragments, set when the encoder finished;
	// written keeps them as written (before duplicate edges are dropped)
	// for the rows pending endpoints name.
	frags, written []*table.FragmentWriter
	// ends interns an edge table's endpoints (on the track lane) from the
	// batches the encoder gets; runs map its rows to lines.
	ends *table.Endpoints
	runs []lineRun
	// enc encodes the table's batches, track interns an edge table's
	// endpoints, each on a goroutine of its own (started by the first
	// batch), in the order sent.
	enc, track *lane
	// pending endpoints of an edge table, in line order, per side.
	pendSrc, pendDst []pendingEnd
	newFrag          func() (*table.FragmentWriter, error)
	// slow is the applier's scratch for lines of the strict parser.
	slow *scratch
}

func (t *bulkTable) typeName() string {
	if t.node != nil {
		return t.node.Name
	}
	return t.edge.Name
}

// bulkLoad is the state of one columnar load.
type bulkLoad struct {
	ctx  context.Context
	snap *graph.Snapshot
	cat  *pg.Catalog
	// mu guards the tables' making (byType, nodeName, edgeName, tables):
	// parse workers find their tables by name.
	mu       sync.Mutex
	byType   map[any]*bulkTable
	nodeName map[string]*bulkTable
	edgeName map[string]*bulkTable
	tables   []*bulkTable
	res      *Result
	// dupErr is the duplicate id of the first line that repeats one
	// (dupLine), reported once the whole file parsed.
	dupErr  error
	dupLine int32
	ids     minter
	lines   int
	slow    int     // lines the strict parser read
	in      *intake // the load's Blob values (blobs.go)
}

func newBulkLoad(ctx context.Context, snap *graph.Snapshot, in *intake) *bulkLoad {
	return &bulkLoad{
		ctx: ctx, snap: snap, cat: in.cat, in: in,
		byType:   map[any]*bulkTable{},
		nodeName: map[string]*bulkTable{},
		edgeName: map[string]*bulkTable{},
		res:      &Result{Types: map[string]int{}},
		ids:      newMinter(),
	}
}

// heldBytes is what the load keeps in memory once the file is read, by
// count (docs/dev/performance.md, the memory model): each table's key set,
// an edge table's tracked endpoints and its pending ones, and the closed,
// compressed fragments waiting to be staged. The chunks in flight, the
// builders and the encoders are fixed buffers, not counted.
func (bl *bulkLoad) heldBytes() (keys, ends, frags int64) {
	for _, t := range bl.tables {
		keys += t.ids.heldBytes()
		if t.ends != nil {
			ends += t.ends.HeldBytes() + int64(cap(t.pendSrc)+cap(t.pendDst))*40 + int64(cap(t.runs))*24
		}
		for _, f := range t.frags {
			frags += f.Size()
		}
	}
	return keys, ends, frags
}

// minter mints the new ids of one load: ULIDs that share the load's start
// time and whose random part is the load's random base plus the line
// number, so they sort in load order, compress well, and a parse worker
// mints a line's id knowing only its number. The base's top bit is clear,
// so adding a line number never carries out of the 80 bits.
type minter struct {
	ts uint64
	hi uint16
	lo uint64
}

func newMinter() minter {
	var b [10]byte
	_, _ = crand.Read(b[:]) // never fails (crypto/rand)
	return minter{
		ts: ulid.Timestamp(time.Now()),
		hi: uint16(b[0]&0x7f)<<8 | uint16(b[1]),
		lo: uint64(b[2])<<56 | uint64(b[3])<<48 | uint64(b[4])<<40 | uint64(b[5])<<32 | uint64(b[6])<<24 | uint64(b[7])<<16 | uint64(b[8])<<8 | uint64(b[9]),
	}
}

// at returns the id of line n as text in dst (26 bytes).
func (m *minter) at(n int32, dst []byte) []byte {
	var u ulid.ULID
	_ = u.SetTime(m.ts) // a time from time.Now fits
	lo, carry := bits.Add64(m.lo, uint64(n), 0)
	hi := m.hi + uint16(carry)
	u[6], u[7] = byte(hi>>8), byte(hi)
	for i := 0; i < 8; i++ {
		u[8+i] = byte(lo >> (56 - 8*i))
	}
	dst = dst[:26]
	_ = u.MarshalTextTo(dst) // dst is 26 bytes
	return dst
}

// table returns the bulk table of a node or edge type, opening its schema.
func (bl *bulkLoad) table(n *pg.NodeType, e *pg.EdgeType) (*bulkTable, error) {
	bl.mu.Lock()
	defer bl.mu.Unlock()
	return bl.tableLocked(n, e)
}

func (bl *bulkLoad) tableLocked(n *pg.NodeType, e *pg.EdgeType) (*bulkTable, error) {
	var k any = n
	if n == nil {
		k = e
	}
	if t := bl.byType[k]; t != nil {
		return t, nil
	}
	t := &bulkTable{node: n, edge: e, ids: newKeySet(), propIx: map[string]int{}}
	var plain []string
	if n != nil {
		t.key, t.props = graph.NodeTableKey(n.Name), n.Properties
		if len(n.Key) == 1 {
			plain = append(plain, n.Key[0]) // unique values: no dictionary
		}
	} else {
		t.key, t.props = graph.EdgeTableKey(e.Name), e.Properties
	}
	ds, err := bl.snap.OpenTable(bl.ctx, t.key)
	if err != nil {
		return nil, err
	}
	t.schema = ds.Schema()
	for i, p := range t.props {
		t.propIx[p.Name] = i
	}
	t.cols = make([]bulkColumn, t.schema.NumFields())
	for i, f := range t.schema.Fields() {
		switch {
		case f.Name == pg.ColID:
			t.cols[i] = bulkColumn{role: roleID}
		case e != nil && f.Name == pg.ColSrc:
			t.cols[i] = bulkColumn{role: roleSrc}
		case e != nil && f.Name == pg.ColDst:
			t.cols[i] = bulkColumn{role: roleDst}
		default:
			j, ok := t.propIx[f.Name]
			if !ok {
				t.cols[i] = bulkColumn{role: roleNull} // as the row path: a column no row mentions is NULL
				continue
			}
			t.cols[i] = bulkColumn{role: roleProp, prop: j}
		}
	}
	t.rb = array.NewRecordBuilder(memory.DefaultAllocator, t.schema)
	t.fast = make([]fastKind, len(t.props))
	for i := range t.cols {
		if c := t.cols[i]; c.role == roleProp {
			t.fast[c.prop] = fastKindOf(t.props[c.prop], t.rb.Field(i))
		}
	}
	t.slow = newScratch(t)
	bl.byType[k] = t
	bl.tables = append(bl.tables, t)
	// An edge table's endpoints are interned as its batches are encoded,
	// so the traversal index is built without reading the fragments back.
	if e != nil {
		t.ends = table.NewEndpoints(pg.ColSrc, pg.ColDst)
	}
	t.newFrag = func() (*table.FragmentWriter, error) {
		return table.NewFragmentWriter(t.schema, pg.ColID, plain...)
	}
	return t, nil
}

// slowLine adds line n, which the fast parser left, through the strict
// parser (the applier's, in line order).
func (bl *bulkLoad) slowLine(b []byte, n int) error {
	bl.slow++
	bl.in.stats.strictLines++
	bl.in.stats.strictBytes += int64(len(b))
	ln, err := bl.in.parseLine(b)
	if err != nil {
		return bl.in.lineError(n, err)
	}
	t, err := bl.table(ln.node, ln.edge)
	if err != nil {
		return err
	}
	for i, p := range t.props {
		t.slow.slots[i] = slot{tag: tagValue, v: ln.props[p.Name]}
	}
	return bl.add(fastLine{t: t, id: ln.id, from: []byte(ln.from), to: []byte(ln.to)}, t.slow, n)
}

// add appends one line (its values in sc) to its table's builder.
func (bl *bulkLoad) add(fl fastLine, sc *scratch, n int) error {
	t := fl.t
	id := fl.id
	if id != "" {
		if err := bl.addID(t, id, t.ids.hash(id), int32(n)); err != nil {
			return err
		}
	}
	bl.count(t, 1)
	if t.edge != nil {
		t.addRun(int32(n), int64(t.rows), 1)
	}
	var minted [26]byte
	for i, c := range t.cols {
		fb := t.rb.Field(i)
		switch c.role {
		case roleID:
			if id == "" {
				fb.(*array.StringBuilder).BinaryBuilder.Append(bl.ids.at(int32(n), minted[:]))
			} else {
				fb.(*array.StringBuilder).Append(id)
			}
		case roleSrc:
			fb.(*array.StringBuilder).BinaryBuilder.Append(fl.from)
		case roleDst:
			fb.(*array.StringBuilder).BinaryBuilder.Append(fl.to)
		case roleNull:
			fb.AppendNull()
		default:
			if err := sc.slots[c.prop].appendTo(fb); err != nil {
				return fmt.Errorf("column %s: %w", t.props[c.prop].Name, err)
			}
		}
	}
	t.rows++
	if t.rb.Field(0).Len() >= rowGroupRows {
		return t.flush(false)
	}
	return nil
}

// addID records that line gave id (whose hash is h) to table t: a new id
// is kept; an edge id given again makes its last line win (counted once);
// a node id given again is the load's error if no earlier line repeats
// one.
func (bl *bulkLoad) addID(t *bulkTable, id string, h uint64, line int32) error {
	first, dup, err := t.ids.insert(id, h, line)
	switch {
	case err != nil:
		return err
	case !dup:
	case t.edge != nil:
		if t.dupEdges == nil {
			t.dupEdges = map[string]bool{}
		}
		t.dupEdges[strings.Clone(id)] = true // id may alias a chunk
		bl.count(t, -1)
	case bl.dupErr == nil || line < bl.dupLine:
		bl.dupErr = graph.InputErrorf(lineWhere(int(line)), "%s %q is already given at %s; each id may appear once per file", t.typeName(), id, lineWhere(int(first)))
		bl.dupLine = line
	}
	return nil
}

// count adds n rows of t to the result.
func (bl *bulkLoad) count(t *bulkTable, n int) {
	if t.edge != nil {
		bl.res.Edges += n
	} else {
		bl.res.Nodes += n
	}
	bl.res.Types[t.typeName()] += n
}

// addRun records that the edge table's rows row..row+n-1 came from lines
// line..line+n-1.
func (t *bulkTable) addRun(line int32, row, n int64) {
	if k := len(t.runs) - 1; k >= 0 && t.runs[k].line+int32(t.runs[k].n) == line && t.runs[k].row+t.runs[k].n == row {
		t.runs[k].n += n
	} else {
		t.runs = append(t.runs, lineRun{line: line, row: row, n: n})
	}
}

// staged reports whether the file holds node id of type name.
func (bl *bulkLoad) staged(name string, id string) bool {
	t := bl.nodeTable(name)
	return t != nil && t.ids.has(id)
}

// nodeTable is the bulk table of node type name, nil when the file has no
// line of it.
func (bl *bulkLoad) nodeTable(name string) *bulkTable {
	n, ok := bl.cat.Node(name)
	if !ok {
		return nil
	}
	return bl.byType[n]
}

// pendingEnds lists, once the file is read, the endpoint values of edge
// table t that no node line of the file gives (per side, each value at its
// first row, in line order): the ones checkEndpoints looks up on the
// branch. Each distinct value is looked up once (its rows share its dense
// number in the table's Endpoints), not once a line, the lookups split
// across the cores.
func (bl *bulkLoad) pendingEnds(t *bulkTable) error {
	n := t.ends.Len()
	types := [2]string{t.edge.From, t.edge.To}
	for _, fw := range t.frags {
		if src, _ := fw.Endpoints(); int64(len(src)) != fw.Rows() {
			return fmt.Errorf("load %s: a fragment's endpoints were not tracked", t.key)
		}
	}
	// inFile[side][d]: the value numbered d is a node of that side's type
	// in the file. One table serves both sides of an edge type that joins
	// a node type to itself; otherwise only the values a side names are
	// looked up for it.
	var inFile [2][]bool
	sides := 2
	if types[0] == types[1] {
		sides = 1
	}
	for side := 0; side < sides; side++ {
		nt := bl.nodeTable(types[side])
		inFile[side] = make([]bool, n)
		if nt == nil {
			continue
		}
		var named []bool
		if sides == 2 {
			named = make([]bool, n)
			for _, fw := range t.frags {
				ends := [2][]int32{}
				ends[0], ends[1] = fw.Endpoints()
				for _, d := range ends[side] {
					if d >= 0 {
						named[d] = true
					}
				}
			}
		}
		parallelRanges(n, func(lo, hi int) {
			for d := lo; d < hi; d++ {
				if named == nil || named[d] {
					inFile[side][d] = nt.ids.has(t.ends.Value(int32(d)))
				}
			}
		})
	}
	if sides == 1 {
		inFile[1] = inFile[0]
	}
	var pendingOn [2][]bool // a value already pending on that side
	pend := [2]*[]pendingEnd{&t.pendSrc, &t.pendDst}
	var row int64
	for _, fw := range t.frags {
		src, dst := fw.Endpoints()
		for r := range src {
			for side, d := range [2]int32{src[r], dst[r]} {
				if d < 0 || inFile[side][d] {
					continue
				}
				if pendingOn[side] == nil {
					pendingOn[side] = make([]bool, n)
				}
				if pendingOn[side][d] {
					continue
				}
				pendingOn[side][d] = true
				*pend[side] = append(*pend[side], pendingEnd{line: t.lineOf(row + int64(r)), row: row + int64(r), node: t.ends.Value(d)})
			}
		}
		row += int64(len(src))
	}
	t.written = t.frags
	return nil
}

// parallelRanges calls fn on the ranges of [0, n) split across the cores,
// at once, and returns when every call has.
func parallelRanges(n int, fn func(lo, hi int)) {
	parts := min(runtime.GOMAXPROCS(0), max(1, n/4096))
	var wg sync.WaitGroup
	for p := 0; p < parts; p++ {
		lo, hi := n*p/parts, n*(p+1)/parts
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(lo, hi)
		}()
	}
	wg.Wait()
}

// lineOf returns the line row r of the table came from.
func (t *bulkTable) lineOf(r int64) int32 {
	k := sort.Search(len(t.runs), func(i int) bool { return t.runs[i].row > r }) - 1
	return t.runs[k].line + int32(r-t.runs[k].row)
}

// edgeID returns the id of row r as written (for an error report).
func (t *bulkTable) edgeID(r int64) string {
	for _, fw := range t.written {
		if r < fw.Rows() {
			id, err := fw.Key(r)
			if err != nil {
				return ""
			}
			return id
		}
		r -= fw.Rows()
	}
	return ""
}

// send hands one batch of the table's rows, in order, to its encoder and,
// for an edge table, its endpoint tracker; it takes rec.
func (t *bulkTable) send(rec arrow.Record) error {
	if t.enc == nil {
		t.startLanes()
	}
	if t.track != nil {
		rec.Retain()
		if err := t.track.send(rec); err != nil {
			rec.Release()
			return err
		}
	}
	return t.enc.send(rec)
}

// flush sends the rows of the strict parser's lines the builder holds;
// last then waits for the lanes, sets t.frags and gives them their
// endpoints.
func (t *bulkTable) flush(last bool) error {
	if t.rb.Field(0).Len() > 0 {
		if err := t.send(t.rb.NewRecordBatch()); err != nil {
			return err
		}
	}
	if !last || t.enc == nil {
		return nil
	}
	err := t.enc.finish()
	if t.track != nil {
		if terr := t.track.finish(); err == nil {
			err = terr
		}
	}
	if err != nil {
		return err
	}
	if t.ends != nil {
		return t.ends.Track(t.frags...)
	}
	return nil
}

// startLanes starts the table's encoder and, for an edge table, its
// endpoint tracker. The encoder cuts the batches it gets into row groups
// of rowGroupRows rows and fragments of fragmentRows rows.
func (t *bulkTable) startLanes() {
	var cur *table.FragmentWriter
	var inGroup int64
	t.enc = startLane("encode "+t.key, func(rec arrow.Record) error {
		for off, n := int64(0), rec.NumRows(); off < n; {
			if cur == nil {
				fw, err := t.newFrag()
				if err != nil {
					return err
				}
				cur, inGroup = fw, 0
			}
			take := min(n-off, fragmentRows-cur.Rows(), int64(rowGroupRows)-inGroup)
			part := rec.NewSlice(off, off+take)
			err := cur.Append(part)
			part.Release()
			if err != nil {
				return fmt.Errorf("encode rows of %s: %w", t.key, err)
			}
			off += take
			if inGroup += take; inGroup >= int64(rowGroupRows) {
				cur.EndRowGroup()
				inGroup = 0
			}
			if cur.Rows() >= fragmentRows {
				if err := cur.Close(); err != nil {
					return err
				}
				t.frags = append(t.frags, cur)
				cur = nil
			}
		}
		return nil
	}, func() error {
		if cur == nil {
			return nil
		}
		if err := cur.Close(); err != nil {
			return err
		}
		t.frags = append(t.frags, cur)
		return nil
	})
	if t.ends != nil {
		t.track = startLane("track "+t.key, t.ends.Add, func() error {
			t.ends.Sort() // for the index build, while the checks run
			return nil
		})
	}
}

// laneQueue bounds the batches waiting for a lane: the applier runs at
// most this far ahead (memory: that many batches).
const laneQueue = 4

// A lane runs one stage of a table's batches (encoding, endpoint
// interning) on a goroutine of its own, in the order they are sent, so
// the stages of the load run on every core. each is called for every
// batch (the lane releases it), end once the last was sent; after the
// first failure the lane drains what it gets.
type lane struct {
	recs chan arrow.Record
	done chan struct{}
	// err is set by the goroutine, read after done or failed closed.
	err error
	// failed is closed when the goroutine fails, so send stops waiting.
	failed chan struct{}
	closed bool
}

func startLane(label string, each func(arrow.Record) error, end func() error) *lane {
	l := &lane{recs: make(chan arrow.Record, laneQueue), done: make(chan struct{}), failed: make(chan struct{})}
	go pprof.Do(context.Background(), pprof.Labels("load", label), func(context.Context) { l.run(each, end) })
	return l
}

func (l *lane) run(each func(arrow.Record) error, end func() error) {
	defer close(l.done)
	fail := func(err error) {
		if l.err == nil {
			l.err = err
			close(l.failed)
		}
	}
	for rec := range l.recs {
		if l.err == nil {
			if err := each(rec); err != nil {
				fail(err)
			}
		}
		rec.Release()
	}
	if l.err == nil {
		if err := end(); err != nil {
			fail(err)
		}
	}
}

// send queues one batch (the lane releases it); it fails once the lane
// has failed.
func (l *lane) send(rec arrow.Record) error {
	select {
	case l.recs <- rec:
		return nil
	case <-l.failed: // l.err is set before failed closes
		rec.Release()
		return l.err
	}
}

// finish closes the queue and waits for the goroutine. It may be called
// more than once.
func (l *lane) finish() error {
	if !l.closed {
		l.closed = true
		close(l.recs)
	}
	<-l.done
	return l.err
}

// attempt validates the parsed file against w's snapshot and commits it.
func (bl *bulkLoad) attempt(ctx context.Context, g *graph.Graph, opts Options) (*Result, error) {
	overwrite := opts.Mode == Overwrite
	w, err := g.BeginWrite(ctx, opts.Branch, graph.WriteOptions{Kind: graph.KindLoad, Strict: overwrite, Actor: opts.Actor})
	if err != nil {
		return nil, err
	}
	snap := w.Snapshot()
	if snap.SchemaIdentity() != bl.cat.Identity {
		// A schema apply landed after the file was checked against the
		// schema: a concurrent change like any other that moved the
		// branch (409 over HTTP), not bad input; nothing was written.
		return nil, &graph.ReadSetChanged{Branch: snap.Branch(), Member: "schema_identity", Expected: bl.cat.Identity, Actual: snap.SchemaIdentity()}
	}
	if opts.Progress != nil {
		opts.Progress("validate", int64(bl.lines))
	}
	if bl.dupErr != nil {
		return nil, bl.dupErr
	}
	tables := append([]*bulkTable(nil), bl.tables...)
	sort.Slice(tables, func(i, j int) bool { return tables[i].key < tables[j].key })
	if !overwrite {
		if err := bl.checkAppendKeys(ctx, snap, tables); err != nil {
			return nil, err
		}
	}
	for _, t := range tables {
		if t.edge != nil && t.rows > 0 {
			if err := bl.checkEndpoints(ctx, snap, t, overwrite); err != nil {
				return nil, err
			}
		}
	}
	if overwrite {
		for _, e := range bl.cat.Edges {
			if err := bl.checkStranded(ctx, snap, e); err != nil {
				return nil, err
			}
		}
	}
	if opts.Progress != nil {
		opts.Progress("write", int64(bl.lines))
	}
	for _, t := range tables {
		if t.rows == 0 && !overwrite {
			continue
		}
		frags := t.frags
		if err := w.Stage(ctx, t.key, func(ctx context.Context, base *table.Dataset) (*table.Staged, error) {
			if overwrite {
				return base.StageOverwriteFragments(ctx, frags...)
			}
			return base.StageAppendFragments(ctx, frags...)
		}); err != nil {
			return nil, fmt.Errorf("stage %s: %w", t.key, err)
		}
	}
	cr, err := w.Commit(ctx)
	if err != nil {
		return nil, err
	}
	res := *bl.res
	res.Commit = nil
	if !cr.NoOp {
		c := cr.Commit
		res.Commit = &c
	}
	res.Warnings = cr.Warnings
	return &res, nil
}

// checkAppendKeys refuses an id the branch already holds, naming the
// clash that comes first in the file.
func (bl *bulkLoad) checkAppendKeys(ctx context.Context, snap *graph.Snapshot, tables []*bulkTable) error {
	var first *graph.KeyConflict
	firstLine := int32(-1)
	for _, t := range tables {
		if t.ids.len() == 0 {
			continue
		}
		ds, err := snap.OpenTable(ctx, t.key)
		if err != nil {
			return fmt.Errorf("check existing ids of %s: %w", t.typeName(), err)
		}
		if ds.RowCount() == 0 {
			continue
		}
		found, err := change.HasIDs(ctx, ds, t.ids.all())
		if err != nil {
			return fmt.Errorf("check existing ids of %s: %w", t.typeName(), err)
		}
		for id := range found {
			line, ok := t.ids.line(id)
			if !ok {
				continue
			}
			if firstLine < 0 || line < firstLine {
				kind := "node"
				if t.edge != nil {
					kind = "edge"
				}
				first = &graph.KeyConflict{Where: lineWhere(int(line)), EntityKind: kind, TypeName: t.typeName(), EntityID: id, Branch: snap.Branch()}
				firstLine = line
			}
		}
	}
	if first != nil {
		return first
	}
	return nil
}

// checkEndpoints checks that every endpoint not among the file's nodes
// exists on the branch (an overwritten node type has only the file's),
// naming the first line (source side first) whose endpoint does not.
func (bl *bulkLoad) checkEndpoints(ctx context.Context, snap *graph.Snapshot, t *bulkTable, overwrite bool) error {
	e := t.edge
	for _, side := range []struct {
		col, node, word string
		pend            []pendingEnd
	}{{pg.ColSrc, e.From, "from", t.pendSrc}, {pg.ColDst, e.To, "to", t.pendDst}} {
		n, ok := bl.cat.Node(side.node)
		if !ok {
			return fmt.Errorf("edge %s names unknown node type %s", e.Name, side.node)
		}
		var ids []string
		dedup := map[string]bool{}
		for _, pe := range side.pend {
			if !bl.staged(n.Name, pe.node) && !dedup[pe.node] {
				dedup[pe.node] = true
				ids = append(ids, pe.node)
			}
		}
		if len(ids) == 0 {
			continue
		}
		found := map[string]bool{}
		if !overwrite || bl.byType[n] == nil {
			ds, err := snap.OpenTable(ctx, graph.NodeTableKey(n.Name))
			if err != nil {
				return fmt.Errorf("check %s endpoints: %w", e.Name, err)
			}
			if found, err = change.HasIDs(ctx, ds, ids); err != nil {
				return fmt.Errorf("check %s endpoints: %w", e.Name, err)
			}
		}
		for _, pe := range side.pend {
			if dedup[pe.node] && !found[pe.node] {
				where := lineWhere(int(pe.line))
				return &change.Violation{
					InputError: graph.InputErrorf(where, "edge %s: %s %q not found in %s; insert that %s first (or earlier in the same write), or fix the %s value",
						e.Name, side.col, pe.node, n.Name, n.Name, side.word).(*graph.InputError),
					Kind: change.ViolationEndpoint, EntityKind: "edge", TypeName: e.Name, EntityID: t.edgeID(pe.row),
				}
			}
		}
	}
	return nil
}

// checkStranded refuses an overwrite that replaces the image of a node
// type while committed edges of e it keeps (e is not overwritten too) point
// at nodes the new image drops (package change's check of the row path).
func (bl *bulkLoad) checkStranded(ctx context.Context, snap *graph.Snapshot, e *pg.EdgeType) error {
	if bl.byType[e] != nil {
		return nil // overwritten: its new rows were checked as endpoints
	}
	nodeOf := func(name string) *bulkTable {
		if n, ok := bl.cat.Node(name); ok {
			return bl.byType[n]
		}
		return nil
	}
	from, to := nodeOf(e.From), nodeOf(e.To)
	if from == nil && to == nil {
		return nil
	}
	gone := func(t *bulkTable, id string) bool {
		if t == nil {
			return false
		}
		return !t.ids.has(id)
	}
	ds, err := snap.OpenTable(ctx, graph.EdgeTableKey(e.Name))
	if err != nil {
		return fmt.Errorf("check the edges of %s: %w", e.Name, err)
	}
	if ds.RowCount() == 0 {
		return nil
	}
	recs, err := ds.Scan(ctx, table.ScanOptions{Columns: []string{pg.ColID, pg.ColSrc, pg.ColDst}})
	if err != nil {
		return fmt.Errorf("check the edges of %s: %w", e.Name, err)
	}
	var n int
	var exID, exSrc, exDst, exCol, exNode, exEnd string
	for _, rec := range recs {
		ids, srcs, dsts := stringsOf(rec.Column(0)), stringsOf(rec.Column(1)), stringsOf(rec.Column(2))
		for i := 0; ids != nil && srcs != nil && dsts != nil && i < ids.Len(); i++ {
			cid, src, dst := ids.Value(i), srcs.Value(i), dsts.Value(i)
			col, node, end := "", "", ""
			switch {
			case gone(from, src):
				col, node, end = pg.ColSrc, e.From, src
			case gone(to, dst):
				col, node, end = pg.ColDst, e.To, dst
			default:
				continue
			}
			n++
			if exID == "" || cid < exID {
				exID, exSrc, exDst, exCol, exNode, exEnd = cid, src, dst, col, node, end
			}
		}
		rec.Release()
	}
	if n == 0 {
		return nil
	}
	return change.StrandedError(e, n, exID, exSrc, exDst, exCol, exNode, exEnd)
}

func stringsOf(a arrow.Array) *array.String {
	s, _ := a.(*array.String)
	return s
}

// release stops the lanes (a load that failed while reading leaves them
// running) and frees the builders.
func (bl *bulkLoad) release() {
	for _, t := range bl.tables {
		if t.enc != nil {
			t.enc.finish() //nolint:errcheck // the load already failed or finished
		}
		if t.track != nil {
			t.track.finish() //nolint:errcheck // likewise
		}
		t.rb.Release()
	}
}

// runColumnar is Run for a load the columnar path takes.
func runColumnar(ctx context.Context, g *graph.Graph, snap *graph.Snapshot, in *intake, r io.Reader, opts Options) (*Result, error) {
	cat := in.cat
	bl := newBulkLoad(ctx, snap, in)
	defer bl.release()
	if err := bl.read(r, opts.Progress); err != nil {
		return nil, err
	}
	for _, t := range bl.tables {
		frags, err := table.KeepLast(t.frags, t.dupEdges)
		if err != nil {
			return nil, err
		}
		t.frags = frags
	}
	for _, name := range opts.Replace {
		var err error
		if nt, ok := cat.Node(name); ok {
			_, err = bl.table(nt, nil)
		} else if et, ok := cat.Edge(name); ok {
			_, err = bl.table(nil, et)
		} else {
			return nil, fmt.Errorf("%w: cannot replace unknown type %q; the schema has %s", graph.ErrInvalidInput, name, typeList(cat))
		}
		if err != nil {
			return nil, err
		}
	}
	n := opts.Retries
	if n <= 0 {
		n = graph.DefaultWriteRetries
	}
	// Parsed and encoded before its turn in the branch's write queue
	// (that overlaps the write ahead); prepared and committed inside it.
	ctx, leave, err := g.EnterWriteQueue(ctx, opts.Branch)
	if err != nil {
		return nil, err
	}
	defer leave()
	var out *Result
	_, err = graph.Retry(ctx, n, func(ctx context.Context) (*graph.Result, error) {
		res, err := bl.attempt(ctx, g, opts)
		out = res
		return nil, err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
