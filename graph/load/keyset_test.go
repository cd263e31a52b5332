package load

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestKeySet: every added id is found with its line, in the order added,
// across growth and with an id longer than a block; others are not.
func TestKeySet(t *testing.T) {
	s := newKeySet()
	long := strings.Repeat("x", keyBlock)
	var want []string
	for i := 0; i < 100_000; i++ {
		k := fmt.Sprintf("item-%d", i)
		if i == 5_000 {
			k = long
		}
		if err := s.add(k, int32(i+1)); err != nil {
			t.Fatal(err)
		}
		want = append(want, k)
	}
	if s.len() != len(want) || !slices.Equal(s.all(), want) {
		t.Fatalf("len %d, or the ids differ from the added ones", s.len())
	}
	for i, k := range want {
		if line, ok := s.line(k); !ok || line != int32(i+1) || !s.has(k) {
			t.Fatalf("%.20q: line %d %v, want %d", k, line, ok, i+1)
		}
	}
	for _, k := range []string{"item-100000", "item-", "", long[1:], "item-5000"} {
		if s.has(k) {
			t.Fatalf("%.20q is not in the set", k)
		}
	}
}

// TestKeySetMemory: adding 200,000 ids of 11 bytes allocates at most 62
// bytes an id in all (59: the entries, 16, and the tagged 8-byte slots of
// the tables as they grow; 38 with untagged 4-byte slots, which read 2.5
// entries a lookup instead of one), where a map[string]int32 of cloned
// strings allocates 86.
func TestKeySetMemory(t *testing.T) {
	keys := make([]string, 200_000)
	for i := range keys {
		keys[i] = fmt.Sprintf("item-%06d", i)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s := newKeySet()
	for i, k := range keys {
		if err := s.add(k, int32(i)); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	per := float64(after.TotalAlloc-before.TotalAlloc) / float64(len(keys))
	t.Logf("%.1f bytes an id", per)
	if per > 62 || s.len() != len(keys) {
		t.Fatalf("%.1f bytes an id allocated, more than 62", per)
	}
}
