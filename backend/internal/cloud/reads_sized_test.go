package cloud

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// TestReadAllSized: a body reads the same whatever length was announced
// (exact, short, long, unknown, absurd), as ReadAll reads it.
func TestReadAllSized(t *testing.T) {
	body := strings.Repeat("abcdefgh", 1000)
	for _, size := range []int64{int64(len(body)), 10, int64(len(body)) + 500, 0, -1, 1 << 40} {
		got, err := ReadAllSized(io.NopCloser(strings.NewReader(body)), size)
		if err != nil || !bytes.Equal(got, []byte(body)) {
			t.Fatalf("announced %d: %d bytes, %v", size, len(got), err)
		}
	}
	if got, err := ReadAllSized(io.NopCloser(strings.NewReader("")), 0); err != nil || len(got) != 0 {
		t.Fatalf("empty: %q %v", got, err)
	}
}
