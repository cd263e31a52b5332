package pg

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse checks, for any input, that Parse and Compile never panic, that
// every error is an *Error pointing inside the source with a message, and
// that every accepted schema's canonical form compiles to the same identity.
// It is seeded with every schema of the repository (.pg files and the pg
// blocks of docs/*.md); make test runs it for a few seconds, make soak
// longer:
//
//	go test ./lang/pg -run '^$' -fuzz FuzzParse -fuzztime 60s
func FuzzParse(f *testing.F) {
	for _, src := range repoSchemas(f) {
		f.Add(src)
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

// repoSchemas returns every .pg file of the repository and every pg block
// of the docs.
func repoSchemas(tb testing.TB) []string {
	tb.Helper()
	root := filepath.Join("..", "..")
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "test-results") {
			return filepath.SkipDir
		}
		if d.IsDir() || filepath.Ext(path) != ".pg" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out = append(out, string(b))
		return nil
	})
	if err != nil {
		tb.Fatalf("walk the repository: %v", err)
	}
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	for _, path := range docs {
		raw, err := os.ReadFile(path)
		if err != nil {
			tb.Fatal(err)
		}
		parts := strings.Split(string(raw), "```")
		for i := 1; i < len(parts); i += 2 {
			if info, body, _ := strings.Cut(parts[i], "\n"); info == "pg" {
				out = append(out, body)
			}
		}
	}
	if len(out) < 2 {
		tb.Fatalf("found %d schemas in the repository", len(out))
	}
	return out
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
