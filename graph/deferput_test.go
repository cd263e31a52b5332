package graph

import (
	"bytes"
	"context"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend/counter"
	"github.com/omnigraph-go/omnigraph/backend/mem"
)

// TestHeldPutsHoldSmallDataFilesOnly: a stage's data files are held (no
// request) up to heldBytes and read back from memory; a file past the
// budget and any other key go through at once; a conditional write stores
// every held file before itself; flush stores them and forgets them.
func TestHeldPutsHoldSmallDataFilesOnly(t *testing.T) {
	ctx := context.Background()
	cnt := counter.New(mem.New())
	h := newHeldPuts(cnt)
	small := bytes.Repeat([]byte("a"), 1<<10)
	big := bytes.Repeat([]byte("b"), heldBytes)
	for _, k := range []string{"t/data/1.parquet", "t/_deletions/1-x.bin"} {
		if _, err := h.Put(ctx, k, small); err != nil {
			t.Fatal(err)
		}
	}
	if c := cnt.Snapshot(); c.Total != 0 {
		t.Fatalf("holding sent %s", c)
	}
	if b, _, err := h.Get(ctx, "t/data/1.parquet"); err != nil || !bytes.Equal(b, small) {
		t.Fatalf("held file read back %d bytes, %v", len(b), err)
	}
	if _, err := h.Put(ctx, "t/data/2.parquet", big); err != nil { // over the budget
		t.Fatal(err)
	}
	if _, err := h.Put(ctx, "t/_versions/1.json", small); err != nil { // not a data file
		t.Fatal(err)
	}
	if c := cnt.Snapshot(); c.Put != 2 || c.Get != 0 {
		t.Fatalf("want the big file and the other key sent at once: %s", c)
	}
	if _, err := h.PutIfAbsent(ctx, "t/_versions/2.json", small); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"t/data/1.parquet", "t/_deletions/1-x.bin"} {
		if ok, err := cnt.Exists(ctx, k); err != nil || !ok {
			t.Fatalf("%s not stored before the conditional write: %v", k, err)
		}
	}
	cnt.Reset()
	if err := h.flush(ctx); err != nil || len(h.held) != 0 || h.size != 0 {
		t.Fatalf("flush after the conditional write: %v, %d held (%d bytes)", err, len(h.held), h.size)
	}
	if c := cnt.Snapshot(); c.Put != 0 {
		t.Fatalf("flush sent %s again", c)
	}
}
