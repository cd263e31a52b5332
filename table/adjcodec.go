package table

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"math/bits"
)

// The compact adjacency file (format 2, magic "OGADJ02\n"). Format 1
// (OGADJ01: the dictionary as plain offsets and bytes, then both row
// groupings as uint32s, 18 bytes an edge on the load bench) is still read.
//
// Format 2 stores what the groupings are computed from: each edge row's two
// dense endpoints, in row order, and the sorted endpoint values. The
// groupings (CSR by source, CSC by destination) are a counting sort of
// those, redone when the file is loaded. Each row's pair is the whole
// information (a grouping repeats the row numbers), so this is the smaller
// form: on the query bench (100k nodes, 1M random edges) about 4.5 bytes an
// edge, on the load bench (1M nodes, 2M edges) under 3.
//
//	magic "OGADJ02\n", then little-endian uint32s:
//	  nodes, edges, dictionary value bytes, dictionary section bytes,
//	  source section bytes, destination section bytes
//	dictionary section: nb+1 uint32 block offsets (nb = ceil(nodes/64)),
//	  then the blocks: 64 values each, ascending; the first value as
//	  uvarint length and bytes, each next one as uvarint shared-prefix
//	  length, uvarint suffix length, suffix bytes (front coding)
//	source section, then destination section: one value per edge row,
//	  the dense endpoint (nodes itself for a null endpoint), in blocks of
//	  128 rows: nb+1 uint32 block offsets, then per block a header byte
//	  (bit 7: delta mode, bits 0-5: bit width w) and a uvarint (the base
//	  in frame mode, the first value in delta mode), then the values packed
//	  at w bits, least significant first: value-base in frame mode; in
//	  delta mode the zigzag differences of each value from the one before
//	  (the encoder picks the smaller mode per block)
//	a CRC-32C of everything before it
//
// Both tables of offsets make the file usable without decoding all of it:
// a value is found by a binary search over the blocks' first values and one
// block's scan, and a row's endpoints by one block's unpacking.
const (
	adjMagic2     = "OGADJ02\n"
	adjDictBlock  = 64
	adjRowBlock   = 128
	adjDeltaFlag  = 0x80
	adjWidthMask  = 0x3f
	adjHeaderSize = len(adjMagic2) + 6*4
)

// encodeAdjacency2 writes the format-2 file of edges whose dense endpoints
// are src and dst (ranks in sorted, -1 for null) over the node values
// sorted: value(i) for i in [0, nodes), ascending. The sections are written
// in place into one buffer sized from above, so the file is not copied.
func encodeAdjacency2(nodes int, value func(i int) string, src, dst []int32) ([]byte, error) {
	if len(src) != len(dst) || len(src) > math.MaxInt32 || nodes >= math.MaxInt32 {
		return nil, errorf(ErrInvalid, "adjacency index: %d nodes, %d/%d endpoints", nodes, len(src), len(dst))
	}
	var raw int
	for i := 0; i < nodes; i++ {
		raw += len(value(i))
	}
	if raw > math.MaxUint32 {
		return nil, errorf(ErrInvalid, "adjacency index: the endpoint values take %d bytes, at most %d", raw, uint32(math.MaxUint32))
	}
	rb := (len(src) + adjRowBlock - 1) / adjRowBlock
	// At most: each value with two uvarints; each row block its table
	// entry, header, base and values at the width of nodes.
	bound := adjHeaderSize + 4*(nodes/adjDictBlock+2) + raw + 2*binary.MaxVarintLen32*nodes +
		2*(4*(rb+1)+rb*(1+binary.MaxVarintLen64)+(len(src)*bits.Len(uint(nodes))+7)/8+rb) + 4
	b := make([]byte, adjHeaderSize, bound)
	copy(b, adjMagic2)
	at := len(b)
	b = appendDict(b, nodes, value)
	dictLen := len(b) - at
	at = len(b)
	b = appendEnds(b, src, nodes)
	srcLen := len(b) - at
	at = len(b)
	b = appendEnds(b, dst, nodes)
	dstLen := len(b) - at
	if len(b) > math.MaxUint32 {
		return nil, errorf(ErrInvalid, "adjacency index: a section is over 4 GiB")
	}
	for i, v := range []int{nodes, len(src), raw, dictLen, srcLen, dstLen} {
		binary.LittleEndian.PutUint32(b[len(adjMagic2)+4*i:], uint32(v))
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, adjCRC)), nil
}

