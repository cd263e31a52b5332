package server

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"
)

// TestBlobRangePast64Bits: byte positions larger than 64 bits saturate
// (RFC 9110 14.1.1): a last position past the end is the end (206,
// clamped), a first position past it is unsatisfiable (416), and the
// range reported back never wraps negative; the same for blob_read.
func TestBlobRangePast64Bits(t *testing.T) {
	g, _, big, _ := blobGraph(t)
	_, base := newTestServer(t, g, Config{})
	size := len(big)
	cases := []struct {
		rng          string
		status       int
		contentRange string
	}{
		{"bytes=0-99999999999999999999", 206, fmt.Sprintf("bytes 0-%d/%d", size-1, size)},
		{"bytes=10-9223372036854775807", 206, fmt.Sprintf("bytes 10-%d/%d", size-1, size)},
		{"bytes=99999999999999999999-", 416, fmt.Sprintf("bytes */%d", size)},
		{"bytes=9223372036854775807-", 416, fmt.Sprintf("bytes */%d", size)},
		{"bytes=99999999999999999999-99999999999999999999", 416, fmt.Sprintf("bytes */%d", size)},
		{"bytes=-99999999999999999999", 200, ""}, // a suffix longer than the value: all of it
	}
	for _, c := range cases {
		st, body, hdr := get(t, "GET", base+sel("big"), "", "Range", c.rng)
		if c.status == 200 && st == 206 && hdr.Get("Content-Range") == fmt.Sprintf("bytes 0-%d/%d", size-1, size) {
			continue // RFC 9110 allows either for a suffix covering it all
		}
		if st != c.status || hdr.Get("Content-Range") != c.contentRange {
			t.Errorf("Range %s: status %d Content-Range %q, want %d %q", c.rng, st, hdr.Get("Content-Range"), c.status, c.contentRange)
			continue
		}
		if st == 416 {
			var e struct {
				BlobRange struct{ Start, End, Length int64 } `json:"blob_range"`
			}
			if err := json.Unmarshal(body, &e); err != nil || e.BlobRange.Start < int64(size) || e.BlobRange.End < e.BlobRange.Start || e.BlobRange.Length != int64(size) {
				t.Errorf("Range %s: blob_range %+v (%v), want a start past the value and an end not before it", c.rng, e.BlobRange, err)
			}
		}
	}
	cs, err := mcpConnect(t, base, "")
	if err != nil {
		t.Fatal(err)
	}
	res := callTool(t, cs, "blob_read", map[string]any{"entity": "node", "type": "Doc", "id": "big", "property": "body", "offset": int64(math.MaxInt64), "length": 10})
	st := structured(t, res)
	br, _ := st["blob_range"].(map[string]any)
	if !res.IsError || st["status"] != 416.0 || br == nil || br["end"].(float64) < br["start"].(float64) {
		t.Errorf("blob_read at offset MaxInt64: %v, want status 416 with an end not before its start", st)
	}
}
