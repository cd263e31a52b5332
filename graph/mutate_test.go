package graph_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/fault"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/load"
	"github.com/omnigraph-go/omnigraph/graph/mutate"
	"github.com/omnigraph-go/omnigraph/lang/gq"
	"github.com/omnigraph-go/omnigraph/table"
)

func (r *wrig) mutate(t testing.TB, src string, params map[string]any) *mutate.Result {
	t.Helper()
	res, err := mutate.Query(context.Background(), r.g, src, "", mutate.Options{Params: params})
	if err != nil {
		t.Fatalf("mutate %s: %v", src, err)
	}
	return res
}

// TestMutateReadYourWrites: later statements see earlier inserts and
// updates of the same query, in validation and predicate matching, and the
// whole query is one commit with one version per touched table.
func TestMutateReadYourWrites(t *testing.T) {
	ctx := context.Background()
	r := newWRig(t)
	r.load(t, load.Merge, baseData)
	before, _ := r.g.Snapshot(ctx, "main")
	c0 := r.commits(t, "main")
	res := r.mutate(t, `mutation m($h: String) {
  insert Person { handle: $h, name: "Eve" }
  insert Knows { from: $h, to: "ada" }
  insert Knows { from: "bob", to: $h }
  update Person set { age: 30 } where handle = $h
  update Person set { name: "Eve2" } where age = 30
  insert Company { slug: "newco" }
  insert WorksAt { from: $h, to: "newco" }
}`, map[string]any{"h": "eve"})
	if res.AffectedNodes != 4 || res.AffectedEdges != 3 || res.Commit == nil {
		t.Fatalf("result %+v", res)
	}
	if got := r.commits(t, "main"); got != c0+1 {
		t.Errorf("one query made %d commits", got-c0)
	}
	if got := strings.Join(r.rows(t, "main", "node:Person", "name", "age"), " "); got != "ada|name=Ada|age=36 bob|name=Bob|age=(null) eve|name=Eve2|age=30" {
		t.Errorf("people: %s", got)
	}
	if got := len(r.rows(t, "main", "edge:Knows")); got != 2 {
		t.Errorf("%d Knows edges, want 2", got)
	}
	after, _ := r.g.Snapshot(ctx, "main")
	for _, p := range after.Tables() {
		old, _ := before.Pin(p.Key)
		want := old.Version
		switch p.Key {
		case "node:Person", "node:Company", "edge:Knows", "edge:WorksAt":
			want++ // exactly one staged transaction per touched table
		}
		if p.Version != want {
			t.Errorf("table %s went %d -> %d, want %d", p.Key, old.Version, p.Version, want)
		}
	}

	// @card sees the same query's edges: a second WorksAt for eve fails.
	st0 := r.state(t, "main")
	_, err := mutate.Query(ctx, r.g, `mutation m() {
  insert Company { slug: "other" }
  insert WorksAt { from: "eve", to: "other" }
}`, "", mutate.Options{})
	if !errors.Is(err, graph.ErrInvalidInput) || !strings.Contains(err.Error(), "@card violation on edge WorksAt") || !strings.Contains(err.Error(), "statement 2") {
		t.Errorf("card: %v", err)
	}
	if st := r.state(t, "main"); st != st0 {
		t.Errorf("failed mutation changed state")
	}
}

