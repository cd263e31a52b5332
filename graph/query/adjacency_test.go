package query

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/counter"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/lang/pg"
	"github.com/omnigraph-go/omnigraph/table"
)

// The persisted traversal index (table adjacency index) from the query's
// side: a cold traversal reads it instead of the edge fragments, and a
// missing, stale or older index never changes an answer.

const adjSchema = `
node Person {
  handle: String @key
  age: I32?
}
edge Knows: Person -> Person {
  weight: I32?
}
`

// The queries compared across index states: traversals both ways, a
// variable-length one, and an edge binding (which loads the edge rows).
var adjQueries = []string{
	`query q() { match { $a: Person  $a.age = 3  $a knows{2,2} $b } return { count($b) as n } }`,
	`query q() { match { $a: Person { handle: "p00007" }  $a knows{1,3} $b } return { $b.handle } order { $b.handle } }`,
	`query q() { match { $a: Person { handle: "p00011" }  $b knows $a } return { $b.handle } order { $b.handle } }`,
	`query q() { match { $a: Person { handle: "p00005" }  $a $k:knows $b } return { $b.handle, $k.weight } order { $b.handle, $k.weight } }`,
}

func pid(i int) string { return fmt.Sprintf("p%05d", i) }

// adjGraph makes a graph of nodes persons and no edges.
func adjGraph(t *testing.T, store backend.StorageAdapter, nodes int) *graph.Graph {
	t.Helper()
	ctx := context.Background()
	g, err := graph.Init(ctx, store, adjSchema, graph.InitOptions{Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := g.Schema(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	nt, _ := cat.Node("Person")
	b := array.NewRecordBuilder(memory.DefaultAllocator, nt.ArrowSchema())
	defer b.Release()
	for i := 0; i < nodes; i++ {
		for f, field := range nt.ArrowSchema().Fields() {
			switch field.Name {
			case pg.ColID, "handle":
				b.Field(f).(*array.StringBuilder).Append(pid(i))
			case "age":
				b.Field(f).(*array.Int32Builder).Append(int32(i % 10))
			default:
				b.Field(f).AppendNull()
			}
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	stageWrite(t, g, "main", graph.KindLoad, graph.NodeTableKey("Person"), func(ctx context.Context, ds *table.Dataset) (*table.Staged, error) {
		return ds.StageAppend(ctx, rec)
	})
	return g
}

// addEdges appends n edges (ids k<tag><i>) as one fragment in one commit.
func addEdges(t *testing.T, g *graph.Graph, branch, tag string, n, nodes, seed int) {
	t.Helper()
	ctx := context.Background()
	cat, err := g.Schema(ctx, branch)
	if err != nil {
		t.Fatal(err)
	}
	et, _ := cat.Edge("Knows")
	b := array.NewRecordBuilder(memory.DefaultAllocator, et.ArrowSchema())
	defer b.Release()
	for i := 0; i < n; i++ {
		for f, field := range et.ArrowSchema().Fields() {
			switch field.Name {
			case pg.ColID:
				b.Field(f).(*array.StringBuilder).Append(fmt.Sprintf("k%s%06d", tag, i))
			case pg.ColSrc:
				b.Field(f).(*array.StringBuilder).Append(pid((i*7 + seed) % nodes))
			case pg.ColDst:
				b.Field(f).(*array.StringBuilder).Append(pid((i*13 + 3*seed + i/nodes) % nodes))
			case "weight":
				b.Field(f).(*array.Int32Builder).Append(int32(i % 5))
			default:
				b.Field(f).AppendNull()
			}
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	stageWrite(t, g, branch, graph.KindLoad, graph.EdgeTableKey("Knows"), func(ctx context.Context, ds *table.Dataset) (*table.Staged, error) {
		return ds.StageAppend(ctx, rec)
	})
}

// indexEdges commits the adjacency index of branch's Knows table.
func indexEdgeTable(t *testing.T, g *graph.Graph, branch string) {
	t.Helper()
	stageWrite(t, g, branch, graph.KindIndex, graph.EdgeTableKey("Knows"), func(ctx context.Context, ds *table.Dataset) (*table.Staged, error) {
		return ds.StageCreateAdjacencyIndex(ctx, pg.ColSrc, pg.ColDst)
	})
}

func stageWrite(t *testing.T, g *graph.Graph, branch, kind, key string, fn graph.StageFunc) {
	t.Helper()
	ctx := context.Background()
	w, err := g.BeginWrite(ctx, branch, graph.WriteOptions{Kind: kind})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Stage(ctx, key, fn); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

// keyLog counts reads by key and can hide index files (a store on which
// every adjacency index is missing).
type keyLog struct {
	backend.StorageAdapter
	hide  bool
	mu    sync.Mutex
	reads []string
}

func (s *keyLog) log(key string) error {
	s.mu.Lock()
	s.reads = append(s.reads, key)
	s.mu.Unlock()
	if s.hide && strings.Contains(key, "/_indices/") && strings.HasSuffix(key, "/adj.idx") {
		return fmt.Errorf("hidden: %w", backend.ErrNotFound)
	}
	return nil
}

func (s *keyLog) Get(ctx context.Context, key string) ([]byte, backend.Attrs, error) {
	if err := s.log(key); err != nil {
		return nil, backend.Attrs{}, err
	}
	return s.StorageAdapter.Get(ctx, key)
}

func (s *keyLog) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if err := s.log(key); err != nil {
		return nil, err
	}
	return s.StorageAdapter.GetRange(ctx, key, off, n)
}

// under returns the reads of keys with prefix, and resets the log.
func (s *keyLog) under(prefix string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, k := range s.reads {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	s.reads = nil
	return out
}

// answers runs every adjQuery on a fresh read-only handle over store at
// commit ("" : main's head) and returns the answers and the adjacency
// source of the Knows version read.
func answers(t *testing.T, store backend.StorageAdapter, commit string) ([]string, string) {
	t.Helper()
	ctx := context.Background()
	g, err := graph.Open(ctx, store, graph.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var s *graph.Snapshot
	if commit == "" {
		s, err = g.Snapshot(ctx, "main")
	} else {
		s, err = g.SnapshotAt(ctx, commit)
	}
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(adjQueries))
	for i, q := range adjQueries {
		r, err := Run(ctx, s, q, "", nil)
		if err != nil {
			t.Fatalf("query %d: %v", i, err)
		}
		out[i] = rowsText(r)
	}
	return out, adjacencyFrom(t, g, s)
}

func adjacencyFrom(t *testing.T, g *graph.Graph, s *graph.Snapshot) string {
	t.Helper()
	pin, _ := s.Pin(graph.EdgeTableKey("Knows"))
	e := cacheOf(g).entry(pinID(pin))
	if e.edges == nil || e.edges.adj == nil {
		t.Fatal("no traversal index cached for the Knows version")
	}
	return e.edges.adj.From
}

func sameAnswers(t *testing.T, what string, got, want []string) {
	t.Helper()
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s: query %d answered %q, without the index %q", what, i, got[i], want[i])
		}
	}
	if want[1] == "" || want[3] == "" {
		t.Fatalf("%s: the traversals found nothing; the comparison would be vacuous", what)
	}
}

// TestColdTraversalReadsIndex: on a fresh handle, a 2-hop traversal of an
// indexed edge table reads the table's manifest and its index file and no
// fragment, however many edges and fragments it has: the whole cold query
// (open included) costs the same request count (7) for 2,500 edges in one
// fragment and 10,000 in four; the answers equal those of the same store
// with the index file missing.
func TestColdTraversalReadsIndex(t *testing.T) {
	ctx := context.Background()
	const nodes = 400
	var perSize []int
	var totals []int
	for _, frags := range []int{1, 4} {
		cnt := counter.New(mem.New())
		store := &keyLog{StorageAdapter: cnt}
		g := adjGraph(t, store, nodes)
		for f := 0; f < frags; f++ {
			addEdges(t, g, "main", fmt.Sprint(f), 2_500, nodes, f)
		}
		indexEdgeTable(t, g, "main")
		store.under("")
		got, from := answers(t, store, "")
		reads := store.under("edges/Knows/")
		if from != table.AdjacencyFromIndex {
			t.Fatalf("%d fragments: adjacency from %s, want the index", frags, from)
		}
		var fragments, index int
		for _, k := range reads {
			switch {
			case strings.Contains(k, "/data/"):
				fragments++
			case strings.HasSuffix(k, "/adj.idx"):
				index++
			}
		}
		// The edge-binding query loads the rows: that one reads fragments.
		if index != 1 || len(reads)-fragments != 2 || fragments != frags {
			t.Fatalf("%d fragments: the edge table cost %d reads (%d fragments, %d index): %v", frags, len(reads), fragments, index, reads)
		}
		perSize = append(perSize, len(reads)-fragments)

		store.hide = true
		want, from := answers(t, store, "")
		if from != table.AdjacencyBuilt {
			t.Fatalf("hidden index: adjacency from %s", from)
		}
		sameAnswers(t, fmt.Sprintf("%d fragments", frags), got, want)

		// Without the edge binding, a cold traversal (open included) reads
		// no edge fragment: its whole cost is the same for both tables.
		store.hide = false
		store.under("")
		cnt.Reset()
		h, err := graph.Open(ctx, store, graph.OpenOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Head(ctx, h, "main", adjQueries[0], "", nil); err != nil {
			t.Fatal(err)
		}
		all := store.under("")
		totals = append(totals, cnt.Snapshot().Total)
		for _, k := range all {
			if strings.HasPrefix(k, "edges/Knows/") && strings.Contains(k, "/data/") {
				t.Fatalf("%d fragments: a cold 2-hop read fragment %s", frags, k)
			}
		}
		if len(all) > 12 {
			t.Fatalf("%d fragments: a cold 2-hop on a fresh handle cost %d reads: %v", frags, len(all), all)
		}
		perSize = append(perSize, len(all))
	}
	if perSize[0] != perSize[2] || perSize[1] != perSize[3] || totals[0] != totals[1] {
		t.Fatalf("reads depend on the edge table's size: %v, requests %v", perSize, totals)
	}
	t.Logf("a cold 2-hop on a fresh handle: %d requests", totals[0])
}

// TestTraversalIndexStaleAndTimeTravel: versions after the index (an
// append, a delete) patch it, versions before it build from the data, an
// old snapshot reads the index file its own table version names (not a
// newer one), and at every commit (read through time travel) the answers
// equal those with the index missing.
func TestTraversalIndexStaleAndTimeTravel(t *testing.T) {
	const nodes = 300
	store := &keyLog{StorageAdapter: mem.New()}
	g := adjGraph(t, store, nodes)
	addEdges(t, g, "main", "a", 2_000, nodes, 1)
	type step struct {
		commit, from string
	}
	var steps []step
	head := func(from string) {
		s, err := g.Snapshot(context.Background(), "main")
		if err != nil {
			t.Fatal(err)
		}
		steps = append(steps, step{s.CommitID(), from})
	}
	head(table.AdjacencyBuilt)
	indexEdgeTable(t, g, "main")
	head(table.AdjacencyFromIndex)
	addEdges(t, g, "main", "b", 300, nodes, 2)
	head(table.AdjacencyPatched)
	qDelete(t, g, "main", graph.EdgeTableKey("Knows"), "kb000004", "kb000017")
	head(table.AdjacencyPatched)
	qDelete(t, g, "main", graph.EdgeTableKey("Knows"), "ka000005")
	head(table.AdjacencyBuilt) // every indexed fragment changed
	indexEdgeTable(t, g, "main")
	head(table.AdjacencyFromIndex) // a second index file, for this version

	var prev []string
	indexFiles := map[string]bool{}
	for i, st := range steps {
		store.hide = false
		store.under("")
		got, from := answers(t, store, st.commit)
		if from != st.from {
			t.Fatalf("commit %d: adjacency from %s, want %s", i, from, st.from)
		}
		// The index file read is the one the pinned table version names.
		var read []string
		for _, k := range store.under("edges/Knows/") {
			if strings.HasSuffix(k, "/adj.idx") {
				read = append(read, k)
			}
		}
		if st.from != table.AdjacencyBuilt {
			s, err := g.SnapshotAt(context.Background(), st.commit)
			if err != nil {
				t.Fatal(err)
			}
			ds, err := s.OpenTable(context.Background(), graph.EdgeTableKey("Knows"))
			if err != nil {
				t.Fatal(err)
			}
			var named string
			for _, ix := range ds.Manifest().Indexes {
				if ix.Kind == table.AdjacencyKind {
					named = ds.Path() + "/" + ix.Path
				}
			}
			if len(read) != 1 || read[0] != named {
				t.Fatalf("commit %d read index files %v, its version names %s", i, read, named)
			}
			indexFiles[named] = true
		} else if len(read) != 0 {
			t.Fatalf("commit %d read index files %v, want none", i, read)
		}
		store.hide = true
		want, _ := answers(t, store, st.commit)
		sameAnswers(t, fmt.Sprintf("commit %d", i), got, want)
		if i > 0 && strings.Join(got, "\n") == strings.Join(prev, "\n") && i != 1 && i != 5 {
			t.Fatalf("commit %d answers as commit %d: the writes did not show", i, i-1)
		}
		prev = got
	}
	if len(indexFiles) != 2 {
		t.Fatalf("index files read across the history: %v, want the two built", indexFiles)
	}
}

// TestTraversalIndexOnBranch: a branch inherits main's index and patches
// it with its own edges; an index built on the branch serves the branch
// only; main's answers never change.
func TestTraversalIndexOnBranch(t *testing.T) {
	ctx := context.Background()
	const nodes = 300
	store := &keyLog{StorageAdapter: mem.New()}
	g := adjGraph(t, store, nodes)
	addEdges(t, g, "main", "a", 2_000, nodes, 1)
	indexEdgeTable(t, g, "main")
	mainBefore, _ := answers(t, store, "")
	if _, err := g.CreateBranch(ctx, "feature", "main"); err != nil {
		t.Fatal(err)
	}
	addEdges(t, g, "feature", "f", 500, nodes, 5)
	branchAnswers := func(wantFrom string) []string {
		t.Helper()
		h, err := graph.Open(ctx, store, graph.OpenOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		s, err := h.Snapshot(ctx, "feature")
		if err != nil {
			t.Fatal(err)
		}
		out := make([]string, len(adjQueries))
		for i, q := range adjQueries {
			r, err := Run(ctx, s, q, "", nil)
			if err != nil {
				t.Fatal(err)
			}
			out[i] = rowsText(r)
		}
		if from := adjacencyFrom(t, h, s); from != wantFrom && !store.hide {
			t.Fatalf("branch adjacency from %s, want %s", from, wantFrom)
		}
		return out
	}
	patched := branchAnswers(table.AdjacencyPatched)
	store.hide = true
	sameAnswers(t, "branch, patched", patched, branchAnswers(""))
	store.hide = false
	if strings.Join(patched, "\n") == strings.Join(mainBefore, "\n") {
		t.Fatal("the branch's edges did not show on the branch")
	}
	indexEdgeTable(t, g, "feature")
	sameAnswers(t, "branch, own index", branchAnswers(table.AdjacencyFromIndex), patched)
	mainAfter, from := answers(t, store, "")
	if from != table.AdjacencyFromIndex {
		t.Fatalf("main adjacency from %s", from)
	}
	sameAnswers(t, "main after the branch's writes", mainAfter, mainBefore)
}

// TestBigEdgeWriteBuildsIndex: a write adding more edges than
// graph's write-time threshold commits the adjacency index with the
// edges, so the new version's first traversal reads the index.
func TestBigEdgeWriteBuildsIndex(t *testing.T) {
	const nodes = 2_000
	store := &keyLog{StorageAdapter: mem.New()}
	g := adjGraph(t, store, nodes)
	addEdges(t, g, "main", "a", 70_000, nodes, 1)
	got, from := answers(t, store, "")
	if from != table.AdjacencyFromIndex {
		t.Fatalf("after a 70k-edge write the adjacency comes from %s, want the index", from)
	}
	// A small write leaves the index as it is: reads patch it.
	addEdges(t, g, "main", "b", 10, nodes, 2)
	if _, from := answers(t, store, ""); from != table.AdjacencyPatched {
		t.Fatalf("after a small write the adjacency comes from %s, want patched", from)
	}
	store.hide = true
	hist, err := g.Commits(context.Background(), "main", 2)
	if err != nil || len(hist) != 2 {
		t.Fatalf("history: %v %v", hist, err)
	}
	want, _ := answers(t, store, hist[1].ID)
	sameAnswers(t, "big write", got, want)
}

// TestConcurrentEdgeBindings: queries racing on one cold handle share the
// traversal index, and those binding an edge load its rows once; all agree
// with a serial run (run with -race).
func TestConcurrentEdgeBindings(t *testing.T) {
	ctx := context.Background()
	const nodes = 200
	store := mem.New()
	g := adjGraph(t, store, nodes)
	addEdges(t, g, "main", "a", 1_500, nodes, 1)
	indexEdgeTable(t, g, "main")
	addEdges(t, g, "main", "b", 100, nodes, 2) // a patched version
	want, _ := answers(t, store, "")
	h, err := graph.Open(ctx, store, graph.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			i := (w % 2) * 3 // the 2-hop and the edge binding, interleaved
			r, err := Head(ctx, h, "main", adjQueries[i], "", nil)
			if err != nil {
				errs <- err
				return
			}
			if got := rowsText(r); got != want[i] {
				errs <- fmt.Errorf("query %d: %q, want %q", i, got, want[i])
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestTraversalAfterSmallEdgeWrite: on a warm handle, a one-edge write
// makes the next traversal patch the index it decoded before: it reads the
// new fragment and not the index file again, and sees the new edge.
func TestTraversalAfterSmallEdgeWrite(t *testing.T) {
	ctx := context.Background()
	const nodes = 200
	store := &keyLog{StorageAdapter: mem.New()}
	g := adjGraph(t, store, nodes)
	addEdges(t, g, "main", "a", 3_000, nodes, 1)
	indexEdgeTable(t, g, "main")
	const q = `query q() { match { $a: Person { handle: "p00199" }  $a knows $b } return { $b.handle } order { $b.handle } }`
	before, err := Head(ctx, g, "main", q, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	stageWrite(t, g, "main", graph.KindMutation, graph.EdgeTableKey("Knows"), func(ctx context.Context, ds *table.Dataset) (*table.Staged, error) {
		cat, err := g.Schema(ctx, "main")
		if err != nil {
			return nil, err
		}
		et, _ := cat.Edge("Knows")
		rec := testRecord(t, et.ArrowSchema(), []map[string]any{{pg.ColID: "knew", pg.ColSrc: pid(199), pg.ColDst: pid(0)}})
		defer rec.Release()
		return ds.StageAppend(ctx, rec)
	})
	store.under("")
	after, err := Head(ctx, g, "main", q, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	reads := store.under("edges/Knows/")
	for _, k := range reads {
		if strings.HasSuffix(k, "/adj.idx") {
			t.Fatalf("the warm traversal after a one-edge write fetched the index again: %v", reads)
		}
	}
	wantRows := len(before.Rows) + 1
	if strings.Contains(rowsText(before), "p00000") {
		wantRows-- // already a neighbour: reported once
	}
	if got := rowsText(after); !strings.Contains(got, "p00000") || len(after.Rows) != wantRows || len(before.Rows) == 0 {
		t.Fatalf("after the write: %q (before %q)", got, rowsText(before))
	}
	s, err := g.Snapshot(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	if from := adjacencyFrom(t, g, s); from != table.AdjacencyPatched {
		t.Fatalf("adjacency from %s, want patched", from)
	}
}

// overlapStore holds the first read of a node fragment until the edge
// table's index read has begun (or a generous deadline passes, so a
// missing prefetch fails the test instead of hanging it).
type overlapStore struct {
	backend.StorageAdapter
	edgeSeen   chan struct{}
	once       sync.Once
	overlapped atomic.Bool
}

func (s *overlapStore) Get(ctx context.Context, key string) ([]byte, backend.Attrs, error) {
	if strings.HasPrefix(key, "edges/Knows/") && strings.HasSuffix(key, "/adj.idx") {
		s.once.Do(func() { close(s.edgeSeen) })
	}
	if strings.HasPrefix(key, "nodes/Person/") && strings.Contains(key, "/data/") {
		select {
		case <-s.edgeSeen:
			s.overlapped.Store(true)
		case <-time.After(20 * time.Second):
		}
	}
	return s.StorageAdapter.Get(ctx, key)
}

// TestColdTraversalPrefetchesIndex: a cold traversal reads the edge
// table's traversal index while it is still reading the node table it
// starts from (the two are not round trips in series), and answers as a
// serial run does.
func TestColdTraversalPrefetchesIndex(t *testing.T) {
	ctx := context.Background()
	const nodes = 300
	inner := mem.New()
	g := adjGraph(t, inner, nodes)
	addEdges(t, g, "main", "a", 2_000, nodes, 1)
	indexEdgeTable(t, g, "main")
	want, _ := answers(t, inner, "")
	store := &overlapStore{StorageAdapter: inner, edgeSeen: make(chan struct{})}
	h, err := graph.Open(ctx, store, graph.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Head(ctx, h, "main", adjQueries[0], "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !store.overlapped.Load() {
		t.Fatal("the node fragment was read before the edge index read began: no prefetch")
	}
	if got := rowsText(r); got != want[0] {
		t.Fatalf("prefetched traversal answered %q, want %q", got, want[0])
	}
}
