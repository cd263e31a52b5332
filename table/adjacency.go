package table

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"hash/maphash"
	"math"
	"slices"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/omnigraph-go/omnigraph/backend"
)

// The adjacency index of a table whose rows are edges: two string columns
// (source, destination) name each row's endpoints. The index interns the
// endpoint values to dense numbers and groups the rows by source (CSR) and
// by destination (CSC), so a traversal of a version opened in a fresh
// process costs one GET of the index file instead of a decode of every
// fragment and a rebuild.
//
// Edge rows are numbered like Scan returns them: the live rows of the
// version's fragments, fragment after fragment, in row order.
// A missing or undecodable index file is ignored (the adjacency is built
// from the data). The index file (_indices/<uuid>/adj.idx) is written in
// format 2 (adjcodec.go: the sorted values front-coded, each row's two
// dense endpoints packed in blocks). Format 1, written before, still reads:
//
//	magic "OGADJ01\n", then little-endian uint32s:
//	nodes, edges, dictionary bytes
//	nodes+1 dictionary offsets, then the dictionary (the endpoint values,
//	        sorted, concatenated): dense number = rank
//	nodes+1 outOff, edges outEdges   (rows by source, ascending)
//	nodes+1 inOff,  edges inEdges    (rows by destination, ascending)
//	a CRC-32C of everything before it
//
// outEdges[outOff[nodes]:] (and likewise inEdges) lists the rows in no
// group, those with a null endpoint, ascending.
//
// The manifest entry (Index with Kind AdjacencyKind) names the two columns
// and, per covered fragment, its live row count and the deletion file the
// index saw. A version whose fragments and deletion files are exactly those
// uses the file as it is. Otherwise the covered fragments whose deletion
// file is unchanged are taken from the file, every other fragment's two
// columns are read, and the grouping is redone in memory; with no usable
// index everything is read. The answer never depends on the index.
const (
	// AdjacencyKind is Index.Kind of an adjacency index.
	AdjacencyKind = "adjacency"
	adjMagic      = "OGADJ01\n" // format 1, read only
)

// Adjacency is the loaded adjacency of one version. It is immutable and
// safe for concurrent use (one decoded from an index file is shared by the
// versions that use that file as it is).
type Adjacency struct {
	// Nodes maps dense numbers to endpoint values.
	Nodes []string
	// Src and Dst give each edge row's dense endpoints.
	Src, Dst []int32
	// OutOff[n]..OutOff[n+1] indexes OutEdges: the rows whose source is n,
	// ascending; InOff/InEdges likewise by destination.
	OutOff, OutEdges []int32
	InOff, InEdges   []int32
	// From says how it was obtained: AdjacencyFromIndex (the index file as
	// it is), AdjacencyPatched (the file plus fragments it does not cover)
	// or AdjacencyBuilt (from the table's data).
	From string

	sorted int              // Nodes[:sorted] are ascending
	extra  map[string]int32 // Nodes[sorted:] by value
}

// How an Adjacency was obtained.
const (
	AdjacencyFromIndex = "index"
	AdjacencyPatched   = "patched"
	AdjacencyBuilt     = "built"
)

// Lookup returns the dense number of an endpoint value.
func (a *Adjacency) Lookup(id string) (int32, bool) {
	if i, ok := slices.BinarySearch(a.Nodes[:a.sorted], id); ok {
		return int32(i), true
	}
	d, ok := a.extra[id]
	return d, ok
}

// Out returns the edge rows leaving dense node n.
func (a *Adjacency) Out(n int32) []int32 { return a.OutEdges[a.OutOff[n]:a.OutOff[n+1]] }

// In returns the edge rows entering dense node n.
func (a *Adjacency) In(n int32) []int32 { return a.InEdges[a.InOff[n]:a.InOff[n+1]] }

// Bytes estimates the memory the adjacency holds.
func (a *Adjacency) Bytes() int64 {
	var s int64
	for _, n := range a.Nodes {
		s += int64(len(n)) + 16
	}
	return s + int64(len(a.extra))*48 + int64(len(a.Src)+len(a.Dst)+len(a.OutEdges)+len(a.InEdges)+len(a.OutOff)+len(a.InOff))*4
}

