package merge_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/merge"
)

// TestMergeOutcomesAndConflicts pins the three-way rule per entity, on nodes
// and edges, with answers worked out by hand against the seed (ada, bob, cy;
// acme; Knows k1 ada->bob weight 1; WorksAt w1 ada->acme). Branch f forks
// from main; src runs on f, tgt on main, then f is merged into main.
func TestMergeOutcomesAndConflicts(t *testing.T) {
	type step struct{ load, mutate string }
	tests := []struct {
		name     string
		src, tgt []step
		outcome  merge.Outcome
		conflict string // "kind entity_kind type id"
		// persons and knows are main's rows after a successful merge.
		persons, knows string
	}{
		{name: "fast-forward takes the source rows",
			src:     []step{{mutate: `mutation m() { update Person set { name: "Ada2" } where handle = "ada" }`}},
			outcome: merge.FastForward,
			persons: "ada|handle=ada|name=Ada2 bob|handle=bob|name=Bob cy|handle=cy|name=Cy",
			knows:   "k1|dst=bob|src=ada|weight=1"},
		{name: "only source changed bob, only target inserted dan",
			src:     []step{{mutate: `mutation m() { update Person set { name: "Bobby" } where handle = "bob" }`}},
			tgt:     []step{{load: `{"type":"Person","data":{"handle":"dan","name":"Dan"}}`}},
			outcome: merge.Merged,
			persons: "ada|handle=ada|name=Ada bob|handle=bob|name=Bobby cy|handle=cy|name=Cy dan|handle=dan|name=Dan",
			knows:   "k1|dst=bob|src=ada|weight=1"},
		{name: "identical change on both sides is no conflict",
			src:     []step{{mutate: `mutation m() { update Person set { name: "Same" } where handle = "ada" }`}},
			tgt:     []step{{mutate: `mutation m() { update Person set { name: "Same" } where handle = "ada" }`}},
			outcome: merge.Merged,
			persons: "ada|handle=ada|name=Same bob|handle=bob|name=Bob cy|handle=cy|name=Cy",
			knows:   "k1|dst=bob|src=ada|weight=1"},
		{name: "a source delete of an edge carries over",
			src:     []step{{mutate: `mutation m() { delete Knows where from = "ada" }`}},
			tgt:     []step{{load: `{"type":"Person","data":{"handle":"dan","name":"Dan"}}`}},
			outcome: merge.Merged,
			persons: "ada|handle=ada|name=Ada bob|handle=bob|name=Bob cy|handle=cy|name=Cy dan|handle=dan|name=Dan",
			knows:   ""},
		{name: "a source update of an edge carries over",
			src:     []step{{load: `{"edge":"Knows","from":"ada","to":"bob","data":{"id":"k1","weight":5}}`}},
			tgt:     []step{{load: `{"type":"Person","data":{"handle":"dan","name":"Dan"}}`}},
			outcome: merge.Merged,
			persons: "ada|handle=ada|name=Ada bob|handle=bob|name=Bob cy|handle=cy|name=Cy dan|handle=dan|name=Dan",
			knows:   "k1|dst=bob|src=ada|weight=5"},
		{name: "divergent_insert node",
			src:      []step{{load: `{"type":"Person","data":{"handle":"eve","name":"Eve1"}}`}},
			tgt:      []step{{load: `{"type":"Person","data":{"handle":"eve","name":"Eve2"}}`}},
			conflict: "divergent_insert node Person eve"},
		{name: "divergent_insert edge",
			src:      []step{{load: `{"edge":"Knows","from":"bob","to":"cy","data":{"id":"k2","weight":1}}`}},
			tgt:      []step{{load: `{"edge":"Knows","from":"bob","to":"cy","data":{"id":"k2","weight":2}}`}},
			conflict: "divergent_insert edge Knows k2"},
		{name: "divergent_update node (whole-row: different properties still conflict)",
			src:      []step{{mutate: `mutation m() { update Person set { name: "X" } where handle = "ada" }`}},
			tgt:      []step{{mutate: `mutation m() { update Person set { email: "ada@x.io" } where handle = "ada" }`}},
			conflict: "divergent_update node Person ada"},
		{name: "divergent_update edge",
			src:      []step{{load: `{"edge":"Knows","from":"ada","to":"bob","data":{"id":"k1","weight":2}}`}},
			tgt:      []step{{load: `{"edge":"Knows","from":"ada","to":"bob","data":{"id":"k1","weight":3}}`}},
			conflict: "divergent_update edge Knows k1"},
		{name: "delete_vs_update node",
			src:      []step{{mutate: `mutation m() { delete Person where handle = "cy" }`}},
			tgt:      []step{{mutate: `mutation m() { update Person set { name: "Cyrus" } where handle = "cy" }`}},
			conflict: "delete_vs_update node Person cy"},
		{name: "delete_vs_update edge",
			src:      []step{{mutate: `mutation m() { delete Knows where from = "ada" }`}},
			tgt:      []step{{load: `{"edge":"Knows","from":"ada","to":"bob","data":{"id":"k1","weight":9}}`}},
			conflict: "delete_vs_update edge Knows k1"},
		{name: "orphan_edge: the source adds an edge to a node the target deleted",
			src:      []step{{load: `{"edge":"Knows","from":"bob","to":"cy","data":{"id":"k2"}}`}},
			tgt:      []step{{mutate: `mutation m() { delete Person where handle = "cy" }`}},
			conflict: "orphan_edge edge Knows k2"},
		{name: "orphan_edge: the target adds an edge to a node the source deleted",
			src:      []step{{mutate: `mutation m() { delete Person where handle = "cy" }`}},
			tgt:      []step{{load: `{"edge":"Knows","from":"cy","to":"ada","data":{"id":"k3"}}`}},
			conflict: "orphan_edge edge Knows k3"},
		{name: "unique_violation across the sides",
			src:      []step{{load: `{"type":"Person","data":{"handle":"dan","name":"Dan","email":"z@x.io"}}`}},
			tgt:      []step{{mutate: `mutation m() { update Person set { email: "z@x.io" } where handle = "bob" }`}},
			conflict: "unique_violation node Person dan"},
		{name: "cardinality_violation across the sides",
			src: []step{{load: `{"type":"Company","data":{"slug":"initech"}}
{"edge":"WorksAt","from":"bob","to":"initech","data":{"id":"w2"}}`}},
			tgt:      []step{{load: `{"edge":"WorksAt","from":"bob","to":"acme","data":{"id":"w3"}}`}},
			conflict: "cardinality_violation edge WorksAt bob"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			r := newRig(t)
			r.branch(t, "f", "main")
			run := func(branch string, steps []step) {
				for _, s := range steps {
					if s.load != "" {
						r.load(t, branch, s.load)
					} else {
						r.mutate(t, branch, s.mutate)
					}
				}
			}
			run("f", tc.src)
			run("main", tc.tgt)
			mainBefore, fBefore := image(t, r.g), rows(t, r.g, "f", "node:Person")
			res, err := merge.Run(ctx, r.g, "f", "main", merge.Options{})
			if tc.conflict != "" {
				var mc *merge.MergeConflicts
				if !errors.As(err, &mc) || !errors.Is(err, merge.ErrMergeConflict) {
					t.Fatalf("want conflict %s, got %v (%+v)", tc.conflict, err, res)
				}
				var got []string
				for _, c := range mc.Conflicts {
					got = append(got, c.Kind+" "+c.EntityKind+" "+c.TypeName+" "+c.EntityID)
					if c.Message == "" {
						t.Errorf("conflict %+v has no message", c)
					}
				}
				if len(got) != 1 || got[0] != tc.conflict {
					t.Fatalf("conflicts %q, want [%s]; error: %v", got, tc.conflict, err)
				}
				// All or nothing, and both branches stay writable.
				if after := image(t, r.g); after != mainBefore {
					t.Errorf("a refused merge changed the graph:\n%s\nwant\n%s", after, mainBefore)
				}
				if got := rows(t, r.g, "f", "node:Person"); strings.Join(got, " ") != strings.Join(fBefore, " ") {
					t.Errorf("the source changed")
				}
				r.load(t, "main", `{"type":"Person","data":{"handle":"zed","name":"Zed"}}`)
				r.load(t, "f", `{"type":"Person","data":{"handle":"zed","name":"Zed"}}`)
				return
			}
			if err != nil {
				t.Fatalf("merge: %v", err)
			}
			if res.Outcome != tc.outcome {
				t.Fatalf("outcome %s, want %s", res.Outcome, tc.outcome)
			}
			if res.Commit == nil || len(res.Commit.Parents) != 2 || res.Commit.Parents[1] != res.SourceCommit {
				t.Errorf("the commit %+v does not have the source head %s as its second parent", res.Commit, res.SourceCommit)
			}
			if got := names(t, r.g, "main"); got != tc.persons {
				t.Errorf("persons:\n got %s\nwant %s", got, tc.persons)
			}
			if got := strings.Join(rows(t, r.g, "main", "edge:Knows"), " "); got != tc.knows {
				t.Errorf("knows:\n got %s\nwant %s", got, tc.knows)
			}
			// Merging again is already up to date.
			again, err := merge.Run(ctx, r.g, "f", "main", merge.Options{})
			if err != nil || again.Outcome != merge.AlreadyUpToDate || again.Commit != nil {
				t.Errorf("second merge: %+v, %v; want already_up_to_date", again, err)
			}
		})
	}
}

