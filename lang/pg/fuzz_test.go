package pg

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse checks, for any input, that Parse and Compile never panic, that
// every error is an *Error pointing inside the source with a message, and
// that every accepted schema's canonical form compiles to the same identity.
//
//	go test ./lang/pg -run '^$' -fuzz FuzzParse -fuzztime 60s
func FuzzParse(f *testing.F) {
	if src, err := os.ReadFile(filepath.Join("..", "..", "examples", "social.pg")); err == nil {
		f.Add(string(src))
	}
	for _, s := range []string{
		"",
		"node A { x: String @key }",
		"interface I { x: I32 @key @range(0..1) }\nnode A implements I { x: I32 @key }",
		"node A { s: enum(a, b-c, 1x)? v: Vector(3) l: [Date]? @unique }",
		"node P { n: String @key }\nedge E: P -> P @card(1..) @d(k=\"v\") { w: F64 @range(-1.5..) @index(w) }",
		"node A { e: String @check(\"^[a-z]+$\") @description(\"q\\\"\\\\\") }\n/* c */ // d",
		"node A {\n @key(x)\n x: String\n y: I32 @range(..5) }",
		"node A { x: String } edge E: A -> A { }",
		"interface I { x: I32 @range(0..1) @description(\"i\") s: String @check(\"a\") }\nnode A implements I { x: I32 @range(0..2) @description(\"a\") }\nnode B implements I { x: I32 @range(x, 5..6) @check(s, \"b\") }",
		"node A { x: [[String]] }",
		"edge E: A - B",
		"node A { x: Vector(99999999999) }",
		"node A { x: String @a(@b) }",
		"/*",
		"\"",
		"node A { x: enum(",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if _, err := Parse(src); err != nil {
			checkSchemaError(t, src, err)
		}
		c, err := Compile(src)
		if err != nil {
			checkSchemaError(t, src, err)
			return
		}
		for _, n := range c.Nodes {
			_ = n.ArrowSchema()
		}
		for _, e := range c.Edges {
			_ = e.ArrowSchema()
		}
		c2, err := Compile(c.Canonical())
		if err != nil {
			t.Fatalf("canonical form does not compile: %v\nsource:\n%q\ncanonical:\n%s", err, src, c.Canonical())
		}
		if c2.Identity != c.Identity {
			t.Fatalf("canonical form changes the identity\nsource:\n%q\ncanonical:\n%s\nagain:\n%s", src, c.Canonical(), c2.Canonical())
		}
	})
}

func checkSchemaError(t *testing.T, src string, err error) {
	t.Helper()
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("error %v is %T, want *Error", err, err)
	}
	lines := strings.Count(src, "\n") + 1
	if pe.Line < 1 || pe.Line > lines || pe.Col < 1 || pe.Msg == "" {
		t.Fatalf("error %q has a bad position or no message (source has %d lines)", err, lines)
	}
}
