package embed

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/lang/pg"
)

const fillSchema = `
node Doc {
    slug: String @key
    title: String
    embedding: Vector(3)? @embed("title")
}
node Tag { name: String @key }
edge Tagged: Doc -> Tag
`

const fillInput = `{"type":"Doc","data":{"slug":"a","title":"alpha guide"}}
{"type":"Doc","data":{"slug":"b","title":"beta","embedding":[1,0,0]}}
{"type":"Doc","data":{"slug":"c","title":"gamma","embedding":null}}

{"type":"Tag","data":{"name":"x"}}
{"edge":"Tagged","from":"a","to":"x"}
`

func lines(t *testing.T, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

func vec(m map[string]any) string { return fmt.Sprint(m["data"].(map[string]any)["embedding"]) }

// TestFillJSONL: fill missing vectors from a schema's @embed (the text is
// the original's "type: T\nfield: value"), re-embed all, re-embed a
// selection, clean; edges and other types pass through.
func TestFillJSONL(t *testing.T) {
	cat, err := pg.Compile(fillSchema)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := SpecFromCatalog(cat)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	run := func(job Job) (*Summary, []map[string]any) {
		job.Spec = spec
		var out bytes.Buffer
		sum, err := FillJSONL(ctx, strings.NewReader(fillInput), &out, job, Builtin{})
		if err != nil {
			t.Fatal(err)
		}
		return sum, lines(t, out.String())
	}
	wantA := fmt.Sprint(Mock("type: Doc\ntitle: alpha guide", 3))
	sum, got := run(Job{})
	if len(got) != 5 || vec(got[0]) != wantA || vec(got[1]) != "[1 0 0]" || vec(got[2]) != fmt.Sprint(Mock("type: Doc\ntitle: gamma", 3)) {
		t.Fatalf("fill: %v", got)
	}
	if got[4]["edge"] != "Tagged" || got[3]["type"] != "Tag" {
		t.Fatalf("pass-through: %v", got[3:])
	}
	if *sum != (Summary{Records: 5, Selected: 4, Embedded: 2, Mode: "fill_missing", Model: "mock"}) {
		t.Fatalf("summary %+v", *sum)
	}
	sum, got = run(Job{Mode: ReembedAll})
	if sum.Embedded != 3 || vec(got[1]) != fmt.Sprint(Mock("type: Doc\ntitle: beta", 3)) {
		t.Fatalf("reembed all: %+v %v", sum, got[1])
	}
	sum, got = run(Job{Select: []string{"Doc:slug=b"}})
	if sum.Embedded != 1 || sum.Mode != "reembed_selected" || vec(got[1]) == "[1 0 0]" || vec(got[0]) != "<nil>" {
		t.Fatalf("select: %+v %v", sum, got)
	}
	sum, got = run(Job{Mode: Clean})
	if sum.Cleaned != 2 || vec(got[1]) != "<nil>" || sum.Model != "" {
		t.Fatalf("clean: %+v %v", sum, got)
	}
	if _, ok := got[1]["data"].(map[string]any)["embedding"]; ok {
		t.Fatal("clean left the field")
	}
	if sum, _ := run(Job{Types: []string{"Tag"}}); sum.Embedded != 0 || sum.Selected != 1 {
		t.Fatalf("types: %+v", sum)
	}
	if _, err := SpecFromCatalog(mustCompile(t, "node X { a: String @key }")); err == nil {
		t.Fatal("a schema without @embed gives a spec")
	}
}

func mustCompile(t *testing.T, src string) *pg.Catalog {
	c, err := pg.Compile(src)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
