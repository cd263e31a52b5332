package load_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/load"
	"github.com/omnigraph-go/omnigraph/graph/query"
	gschema "github.com/omnigraph-go/omnigraph/graph/schema"
)

const raceSchema = `
node Person {
  handle: String @key
  age: I32?
}
`

// atEOF is a reader that runs fn once, when the load has read the whole
// file (after it was checked against the schema, before its write began).
type atEOF struct {
	r    io.Reader
	fn   func()
	done bool
}

func (a *atEOF) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	if err == io.EOF && !a.done {
		a.done = true
		a.fn()
	}
	return n, err
}

// TestLoadRacingASchemaApplyIsAConcurrentChange: a schema apply that lands
// between the load's check of its file and its write is a concurrent
// change that moved the branch (ReadSetChanged on the schema identity:
// 409, "run it again"), not bad input, and writes nothing (main answered
// invalid input, so the simulation found no order of a racing load and
// apply that explained it). Both load paths (row, columnar) and every
// mode.
func TestLoadRacingASchemaApplyIsAConcurrentChange(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []load.Mode{load.Merge, load.Append, load.Overwrite} {
		t.Run(string(mode), func(t *testing.T) {
			g, err := graph.Init(ctx, mem.New(), raceSchema, graph.InitOptions{Actor: "tester"})
			if err != nil {
				t.Fatal(err)
			}
			in := &atEOF{r: strings.NewReader(`{"type":"Person","data":{"handle":"p1","age":3}}` + "\n"), fn: func() {
				if _, err := gschema.Apply(ctx, g, strings.Replace(raceSchema, "age: I32?", "age: I32?\n  x1: String?", 1), gschema.ApplyOptions{}); err != nil {
					t.Errorf("the racing schema apply: %v", err)
				}
			}}
			_, err = load.Run(ctx, g, in, load.Options{Mode: mode})
			var rs *graph.ReadSetChanged
			if !errors.As(err, &rs) || rs.Member != "schema_identity" || errors.Is(err, graph.ErrInvalidInput) {
				t.Fatalf("load racing a schema apply: %v; want a read-set change of the schema identity", err)
			}
			r, err := query.Head(ctx, g, "main", `query q() { match { $p: Person } return { $p.handle } }`, "", nil)
			if err != nil || len(r.Rows) != 0 {
				t.Fatalf("after the refused load: %v, %v", r, err)
			}
		})
	}
}