// adjacencyIndex returns this version's adjacency index on (from, to).
func (m *Manifest) adjacencyIndex(from, to string) *Index {
	for i := range m.Indexes {
		ix := &m.Indexes[i]
		if ix.Kind == AdjacencyKind && len(ix.Columns) == 2 && ix.Columns[0] == from && ix.Columns[1] == to {
			return ix
		}
	}
	return nil
}

func deletionPath(f Fragment) string {
	if f.Deletion == nil {
		return ""
	}
	return f.Deletion.Path
}

// adjacencyPlan matches a version's fragments with what its adjacency
// index covers: per fragment, the first index edge of its rows when the
// index holds them as they are now (-1: read the fragment).
func adjacencyPlan(m *Manifest, ix *Index) (starts []int64, exact bool, reusable int64) {
	starts = make([]int64, len(m.Fragments))
	for i := range starts {
		starts[i] = -1
	}
	if ix == nil || len(ix.Rows) != len(ix.Fragments) || len(ix.Deletions) != len(ix.Fragments) {
		return starts, false, 0
	}
	type cov struct {
		start int64
		rows  int64
		del   string
	}
	covered := make(map[string]cov, len(ix.Fragments))
	var at int64
	for i, id := range ix.Fragments {
		covered[id] = cov{at, ix.Rows[i], ix.Deletions[i]}
		at += ix.Rows[i]
	}
	exact = len(m.Fragments) == len(ix.Fragments)
	for i, f := range m.Fragments {
		c, ok := covered[f.ID]
		if ok && c.del == deletionPath(f) && c.rows == f.LiveRows() {
			starts[i] = c.start
			reusable += c.rows
		}
		if !ok || starts[i] < 0 || i >= len(ix.Fragments) || ix.Fragments[i] != f.ID {
			exact = false
		}
	}
	return starts, exact, reusable
}

func adjacencyNone(n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = -1
	}
	return out
}

// AdjacencyUncovered is the number of live rows of this version that its
// adjacency index on (from, to) does not hold as they are now: the rows a
// load of the adjacency would read from fragments. No I/O.
func (m *Manifest) AdjacencyUncovered(from, to string) int64 {
	_, _, reusable := adjacencyPlan(m, m.adjacencyIndex(from, to))
	return m.LiveRows() - reusable
}

// AdjacencyCovers reports whether this version has an adjacency index on
// (from, to) that it can use as it is. No I/O.
func (ds *Dataset) AdjacencyCovers(from, to string) bool {
	ix := ds.m.adjacencyIndex(from, to)
	_, exact, _ := adjacencyPlan(ds.m, ix)
	return ix != nil && exact
}

// Adjacency returns this version's adjacency on the string columns from
// and to (see AdjacencyKind): from its index file when the index covers
// the version (one GET), patched with the fragments it does not cover, or
// built from the two columns of every fragment when there is no index.
// A row with a null endpoint is in no group (its Src and Dst are -1); it
// is an edge row still, numbered like the others.
func (ds *Dataset) Adjacency(ctx context.Context, from, to string) (*Adjacency, error) {
	return ds.adjacency(ctx, ds.m.adjacencyIndex(from, to), from, to)
}

