package gq

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/lang/pg"
)

// Fuzz targets of the query language: the parser, the type checker and
// the planner (its estimate and explain), each seeded with every query of
// the repository (.gq files and the gq blocks of the docs) and checked
// against every schema of it (.pg files and pg blocks). None may panic;
// an input that hangs is reported by the fuzz engine. make test runs each
// for a few seconds (scripts/test.sh), make soak for longer:
//
//	go test ./lang/gq -run '^$' -fuzz '^FuzzPlan$' -fuzztime 60s

// repoRoot is the repository root, from this package's directory.
const repoRoot = "../.."

// repoSources returns every file of the repository with the extension ext
// and every ``` block of docs/*.md whose info string is fence (or
// fence-error), in a stable order.
func repoSources(tb testing.TB, ext, fence string) []string {
	tb.Helper()
	var out []string
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules" || d.Name() == "test-results") {
			return filepath.SkipDir
		}
		if d.IsDir() || filepath.Ext(path) != ext {
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
	docs, _ := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	for _, path := range docs {
		raw, err := os.ReadFile(path)
		if err != nil {
			tb.Fatal(err)
		}
		parts := strings.Split(string(raw), "```")
		for i := 1; i < len(parts); i += 2 {
			info, body, _ := strings.Cut(parts[i], "\n")
			if info == fence || info == fence+"-error" {
				out = append(out, body)
			}
		}
	}
	if len(out) == 0 {
		tb.Fatalf("no %s sources found under %s", ext, repoRoot)
	}
	return out
}

// repoCatalogs compiles every schema of the repository that compiles.
func repoCatalogs(tb testing.TB) []*pg.Catalog {
	tb.Helper()
	var cats []*pg.Catalog
	for _, src := range repoSources(tb, ".pg", "pg") {
		if c, err := pg.Compile(src); err == nil {
			cats = append(cats, c)
		}
	}
	if len(cats) < 2 {
		tb.Fatalf("only %d schemas of the repository compile", len(cats))
	}
	return cats
}

var handSeeds = []string{
	`query q($h: String) { match { $p: Person { handle: $h } $p knows{1,3} $f not { $f worksAt $_ } } return { $f.name, count($p) as n } order { n desc } limit 5 }`,
	`query m($h: String) { insert Person { handle: $h, name: "x", age: -3 } insert Knows { from: $h, to: "b" } update Person set { age: 4 } where name = "Ada" }`,
	`mutation d() { delete Person where age < 3 }`,
	`query u() { match { $a <knows> $b $a $e:worksAt $c $e.since >= date("2020-01-01") } return { $a, [1, 2.5], now() } }`,
	"/* c */ query x() { match { $p: Person } return { $p } } // tail",
	`query bad( { match`, `"unterminated`, `$`, `query q() { match { not { not { $p: Person } } } return { 1 } }`,
	`query q() { match { $a: Person $b: Person $c: Person $d: Person $e: Person } return { count($a) as n } }`,
}

// FuzzParse: Parse and Check never panic, and every failure is a
// positioned *Error classified as ErrInvalidQuery.
func FuzzParse(f *testing.F) {
	for _, s := range append(handSeeds, repoSources(f, ".gq", "gq")...) {
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
		checkProgram(t, file, cat)
	})
}

// checkProgram type-checks a parsed file and renders its plans.
func checkProgram(t *testing.T, file *File, cat *pg.Catalog) *Program {
	prog, err := Check(file, cat)
	if err != nil {
		var l ErrorList
		if !errors.As(err, &l) || !errors.Is(err, ErrInvalidQuery) {
			t.Fatalf("check error of type %T: %v", err, err)
		}
		return nil
	}
	for _, p := range prog.Plans {
		_ = p.String()
	}
	return prog
}

// FuzzCheck: the type checker against every schema of the repository
// (schema picks one): no panic, errors classified.
func FuzzCheck(f *testing.F) {
	cats := repoCatalogs(f)
	for i, s := range append(handSeeds, repoSources(f, ".gq", "gq")...) {
		f.Add(s, uint8(i))
	}
	f.Fuzz(func(t *testing.T, src string, schema uint8) {
		file, err := Parse(src)
		if err != nil {
			return
		}
		checkProgram(t, file, cats[int(schema)%len(cats)])
	})
}

// fuzzStats derives cardinalities from the fuzzer's numbers.
type fuzzStats struct{ rows, edges uint64 }

func (s fuzzStats) NodeRows(typ string) int64 {
	return int64((s.rows * uint64(len(typ)+1)) % (1 << 40))
}

func (s fuzzStats) Edge(typ string) EdgeStats {
	e := int64((s.edges * uint64(len(typ)+3)) % (1 << 45))
	return EdgeStats{Rows: e, MaxOut: e / 3, MaxIn: e / 5, Sources: e / 7, Targets: e / 11}
}

// FuzzPlan: every plan the checker accepts, on any cardinalities,
// estimates without a panic into numbers that are never negative, whose
// running total never falls and ends at the total, and explains.
func FuzzPlan(f *testing.F) {
	cats := repoCatalogs(f)
	for i, s := range append(handSeeds, repoSources(f, ".gq", "gq")...) {
		f.Add(s, uint8(i), uint64(30), uint64(300))
		f.Add(s, uint8(i), uint64(math.MaxUint32), uint64(math.MaxUint64))
	}
	f.Fuzz(func(t *testing.T, src string, schema uint8, rows, edges uint64) {
		file, err := Parse(src)
		if err != nil {
			return
		}
		prog, err := Check(file, cats[int(schema)%len(cats)])
		if err != nil {
			return
		}
		for _, p := range prog.Plans {
			if p.Read == nil {
				continue
			}
			e := EstimateRead(p.Read, fuzzStats{rows, edges}, Sizes{Match: int64(len(p.Read.Vars))*40 + 24, Out: 100})
			var last int64
			for _, s := range e.Steps {
				if s.Rows < 0 || s.Total < last || s.PerInput < 0 || math.IsNaN(s.PerInput) {
					t.Fatalf("step %s: %+v after a total of %d", p.Read.StepString(s.Step), s, last)
				}
				last = s.Total
			}
			if e.Rows < last || e.Output < 0 || e.Bytes < 0 {
				t.Fatalf("estimate %+v, steps end at %d", e, last)
			}
			if !strings.Contains(p.Explain(e), "estimate: ") {
				t.Fatal("explain without its summary")
			}
		}
	})
}
