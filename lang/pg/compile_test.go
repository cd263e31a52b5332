package pg

import (
	"reflect"
	"strings"
	"testing"
)

func mustCompile(t testing.TB, src string) *Catalog {
	t.Helper()
	c, err := Compile(src)
	if err != nil {
		t.Fatalf("Compile: %v\nsource:\n%s", err, src)
	}
	return c
}

func mustNode(t testing.TB, c *Catalog, name string) *NodeType {
	t.Helper()
	n, ok := c.Node(name)
	if !ok {
		t.Fatalf("node %s missing", name)
	}
	return n
}

func mustProp(t testing.TB, ps []*Property, name string) *Property {
	t.Helper()
	p, ok := findProp(ps, name)
	if !ok {
		t.Fatalf("property %s missing", name)
	}
	return p
}

func propNames(ps []*Property) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

func TestCompileTypes(t *testing.T) {
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
  dt: DateTime
  v: Vector(384)
  blob: Blob?
  tags: [String]?
  days: [Date]
  st: enum(zeta, alpha, in-review, 2x)
}`)
	want := map[string]string{
		"s": "String", "b": "Bool", "i32": "I32", "i64": "I64", "u32": "U32", "u64": "U64",
		"f32": "F32", "f64": "F64", "d": "Date", "dt": "DateTime", "v": "Vector(384)",
		"blob": "Blob", "tags": "[String]", "days": "[Date]", "st": "enum(2x, alpha, in-review, zeta)",
	}
	n := mustNode(t, c, "A")
	if len(n.Properties) != len(want) {
		t.Fatalf("got %d properties, want %d", len(n.Properties), len(want))
	}
	for _, p := range n.Properties {
		if p.Type.String() != want[p.Name] {
			t.Errorf("%s: type %s, want %s", p.Name, p.Type, want[p.Name])
		}
		wantNull := p.Name == "b" || p.Name == "blob" || p.Name == "tags"
		if p.Nullable != wantNull {
			t.Errorf("%s: nullable %v, want %v", p.Name, p.Nullable, wantNull)
		}
		if p.Owner != "A" || p.Inherited != "" {
			t.Errorf("%s: owner %q inherited %q", p.Name, p.Owner, p.Inherited)
		}
	}
	if st := mustProp(t, n.Properties, "st"); !reflect.DeepEqual(st.Type.Values, []string{"2x", "alpha", "in-review", "zeta"}) {
		t.Errorf("enum values = %v, want sorted", st.Type.Values)
	}
	if v := mustProp(t, n.Properties, "v"); v.Type.Kind != KindVector || v.Type.Dim != 384 {
		t.Errorf("vector = %+v", v.Type)
	}
	if l := mustProp(t, n.Properties, "days"); l.Type.Kind != KindList || l.Type.Elem.Kind != KindDate {
		t.Errorf("list = %+v", l.Type)
	}
	if n.Key != nil || n.KeyName() != "" {
		t.Errorf("unkeyed node has key %v", n.Key)
	}
}

func TestCompileConstraints(t *testing.T) {
	tests := []struct {
		name  string
		src   string
		check func(t *testing.T, c *Catalog)
	}{
		{
			name: "short forms",
			src:  "node A { k: String @key\n u: I64 @unique\n x: F32? @index }",
			check: func(t *testing.T, c *Catalog) {
				n := mustNode(t, c, "A")
				if !reflect.DeepEqual(n.Key, []string{"k"}) || n.KeyName() != "k" {
					t.Errorf("Key = %v", n.Key)
				}
				k, u, x := mustProp(t, n.Properties, "k"), mustProp(t, n.Properties, "u"), mustProp(t, n.Properties, "x")
				if !k.Key || !k.Unique || !k.Index {
					t.Errorf("key flags = %v %v %v, want all (a key implies unique and index)", k.Key, k.Unique, k.Index)
				}
				if u.Key || !u.Unique || u.Index {
					t.Errorf("unique flags = %v %v %v", u.Key, u.Unique, u.Index)
				}
				if x.Key || x.Unique || !x.Index {
					t.Errorf("index flags = %v %v %v", x.Key, x.Unique, x.Index)
				}
				if !reflect.DeepEqual(n.Unique, [][]string{{"u"}}) || !reflect.DeepEqual(n.Index, [][]string{{"x"}}) {
					t.Errorf("groups unique %v index %v", n.Unique, n.Index)
				}
			},
		},
		{
			name: "composite key and groups in the body",
			src:  "node A {\n org: String\n n: I32\n a: String?\n b: String?\n @key(org, n)\n @unique(b, a)\n @unique(a)\n @index(b)\n @index(b)\n}",
			check: func(t *testing.T, c *Catalog) {
				n := mustNode(t, c, "A")
				if !reflect.DeepEqual(n.Key, []string{"org", "n"}) || n.KeyName() != "" {
					t.Errorf("Key = %v KeyName %q", n.Key, n.KeyName())
				}
				org := mustProp(t, n.Properties, "org")
				if !org.Key || org.Unique {
					t.Errorf("composite key part: key %v unique %v (only the tuple is unique)", org.Key, org.Unique)
				}
				if !reflect.DeepEqual(n.Unique, [][]string{{"a"}, {"b", "a"}}) {
					t.Errorf("Unique = %v (sorted, in written order within a group)", n.Unique)
				}
				if !reflect.DeepEqual(n.Index, [][]string{{"b"}}) {
					t.Errorf("Index = %v (deduplicated)", n.Index)
				}
				if a := mustProp(t, n.Properties, "a"); !a.Unique {
					t.Error("a should be unique")
				}
				if b := mustProp(t, n.Properties, "b"); b.Unique || !b.Index {
					t.Errorf("b unique %v index %v", b.Unique, b.Index)
				}
			},
		},
		{
			name: "range and check, both forms",
			src:  "node A {\n age: I32? @range(0..150)\n score: F64 @range(-1.5..)\n n: U64\n email: String @check(\"^[^@]+@\")\n code: String\n @range(n, ..100)\n @check(code, \"^[A-Z]{3}$\")\n}",
			check: func(t *testing.T, c *Catalog) {
				n := mustNode(t, c, "A")
				for name, want := range map[string]string{"age": "0..150", "score": "-1.5..", "n": "..100"} {
					p := mustProp(t, n.Properties, name)
					if p.Range == nil || p.Range.String() != want {
						t.Errorf("%s range = %v, want %s", name, p.Range, want)
					}
				}
				if r := mustProp(t, n.Properties, "score").Range; *r.Min != -1.5 || r.Max != nil {
					t.Errorf("score bounds = %v %v", r.Min, r.Max)
				}
				email, code := mustProp(t, n.Properties, "email"), mustProp(t, n.Properties, "code")
				if email.Check == nil || email.Check.Pattern != "^[^@]+@" || !email.Check.Match("a@b") || email.Check.Match("ab") {
					t.Errorf("email check = %+v", email.Check)
				}
				if code.Check == nil || !code.Check.Match("ABC") || code.Check.Match("AB") {
					t.Errorf("code check = %+v", code.Check)
				}
			},
		},
		{
			name: "embed and metadata",
			src:  "node Doc @description(\"a document\") @instruction(\"cite it\") @rename_from(\"Paper\") @custom(1, mode=\"x\") {\n body: String? @description(\"text\") @rename_from(\"text\")\n vec: Vector(4)? @embed(\"body\", model=\"openai/te3\")\n v2: Vector(2) @embed(\"body\") @whatever\n}",
			check: func(t *testing.T, c *Catalog) {
				n := mustNode(t, c, "Doc")
				if n.Description() != "a document" || n.Annotations.Text("instruction") != "cite it" || n.Annotations.Text("rename_from") != "Paper" {
					t.Errorf("type annotations = %v", n.Annotations)
				}
				custom, ok := n.Annotations.Get("custom")
				if !ok || custom.String() != `@custom(1, mode="x")` {
					t.Errorf("unknown annotation not kept verbatim: %v", custom)
				}
				vec := mustProp(t, n.Properties, "vec")
				if vec.Embed == nil || *vec.Embed != (Embed{Source: "body", Model: "openai/te3"}) {
					t.Errorf("embed = %+v", vec.Embed)
				}
				if v2 := mustProp(t, n.Properties, "v2"); v2.Embed == nil || v2.Embed.Model != "" {
					t.Errorf("embed = %+v", v2.Embed)
				} else if _, ok := v2.Annotations.Get("whatever"); !ok {
					t.Error("unknown property annotation not kept")
				}
				body := mustProp(t, n.Properties, "body")
				if body.Annotations.Text("description") != "text" || body.Annotations.Text("rename_from") != "text" {
					t.Errorf("property annotations = %v", body.Annotations)
				}
			},
		},
		{
			name: "edges",
			src: `node P { n: String @key }
