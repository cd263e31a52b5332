package changes_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend/counter"
	"github.com/omnigraph-go/omnigraph/graph/changes"
	"github.com/omnigraph-go/omnigraph/graph/diff"
	"github.com/omnigraph-go/omnigraph/graph/merge"
)

const seed = `{"type":"Person","data":{"handle":"ada","name":"Ada","age":36}}
{"type":"Person","data":{"handle":"bob","name":"Bob"}}
{"type":"Company","data":{"slug":"acme"}}
{"edge":"WorksAt","from":"ada","to":"acme","data":{"id":"w1"}}
`

// TestPollWalksFirstParentBlocks: from the beginning, one block per commit
// in commit order, each with the commit's exact changes (before and after
// images), then a cursor that resumes exactly after the last block.
func TestPollWalksFirstParentBlocks(t *testing.T) {
	r := newRig(t)
	c1 := r.load(t, "main", seed)
	c2 := r.mutate(t, "main", `query q() { update Person set { name: "Ada L" } where handle = "ada" }`)
	c3 := r.mutate(t, "main", `query q() { delete WorksAt where from = "ada" }`)

	p := r.poll(t, changes.Request{Start: start("beginning")})
	var got []string
	for _, b := range p.Blocks {
		got = append(got, b.Cause.CommitID)
	}
	if want := []string{c1, c2, c3}; !slices.Equal(got, want) {
		t.Fatalf("blocks %v, want commits %v", got, want)
	}
	if !p.CaughtUp || p.Cursor == "" || p.NextPageToken != "" || p.Head != c3 {
		t.Fatalf("terminal page: caught_up %v cursor %q token %q head %s", p.CaughtUp, p.Cursor, p.NextPageToken, p.Head)
	}
	want := [][]string{
		{"insert node Company acme {slug=acme}", "insert node Person ada {age=36,handle=ada,name=Ada}", "insert node Person bob {handle=bob,name=Bob}", "insert edge WorksAt w1 ada->acme {}"},
		{"update node Person ada {age=36,handle=ada,name=Ada L}"},
		{"delete edge WorksAt w1 ada->acme {}"},
	}
	for i, b := range p.Blocks {
		var cs []string
		for _, c := range b.Changes {
			cs = append(cs, render(c))
		}
		if !slices.Equal(cs, want[i]) {
			t.Errorf("block %d: %q, want %q", i, cs, want[i])
		}
	}
	up := p.Blocks[1].Changes[0]
	if up.Before["name"] != "Ada" || up.After["name"] != "Ada L" {
		t.Errorf("update images: before %v after %v", up.Before, up.After)
	}
	if cause := p.Blocks[1].Cause; cause.ParentCommitID != c1 || cause.Branch != "main" || cause.Actor != "tester" || cause.AuthoredAt == 0 {
		t.Errorf("cause %+v", cause)
	}

	// The cursor: nothing new, then exactly the next commit.
	again := r.poll(t, changes.Request{Cursor: p.Cursor})
	if len(again.Blocks) != 0 || !again.CaughtUp || again.Cursor == "" {
		t.Fatalf("poll at the head: %d blocks, caught_up %v", len(again.Blocks), again.CaughtUp)
	}
	c4 := r.mutate(t, "main", `query q() { insert Person { handle: "cy", name: "Cy" } }`)
	next := r.poll(t, changes.Request{Cursor: again.Cursor})
	if len(next.Blocks) != 1 || next.Blocks[0].Cause.CommitID != c4 || !slices.Equal(renderBlocks(next), []string{"insert node Person cy {handle=cy,name=Cy}"}) {
		t.Fatalf("after one commit: %v", renderBlocks(next))
	}
	// A cursor is durable: a fresh handle (another process) resumes it.
	r.reopen(t)
	if p := r.poll(t, changes.Request{Cursor: again.Cursor}); len(p.Blocks) != 1 || p.Blocks[0].Cause.CommitID != c4 {
		t.Fatalf("the cursor on a fresh handle: %d blocks", len(p.Blocks))
	}
}