func (ds *Dataset) adjacency(ctx context.Context, ix *Index, from, to string) (*Adjacency, error) {
	fi, ti, err := adjacencyColumns(ds.schema, from, to)
	if err != nil {
		return nil, err
	}
	starts, exact, reusable := adjacencyPlan(ds.m, ix)
	var base *Adjacency
	if ix != nil && reusable > 0 {
		if base, err = ds.adjacencyBase(ctx, ix); err != nil {
			return nil, err
		}
		if base == nil {
			starts = adjacencyNone(len(starts))
		} else if exact {
			return base, nil
		}
	}
	a := &Adjacency{From: AdjacencyBuilt, extra: map[string]int32{}}
	if base != nil {
		// base is shared (cached): appends must copy, never extend it.
		a.Nodes, a.sorted, a.From = slices.Clip(base.Nodes), base.sorted, AdjacencyPatched
	}
	intern := func(v string) int32 {
		if d, ok := a.Lookup(v); ok {
			return d
		}
		d := int32(len(a.Nodes))
		v = strings.Clone(v) // not a view of a decoded column's buffer
		a.Nodes = append(a.Nodes, v)
		a.extra[v] = d
		return d
	}
	// Read the fragments the index does not hold (a wave of up to
	// readParallelism at a time, each interned before the next is read, so
	// memory holds one wave's columns), then lay the edges out in version
	// order and group them.
	var read []Fragment
	var at []int
	for i, f := range ds.m.Fragments {
		if starts[i] < 0 {
			read = append(read, f)
			at = append(at, i)
		}
	}
	type ends struct{ src, dst []int32 }
	dense := make([]ends, len(ds.m.Fragments))
	for lo := 0; lo < len(read); lo += readParallelism {
		wave := read[lo:min(lo+readParallelism, len(read))]
		recs := make([][]arrow.Record, len(wave))
		err = eachFragment(ctx, wave, func(ctx context.Context, k int, f Fragment) error {
			var err error
			recs[k], err = ds.liveColumns(ctx, f, []int{fi, ti})
			return err
		})
		if err != nil {
			for _, r := range recs {
				releaseAll(r)
			}
			return nil, err
		}
		for k, f := range wave {
			e := ends{src: make([]int32, 0, f.LiveRows()), dst: make([]int32, 0, f.LiveRows())}
			for _, r := range recs[k] {
				s, d := r.Column(0).(stringArray), r.Column(1).(stringArray)
				nulls := s.NullN()+d.NullN() > 0
				for j := 0; j < int(r.NumRows()); j++ {
					if nulls && (s.IsNull(j) || d.IsNull(j)) {
						e.src, e.dst = append(e.src, -1), append(e.dst, -1)
						continue
					}
					e.src = append(e.src, intern(s.Value(j)))
					e.dst = append(e.dst, intern(d.Value(j)))
				}
			}
			releaseAll(recs[k])
			dense[at[lo+k]] = e
		}
	}
	n := ds.m.LiveRows()
	a.Src, a.Dst = make([]int32, 0, n), make([]int32, 0, n)
	for i, f := range ds.m.Fragments {
		if s := starts[i]; s >= 0 {
			a.Src = append(a.Src, base.Src[s:s+f.LiveRows()]...)
			a.Dst = append(a.Dst, base.Dst[s:s+f.LiveRows()]...)
			continue
		}
		a.Src = append(a.Src, dense[i].src...)
		a.Dst = append(a.Dst, dense[i].dst...)
	}
	a.OutOff, a.OutEdges = groupRows(len(a.Nodes), a.Src)
	a.InOff, a.InEdges = groupRows(len(a.Nodes), a.Dst)
	return a, nil
}

// adjacencyBase returns the decoded file of index ix: from the cache, or
// with one GET (then cached like any immutable file, so the next versions
// of the table patch it without fetching it again). A file that is gone or
// does not decode is nil: the answer comes from the data (other read
// failures are errors).
func (ds *Dataset) adjacencyBase(ctx context.Context, ix *Index) (*Adjacency, error) {
	key := ds.path + "/" + ix.Path
	if v, ok := ds.cache.get(key); ok {
		return v.(*Adjacency), nil
	}
	b, _, err := ds.store.Get(ctx, key)
	switch {
	case backend.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read adjacency index: %w", err)
	}
	base, err := decodeAdjacency(b)
	if err == nil && len(base.Src) != int(ix.Entries) {
		err = errorf(ErrCorrupt, "adjacency index holds %d edges, its entry %d", len(base.Src), ix.Entries)
	}
	if err != nil {
		return nil, nil
	}
	ds.cache.put(key, base, base.Bytes())
	return base, nil
}

func adjacencyColumns(s *arrow.Schema, from, to string) (int, int, error) {
	var out [2]int
	for i, c := range []string{from, to} {
		idx := s.FieldIndices(c)
		if len(idx) == 0 {
			return 0, 0, errorf(ErrInvalid, "adjacency: no column %q", c)
		}
		if !isStringType(s.Field(idx[0]).Type) {
			return 0, 0, errorf(ErrInvalid, "adjacency: column %q is %s, not a string column", c, s.Field(idx[0]).Type)
		}
		out[i] = idx[0]
	}
	return out[0], out[1], nil
}