node C { n: String @key }
edge Knows: P -> P
edge WorksAt: P -> C @card(0..1) @description("job") { since: Date? title: String @index }
edge Owns: P -> C @card(1..) { }
edge Leads: P -> C @card(2..*) {
  weight: F64
  @unique(weight)
}`,
			check: func(t *testing.T, c *Catalog) {
				want := map[string]struct{ from, to, card string }{
					"Knows": {"P", "P", "0..*"}, "WorksAt": {"P", "C", "0..1"},
					"Owns": {"P", "C", "1..*"}, "Leads": {"P", "C", "2..*"},
				}
				for name, w := range want {
					e, ok := c.Edge(name)
					if !ok {
						t.Fatalf("edge %s missing", name)
					}
					if e.From != w.from || e.To != w.to || e.Card.String() != w.card {
						t.Errorf("%s = %s -> %s %s, want %s -> %s %s", name, e.From, e.To, e.Card, w.from, w.to, w.card)
					}
				}
				e, _ := c.Edge("WorksAt")
				if e.Card != (Card{Min: 0, Max: 1}) || e.Description() != "job" || !reflect.DeepEqual(propNames(e.Properties), []string{"since", "title"}) {
					t.Errorf("WorksAt = %+v", e)
				}
				if _, ok := e.Annotations.Get("card"); ok {
					t.Error("@card should not stay in Annotations")
				}
				if title, _ := e.Property("title"); !title.Index || title.Owner != "WorksAt" {
					t.Errorf("title = %+v", title)
				}
				if l, _ := c.Edge("Leads"); !reflect.DeepEqual(l.Unique, [][]string{{"weight"}}) || l.Card.Max != -1 {
					t.Errorf("Leads = %+v", l)
				}
				for _, name := range []string{"knows", "KNOWS", "worksAt"} {
					if _, ok := c.Edge(name); !ok {
						t.Errorf("Edge(%q) not found; edge lookup is case-insensitive", name)
					}
				}
				if _, ok := c.Node("p"); ok {
					t.Error("Node lookup should be exact")
				}
				if _, ok := c.Edge("Nope"); ok {
					t.Error("Edge(Nope) found")
				}
			},
		},
		{
			name: "interfaces",
			src: `node Engineer implements Named, Contact {
  email: String @description("work mail")
  level: I32?
  @index(level)
}
interface Named { name: String @key @description("n") }
interface Contact {
  email: String @unique
  name: String
  phone: String? @check("^[0-9+ ]+$")
}`,
			check: func(t *testing.T, c *Catalog) {
				n := mustNode(t, c, "Engineer")
				if !reflect.DeepEqual(n.Implements, []string{"Named", "Contact"}) {
					t.Errorf("Implements = %v", n.Implements)
				}
				if got := propNames(n.Properties); !reflect.DeepEqual(got, []string{"name", "email", "phone", "level"}) {
					t.Errorf("column order = %v, want inherited first in implements order", got)
				}
				name, email, phone, level := n.Properties[0], n.Properties[1], n.Properties[2], n.Properties[3]
				if name.Inherited != "Named" || name.Owner != "Engineer" || !name.Key || name.Annotations.Text("description") != "n" {
					t.Errorf("name = %+v", name)
				}
				if !reflect.DeepEqual(n.Key, []string{"name"}) {
					t.Errorf("Key = %v, want the interface's @key", n.Key)
				}
				if email.Inherited != "Contact" || !email.Unique || email.Annotations.Text("description") != "work mail" {
					t.Errorf("email = %+v (redeclared: keeps the interface's @unique and adds the node's annotations)", email)
				}
				if email.Pos.Line != 2 {
					t.Errorf("redeclared property position = %v, want the node's line", email.Pos)
				}
				if phone.Check == nil || !phone.Check.Match("+1 555") {
					t.Errorf("phone check not inherited: %+v", phone.Check)
				}
				if level.Inherited != "" || !level.Index {
					t.Errorf("level = %+v", level)
				}
				named, ok := c.Interface("Named")
				if !ok || len(named.Properties) != 1 || named.Properties[0].Owner != "Named" {
					t.Errorf("interface Named = %+v", named)
				}
				if len(c.Interfaces) != 2 || c.Interfaces[0].Name != "Contact" {
					t.Errorf("interfaces not sorted: %v", c.Interfaces)
				}
			},
		},
		{
			name: "inherited key repeated by the node",
			src:  "interface I { x: I32 @key @range(0..1) }\nnode A implements I { x: I32 @key }",
			check: func(t *testing.T, c *Catalog) {
				if n := mustNode(t, c, "A"); !reflect.DeepEqual(n.Key, []string{"x"}) {
					t.Errorf("Key = %v", n.Key)
				}
			},
		},
		{
			name: "node overrides an inherited range and check",
			src:  "interface I { x: I32 @range(0..1)\n s: String @check(\"a\") }\nnode A implements I { x: I32 @range(0..2) }\nnode B implements I { x: I32\n @range(x, 5..6)\n @check(s, \"b\") }",
			check: func(t *testing.T, c *Catalog) {
				for node, want := range map[string]string{"A": "0..2", "B": "5..6"} {
					if x := mustProp(t, mustNode(t, c, node).Properties, "x"); x.Range.String() != want {
						t.Errorf("%s.x range = %s, want %s", node, x.Range, want)
					}
				}
				if s := mustProp(t, mustNode(t, c, "B").Properties, "s"); s.Check.Pattern != "b" {
					t.Errorf("B.s check = %q", s.Check.Pattern)
				}
				if s := mustProp(t, mustNode(t, c, "A").Properties, "s"); s.Check.Pattern != "a" {
					t.Errorf("A.s check = %q", s.Check.Pattern)
				}
			},
		},
		{
			name: "sorted, forward references, empty",
			src:  "edge Z: B -> A\nnode B {}\nnode A {}\nedge M: A -> B",
			check: func(t *testing.T, c *Catalog) {
				if c.Nodes[0].Name != "A" || c.Nodes[1].Name != "B" || c.Edges[0].Name != "M" || c.Edges[1].Name != "Z" {
					t.Errorf("not sorted: %v %v", c.Nodes, c.Edges)
				}
			},
		},
		{
			name: "comments everywhere",
			src:  "// a\nnode /* b */ A /* c */ { // d\n x /* e */ : /* f */ String /* g */ ? // h\n}\n/* end */",
			check: func(t *testing.T, c *Catalog) {
				if p := mustProp(t, mustNode(t, c, "A").Properties, "x"); !p.Nullable || p.Type.Kind != KindString {
					t.Errorf("x = %+v", p)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := mustCompile(t, tc.src)
			if c.Source != tc.src {
				t.Error("Source not kept")
			}
			tc.check(t, c)
			// The canonical text must compile to the same identity.
			c2 := mustCompile(t, c.Canonical())
			if c2.Identity != c.Identity {
				t.Errorf("canonical form does not round-trip:\n%s\n---\n%s", c.Canonical(), c2.Canonical())
			}
		})
	}
}

func TestCompileEmpty(t *testing.T) {
	for _, src := range []string{"", "  \n// nothing\n/* at all */"} {
		c := mustCompile(t, src)
		if len(c.Nodes)+len(c.Edges)+len(c.Interfaces) != 0 || c.Identity == "" {
			t.Errorf("empty schema = %+v", c)
		}
	}
}

func TestIdentity(t *testing.T) {
	base := `node Person { name: String @key
  age: I32? }
