package server

import (
	"context"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/graph/schema"
)

// TestSchemaAtSnapshot: GET schema?snapshot= answers the schema accepted
// at that commit (what an export of the commit loads into), not the
// head's; a branch and a snapshot together, or a malformed commit id, are
// refused with the engine's reason.
func TestSchemaAtSnapshot(t *testing.T) {
	ctx := context.Background()
	g := testGraph(t)
	snap, err := g.Snapshot(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	first := snap.CommitID()
	if _, err := schema.Apply(ctx, g, strings.Replace(testSchema, "age: I32?", "age: I32?\n  city: String?", 1), schema.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	_, base := newTestServer(t, g, Config{})
	c := &client{t: t, base: base}
	g0 := "/graphs/default"

	st, m := c.json("GET", g0+"/schema", "")
	mustStatus(t, "schema", st, 200, m)
	if !strings.Contains(m["schema_source"].(string), "city") {
		t.Fatalf("the head's schema lacks the applied property: %v", m)
	}
	st, m = c.json("GET", g0+"/schema?snapshot="+first, "")
	mustStatus(t, "schema at the first commit", st, 200, m)
	if src := m["schema_source"].(string); strings.Contains(src, "city") || !strings.Contains(src, "node Person") || m["branch"] != "main" {
		t.Fatalf("the first commit's schema: %v", m)
	}
	st, m = c.json("GET", g0+"/schema?branch=main&snapshot="+first, "")
	mustStatus(t, "branch and snapshot", st, 400, m)
	st, m = c.json("GET", g0+"/schema?snapshot=feedface", "")
	mustStatus(t, "a malformed commit id", st, 400, m)
	if m["reason"] != "invalid_commit_id" {
		t.Fatalf("a malformed commit id: %v", m)
	}
}
