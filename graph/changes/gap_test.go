package changes_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"testing"

	"github.com/omnigraph-go/omnigraph/graph/changes"
	"github.com/omnigraph-go/omnigraph/graph/cleanup"
	"github.com/omnigraph-go/omnigraph/graph/diff"
	"github.com/omnigraph-go/omnigraph/graph/export"
	"github.com/omnigraph-go/omnigraph/graph/schema"
	"github.com/omnigraph-go/omnigraph/lang/pg"
)

// baseline is what a consumer installs from a baseline: the export of a
// head, as replica rows, and the cursor after it.
func baseline(t *testing.T, r *rig, branch string, f changes.Filter) (map[string]string, string) {
	t.Helper()
	ctx := context.Background()
	snap, err := r.g.Snapshot(ctx, branch)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := export.Run(ctx, snap, &buf, export.Options{}); err != nil {
		t.Fatal(err)
	}
	cur, err := changes.CursorAt(ctx, r.g, snap, f)
	if err != nil {
		t.Fatal(err)
	}
	replica := map[string]string{}
	sc := bufio.NewScanner(&buf)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct {
			Type, Edge, From, To string
			Data                 map[string]any
		}
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.UseNumber()
		if err := dec.Decode(&line); err != nil {
			t.Fatal(err)
		}
		row := line.Data
		typ := line.Type
		if line.Edge != "" {
			typ = line.Edge
			row[pg.ColSrc], row[pg.ColDst] = line.From, line.To
		}
		for k, v := range row {
			if n, ok := v.(json.Number); ok {
				i, _ := n.Int64()
				row[k] = int32(i) // the test schema's only number is an I32
			}
		}
		replica[typ+" "+fmt.Sprint(row[pg.ColID])] = rowText(row)
	}
	return replica, cur
}

// TestGapAfterCleanupAndBaseline: a cursor older than cleanup's retention
// gets a GapError naming the first unreadable commit (and echoing the
// cursor); a baseline (export + CursorAt) then resumes exactly: the
// replica built from it and the feed equals the graph.
func TestGapAfterCleanupAndBaseline(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	r.load(t, "main", seed)
	old := r.poll(t, changes.Request{}).Cursor
	var after []string
	for i := 0; i < 5; i++ {
		after = append(after, r.mutate(t, "main", fmt.Sprintf(`query q() { update Person set { age: %d } where handle = "ada" }`, 50+i)))
	}
	if _, err := cleanup.Run(ctx, r.g, cleanup.Options{Keep: 2, Confirm: true}); err != nil {
		t.Fatal(err)
	}
	r.reopen(t)
	_, err := changes.Poll(ctx, r.g, changes.Request{Cursor: old})
	var gap *changes.GapError
	if !errors.As(err, &gap) || !errors.Is(err, changes.ErrGap) {
		t.Fatalf("poll past cleanup: %v, want a GapError", err)
	}
	if gap.FirstUnreadableCommitID != after[0] || gap.Cursor != old {
		t.Errorf("gap names %s (cursor %q), want %s", gap.FirstUnreadableCommitID, gap.Cursor, after[0])
	}
	// From the beginning the gap is met at the first pruned commit too.
	if _, err := changes.Poll(ctx, r.g, changes.Request{Start: start("beginning")}); !errors.As(err, &gap) {
		t.Errorf("beginning past cleanup: %v", err)
	}

	replica, cur := baseline(t, r, "main", changes.Filter{})
	if !maps.Equal(replica, state(t, r.g, "main")) {
		t.Fatalf("the baseline is not the head:\n%v\n%v", replica, state(t, r.g, "main"))
	}
	if p := r.poll(t, changes.Request{Cursor: cur}); len(p.Blocks) != 0 || !p.CaughtUp {
		t.Fatalf("the baseline's cursor at the head: %d blocks", len(p.Blocks))
	}
	r.mutate(t, "main", `query q() { insert Person { handle: "new", name: "N" } }`)
	r.mutate(t, "main", `query q() { delete Person where handle = "bob" }`)
	p := r.poll(t, changes.Request{Cursor: cur})
	apply(replica, p)
	if !maps.Equal(replica, state(t, r.g, "main")) {
		t.Fatalf("baseline + feed != graph:\n%v\n%v", replica, state(t, r.g, "main"))
	}
}

// TestGapOnANamedBranch: a named branch's manifest history is never
// pruned, but cleanup deletes the table versions beyond the retention; the
// feed meets that as a gap too, never as a failure.
func TestGapOnANamedBranch(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	r.load(t, "main", seed)
	if _, err := r.g.CreateBranch(ctx, "b", "main"); err != nil {
		t.Fatal(err)
	}
	first := r.mutate(t, "b", `query q() { update Person set { age: 1 } where handle = "ada" }`)
	old := r.poll(t, changes.Request{Branch: "b", Start: start("after:" + first)}).Cursor
	var after []string
	for i := 0; i < 4; i++ {
		after = append(after, r.mutate(t, "b", fmt.Sprintf(`query q() { update Person set { age: %d } where handle = "ada" }`, 2+i)))
	}
	if _, err := cleanup.Run(ctx, r.g, cleanup.Options{Keep: 1, Confirm: true}); err != nil {
		t.Fatal(err)
	}
	r.reopen(t)
	_, err := changes.Poll(ctx, r.g, changes.Request{Cursor: old})
	var gap *changes.GapError
	if !errors.As(err, &gap) || gap.FirstUnreadableCommitID != after[0] {
		t.Fatalf("poll of b past cleanup: %v, want a gap at %s", err, after[0])
	}
}

// TestSchemaBoundary: a commit that changed the schema cannot be diffed:
// the poll that meets it first answers ErrSchemaBoundary (a page with
// blocks before it ends before it), and the feed continues after it.
func TestSchemaBoundary(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	c1 := r.load(t, "main", seed)
	cur := r.poll(t, changes.Request{}).Cursor
	c2 := r.mutate(t, "main", `query q() { update Person set { age: 2 } where handle = "ada" }`)
	res, err := schema.Apply(ctx, r.g, schemaV2, schema.ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	boundary := res.Commit.ID
	c3 := r.mutate(t, "main", `query q() { update Person set { nick: "A" } where handle = "ada" }`)

	p := r.poll(t, changes.Request{Cursor: cur})
	if len(p.Blocks) != 1 || p.Blocks[0].Cause.CommitID != c2 || p.CaughtUp {
		t.Fatalf("the page before the boundary: %d blocks, caught_up %v", len(p.Blocks), p.CaughtUp)
	}
	if _, err := changes.Poll(ctx, r.g, changes.Request{Cursor: p.Cursor}); !errors.Is(err, diff.ErrSchemaBoundary) {
		t.Fatalf("the boundary: %v", err)
	}
	q := r.poll(t, changes.Request{Start: start("after:" + boundary)})
	if len(q.Blocks) != 1 || q.Blocks[0].Cause.CommitID != c3 || renderBlocks(q)[0] != "update node Person ada {age=2,handle=ada,name=Ada,nick=A}" {
		t.Fatalf("after the boundary: %v", renderBlocks(q))
	}
	_ = c1
}

const schemaV2 = `
node Person {
  handle: String @key
  name: String
  age: I32?
  nick: String?
}
node Company {
  slug: String @key
}
edge WorksAt: Person -> Company
`
