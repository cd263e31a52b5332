package merge

import (
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/graph/change"
	"github.com/omnigraph-go/omnigraph/lang/pg"
)

// TestCheckValuesFlagsRowsOutsideTheSchema exercises the defence-in-depth
// path of value_constraint_violation directly: under one schema every row
// a merge writes was already checked on its way in, so no public history
// reaches it (docs/dev/merge.md, "value_constraint_violation"). Rows that
// break an enum, a @range or a @check are flagged, one conflict per bad
// value, naming the entity; good rows and NULLs are not.
func TestCheckValuesFlagsRowsOutsideTheSchema(t *testing.T) {
	cat, err := pg.Compile(`
node Task {
  slug: String @key
  state: enum(open, done)
  prio: I32? @range(1..5)
  code: String? @check("^[A-Z]{3}$")
}
edge Blocks: Task -> Task {
  lag: I64? @range(0..)
}
`)
	if err != nil {
		t.Fatal(err)
	}
	m := &merger{cat: cat, conflicted: map[string]bool{}, puts: map[string]map[string]put{
		"node:Task": {
			"ok":   {row: change.Row{"id": "ok", "slug": "ok", "state": "open", "prio": int32(3), "code": "ABC"}},
			"null": {row: change.Row{"id": "null", "slug": "null", "state": "done", "prio": nil, "code": nil}},
			"bad":  {row: change.Row{"id": "bad", "slug": "bad", "state": "lost", "prio": int32(9), "code": "abc"}},
		},
		"edge:Blocks": {
			"e1": {row: change.Row{"id": "e1", "src": "ok", "dst": "null", "lag": int64(-1)}},
			"e2": {row: change.Row{"id": "e2", "src": "ok", "dst": "null", "lag": int64(4)}},
		},
	}}
	m.checkValues()
	var got []string
	for _, c := range m.conflicts {
		if c.Kind != ValueConstraintViolation || c.Message == "" || !strings.Contains(c.Message, c.EntityID) {
			t.Errorf("conflict %+v", c)
		}
		got = append(got, c.EntityKind+" "+c.TypeName+" "+c.EntityID)
	}
	want := []string{"node Task bad", "node Task bad", "node Task bad", "edge Blocks e1"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("conflicts %q, want %q", got, want)
	}
	if !m.conflicted["node:Task\x00bad"] || m.conflicted["node:Task\x00ok"] {
		t.Errorf("conflicted %v", m.conflicted)
	}
}
