package load

// The columnar load path (append loads of types without @unique groups or
// @card): each line is parsed straight into its table's Arrow builders (no
// per-row map), finished row groups are encoded as they fill (one Parquet
// row group per rowGroupRows rows, a new fragment every fragmentRows rows),
// and validation runs on what is kept: the ids of the file per table (for
// duplicates, key conflicts and endpoints) and the edge endpoints not yet
// resolved when their line was read. Memory is the key sets plus the
// compressed fragments, not the rows.
//
// Lines the fast parser (fast.go) does not handle in one pass (escapes,
// nested values, odd member order, anything wrong) go through the strict
// row parser (parseLoadLine), so every error message is the row path's.

import (
	"bufio"
	"bytes"
	"context"
	crand "crypto/rand"
	"fmt"
	"io"
	"sort"
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
	// rowGroupRows rows are encoded at a time: one Parquet row group (the
	// table layer's row-group bound).
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

// bulkTable is one table's share of a columnar load.
type bulkTable struct {
	key    string
	node   *pg.NodeType
	edge   *pg.EdgeType
	props  []*pg.Property
	fast   []fastKind
	propIx map[string]int
	schema *arrow.Schema
	cols   []bulkColumn
	rb     *array.RecordBuilder
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
	// ends interns an edge table's endpoints as its fragments encode;
	// runs map its rows to lines.
	ends *table.Endpoints
	runs []lineRun
	// enc encodes the table's row groups on its own goroutine (started by
	// the first flush), in the order flushed.
	enc *encoder
	// pending endpoints of an edge table, in line order, per side.
	pendSrc, pendDst []pendingEnd
	newFrag          func() (*table.FragmentWriter, error)
	// scratch for one line
	slots []slot
	seen  []bool
}

func (t *bulkTable) typeName() string {
	if t.node != nil {
		return t.node.Name
	}
	return t.edge.Name
}

// bulkLoad is the state of one columnar load.
type bulkLoad struct {
	ctx      context.Context
	snap     *graph.Snapshot
	cat      *pg.Catalog
	byType   map[any]*bulkTable
	nodeName map[string]*bulkTable
	edgeName map[string]*bulkTable
	tables   []*bulkTable
	res      *Result
	dupErr   error
	ids      minter
	lines    int
	slow     int     // lines the strict parser read
	in       *intake // the load's Blob values (blobs.go)
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

func (bl *bulkLoad) mint() string { return bl.ids.mint() }

// minter mints the new ids of one load: ULIDs that share the load's start
// time and whose random part counts up by one, so they sort in load order
// and compress well.
type minter struct {
	ts      uint64
	entropy *ulid.MonotonicEntropy
}

func newMinter() minter {
	return minter{ts: ulid.Timestamp(time.Now()), entropy: ulid.Monotonic(crand.Reader, 1)}
}

func (m *minter) mint() string {
	id, err := ulid.New(m.ts, m.entropy)
	if err != nil { // 80 random bits overflowed: the next millisecond
		m.ts++
		m.entropy = ulid.Monotonic(crand.Reader, 1)
		id = ulid.MustNew(m.ts, m.entropy)
	}
	return id.String()
}

// table returns the bulk table of a node or edge type, opening its schema.
func (bl *bulkLoad) table(n *pg.NodeType, e *pg.EdgeType) (*bulkTable, error) {
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
	t.slots = make([]slot, len(t.props))
	t.seen = make([]bool, len(t.props))
	bl.byType[k] = t
	bl.tables = append(bl.tables, t)
	// An edge table's writers intern its endpoints as they encode, so the
	// traversal index is built without reading the fragments back.
	var ends *table.Endpoints
	if e != nil {
		ends = table.NewEndpoints(pg.ColSrc, pg.ColDst)
		t.ends = ends
	}
	t.newFrag = func() (*table.FragmentWriter, error) {
		fw, err := table.NewFragmentWriter(t.schema, pg.ColID, plain...)
		if err == nil && ends != nil {
			err = fw.TrackEndpoints(ends)
		}
		return fw, err
	}
	return t, nil
}

// read parses every line of r into the tables. It stops at the first bad
// line; a duplicate id is remembered (bl.dupErr) and reported after the
// whole file parsed, as the row path does.
func (bl *bulkLoad) read(r io.Reader, progress func(string, int64)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), MaxLine)
	n := 0
	for sc.Scan() {
		n++
		b := sc.Bytes()
		if n == 1 {
			b = bytes.TrimPrefix(b, []byte("\ufeff"))
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		if err := bl.line(b, n); err != nil {
			return err
		}
		if progress != nil && n%65536 == 0 {
			progress("parse", int64(n))
		}
	}
	if err := readErr(sc.Err(), n); err != nil {
		return err
	}
	bl.lines = n
	for _, t := range bl.tables {
		if err := t.flush(true); err != nil {
			return err
		}
	}
	for _, t := range bl.tables {
		if t.edge != nil {
			if err := bl.pendingEnds(t); err != nil {
				return err
			}
		}
	}
	if progress != nil {
		progress("parse", int64(n))
	}
	return nil
}

// line adds one non-blank line.
func (bl *bulkLoad) line(b []byte, n int) error {
	fl, err := bl.parseFast(b)
	if err == nil {
		return bl.add(fl, n)
	}
	if err != errSlow {
		return err
	}
	bl.slow++
	ln, err := bl.in.parseLine(b)
	if err != nil {
		return bl.in.lineError(n, err)
	}
	t, err := bl.table(ln.node, ln.edge)
	if err != nil {
		return err
	}
	for i, p := range t.props {
		t.slots[i] = slot{tag: tagValue, v: ln.props[p.Name]}
	}
	return bl.add(fastLine{t: t, id: ln.id, from: []byte(ln.from), to: []byte(ln.to)}, n)
}

// add appends a parsed line (its values in t.slots) to its table.
func (bl *bulkLoad) add(fl fastLine, n int) error {
	t := fl.t
	id := fl.id
	if id == "" {
		id = bl.mint()
	} else if first, dup := t.ids.line(id); dup && t.edge != nil {
		// The same edge id again: the last line wins. Its counts go once.
		if t.dupEdges == nil {
			t.dupEdges = map[string]bool{}
		}
		t.dupEdges[id] = true
		bl.res.Edges--
		bl.res.Types[t.edge.Name]--
	} else if dup {
		if bl.dupErr == nil {
			bl.dupErr = graph.InputErrorf(lineWhere(n), "%s %q is already given at %s; each id may appear once per file", t.typeName(), id, lineWhere(int(first)))
		}
	} else {
		if err := t.ids.add(id, int32(n)); err != nil {
			return err
		}
	}
	if t.edge != nil {
		bl.res.Edges++
		bl.res.Types[t.edge.Name]++
		if k := len(t.runs) - 1; k >= 0 && t.runs[k].line+int32(t.runs[k].n) == int32(n) {
			t.runs[k].n++
		} else {
			t.runs = append(t.runs, lineRun{line: int32(n), row: int64(t.rows), n: 1})
		}
	} else {
		bl.res.Nodes++
		bl.res.Types[t.node.Name]++
	}
	for i, c := range t.cols {
		fb := t.rb.Field(i)
		switch c.role {
		case roleID:
			fb.(*array.StringBuilder).Append(id)
		case roleSrc:
			fb.(*array.StringBuilder).BinaryBuilder.Append(fl.from)
		case roleDst:
			fb.(*array.StringBuilder).BinaryBuilder.Append(fl.to)
		case roleNull:
			fb.AppendNull()
		default:
			if err := t.slots[c.prop].appendTo(fb); err != nil {
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

// staged reports whether the file holds node id of type name.
func (bl *bulkLoad) staged(name string, id string) bool {
	n, ok := bl.cat.Node(name)
	if !ok {
		return false
	}
	t := bl.byType[n]
	if t == nil {
		return false
	}
	return t.ids.has(id)
}

// pendingEnds lists, once the file is read, the endpoint values of edge
// table t that no node line of the file gives (per side, each value at its
// first row, in line order): the ones checkEndpoints looks up on the
// branch. Each distinct value is looked up once (its rows share its dense
// number in the table's Endpoints), not once a line.
func (bl *bulkLoad) pendingEnds(t *bulkTable) error {
	const ( // a value's state: looked up or not, and pending on which side
		unknown    = 0
		inFile     = 1
		notInFile  = 2
		pendingBit = 4 // << side
	)
	// One state per endpoint type: an edge type between nodes of one type
	// looks each value up once for both sides.
	state := [2][]uint8{make([]uint8, t.ends.Len())}
	if state[1] = state[0]; t.edge.To != t.edge.From {
		state[1] = make([]uint8, t.ends.Len())
	}
	types := [2]string{t.edge.From, t.edge.To}
	pend := [2]*[]pendingEnd{&t.pendSrc, &t.pendDst}
	var row int64
	for _, fw := range t.frags {
		src, dst := fw.Endpoints()
		if int64(len(src)) != fw.Rows() {
			return fmt.Errorf("load %s: a fragment's endpoints were not tracked", t.key)
		}
		for r := range src {
			for side, d := range [2]int32{src[r], dst[r]} {
				if d < 0 || state[side][d]&(inFile|pendingBit<<side) != 0 {
					continue // in the file, or already pending on this side
				}
				v := t.ends.Value(d)
				if state[side][d] == unknown {
					state[side][d] = inFile
					if !bl.staged(types[side], v) {
						state[side][d] = notInFile
					}
				}
				if state[side][d]&notInFile != 0 {
					state[side][d] |= pendingBit << side
					*pend[side] = append(*pend[side], pendingEnd{line: t.lineOf(row + int64(r)), row: row + int64(r), node: v})
				}
			}
		}
		row += int64(len(src))
	}
	t.written = t.frags
	return nil
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

// flush hands the builder's rows, as one row group, to the table's
// encoder; last waits for the encoder to close the open fragment and sets
// t.frags.
func (t *bulkTable) flush(last bool) error {
	if t.rb.Field(0).Len() > 0 {
		if t.enc == nil {
			t.enc = startEncoder(t)
		}
		if err := t.enc.send(t.rb.NewRecordBatch()); err != nil {
			return err
		}
	}
	if !last || t.enc == nil {
		return nil
	}
	frags, err := t.enc.finish()
	t.frags = frags
	return err
}

// encoderQueue bounds the row groups waiting for a table's encoder: the
// parser runs at most this far ahead (memory: that many row groups).
const encoderQueue = 4

// An encoder turns one table's row groups into fragment files (Parquet
// encoding and compression, the endpoint interning of an edge table) on a
// goroutine of its own, in the order they are sent, so parsing and
// encoding run on different cores. A new fragment starts every
// fragmentRows rows.
type encoder struct {
	recs chan arrow.Record
	done chan struct{}
	// set by the goroutine, read after done
	frags []*table.FragmentWriter
	err   error
	// failed is closed when the goroutine fails, so send stops waiting.
	failed chan struct{}
	closed bool
}

func startEncoder(t *bulkTable) *encoder {
	e := &encoder{recs: make(chan arrow.Record, encoderQueue), done: make(chan struct{}), failed: make(chan struct{})}
	go e.run(t.key, t.newFrag)
	return e
}

func (e *encoder) run(key string, newFrag func() (*table.FragmentWriter, error)) {
	defer close(e.done)
	var cur *table.FragmentWriter
	fail := func(err error) {
		if e.err == nil {
			e.err = err
			close(e.failed)
		}
	}
	for rec := range e.recs {
		if e.err != nil {
			rec.Release() // drain after a failure
			continue
		}
		if cur == nil {
			fw, err := newFrag()
			if err != nil {
				fail(err)
				rec.Release()
				continue
			}
			cur = fw
		}
		err := cur.Write(rec)
		rec.Release()
		if err != nil {
			fail(fmt.Errorf("encode rows of %s: %w", key, err))
			continue
		}
		if cur.Rows() >= fragmentRows {
			if err := cur.Close(); err != nil {
				fail(err)
				continue
			}
			e.frags = append(e.frags, cur)
			cur = nil
		}
	}
	if cur != nil && e.err == nil {
		if err := cur.Close(); err != nil {
			fail(err)
			return
		}
		e.frags = append(e.frags, cur)
	}
}

// send queues one row group (the encoder releases it); it fails once the
// encoder has failed.
func (e *encoder) send(rec arrow.Record) error {
	select {
	case e.recs <- rec:
		return nil
	case <-e.failed: // e.err is set before failed closes
		rec.Release()
		return e.err
	}
}

// finish closes the queue, waits for the goroutine and returns the closed
// fragments. It may be called more than once.
func (e *encoder) finish() ([]*table.FragmentWriter, error) {
	if !e.closed {
		e.closed = true
		close(e.recs)
	}
	<-e.done
	return e.frags, e.err
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
		return nil, fmt.Errorf("%w: the schema of branch %q changed while the file was read; load it again", graph.ErrInvalidInput, snap.Branch())
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

// release stops the encoders (a load that failed while reading leaves them
// running) and frees the builders.
func (bl *bulkLoad) release() {
	for _, t := range bl.tables {
		if t.enc != nil {
			t.enc.finish() //nolint:errcheck // the load already failed or finished
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
	if opts.Mode == Overwrite {
		n = 1
	}
	var out *Result
	_, err := graph.Retry(ctx, n, func(ctx context.Context) (*graph.Result, error) {
		res, err := bl.attempt(ctx, g, opts)
		out = res
		return nil, err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
