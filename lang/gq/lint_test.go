package gq

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/lang/pg"
)

const lintSchema = `
node Person {
  handle: String @key
  name: String
  age: I32?
  city: String?
  bio: String?
  embedding: Vector(4)? @embed("bio")
}
node Company { slug: String @key }
edge WorksAt: Person -> Company
`

func lintCatalog(t *testing.T) *pg.Catalog {
	t.Helper()
	cat, err := pg.Compile(lintSchema)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// TestLint: each file gives the codes, severities, counts and status the
// original's lint gives (Q000 for a parse error, the T codes for check
// errors, L201 for a nullable property no update sets), and warnings never
// make the status an error.
func TestLint(t *testing.T) {
	cat := lintCatalog(t)
	type want struct {
		status           string
		errors, warnings int
		codes            []string // the findings' codes, in report order
	}
	cases := []struct {
		name string
		src  string
		want want
	}{
		{"clean read", `query q($h: String) { match { $p: Person { handle: $h } } return { $p.name } }`,
			want{"ok", 0, 0, nil}},
		{"parse error", `query q( { match`, want{"error", 1, 0, []string{LintParse}}},
		{"type mismatch", `query q() { match { $p: Person  $p.age > "x" } return { $p.name } }`,
			want{"error", 1, 0, []string{"T7"}}},
		{"unknown type and a good query", `
query bad() { match { $p: Persn } return { $p.name } }
query good() { match { $p: Person } return { $p.handle } }`,
			want{"error", 1, 0, []string{"T1"}}},
		{"update leaves nullables unset", `
mutation older($h: String) { update Person set { age: 40 } where handle = $h }`,
			// age is set; city and bio are not; embedding is @embed (skipped), handle is the key.
			want{"ok", 0, 2, []string{LintUnsetNullable, LintUnsetNullable}}},
		{"hard-coded mutation", `
mutation fix() { update Person set { age: 1, city: "x", bio: "y" } where handle = "a" }`,
			want{"ok", 0, 1, []string{LintHardcodedMutation}}},
		{"two updates cover every nullable", `
mutation a($h: String) { update Person set { age: 1 } where handle = $h }
mutation b($h: String) { update Person set { city: "x", bio: "y" } where handle = $h }`,
			want{"ok", 0, 0, nil}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Lint(c.src, cat)
			var codes []string
			for _, f := range r.Findings {
				codes = append(codes, f.Code)
			}
			if r.Status != c.want.status || r.Errors != c.want.errors || r.Warnings != c.want.warnings ||
				strings.Join(codes, ",") != strings.Join(c.want.codes, ",") {
				b, _ := json.MarshalIndent(r, "", "  ")
				t.Fatalf("got status %s, %d errors, %d warnings, codes %v; want %+v\n%s", r.Status, r.Errors, r.Warnings, codes, c.want, b)
			}
		})
	}
}

// TestLintL201NamesTypePropertyAndQueries: the finding says which property
// of which type, and which update queries were looked at.
func TestLintL201NamesTypePropertyAndQueries(t *testing.T) {
	r := Lint(`
mutation b($h: String) { update Person set { age: 2, bio: "y" } where handle = $h }
mutation a($h: String) { update Person set { age: 1 } where handle = $h }`, lintCatalog(t))
	if len(r.Findings) != 1 {
		t.Fatalf("findings %+v, want one (city)", r.Findings)
	}
	f := r.Findings[0]
	if f.Code != LintUnsetNullable || f.Severity != SeverityWarning || f.Type != "Person" || f.Property != "city" ||
		strings.Join(f.Queries, ",") != "a,b" || !strings.Contains(f.Message, "Person.city") {
		t.Fatalf("finding %+v", f)
	}
}

// TestLintOperation: a query that checks is described by what it reads,
// writes and returns.
func TestLintOperation(t *testing.T) {
	r := Lint(`
query staff($s: String) { match { $c: Company { slug: $s }  $p worksAt $c } return { $p.name, $p.age as age } }
mutation hire($h: String, $c: String) { insert Person { handle: $h, name: "n" } insert WorksAt { from: $h, to: $c } }`, lintCatalog(t))
	if r.Status != "ok" || len(r.Results) != 2 {
		t.Fatalf("report %+v", r)
	}
	read, mut := r.Results[0].Operation, r.Results[1].Operation
	got := func(l []LintTypeRef) string {
		var s []string
		for _, x := range l {
			s = append(s, x.Kind+":"+x.Type)
		}
		return strings.Join(s, ",")
	}
	if got(read.Reads) != "edge:WorksAt,node:Company,node:Person" || len(read.Writes) != 0 {
		t.Errorf("read operation reads %s writes %v", got(read.Reads), read.Writes)
	}
	if len(read.Result) != 2 || read.Result[0].Type != "String" || read.Result[0].Nullable ||
		read.Result[1].Name != "age" || read.Result[1].Type != "I32" || !read.Result[1].Nullable {
		t.Errorf("read result %+v", read.Result)
	}
	if got(mut.Writes) != "edge:WorksAt,node:Person" || r.Results[1].Kind != "mutation" {
		t.Errorf("mutation writes %s", got(mut.Writes))
	}
}

// TestLintNeverPanicsOnFuzzSeeds: Lint reports, never panics, on every
// query text the parser fuzz target is seeded with.
func TestLintNeverPanicsOnFuzzSeeds(t *testing.T) {
	cat := lintCatalog(t)
	for _, src := range []string{"", "query", "mutation m() {", "query q() { match { $a: Person } return { count($a) } order { x } }",
		"\xef\xbb\xbfquery q() { match { $p: Person } return { $p } }", strings.Repeat("(", 1000)} {
		r := Lint(src, cat)
		if r.Status == "" {
			t.Fatalf("no status for %q", src)
		}
	}
}
