package table

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/compress"
)

// TestPageCodecRoundTrips: the registered zstd codec is this package's
// (small window), and what it encodes at any level decodes with arrow-go's
// decoder to the same bytes, for pages smaller and larger than the window.
func TestPageCodecRoundTrips(t *testing.T) {
	c, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.(*pageCodec); !ok {
		t.Fatalf("the zstd codec is %T, not this package's", c)
	}
	for _, n := range []int{0, 1, 4 << 10, zstdWindow + 12345, 3 * zstdWindow} {
		var src bytes.Buffer
		for i := 0; src.Len() < n; i++ {
			fmt.Fprintf(&src, "item-%d,label %d;", i, i%97)
		}
		in := src.Bytes()[:n]
		for _, level := range []int{compress.DefaultCompressionLevel, 1, 3, 9} {
			enc := c.EncodeLevel(nil, in, level)
			if n > 1024 && len(enc) >= n/2 {
				t.Fatalf("%d bytes at level %d compressed to %d", n, level, len(enc))
			}
			if out := c.Decode(nil, enc); !bytes.Equal(out, in) {
				t.Fatalf("%d bytes at level %d: the round trip differs", n, level)
			}
		}
	}
}