// groupRows groups rows by key with a counting sort: off has one entry per
// node plus one; rows[off[k]:off[k+1]] are the rows with key k, ascending.
// A negative key (a null endpoint) is in no group.
func groupRows(nodes int, key []int32) (off, rows []int32) {
	off = make([]int32, nodes+1)
	for _, k := range key {
		if k >= 0 {
			off[k+1]++
		}
	}
	for i := 1; i <= nodes; i++ {
		off[i] += off[i-1]
	}
	next := append([]int32(nil), off[:nodes]...)
	rows = make([]int32, off[nodes])
	for r, k := range key {
		if k >= 0 {
			rows[next[k]] = int32(r)
			next[k]++
		}
	}
	return off, rows
}

var adjCRC = crc32.MakeTable(crc32.Castagnoli)

// decodeAdjacency1 reads a format-1 index file and derives Src and Dst
// from the groupings.
func decodeAdjacency1(b []byte) (*Adjacency, error) {
	bad := func(what string) error { return errorf(ErrCorrupt, "adjacency index: %s", what) }
	if !bytes.HasPrefix(b, []byte(adjMagic)) || len(b) < len(adjMagic)+16 {
		return nil, bad("bad magic")
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, adjCRC) != binary.LittleEndian.Uint32(b[len(body):]) {
		return nil, bad("checksum mismatch")
	}
	b = body[len(adjMagic):]
	nodes, edges, dictLen := int(binary.LittleEndian.Uint32(b)), int(binary.LittleEndian.Uint32(b[4:])), int(binary.LittleEndian.Uint32(b[8:]))
	b = b[12:]
	want := 4*(nodes+1) + dictLen + 4*(2*(nodes+1)) + 4*2*edges
	if len(b) != want {
		return nil, bad(fmt.Sprintf("%d bytes, want %d", len(b), want))
	}
	ints := func(n int) []int32 {
		out := make([]int32, n)
		for i := range out {
			out[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
		}
		b = b[4*n:]
		return out
	}
	offs := ints(nodes + 1)
	dict := string(b[:dictLen])
	b = b[dictLen:]
	a := &Adjacency{Nodes: make([]string, nodes), sorted: nodes, From: AdjacencyFromIndex}
	for i := 0; i < nodes; i++ {
		lo, hi := offs[i], offs[i+1]
		if lo < 0 || hi < lo || int(hi) > dictLen {
			return nil, bad("dictionary offsets out of range")
		}
		a.Nodes[i] = dict[lo:hi]
	}
	a.OutOff, a.OutEdges = ints(nodes+1), ints(edges)
	a.InOff, a.InEdges = ints(nodes+1), ints(edges)
	a.Src, a.Dst = make([]int32, edges), make([]int32, edges)
	if err := ungroup(a.OutOff, a.OutEdges, a.Src); err != nil {
		return nil, err
	}
	if err := ungroup(a.InOff, a.InEdges, a.Dst); err != nil {
		return nil, err
	}
	for r := range a.Src {
		if (a.Src[r] < 0) != (a.Dst[r] < 0) {
			return nil, bad(fmt.Sprintf("edge %d has one endpoint", r))
		}
	}
	return a, nil
}

// ungroup inverts groupRows into key (rows in no group get -1).
func ungroup(off, rows, key []int32) error {
	for i := range key {
		key[i] = -1
	}
	if off[0] != 0 || int(off[len(off)-1]) > len(rows) {
		return errorf(ErrCorrupt, "adjacency index: offsets out of range")
	}
	for n := 0; n+1 < len(off); n++ {
		lo, hi := off[n], off[n+1]
		if hi < lo || int(hi) > len(rows) {
			return errorf(ErrCorrupt, "adjacency index: offsets out of order")
		}
		for _, r := range rows[lo:hi] {
			if r < 0 || int(r) >= len(key) {
				return errorf(ErrCorrupt, "adjacency index: row %d out of range", r)
			}
			key[r] = int32(n)
		}
	}
	return nil
}

// buildAdjacencyIndex writes the adjacency index of m's live edge rows on
// (from, to) as a new index file under root (through ds's store and cache,
// reusing what prev, an older index, still holds; see adjacencyFile).
func buildAdjacencyIndex(ctx context.Context, ds *Dataset, root string, m *Manifest, prev *Index, from, to string, tracked map[string]*trackedEnds) (Index, string, error) {
	view := &Dataset{store: ds.store, path: ds.path, m: m, schema: ds.schema, cache: ds.cache}
	data, edges, err := view.adjacencyFile(ctx, prev, from, to, tracked)
	if err != nil {
		return Index{}, "", err
	}
	id := newUUID()
	rel := strings.TrimPrefix(root, ds.path+"/") + dirIndices + "/" + id + "/adj.idx"
	key := ds.path + "/" + rel
	if _, err := ds.store.Put(ctx, key, data); err != nil {
		return Index{}, "", fmt.Errorf("write adjacency index: %w", err)
	}
	ix := Index{UUID: id, Kind: AdjacencyKind, Column: from, Columns: []string{from, to}, Path: rel, Size: int64(len(data)),
		Entries: edges, Version: m.Version}
	for _, f := range m.Fragments {
		ix.Fragments = append(ix.Fragments, f.ID)
		ix.Rows = append(ix.Rows, f.LiveRows())
		ix.Deletions = append(ix.Deletions, deletionPath(f))
	}
	return ix, key, nil
}

// adjacencyWaveBytes bounds the compressed fragment files one wave of an
// index build holds at once (a wave has at least one fragment and at most
// readParallelism).
const adjacencyWaveBytes = 64 << 20

// adjacencyFile computes the index file of this version's adjacency on
// (from, to) and its edge row count, in memory bounded by the result: per
// edge row its two dense endpoints (8 bytes), per distinct endpoint value
// the value and about 24 bytes, and the file itself (a few bytes an edge). The rows prev's file holds as they are now are
// copied from it; every other fragment is fetched (a wave at a time, in
// parallel) and decoded one row group at a time, its two columns only,
// nothing of it kept or cached. The bytes are those of the adjacency the
// version loads (Dataset.Adjacency) written in the file format.
func (ds *Dataset) adjacencyFile(ctx context.Context, prev *Index, from, to string, tracked map[string]*trackedEnds) ([]byte, int64, error) {
	fi, ti, err := adjacencyColumns(ds.schema, from, to)
	if err != nil {
		return nil, 0, err
	}
	frags := ds.m.Fragments
	n := ds.m.LiveRows()
	if n > math.MaxInt32/2 { // two endpoints a row: the dense numbers stay int32s
		return nil, 0, errorf(ErrInvalid, "adjacency index: %d edge rows, at most %d", n, math.MaxInt32/2)
	}
	starts, _, reusable := adjacencyPlan(ds.m, prev)
	in := &interner{seed: maphash.MakeSeed()}
	var base *Adjacency
	if prev != nil && reusable > 0 {
		if base, err = ds.adjacencyBase(ctx, prev); err != nil {
			return nil, 0, err
		}
		// The file's values keep their dense numbers (their ranks); a file
		// that names a value twice is not used.
		for i := 0; base != nil && i < len(base.Nodes); i++ {
			if in.intern(base.Nodes[i], false) != int32(i) {
				base, in = nil, &interner{seed: in.seed}
			}
		}
		if base == nil {
			starts = adjacencyNone(len(starts))
		}
	}
	src, dst := make([]int32, n), make([]int32, n)
	at := make([]int64, len(frags)) // each fragment's first edge row
	var read []int
	var pos int64
	for i, f := range frags {
		at[i] = pos
		if s := starts[i]; s >= 0 {
			copy(src[pos:], base.Src[s:s+f.LiveRows()])
			copy(dst[pos:], base.Dst[s:s+f.LiveRows()])
		} else {
			read = append(read, i)
		}
		pos += f.LiveRows()
	}
	if e := trackedAll(tracked, frags, read, from, to); base == nil && e != nil {
		// Every fragment to read was interned by one tracker as it was
		// written: its values are the dictionary, its rows the numbers.
		for _, i := range read {
			t := tracked[frags[i].ID]
			copy(src[at[i]:], t.src)
			copy(dst[at[i]:], t.dst)
		}
		data, err := e.in.encode(src, dst)
		return data, n, err
	}
	for lo := 0; lo < len(read); {
		hi, size := lo+1, frags[read[lo]].Size
		for hi < len(read) && hi-lo < readParallelism && size+frags[read[hi]].Size <= adjacencyWaveBytes {
			size += frags[read[hi]].Size
			hi++
		}
		wave := make([]Fragment, 0, hi-lo)
		for _, i := range read[lo:hi] {
			wave = append(wave, frags[i])
		}
		srcs := make([]adjacencySource, len(wave))
		if err := eachFragment(ctx, wave, func(ctx context.Context, k int, f Fragment) error {
			return ds.adjacencySource(ctx, f, fi, ti, &srcs[k])
		}); err != nil {
			return nil, 0, err
		}
		for k, f := range wave {
			r := at[read[lo+k]]
			if err := srcs[k].intern(ctx, f, in, src[r:r+f.LiveRows()], dst[r:r+f.LiveRows()]); err != nil {
				return nil, 0, err
			}
			srcs[k] = adjacencySource{} // its file is no longer held
		}
		lo = hi
	}
	data, err := in.encode(src, dst)
	return data, n, err
}

// trackedAll returns the one Endpoints (on from, to) that tracked every
// fragment of frags listed in read, each with all its rows live; nil if
// there is none.
func trackedAll(tracked map[string]*trackedEnds, frags []Fragment, read []int, from, to string) *Endpoints {
	var e *Endpoints
	for _, i := range read {
		f := frags[i]
		t := tracked[f.ID]
		if t == nil || f.Deletion != nil || int64(len(t.src)) != f.Rows || f.LiveRows() != f.Rows ||
			t.e.from != from || t.e.to != to || (e != nil && t.e != e) {
			return nil
		}
		e = t.e
	}
	return e
}

// adjacencySource is where an index build reads one fragment's endpoint
// columns from: decoded records the cache holds (shared, read-only), or the
// fragment file.
type adjacencySource struct {
	recs   []arrow.Record
	cols   [2]int // the endpoint columns' positions in recs' columns
	fields []int  // the fields to read from data
	data   []byte
	del    *roaring.Bitmap
}

func (ds *Dataset) adjacencySource(ctx context.Context, f Fragment, fi, ti int, s *adjacencySource) error {
	var err error
	if s.del, err = ds.deletions(ctx, f); err != nil {
		return err
	}
	whole := ds.path + "/" + f.Path
	if v, ok := ds.cache.get(whole); ok {
		s.recs, s.cols = v.(*decodedFragment).recs, [2]int{fi, ti}
		return nil
	}
	s.fields = slices.Compact(slices.Sorted(slices.Values([]int{fi, ti})))
	s.cols[0], _ = slices.BinarySearch(s.fields, fi)
	s.cols[1], _ = slices.BinarySearch(s.fields, ti)
	if v, ok := ds.cache.get(fmt.Sprintf("%s#cols%v", whole, s.fields)); ok {
		s.recs = v.(*decodedFragment).recs
		return nil
	}
	if s.data, _, err = ds.store.Get(ctx, whole); err != nil {
		return fmt.Errorf("read fragment %s: %w", f.ID, err)
	}
	return nil
}

// intern numbers the endpoints of f's live rows into src and dst (one
// entry per live row; -1 for both when either endpoint is null).
func (s *adjacencySource) intern(ctx context.Context, f Fragment, in *interner, src, dst []int32) error {
	var phys, live int64
	add := func(r arrow.Record) error {
		sa, ok1 := r.Column(s.cols[0]).(stringArray)
		da, ok2 := r.Column(s.cols[1]).(stringArray)
		if !ok1 || !ok2 {
			return errorf(ErrCorrupt, "fragment %s: an endpoint column is not a string column", f.ID)
		}
		nulls := sa.NullN()+da.NullN() > 0
		for j := 0; j < int(r.NumRows()); j, phys = j+1, phys+1 {
			if s.del != nil && s.del.Contains(uint32(phys)) {
				continue
			}
			if live >= int64(len(src)) {
				return errorf(ErrCorrupt, "fragment %s has more live rows than its %d", f.ID, len(src))
			}
			if nulls && (sa.IsNull(j) || da.IsNull(j)) {
				src[live], dst[live] = -1, -1
			} else {
				src[live], dst[live] = in.intern(sa.Value(j), true), in.intern(da.Value(j), true)
			}
			live++
		}
		return nil
	}
	if s.data == nil {
		for _, r := range s.recs {
			if err := add(r); err != nil {
				return err
			}
		}
	} else {
		ff, err := openParquet(bytes.NewReader(s.data))
		if err != nil {
			return fmt.Errorf("fragment %s: %w", f.ID, err)
		}
		for g := 0; g < ff.fr.ParquetReader().NumRowGroups(); g++ {
			recs, err := ff.read(ctx, s.fields, []int{g})
			if err != nil {
				return fmt.Errorf("fragment %s: %w", f.ID, err)
			}
			for _, r := range recs {
				if err = add(r); err != nil {
					break
				}
			}
			releaseAll(recs)
			if err != nil {
				return err
			}
		}
	}
	if live != int64(len(src)) {
		return errorf(ErrCorrupt, "fragment %s has %d live rows, its manifest %d", f.ID, live, len(src))
	}
	return nil
}

// An interner copies values into blocks of internChunk bytes and keeps
// them in blocks of internVals (no allocation per value, nothing copied as
// it grows).
const (
	internChunk = 256 << 10
	internVals  = 1 << 12
)

// interner numbers distinct strings densely in the order first seen. It
// finds them with an open-addressing table of slots tagged with the high
// half of the value's hash (a probe past other values compares tags, not
// strings): about 28 bytes per value besides its bytes, against about 64
// for a map[string]int32 of clones.
type interner struct {
	vals  [][]string // dense number d is vals[d/internVals][d%internVals]
	n     int
	slots []uint64 // tag<<32 | 1 + dense number; 0 is free
	seed  maphash.Seed
	block strings.Builder
	order []int32 // the values' order, kept by sorted
}

func (in *interner) val(d int32) string { return in.vals[d/internVals][d%internVals] }

func (in *interner) each(fn func(d int32, v string)) {
	for i, blk := range in.vals {
		for j, v := range blk {
			fn(int32(i*internVals+j), v)
		}
	}
}

// intern returns v's dense number, adding it (a copy of it when
// copyValue, else v itself) if it is new.
func (in *interner) intern(v string, copyValue bool) int32 {
	if 4*(in.n+1) > 3*len(in.slots) {
		in.grow()
	}
	h := maphash.String(in.seed, v)
	tag := h >> 32 << 32
	mask := uint64(len(in.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		e := in.slots[i]
		if e == 0 {
			if copyValue {
				v = in.copy(v)
			}
			if in.n%internVals == 0 {
				in.vals = append(in.vals, make([]string, 0, internVals))
			}
			blk := &in.vals[len(in.vals)-1]
			*blk = append(*blk, v)
			in.n++
			in.slots[i] = tag | uint64(in.n)
			return int32(in.n - 1)
		}
		if e&^0xffffffff == tag && in.val(int32(uint32(e))-1) == v {
			return int32(uint32(e)) - 1
		}
	}
}

// heldBytes is the memory the interner holds: its slots, the value blocks
// and the values' bytes (the current copy block counted whole).
func (in *interner) heldBytes() int64 {
	n := int64(len(in.slots))*8 + int64(cap(in.order))*4
	for _, blk := range in.vals {
		n += int64(cap(blk)) * 16
		for _, v := range blk {
			n += int64(len(v))
		}
	}
	return n + int64(in.block.Cap()-in.block.Len())
}

func (in *interner) copy(v string) string {
	if len(v) > internChunk/8 {
		return strings.Clone(v)
	}
	if in.block.Cap()-in.block.Len() < len(v) {
		in.block = strings.Builder{}
		in.block.Grow(internChunk)
	}
	at := in.block.Len()
	in.block.WriteString(v) // within the block's capacity: earlier values stay where they are
	return in.block.String()[at:]
}

func (in *interner) grow() {
	n := max(1024, 2*len(in.slots))
	in.slots = make([]uint64, n)
	mask := uint64(n - 1)
	in.each(func(d int32, v string) {
		h := maphash.String(in.seed, v)
		i := h & mask
		for in.slots[i] != 0 {
			i = (i + 1) & mask
		}
		in.slots[i] = h>>32<<32 | uint64(d+1)
	})
}

// sorted returns the dense numbers in the order of their values; the
// order is kept until more values are interned.
func (in *interner) sorted() []int32 {
	if len(in.order) == in.n && in.n > 0 {
		return in.order
	}
	order := make([]int32, in.n)
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return strings.Compare(in.val(a), in.val(b)) })
	in.order = order
	return order
}

