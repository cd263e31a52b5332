package load

import (
	"hash/maphash"
	"strings"
)

// keySet holds the ids a load's file gives for one table, with the line
// that gave each. The ids are copied into large blocks and found through
// an open-addressing table of int32s: about 28 bytes an id besides its
// bytes, where a map[string]int32 of separately allocated strings takes
// about 64, and the GC sees a few large objects instead of one per id.
type keySet struct {
	keys  []string // views into blocks
	lines []int32
	slots []int32 // 1 + index into keys; 0 is free
	seed  maphash.Seed
	block strings.Builder
}

// keyBlock is the size of the blocks the ids are copied into.
const keyBlock = 256 << 10

func newKeySet() *keySet { return &keySet{seed: maphash.MakeSeed()} }

func (s *keySet) len() int { return len(s.keys) }

// slot finds k's slot: its index in keys, or -1 and the free slot where it
// goes.
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
		if s.keys[e-1] == k {
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
	return s.lines[at], true
}

// has reports whether the file gave k.
func (s *keySet) has(k string) bool {
	at, _ := s.slot(k)
	return at >= 0
}

// add records k, given at line; k must be new.
func (s *keySet) add(k string, line int32) {
	if 4*(len(s.keys)+1) > 3*len(s.slots) {
		s.grow()
	}
	_, free := s.slot(k)
	s.keys = append(s.keys, s.copy(k))
	s.lines = append(s.lines, line)
	s.slots[free] = int32(len(s.keys))
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
	for d, k := range s.keys {
		i := maphash.String(s.seed, k) & mask
		for s.slots[i] != 0 {
			i = (i + 1) & mask
		}
		s.slots[i] = int32(d + 1)
	}
}
