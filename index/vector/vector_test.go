package vector

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/omnigraph-go/omnigraph/table"
)

// TestChainIsAPermutation: the file order of the lists places every list
// once, and each next centre is the nearest one not yet placed.
func TestChainIsAPermutation(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n, dim = 50, 4
	cents := make([]float32, n*dim)
	for i := range cents {
		cents[i] = rng.Float32()
	}
	order := chain(cents, dim, n)
	if got := slices.Sorted(slices.Values(order)); !slices.Equal(got, func() []int {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}()) {
		t.Fatalf("chain %v is not a permutation", order)
	}
	for i := 1; i+1 < len(order); i++ {
		cur := cents[order[i]*dim : (order[i]+1)*dim]
		d := sqDist(cents[order[i+1]*dim:(order[i+1]+1)*dim], cur)
		for _, c := range order[i+1:] {
			if sqDist(cents[c*dim:(c+1)*dim], cur) < d {
				t.Fatalf("step %d: list %d is nearer than the next, %d", i, c, order[i+1])
			}
		}
	}
}

// TestDecodeRefusesDamage: a directory or list with any byte changed, or
// cut short, is ErrCorrupt (the reader then scans).
func TestDecodeRefusesDamage(t *testing.T) {
	entries := []entry{{frag: 0, row: 3, id: "a", vec: []float32{1, 2}}, {frag: 1, row: 0, id: "bb", vec: []float32{3, 4}}}
	var list []byte
	for _, e := range entries {
		list = appendEntry(list, e)
	}
	list = appendCRC(list)
	v, _, err := decodeList(2, 2)(list)
	if err != nil || !slices.EqualFunc(v.([]entry), entries, func(a, b entry) bool {
		return a.frag == b.frag && a.row == b.row && a.id == b.id && slices.Equal(a.vec, b.vec)
	}) {
		t.Fatalf("round trip: %v, %v", v, err)
	}
	for i := range list {
		bad := slices.Clone(list)
		bad[i] ^= 0x10
		if _, _, err := decodeList(2, 2)(bad); !errors.Is(err, table.ErrCorrupt) {
			t.Fatalf("byte %d flipped: %v", i, err)
		}
	}
	if _, _, err := decodeRun(2, []listRef{{length: int64(len(list)), count: 2}, {length: 8, count: 1}})(list); !errors.Is(err, table.ErrCorrupt) {
		t.Errorf("a short run: %v", err)
	}
	if _, _, err := decodeDir([]byte(magic + "0123456789abcdefghij")); !errors.Is(err, table.ErrCorrupt) {
		t.Errorf("a bad directory: %v", err)
	}
}