// TestPollStarts: now is the head (no replay), after:ID is exactly the
// commits after ID, and a commit off the chain is rejected.
func TestPollStarts(t *testing.T) {
	r := newRig(t)
	c1 := r.load(t, "main", seed)
	c2 := r.mutate(t, "main", `query q() { update Person set { age: 37 } where handle = "ada" }`)
	now := r.poll(t, changes.Request{})
	if len(now.Blocks) != 0 || !now.CaughtUp || now.Head != c2 {
		t.Fatalf("start now: %d blocks, head %s", len(now.Blocks), now.Head)
	}
	c3 := r.mutate(t, "main", `query q() { update Person set { age: 38 } where handle = "ada" }`)
	if p := r.poll(t, changes.Request{Cursor: now.Cursor}); len(p.Blocks) != 1 || p.Blocks[0].Cause.CommitID != c3 {
		t.Fatalf("after start now: %v", renderBlocks(p))
	}
	after := r.poll(t, changes.Request{Start: start("after:" + c1)})
	if len(after.Blocks) != 2 || after.Blocks[0].Cause.CommitID != c2 || after.Blocks[1].Cause.CommitID != c3 {
		t.Fatalf("after %s: %d blocks", c1, len(after.Blocks))
	}
	// A commit of another branch's own history is not on main's chain.
	if _, err := r.g.CreateBranch(context.Background(), "side", "main"); err != nil {
		t.Fatal(err)
	}
	s1 := r.mutate(t, "side", `query q() { insert Person { handle: "zed", name: "Zed" } }`)
	for _, st := range []string{"after:" + s1, "after:01J00000000000000000000000", "after:nope"} {
		if _, err := changes.Poll(context.Background(), r.g, changes.Request{Start: start(st)}); !isRejected(err) {
			t.Errorf("start %s on main: %v, want a rejected cursor", st, err)
		}
	}
	for _, bad := range []string{"yesterday", "after:", "AFTER:x"} {
		if _, err := changes.ParseStart(bad); err == nil {
			t.Errorf("ParseStart(%q) accepted", bad)
		}
	}
}

