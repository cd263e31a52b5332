package load

import (
	"fmt"
	"testing"
)

// BenchmarkKeySetHas: the endpoint lookups of the load bench (1M ids, each
// looked up as edges name them).
func BenchmarkKeySetHas(b *testing.B) {
	const n = 1_000_000
	keys := make([]string, n)
	s := newKeySet()
	for i := range keys {
		keys[i] = fmt.Sprintf("item-%d", i)
		if err := s.add(keys[i], int32(i)); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if !s.has(keys[(i*7+1)%n]) {
			b.Fatal("missing")
		}
	}
}