node Company { name: String @key }
edge WorksAt: Person -> Company @card(0..1) { since: Date? }`
	id := mustCompile(t, base).Identity
	if len(id) != 64 || strings.Trim(id, "0123456789abcdef") != "" {
		t.Fatalf("identity %q is not sha256 hex", id)
	}
	same := []struct{ name, src string }{
		{"whitespace", strings.ReplaceAll(strings.ReplaceAll(base, "\n", "\n\n\t "), " {", "   {")},
		{"comments", "// header\n" + strings.ReplaceAll(base, "@key", "@key /* the key */") + "\n// trailer"},
		{"declaration order", `edge WorksAt: Person -> Company @card(0..1) { since: Date? }
node Company { name: String @key }
node Person { name: String @key age: I32? }`},
		{"body form of the key", "node Person { name: String\n age: I32?\n @key(name) }\nnode Company { name: String @key }\nedge WorksAt: Person -> Company @card(0..1) { since: Date? }"},
		{"explicit default card", strings.Replace(base, "edge WorksAt: Person -> Company @card(0..1)", "edge WorksAt: Person -> Company @card(0..1)", 1)},
	}
	for _, tc := range same {
		t.Run("same/"+tc.name, func(t *testing.T) {
			if got := mustCompile(t, tc.src).Identity; got != id {
				t.Errorf("identity changed:\n%s", tc.src)
			}
		})
	}
	differ := []struct{ name, src string }{
		{"property type", strings.Replace(base, "age: I32?", "age: I64?", 1)},
		{"nullability", strings.Replace(base, "age: I32?", "age: I32", 1)},
		{"property added", strings.Replace(base, "age: I32?", "age: I32?\n city: String?", 1)},
		{"property order", "node Person { age: I32?\n name: String @key }\nnode Company { name: String @key }\nedge WorksAt: Person -> Company @card(0..1) { since: Date? }"},
		{"card", strings.Replace(base, "@card(0..1)", "@card(0..2)", 1)},
		{"annotation", strings.Replace(base, "age: I32?", "age: I32? @description(\"years\")", 1)},
		{"constraint", strings.Replace(base, "age: I32?", "age: I32? @index", 1)},
		{"edge endpoint", strings.Replace(base, "Person -> Company", "Person -> Person", 1)},
	}
	for _, tc := range differ {
		t.Run("differs/"+tc.name, func(t *testing.T) {
			if got := mustCompile(t, tc.src).Identity; got == id {
				t.Errorf("identity did not change:\n%s", tc.src)
			}
		})
	}
}
