package query

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/graph"
)

// Query budgets (issue 27): every operator charges its rows and bytes,
// estimates refuse before anything runs, loops stop on cancellation, and
// nothing is left behind.

// crowd is a graph of n people and no edges.
func crowd(t testing.TB, n int) *graph.Graph {
	t.Helper()
	g, err := graph.Init(context.Background(), mem.New(), socialSchema(t), graph.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `{"type":"Person","data":{"handle":"p%03d","name":"P%d","age":%d}}`+"\n", i, i, 20+i%50)
	}
	qAppend(t, g, "main", b.String())
	return g
}

// denseGraph is n people, each knowing the next deg people (mod n).
func denseGraph(t testing.TB, n, deg int) *graph.Graph {
	t.Helper()
	g, err := graph.Init(context.Background(), mem.New(), socialSchema(t), graph.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `{"type":"Person","data":{"handle":"p%04d","name":"P%d"}}`+"\n", i, i)
	}
	for i := 0; i < n; i++ {
		for k := 1; k <= deg; k++ {
			fmt.Fprintf(&b, `{"edge":"Knows","from":"p%04d","to":"p%04d"}`+"\n", i, (i+k)%n)
		}
	}
	qAppend(t, g, "main", b.String())
	return g
}

func crossProduct(k int) string {
	vars := "abcdefgh"[:k]
	var b strings.Builder
	b.WriteString("query q() { match { ")
	for _, v := range vars {
		fmt.Fprintf(&b, "$%c: Person ", v)
	}
	b.WriteString("} return { count($a) as n } }")
	return b.String()
}