// TestNamedBranchInheritsHistory: a named branch's chain runs through its
// fork points: beginning includes main's commits up to the fork, then the
// parent branch's, then its own; a merge into main is one block of the
// merged changes.
func TestNamedBranchInheritsHistory(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	m1 := r.load(t, "main", seed)
	if _, err := r.g.CreateBranch(ctx, "a", "main"); err != nil {
		t.Fatal(err)
	}
	m2 := r.mutate(t, "main", `query q() { insert Person { handle: "main2", name: "M" } }`) // not on a's chain
	a1 := r.mutate(t, "a", `query q() { insert Person { handle: "a1", name: "A" } }`)
	if _, err := r.g.CreateBranch(ctx, "b", "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.g.CreateBranch(ctx, "empty", "b"); err != nil {
		t.Fatal(err)
	}
	b1 := r.mutate(t, "b", `query q() { update Person set { age: 1 } where handle = "a1" }`)

	chainOf := func(branch, st string) []string {
		var ids []string
		p := r.poll(t, changes.Request{Branch: branch, Start: start(st)})
		for _, b := range p.Blocks {
			ids = append(ids, b.Cause.CommitID)
		}
		if !p.CaughtUp {
			t.Fatalf("%s from %s not caught up", branch, st)
		}
		return ids
	}
	if got := chainOf("b", "beginning"); !slices.Equal(got, []string{m1, a1, b1}) {
		t.Errorf("b from the beginning: %v, want %v", got, []string{m1, a1, b1})
	}
	if got := chainOf("b", "after:"+m1); !slices.Equal(got, []string{a1, b1}) {
		t.Errorf("b after m1: %v", got)
	}
	if got := chainOf("b", "after:"+a1); !slices.Equal(got, []string{b1}) {
		t.Errorf("b after a1: %v", got)
	}
	if got := chainOf("empty", "beginning"); !slices.Equal(got, []string{m1, a1}) {
		t.Errorf("a branch with no commits of its own: %v", got)
	}
	if got := chainOf("main", "beginning"); !slices.Equal(got, []string{m1, m2}) {
		t.Errorf("main: %v", got)
	}
	// Walked a few commits at a time, the chain is the same (positions
	// in ancestor segments, across fork points).
	var stepped []string
	p := r.poll(t, changes.Request{Branch: "b", Start: start("beginning"), MaxCommits: 1})
	for i := 0; i < 10; i++ {
		for _, b := range p.Blocks {
			stepped = append(stepped, b.Cause.CommitID)
		}
		if p.CaughtUp {
			break
		}
		p = r.poll(t, changes.Request{Cursor: p.Cursor, MaxCommits: 1})
	}
	if !slices.Equal(stepped, []string{m1, a1, b1}) {
		t.Errorf("b one commit a poll: %v", stepped)
	}

	res, err := merge.Run(ctx, r.g, "b", "main", merge.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mp := r.poll(t, changes.Request{Start: start("after:" + m2)})
	if len(mp.Blocks) != 1 || mp.Blocks[0].Cause.CommitID != res.Commit.ID || mp.Blocks[0].Cause.MergedParentCommitID == "" {
		t.Fatalf("the merge commit: %+v", mp.Blocks)
	}
	if got := renderBlocks(mp); !slices.Equal(got, []string{"insert node Person a1 {age=1,handle=a1,name=A}"}) {
		t.Errorf("the merge block: %v", got)
	}
}

// TestPagesSplitBlocks: a commit larger than a page continues with page
// tokens (no cursor until its last page), every change exactly once, in
// order; the byte limit splits pages too; one change larger than the
// byte limit is a LimitError; limits above the ceilings are LimitErrors.
func TestPagesSplitBlocks(t *testing.T) {
	r := newRig(t)
	var b strings.Builder
	for i := 0; i < 2500; i++ {
		fmt.Fprintf(&b, `{"type":"Person","data":{"handle":"p%04d","name":"P"}}`+"\n", i)
	}
	big := r.load(t, "main", b.String())
	small := r.mutate(t, "main", `query q() { insert Company { slug: "c" } }`)

	var ids []string
	var sizes []int
	p := r.poll(t, changes.Request{Start: start("beginning")})
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("too many pages")
		}
		for _, bl := range p.Blocks {
			for _, c := range bl.Changes {
				ids = append(ids, c.TypeName+"/"+c.ID)
			}
		}
		sizes = append(sizes, len(renderBlocks(p)))
		if p.NextPageToken == "" {
			break
		}
		if p.Cursor != "" || p.Blocks[0].Cause.CommitID != big {
			t.Fatalf("a mid-block page: cursor %q, cause %s", p.Cursor, p.Blocks[0].Cause.CommitID)
		}
		p = r.poll(t, changes.Request{PageToken: p.NextPageToken})
	}
	if !slices.Equal(sizes, []int{1000, 1000, 501}) {
		t.Errorf("page sizes %v, want 1000, 1000, 501", sizes)
	}
	if len(ids) != 2501 || !slices.IsSorted(ids[:2500]) || ids[2500] != "Company/c" {
		t.Errorf("%d changes (sorted %v)", len(ids), slices.IsSorted(ids[:2500]))
	}
	if !p.CaughtUp || p.Cursor == "" || p.Blocks[len(p.Blocks)-1].Cause.CommitID != small {
		t.Errorf("last page: caught_up %v cursor %q", p.CaughtUp, p.Cursor)
	}
	// The page token is no cursor, and the cursor no page token.
	first := r.poll(t, changes.Request{Start: start("beginning")})
	if _, err := changes.Poll(context.Background(), r.g, changes.Request{Cursor: first.NextPageToken}); !isRejected(err) {
		t.Errorf("a page token as a cursor: %v", err)
	}
	if _, err := changes.Poll(context.Background(), r.g, changes.Request{PageToken: p.Cursor}); !isRejected(err) {
		t.Errorf("a cursor as a page token: %v", err)
	}

	// Bytes: each change is ~100 bytes; 20,000 bytes hold fewer than 1000.
	bp := r.poll(t, changes.Request{Start: start("beginning"), MaxBytes: 20000})
	if n := len(renderBlocks(bp)); n < 100 || n > 300 || bp.NextPageToken == "" {
		t.Errorf("a 20,000-byte page held %d changes", n)
	}
	var le *changes.LimitError
	if _, err := changes.Poll(context.Background(), r.g, changes.Request{Start: start("beginning"), MaxBytes: 10}); !errors.As(err, &le) || le.Resource != "change_page_bytes" {
		t.Errorf("one change above the byte limit: %v", err)
	}
	// A page token carries the limits of the poll it continues: passed
	// alone it keeps a 300-change page (not the default 1000); a limit
	// given with it wins.
	lp := r.poll(t, changes.Request{Start: start("beginning"), MaxChanges: 300})
	var limited []int
	for pages := 0; lp.NextPageToken != "" && pages < 3; pages++ {
		lp = r.poll(t, changes.Request{PageToken: lp.NextPageToken})
		limited = append(limited, len(renderBlocks(lp)))
	}
	if !slices.Equal(limited, []int{300, 300, 300}) {
		t.Errorf("pages after a 300-change first page, passing only the token: %v, want 300 each", limited)
	}
	if wp := r.poll(t, changes.Request{PageToken: lp.NextPageToken, MaxChanges: 50}); len(renderBlocks(wp)) != 50 {
		t.Errorf("a limit given with the page token: %d changes, want 50", len(renderBlocks(wp)))
	}
	// A token issued before tokens carried limits (no "l") still reads,
	// with the defaults.
	lp = r.poll(t, changes.Request{Start: start("beginning"), MaxChanges: 300})
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(lp.NextPageToken, "ogp1."))
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields["l"] == nil {
		t.Fatalf("the page token %s carries no limits (%v)", raw, err)
	}
	delete(fields, "l")
	raw, _ = json.Marshal(fields)
	if op := r.poll(t, changes.Request{PageToken: "ogp1." + base64.RawURLEncoding.EncodeToString(raw)}); len(renderBlocks(op)) != 1000 {
		t.Errorf("an old page token (no limits): %d changes, want the default 1000", len(renderBlocks(op)))
	}
	for _, req := range []changes.Request{{MaxChanges: 8193}, {MaxBytes: 33 << 20}, {MaxCommits: 513}} {
		if _, err := changes.Poll(context.Background(), r.g, req); !errors.As(err, &le) {
			t.Errorf("limits %+v: %v, want a LimitError", req, err)
		}
	}
	// A page that fills up at a block boundary ends with a cursor.
	two := r.poll(t, changes.Request{Start: start("after:" + big), MaxChanges: 1})
	if two.Cursor == "" || len(two.Blocks) != 1 || !two.CaughtUp {
		t.Errorf("one change a page at the end: %+v", two)
	}
}

