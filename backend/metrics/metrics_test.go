package metrics_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/backend/metrics"
	"github.com/omnigraph-go/omnigraph/conformance"
)

func TestConformance(t *testing.T) {
	c, err := metrics.NewCollectors(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	conformance.Run(t, func(t *testing.T) backend.StorageAdapter { return c.Wrap(mem.New()) })
}

// flaky answers every Stat with a lost answer: a fault the wrapper must
// record as its class, not as ok.
type flaky struct{ backend.StorageAdapter }

func (flaky) Stat(ctx context.Context, key string) (backend.Attrs, error) {
	return backend.Attrs{}, backend.NewError("stat", key, backend.KindUnknown, errors.New("connection reset"))
}

func TestRequestsByOpAndOutcome(t *testing.T) {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	c, err := metrics.NewCollectors(reg)
	if err != nil {
		t.Fatal(err)
	}
	s := c.Wrap(flaky{mem.New()})
	if _, err := s.Put(ctx, "a/b", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutIfAbsent(ctx, "a/b", []byte("xx")); !errors.Is(err, backend.ErrPrecondition) {
		t.Fatalf("second create: %v", err)
	}
	a, err := s.PutIfAbsent(ctx, "a/c", []byte("abc"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutIfMatch(ctx, "a/c", []byte("abcd"), a.Version); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Get(ctx, "a/b"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetRange(ctx, "a/c", 1, 2); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Get(ctx, "a/missing"); !errors.Is(err, backend.ErrNotFound) {
		t.Fatalf("missing get: %v", err)
	}
	if _, err := s.Stat(ctx, "a/b"); !errors.Is(err, backend.ErrUnknown) {
		t.Fatalf("stat: %v", err)
	}
	if _, err := s.Exists(ctx, "a/b"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(ctx, "a/", backend.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "a/b"); err != nil {
		t.Fatal(err)
	}

	want := `
# HELP omnigraph_storage_requests_total Storage requests by operation and outcome (ok or the failure class).
# TYPE omnigraph_storage_requests_total counter
omnigraph_storage_requests_total{op="compare_and_swap",outcome="ok"} 1
omnigraph_storage_requests_total{op="delete",outcome="ok"} 1
omnigraph_storage_requests_total{op="get",outcome="not_found"} 1
omnigraph_storage_requests_total{op="get",outcome="ok"} 2
omnigraph_storage_requests_total{op="head",outcome="ok"} 1
omnigraph_storage_requests_total{op="head",outcome="unknown"} 1
omnigraph_storage_requests_total{op="list",outcome="ok"} 1
omnigraph_storage_requests_total{op="put",outcome="ok"} 1
omnigraph_storage_requests_total{op="put_if_absent",outcome="ok"} 1
omnigraph_storage_requests_total{op="put_if_absent",outcome="precondition"} 1
# HELP omnigraph_storage_read_bytes_total Bytes returned by successful storage reads (get).
# TYPE omnigraph_storage_read_bytes_total counter
omnigraph_storage_read_bytes_total 7
# HELP omnigraph_storage_written_bytes_total Bytes sent by successful storage writes (put, put_if_absent, compare_and_swap).
# TYPE omnigraph_storage_written_bytes_total counter
omnigraph_storage_written_bytes_total 12
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"omnigraph_storage_requests_total", "omnigraph_storage_read_bytes_total", "omnigraph_storage_written_bytes_total"); err != nil {
		t.Fatal(err)
	}
	// One histogram series per (op, outcome) seen.
	if n := testutil.CollectAndCount(reg, "omnigraph_storage_request_duration_seconds"); n != 10 {
		t.Fatalf("duration series: got %d, want 10", n)
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) > 0 {
		t.Fatalf("promlint: %v", problems)
	}
}
