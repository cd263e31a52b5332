package pg

import (
	"reflect"
	"testing"
)

func TestParseAST(t *testing.T) {
	src := `// leading comment
interface Named { name: String @key }
/* block
   comment */ node Team @description("a \"team\"") implements Named, Other {
  slug: String? @unique @note(1, k="v", 0..*)
  tags: [I64]
  v: Vector(3)
  tier: enum(free, pro-plus, 2x)
  @index(slug)
}
edge MemberOf: Engineer -> Team @card(1..) @x
edge Empty: A -> B { }
`
	f, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Decls) != 4 {
		t.Fatalf("got %d decls, want 4", len(f.Decls))
	}
	in, node, e1, e2 := f.Decls[0], f.Decls[1], f.Decls[2], f.Decls[3]
	if in.Kind != DeclInterface || in.Name != (Ident{"Named", Pos{2, 11}}) || len(in.Props) != 1 {
		t.Errorf("interface decl = %+v", in)
	}
	if node.Kind != DeclNode || node.Pos != (Pos{4, 15}) || node.Name != (Ident{"Team", Pos{4, 20}}) {
		t.Errorf("node header = kind %v pos %v name %v", node.Kind, node.Pos, node.Name)
	}
	if got := node.Implements; !reflect.DeepEqual(got, []Ident{{"Named", Pos{4, 63}}, {"Other", Pos{4, 70}}}) {
		t.Errorf("implements = %v", got)
	}
	if len(node.Annotations) != 1 || node.Annotations[0].String() != `@description("a \"team\"")` || node.Annotations[0].Args[0].Value != `a "team"` {
		t.Errorf("node annotations = %+v", node.Annotations)
	}
	if len(node.Props) != 4 {
		t.Fatalf("node props = %d, want 4", len(node.Props))
	}
	slug := node.Props[0]
	if slug.Name.Name != "slug" || slug.Type.Name != "String" || !slug.Nullable || len(slug.Annotations) != 2 {
		t.Errorf("slug = %+v", slug)
	}
	note := slug.Annotations[1]
	wantArgs := []Arg{
		{Kind: ArgNumber, Value: "1", Pos: Pos{5, 31}},
		{Key: "k", Kind: ArgString, Value: "v", Pos: Pos{5, 34}},
		{Kind: ArgRange, Value: "0..*", Pos: Pos{5, 41}},
	}
	if note.Name != "note" || !reflect.DeepEqual(note.Args, wantArgs) {
		t.Errorf("@note = %+v, want args %+v", note, wantArgs)
	}
	if tags := node.Props[1]; tags.Type.Name != listTypeName || tags.Type.Elem.Name != "I64" || tags.Nullable {
		t.Errorf("tags = %+v elem %+v", tags.Type, tags.Type.Elem)
	}
	if v := node.Props[2]; v.Type.Name != "Vector" || v.Type.Dim != 3 {
		t.Errorf("v = %+v", v.Type)
	}
	tier := node.Props[3]
	var vals []string
	for _, v := range tier.Type.Values {
		vals = append(vals, v.Name)
	}
	if tier.Type.Name != "enum" || !reflect.DeepEqual(vals, []string{"free", "pro-plus", "2x"}) {
		t.Errorf("tier = %+v values %v", tier.Type, vals)
	}
	if len(node.Constraints) != 1 || node.Constraints[0].String() != "@index(slug)" || node.Constraints[0].Pos != (Pos{9, 3}) {
		t.Errorf("constraints = %+v", node.Constraints)
	}
	if e1.Kind != DeclEdge || e1.From.Name != "Engineer" || e1.To.Name != "Team" || e1.HasBody {
		t.Errorf("edge = %+v", e1)
	}
	if len(e1.Annotations) != 2 || e1.Annotations[0].String() != "@card(1..)" || e1.Annotations[1].String() != "@x" {
		t.Errorf("edge annotations = %+v", e1.Annotations)
	}
	if !e2.HasBody || len(e2.Props) != 0 {
		t.Errorf("empty-body edge = %+v", e2)
	}
}

// A property annotation and a body constraint look alike; the form decides,
// whatever the layout.
func TestParseConstraintVsAnnotation(t *testing.T) {
	tests := []struct {
		name      string
		src       string
		propAnns  []string // annotations of the last property
		bodyConst []string
	}{
		{name: "short forms stay on the property", src: "node A { x: String\n @key @unique @index }", propAnns: []string{"@key", "@unique", "@index"}},
		{name: "named args start a body constraint", src: "node A { x: String\n @unique(x) }", bodyConst: []string{"@unique(x)"}},
		{name: "same line still body form", src: "node A { x: String @index(x) }", bodyConst: []string{"@index(x)"}},
		{name: "short range stays", src: "node A { x: I32 @range(0..5) }", propAnns: []string{"@range(0..5)"}},
		{name: "body range", src: "node A { x: I32 @range(x, 0..5) }", bodyConst: []string{"@range(x, 0..5)"}},
		{name: "short check stays", src: `node A { x: String @check("a") }`, propAnns: []string{`@check("a")`}},
		{name: "unknown annotation with ident arg stays", src: "node A { x: String @note(x) }", propAnns: []string{"@note(x)"}},
		{name: "keyword args stay", src: "node A { x: String @unique(a=b) }", propAnns: []string{"@unique(a=b)"}},
		{name: "misspelt constraint is a constraint", src: "node A { x: String\n @uniqe(x) }", bodyConst: []string{"@uniqe(x)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse(tc.src)
			if err != nil {
				t.Fatal(err)
			}
			d := f.Decls[0]
			var props, body []string
			for _, a := range d.Props[len(d.Props)-1].Annotations {
				props = append(props, a.String())
			}
			for _, a := range d.Constraints {
				body = append(body, a.String())
			}
			if !reflect.DeepEqual(props, tc.propAnns) || !reflect.DeepEqual(body, tc.bodyConst) {
				t.Errorf("property annotations %v, body constraints %v; want %v, %v", props, body, tc.propAnns, tc.bodyConst)
			}
		})
	}
}

func TestParseStringEscapes(t *testing.T) {
	f, err := Parse(`node A @description("q\" b\\ n\n t\t re\\d") {}`)
	if err != nil {
		t.Fatal(err)
	}
	got := f.Decls[0].Annotations[0].Args[0].Value
	if want := "q\" b\\ n\n t\t re\\d"; got != want {
		t.Fatalf("value = %q, want %q", got, want)
	}
	// quote is the inverse of the lexer.
	f2, err := Parse("node A @description(" + quote(got) + ") {}")
	if err != nil {
		t.Fatal(err)
	}
	if again := f2.Decls[0].Annotations[0].Args[0].Value; again != got {
		t.Fatalf("round trip = %q, want %q", again, got)
	}
}