// TestMergeAlreadyUpToDateAndRefusals: a branch with nothing new is
// already up to date (no commit); merging a branch into itself or an
// internal branch is refused.
func TestMergeAlreadyUpToDateAndRefusals(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	r.branch(t, "f", "main")
	before, _ := r.g.Commits(ctx, "main", 0)
	res, err := merge.Run(ctx, r.g, "f", "", merge.Options{})
	if err != nil || res.Outcome != merge.AlreadyUpToDate || res.Target != "main" {
		t.Fatalf("%+v %v", res, err)
	}
	// main moved on; f is its ancestor: already up to date.
	r.load(t, "main", `{"type":"Person","data":{"handle":"dan","name":"Dan"}}`)
	if res, err = merge.Run(ctx, r.g, "f", "main", merge.Options{}); err != nil || res.Outcome != merge.AlreadyUpToDate {
		t.Fatalf("%+v %v", res, err)
	}
	after, _ := r.g.Commits(ctx, "main", 0)
	if len(after) != len(before)+1 {
		t.Errorf("an up-to-date merge committed")
	}
	for _, c := range []struct{ src, tgt string }{{"f", "f"}, {"main", "main"}, {"__schema_apply_lock__", "main"}} {
		if _, err := merge.Run(ctx, r.g, c.src, c.tgt, merge.Options{}); !errors.Is(err, graph.ErrInvalidBranch) {
			t.Errorf("merge %s into %s: %v, want ErrInvalidBranch", c.src, c.tgt, err)
		}
	}
}