func runBudget(t testing.TB, g *graph.Graph, src string, b graph.Budget) (*Result, error) {
	t.Helper()
	s, err := g.Snapshot(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	return RunWith(context.Background(), s, src, "", nil, Options{Budget: b})
}

func asBudget(t testing.TB, err error) *graph.BudgetExceeded {
	t.Helper()
	var be *graph.BudgetExceeded
	if !errors.As(err, &be) || !errors.Is(err, graph.ErrBudgetExceeded) {
		t.Fatalf("want a *graph.BudgetExceeded, got %T: %v", err, err)
	}
	return be
}

// TestCrossProductRefusedByEstimate: the query, five disconnected
// patterns over 30 people (24,300,000 rows), is refused before it runs:
// the estimate is exact for unfiltered scans and names the step where the
// running total passes the budget; nothing ran.
func TestCrossProductRefusedByEstimate(t *testing.T) {
	g := crowd(t, 30)
	_, err := runBudget(t, g, crossProduct(5), graph.Budget{Rows: 1_000_000})
	be := asBudget(t, err)
	want := int64(30 + 900 + 27_000 + 810_000 + 24_300_000 + 1)
	if !be.Estimated || be.Resource != graph.ResourceRows || be.Limit != 1_000_000 || be.Reached != want {
		t.Fatalf("refusal %+v, want an estimate of %d rows over 1000000", be, want)
	}
	if be.Step != "scan $e Person" || be.Usage.Rows != 0 || be.Usage.Memory != 0 {
		t.Fatalf("refusal at %q after %+v, want at scan $e Person with nothing run", be.Step, be.Usage)
	}
	if !strings.Contains(be.Error(), "estimates 25137931 rows") || !strings.Contains(be.Error(), "not run") {
		t.Fatalf("message %q does not give the estimate", be.Error())
	}
	// Six-way: the estimate saturates rather than overflowing.
	_, err = runBudget(t, g, crossProduct(6), graph.Budget{Rows: 1_000_000})
	if be := asBudget(t, err); !be.Estimated || be.Reached < 729_000_000 {
		t.Fatalf("six-way refusal %+v", be)
	}
	// The memory estimate refuses too.
	_, err = runBudget(t, g, crossProduct(4), graph.Budget{Memory: 1 << 20})
	if be := asBudget(t, err); !be.Estimated || be.Resource != graph.ResourceMemory {
		t.Fatalf("four-way memory refusal %+v", be)
	}
}

// TestCrossProductRefusedExactly: filters make the estimate (1/3 per
// range filter) miss, so the query starts; the third scan knows its rows
// before it allocates them and is refused with the exact total it would
// have reached, having produced only the first two scans' rows.
func TestCrossProductRefusedExactly(t *testing.T) {
	g := crowd(t, 30) // every age is >= 20
	src := `query q() { match { $a: Person  $b: Person  $c: Person  $a.age >= 20  $b.age >= 20  $c.age >= 20 } return { count($a) as n } }`
	res, err := runBudget(t, g, src, graph.Budget{})
	if err != nil {
		t.Fatal(err)
	}
	if rowsText(res) != "27000" || res.Usage.Rows != 30+900+27000+1 {
		t.Fatalf("unlimited: %s after %d rows", rowsText(res), res.Usage.Rows)
	}
	_, err = runBudget(t, g, src, graph.Budget{Rows: 5000})
	be := asBudget(t, err)
	if be.Estimated || be.Resource != graph.ResourceRows || be.Reached != 30+900+27000 || be.Usage.Rows != 930 {
		t.Fatalf("refusal %+v (usage %+v), want reached 27930 after 930 rows", be, be.Usage)
	}
	if !strings.HasPrefix(be.Step, "scan $c Person where $c.age >= 20") {
		t.Fatalf("refused at %q", be.Step)
	}
}

// TestBudgetAccountingIsExact runs query shapes of every operator with no
// budget, then with a row budget of exactly what they used (and at least
// their estimate), which must give the same rows, and one row less, which
// must be refused. So a query that fits keeps its answer, and the charge
// is deterministic.
func TestBudgetAccountingIsExact(t *testing.T) {
	g := newSocialGraph(t, mem.New())
	shapes := append([]struct{ name, src string }{
		{"variable hops", `query q() { match { $p: Person { handle: "alice" }  $p knows{1,3} $f } return { $f.handle } }`},
		{"bound check", `query q() { match { $a: Person  $b: Person { handle: "carol" }  $a knows $b } return { $a.handle } }`},
		{"grouped", `query q() { match { $p: Person } return { $p.city, count($p) as n } order { n desc } }`},
		{"search", `query q() { match { $p: Post  search($p.text, "graphs") } return { $p.text } order { bm25($p.text, "graphs") desc } limit 2 }`},
		{"fuzzy", `query q() { match { $p: Post  fuzzy($p.text, "grapsh") } return { $p.text } }`},
		{"nearest", `query q() { match { $p: Post } return { $p.text } order { nearest($p.embedding, [1,0,0,0,0,0,0,0]) } limit 2 }`},
	}, budgetShapes...)
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			free, err := runBudget(t, g, sh.src, graph.Budget{})
			if err != nil {
				t.Fatal(err)
			}
			used := free.Usage.Rows
			if used <= 0 {
				t.Fatalf("usage %+v: nothing charged", free.Usage)
			}
			s, _ := g.Snapshot(context.Background(), "")
			ex, err := Explain(context.Background(), s, sh.src, "")
			if err != nil {
				t.Fatal(err)
			}
			fit, err := runBudget(t, g, sh.src, graph.Budget{Rows: max(used, ex.Estimate.Rows), Memory: max(free.Usage.Memory, ex.Estimate.Bytes)})
			if err != nil {
				t.Fatalf("within budget: %v", err)
			}
			if rowsText(fit) != rowsText(free) || fit.Usage.Rows != used {
				t.Fatalf("within budget: %q after %d rows, unlimited %q after %d", rowsText(fit), fit.Usage.Rows, rowsText(free), used)
			}
			_, err = runBudget(t, g, sh.src, graph.Budget{Rows: used - 1})
			if be := asBudget(t, err); be.Resource != graph.ResourceRows || be.Limit != used-1 {
				t.Fatalf("one row short: %+v", be)
			}
			_, err = runBudget(t, g, sh.src, graph.Budget{Memory: free.Usage.Memory - 1})
			if be := asBudget(t, err); be.Resource != graph.ResourceMemory {
				t.Fatalf("one byte short: %+v", be)
			}
		})
	}
}