// appendDict appends the dictionary section: the sorted values front-coded
// in blocks, after the table of block offsets (see the format).
func appendDict(b []byte, nodes int, value func(i int) string) []byte {
	nb := (nodes + adjDictBlock - 1) / adjDictBlock
	table := len(b)
	b = append(b, make([]byte, 4*(nb+1))...)
	data := len(b)
	prev := ""
	for i := 0; i < nodes; i++ {
		v := value(i)
		if i%adjDictBlock == 0 {
			binary.LittleEndian.PutUint32(b[table+4*(i/adjDictBlock):], uint32(len(b)-data))
			b = binary.AppendUvarint(b, uint64(len(v)))
			b = append(b, v...)
		} else {
			p := sharedPrefix(prev, v)
			b = binary.AppendUvarint(b, uint64(p))
			b = binary.AppendUvarint(b, uint64(len(v)-p))
			b = append(b, v[p:]...)
		}
		prev = v
	}
	binary.LittleEndian.PutUint32(b[table+4*nb:], uint32(len(b)-data))
	return b
}

func sharedPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// appendEnds appends one endpoint column's section (a null, -1, as the
// value null) in blocks, after the table of block offsets.
func appendEnds(b []byte, key []int32, null int) []byte {
	nb := (len(key) + adjRowBlock - 1) / adjRowBlock
	table := len(b)
	b = append(b, make([]byte, 4*(nb+1))...)
	data := len(b)
	var vals [adjRowBlock]uint64
	for blk := 0; blk < nb; blk++ {
		binary.LittleEndian.PutUint32(b[table+4*blk:], uint32(len(b)-data))
		part := key[blk*adjRowBlock : min((blk+1)*adjRowBlock, len(key))]
		lo := uint64(math.MaxUint64)
		var hi, dmax uint64
		for i, k := range part {
			v := uint64(null)
			if k >= 0 {
				v = uint64(k)
			}
			vals[i] = v
			lo, hi = min(lo, v), max(hi, v)
			if i > 0 {
				dmax = max(dmax, zigzag(int64(v)-int64(vals[i-1])))
			}
		}
		fw, dw := bits.Len64(hi-lo), bits.Len64(dmax)
		if dw*(len(part)-1) < fw*len(part) {
			b = append(b, adjDeltaFlag|byte(dw))
			b = binary.AppendUvarint(b, vals[0])
			for i := len(part) - 1; i > 0; i-- {
				vals[i] = zigzag(int64(vals[i]) - int64(vals[i-1]))
			}
			b = packBits(b, vals[1:len(part)], dw)
		} else {
			b = append(b, byte(fw))
			b = binary.AppendUvarint(b, lo)
			for i := range part {
				vals[i] -= lo
			}
			b = packBits(b, vals[:len(part)], fw)
		}
	}
	binary.LittleEndian.PutUint32(b[table+4*nb:], uint32(len(b)-data))
	return b
}

func zigzag(d int64) uint64 { return uint64(d<<1) ^ uint64(d>>63) }

func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// packBits appends vals at w bits each, least significant bit first.
func packBits(b []byte, vals []uint64, w int) []byte {
	var acc uint64 // w <= 33 and under 8 bits pending: never overflows
	var n int
	for _, v := range vals {
		acc |= v << n
		n += w
		for n >= 8 {
			b = append(b, byte(acc))
			acc >>= 8
			n -= 8
		}
	}
	if n > 0 {
		b = append(b, byte(acc))
	}
	return b
}

// adjFile2 is a format-2 file split into its sections.
type adjFile2 struct {
	nodes, edges, raw int
	dict, src, dst    []byte
}

