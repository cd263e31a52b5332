package pg

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/omnigraph-go/omnigraph/table"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// dumpCatalog renders every field of a catalog, one fact per line, so a
// golden file shows any change in what the compiler produces.
func dumpCatalog(c *Catalog) string {
	var b strings.Builder
	fmt.Fprintf(&b, "identity %s\n", c.Identity)
	prop := func(p *Property) {
		fmt.Fprintf(&b, "  prop %s %s nullable=%v owner=%s inherited=%q key=%v unique=%v index=%v arrow=%s",
			p.Name, p.Type, p.Nullable, p.Owner, p.Inherited, p.Key, p.Unique, p.Index, p.ArrowField().Type)
		if p.Range != nil {
			fmt.Fprintf(&b, " range=%s", p.Range)
		}
		if p.Check != nil {
			fmt.Fprintf(&b, " check=%q", p.Check.Pattern)
		}
		if p.Embed != nil {
			fmt.Fprintf(&b, " embed=%s/%s", p.Embed.Source, p.Embed.Model)
		}
		for _, a := range p.Annotations {
			fmt.Fprintf(&b, " %s", a)
		}
		fmt.Fprintf(&b, " at %d:%d\n", p.Pos.Line, p.Pos.Col)
	}
	for _, in := range c.Interfaces {
		fmt.Fprintf(&b, "interface %s at %d:%d\n", in.Name, in.Pos.Line, in.Pos.Col)
		for _, p := range in.Properties {
			prop(p)
		}
	}
	for _, n := range c.Nodes {
		fmt.Fprintf(&b, "node %s implements=%v key=%v unique=%v index=%v annotations=%v at %d:%d\n",
			n.Name, n.Implements, n.Key, n.Unique, n.Index, n.Annotations, n.Pos.Line, n.Pos.Col)
		for _, p := range n.Properties {
			prop(p)
		}
		fmt.Fprintf(&b, "  arrow %s\n", schemaText(n.ArrowSchema()))
	}
	for _, e := range c.Edges {
		fmt.Fprintf(&b, "edge %s %s -> %s card=%s unique=%v index=%v annotations=%v at %d:%d\n",
			e.Name, e.From, e.To, e.Card, e.Unique, e.Index, e.Annotations, e.Pos.Line, e.Pos.Col)
		for _, p := range e.Properties {
			prop(p)
		}
		fmt.Fprintf(&b, "  arrow %s\n", schemaText(e.ArrowSchema()))
	}
	return b.String()
}

func schemaText(s *arrow.Schema) string {
	var parts []string
	for _, f := range s.Fields() {
		null := ""
		if f.Nullable {
			null = "?"
		}
		parts = append(parts, f.Name+":"+f.Type.String()+null)
	}
	return strings.Join(parts, ", ")
}

func TestGoldenSocial(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "examples", "social.pg"))
	if err != nil {
		t.Fatal(err)
	}
	c := mustCompile(t, string(src))
	got := dumpCatalog(c) + "\n--- canonical ---\n" + c.Canonical()
	golden := filepath.Join("testdata", "social.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -run TestGoldenSocial -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("catalog differs from %s (rerun with -update if the change is intended)\ngot:\n%s", golden, got)
	}
	if c2 := mustCompile(t, c.Canonical()); c2.Identity != c.Identity {
		t.Errorf("canonical form of social.pg does not round-trip")
	}
}

func TestArrowSchema(t *testing.T) {
	c := mustCompile(t, `node A {
  s: String
  b: Bool?
  i32: I32
  i64: I64
  u32: U32
  u64: U64
  f32: F32
  f64: F64
  d: Date
  dt: DateTime?
  v: Vector(3)
  blob: Blob?
  tags: [I64]?
  st: enum(a, b)
}
edge E: A -> A { w: F64? }`)
	n := mustNode(t, c, "A")
	want := []arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "s", Type: arrow.BinaryTypes.String},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32},
		{Name: "i64", Type: arrow.PrimitiveTypes.Int64},
		{Name: "u32", Type: arrow.PrimitiveTypes.Uint32},
		{Name: "u64", Type: arrow.PrimitiveTypes.Uint64},
		{Name: "f32", Type: arrow.PrimitiveTypes.Float32},
		{Name: "f64", Type: arrow.PrimitiveTypes.Float64},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32},
		{Name: "dt", Type: arrow.FixedWidthTypes.Timestamp_us, Nullable: true},
		{Name: "v", Type: arrow.FixedSizeListOf(3, arrow.PrimitiveTypes.Float32)},
		{Name: "blob", Type: table.BlobType(), Nullable: true},
		{Name: "tags", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true},
		{Name: "st", Type: arrow.BinaryTypes.String},
	}
	if got := n.ArrowSchema(); !got.Equal(arrow.NewSchema(want, nil)) {
		t.Errorf("node schema:\n%s\nwant:\n%s", got, arrow.NewSchema(want, nil))
	}
	e, _ := c.Edge("E")
	wantE := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "src", Type: arrow.BinaryTypes.String},
		{Name: "dst", Type: arrow.BinaryTypes.String},
		{Name: "w", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	if got := e.ArrowSchema(); !got.Equal(wantE) {
		t.Errorf("edge schema:\n%s\nwant:\n%s", got, wantE)
	}
	if tz := n.ArrowSchema().Field(10).Type.(*arrow.TimestampType); tz.Unit != arrow.Microsecond || tz.TimeZone != "UTC" {
		t.Errorf("DateTime column = %v", tz)
	}
}

// TestDocExamples compiles every schema snippet in docs/schema.md, so the
// reference cannot drift from the compiler.
func TestDocExamples(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "schema.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(string(doc), "```")
	n := 0
	for i := 1; i < len(blocks); i += 2 {
		block := blocks[i]
		if strings.HasPrefix(block, "\nschema.pg:") {
			// The error listing: each line must match the real error format.
			continue
		}
		n++
		if _, err := Compile(block); err != nil {
			t.Errorf("doc example %d does not compile: %v\n%s", n, err, block)
		}
	}
	if n < 2 {
		t.Fatalf("found %d schema examples in docs/schema.md", n)
	}
}

func TestCatalogJSON(t *testing.T) {
	c := mustCompile(t, "node A { k: I32 @key\n tags: [String]? @description(\"t\")\n e: String @check(\"^x\") }\nedge E: A -> A @card(0..1)")
	raw, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"kind":"I32"`, `"kind":"List","elem":{"kind":"String"}`, `"key":["k"]`, `"card":{"min":0,"max":1}`, `"check":{"pattern":"^x"}`, `"args":[{"kind":"string","value":"t"`, `"identity":"` + c.Identity + `"`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("catalog JSON lacks %s:\n%s", want, raw)
		}
	}
}
