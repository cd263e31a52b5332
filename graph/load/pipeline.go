package load

// The parse pipeline of the columnar path. The goroutine that calls read
// reads the input into chunks of lines (bufio.Scanner: the row path's
// line numbers, blank lines, byte order mark and line bound), hands each
// to the parse workers (one a core), and applies the parsed chunks in
// line order as they come back. A worker runs the fast parser (fast.go)
// over its chunk's lines into Arrow builders of its own, one per table,
// and hashes the ids the lines give; a line the fast parser leaves ends
// the worker's batches there, and the applier reads it with the strict
// parser between the batches before and after it. So everything that
// depends on order or on more than one line (the id sets, duplicates, the
// first bad line, counts, the rows' order) happens on one goroutine in
// line order, as in a sequential read, and a worker's work depends on its
// line alone: the errors, their lines and the rows are those of the
// sequential path (TestColumnarErrorsMatchRowPath,
// TestColumnarMatchesRowPath, TestPipelineMatchesOneLineAChunk).

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Sizes of the parse pipeline; variables so tests can make them small.
var (
	// A chunk holds up to chunkLines lines and about chunkBytes bytes.
	chunkLines = 16 * 1024
	chunkBytes = 1 << 20
	// parseWorkers is the number of parse workers (0: one a core).
	parseWorkers = 0
)

// chunk is a run of the input's non-blank lines.
type chunk struct {
	data  []byte  // the lines, back to back
	ends  []int32 // line i is data[ends[i-1]:ends[i]]
	lines []int32 // line i's number in the input
	upTo  int     // lines of the input read when the chunk was cut
	done  chan *parsed
}

func (c *chunk) line(i int) []byte {
	start := int32(0)
	if i > 0 {
		start = c.ends[i-1]
	}
	return c.data[start:c.ends[i]]
}

// parsed is what a worker made of a chunk: its steps, in line order.
type parsed struct {
	steps []step
}

// step is either a run of lines the fast parser took (parts: their rows,
// one part a table), or one line it left (slow: its index in the chunk),
// or what stopped the worker (err).
type step struct {
	parts []*part
	slow  int
	err   error
}

// part is the rows one step gives one table, in line order.
type part struct {
	t   *bulkTable
	rec arrow.Record
	// ids are the ids the lines give (not minted ones), with their
	// hashes in t.ids.
	ids []givenID
	// runs map an edge table's rows (from 0 in rec) to lines.
	runs []lineRun
	rows int
}

type givenID struct {
	id   string // aliases the chunk: the applier copies what it keeps
	hash uint64
	line int32
}