// TestMergeSiblingsKeepADeletedEdgeDeleted: A and B fork from main; B
// deletes edge k1; A (which did not touch k1) is merged into main, then B:
// k1 stays deleted, and A's change stays.
func TestMergeSiblingsKeepADeletedEdgeDeleted(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	r.branch(t, "a", "main")
	r.branch(t, "b", "main")
	r.mutate(t, "b", `mutation m() { delete Knows where from = "ada" }`)
	r.mutate(t, "a", `mutation m() { update Person set { name: "AdaA" } where handle = "ada" }`)
	if res, err := merge.Run(ctx, r.g, "a", "main", merge.Options{}); err != nil || res.Outcome != merge.FastForward {
		t.Fatalf("merge a: %+v %v", res, err)
	}
	res, err := merge.Run(ctx, r.g, "b", "main", merge.Options{})
	if err != nil || res.Outcome != merge.Merged {
		t.Fatalf("merge b: %+v %v", res, err)
	}
	if got := rows(t, r.g, "main", "edge:Knows"); len(got) != 0 {
		t.Errorf("k1 came back: %v", got)
	}
	if got := names(t, r.g, "main"); !strings.Contains(got, "name=AdaA") {
		t.Errorf("a's change lost: %s", got)
	}
	// Merging main back into b is a fast-forward to the same rows.
	if res, err := merge.Run(ctx, r.g, "main", "b", merge.Options{}); err != nil || res.Outcome != merge.FastForward {
		t.Fatalf("merge main into b: %+v %v", res, err)
	}
	if a, b := image(t, r.g), ""; a == b {
		t.Fatal("empty image")
	}
	if got, want := strings.Join(rows(t, r.g, "b", "node:Person"), " "), strings.Join(rows(t, r.g, "main", "node:Person"), " "); got != want {
		t.Errorf("b %s\nmain %s", got, want)
	}
}

