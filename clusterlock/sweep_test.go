package clusterlock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/local"
)

// TestSweepGoesThroughGuard pins issue 26 item 9: a temp-residue sweep
// deletes, so it passes through the lease guard like every other write.
// While the lease holds, the guarded store sweeps a stale temp; once a
// successor claimed the lock, the old owner's sweep is refused (ErrLeaseLost,
// never sent) and the temp it would have removed is still there. (Before,
// backend.SweepTemp looked through the guard to the local store and swept
// anyway.)
func TestSweepGoesThroughGuard(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := local.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	plant := func(name string) string {
		p := filepath.Join(dir, "data", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("half"), 0o644); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-2 * backend.TempGrace)
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
		return p
	}
	clk := newFakeClock()
	l, err := AcquireLeased(ctx, s, leaseOpts(clk, Options{}))
	if err != nil {
		t.Fatal(err)
	}
	guard := l.Guard(s)

	first := plant("a.parquet#11")
	res, ok, err := backend.SweepTemp(ctx, guard, "", time.Now(), 0, false)
	if err != nil || !ok || res.Objects != 1 {
		t.Fatalf("sweep while the lease holds = %+v ok=%v %v, want 1 object swept", res, ok, err)
	}
	if _, err := os.Stat(first); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the stale temp survived a sweep under a valid lease: %v", err)
	}

	_, a := getRecord(t, s)
	succ := Record{FormatVersion: FormatLeased, LockID: NewLockID(), Operation: "serve", Owner: Owner{Host: "b", PID: 2}, CreatedAt: epoch, LeaseSeconds: 3}
	if _, err := s.PutIfMatch(ctx, LockKey, encodeRecord(succ), a.Version); err != nil {
		t.Fatal(err)
	}
	clk.drive(t, time.Second, constant(2), l.Lost())
	second := plant("b.parquet#22")
	_, _, err = backend.SweepTemp(ctx, guard, "", time.Now(), 0, false)
	if !errors.Is(err, ErrLeaseLost) || backend.KindOf(err) != backend.KindPermanent {
		t.Fatalf("sweep after the lease was lost = %v (kind %s), want ErrLeaseLost, Permanent", err, backend.KindOf(err))
	}
	if _, err := os.Stat(second); err != nil {
		t.Fatalf("a sweep refused by the guard removed the temp: %v", err)
	}
}