// TestFilterIsBoundToTheCursor: kinds, types and ops select changes; the
// cursor carries its filter; another filter with it is rejected; an
// unknown type or op is invalid input.
func TestFilterIsBoundToTheCursor(t *testing.T) {
	r := newRig(t)
	r.load(t, "main", seed)
	r.mutate(t, "main", `query q() { update Person set { age: 40 } where handle = "bob" }`)
	f := changes.Filter{Types: []string{"Person"}, Ops: []diff.Op{diff.OpUpdate}}
	p := r.poll(t, changes.Request{Start: start("beginning"), Filter: f})
	if got := renderBlocks(p); !slices.Equal(got, []string{"update node Person bob {age=40,handle=bob,name=Bob}"}) || len(p.Blocks) != 2 {
		t.Errorf("Person updates: %v in %d blocks (empty blocks advance the feed)", got, len(p.Blocks))
	}
	edges := r.poll(t, changes.Request{Start: start("beginning"), Filter: changes.Filter{Kinds: []string{"edge"}}})
	if got := renderBlocks(edges); !slices.Equal(got, []string{"insert edge WorksAt w1 ada->acme {}"}) {
		t.Errorf("edges: %v", got)
	}
	r.mutate(t, "main", `query q() { update Person set { age: 41 } where handle = "bob" }`)
	r.mutate(t, "main", `query q() { insert Company { slug: "x" } }`)
	next := r.poll(t, changes.Request{Cursor: p.Cursor})
	if got := renderBlocks(next); !slices.Equal(got, []string{"update node Person bob {age=41,handle=bob,name=Bob}"}) {
		t.Errorf("the cursor's own filter: %v", got)
	}
	// The same filter spelled in another order is the same filter.
	same := changes.Filter{Ops: []diff.Op{diff.OpUpdate, diff.OpUpdate}, Types: []string{"Person"}}
	if _, err := changes.Poll(context.Background(), r.g, changes.Request{Cursor: p.Cursor, Filter: same}); err != nil {
		t.Errorf("the same filter again: %v", err)
	}
	if _, err := changes.Poll(context.Background(), r.g, changes.Request{Cursor: p.Cursor, Filter: changes.Filter{Types: []string{"Company"}}}); !isRejected(err) {
		t.Errorf("another filter with the cursor: %v", err)
	}
	for _, bad := range []changes.Filter{{Types: []string{"Nope"}}, {Kinds: []string{"vertex"}}, {Ops: []diff.Op{"upsert"}}} {
		if _, err := changes.Poll(context.Background(), r.g, changes.Request{Filter: bad}); err == nil || isRejected(err) {
			t.Errorf("filter %+v: %v, want invalid input", bad, err)
		}
	}
}

