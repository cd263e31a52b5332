package meter_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/counter"
	"github.com/omnigraph-go/omnigraph/backend/local"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/backend/meter"
	"github.com/omnigraph-go/omnigraph/conformance"
)

// The wrapper changes nothing for a context without an allowance, and
// nothing but the byte count for one with an unlimited allowance: both run
// the whole conformance suite.
func TestConformanceMeter(t *testing.T) {
	conformance.Run(t, func(t *testing.T) backend.StorageAdapter { return meter.Wrap(mem.New()) })
}

// The temp sweep reaches the store below (local stages temp objects).
func TestMeterForwardsTempSweep(t *testing.T) {
	inner, err := local.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	res, ok, err := backend.SweepTemp(context.Background(), meter.Wrap(inner), "", time.Now(), 0, true)
	if err != nil || !ok || res.Objects != 0 {
		t.Fatalf("sweep through the meter: %+v ok=%v err=%v; want the local store's answer (ok)", res, ok, err)
	}
}

func TestMeterCharges(t *testing.T) {
	ctx := context.Background()
	inner := mem.New()
	cnt := counter.New(inner)
	s := meter.Wrap(cnt)
	if meter.Wrap(s) != s {
		t.Fatal("wrapping a metered store again must return it unchanged")
	}
	for _, k := range []string{"a", "b", "c"} {
		if _, err := inner.Put(ctx, k, make([]byte, 100)); err != nil {
			t.Fatal(err)
		}
	}

	// No allowance: passes through, nothing charged anywhere.
	if b, _, err := s.Get(ctx, "a"); err != nil || len(b) != 100 {
		t.Fatalf("unmetered get: %d bytes, %v", len(b), err)
	}

	r := meter.NewReads(200)
	mctx := meter.With(ctx, r)
	if b, _, err := s.Get(mctx, "a"); err != nil || len(b) != 100 {
		t.Fatalf("first get: %d bytes, %v", len(b), err)
	}
	if b, err := s.GetRange(mctx, "b", 10, 50); err != nil || len(b) != 50 {
		t.Fatalf("range: %d bytes, %v", len(b), err)
	}
	if r.Bytes() != 150 {
		t.Fatalf("charged %d bytes, want 150", r.Bytes())
	}
	// Writes, lists, stats and exists are not charged.
	if _, err := s.Put(mctx, "d", make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(mctx, "", backend.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Stat(mctx, "d"); err != nil {
		t.Fatal(err)
	}
	if r.Bytes() != 150 {
		t.Fatalf("non-reads charged: %d bytes, want 150", r.Bytes())
	}
	// The read that passes the limit returns the refusal instead of bytes.
	b, _, err := s.Get(mctx, "c")
	var ee *meter.ExceededError
	if !errors.Is(err, meter.ErrExceeded) || !errors.As(err, &ee) || b != nil {
		t.Fatalf("over-limit get: %d bytes, %v", len(b), err)
	}
	if ee.Limit != 200 || ee.Read != 250 {
		t.Fatalf("refusal says read=%d limit=%d, want read 250 limit 200", ee.Read, ee.Limit)
	}
	// Once over, a read is refused before any request is made.
	cnt.Reset()
	if _, err := s.GetRange(mctx, "a", 0, 1); !errors.Is(err, meter.ErrExceeded) {
		t.Fatalf("range after the limit: %v", err)
	}
	if _, _, err := s.Get(mctx, "a"); !errors.Is(err, meter.ErrExceeded) {
		t.Fatalf("get after the limit: %v", err)
	}
	if n := cnt.Snapshot().Get; n != 0 {
		t.Fatalf("%d GETs reached the store after the allowance was spent, want 0", n)
	}
	// Another context is not affected.
	if _, _, err := s.Get(ctx, "a"); err != nil {
		t.Fatalf("unmetered get after another's refusal: %v", err)
	}
	// An unlimited allowance only counts.
	u := meter.NewReads(0)
	for i := 0; i < 5; i++ {
		if _, _, err := s.Get(meter.With(ctx, u), "a"); err != nil {
			t.Fatal(err)
		}
	}
	if u.Bytes() != 500 {
		t.Fatalf("unlimited allowance counted %d, want 500", u.Bytes())
	}
}
