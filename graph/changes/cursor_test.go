package changes_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/changes"
	"github.com/omnigraph-go/omnigraph/manifest"
)

// edit decodes a token, lets fn change its JSON members, and encodes it
// again with the same prefix: a client forging a cursor.
func edit(t *testing.T, tok string, fn func(m map[string]any)) string {
	t.Helper()
	prefix, body, _ := strings.Cut(tok, ".")
	raw, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	fn(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return prefix + "." + base64.RawURLEncoding.EncodeToString(out)
}

// TestForgedAndStaleCursorsAreRejected: a cursor bound to another graph,
// branch, incarnation or filter, one that names a position off the chain
// or a version with another commit, and damaged or foreign strings are
// all ErrCursorRejected (400), never a read of anything else.
func TestForgedAndStaleCursorsAreRejected(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	c1 := r.load(t, "main", seed)
	r.mutate(t, "main", `query q() { update Person set { age: 2 } where handle = "ada" }`)
	if _, err := r.g.CreateBranch(ctx, "b", "main"); err != nil {
		t.Fatal(err)
	}
	good := r.poll(t, changes.Request{Start: start("after:" + c1)}).Cursor
	onB := r.poll(t, changes.Request{Branch: "b"}).Cursor

	pos := func(k string, v any) func(m map[string]any) {
		return func(m map[string]any) { m["p"].(map[string]any)[k] = v }
	}
	cases := map[string]string{
		"another graph":           edit(t, good, func(m map[string]any) { m["g"] = "01HZZZZZZZZZZZZZZZZZZZZZZZ" }),
		"another incarnation":     edit(t, good, func(m map[string]any) { m["i"] = 7 }),
		"another witness":         edit(t, good, func(m map[string]any) { m["w"] = "01HZZZZZZZZZZZZZZZZZZZZZZZ" }),
		"a version past the head": edit(t, good, pos("v", 99)),
		"version zero":            edit(t, good, pos("v", 0)),
		"another commit":          edit(t, good, pos("c", "01HZZZZZZZZZZZZZZZZZZZZZZZ")),
		"a position off chain":    edit(t, good, pos("b", "nowhere")),
		"a newer token version":   edit(t, good, func(m map[string]any) { m["v"] = 2 }),
		"an unknown member":       edit(t, good, func(m map[string]any) { m["x"] = 1 }),
		"a branch's cursor":       edit(t, onB, func(m map[string]any) { m["b"] = "main" }),
		"not base64":              "ogc1.!!!",
		"not a token":             "hello",
		"empty json":              "ogc1." + base64.RawURLEncoding.EncodeToString([]byte("{}")),
		"too long":                "ogc1." + strings.Repeat("A", 20000),
		"json array":              "ogc1." + base64.RawURLEncoding.EncodeToString([]byte("[1,2]")),
	}
	for name, cur := range cases {
		if _, err := changes.Poll(ctx, r.g, changes.Request{Cursor: cur}); !isRejected(err) {
			t.Errorf("%s: %v, want a rejected cursor", name, err)
		} else if !strings.HasPrefix(err.Error(), "change cursor rejected: ") {
			t.Errorf("%s: message %q", name, err)
		}
	}
	// The cursor names its branch; another --branch with it is rejected.
	if _, err := changes.Poll(ctx, r.g, changes.Request{Branch: "b", Cursor: good}); !isRejected(err) {
		t.Errorf("main's cursor on b: %v", err)
	}
	// Deleted and created again, the branch is another incarnation.
	if err := r.g.DeleteBranch(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if _, err := changes.Poll(ctx, r.g, changes.Request{Cursor: onB}); !errors.Is(err, manifest.ErrBranchNotFound) {
		t.Errorf("a deleted branch's cursor: %v", err)
	}
	if _, err := r.g.CreateBranch(ctx, "b", "main"); err != nil {
		t.Fatal(err)
	}
	if _, err := changes.Poll(ctx, r.g, changes.Request{Cursor: onB}); !isRejected(err) {
		t.Errorf("a recreated branch: %v", err)
	}
	// Two positions at once.
	if _, err := changes.Poll(ctx, r.g, changes.Request{Cursor: good, Start: start("now")}); !errors.Is(err, graph.ErrInvalidInput) {
		t.Errorf("a cursor and a start: %v", err)
	}
	// The good cursor still works.
	if _, err := changes.Poll(ctx, r.g, changes.Request{Cursor: good}); err != nil {
		t.Errorf("the good cursor: %v", err)
	}
}

// FuzzPollCursor: whatever string arrives as a cursor or a page token,
// Poll answers without panicking, and anything but a cursor it issued is
// refused as a rejected cursor.
func FuzzPollCursor(f *testing.F) {
	r := newRig(f)
	r.load(f, "main", seed)
	good := r.poll(f, changes.Request{Start: start("beginning")}).Cursor
	f.Add(good, false)
	f.Add(good[:len(good)-3], false)
	f.Add(good, true)
	f.Add("ogp1.eyJ2IjoxfQ", true)
	f.Add("", false)
	f.Fuzz(func(t *testing.T, s string, page bool) {
		req := changes.Request{Cursor: s}
		if page {
			req = changes.Request{PageToken: s}
		}
		_, err := changes.Poll(context.Background(), r.g, req)
		if s == "" || (s == good && !page) {
			return
		}
		if err == nil {
			if _, derr := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(s, "ogc1.")); derr != nil {
				t.Fatalf("%q was accepted", s)
			}
			return
		}
		if !isRejected(err) {
			t.Fatalf("%q: %v, want a rejected cursor", s, err)
		}
	})
}