// TestTraversalFanOutRefused: six hops over a dense graph (500 people, 8
// acquaintances each: 500·8^6 rows) are refused on the estimate; with
// the estimate out of the way (a range of hops, whose reach is capped by
// the node count) the expansion is stopped by the row budget as it runs.
func TestTraversalFanOutRefused(t *testing.T) {
	g := denseGraph(t, 500, 8)
	six := `query q() { match { $a: Person  $a knows $b  $b knows $c  $c knows $d  $d knows $e  $e knows $f  $f knows $h } return { count($h) as n } }`
	_, err := runBudget(t, g, six, graph.Budget{Rows: 10_000_000})
	if be := asBudget(t, err); !be.Estimated || be.Reached < 500*262_144 {
		t.Fatalf("six hops: %+v", be)
	}
	reach := `query q() { match { $a: Person  $a knows{1,6} $b } return { count($b) as n } }`
	s, _ := g.Snapshot(context.Background(), "")
	ex, err := Explain(context.Background(), s, reach, "")
	if err != nil {
		t.Fatal(err)
	}
	budget := int64(100_000)
	if ex.Estimate.Rows < budget {
		// The estimate must see the fan-out (2000 sources × up to 2000 nodes).
		t.Fatalf("estimate %d rows for a 6-hop reach", ex.Estimate.Rows)
	}
	_, err = runBudget(t, g, reach, graph.Budget{Rows: ex.Estimate.Rows})
	if err != nil {
		// The reach caps at the node count: it fits its own estimate.
		t.Fatalf("reach within its estimate: %v", err)
	}
	// A budget under the estimate refuses before it runs (here the reach
	// is smaller than estimated: the ring reaches 48 nodes, not 500).
	_, err = runBudget(t, g, reach, graph.Budget{Rows: budget})
	if be := asBudget(t, err); !be.Estimated {
		t.Fatalf("reach under budget: %+v", be)
	}
}