// TestMergeFastForwardKeepsChildBranchesUsable: a fast-forward of a branch
// that has its own child leaves the child readable and writable, and the
// source and target writable.
func TestMergeFastForwardKeepsChildBranchesUsable(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	r.branch(t, "f", "main")
	r.mutate(t, "f", `mutation m() { update Person set { name: "AdaF" } where handle = "ada" }`)
	r.branch(t, "fchild", "f")
	if res, err := merge.Run(ctx, r.g, "f", "main", merge.Options{}); err != nil || res.Outcome != merge.FastForward {
		t.Fatalf("%+v %v", res, err)
	}
	if got := names(t, r.g, "fchild"); !strings.Contains(got, "name=AdaF") {
		t.Errorf("child: %s", got)
	}
	for _, b := range []string{"fchild", "f", "main"} {
		r.load(t, b, `{"type":"Person","data":{"handle":"new","name":"`+b+`"}}`)
		if got := names(t, r.g, b); !strings.Contains(got, "new|handle=new|name="+b) {
			t.Errorf("%s after its write: %s", b, got)
		}
	}
	if got := names(t, r.g, "main"); !strings.Contains(got, "name=AdaF") {
		t.Errorf("main: %s", got)
	}
}

// TestMergeConflictSummary: the message spells out the first three
// conflicts and says how many more there are.
func TestMergeConflictSummary(t *testing.T) {
	e := &merge.MergeConflicts{Source: "f", Target: "main"}
	for i := 0; i < 5; i++ {
		e.Conflicts = append(e.Conflicts, merge.Conflict{Kind: merge.DivergentUpdate, Message: "m"})
	}
	if got := e.Error(); !strings.Contains(got, "5 conflicts") || !strings.Contains(got, "and 2 more") {
		t.Errorf("summary: %s", got)
	}
}

// TestMergeTooLargeIsRefusedBeforeAnyEffect: a delta above the limit is
// refused with ErrMergeTooLarge and writes nothing.
func TestMergeTooLargeIsRefusedBeforeAnyEffect(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	r.branch(t, "f", "main")
	r.load(t, "f", `{"type":"Person","data":{"handle":"p1","name":"P"}}
{"type":"Person","data":{"handle":"p2","name":"P"}}`)
	before := image(t, r.g)
	if _, err := merge.Run(ctx, r.g, "f", "main", merge.Options{MaxChanges: 1}); !errors.Is(err, merge.ErrMergeTooLarge) {
		t.Fatalf("%v", err)
	}
	if image(t, r.g) != before {
		t.Error("a refused merge wrote")
	}
}