// TestMutateErrors: bad mutations say what to fix and change nothing.
func TestMutateErrors(t *testing.T) {
	r := newWRig(t)
	r.load(t, load.Merge, baseData)
	tests := []struct {
		name   string
		src    string
		params map[string]any
		want   string
		is     error
	}{
		{"D2 mixed", `mutation m() { insert Person { handle: "x", name: "X" } delete Person where handle = "bob" }`, nil, "Split it into two queries", gq.ErrInvalidQuery},
		{"missing endpoint", `mutation m() { insert Knows { from: "ada", to: "nobody" } }`, nil, `dst "nobody" not found in Person`, graph.ErrInvalidInput},
		{"unique vs branch", `mutation m() { insert Person { handle: "x", name: "X", email: "ada@x.io" } }`, nil, "@unique violation on Person.email", graph.ErrInvalidInput},
		{"unique via update", `mutation m() { update Person set { email: "ada@x.io" } where handle = "bob" }`, nil, "@unique violation on Person.email", graph.ErrInvalidInput},
		{"param range", `mutation m($a: I32) { update Person set { age: $a } where handle = "bob" }`, map[string]any{"a": 500}, "@range", graph.ErrInvalidInput},
		{"param missing", `mutation m($a: I32) { update Person set { age: $a } where handle = "bob" }`, nil, "parameter $a", gq.ErrInvalidQuery},
		{"key assign", `mutation m() { update Person set { handle: "z" } where handle = "bob" }`, nil, "cannot be updated", gq.ErrInvalidQuery},
		{"read query", `query q() { match { $p: Person } return { $p.name } }`, nil, "is a read", graph.ErrInvalidInput},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := r.state(t, "main")
			r.count.Reset()
			_, err := mutate.Query(context.Background(), r.g, tc.src, "", mutate.Options{Params: tc.params})
			if err == nil || !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v; want %v mentioning %q", err, tc.is, tc.want)
			}
			c := r.count.Snapshot()
			if n := c.Put + c.CondPut + c.Delete; n != 0 {
				t.Errorf("%d write requests", n)
			}
			if after := r.state(t, "main"); after != before {
				t.Errorf("state changed:\n%s\n%s", before, after)
			}
		})
	}
}

func TestMutateDeleteCascade(t *testing.T) {
	r := newWRig(t)
	r.load(t, load.Merge, baseData+`{"edge":"Knows","from":"ada","to":"bob"}
{"edge":"Knows","from":"bob","to":"ada"}
{"edge":"Knows","from":"bob","to":"bob"}
{"type":"Note","data":{"text":"n"}}
`)
	notes := r.rows(t, "main", "node:Note")
	r.load(t, load.Append, fmt.Sprintf(`{"edge":"Tagged","from":%q,"to":"ada"}`, strings.Split(notes[0], "|")[0]))
	res := r.mutate(t, `mutation m() { delete Person where handle = "ada" }`, nil)
	if res.AffectedNodes != 1 || res.AffectedEdges != 4 {
		t.Errorf("delete result %+v; want 1 node, 4 edges (2 Knows, 1 WorksAt, 1 Tagged)", res)
	}
	for key, want := range map[string]int{"node:Person": 1, "edge:Knows": 1, "edge:WorksAt": 0, "edge:Tagged": 0, "node:Company": 1} {
		if got := len(r.rows(t, "main", key)); got != want {
			t.Errorf("%s: %d rows, want %d", key, got, want)
		}
	}
	// An edge delete by endpoint, and a delete matching nothing publishes
	// nothing.
	res = r.mutate(t, `mutation m() { delete Knows where from = "bob" }`, nil)
	if res.AffectedEdges != 1 || len(r.rows(t, "main", "edge:Knows")) != 0 {
		t.Errorf("edge delete %+v", res)
	}
	c := r.commits(t, "main")
	res = r.mutate(t, `mutation m() { delete Person where handle = "nobody" }`, nil)
	if res.Commit != nil || r.commits(t, "main") != c {
		t.Errorf("empty delete published %+v", res.Commit)
	}
}

// TestMutateConcurrentInserts: 8 goroutines insert distinct keys on main at
// once; losers re-prepare, so every row lands with one commit each.
func TestMutateConcurrentInserts(t *testing.T) {
	ctx := context.Background()
	r := newWRig(t)
	c0 := r.commits(t, "main")
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			_, errs[i] = mutate.Query(ctx, r.g, `mutation m($h: String) { insert Person { handle: $h, name: "P" } }`, "",
				mutate.Options{Params: map[string]any{"h": fmt.Sprintf("p%d", i)}})
		}(i)
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("writer %d: %v", i, err)
		}
	}
	if got := len(r.rows(t, "main", "node:Person")); got != n {
		t.Errorf("%d people, want %d", got, n)
	}
	if got := r.commits(t, "main") - c0; got != n {
		t.Errorf("%d commits, want %d", got, n)
	}
}

