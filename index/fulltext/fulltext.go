// Package fulltext is the persisted full-text (inverted) index of one
// String column of a table version, and the searcher that answers the
// query language's text filters (search, fuzzy, match_text) and bm25 from
// it exactly as a scan would: the index where it covers the version, a
// scan of the fragments it does not cover.
//
// Analysis is text's (Tokens, Terms), so the index holds the same
// terms a scan computes. The file (_indices/<uuid>/fulltext.idx, one per
// indexed column, recorded in the table version's manifest with the
// fragments it covers) is read whole with one GET and decoded once per
// handle:
//
//	magic "OGFTS01\n"
//	uvarint fragments, then each fragment id (uvarint length, bytes)
//	uvarint documents, then per document (fragment by fragment, in
//	        physical row order; a NULL value is no document):
//	        uvarint fragment ordinal, uvarint physical row,
//	        id (uvarint length, bytes), uvarint length in tokens
//	uvarint terms, then per term (ascending): term (uvarint length,
//	        bytes), uvarint postings, then per posting: uvarint document
//	        delta (from the previous posting's, ascending), uvarint count
//	        of the term in the document
//	a CRC-32C (little endian) of everything before it
//
// A reader of a later version uses the documents of the covered fragments
// still in the version, drops the rows of a covered fragment's newer
// deletion file, and tokenizes the fragments the index does not cover, so
// the corpus statistics and matches are those of the version's live rows.
// A missing or undecodable file is ignored (Open reports no index).
package fulltext

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sort"

	"github.com/omnigraph-go/omnigraph/index/internal/rowscan"
	"github.com/omnigraph-go/omnigraph/table"
	"github.com/omnigraph-go/omnigraph/text"
)

// Kind is the table index kind (and file name) of a full-text index.
const Kind = "fulltext"

const magic = "OGFTS01\n"

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// file is a decoded index file.
type file struct {
	frags     []string
	fragStart []int // documents of fragment o: fragStart[o]..fragStart[o+1]
	docRow    []uint32
	docID     []string
	docLen    []uint32
	terms     []string // ascending
	post      [][]uint32
	tf        [][]uint32
	bytes     int64
}

// Build reads the id and column of every live row of ds and returns the
// index file over them (one document per non-NULL value).
func Build(ctx context.Context, ds *table.Dataset, column string) (table.IndexFile, error) {
	frags := ds.Fragments()
	f := &file{frags: frags}
	postings := map[string][]uint32{}
	counts := map[string][]uint32{}
	for i := range frags {
		rows, err := rowscan.Fragment(ctx, ds, i, column)
		if err != nil {
			return table.IndexFile{}, err
		}
		f.fragStart = append(f.fragStart, len(f.docID))
		for _, r := range rows {
			s, ok := r.Value.(string)
			if !ok {
				continue
			}
			d := uint32(len(f.docID))
			toks := text.Tokens(s)
			f.docRow = append(f.docRow, r.Phys)
			f.docID = append(f.docID, r.ID)
			f.docLen = append(f.docLen, uint32(len(toks)))
			tf := map[string]uint32{}
			for _, t := range toks {
				tf[t]++
			}
			for t, n := range tf {
				postings[t] = append(postings[t], d)
				counts[t] = append(counts[t], n)
			}
		}
	}
	f.fragStart = append(f.fragStart, len(f.docID))
	for t := range postings {
		f.terms = append(f.terms, t)
	}
	sort.Strings(f.terms)
	for _, t := range f.terms {
		f.post = append(f.post, postings[t])
		f.tf = append(f.tf, counts[t])
	}
	data := encode(f)
	return table.IndexFile{Kind: Kind, Columns: []string{column}, Data: data, Entries: int64(len(f.docID))}, nil
}