// encode writes the index file (format 2, adjcodec.go) of the edge rows
// whose dense endpoints are src and dst (renumbered in place to the
// values' ranks).
func (in *interner) encode(src, dst []int32) ([]byte, error) {
	nodes := in.n
	order := in.sorted()
	rank := make([]int32, nodes)
	for r, d := range order {
		rank[d] = int32(r)
	}
	for _, key := range [][]int32{src, dst} {
		for i, k := range key {
			if k >= 0 {
				key[i] = rank[k]
			}
		}
	}
	return encodeAdjacency2(nodes, func(i int) string { return in.val(order[i]) }, src, dst)
}

func replaceAdjacency(m *Manifest, ix Index) {
	out := m.Indexes[:0]
	for _, o := range m.Indexes {
		if !(o.Kind == AdjacencyKind && slices.Equal(o.Columns, ix.Columns)) {
			out = append(out, o)
		}
	}
	m.Indexes = append(out, ix)
}

// StageCreateAdjacencyIndex stages a version of this one with an
// adjacency index on (from, to) covering every fragment, replacing an
// older one on those columns.
func (ds *Dataset) StageCreateAdjacencyIndex(ctx context.Context, from, to string) (*Staged, error) {
	if _, _, err := adjacencyColumns(ds.schema, from, to); err != nil {
		return nil, err
	}
	st, m := ds.newStage()
	m.Version = ds.m.Version + 1
	ix, key, err := buildAdjacencyIndex(ctx, ds, ds.root(), m, m.adjacencyIndex(from, to), from, to, nil)
	if err != nil {
		return nil, err
	}
	st.Files = append(st.Files, key)
	replaceAdjacency(m, ix)
	st.finish(m, ds.m.Version, OpCreateIndex)
	return st, nil
}