// TestMutateStrictUpdateRace: two updates prepared against the same head;
// the first commits, the second gets a non-retryable ReadSetChanged and
// writes nothing.
func TestMutateStrictUpdateRace(t *testing.T) {
	ctx := context.Background()
	r := newWRig(t)
	r.load(t, load.Merge, baseData)
	cat, err := r.g.Schema(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	prog, err := gq.Compile(`mutation m($a: I32) { update Person set { age: $a } where handle = "bob" }`, cat)
	if err != nil {
		t.Fatal(err)
	}
	plan, _ := prog.Plan("")
	var prepared []*mutate.Prepared
	for _, age := range []int{41, 42} {
		pm, err := mutate.Prepare(ctx, r.g, plan, mutate.Options{Params: map[string]any{"a": age}})
		if err != nil {
			t.Fatal(err)
		}
		prepared = append(prepared, pm)
	}
	conflicts := 0
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, pm := range prepared {
		wg.Add(1)
		go func(i int, pm *mutate.Prepared) {
			defer wg.Done()
			_, errs[i] = pm.Commit(ctx)
		}(i, pm)
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		var rs *graph.ReadSetChanged
		switch {
		case err == nil:
			winner = i
		case errors.As(err, &rs) && !rs.Retryable && rs.Member == "graph_head":
			conflicts++
		default:
			t.Errorf("writer %d: %v", i, err)
		}
	}
	if conflicts != 1 || winner < 0 {
		t.Fatalf("%d conflicts, winner %d; want exactly one ReadSetChanged", conflicts, winner)
	}
	want := fmt.Sprintf("bob|age=%d", 41+winner)
	if got := r.rows(t, "main", "node:Person", "age"); got[1] != want {
		t.Errorf("bob after race: %v, want %s", got, want)
	}
	// Mutate itself surfaces it rather than retrying.
	pm, _ := mutate.Prepare(ctx, r.g, plan, mutate.Options{Params: map[string]any{"a": 50}})
	r.mutate(t, `mutation m() { insert Company { slug: "bump" } }`, nil)
	if _, err := pm.Commit(ctx); !errors.Is(err, graph.ErrReadSetChanged) || graph.IsRetryable(err) {
		t.Errorf("stale strict update: %v", err)
	}
}

func TestMutateIfCommit(t *testing.T) {
	ctx := context.Background()
	r := newWRig(t)
	snap, _ := r.g.Snapshot(ctx, "main")
	head := snap.CommitID()
	opts := mutate.Options{IfCommit: head}
	src := `mutation m() { insert Company { slug: "a" } }`
	res, err := mutate.Query(ctx, r.g, src, "", opts)
	if err != nil || res.Commit == nil {
		t.Fatalf("CAS on the head: %+v %v", res, err)
	}
	before := r.state(t, "main")
	_, err = mutate.Query(ctx, r.g, `mutation m() { insert Company { slug: "b" } }`, "", opts)
	var pf *graph.PreconditionFailed
	if !errors.As(err, &pf) || pf.Expected != head || pf.Actual != res.Commit.ID {
		t.Fatalf("stale CAS: %v", err)
	}
	if r.state(t, "main") != before {
		t.Error("failed CAS changed state")
	}
}

// TestMutateFirstWriteForksOnlyTouched: a named branch's first write forks
// exactly the tables it touches; main and the other tables stay put.
func TestMutateFirstWriteForksOnlyTouched(t *testing.T) {
	ctx := context.Background()
	r := newWRig(t)
	r.load(t, load.Merge, baseData)
	if _, err := r.g.CreateBranch(ctx, "feature", "main"); err != nil {
		t.Fatal(err)
	}
	mainBefore := r.state(t, "main")
	res, err := mutate.Query(ctx, r.g, `mutation m() {
  insert Person { handle: "fay", name: "Fay" }
  insert Knows { from: "fay", to: "ada" }
}`, "", mutate.Options{Branch: "feature"})
	if err != nil || res.Commit == nil {
		t.Fatal(err)
	}
	if r.state(t, "main") != mainBefore {
		t.Error("main changed")
	}
	snap, _ := r.g.Snapshot(ctx, "feature")
	for _, p := range snap.Tables() {
		touched := p.Key == "node:Person" || p.Key == "edge:Knows"
		if (p.Branch != table.MainBranch) != touched {
			t.Errorf("%s pinned on %q", p.Key, p.Branch)
		}
		refs, err := table.ListBranches(ctx, r.mem, p.Path)
		if err != nil {
			t.Fatal(err)
		}
		if (len(refs) == 1) != touched || len(refs) > 1 {
			t.Errorf("%s has table branches %v", p.Key, refs)
		}
	}
	if got := len(r.rows(t, "feature", "node:Person")); got != 3 {
		t.Errorf("feature has %d people", got)
	}
	if got := len(r.rows(t, "main", "node:Person")); got != 2 {
		t.Errorf("main has %d people", got)
	}
	// A second write on the branch reuses the forks.
	r2, err := mutate.Query(ctx, r.g, `mutation m() { update Person set { age: 9 } where handle = "fay" }`, "", mutate.Options{Branch: "feature"})
	if err != nil || r2.AffectedNodes != 1 {
		t.Fatalf("second write: %+v %v", r2, err)
	}
}

// TestMutateStorageFaults: injected storage failures during a mutation.
// A failed data-file write changes nothing; a lost answer on the table or
// manifest commit is resolved by reading back, never by sending again.
func TestMutateStorageFaults(t *testing.T) {
	ctx := context.Background()
	src := `mutation m($h: String) { insert Person { handle: $h, name: "F" } }`
	t.Run("data file put fails", func(t *testing.T) {
		r := newWRig(t)
		before := r.state(t, "main")
		r.fault.FailNth(fault.Put, 1, backend.KindPermanent)
		_, err := mutate.Query(ctx, r.g, src, "", mutate.Options{Params: map[string]any{"h": "a"}})
		if err == nil || !errors.Is(err, backend.ErrPermanent) {
			t.Fatalf("got %v; want the permanent storage error", err)
		}
		if r.state(t, "main") != before {
			t.Error("a failed stage changed the graph")
		}
	})
	for _, n := range []int{1, 2, 3} { // each conditional put of the commit
		t.Run(fmt.Sprintf("answer of cond put %d lost", n), func(t *testing.T) {
			r := newWRig(t)
			c0 := r.commits(t, "main")
			r.count.Reset()
			r.fault.LoseAnswer(fault.CondPut, n)
			res, err := mutate.Query(ctx, r.g, src, "", mutate.Options{Params: map[string]any{"h": "a"}})
			got := r.commits(t, "main") - c0
			switch {
			case err == nil:
				if res.Commit == nil || got != 1 {
					t.Errorf("reported success with %d commits", got)
				}
			case errors.Is(err, backend.ErrUnknown), errors.Is(err, graph.ErrRecoveryRequired):
				if got > 1 {
					t.Errorf("reported %v with %d commits", err, got)
				}
			default:
				t.Errorf("lost answer reported as a plain failure: %v", err)
			}
			// Three conditional puts, plus at most one identical re-issue of
			// a publish whose answer was lost (seed 001); never a second commit.
			if c := r.count.Snapshot(); c.CondPut > 4 {
				t.Errorf("%d conditional puts: a commit was sent twice", c.CondPut)
			}
		})
	}
}
