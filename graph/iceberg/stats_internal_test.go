package iceberg

import (
	"bytes"
	"math"
	"testing"

	ice "github.com/apache/iceberg-go"

	"github.com/omnigraph-go/omnigraph/table"
)

// TestTruncateBound pins truncate(16) on the edges: multi-byte code
// points count as one, an upper bound increments its last code point
// (past the surrogates after U+D7FF, dropping U+10FFFF), and an upper
// bound of nothing but U+10FFFF has none.
func TestTruncateBound(t *testing.T) {
	max16 := string([]rune{0x10FFFF, 0x10FFFF, 0x10FFFF, 0x10FFFF, 0x10FFFF, 0x10FFFF, 0x10FFFF, 0x10FFFF, 0x10FFFF, 0x10FFFF, 0x10FFFF, 0x10FFFF, 0x10FFFF, 0x10FFFF, 0x10FFFF, 0x10FFFF})
	for _, c := range []struct {
		name, in  string
		upper     bool
		want      string
		wantBound bool
	}{
		{"short lower", "abc", false, "abc", true},
		{"short upper", "abc", true, "abc", true},
		{"exactly 16", "0123456789abcdef", true, "0123456789abcdef", true},
		{"lower", "0123456789abcdefXYZ", false, "0123456789abcdef", true},
		{"upper", "0123456789abcdefXYZ", true, "0123456789abcdeg", true},
		{"multi-byte lower", "ääääääääääääääääääää", false, "ääääääääääääääää", true},
		{"multi-byte upper", "ääääääääääääääääää", true, "äääääääääääääääå", true},
		{"past the surrogates", "0123456789abcde\uD7FFx", true, "0123456789abcde\uE000", true},
		{"last is the largest", "0123456789abcde" + string(rune(0x10FFFF)) + "x", true, "0123456789abcdf", true},
		{"none can be incremented", max16 + "x", true, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := truncateBound(c.in, c.upper)
			if got != c.want || ok != c.wantBound {
				t.Fatalf("truncateBound(%q, %v) = %q, %v; want %q, %v", c.in, c.upper, got, ok, c.want, c.wantBound)
			}
		})
	}
}

// TestBound pins the single-value serialization of each kind and the
// bounds left out.
func TestBound(t *testing.T) {
	le := func(v any) []byte {
		var b []byte
		switch x := v.(type) {
		case int32:
			b = []byte{byte(x), byte(x >> 8), byte(x >> 16), byte(x >> 24)}
		case int64:
			for i := 0; i < 8; i++ {
				b = append(b, byte(x>>(8*i)))
			}
		}
		return b
	}
	f32 := func(f float32) []byte { return le(int32(math.Float32bits(f))) }
	f64 := func(f float64) []byte { return le(int64(math.Float64bits(f))) }
	for _, c := range []struct {
		name  string
		typ   ice.PrimitiveType
		v     table.Scalar
		upper bool
		want  []byte // nil: no bound
	}{
		{"bool", ice.PrimitiveTypes.Bool, table.Scalar{Kind: "bool", Bool: true}, false, []byte{1}},
		{"int", ice.PrimitiveTypes.Int32, table.Scalar{Kind: "int", Int: -2}, false, le(int32(-2))},
		{"int past int32", ice.PrimitiveTypes.Int32, table.Scalar{Kind: "int", Int: math.MaxInt32 + 1}, false, nil},
		{"date", ice.PrimitiveTypes.Date, table.Scalar{Kind: "int", Int: 19000}, false, le(int32(19000))},
		{"long", ice.PrimitiveTypes.Int64, table.Scalar{Kind: "int", Int: 1 << 40}, true, le(int64(1 << 40))},
		{"u64 as long", ice.PrimitiveTypes.Int64, table.Scalar{Kind: "uint", Uint: 7}, true, le(int64(7))},
		{"u64 past long", ice.PrimitiveTypes.Int64, table.Scalar{Kind: "uint", Uint: math.MaxInt64 + 1}, true, nil},
		{"timestamptz", ice.PrimitiveTypes.TimestampTz, table.Scalar{Kind: "int", Int: 1706702400000000}, false, le(int64(1706702400000000))},
		{"float", ice.PrimitiveTypes.Float32, table.Scalar{Kind: "float", Float: 0.25}, false, f32(0.25)},
		{"double", ice.PrimitiveTypes.Float64, table.Scalar{Kind: "float", Float: -1.5}, true, f64(-1.5)},
		{"zero lower is -0", ice.PrimitiveTypes.Float64, table.Scalar{Kind: "float", Float: 0}, false, f64(math.Copysign(0, -1))},
		{"zero upper is +0", ice.PrimitiveTypes.Float64, table.Scalar{Kind: "float", Float: math.Copysign(0, -1)}, true, f64(0)},
		{"NaN", ice.PrimitiveTypes.Float64, table.Scalar{Kind: "float", Float: math.NaN()}, true, nil},
		{"string", ice.PrimitiveTypes.String, table.Scalar{Kind: "string", Str: "ada"}, false, []byte("ada")},
		{"kind mismatch", ice.PrimitiveTypes.String, table.Scalar{Kind: "int", Int: 1}, false, nil},
		{"binary", ice.PrimitiveTypes.Binary, table.Scalar{Kind: "string", Str: "x"}, false, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := bound(c.typ, c.v, c.upper)
			if c.want == nil {
				if ok {
					t.Fatalf("bound = %x, want none", got)
				}
				return
			}
			if !ok || !bytes.Equal(got, c.want) {
				t.Fatalf("bound = %x (%v), want %x", got, ok, c.want)
			}
		})
	}
}
