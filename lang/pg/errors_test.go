package pg

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestCompileErrors covers every schema error: each case checks the
// position, the message and the hint (what to write instead).
func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		pos  string // "line:col"
		msg  string // substring of Msg
		hint string // substring of Hint
	}{
		// Lexical.
		{name: "unterminated block comment", src: "node A { x: String }\n/* open", pos: "2:1", msg: "unterminated block comment", hint: "*/"},
		{name: "unterminated string", src: "node A {\n  x: String @description(\"abc\n}", pos: "2:26", msg: "unterminated string", hint: "close the string"},
		{name: "semicolon", src: "node A { x: String; }", pos: "1:19", msg: "unexpected character ';'", hint: "no separator"},
		{name: "hash comment", src: "# hi\nnode A {}", pos: "1:1", msg: "unexpected character '#'", hint: "//"},
		{name: "single quote", src: "node A { x: String @description('x') }", pos: "1:33", msg: "unexpected character '\\''", hint: "double quotes"},
		{name: "non ascii", src: "node Café {}", pos: "1:9", msg: "non-ASCII", hint: "ASCII"},
		{name: "lone dash", src: "edge E: A - B", pos: "1:11", msg: "unexpected character '-'", hint: "->"},
		{name: "arrow as angle", src: "edge E: A > B", pos: "1:11", msg: "unexpected character '>'", hint: "->"},

		// Declarations.
		{name: "unknown keyword", src: "table A {}", pos: "1:1", msg: "expected a declaration", hint: "node Name"},
		{name: "capital keyword", src: "Node A {}", pos: "1:1", msg: "expected a declaration", hint: "write node"},
		{name: "stray close brace", src: "node A {}\n}", pos: "2:1", msg: "expected a declaration", hint: "extra }"},
		{name: "missing node name", src: "node {}", pos: "1:6", msg: "expected a node type name", hint: "uppercase"},
		{name: "missing brace", src: "node A x: String }", pos: "1:8", msg: `expected "{"`, hint: "implements"},
		{name: "eof in body", src: "node A {\n  x: String\n", pos: "3:1", msg: "unexpected end of file inside node A", hint: "close"},
		{name: "comma between props", src: "node A { x: String, y: I32 }", pos: "1:19", msg: "expected a property or a constraint", hint: "no separator"},
		{name: "lowercase type name", src: "node person {}", pos: "1:6", msg: `node name "person" must start with an uppercase letter`, hint: "write Person"},
		{name: "duplicate type", src: "node A {}\nnode A {}", pos: "2:6", msg: `duplicate name "A"`, hint: "already declared at 1:6"},
		{name: "interface and node same name", src: "interface A { x: String }\nnode A {}", pos: "2:6", msg: `duplicate name "A"`, hint: "interface A"},
		{name: "two edges same name", src: "node A {}\nedge E: A -> A\nedge E: A -> A", pos: "3:6", msg: `duplicate name "E"`, hint: "edge E"},
		{name: "edges differ in case", src: "node P {}\nedge Knows: P -> P\nedge KNOWS: P -> P", pos: "3:6", msg: "only in case", hint: "case-insensitively"},
		{name: "interface annotation", src: "interface I @description(\"x\") { x: String }", pos: "1:13", msg: "interfaces take no annotations", hint: "properties"},
		{name: "interface body constraint", src: "interface I { x: String\n @unique(x) }", pos: "2:2", msg: "interfaces take no body constraints", hint: "String @key"},
		{name: "implements separator", src: "interface I {}\ninterface J {}\nnode A implements I J {}", pos: "3:21", msg: `expected "{"`, hint: "commas"},

		// Properties and types.
		{name: "missing colon", src: "node A { x String }", pos: "1:12", msg: `expected ":" after property name "x"`, hint: "x: Type"},
		{name: "unknown type typo", src: "node A {\n  name: Strng\n}", pos: "2:9", msg: `unknown type "Strng"`, hint: "did you mean String?"},
		{name: "lowercase type", src: "node A { n: string }", pos: "1:13", msg: `unknown type "string"`, hint: "did you mean String?"},
		{name: "alias type", src: "node A { n: int }", pos: "1:13", msg: `unknown type "int"`, hint: "did you mean I64?"},
		{name: "node as type", src: "node A {}\nnode B { a: A }", pos: "2:13", msg: `unknown type "A"`, hint: "link nodes with an edge"},
		{name: "unknown type far", src: "node A { n: Zzzzzzzz }", pos: "1:13", msg: `unknown type "Zzzzzzzz"`, hint: "property types are"},
		{name: "missing type", src: "node A { n: }", pos: "1:13", msg: "expected a property type", hint: "String, I64"},
		{name: "uppercase property", src: "node A { Name: String }", pos: "1:10", msg: `property name "Name" must start with a lowercase letter`, hint: "write name"},
		{name: "duplicate property", src: "node A {\n  x: String\n  x: I32\n}", pos: "3:3", msg: `duplicate property "x" in A`, hint: "already declared at 2:3"},
		{name: "reserved id", src: "node A { id: String }", pos: "1:10", msg: `property name "id" is reserved`, hint: "id column"},
		{name: "reserved src on edge", src: "node A {}\nedge E: A -> A { src: String }", pos: "2:18", msg: `property name "src" is reserved`, hint: "src and dst"},
		{name: "reserved system column", src: "node A { _rowid: I64 }", pos: "1:10", msg: `property name "_rowid" is reserved`, hint: "storage layer"},
		{name: "double nullable", src: "node A { x: String?? }", pos: "1:20", msg: "duplicate ?", hint: "single ?"},
		{name: "nullable list element", src: "node A { x: [String?] }", pos: "1:20", msg: "unexpected ? inside a list type", hint: "[T]?"},
		{name: "unclosed list", src: "node A { x: [String }", pos: "1:21", msg: `expected "]"`, hint: "[String]"},
		{name: "nested list", src: "node A { x: [[String]] }", pos: "1:14", msg: "nested lists are not supported", hint: "base scalars"},
		{name: "list of blob", src: "node A { x: [Blob] }", pos: "1:14", msg: "lists of Blob are not supported", hint: "base scalars"},
		{name: "list of vector", src: "node A { x: [Vector(3)] }", pos: "1:14", msg: "lists of Vector are not supported", hint: "base scalars"},
		{name: "list of enum", src: "node A { x: [enum(a, b)] }", pos: "1:14", msg: "lists of enum are not supported", hint: "base scalars"},
		{name: "vector without dim", src: "node A { v: Vector }", pos: "1:20", msg: `expected "(" after Vector`, hint: "Vector(384)"},
		{name: "vector zero", src: "node A { v: Vector(0) }", pos: "1:20", msg: "invalid vector dimension 0", hint: "1 to 2147483647"},
		{name: "vector too big", src: "node A { v: Vector(2147483648) }", pos: "1:20", msg: "invalid vector dimension 2147483648", hint: "1 to 2147483647"},
		{name: "vector fractional", src: "node A { v: Vector(1.5) }", pos: "1:20", msg: "invalid vector dimension 1.5", hint: "whole number"},
		{name: "vector ident dim", src: "node A { v: Vector(n) }", pos: "1:20", msg: "expected the vector dimension", hint: "Vector(384)"},
		{name: "enum empty", src: "node A { s: enum() }", pos: "1:18", msg: "expected an enum value", hint: "in-review"},
		{name: "enum bad separator", src: "node A { s: enum(a b) }", pos: "1:20", msg: `expected "," or ")" in enum`, hint: "enum(a, b)"},
		{name: "enum duplicate", src: "node A { s: enum(a, b, a) }", pos: "1:24", msg: `duplicate enum value "a"`, hint: "once"},

		// Property annotations and short-form constraints.
		{name: "annotation space", src: "node A { x: String @ key }", pos: "1:22", msg: "expected an annotation name after @", hint: "right after @"},
		{name: "key with args on property", src: "node A { x: String @key() }", pos: "1:20", msg: "@key on property x takes no arguments", hint: "@key(a, b) in the body"},
		{name: "duplicate short key", src: "node A { x: String @key @key }", pos: "1:25", msg: "duplicate @key on property x", hint: "once"},
		{name: "two short keys", src: "node A {\n  x: String @key\n  y: String @key\n}", pos: "3:13", msg: "A has more than one @key", hint: "@key(x, y)"},
		{name: "key on nullable", src: "node A { x: String? @key }", pos: "1:21", msg: "@key property x of A is nullable", hint: "without ?"},
		{name: "key on list", src: "node A { x: [String] @key }", pos: "1:22", msg: "@key property x is [String], which cannot be a key", hint: "String, integer"},
		{name: "key on blob", src: "node A { x: Blob @key }", pos: "1:18", msg: "@key property x is Blob", hint: "String, integer"},
		{name: "key on vector", src: "node A { x: Vector(2) @key }", pos: "1:23", msg: "@key property x is Vector(2)", hint: "String, integer"},
		{name: "key on edge property", src: "node A {}\nedge E: A -> A { x: String @key }", pos: "2:28", msg: "@key on edge property x", hint: "@unique(x)"},
		{name: "unique on blob", src: "node A { b: Blob @unique }", pos: "1:10", msg: "@unique on Blob property b of A is not supported", hint: "remove"},
		{name: "range on string", src: "node A { x: String @range(0..5) }", pos: "1:27", msg: "@range on String property x", hint: "@check"},
		{name: "range no bounds", src: "node A { x: I32 @range(..) }", pos: "1:24", msg: "@range on x has no bounds", hint: "0.."},
		{name: "range inverted", src: "node A { x: F64 @range(10..1) }", pos: "1:24", msg: "lower bound 10 is greater than upper bound 1", hint: "@range(1..10)"},
		{name: "range star", src: "node A { x: I32 @range(0..*) }", pos: "1:24", msg: "@range takes numbers, found *", hint: "empty"},
		{name: "range not a range", src: "node A { x: I32 @range(5) }", pos: "1:17", msg: "@range on property x takes one range", hint: "@range(0..150)"},
		{name: "duplicate range", src: "node A { x: I32 @range(0..1) @range(0..2) }", pos: "1:30", msg: "duplicate @range on property x", hint: "once"},
		{name: "check on int", src: "node A { x: I32 @check(\"a\") }", pos: "1:24", msg: "@check on I32 property x", hint: "@range"},
		{name: "check bad regex", src: "node A { x: String @check(\"(\") }", pos: "1:27", msg: "invalid @check pattern", hint: "RE2"},
		{name: "check not a string", src: "node A { x: String @check(5) }", pos: "1:20", msg: "@check on property x takes one string", hint: `@check("^[a-z]+$")`},
		{name: "embed on string", src: "node A { x: String @embed(\"y\") }", pos: "1:20", msg: "@embed on String property x", hint: "Vector(N)"},
		{name: "embed without source", src: "node A { v: Vector(2) @embed }", pos: "1:23", msg: "@embed needs the source property", hint: `@embed("source_prop")`},
		{name: "embed bad arg", src: "node A { v: Vector(2) @embed(\"t\", size=3) t: String }", pos: "1:35", msg: "unexpected @embed argument", hint: "model="},
		{name: "embed unknown source", src: "node A {\n  text: String\n  v: Vector(2) @embed(\"txt\")\n}", pos: "3:3", msg: `@embed on v: A has no property "txt"`, hint: "did you mean text?"},
		{name: "embed non-string source", src: "node A {\n  n: I32\n  v: Vector(2) @embed(\"n\")\n}", pos: "3:3", msg: "source n is I32, not String", hint: "String"},
		{name: "card on property", src: "node A { x: String @card(0..1) }", pos: "1:20", msg: "@card on property x", hint: "edge declaration"},
		{name: "description no arg", src: "node A { x: String @description }", pos: "1:20", msg: "@description takes one string", hint: `@description("what this is")`},
		{name: "description twice", src: "node A @description(\"a\") @description(\"b\") {}", pos: "1:26", msg: "duplicate @description", hint: "once"},
		{name: "rename_from number", src: "node A @rename_from(3) {}", pos: "1:8", msg: "@rename_from takes one string", hint: `@rename_from("OldName")`},
		{name: "bad annotation arg", src: "node A @note(:) {}", pos: "1:14", msg: "expected an annotation argument", hint: "ranges"},
		{name: "bad annotation separator", src: "node A @note(a b) {}", pos: "1:16", msg: `expected "," or ")" in @note(...)`, hint: "commas"},

		// Body constraints.
		{name: "body key unknown prop", src: "node A {\n  name: String\n  @key(nmae)\n}", pos: "3:8", msg: `@key: A has no property "nmae"`, hint: "did you mean name?"},
		{name: "body key no args", src: "node A {\n @key\n x: String }", pos: "2:2", msg: "@key in a body needs property names", hint: "@key(x)"},
		{name: "body key string arg", src: "node A {\n @key(\"x\")\n x: String }", pos: "2:7", msg: "@key expects a property name", hint: "@key(x)"},
		{name: "body key repeats prop", src: "node A { x: String\n @key(x, x) }", pos: "2:10", msg: "@key names x twice", hint: "once"},
		{name: "two body keys", src: "node A { x: String\n y: String\n @key(x)\n @key(y) }", pos: "4:2", msg: "A has more than one @key", hint: "x is already the key"},
		{name: "short and body key", src: "node A { x: String @key\n y: String\n @key(x, y) }", pos: "3:2", msg: "A has more than one @key", hint: "at most one"},
		{name: "composite key nullable", src: "node A { x: String\n y: I32?\n @key(x, y) }", pos: "3:2", msg: "@key property y of A is nullable", hint: "without ?"},
		{name: "body key on edge", src: "node A {}\nedge E: A -> A {\n x: String\n @key(x) }", pos: "4:2", msg: "@key on edge E", hint: "@unique"},
		{name: "unknown constraint", src: "node A { x: String\n @uniqe(x) }", pos: "2:2", msg: "unknown constraint @uniqe in A body", hint: "did you mean unique?"},
		{name: "metadata in body", src: "node A {\n @description(\"x\")\n x: String }", pos: "2:2", msg: "unknown constraint @description", hint: "header"},
		{name: "body range missing range", src: "node A { x: I32\n @range(x) }", pos: "2:2", msg: "@range in a body takes a property and a range", hint: "@range(prop, lo..hi)"},
		{name: "body range wrong arg", src: "node A { x: I32\n @range(x, 5) }", pos: "2:12", msg: "@range expects a range lo..hi, found number 5", hint: "@range(x, 0..100)"},
		{name: "body range on string", src: "node A { s: String\n @range(s, 1..2) }", pos: "2:12", msg: "@range on String property s", hint: "@check"},
		{name: "body range twice", src: "node A { x: I32 @range(0..1)\n @range(x, 0..1) }", pos: "2:2", msg: "duplicate @range on x", hint: "one @range"},
		{name: "body check wrong arg", src: "node A { s: String\n @check(s, 3) }", pos: "2:12", msg: "@check expects a \"pattern\" string", hint: `@check(s, "^[a-z]+$")`},
		{name: "body check bad regex", src: "node A { s: String\n @check(s, \"[\") }", pos: "2:12", msg: "invalid @check pattern", hint: "RE2"},
		{name: "body check twice", src: "node A { s: String @check(\"a\")\n @check(s, \"b\") }", pos: "2:2", msg: "duplicate @check on s", hint: "combine"},
		{name: "constraint on header", src: "node A @key(x) { x: String }", pos: "1:8", msg: "@key is a constraint and goes in the body", hint: "@key(name)"},
		{name: "embed on header", src: "node A @embed(\"x\") {}", pos: "1:8", msg: "@embed goes on a Vector property", hint: "Vector(N)"},
		{name: "card on node", src: "node A @card(0..1) {}", pos: "1:8", msg: "@card on node A", hint: "edge E"},

		// Interfaces.
		{name: "unknown interface", src: "interface Named { name: String }\nnode A implements Nmaed {}", pos: "2:19", msg: `unknown interface "Nmaed"`, hint: "did you mean Named?"},
		{name: "implements a node", src: "node B {}\nnode A implements B {}", pos: "2:19", msg: `unknown interface "B"`, hint: "B is a node"},
		{name: "implements twice", src: "interface I {}\nnode A implements I, I {}", pos: "2:22", msg: "A implements I twice", hint: "once"},
		{name: "redeclared with other type", src: "interface I { x: String }\nnode A implements I {\n  x: I32\n}", pos: "3:3", msg: "property x: I32 conflicts with interface I, which declares x: String", hint: "write x: String"},
		{name: "redeclared with other nullability", src: "interface I { x: String }\nnode A implements I {\n  x: String?\n}", pos: "3:3", msg: "conflicts with interface I", hint: "write x: String"},
		{name: "two interfaces conflict", src: "interface I { x: String }\ninterface J { x: I64 }\nnode A implements I, J {}", pos: "3:22", msg: "interface J declares x: I64, which conflicts with x: String from interface I", hint: "agree"},
		{name: "own range twice on inherited property", src: "interface I { x: I32 }\nnode A implements I { x: I32 @range(0..1)\n @range(x, 0..2) }", pos: "3:2", msg: "duplicate @range on x", hint: "one @range"},
		{name: "own check twice on inherited property", src: "interface I { s: String }\nnode A implements I {\n @check(s, \"a\")\n @check(s, \"b\") }", pos: "4:2", msg: "duplicate @check on s", hint: "combine"},
		{name: "inherited key and own key", src: "interface I { x: String @key }\nnode A implements I {\n  y: String @key\n}", pos: "3:13", msg: "A has more than one @key", hint: "at most one"},
		{name: "interface key nullable", src: "interface I { x: String? @key }", pos: "1:26", msg: "@key property x of I is nullable", hint: "without ?"},

		// Edges.
		{name: "edge missing colon", src: "node A {}\nedge E A -> A", pos: "2:8", msg: `expected ":" after the edge name`, hint: "edge E: From -> To"},
		{name: "edge missing arrow", src: "node A {}\nedge E: A A", pos: "2:11", msg: `expected "->" between the edge endpoints`, hint: "From -> To"},
		{name: "edge unknown source", src: "node Person {}\nedge E: Persn -> Person", pos: "2:9", msg: `edge E: unknown node type "Persn"`, hint: "did you mean Person?"},
		{name: "edge unknown target", src: "node Person {}\nedge E: Person -> Zzzzzzzz", pos: "2:19", msg: `edge E: unknown node type "Zzzzzzzz"`, hint: "declare node Zzzzzzzz"},
		{name: "edge to interface", src: "interface I {}\nnode A {}\nedge E: A -> I", pos: "3:14", msg: `unknown node type "I"`, hint: "I is an interface"},
		{name: "edge to edge", src: "node A {}\nedge F: A -> A\nedge E: A -> F", pos: "3:14", msg: `unknown node type "F"`, hint: "F is an edge type"},
		{name: "card inverted", src: "node A {}\nedge E: A -> A @card(3..1)", pos: "2:22", msg: "@card minimum 3 is greater than maximum 1", hint: "@card(1..3)"},
		{name: "card zero max", src: "node A {}\nedge E: A -> A @card(0..0)", pos: "2:22", msg: "@card maximum 0 is not a whole number from 1", hint: "@card(0..1)"},
		{name: "card negative", src: "node A {}\nedge E: A -> A @card(-1..2)", pos: "2:22", msg: "@card minimum -1", hint: "@card(0..1)"},
		{name: "card fraction", src: "node A {}\nedge E: A -> A @card(0..1.5)", pos: "2:22", msg: "@card maximum 1.5", hint: "@card(0..1)"},
		{name: "card no min", src: "node A {}\nedge E: A -> A @card(..2)", pos: "2:22", msg: "@card needs a minimum", hint: "@card(1..)"},
		{name: "card not a range", src: "node A {}\nedge E: A -> A @card(1)", pos: "2:16", msg: "@card takes one range", hint: "@card(0..*)"},
		{name: "card twice", src: "node A {}\nedge E: A -> A @card(0..1) @card(0..2)", pos: "2:28", msg: "duplicate @card on edge E", hint: "once"},
		{name: "edge unique unknown prop", src: "node A {}\nedge E: A -> A {\n  note: String?\n  @unique(nte)\n}", pos: "4:11", msg: `@unique: E has no property "nte"`, hint: "did you mean note?"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Compile(tc.src)
			if err == nil {
				t.Fatalf("Compile succeeded; want error %q\ncanonical:\n%s", tc.msg, c.Canonical())
			}
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is %T, want *Error", err, err)
			}
			if !errors.Is(err, ErrInvalidSchema) {
				t.Errorf("errors.Is(err, ErrInvalidSchema) = false")
			}
			if got := fmt.Sprintf("%d:%d", pe.Line, pe.Col); got != tc.pos {
				t.Errorf("position = %s, want %s (error: %v)", got, tc.pos, err)
			}
			if !strings.Contains(pe.Msg, tc.msg) {
				t.Errorf("Msg = %q, want it to contain %q", pe.Msg, tc.msg)
			}
			if !strings.Contains(pe.Hint, tc.hint) {
				t.Errorf("Hint = %q, want it to contain %q", pe.Hint, tc.hint)
			}
			if want := fmt.Sprintf("schema.pg:%d:%d: %s; %s", pe.Line, pe.Col, pe.Msg, pe.Hint); err.Error() != want {
				t.Errorf("Error() = %q, want %q", err.Error(), want)
			}
		})
	}
}

func TestErrorFormat(t *testing.T) {
	_, err := Compile("node A {\n  name: Strng\n}")
	if got, want := err.Error(), `schema.pg:2:9: unknown type "Strng"; did you mean String?`; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	var pe *Error
	errors.As(err, &pe)
	pe.File = "examples/x.pg"
	if got := err.Error(); !strings.HasPrefix(got, "examples/x.pg:2:9: ") {
		t.Fatalf("Error() with File = %q", got)
	}
	if _, err := CompileFile("dir/s.pg", "node a {}"); err == nil || !strings.HasPrefix(err.Error(), "dir/s.pg:1:6: ") {
		t.Fatalf("CompileFile error = %v", err)
	}
	noHint := &Error{Line: 1, Col: 2, Msg: "m"}
	if got := noHint.Error(); got != "schema.pg:1:2: m" {
		t.Fatalf("Error() without hint = %q", got)
	}
}