func encode(f *file) []byte {
	var b bytes.Buffer
	u := func(v uint64) { b.Write(binary.AppendUvarint(nil, v)) }
	s := func(x string) { u(uint64(len(x))); b.WriteString(x) }
	b.WriteString(magic)
	u(uint64(len(f.frags)))
	for _, id := range f.frags {
		s(id)
	}
	u(uint64(len(f.docID)))
	for o := range f.frags {
		for d := f.fragStart[o]; d < f.fragStart[o+1]; d++ {
			u(uint64(o))
			u(uint64(f.docRow[d]))
			s(f.docID[d])
			u(uint64(f.docLen[d]))
		}
	}
	u(uint64(len(f.terms)))
	for i, t := range f.terms {
		s(t)
		u(uint64(len(f.post[i])))
		prev := uint32(0)
		for j, d := range f.post[i] {
			u(uint64(d - prev))
			u(uint64(f.tf[i][j]))
			prev = d
		}
	}
	b.Write(binary.LittleEndian.AppendUint32(nil, crc32.Checksum(b.Bytes(), crcTable)))
	return b.Bytes()
}

var errCorrupt = fmt.Errorf("%w: full-text index", table.ErrCorrupt)

type reader struct {
	b   []byte
	bad bool
}

func (r *reader) u() uint64 {
	if r.bad {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.bad = true
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) s() string {
	n := r.u()
	if r.bad || uint64(len(r.b)) < n {
		r.bad = true
		return ""
	}
	out := string(r.b[:n])
	r.b = r.b[n:]
	return out
}

func decode(b []byte) (any, int64, error) {
	if !bytes.HasPrefix(b, []byte(magic)) || len(b) < len(magic)+4 {
		return nil, 0, fmt.Errorf("%w: bad magic", errCorrupt)
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, crcTable) != binary.LittleEndian.Uint32(b[len(body):]) {
		return nil, 0, fmt.Errorf("%w: checksum mismatch", errCorrupt)
	}
	r := &reader{b: body[len(magic):]}
	f := &file{bytes: int64(len(b)) * 3}
	nf := r.u()
	if nf > uint64(len(r.b)) {
		return nil, 0, fmt.Errorf("%w: bad fragment count", errCorrupt)
	}
	for i := uint64(0); i < nf && !r.bad; i++ {
		f.frags = append(f.frags, r.s())
	}
	nd := r.u()
	if nd > uint64(len(r.b)) {
		return nil, 0, fmt.Errorf("%w: bad document count", errCorrupt)
	}
	f.fragStart = make([]int, 0, len(f.frags)+1)
	last := -1
	for d := uint64(0); d < nd && !r.bad; d++ {
		o := int(r.u())
		if o < last || o >= len(f.frags) {
			r.bad = true
			break
		}
		for last < o {
			f.fragStart = append(f.fragStart, int(d))
			last++
		}
		f.docRow = append(f.docRow, uint32(r.u()))
		f.docID = append(f.docID, r.s())
		f.docLen = append(f.docLen, uint32(r.u()))
	}
	for last < len(f.frags) {
		f.fragStart = append(f.fragStart, int(nd))
		last++
	}
	nt := r.u()
	if nt > uint64(len(r.b)) {
		r.bad = true
	}
	for i := uint64(0); i < nt && !r.bad; i++ {
		t := r.s()
		np := r.u()
		if np > nd {
			r.bad = true
			break
		}
		post, tf := make([]uint32, np), make([]uint32, np)
		d := uint64(0)
		for j := range post {
			d += r.u()
			if d >= nd {
				r.bad = true
				break
			}
			post[j], tf[j] = uint32(d), uint32(r.u())
		}
		if len(f.terms) > 0 && t <= f.terms[len(f.terms)-1] {
			r.bad = true
		}
		f.terms, f.post, f.tf = append(f.terms, t), append(f.post, post), append(f.tf, tf)
	}
	if r.bad || len(r.b) != 0 {
		return nil, 0, fmt.Errorf("%w: malformed", errCorrupt)
	}
	return f, f.bytes, nil
}

// Searcher answers full-text queries over one column of one table version.
// It is immutable once opened and safe for concurrent use.
type Searcher struct {
	f      *file
	live   []bool   // per document of f: a live row of this version
	pos    []uint64 // per document of f: its place in the version (see Hit)
	docs   int      // live documents (covered and not)
	tokens int
	// documents of the fragments the index does not cover
	unID   []string
	unToks [][]string
	unPos  []uint64
	// Scanned counts the live rows read from uncovered fragments.
	Scanned int
}

// Index returns ds's full-text index entry on column, if it has one.
func Index(ds *table.Dataset, column string) (table.Index, bool) { return ds.IndexOn(Kind, column) }

// Covers reports whether ds has a full-text index on column covering every
// fragment as it is. No I/O.
func Covers(ds *table.Dataset, column string) bool { return ds.CoveredOn(Kind, column) }

// Open returns the searcher of column in ds, or nil when ds has no usable
// full-text index on it (none, gone, or undecodable: the caller scans).
// It reads the index file (one GET, cached), the deletion files of covered
// fragments deleted from since the build, and the column of every fragment
// the index does not cover.
func Open(ctx context.Context, ds *table.Dataset, column string) (*Searcher, error) {
	ix, ok := Index(ds, column)
	if !ok {
		return nil, nil
	}
	v, err := ds.ReadIndex(ctx, ix, 0, -1, decode)
	if errors.Is(err, table.ErrNotFound) || errors.Is(err, table.ErrCorrupt) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	f := v.(*file)
	if len(f.frags) != len(ix.Fragments) || int64(len(f.docID)) != ix.Entries {
		return nil, nil
	}
	for i := range f.frags {
		if f.frags[i] != ix.Fragments[i] {
			return nil, nil
		}
	}
	s := &Searcher{f: f, live: make([]bool, len(f.docID)), pos: make([]uint64, len(f.docID))}
	ord, newer := ds.FragmentCoverage(ix)
	for i, o := range ord {
		if o < 0 {
			rows, err := rowscan.Fragment(ctx, ds, i, column)
			if err != nil {
				return nil, err
			}
			s.Scanned += len(rows)
			for _, r := range rows {
				if v, ok := r.Value.(string); ok {
					toks := text.Tokens(v)
					s.unID = append(s.unID, r.ID)
					s.unToks = append(s.unToks, toks)
					s.unPos = append(s.unPos, Pos(i, r.Phys))
					s.docs++
					s.tokens += len(toks)
				}
			}
			continue
		}
		del := func(uint32) bool { return false }
		if newer[i] {
			bm, err := ds.DeletedRows(ctx, i)
			if err != nil {
				return nil, err
			}
			if bm != nil {
				del = bm.Contains
			}
		}
		for d := f.fragStart[o]; d < f.fragStart[o+1]; d++ {
			if !del(f.docRow[d]) {
				s.live[d] = true
				s.pos[d] = Pos(i, f.docRow[d])
				s.docs++
				s.tokens += int(f.docLen[d])
			}
		}
	}
	return s, nil
}

// Bytes estimates the memory the searcher holds beside its shared file.
func (s *Searcher) Bytes() int64 {
	n := int64(len(s.live))*9 + 64
	for i, id := range s.unID {
		n += int64(len(id)) + 40
		for _, t := range s.unToks[i] {
			n += int64(len(t)) + 16
		}
	}
	return n
}

// matchTerms lists the dictionary terms within edits of some query term.
func (s *Searcher) matchTerms(terms []string, edits int) []int {
	var out []int
	if edits <= 0 {
		for _, q := range terms {
			if i := sort.SearchStrings(s.f.terms, q); i < len(s.f.terms) && s.f.terms[i] == q {
				out = append(out, i)
			}
		}
		return out
	}
	for i, d := range s.f.terms {
		for _, q := range terms {
			if text.Within(q, d, edits) {
				out = append(out, i)
				break
			}
		}
	}
	return out
}

// Hit is a row an index answer names: its id and its place in the table
// version (Pos), so that hits sort in the order a scan returns rows.
type Hit struct {
	ID  string
	Pos uint64
}

// Pos is the place of physical row phys of the version's fragment i.
func Pos(i int, phys uint32) uint64 { return uint64(i)<<32 | uint64(phys) }

// SortHits orders hits as a scan returns rows and drops repeated ids.
func SortHits(hs []Hit) []Hit {
	sort.Slice(hs, func(i, j int) bool { return hs[i].Pos < hs[j].Pos })
	out := hs[:0]
	for i, h := range hs {
		if i == 0 || h.Pos != hs[i-1].Pos {
			out = append(out, h)
		}
	}
	return out
}

// Match returns the live rows whose value holds a term within edits of one
// of terms (text.MatchAny's rule), in scan order.
func (s *Searcher) Match(terms []string, edits int) []Hit {
	var out []Hit
	seen := map[uint32]bool{}
	for _, ti := range s.matchTerms(terms, edits) {
		for _, d := range s.f.post[ti] {
			if s.live[d] && !seen[d] {
				seen[d] = true
				out = append(out, Hit{s.f.docID[d], s.pos[d]})
			}
		}
	}
	for i, toks := range s.unToks {
		if text.MatchAny(toks, terms, edits) {
			out = append(out, Hit{s.unID[i], s.unPos[i]})
		}
	}
	return SortHits(out)
}

// Corpus is the BM25 corpus of the version's live rows, with document
// frequencies of terms (the only ones a score of terms consults).
func (s *Searcher) Corpus(terms []string) *text.Corpus {
	c := &text.Corpus{Docs: s.docs, Tokens: s.tokens, DF: map[string]int{}}
	for _, t := range terms {
		n := 0
		if i := sort.SearchStrings(s.f.terms, t); i < len(s.f.terms) && s.f.terms[i] == t {
			for _, d := range s.f.post[i] {
				if s.live[d] {
					n++
				}
			}
		}
		for _, toks := range s.unToks {
			for _, x := range toks {
				if x == t {
					n++
					break
				}
			}
		}
		c.DF[t] = n
	}
	return c
}

// Top returns the k live rows scoring best above 0 for terms under c
// (equal scores: the greater id first, the query language's order), in
// scan order. The scores are text.Corpus.Score's to the bit (TermScore
// summed over terms in order), so these are the rows a scan ranks first.
func (s *Searcher) Top(terms []string, c *text.Corpus, k int) []Hit {
	if k <= 0 {
		return nil
	}
	score := map[int]float64{}
	for _, t := range terms {
		i := sort.SearchStrings(s.f.terms, t)
		if i >= len(s.f.terms) || s.f.terms[i] != t {
			continue
		}
		for j, d := range s.f.post[i] {
			if s.live[d] {
				score[int(d)] += c.TermScore(t, int(s.f.tf[i][j]), int(s.f.docLen[d]))
			}
		}
	}
	type cand struct {
		h Hit
		v float64
	}
	cs := make([]cand, 0, len(score)+len(s.unID))
	for d, v := range score {
		if v > 0 {
			cs = append(cs, cand{Hit{s.f.docID[d], s.pos[d]}, v})
		}
	}
	for i, toks := range s.unToks {
		if v := c.Score(toks, terms); v > 0 {
			cs = append(cs, cand{Hit{s.unID[i], s.unPos[i]}, v})
		}
	}
	// Best first, equal scores the greater id first: the query's order.
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].v != cs[j].v {
			return cs[i].v > cs[j].v
		}
		return cs[i].h.ID > cs[j].h.ID
	})
	if k < len(cs) {
		cs = cs[:k]
	}
	out := make([]Hit, len(cs))
	for i, c := range cs {
		out[i] = c.h
	}
	return SortHits(out)
}
