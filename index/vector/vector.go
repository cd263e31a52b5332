// Package vector is the persisted approximate-nearest-neighbour index of
// one Vector column of a table version (IVF-flat: the vectors are grouped
// into lists around k-means centroids, and a query reads only the lists of
// the centroids nearest to it), and the searcher that answers nearest()
// from it: the probed lists where the index covers the version, an exact
// brute force over the fragments it does not cover.
//
// The metric is the query language's: Euclidean (L2) distance, computed in
// float64 like the scan. The file (_indices/<uuid>/ivf.idx, recorded in
// the table version's manifest with the fragments it covers and DirLen,
// the directory's length) is:
//
//	directory (DirLen bytes, one ranged GET, decoded once per handle):
//	  magic "OGIVF01\n", then little-endian uint32 dim, lists, fragments
//	  fragment ids (each: uint32 length, bytes)
//	  centroids: lists × dim float32
//	  per list: uint64 offset (from the end of the directory), uint64
//	  length, uint32 entries
//	  a CRC-32C of the directory before it
//	lists, each (in the order of a nearest-neighbour chain over the
//	centroids, so probed lists often lie side by side; a query reads each
//	run of adjacent probed lists with one ranged GET, cached):
//	  per entry: uint32 fragment ordinal, uint32 physical row,
//	  uint32 id length, id bytes, dim float32
//	  a CRC-32C of the list before it
//
// A list entry of a fragment no longer in the version, or of a row its
// newer deletion file deletes, is skipped. A missing or undecodable file
// is ignored (Open reports no index: the caller runs the exact scan).
package vector

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"sort"
	"sync"

	"github.com/omnigraph-go/omnigraph/index/fulltext"
	"github.com/omnigraph-go/omnigraph/index/internal/rowscan"
	"github.com/omnigraph-go/omnigraph/table"
)

// Kind is the table index kind (and file name) of a vector index.
const Kind = "ivf"

const magic = "OGIVF01\n"

// MinRows is the fewest vectors a table needs for Build to make an index:
// below it the exact brute force is as cheap as reading lists.
var MinRows = 4096

// NProbe is the number of lists a query reads (at most the list count).
// Fixed, so a query's requests do not grow with the table.
var NProbe = 32

// maxLists bounds the list count (√rows otherwise).
const maxLists = 1024

var crcTable = crc32.MakeTable(crc32.Castagnoli)

type listRef struct {
	off, length int64
	count       int
}

type dir struct {
	dim       int
	frags     []string
	centroids []float32 // lists × dim
	lists     []listRef
}

type entry struct {
	frag, row uint32
	id        string
	vec       []float32
}

// Build reads every live non-NULL vector of ds's column and returns its
// index file; ok is false when there are fewer than MinRows vectors (no
// index is worth building).
func Build(ctx context.Context, ds *table.Dataset, column string, dim int) (table.IndexFile, bool, error) {
	frags := ds.Fragments()
	var es []entry
	for i := range frags {
		rows, err := rowscan.Fragment(ctx, ds, i, column)
		if err != nil {
			return table.IndexFile{}, false, err
		}
		for _, r := range rows {
			if v, ok := r.Value.([]float32); ok && len(v) == dim {
				es = append(es, entry{frag: uint32(i), row: r.Phys, id: r.ID, vec: v})
			}
		}
	}
	if len(es) < MinRows || dim <= 0 {
		return table.IndexFile{}, false, nil
	}
	nlist := min(max(int(math.Sqrt(float64(len(es)))), 1), maxLists)
	cents := train(es, dim, nlist)
	assign := make([][]int, nlist)
	for i, e := range es {
		c := nearestCentroid(cents, dim, e.vec)
		assign[c] = append(assign[c], i)
	}
	var lists bytes.Buffer
	refs := make([]listRef, nlist)
	for _, c := range chain(cents, dim, nlist) {
		members := assign[c]
		start := lists.Len()
		var lb []byte
		for _, i := range members {
			lb = appendEntry(lb, es[i])
		}
		lists.Write(appendCRC(lb))
		refs[c] = listRef{off: int64(start), length: int64(lists.Len() - start), count: len(members)}
	}
	var d bytes.Buffer
	u32 := func(v uint32) { d.Write(binary.LittleEndian.AppendUint32(nil, v)) }
	d.WriteString(magic)
	u32(uint32(dim))
	u32(uint32(nlist))
	u32(uint32(len(frags)))
	for _, id := range frags {
		u32(uint32(len(id)))
		d.WriteString(id)
	}
	for _, x := range cents {
		u32(math.Float32bits(x))
	}
	for _, r := range refs {
		d.Write(binary.LittleEndian.AppendUint64(nil, uint64(r.off)))
		d.Write(binary.LittleEndian.AppendUint64(nil, uint64(r.length)))
		u32(uint32(r.count))
	}
	u32(crc32.Checksum(d.Bytes(), crcTable))
	dirLen := int64(d.Len())
	d.Write(lists.Bytes())
	return table.IndexFile{Kind: Kind, Columns: []string{column}, Data: d.Bytes(), DirLen: dirLen, Entries: int64(len(es))}, true, nil
}

