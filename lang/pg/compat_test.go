package pg

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// The rules of this file follow the original system's schema language
// (issue 19): what it accepts compiles here, what it refuses is refused.

func TestCompatEdgeEndpointConstraints(t *testing.T) {
	src := "node S { slug: String @key }\n" +
		"edge Correlates: S -> S {\n  @unique(src, dst)\n}\n" +
		"edge Supersedes: S -> S {\n  note: String?\n  @unique(src, dst, note)\n  @index(dst)\n}\n"
	c, err := Compile(src)
	if err != nil {
		t.Fatal(err)
	}
	e, _ := c.Edge("Correlates")
	if !reflect.DeepEqual(e.Unique, [][]string{{"src", "dst"}}) || len(e.Properties) != 0 {
		t.Fatalf("Correlates unique %v, properties %d", e.Unique, len(e.Properties))
	}
	s, _ := c.Edge("Supersedes")
	if !reflect.DeepEqual(s.Unique, [][]string{{"src", "dst", "note"}}) || !reflect.DeepEqual(s.Index, [][]string{{"dst"}}) {
		t.Fatalf("Supersedes unique %v index %v", s.Unique, s.Index)
	}
	if p, _ := s.Property("note"); p.Unique || p.Index {
		t.Fatalf("note flags unique %v index %v; a multi-column group sets neither", p.Unique, p.Index)
	}
	// The canonical text keeps a body holding only constraints.
	if !strings.Contains(c.Canonical(), "edge Correlates: S -> S @card(0..*) {\n  @unique(src, dst)\n}") {
		t.Fatalf("canonical lost the endpoint constraint:\n%s", c.Canonical())
	}
	again, err := Compile(c.Canonical())
	if err != nil || again.Identity != c.Identity {
		t.Fatalf("canonical round trip: %v", err)
	}
	without, _ := Compile("node S { slug: String @key }\nedge Correlates: S -> S\nedge Supersedes: S -> S {\n  note: String?\n  @unique(src, dst, note)\n  @index(dst)\n}\n")
	if without.Identity == c.Identity {
		t.Fatal("@unique(src, dst) does not change the identity")
	}

	for _, tc := range []struct{ src, pos, msg string }{
		{"node S { k: String @key\n @unique(src) }", "2:10", `S has no property "src"`}, // nodes have no src column
		{"node S { k: String @key }\nedge E: S -> S { @unique(src, nope) }", "2:31", `E has no property "nope"`},
		{"node S { k: String @key }\nedge E: S -> S { @unique(src, src) }", "2:31", "names src twice"},
		{"node S { k: String @key }\nedge E: S -> S { @key(src) }", "2:18", "@key on edge E"},
	} {
		_, err := Compile(tc.src)
		var pe *Error
		if !errors.As(err, &pe) || errPos(pe) != tc.pos || !strings.Contains(pe.Msg, tc.msg) {
			t.Errorf("%q: got %v, want %s %q", tc.src, err, tc.pos, tc.msg)
		}
	}
}

func TestCompatNodeAndEdgeShareAName(t *testing.T) {
	c, err := Compile("node Person { name: String @key }\nnode Tag { name: String @key }\n" +
		"node Tagged { note: String? }\nedge Tagged: Person -> Tag { weight: I32? }")
	if err != nil {
		t.Fatal(err)
	}
	n, okN := c.Node("Tagged")
	e, okE := c.Edge("Tagged")
	if !okN || !okE || n.Properties[0].Name != "note" || e.Properties[0].Name != "weight" || e.From != "Person" {
		t.Fatalf("node %v %v, edge %v %v", okN, n, okE, e)
	}
	again, err := Compile(c.Canonical())
	if err != nil || again.Identity != c.Identity {
		t.Fatalf("canonical round trip: %v\n%s", err, c.Canonical())
	}
	// An edge endpoint names a node type even when an edge shares its name.
	if _, err := Compile("node A { k: String @key }\nedge B: A -> A\nedge C: A -> B"); err == nil || !strings.Contains(err.Error(), `unknown node type "B"`) || !strings.Contains(err.Error(), "B is an edge type") {
		t.Fatalf("endpoint naming an edge: %v", err)
	}
}

