package load

import (
	"hash/maphash"
	"strings"
)

// keySet holds the ids a load's file gives for one table, with the line
// that gave each. The ids are copied into blocks of keyBlock bytes and kept
// in blocks of keyEntries (no allocation per id, nothing copied as the set
// grows), and found through an open-addressing table of int32s: about 28
// bytes an id besides its bytes, where a map[string]int32 of separately
// allocated strings takes about 64, and the GC sees a few large objects
// instead of one per id.
type keySet struct {
	keys  [][]string // entry i is keys[i/keyEntries][i%keyEntries]
	lines [][]int32  // likewise
	n     int
	slots []int32 // 1 + entry; 0 is free
	seed  maphash.Seed
	block strings.Builder
}

const (
	keyBlock   = 256 << 10
	keyEntries = 1 << 12
)

func newKeySet() *keySet { return &keySet{seed: maphash.MakeSeed()} }

func (s *keySet) len() int { return s.n }

func (s *keySet) key(i int) string { return s.keys[i/keyEntries][i%keyEntries] }

// all returns the ids in the order they were added.
func (s *keySet) all() []string {
	out := make([]string, 0, s.n)
	for _, blk := range s.keys {
		out = append(out, blk...)
	}
	return out
}

// slot finds k: its entry, or -1 and the free slot where it goes.
func (s *keySet) slot(k string) (at int, free uint64) {
	if len(s.slots) == 0 {
		return -1, 0
	}
	mask := uint64(len(s.slots) - 1)
	for i := maphash.String(s.seed, k) & mask; ; i = (i + 1) & mask {
		e := s.slots[i]
		if e == 0 {
			return -1, i
		}
		if s.key(int(e-1)) == k {
			return int(e - 1), i
		}
	}
}

// line returns the line that gave k.
func (s *keySet) line(k string) (int32, bool) {
	at, _ := s.slot(k)
	if at < 0 {
		return 0, false
	}
	return s.lines[at/keyEntries][at%keyEntries], true
}

// has reports whether the file gave k.
func (s *keySet) has(k string) bool {
	at, _ := s.slot(k)
	return at >= 0
}

// add records k, given at line; k must be new.
func (s *keySet) add(k string, line int32) {
	if 4*(s.n+1) > 3*len(s.slots) {
		s.grow()
	}
	_, free := s.slot(k)
	if s.n%keyEntries == 0 {
		s.keys = append(s.keys, make([]string, 0, keyEntries))
		s.lines = append(s.lines, make([]int32, 0, keyEntries))
	}
	last := len(s.keys) - 1
	s.keys[last] = append(s.keys[last], s.copy(k))
	s.lines[last] = append(s.lines[last], line)
	s.n++
	s.slots[free] = int32(s.n)
}

func (s *keySet) copy(k string) string {
	if len(k) > keyBlock/8 {
		return strings.Clone(k)
	}
	if s.block.Cap()-s.block.Len() < len(k) {
		s.block = strings.Builder{}
		s.block.Grow(keyBlock)
	}
	at := s.block.Len()
	s.block.WriteString(k) // within the block's capacity: earlier ids stay where they are
	return s.block.String()[at:]
}

func (s *keySet) grow() {
	n := max(1024, 2*len(s.slots))
	s.slots = make([]int32, n)
	mask := uint64(n - 1)
	for d := 0; d < s.n; d++ {
		i := maphash.String(s.seed, s.key(d)) & mask
		for s.slots[i] != 0 {
			i = (i + 1) & mask
		}
		s.slots[i] = int32(d + 1)
	}
}