func splitAdjacency2(b []byte) (adjFile2, error) {
	var f adjFile2
	bad := func(what string) error { return errorf(ErrCorrupt, "adjacency index: %s", what) }
	if !bytes.HasPrefix(b, []byte(adjMagic2)) || len(b) < adjHeaderSize+4 {
		return f, bad("bad magic")
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, adjCRC) != binary.LittleEndian.Uint32(b[len(body):]) {
		return f, bad("checksum mismatch")
	}
	h := body[len(adjMagic2):]
	u := func(i int) int { return int(binary.LittleEndian.Uint32(h[4*i:])) }
	f.nodes, f.edges, f.raw = u(0), u(1), u(2)
	dl, sl, dsl := u(3), u(4), u(5)
	rest := body[adjHeaderSize:]
	if f.nodes >= math.MaxInt32 || f.edges >= math.MaxInt32 || len(rest) != dl+sl+dsl {
		return f, bad(fmt.Sprintf("%d bytes of sections, the header says %d", len(rest), dl+sl+dsl))
	}
	f.dict, f.src, f.dst = rest[:dl], rest[dl:dl+sl], rest[dl+sl:]
	return f, nil
}

// blockOffsets checks a section's table of nb+1 offsets and returns the
// section's block data and the offsets.
func blockOffsets(sec []byte, nb int) ([]byte, []uint32, error) {
	if nb < 0 || len(sec) < 4*(nb+1) {
		return nil, nil, errorf(ErrCorrupt, "adjacency index: a block table is cut")
	}
	offs := make([]uint32, nb+1)
	for i := range offs {
		offs[i] = binary.LittleEndian.Uint32(sec[4*i:])
	}
	data := sec[4*(nb+1):]
	if offs[0] != 0 || int(offs[nb]) != len(data) {
		return nil, nil, errorf(ErrCorrupt, "adjacency index: block offsets out of range")
	}
	for i := 0; i < nb; i++ {
		if offs[i+1] < offs[i] {
			return nil, nil, errorf(ErrCorrupt, "adjacency index: block offsets out of order")
		}
	}
	return data, offs, nil
}

// decodeDict decodes the front-coded dictionary into one string of raw
// bytes and returns the values as slices of it; they must ascend strictly.
func decodeDict(sec []byte, nodes, raw int) ([]string, error) {
	bad := func(what string) error { return errorf(ErrCorrupt, "adjacency index: dictionary %s", what) }
	nb := (nodes + adjDictBlock - 1) / adjDictBlock
	data, offs, err := blockOffsets(sec, nb)
	if err != nil {
		return nil, err
	}
	if raw > len(sec)*(1<<16) { // front coding cannot expand that far: do not allocate it
		return nil, bad("value bytes out of range")
	}
	buf := make([]byte, 0, raw)
	ends := make([]int32, nodes)
	prev := 0 // where the previous value starts in buf
	for blk := 0; blk < nb; blk++ {
		p := data[offs[blk]:offs[blk+1]]
		for i := blk * adjDictBlock; i < min((blk+1)*adjDictBlock, nodes); i++ {
			shared := uint64(0)
			if i%adjDictBlock != 0 {
				var n int
				if shared, n = binary.Uvarint(p); n <= 0 {
					return nil, bad("cut")
				}
				p = p[n:]
			}
			l, n := binary.Uvarint(p)
			if n <= 0 || l > uint64(len(p)-n) {
				return nil, bad("cut")
			}
			p = p[n:]
			pl := len(buf) - prev
			if shared > uint64(pl) || uint64(len(buf))+shared+l > uint64(raw) {
				return nil, bad("lengths out of range")
			}
			start := len(buf)
			buf = append(buf, buf[prev:prev+int(shared)]...)
			buf = append(buf, p[:l]...)
			p = p[l:]
			if i > 0 && bytes.Compare(buf[prev:start], buf[start:]) >= 0 {
				return nil, bad("values not ascending")
			}
			prev = start
			ends[i] = int32(len(buf))
		}
		if len(p) != 0 {
			return nil, bad("block has trailing bytes")
		}
	}
	if len(buf) != raw {
		return nil, bad("value bytes differ from the header")
	}
	all := string(buf)
	out := make([]string, nodes)
	at := int32(0)
	for i, e := range ends {
		out[i] = all[at:e]
		at = e
	}
	return out, nil
}

