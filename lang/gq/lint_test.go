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

// TestCheckReportsEveryError: a failed match does not hide the errors of
// the filters, return and order after it (one check lists them all, as the
// console's editor shows them), and a variable whose binding failed adds
// no "not bound" error of its own where it is used.
func TestCheckReportsEveryError(t *testing.T) {
	cat := lintCatalog(t)
	type at struct{ line, col int }
	cases := []struct {
		name string
		src  string
		want []at // the errors' positions, in order
	}{
		{"filters and return", `query q() { match { $p: Person  $p.age > "x"  $p.nme = "a" } return { $p.zzz } }`,
			[]at{{1, 42}, {1, 47}, {1, 71}}},
		{"return after two bad filters in a binding", `query q() { match { $p: Person { nme: "a", handl: "b" } } return { $p.nme, $p.zz } }`,
			[]at{{1, 34}, {1, 44}, {1, 68}, {1, 76}}},
		{"unknown type and edge, then return", `query q() { match { $p: Person $c: Compny $p WorksA $c } return { $p.nme, $c.slug } }`,
			[]at{{1, 36}, {1, 46}, {1, 67}}},
		{"a filter after an unknown type", `query q() { match { $p: Persn  $q: Person  $q.nme = "x" } return { $q.name } }`,
			[]at{{1, 25}, {1, 44}}},
		{"no cascade from an unknown type", `query q() { match { $p: Persn } return { $p.nme, $p } order { $p.name } }`,
			[]at{{1, 25}}},
		{"unbound elsewhere is still an error", `query q() { match { $p: Persn } return { $x.name } }`,
			[]at{{1, 25}, {1, 42}}},
		{"limit after a failed match", `query q($n: String) { match { $p: Persn } return { $p.name } limit $n }`,
			[]at{{1, 35}, {1, 68}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep := Lint(tc.src, cat)
			var got []at
			for _, f := range rep.Findings {
				if f.Severity == SeverityError {
					got = append(got, at{f.Line, f.Column})
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("errors at %v, want %v: %+v", got, tc.want, rep.Findings)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("errors at %v, want %v: %+v", got, tc.want, rep.Findings)
				}
			}
			if rep.Errors != len(tc.want) {
				t.Fatalf("report counts %d errors, want %d", rep.Errors, len(tc.want))
			}
		})
	}
}
