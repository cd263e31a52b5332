package pg

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// genSchema writes a random schema from valid building blocks: interfaces
// (with short-form constraints and metadata), nodes that implement them and
// sometimes redeclare inherited properties, body constraints in both forms,
// and edges with cards and bodies. Declarations come back separately so the
// caller can reorder them.
func genSchema(r *rand.Rand) []string {
	scalars := []string{"String", "Bool", "I32", "I64", "U32", "U64", "F32", "F64", "Date", "DateTime"}
	numeric := map[string]bool{"I32": true, "I64": true, "U32": true, "U64": true, "F32": true, "F64": true}
	type prop struct{ name, typ string }
	var decls []string
	ifaceProps := map[string][]prop{}
	var ifaces []string
	for i := range r.IntN(3) {
		name := fmt.Sprintf("I%d", i)
		var b strings.Builder
		fmt.Fprintf(&b, "interface %s {\n", name)
		for j := range 1 + r.IntN(3) {
			p := prop{fmt.Sprintf("i%d_%d", i, j), scalars[r.IntN(len(scalars))]}
			ifaceProps[name] = append(ifaceProps[name], p)
			fmt.Fprintf(&b, "  %s: %s", p.name, p.typ)
			if j == 0 && r.IntN(4) == 0 {
				b.WriteString(" @key") // may clash with a node's own key: an error
			}
			if r.IntN(3) == 0 {
				b.WriteString(" @index")
			}
			if r.IntN(4) == 0 {
				b.WriteString(" @unique")
			}
			if numeric[p.typ] && r.IntN(3) == 0 {
				fmt.Fprintf(&b, " @range(%d..%d)", r.IntN(5), 5+r.IntN(5))
			}
			if p.typ == "String" && r.IntN(3) == 0 {
				b.WriteString(` @check("^[a-z]+$")`)
			}
			if r.IntN(3) == 0 {
				fmt.Fprintf(&b, ` @description("d%d")`, j)
			}
			b.WriteString("\n")
		}
		b.WriteString("}")
		decls = append(decls, b.String())
		ifaces = append(ifaces, name)
	}
	nodes := 1 + r.IntN(4)
	for i := range nodes {
		var b strings.Builder
		fmt.Fprintf(&b, "node N%d", i)
		if r.IntN(2) == 0 {
			fmt.Fprintf(&b, ` @description("node %d") @x%d(k="v", 1..2, *)`, i, i)
		}
		var impl []string
		for _, in := range ifaces {
			if r.IntN(2) == 0 {
				impl = append(impl, in)
			}
		}
		if len(impl) > 0 {
			b.WriteString(" implements " + strings.Join(impl, ", "))
		}
		b.WriteString(" {\n")
		var own []prop
		for _, in := range impl {
			for _, p := range ifaceProps[in] {
				if r.IntN(3) == 0 { // redeclare, adding metadata
					fmt.Fprintf(&b, "  %s: %s @description(\"own\")\n", p.name, p.typ)
				}
				own = append(own, p)
			}
		}
		keyed := false
		for j := range r.IntN(5) {
			typ := scalars[r.IntN(len(scalars))]
			nullable := r.IntN(2) == 0
			switch r.IntN(6) {
			case 0:
				typ = "[" + typ + "]"
			case 1:
				typ = fmt.Sprintf("enum(b%d, a, c-d)", j)
			case 2:
				typ = fmt.Sprintf("Vector(%d)", 1+r.IntN(8))
			}
			p := prop{fmt.Sprintf("p%d", j), typ}
			q := ""
			if nullable {
				q = "?"
			}
			fmt.Fprintf(&b, "  %s: %s%s", p.name, p.typ, q)
			if !keyed && !nullable && !strings.HasPrefix(typ, "[") && !strings.HasPrefix(typ, "Vector") && r.IntN(2) == 0 {
				b.WriteString(" @key")
				keyed = true
			}
			b.WriteString("\n")
			own = append(own, p)
		}
		for _, p := range own {
			switch {
			case numeric[p.typ] && r.IntN(4) == 0:
				fmt.Fprintf(&b, "  @range(%s, -%d.5..)\n", p.name, r.IntN(3))
			case p.typ == "String" && r.IntN(4) == 0:
				fmt.Fprintf(&b, "  @check(%s, \"^\\\\w*$\")\n", p.name)
			case r.IntN(4) == 0:
				fmt.Fprintf(&b, "  @index(%s)\n", p.name)
			}
		}
		b.WriteString("}")
		decls = append(decls, b.String())
	}
	for i := range r.IntN(4) {
		card := []string{"", " @card(0..1)", " @card(1..)", " @card(2..*)"}[r.IntN(4)]
		d := fmt.Sprintf("edge E%d: N%d -> N%d%s", i, r.IntN(nodes), r.IntN(nodes), card)
		if r.IntN(2) == 0 {
			d += " { w: F64? @index since: Date\n @unique(since, w) }"
		}
		decls = append(decls, d)
	}
	return decls
}

// reformat changes only layout: extra whitespace and comments between tokens.
func reformat(r *rand.Rand, src string) string {
	var b strings.Builder
	for _, line := range strings.Split(src, "\n") {
		b.WriteString(strings.Repeat(" ", r.IntN(4)))
		b.WriteString(strings.ReplaceAll(line, " {", " /* c */ {"))
		if r.IntN(2) == 0 {
			b.WriteString(" // note")
		}
		b.WriteString("\n")
		if r.IntN(3) == 0 {
			b.WriteString("\n\t\n")
		}
	}
	return b.String()
}

// TestRandomSchemas: for generated schemas, the canonical form compiles to
// the same identity, and layout and declaration order never change it.
func TestRandomSchemas(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	compiled := 0
	const rounds = 300
	for i := range rounds {
		decls := genSchema(r)
		src := strings.Join(decls, "\n")
		c, err := Compile(src)
		if err != nil {
			// Random combinations may be invalid (e.g. two interfaces that both
			// carry a key); that is fine as long as it is a positioned error.
			checkSchemaError(t, src, err)
			continue
		}
		compiled++
		c2, err := Compile(c.Canonical())
		if err != nil || c2.Identity != c.Identity {
			t.Fatalf("round %d: canonical form does not round-trip (%v)\nsource:\n%s\ncanonical:\n%s", i, err, src, c.Canonical())
		}
		r.Shuffle(len(decls), func(a, b int) { decls[a], decls[b] = decls[b], decls[a] })
		shuffled := reformat(r, strings.Join(decls, "\n"))
		c3, err := Compile(shuffled)
		if err != nil || c3.Identity != c.Identity {
			t.Fatalf("round %d: layout or order changed the identity (%v)\nsource:\n%s\nshuffled:\n%s", i, err, src, shuffled)
		}
	}
	if compiled < rounds/2 {
		t.Fatalf("only %d of %d generated schemas compiled; the generator is broken", compiled, rounds)
	}
	t.Logf("%d of %d generated schemas compiled", compiled, rounds)
}