// read parses every line of r into the tables. It stops at the first bad
// line; a duplicate id is remembered (bl.dupErr) and reported after the
// whole file parsed, as the row path does.
func (bl *bulkLoad) read(r io.Reader, progress func(string, int64)) error {
	workers := parseWorkers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	window := 2*workers + 2 // chunks read ahead of the one applied
	work := make(chan *chunk, window)
	var stop atomic.Bool // the load failed: the workers skip what is left
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go pprof.Do(context.Background(), pprof.Labels("load", "parse"), func(context.Context) {
			defer wg.Done()
			w := newParser(bl)
			defer w.release()
			for c := range work {
				if stop.Load() {
					c.done <- &parsed{}
					continue
				}
				c.done <- w.parse(c)
			}
		})
	}
	defer func() {
		stop.Store(true)
		close(work)
		wg.Wait()
	}()

	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), MaxLine)
	var queue, free []*chunk
	n, reported := 0, 0
	eof := false
	for {
		for !eof && len(queue) < window {
			var c *chunk
			if k := len(free); k > 0 {
				c, free = free[k-1], free[:k-1]
			} else {
				// Room for a full chunk: its data never grows by copies.
				c = &chunk{done: make(chan *parsed, 1), data: make([]byte, 0, chunkBytes+4<<10)}
			}
			eof = !readChunk(sc, &n, c)
			if len(c.ends) > 0 {
				work <- c
				queue = append(queue, c)
			}
		}
		if len(queue) == 0 {
			break
		}
		c := queue[0]
		queue = queue[1:]
		if err := bl.apply(c, <-c.done); err != nil {
			return err
		}
		for progress != nil && reported+65536 <= c.upTo {
			reported += 65536
			progress("parse", int64(reported))
		}
		free = append(free, c)
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

// readChunk fills c with the next non-blank lines of sc (n counts the
// lines read); false when sc has no more (c may still hold lines).
func readChunk(sc *bufio.Scanner, n *int, c *chunk) bool {
	c.data, c.ends, c.lines = c.data[:0], c.ends[:0], c.lines[:0]
	defer func() { c.upTo = *n }()
	for len(c.ends) < chunkLines && len(c.data) < chunkBytes {
		if !sc.Scan() {
			return false
		}
		*n++
		b := sc.Bytes()
		if *n == 1 {
			b = bytes.TrimPrefix(b, []byte("\ufeff"))
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		c.data = append(c.data, b...)
		c.ends = append(c.ends, int32(len(c.data)))
		c.lines = append(c.lines, int32(*n))
	}
	return true
}

// apply adds a parsed chunk to the load, in line order.
func (bl *bulkLoad) apply(c *chunk, p *parsed) error {
	for _, st := range p.steps {
		switch {
		case st.err != nil:
			return st.err
		case st.parts == nil:
			if err := bl.slowLine(c.line(st.slow), int(c.lines[st.slow])); err != nil {
				return err
			}
		default:
			for _, pt := range st.parts {
				if err := bl.applyPart(pt); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// applyPart adds one part's rows to its table: their ids, counts and
// lines, then the rows themselves to the table's lanes, after any rows of
// earlier strict-parser lines.
func (bl *bulkLoad) applyPart(p *part) error {
	t := p.t
	for _, g := range p.ids {
		if err := bl.addID(t, g.id, g.hash, g.line); err != nil {
			p.rec.Release()
			return err
		}
	}
	bl.count(t, p.rows)
	for _, r := range p.runs {
		t.addRun(r.line, int64(t.rows)+r.row, r.n)
	}
	if t.rb.Field(0).Len() > 0 {
		if err := t.send(t.rb.NewRecordBatch()); err != nil {
			p.rec.Release()
			return err
		}
	}
	t.rows += p.rows
	return t.send(p.rec)
}

// parser is one parse worker's state: its own builders and scratch for
// each table, and its own cache of the tables by name.
type parser struct {
	bl           *bulkLoad
	nodes, edges map[string]*bulkTable
	tabs         map[*bulkTable]*parserTable
	open         []*parserTable // tables with rows in the current step
	minted       [26]byte
}

// parserTable is a worker's share of one table.
type parserTable struct {
	t    *bulkTable
	sc   *scratch
	rb   *array.RecordBuilder
	part *part // the current step's rows, nil when none
	// dataPerRow is each string column's bytes a row in the last part:
	// the builders reserve that much for a new part.
	dataPerRow []int
}

func newParser(bl *bulkLoad) *parser {
	return &parser{bl: bl, nodes: map[string]*bulkTable{}, edges: map[string]*bulkTable{}, tabs: map[*bulkTable]*parserTable{}}
}

func (w *parser) release() {
	for _, pt := range w.tabs {
		pt.rb.Release()
	}
}

// table finds the table of a node ("type") or edge type name (nil when the
// schema has none), through the worker's cache.
func (w *parser) table(node bool, name []byte) (*bulkTable, error) {
	m := w.edges
	if node {
		m = w.nodes
	}
	if t, ok := m[string(name)]; ok {
		return t, nil
	}
	t, err := w.bl.typeByName(node, name)
	if err == nil && t != nil {
		m[string(name)] = t
	}
	return t, err
}

func (w *parser) tab(t *bulkTable) *parserTable {
	pt := w.tabs[t]
	if pt == nil {
		pt = &parserTable{t: t, sc: newScratch(t), rb: array.NewRecordBuilder(memory.DefaultAllocator, t.schema), dataPerRow: make([]int, len(t.cols))}
		w.tabs[t] = pt
	}
	return pt
}

func (w *parser) scratch(t *bulkTable) *scratch { return w.tab(t).sc }

// parse turns a chunk into steps.
func (w *parser) parse(c *chunk) *parsed {
	out := &parsed{}
	for i := range c.ends {
		fl, sc, err := w.parseFast(c.line(i))
		switch {
		case err == errSlow:
			w.cut(out)
			out.steps = append(out.steps, step{slow: i})
		case err != nil:
			w.cut(out)
			out.steps = append(out.steps, step{err: err})
			return out
		default:
			if err := w.add(fl, sc, c.lines[i], len(c.ends)-i); err != nil {
				w.drop()
				out.steps = append(out.steps, step{err: err})
				return out
			}
		}
	}
	w.cut(out)
	return out
}

// add appends one parsed line to its table's builder (left lines in the
// chunk, this one included, size a new part's builders).
func (w *parser) add(fl fastLine, sc *scratch, line int32, left int) error {
	t := fl.t
	pt := w.tab(t)
	if pt.part == nil {
		pt.part = &part{t: t}
		w.open = append(w.open, pt)
		pt.rb.Reserve(left)
		for i, per := range pt.dataPerRow {
			if per > 0 {
				pt.rb.Field(i).(*array.StringBuilder).ReserveData(per * left)
			}
		}
	}
	p := pt.part
	id := fl.id
	if id != "" {
		p.ids = append(p.ids, givenID{id: id, hash: t.ids.hash(id), line: line})
	}
	if t.edge != nil {
		if k := len(p.runs) - 1; k >= 0 && p.runs[k].line+int32(p.runs[k].n) == line {
			p.runs[k].n++
		} else {
			p.runs = append(p.runs, lineRun{line: line, row: int64(p.rows), n: 1})
		}
	}
	for i, c := range t.cols {
		fb := pt.rb.Field(i)
		switch c.role {
		case roleID:
			if id == "" {
				fb.(*array.StringBuilder).BinaryBuilder.Append(w.bl.ids.at(line, w.minted[:]))
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
	p.rows++
	return nil
}

// cut ends the current step: each table's rows become its part.
func (w *parser) cut(out *parsed) {
	if len(w.open) == 0 {
		return
	}
	parts := make([]*part, 0, len(w.open))
	for _, pt := range w.open {
		for i := range pt.dataPerRow {
			if sb, ok := pt.rb.Field(i).(*array.StringBuilder); ok && pt.part.rows > 0 {
				pt.dataPerRow[i] = sb.DataLen() / pt.part.rows
			}
		}
		pt.part.rec = pt.rb.NewRecordBatch()
		parts = append(parts, pt.part)
		pt.part = nil
	}
	w.open = w.open[:0]
	out.steps = append(out.steps, step{parts: parts})
}

// drop forgets the current step's rows (the load failed).
func (w *parser) drop() {
	for _, pt := range w.open {
		pt.rb.Release()
		pt.rb = array.NewRecordBuilder(memory.DefaultAllocator, pt.t.schema)
		pt.part = nil
	}
	w.open = w.open[:0]
}
