package counter_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/counter"
	"github.com/omnigraph-go/omnigraph/backend/fault"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/conformance"
)

func TestConformance(t *testing.T) {
	conformance.Run(t, func(t *testing.T) backend.StorageAdapter {
		return counter.New(mem.New())
	})
}

func TestCountsPerClass(t *testing.T) {
	ctx := t.Context()
	c := counter.New(mem.New())
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := c.Put(ctx, "a", []byte("1"))
	must(err)
	a, err := c.PutIfAbsent(ctx, "b", []byte("2"))
	must(err)
	_, err = c.PutIfMatch(ctx, "b", []byte("3"), a.Version)
	must(err)
	_, _, err = c.Get(ctx, "a")
	must(err)
	_, err = c.GetRange(ctx, "a", 0, 1)
	must(err)
	_, err = c.Stat(ctx, "a")
	must(err)
	_, err = c.Exists(ctx, "zzz")
	must(err)
	_, err = c.List(ctx, "", backend.ListOptions{})
	must(err)
	must(c.Delete(ctx, "a"))
	must(c.DeletePrefix(ctx, "b"))
	// Failed requests are requests too.
	if _, _, err := c.Get(ctx, "missing"); !backend.IsNotFound(err) {
		t.Fatalf("Get(missing) = %v", err)
	}

	got := c.Snapshot()
	want := counter.Counts{Get: 3, Head: 2, List: 2, Put: 1, CondPut: 2, Delete: 2, Total: 12, RoundTrips: 12}
	if got != want {
		t.Fatalf("counts:\n got %v\nwant %v", got, want)
	}
	for _, cl := range counter.Classes {
		if got.Of(cl) == 0 {
			t.Fatalf("class %s has no count in %v", cl, got)
		}
	}
	c.Reset()
	if got := c.Snapshot(); got != (counter.Counts{}) {
		t.Fatalf("after Reset: %v", got)
	}
}

// gate holds every Get until n of them have arrived, so the test knows they
// overlapped without looking at a clock.
type gate struct {
	backend.StorageAdapter
	wg *sync.WaitGroup
}

func (g gate) Get(ctx context.Context, key string) ([]byte, backend.Attrs, error) {
	g.wg.Done()
	g.wg.Wait()
	return g.StorageAdapter.Get(ctx, key)
}

func TestRoundTrips(t *testing.T) {
	ctx := t.Context()
	store := mem.New()
	for _, k := range []string{"a", "b", "c", "d"} {
		if _, err := store.Put(ctx, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name string
		run  func(c *counter.Counter, wg *sync.WaitGroup)
		want counter.Counts
	}{
		{
			name: "sequential gets",
			run: func(c *counter.Counter, wg *sync.WaitGroup) {
				wg.Add(1)
				for _, k := range []string{"a", "b", "c", "d"} {
					c.Get(ctx, k)
					wg.Add(1) // re-arm the gate for the next single request
				}
			},
			want: counter.Counts{Get: 4, Total: 4, RoundTrips: 4},
		},
		{
			name: "parallel gets",
			run: func(c *counter.Counter, wg *sync.WaitGroup) {
				wg.Add(4)
				var done sync.WaitGroup
				for _, k := range []string{"a", "b", "c", "d"} {
					done.Add(1)
					go func() { defer done.Done(); c.Get(ctx, k) }()
				}
				done.Wait()
			},
			want: counter.Counts{Get: 4, Total: 4, RoundTrips: 1},
		},
		{
			name: "parallel fan-out then one dependent read",
			run: func(c *counter.Counter, wg *sync.WaitGroup) {
				wg.Add(3)
				var done sync.WaitGroup
				for _, k := range []string{"a", "b", "c"} {
					done.Add(1)
					go func() { defer done.Done(); c.Get(ctx, k) }()
				}
				done.Wait()
				wg.Add(1)
				c.Get(ctx, "d")
				c.Stat(ctx, "d")
			},
			want: counter.Counts{Get: 4, Head: 1, Total: 5, RoundTrips: 3},
		},
		{
			name: "delete prefix costs a list then a delete",
			run: func(c *counter.Counter, wg *sync.WaitGroup) {
				c.DeletePrefix(ctx, "nothing/")
			},
			want: counter.Counts{List: 1, Delete: 1, Total: 2, RoundTrips: 2},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var wg sync.WaitGroup
			// Latency makes overlap the normal case; the gate makes it certain.
			inj := fault.New(gate{StorageAdapter: store, wg: &wg})
			inj.Latency(2 * time.Millisecond)
			c := counter.New(inj)
			tc.run(c, &wg)
			if got := c.Snapshot(); got != tc.want {
				t.Fatalf("\n got %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestResetDropsInFlightDepth(t *testing.T) {
	ctx := t.Context()
	var wg sync.WaitGroup
	wg.Add(2)
	c := counter.New(gate{StorageAdapter: mem.New(), wg: &wg})
	c.Put(ctx, "a", nil)
	done := make(chan struct{})
	go func() { c.Get(ctx, "a"); close(done) }()
	for c.Snapshot().Get == 0 {
		time.Sleep(time.Millisecond)
	}
	c.Reset()
	wg.Done() // release the held Get
	<-done
	if got := c.Snapshot(); got != (counter.Counts{}) {
		t.Fatalf("a request started before Reset leaked into the counts: %v", got)
	}
}

func TestString(t *testing.T) {
	s := counter.Counts{Get: 1, Head: 2, List: 3, Put: 4, CondPut: 5, Delete: 6, Total: 21, RoundTrips: 7}.String()
	want := "get=1 head=2 list=3 put=4 cond_put=5 delete=6 total=21 round_trips=7"
	if s != want {
		t.Fatalf("String() = %q, want %q", s, want)
	}
}
