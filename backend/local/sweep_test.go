package local_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/counter"
	"github.com/omnigraph-go/omnigraph/backend/fault"
	"github.com/omnigraph-go/omnigraph/backend/local"
	"github.com/omnigraph-go/omnigraph/backend/logging"
	"github.com/omnigraph-go/omnigraph/backend/poison"
)

// temps lists the temp files (name#<digits>) under dir.
func temps(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && backend.IsTempName(d.Name()) && !strings.HasPrefix(d.Name(), ".omnigraph-lock#") {
			out = append(out, filepath.Base(p))
		}
		return nil
	})
	return out
}

// plantTemp writes a temp file under dir last changed at mod.
func plantTemp(t *testing.T, dir, rel string, mod time.Time) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("half a write"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, mod, mod); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSweepSparesConcurrentWritersTemp pins issue 26 item 9: a sweep asked
// for with grace 0 (cleanup's default, trusting the cluster lock) still
// spares temp residue younger than backend.TempGrace, because another
// process may be in the middle of a write the lock does not cover (a CLI
// taking the lock stages its record's temp, lock.json#N, before it learns
// the lock is held). Here a real write is in flight: a compare-and-swap of
// the lock record, held between its compare and its rename with its temp
// staged. The sweep leaves that temp and removes only the stale one; the
// write then lands whole.
func TestSweepSparesConcurrentWritersTemp(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := local.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.Put(ctx, "__cluster/lock.json", []byte("record 1"))
	if err != nil {
		t.Fatal(err)
	}
	stale := plantTemp(t, dir, "nodes/Person/data/dead.parquet#77", time.Now().Add(-2*backend.TempGrace))

	staged, resume := make(chan struct{}), make(chan struct{})
	local.SetAfterCompare(func() { close(staged); <-resume })
	defer local.SetAfterCompare(nil)
	done := make(chan error, 1)
	go func() {
		_, err := s.PutIfMatch(ctx, "__cluster/lock.json", []byte("record 2"), a.Version)
		done <- err
	}()
	<-staged
	inFlight := temps(t, filepath.Join(dir, "__cluster"))
	if len(inFlight) != 1 || !strings.HasPrefix(inFlight[0], "lock.json#") {
		t.Fatalf("the in-flight write's temp = %v, want one lock.json#N", inFlight)
	}

	res, ok, err := backend.SweepTemp(ctx, s, "", time.Now(), 0, false)
	if err != nil || !ok || res.Objects != 1 {
		t.Fatalf("sweep = %+v ok=%v %v, want the one stale temp", res, ok, err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the stale temp survived: %v", err)
	}
	if got := temps(t, filepath.Join(dir, "__cluster")); len(got) != 1 || got[0] != inFlight[0] {
		t.Fatalf("the sweep removed the in-flight write's temp (left %v)", got)
	}
	close(resume)
	if err := <-done; err != nil {
		t.Fatalf("the in-flight write failed after the sweep: %v", err)
	}
	if got, _, err := s.Get(ctx, "__cluster/lock.json"); err != nil || string(got) != "record 2" {
		t.Fatalf("the lock record = %q, %v; want the in-flight write's bytes", got, err)
	}
	// An explicit grace above TempGrace is honoured too.
	plantTemp(t, dir, "x#1", time.Now().Add(-2*backend.TempGrace))
	if res, _, err := backend.SweepTemp(ctx, s, "", time.Now(), 3*backend.TempGrace, false); err != nil || res.Objects != 0 {
		t.Fatalf("sweep with a grace of 3 TempGrace = %+v, %v; want nothing removed", res, err)
	}
}

// TestSweepGoesThroughWrappers: a sweep is a write through every wrapper
// the engine puts around a store (backend.SweepTemp no longer looks past
// them): the counter counts it as a Delete, the logging wrapper logs a
// failed one, a crashed fault injector refuses it (the temp survives), and
// the poison set refuses a sweep over a poisoned key (its uncertain write's
// temp may be the one the sweep would remove). A prefix is added.
func TestSweepGoesThroughWrappers(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := local.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * backend.TempGrace)

	c := counter.New(s)
	stack := logging.Wrap(backend.WithPrefix(c, "g/"), nil)
	plantTemp(t, dir, "g/data/a#1", old)
	plantTemp(t, dir, "other/b#2", old) // outside the prefix
	res, ok, err := backend.SweepTemp(ctx, stack, "", time.Now(), 0, false)
	if err != nil || !ok || res.Objects != 1 {
		t.Fatalf("sweep through logging, prefix and counter = %+v ok=%v %v, want 1", res, ok, err)
	}
	if n := c.Snapshot().Delete; n != 1 {
		t.Errorf("the counter saw %d deletes for one sweep, want 1", n)
	}
	if got := temps(t, dir); len(got) != 1 || got[0] != "b#2" {
		t.Errorf("after a sweep of g/: temps %v, want only other/b#2", got)
	}

	f := fault.New(s)
	f.CrashAtWrite(1)
	if _, _, err := backend.SweepTemp(ctx, f, "", time.Now(), 0, false); !errors.Is(err, fault.ErrCrashed) {
		t.Errorf("sweep through a crashed store = %v, want ErrCrashed", err)
	}
	if got := temps(t, dir); len(got) != 1 {
		t.Errorf("a refused sweep removed temps: %v left", got)
	}

	inj := fault.New(s)
	p := poison.Wrap(inj)
	inj.LoseAnswer(fault.Put, 1)
	if _, err := p.Put(ctx, "other/k", []byte("x")); !errors.Is(err, backend.ErrUnknown) {
		t.Fatalf("lost answer: %v", err)
	}
	if _, _, err := backend.SweepTemp(ctx, p, "other/", time.Now(), 0, false); !errors.Is(err, poison.ErrPoisoned) {
		t.Errorf("sweep over a poisoned key = %v, want ErrPoisoned", err)
	}
	if got := temps(t, dir); len(got) != 1 {
		t.Errorf("a refused sweep removed temps: %v left", got)
	}
	if res, ok, err := backend.SweepTemp(ctx, p, "g/", time.Now(), 0, false); err != nil || !ok || res.Objects != 0 {
		t.Errorf("sweep of a prefix without poisoned keys = %+v ok=%v %v", res, ok, err)
	}
}
