package table

import (
	"sync"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/zstd"
)

// The zstd codec of the fragments this package writes. arrow-go's own
// pools encoders with zstd's default 8 MiB window: each encoder in use
// keeps a history of that size (about 16 MiB live for a load's two encoder
// goroutines, doubled by the GC's headroom). A Parquet page is at most
// about 1 MiB (the default page and dictionary page limits), so a match
// can never reach further back than that: a 1 MiB window compresses a page
// to the same bytes with an eighth of the memory. Decoding (and the
// streaming writers) are arrow-go's own: the frames are standard zstd.
const zstdWindow = 1 << 20

type pageCodec struct {
	compress.Codec // arrow-go's: decoding, streaming, bounds
	pools          sync.Map
}

func (z *pageCodec) encoder(level int) (*sync.Pool, zstd.EncoderLevel) {
	l := zstd.SpeedDefault
	if level != compress.DefaultCompressionLevel {
		l = zstd.EncoderLevelFromZstd(level)
	}
	if p, ok := z.pools.Load(l); ok {
		return p.(*sync.Pool), l
	}
	p, _ := z.pools.LoadOrStore(l, &sync.Pool{New: func() any {
		enc, err := zstd.NewWriter(nil, zstd.WithZeroFrames(true), zstd.WithEncoderLevel(l),
			zstd.WithEncoderConcurrency(1), zstd.WithAllLitEntropyCompression(true), zstd.WithWindowSize(zstdWindow))
		if err != nil {
			panic(err) // the options are constants
		}
		return enc
	}})
	return p.(*sync.Pool), l
}

func (z *pageCodec) EncodeLevel(dst, src []byte, level int) []byte {
	p, _ := z.encoder(level)
	enc := p.Get().(*zstd.Encoder)
	defer p.Put(enc)
	return enc.EncodeAll(src, dst[:0])
}

func (z *pageCodec) Encode(dst, src []byte) []byte {
	return z.EncodeLevel(dst, src, compress.DefaultCompressionLevel)
}

func init() {
	orig, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		panic(err)
	}
	compress.RegisterCodec(compress.Codecs.Zstd, &pageCodec{Codec: orig})
}