// TestPollRequestsAndRoundTrips pins a poll's cost in requests: caught
// up on a warm handle, a poll is the head's List; one new one-row commit
// (on a freshly opened handle, which read the head) is the ranged read of
// the cursor's manifest version (a List and a GET: the head is not read
// again), the changed table's two versions side by side and its new
// fragment, and nothing of the other tables: 6 requests in 4 round trips.
// The counts are the same after 5 commits and after 60.
func TestPollRequestsAndRoundTrips(t *testing.T) {
	measure := func(depth int) (caughtUp, oneCommit counterCounts) {
		r := newRig(t)
		r.load(t, "main", seed)
		for i := 0; i < depth; i++ {
			r.mutate(t, "main", fmt.Sprintf(`query q() { update Person set { age: %d } where handle = "bob" }`, i))
		}
		cur := r.poll(t, changes.Request{}).Cursor
		r.reopen(t)
		r.poll(t, changes.Request{Cursor: cur}) // warm: the handle knows the head
		r.count.Reset()
		if p := r.poll(t, changes.Request{Cursor: cur}); len(p.Blocks) != 0 || !p.CaughtUp {
			t.Fatalf("caught up: %d blocks", len(p.Blocks))
		}
		caughtUp = countsOf(r.count.Snapshot())
		r.mutate(t, "main", `query q() { insert Company { slug: "new" } }`)
		r.reopen(t)
		// Each request takes a while, so that requests sent together
		// overlap and the counter's round trips are exact.
		r.fault.Latency(5 * time.Millisecond)
		r.count.Reset()
		p := r.poll(t, changes.Request{Cursor: cur})
		oneCommit = countsOf(r.count.Snapshot())
		r.fault.Latency(0)
		if len(renderBlocks(p)) != 1 {
			t.Fatalf("one commit: %v", renderBlocks(p))
		}
		return
	}
	c5, o5 := measure(5)
	c60, o60 := measure(60)
	t.Logf("caught up: %+v; one new commit: %+v (depth 5 and 60)", c5, o5)
	if c5 != c60 || o5 != o60 {
		t.Fatalf("cost grows with history: caught up %+v vs %+v, one commit %+v vs %+v", c5, c60, o5, o60)
	}
	if c5.Total != 1 || c5.List != 1 {
		t.Errorf("a caught-up poll: %+v, want the head's List", c5)
	}
	if o5.Total != 6 || o5.RoundTrips != 4 {
		t.Errorf("a poll of one commit: %+v, want 6 requests in 4 round trips", o5)
	}
}

type counterCounts struct{ Get, List, Total, RoundTrips int }

func countsOf(c counter.Counts) counterCounts {
	return counterCounts{Get: c.Get, List: c.List, Total: c.Total, RoundTrips: c.RoundTrips}
}