// TestTimeAndStorageBudgets: a time budget already spent stops the query
// at its first look at the context; a cold handle's storage reads stop at
// the read-bytes budget, and a later unlimited query on the same handle
// gets the whole answer (nothing partial was cached).
func TestTimeAndStorageBudgets(t *testing.T) {
	g := crowd(t, 300)
	_, err := runBudget(t, g, crossProduct(2), graph.Budget{Time: time.Nanosecond})
	if be := asBudget(t, err); be.Resource != graph.ResourceTime || be.Limit != 0 {
		t.Fatalf("time: %+v", be)
	}

	cold, err := graph.Open(context.Background(), g.Store(), graph.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	src := `query q() { match { $p: Person } return { $p.handle, $p.name } order { $p.handle } }`
	_, err = runBudget(t, cold, src, graph.Budget{ReadBytes: 64})
	be := asBudget(t, err)
	if be.Resource != graph.ResourceReadBytes || be.Limit != 64 || be.Reached <= 64 || be.Usage.ReadBytes != be.Reached {
		t.Fatalf("read bytes: %+v", be)
	}
	res, err := runBudget(t, cold, src, graph.Budget{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 300 || res.Rows[299][0] != "p299" {
		t.Fatalf("after a refused cold read: %d rows", len(res.Rows))
	}
	if res.Usage.ReadBytes == 0 {
		t.Fatal("the cold read charged no storage bytes")
	}
	// Warm, the same query reads nothing.
	res, err = runBudget(t, cold, src, graph.Budget{ReadBytes: 1})
	if err != nil || res.Usage.ReadBytes != 0 {
		t.Fatalf("warm read: %v, %d bytes", err, res.Usage.ReadBytes)
	}
}

// countingLane is a Lane that counts its slots.
type countingLane struct {
	acquired, released atomic.Int64
}

func (l *countingLane) Acquire(ctx context.Context) (func(), error) {
	l.acquired.Add(1)
	return func() { l.released.Add(1) }, nil
}

// TestHeavyQueriesTakeTheLane: a point read never waits for the lane; a
// query estimated heavy takes it before it runs, one that turns heavy as it
// runs takes it then, and every slot is given back.
func TestHeavyQueriesTakeTheLane(t *testing.T) {
	g := crowd(t, 300)
	l := &countingLane{}
	b := graph.Budget{Lane: l, HeavyWork: 10_000}
	if _, err := runBudget(t, g, `query q() { match { $p: Person { handle: "p001" } } return { $p.name } }`, b); err != nil {
		t.Fatal(err)
	}
	if l.acquired.Load() != 0 {
		t.Fatal("a point read took the heavy lane")
	}
	res, err := runBudget(t, g, crossProduct(2), b) // 90,000 rows, estimated
	if err != nil || rowsText(res) != "90000" {
		t.Fatalf("two-way: %v", err)
	}
	if l.acquired.Load() != 1 || l.released.Load() != 1 {
		t.Fatalf("estimated heavy: %d acquired, %d released", l.acquired.Load(), l.released.Load())
	}
	// The estimate says 1/3 of 300·300; the filter keeps them all.
	filtered := `query q() { match { $a: Person  $b: Person  $a.age >= 0  $b.age >= 0 } return { count($a) as n } }`
	if _, err := runBudget(t, g, filtered, graph.Budget{Lane: l, HeavyWork: 20_000}); err != nil {
		t.Fatal(err)
	}
	if l.acquired.Load() != 2 || l.released.Load() != 2 {
		t.Fatalf("turned heavy: %d acquired, %d released", l.acquired.Load(), l.released.Load())
	}
}

// cancelLane cancels the query's context when the query takes it (a client
// that disconnects mid-query, at a deterministic point), or holds it until
// the context is done.
type cancelLane struct {
	cancel   context.CancelFunc
	hold     bool
	at       time.Time
	acquired atomic.Int64
	released atomic.Int64
}

func (l *cancelLane) Acquire(ctx context.Context) (func(), error) {
	l.acquired.Add(1)
	l.at = time.Now()
	l.cancel()
	if l.hold {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return func() { l.released.Add(1) }, nil
}

// TestCancellationStopsTheQuery: a running query whose context is
// cancelled (here when it turns heavy, 150,000 rows in, on its way to
// 16 million) stops at its next look at the context, answers the
// cancellation (not a budget), gives its lane slot back, leaves no
// goroutine behind and lets its memory go; so does one cancelled while it
// waits for the lane. The time from cancel to return is printed, not
// asserted.
func TestCancellationStopsTheQuery(t *testing.T) {
	g := denseGraph(t, 2000, 20)
	s, _ := g.Snapshot(context.Background(), "")
	// Five filters that keep every row make the estimate (1/3 each) small.
	src := `query q() { match { $a: Person  $a knows $b  $b knows $c  $c knows $d  $a.name >= "P"  $a.name >= "O"  $a.name >= "N"  $a.name >= "M"  $a.name >= "L" } return { count($d) as n } }`
	ex, err := Explain(context.Background(), s, src, "")
	if err != nil {
		t.Fatal(err)
	}
	const heavy = 150_000
	if ex.Estimate.Rows >= heavy {
		t.Fatalf("the estimate (%d rows) must stay under the heavy threshold for the query to turn heavy as it runs", ex.Estimate.Rows)
	}
	// Warm the tables so the loads are not what is measured.
	if _, err := Run(context.Background(), s, `query q() { match { $a: Person  $a knows $b } return { count($b) as n } }`, "", nil); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	base := runtime.NumGoroutine()
	for _, hold := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		l := &cancelLane{cancel: cancel, hold: hold}
		_, err := RunWith(ctx, s, src, "", nil, Options{Budget: graph.Budget{Lane: l, HeavyWork: heavy}})
		t.Logf("hold=%v: stopped %s after the cancel", hold, time.Since(l.at))
		if !errors.Is(err, context.Canceled) || errors.Is(err, graph.ErrBudgetExceeded) {
			t.Fatalf("hold=%v: cancelled query answered %v", hold, err)
		}
		if l.acquired.Load() != 1 || (!hold && l.released.Load() != 1) {
			t.Fatalf("hold=%v: lane %d acquired, %d released", hold, l.acquired.Load(), l.released.Load())
		}
	}
	waitGoroutines(t, base)
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	t.Logf("heap after the cancelled queries: %d MiB (before %d MiB)", after.HeapAlloc>>20, before.HeapAlloc>>20)
	if after.HeapAlloc > before.HeapAlloc+32<<20 {
		t.Fatalf("the cancelled query kept %d MiB alive", (after.HeapAlloc-before.HeapAlloc)>>20)
	}
}

// waitGoroutines waits (generously) for the goroutine count to come back
// to base: a refused or cancelled query leaves none running.
func waitGoroutines(t *testing.T, base int) {
	t.Helper()
	for i := 0; i < 200 && runtime.NumGoroutine() > base; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines after the query, %d before:\n%s", n, base, buf[:runtime.Stack(buf, true)])
	}
}

// TestRefusedQueriesLeaveNothingBehind: cold queries with traversals
// (background prefetches) refused by each budget, on the estimate or as
// they run, return with no goroutine left, and the handle then answers in
// full. The filters make the estimate (about 13,000 rows) miss the real
// 222,200, so the row and memory budgets below trip at run time.
func TestRefusedQueriesLeaveNothingBehind(t *testing.T) {
	g := denseGraph(t, 200, 10)
	match := `match { $a: Person  $a knows $b  $b knows $c  $c knows $d  $a.name >= "P"  $b.name >= "P"  $c.name >= "P"  $d.name >= "P" }`
	src := `query q() { ` + match + ` return { $a.handle, $d.handle } }`
	count := `query q() { ` + match + ` return { count($d) as n } }`
	base := runtime.NumGoroutine()
	for _, c := range []struct {
		b         graph.Budget
		estimated bool
	}{
		{graph.Budget{Rows: 1000}, true},
		{graph.Budget{Rows: 100_000}, false},
		{graph.Budget{Memory: 4 << 20}, false},
		{graph.Budget{ReadBytes: 1024}, false},
		{graph.Budget{Time: time.Nanosecond}, false},
	} {
		cold, err := graph.Open(context.Background(), g.Store(), graph.OpenOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		_, err = runBudget(t, cold, src, c.b)
		if be := asBudget(t, err); be.Estimated != c.estimated {
			t.Fatalf("%+v: refusal %+v, want estimated=%v", c.b, be, c.estimated)
		}
		waitGoroutines(t, base)
		res, err := runBudget(t, cold, count, graph.Budget{})
		if err != nil || rowsText(res) != "200000" {
			t.Fatalf("after a refusal (%+v): %s, %v", c.b, rowsText(res), err)
		}
	}
}

// TestConcurrentBudgetsIndependent: queries sharing one handle keep their
// own meters: a refused one does not stop the others.
func TestConcurrentBudgetsIndependent(t *testing.T) {
	g := crowd(t, 100)
	var wg sync.WaitGroup
	errs := make([]error, 16)
	for i := range errs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			b := graph.Budget{Rows: 1000}
			if i%2 == 0 {
				b.Rows = 0
			}
			_, errs[i] = runBudget(t, g, crossProduct(2), b)
		}(i)
	}
	wg.Wait()
	for i, err := range errs {
		if i%2 == 0 && err != nil {
			t.Fatalf("unlimited query %d: %v", i, err)
		}
		if i%2 == 1 && !errors.Is(err, graph.ErrBudgetExceeded) {
			t.Fatalf("limited query %d: %v", i, err)
		}
	}
}
