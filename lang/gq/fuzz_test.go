package gq

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// FuzzParse: Parse and Check never panic, and every failure is a
// positioned *Error classified as ErrInvalidQuery.
func FuzzParse(f *testing.F) {
	seeds := []string{
		`query q($h: String) { match { $p: Person { handle: $h } $p knows{1,3} $f not { $f worksAt $_ } } return { $f.name, count($p) as n } order { n desc } limit 5 }`,
		`query m($h: String) { insert Person { handle: $h, name: "x", age: -3 } insert Knows { from: $h, to: "b" } update Person set { age: 4 } where name = "Ada" }`,
		`mutation d() { delete Person where age < 3 }`,
		`query u() { match { $a <knows> $b $a $e:worksAt $c $e.since >= date("2020-01-01") } return { $a, [1, 2.5], now() } }`,
		"/* c */ query x() { match { $p: Person } return { $p } } // tail",
		`query bad( { match`, `"unterminated`, `$`, `query q() { match { not { not { $p: Person } } } return { 1 } }`,
	}
	if raw, err := os.ReadFile("../../docs/queries.md"); err == nil {
		for _, part := range strings.Split(string(raw), "```") {
			if strings.HasPrefix(part, "gq") {
				seeds = append(seeds, strings.TrimPrefix(strings.TrimPrefix(part, "gq-error"), "gq"))
			}
		}
	}
	for _, s := range seeds {
		f.Add(s)
	}
	cat := socialCatalog(f)
	f.Fuzz(func(t *testing.T, src string) {
		file, err := Parse(src)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, ErrInvalidQuery) || e.Pos.Line < 1 || e.Pos.Col < 1 {
				t.Fatalf("parse error without position or class: %#v", err)
			}
			return
		}
		prog, err := Check(file, cat)
		if err != nil {
			var l ErrorList
			if !errors.As(err, &l) || !errors.Is(err, ErrInvalidQuery) {
				t.Fatalf("check error of type %T: %v", err, err)
			}
			return
		}
		for _, p := range prog.Plans {
			_ = p.String()
		}
	})
}