// appendEntry appends one list entry in the file format.
func appendEntry(b []byte, e entry) []byte {
	b = binary.LittleEndian.AppendUint32(b, e.frag)
	b = binary.LittleEndian.AppendUint32(b, e.row)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(e.id)))
	b = append(b, e.id...)
	for _, x := range e.vec {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

// appendCRC appends the CRC-32C of b.
func appendCRC(b []byte) []byte {
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
}

// train runs k-means (Lloyd, seeded, on a sample of at most 64 points per
// list) and returns nlist centroids.
func train(es []entry, dim, nlist int) []float32 {
	rng := rand.New(rand.NewPCG(1, uint64(len(es))))
	sample := make([]int, len(es))
	for i := range sample {
		sample[i] = i
	}
	rng.Shuffle(len(sample), func(i, j int) { sample[i], sample[j] = sample[j], sample[i] })
	sample = sample[:min(len(sample), 64*nlist)]
	cents := make([]float32, nlist*dim)
	for c := 0; c < nlist; c++ {
		copy(cents[c*dim:], es[sample[c%len(sample)]].vec)
	}
	sums := make([]float64, nlist*dim)
	counts := make([]int, nlist)
	for iter := 0; iter < 10; iter++ {
		clear(sums)
		clear(counts)
		for _, i := range sample {
			c := nearestCentroid(cents, dim, es[i].vec)
			counts[c]++
			for k, x := range es[i].vec {
				sums[c*dim+k] += float64(x)
			}
		}
		for c := 0; c < nlist; c++ {
			if counts[c] == 0 {
				// An empty list takes a random sample point.
				copy(cents[c*dim:(c+1)*dim], es[sample[rng.IntN(len(sample))]].vec)
				continue
			}
			for k := 0; k < dim; k++ {
				cents[c*dim+k] = float32(sums[c*dim+k] / float64(counts[c]))
			}
		}
	}
	return cents
}

// chain orders the centroids for the file: from the first, each next is
// the nearest not yet placed, so lists a query probes (around one point)
// tend to lie side by side and are read with one ranged GET.
func chain(cents []float32, dim, n int) []int {
	placed := make([]bool, n)
	out := make([]int, 0, n)
	cur := 0
	for len(out) < n {
		placed[cur] = true
		out = append(out, cur)
		next, best := -1, math.Inf(1)
		for c := 0; c < n; c++ {
			if !placed[c] {
				if d := sqDist(cents[c*dim:(c+1)*dim], cents[cur*dim:(cur+1)*dim]); d < best {
					next, best = c, d
				}
			}
		}
		if next < 0 {
			break
		}
		cur = next
	}
	return out
}

func sqDist(a, b []float32) float64 {
	d := 0.0
	for i := range a {
		x := float64(a[i]) - float64(b[i])
		d += x * x
	}
	return d
}

func nearestCentroid(cents []float32, dim int, v []float32) int {
	best, bd := 0, math.Inf(1)
	for c := 0; c*dim < len(cents); c++ {
		if d := sqDist(cents[c*dim:(c+1)*dim], v); d < bd {
			best, bd = c, d
		}
	}
	return best
}

var errCorrupt = fmt.Errorf("%w: vector index", table.ErrCorrupt)

func decodeDir(b []byte) (any, int64, error) {
	bad := func(what string) (any, int64, error) { return nil, 0, fmt.Errorf("%w: %s", errCorrupt, what) }
	if !bytes.HasPrefix(b, []byte(magic)) || len(b) < len(magic)+16 {
		return bad("bad magic")
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, crcTable) != binary.LittleEndian.Uint32(b[len(body):]) {
		return bad("checksum mismatch")
	}
	r := body[len(magic):]
	u32 := func() uint32 {
		if len(r) < 4 {
			r = nil
			return 0
		}
		v := binary.LittleEndian.Uint32(r)
		r = r[4:]
		return v
	}
	d := &dir{dim: int(u32())}
	nlist, nf := int(u32()), int(u32())
	if d.dim <= 0 || nlist <= 0 || nf > len(r) {
		return bad("bad header")
	}
	for i := 0; i < nf; i++ {
		n := int(u32())
		if n > len(r) {
			return bad("truncated fragment id")
		}
		d.frags = append(d.frags, string(r[:n]))
		r = r[n:]
	}
	if len(r) != nlist*d.dim*4+nlist*20 {
		return bad("bad length")
	}
	d.centroids = make([]float32, nlist*d.dim)
	for i := range d.centroids {
		d.centroids[i] = math.Float32frombits(u32())
	}
	for i := 0; i < nlist; i++ {
		off, length := int64(binary.LittleEndian.Uint64(r)), int64(binary.LittleEndian.Uint64(r[8:]))
		r = r[16:]
		d.lists = append(d.lists, listRef{off: off, length: length, count: int(u32())})
	}
	return d, int64(len(b))*2 + 256, nil
}

func decodeList(dim, count int) func([]byte) (any, int64, error) {
	return func(b []byte) (any, int64, error) {
		if len(b) < 4 {
			return nil, 0, fmt.Errorf("%w: truncated list", errCorrupt)
		}
		body := b[:len(b)-4]
		if crc32.Checksum(body, crcTable) != binary.LittleEndian.Uint32(b[len(body):]) {
			return nil, 0, fmt.Errorf("%w: list checksum mismatch", errCorrupt)
		}
		out := make([]entry, 0, count)
		r := body
		for i := 0; i < count; i++ {
			if len(r) < 12 {
				return nil, 0, fmt.Errorf("%w: truncated list", errCorrupt)
			}
			e := entry{frag: binary.LittleEndian.Uint32(r), row: binary.LittleEndian.Uint32(r[4:])}
			n := int(binary.LittleEndian.Uint32(r[8:]))
			r = r[12:]
			if len(r) < n+4*dim {
				return nil, 0, fmt.Errorf("%w: truncated list", errCorrupt)
			}
			e.id = string(r[:n])
			r = r[n:]
			e.vec = make([]float32, dim)
			for k := range e.vec {
				e.vec[k] = math.Float32frombits(binary.LittleEndian.Uint32(r[4*k:]))
			}
			r = r[4*dim:]
			out = append(out, e)
		}
		if len(r) != 0 {
			return nil, 0, fmt.Errorf("%w: list length", errCorrupt)
		}
		return out, int64(len(b))*2 + 64, nil
	}
}

// Index returns ds's vector index entry on column, if it has one.
func Index(ds *table.Dataset, column string) (table.Index, bool) { return ds.IndexOn(Kind, column) }

// Covers reports whether ds has a vector index on column covering every
// fragment as it is. No I/O.
func Covers(ds *table.Dataset, column string) bool { return ds.CoveredOn(Kind, column) }

// Searcher answers nearest() over one Vector column of one table version.
// Safe for concurrent use.
type Searcher struct {
	ds *table.Dataset
	ix table.Index
	d  *dir
	// current fragment index of each of the file's fragments (-1: gone),
	// and the rows deleted since the build (nil: none)
	at   []int
	dels map[int]func(uint32) bool
	// the live vectors of the fragments the index does not cover
	unID  []string
	unVec [][]float32
	unPos []uint64
	// Scanned counts the live rows read from uncovered fragments.
	Scanned int
	// read holds the lists read so far (list → []entry).
	read sync.Map
}

// Open returns the searcher of column in ds, or nil when ds has no usable
// vector index on it. It reads the index directory (one ranged GET,
// cached), the deletion files of covered fragments deleted from since the
// build, and the column of every fragment the index does not cover.
func Open(ctx context.Context, ds *table.Dataset, column string) (*Searcher, error) {
	ix, ok := Index(ds, column)
	if !ok || ix.DirLen <= 0 {
		return nil, nil
	}
	v, err := ds.ReadIndex(ctx, ix, 0, ix.DirLen, decodeDir)
	if errors.Is(err, table.ErrNotFound) || errors.Is(err, table.ErrCorrupt) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	d := v.(*dir)
	if len(d.frags) != len(ix.Fragments) {
		return nil, nil
	}
	for i := range d.frags {
		if d.frags[i] != ix.Fragments[i] {
			return nil, nil
		}
	}
	s := &Searcher{ds: ds, ix: ix, d: d, at: make([]int, len(d.frags)), dels: map[int]func(uint32) bool{}}
	for i := range s.at {
		s.at[i] = -1
	}
	ord, newer := ds.FragmentCoverage(ix)
	for i, o := range ord {
		if o >= 0 {
			s.at[o] = i
			if newer[i] {
				bm, err := ds.DeletedRows(ctx, i)
				if err != nil {
					return nil, err
				}
				if bm != nil {
					s.dels[o] = bm.Contains
				}
			}
			continue
		}
		rows, err := rowscan.Fragment(ctx, ds, i, column)
		if err != nil {
			return nil, err
		}
		s.Scanned += len(rows)
		for _, r := range rows {
			if v, ok := r.Value.([]float32); ok && len(v) == d.dim {
				s.unID = append(s.unID, r.ID)
				s.unVec = append(s.unVec, v)
				s.unPos = append(s.unPos, fulltext.Pos(i, r.Phys))
			}
		}
	}
	return s, nil
}

// lists returns the entries of lists probe: from the searcher's own
// cache, the rest read in runs of lists adjacent in the file (one ranged
// GET per run, in parallel).
func (s *Searcher) lists(ctx context.Context, probe []int) ([][]entry, error) {
	out := make([][]entry, len(probe))
	var need []int // indexes into probe
	for i, c := range probe {
		if v, ok := s.read.Load(c); ok {
			out[i] = v.([]entry)
		} else if s.d.lists[c].count > 0 {
			need = append(need, i)
		}
	}
	sort.Slice(need, func(a, b int) bool { return s.d.lists[probe[need[a]]].off < s.d.lists[probe[need[b]]].off })
	var runs [][]int
	for _, i := range need {
		if n := len(runs); n > 0 {
			last := s.d.lists[probe[runs[n-1][len(runs[n-1])-1]]]
			if last.off+last.length == s.d.lists[probe[i]].off {
				runs[n-1] = append(runs[n-1], i)
				continue
			}
		}
		runs = append(runs, []int{i})
	}
	errs := make([]error, len(runs))
	var wg sync.WaitGroup
	for r, run := range runs {
		wg.Add(1)
		go func(r int, run []int) {
			defer wg.Done()
			first := s.d.lists[probe[run[0]]]
			var length int64
			refs := make([]listRef, len(run))
			for j, i := range run {
				refs[j] = s.d.lists[probe[i]]
				length += refs[j].length
			}
			v, err := s.ds.ReadIndex(ctx, s.ix, s.ix.DirLen+first.off, length, decodeRun(s.d.dim, refs))
			if err != nil {
				errs[r] = err
				return
			}
			for j, i := range run {
				l := v.([][]entry)[j]
				out[i] = l
				s.read.Store(probe[i], l)
			}
		}(r, run)
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// decodeRun decodes adjacent lists read with one request.
func decodeRun(dim int, refs []listRef) func([]byte) (any, int64, error) {
	return func(b []byte) (any, int64, error) {
		out := make([][]entry, len(refs))
		var size int64
		for j, r := range refs {
			if int64(len(b)) < r.length {
				return nil, 0, fmt.Errorf("%w: truncated lists", errCorrupt)
			}
			v, n, err := decodeList(dim, r.count)(b[:r.length])
			if err != nil {
				return nil, 0, err
			}
			out[j], size, b = v.([]entry), size+n, b[r.length:]
		}
		return out, size, nil
	}
}

// Bytes estimates the memory the searcher holds beside its cached file parts.
func (s *Searcher) Bytes() int64 {
	n := int64(len(s.at))*8 + 64
	for i, id := range s.unID {
		n += int64(len(id)) + 40 + int64(len(s.unVec[i]))*4
	}
	return n
}

// Lists is the number of lists of the index.
func (s *Searcher) Lists() int { return len(s.d.lists) }

// Nearest returns the k live rows whose vectors are nearest to q among
// the probed lists and the fragments the index does not cover (equal
// distances: the greater id first), in scan order. It reads the probed
// lists not yet cached (one ranged GET each, in parallel).
func (s *Searcher) Nearest(ctx context.Context, q []float32, k int) ([]fulltext.Hit, error) {
	if k <= 0 || len(q) != s.d.dim {
		return nil, nil
	}
	dim := s.d.dim
	nl := len(s.d.lists)
	order := make([]int, nl)
	cd := make([]float64, nl)
	for c := range order {
		order[c] = c
		cd[c] = sqDist(s.d.centroids[c*dim:(c+1)*dim], q)
	}
	sort.Slice(order, func(i, j int) bool { return cd[order[i]] < cd[order[j]] })
	probe := order[:min(NProbe, nl)]
	lists, err := s.lists(ctx, probe)
	if err != nil {
		return nil, fmt.Errorf("nearest: %w", err)
	}
	type cand struct {
		h fulltext.Hit
		d float64
	}
	var cs []cand
	for _, l := range lists {
		for _, e := range l {
			if int(e.frag) >= len(s.at) || s.at[e.frag] < 0 {
				continue
			}
			if del := s.dels[int(e.frag)]; del != nil && del(e.row) {
				continue
			}
			cs = append(cs, cand{fulltext.Hit{ID: e.id, Pos: fulltext.Pos(s.at[e.frag], e.row)}, math.Sqrt(sqDist(e.vec, q))})
		}
	}
	for i, v := range s.unVec {
		cs = append(cs, cand{fulltext.Hit{ID: s.unID[i], Pos: s.unPos[i]}, math.Sqrt(sqDist(v, q))})
	}
	// Nearest first, equal distances the greater id first: the query's order.
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].d != cs[j].d {
			return cs[i].d < cs[j].d
		}
		return cs[i].h.ID > cs[j].h.ID
	})
	if k < len(cs) {
		cs = cs[:k]
	}
	out := make([]fulltext.Hit, len(cs))
	for i, c := range cs {
		out[i] = c.h
	}
	return fulltext.SortHits(out), nil
}