// AdjacencyUncovered is the number of live rows of the staged version that
// its adjacency index on (from, to) does not hold (see
// Manifest.AdjacencyUncovered). No I/O.
func (st *Staged) AdjacencyUncovered(from, to string) int64 {
	if st.Empty() {
		return 0
	}
	return st.Manifest.AdjacencyUncovered(from, to)
}

// AddAdjacencyIndex builds an adjacency index on (from, to) covering every
// fragment of the staged version and adds it to the stage (one file Put,
// plus reads of the fragments an older index does not cover): a writer
// that adds many edges builds it with the write, so the version's first
// traversal reads one file.
func (st *Staged) AddAdjacencyIndex(ctx context.Context, from, to string) error {
	if st.Empty() {
		return ErrNothingStaged
	}
	s, err := decodeSchema(st.Manifest.Schema)
	if err != nil {
		return err
	}
	if _, _, err := adjacencyColumns(s, from, to); err != nil {
		return err
	}
	ds := &Dataset{store: st.store, path: st.Path, m: st.Manifest, schema: s, cache: st.cache}
	if ds.cache == nil {
		ds.cache = NewCache(0)
	}
	ix, key, err := buildAdjacencyIndex(ctx, ds, branchRoot(st.Path, st.Branch), st.Manifest, st.Manifest.adjacencyIndex(from, to), from, to, st.tracked)
	if err != nil {
		return err
	}
	st.Files = append(st.Files, key)
	replaceAdjacency(st.Manifest, ix)
	return nil
}
