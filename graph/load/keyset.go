package load

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"

	"github.com/omnigraph-go/omnigraph/graph"
)

// keySet holds the ids a load's file gives for one table, with the line
// that gave each. Each entry (the id's length, its bytes, the line) is
// appended to blocks of keyBlock bytes, in the order added, and found
// through an open-addressing table of positions into the blocks, each
// slot tagged with the high half of its id's hash: a lookup touches the
// table and, but for a rare tag collision, only the entry it finds (a
// probe past other ids compares tags, not entries; at the table's load of
// up to 3/4 that is about one entry read a lookup instead of 2.5). An id of
// 11 bytes costs about 31 bytes in all, where a map[string]int32 of
// separately allocated strings takes about 64, and the GC sees a few large
// objects without pointers instead of one object per id.
type keySet struct {
	blocks [][]byte // entries never straddle blocks; a long id has a block of its own
	n      int
	slots  []uint64 // tag<<32 | 1 + position (block<<keyShift | offset); 0 is free
	seed   maphash.Seed
}

const (
	keyShift = 18
	keyBlock = 1 << keyShift
)

// errKeySetFull: the positions are 32 bits (4 GiB of ids in one load).
var errKeySetFull = fmt.Errorf("%w: the file gives more than 4 GiB of ids; split it", graph.ErrInvalidInput)

func newKeySet() *keySet { return &keySet{seed: maphash.MakeSeed()} }

func (s *keySet) len() int { return s.n }

// heldBytes is the memory the set holds: its blocks and slots.
func (s *keySet) heldBytes() int64 {
	n := int64(len(s.slots)) * 8
	for _, b := range s.blocks {
		n += int64(cap(b))
	}
	return n
}

// entry decodes the entry at position p.
func (s *keySet) entry(p uint32) (key []byte, line int32) {
	b := s.blocks[p>>keyShift][p&(keyBlock-1):]
	n, w := binary.Uvarint(b)
	key = b[w : w+int(n)]
	return key, int32(binary.LittleEndian.Uint32(b[w+int(n):]))
}

// all returns the ids in the order they were added.
func (s *keySet) all() []string {
	out := make([]string, 0, s.n)
	for _, b := range s.blocks {
		for len(b) > 0 {
			n, w := binary.Uvarint(b)
			out = append(out, string(b[w:w+int(n)]))
			b = b[w+int(n)+4:]
		}
	}
	return out
}

// hash is k's hash in this set: a parse worker computes it beside the
// line so the goroutine that adds the ids only probes (addHashed,
// lineHashed). The seed is fixed when the set is made, so any goroutine
// may call it.
func (s *keySet) hash(k string) uint64 { return maphash.String(s.seed, k) }

// find returns k's line, or false and the free slot where k goes, and
// k's tag.
func (s *keySet) find(k string) (line int32, ok bool, free, tag uint64) {
	return s.findHashed(k, s.hash(k))
}

// findHashed is find with k's hash h.
func (s *keySet) findHashed(k string, h uint64) (line int32, ok bool, free, tag uint64) {
	tag = h >> 32 << 32
	if len(s.slots) == 0 {
		return 0, false, 0, tag
	}
	mask := uint64(len(s.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		e := s.slots[i]
		if e == 0 {
			return 0, false, i, tag
		}
		if e&^0xffffffff != tag {
			continue
		}
		if key, line := s.entry(uint32(e) - 1); string(key) == k {
			return line, true, i, tag
		}
	}
}

// line returns the line that gave k.
func (s *keySet) line(k string) (int32, bool) {
	line, ok, _, _ := s.find(k)
	return line, ok
}

// has reports whether the file gave k.
func (s *keySet) has(k string) bool {
	_, ok, _, _ := s.find(k)
	return ok
}

// insert adds k (whose hash is h), given at line, unless the set has it:
// then it answers the line that gave k first and true.
func (s *keySet) insert(k string, h uint64, line int32) (first int32, dup bool, err error) {
	if 4*(s.n+1) > 3*len(s.slots) {
		s.grow()
	}
	first, dup, free, tag := s.findHashed(k, h)
	if dup {
		return first, true, nil
	}
	return 0, false, s.put(k, line, free, tag)
}

// add records k, given at line; k must be new.
func (s *keySet) add(k string, line int32) error {
	if 4*(s.n+1) > 3*len(s.slots) {
		s.grow()
	}
	_, _, free, tag := s.find(k)
	return s.put(k, line, free, tag)
}

// put stores the entry of k in slot free with tag.
func (s *keySet) put(k string, line int32, free, tag uint64) error {
	need := binary.MaxVarintLen64 + len(k) + 4
	last := len(s.blocks) - 1
	if last < 0 || cap(s.blocks[last])-len(s.blocks[last]) < need {
		if len(s.blocks) >= 1<<(32-keyShift)-1 {
			return errKeySetFull
		}
		s.blocks = append(s.blocks, make([]byte, 0, max(keyBlock, need)))
		last++
	}
	b := s.blocks[last]
	p := uint32(last)<<keyShift | uint32(len(b))
	b = binary.AppendUvarint(b, uint64(len(k)))
	b = append(b, k...)
	s.blocks[last] = binary.LittleEndian.AppendUint32(b, uint32(line)) // within the block's capacity
	s.n++
	s.slots[free] = tag | uint64(p+1)
	return nil
}

func (s *keySet) grow() {
	n := max(1024, 2*len(s.slots))
	s.slots = make([]uint64, n)
	mask := uint64(n - 1)
	for bi, b := range s.blocks {
		for off := 0; off < len(b); {
			p := uint32(bi)<<keyShift | uint32(off)
			key, _ := s.entry(p)
			h := maphash.Bytes(s.seed, key)
			i := h & mask
			for s.slots[i] != 0 {
				i = (i + 1) & mask
			}
			s.slots[i] = h>>32<<32 | uint64(p+1)
			off += len(key) + uvarintLen(len(key)) + 4
		}
	}
}

func uvarintLen(n int) int {
	w := 1
	for n >= 0x80 {
		n >>= 7
		w++
	}
	return w
}