func TestCompatEmbedSourceWithoutQuotes(t *testing.T) {
	bare, err := Compile("node D { body: String\n v: Vector(4)? @embed(body, model=\"m/x\") }")
	if err != nil {
		t.Fatal(err)
	}
	quoted, err := Compile("node D { body: String\n v: Vector(4)? @embed(\"body\", model=\"m/x\") }")
	if err != nil {
		t.Fatal(err)
	}
	d, _ := bare.Node("D")
	v, _ := d.Property("v")
	if v.Embed == nil || v.Embed.Source != "body" || v.Embed.Model != "m/x" {
		t.Fatalf("embed = %+v", v.Embed)
	}
	if _, err := Compile("node D { body: String\n v: Vector(4)? @embed(nope) }"); err == nil || !strings.Contains(err.Error(), `no property "nope"`) {
		t.Fatalf("unknown bare source: %v", err)
	}
	_ = quoted
}

// TestCompatRefusals: constructs the original refuses are refused, with a
// position and a hint; CompileAccepted (a schema a graph accepted before
// these rules) still takes them.
func TestCompatRefusals(t *testing.T) {
	for _, tc := range []struct{ name, src, pos, msg, hint string }{
		{"index on a blob", "node A { b: Blob? @index }", "1:10", "@index on Blob property b", "remove @index"},
		{"body index on a blob", "node A { b: Blob?\n @index(b) }", "1:10", "@index on Blob property b", "remove @index"},
		{"empty rename_from", "node A @rename_from(\"\") { x: I32 }", "1:21", "@rename_from needs a non-empty string", "give the text"},
		{"blank property rename_from", "node A { x: I32 @rename_from(\"  \") }", "1:30", "@rename_from needs a non-empty string", ""},
		{"empty description", "node A @description(\"\") { x: I32 }", "1:21", "@description needs a non-empty string", ""},
		{"unknown escape", "node A @description(\"a\\qb\") { x: I32 }", "1:23", `unknown escape \q`, `\\`},
		{"regex escape", "node A { e: String @check(\"^\\d+$\") }", "1:29", `unknown escape \d`, `"^\\d+$"`},
		{"instruction on a property", "node A { x: I32 @instruction(\"use it\") }", "1:17", "@instruction on property x", "node or edge type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile(tc.src)
			var pe *Error
			if !errors.As(err, &pe) || !errors.Is(err, ErrInvalidSchema) || errPos(pe) != tc.pos || !strings.Contains(pe.Msg, tc.msg) || !strings.Contains(pe.Hint, tc.hint) {
				t.Fatalf("got %v, want %s %q (hint %q)", err, tc.pos, tc.msg, tc.hint)
			}
			if _, err := CompileAccepted(tc.src); err != nil {
				t.Fatalf("CompileAccepted refused it: %v", err)
			}
		})
	}
	// The accepted form keeps an unknown escape as written, as before.
	c, err := CompileAccepted("node A { e: String @check(\"^\\d+$\") }")
	if err != nil {
		t.Fatal(err)
	}
	n, _ := c.Node("A")
	e, _ := n.Property("e")
	if e.Check.Pattern != `^\d+$` || !e.Check.Match("42") || e.Check.Match("x") {
		t.Fatalf("pattern %q", e.Check.Pattern)
	}
	// The doubled spelling is the same schema.
	d, err := Compile("node A { e: String @check(\"^\\\\d+$\") }")
	if err != nil || d.Identity != c.Identity {
		t.Fatalf("doubled backslash: %v", err)
	}
	// Instructions stay allowed on types.
	if _, err := Compile("node A @instruction(\"use it\") { x: I32 }\nedge E: A -> A @instruction(\"link\")"); err != nil {
		t.Fatal(err)
	}
}

func errPos(e *Error) string { return fmt.Sprintf("%d:%d", e.Line, e.Col) }