// decodeEnds unpacks one endpoint column of edges values into key (the
// null value nodes becomes -1).
func decodeEnds(sec []byte, nodes int, key []int32) error {
	bad := func(what string) error { return errorf(ErrCorrupt, "adjacency index: endpoints %s", what) }
	nb := (len(key) + adjRowBlock - 1) / adjRowBlock
	data, offs, err := blockOffsets(sec, nb)
	if err != nil {
		return err
	}
	var vals [adjRowBlock]uint64
	for blk := 0; blk < nb; blk++ {
		p := data[offs[blk]:offs[blk+1]]
		part := key[blk*adjRowBlock : min((blk+1)*adjRowBlock, len(key))]
		if len(p) < 2 {
			return bad("block cut")
		}
		head := p[0]
		w := int(head & adjWidthMask)
		first, n := binary.Uvarint(p[1:])
		if n <= 0 || w > 33 || head&0x40 != 0 {
			return bad("block header damaged")
		}
		p = p[1+n:]
		delta := head&adjDeltaFlag != 0
		packed := len(part)
		if delta {
			packed--
		}
		if len(p) != (packed*w+7)/8 {
			return bad("block length differs from its width")
		}
		unpackBits(p, vals[:packed], w)
		v := int64(first)
		for i := range part {
			if delta {
				if i > 0 {
					v += unzigzag(vals[i-1])
				}
			} else {
				v = int64(first) + int64(vals[i])
			}
			switch {
			case v == int64(nodes):
				part[i] = -1
			case v < 0 || v > int64(nodes):
				return bad("value out of range")
			default:
				part[i] = int32(v)
			}
		}
	}
	return nil
}

// unpackBits reads len(vals) values of w bits (w <= 33) from b.
func unpackBits(b []byte, vals []uint64, w int) {
	if w == 0 {
		clear(vals)
		return
	}
	mask := uint64(1)<<w - 1
	var acc uint64
	var n, at int
	for i := range vals {
		for n < w {
			acc |= uint64(b[at]) << n
			at++
			n += 8
		}
		vals[i] = acc & mask
		acc >>= w
		n -= w
	}
}

// decodeAdjacency2 reads a format-2 file into an Adjacency (groupings
// recomputed from the endpoints).
func decodeAdjacency2(b []byte) (*Adjacency, error) {
	f, err := splitAdjacency2(b)
	if err != nil {
		return nil, err
	}
	nodes, err := decodeDict(f.dict, f.nodes, f.raw)
	if err != nil {
		return nil, err
	}
	a := &Adjacency{Nodes: nodes, sorted: f.nodes, From: AdjacencyFromIndex}
	a.Src, a.Dst = make([]int32, f.edges), make([]int32, f.edges)
	if err := decodeEnds(f.src, f.nodes, a.Src); err != nil {
		return nil, err
	}
	if err := decodeEnds(f.dst, f.nodes, a.Dst); err != nil {
		return nil, err
	}
	for r := range a.Src {
		if (a.Src[r] < 0) != (a.Dst[r] < 0) {
			return nil, errorf(ErrCorrupt, "adjacency index: edge %d has one endpoint", r)
		}
	}
	a.OutOff, a.OutEdges = groupRows(f.nodes, a.Src)
	a.InOff, a.InEdges = groupRows(f.nodes, a.Dst)
	return a, nil
}

// decodeAdjacency reads an index file of either format.
func decodeAdjacency(b []byte) (*Adjacency, error) {
	if bytes.HasPrefix(b, []byte(adjMagic2)) {
		return decodeAdjacency2(b)
	}
	return decodeAdjacency1(b)
}
