package gq

import (
	"errors"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/lang/pg"
)

var (
	f32 = pg.Type{Kind: pg.KindF32}
	f64 = pg.Type{Kind: pg.KindF64}
)

// TestCompileQueryChecksOnlyThatQuery pins: type checks and the D₂ rule
// belong to the query being run. A file with a type error in one query and
// a mixed mutation in another still compiles its valid queries; the bad
// ones fail with errors that name them.
func TestCompileQueryChecksOnlyThatQuery(t *testing.T) {
	cat := socialCatalog(t)
	const src = `query ok() {
  match { $p: Person }
  return { $p.handle }
}
query typo() {
  match { $p: Persn }
  return { $p }
}
mutation mixed() {
  insert Person { handle: "a", name: "A" }
  delete Person where handle = "b"
}
mutation add($h: String) {
  insert Person { handle: $h, name: "A" }
}
`
	for _, name := range []string{"ok", "add"} {
		if _, err := CompileQuery(src, name, cat); err != nil {
			t.Errorf("CompileQuery(%s): %v", name, err)
		}
	}
	tests := []struct {
		query string
		code  Code
		text  string
	}{
		{"typo", CodeUnknownType, `GQ010 in query "typo" at 6:15: unknown node type "Persn"`},
		{"mixed", CodeMixedMutation, `GQ002 in query "mixed" at 11:3: this delete is in the same query as the insert at 10:3`},
	}
	for _, tc := range tests {
		_, err := CompileQuery(src, tc.query, cat)
		var e *Error
		if !errors.As(err, &e) || e.Code != tc.code || e.Query != tc.query || !strings.HasPrefix(err.Error(), tc.text) {
			t.Errorf("CompileQuery(%s) = %v\nwant prefix %s", tc.query, err, tc.text)
		}
	}
	// The whole-file checker still reports both, each naming its query.
	_, err := Compile(src, cat)
	var l ErrorList
	if !errors.As(err, &l) || len(l) != 2 || l[0].Query != "typo" || l[1].Query != "mixed" {
		t.Errorf("Compile: %v", err)
	}
	// Parse itself accepts the file: D₂ is reported per query.
	f, err := Parse(src)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if q, _ := f.Query("mixed"); q.CheckShape() == nil {
		t.Error("CheckShape of the mixed mutation is nil")
	}
	if q, _ := f.Query("add"); q.CheckShape() != nil {
		t.Errorf("CheckShape of add: %v", q.CheckShape())
	}
}

// TestErrorsNameTheQuery pins the error text shape `CODE in query "x" at
// L:C: message` for lexical, syntax, duplicate-name and bind errors.
func TestErrorsNameTheQuery(t *testing.T) {
	cat := socialCatalog(t)
	tests := []struct {
		name, src, prefix string
	}{
		{"lexical", "query a() { match { $p: Person } return { $p } }\nquery b() { match { $p: Person $p.age ~ 1 } return { $p } }", `GQ001 in query "b" at 2:39: unexpected character`},
		{"syntax", "query a() { match { $p: Person } }", `GQ001 in query "a" at 1:34:`},
		{"duplicate", "query a() { match { $p: Person } return { $p } }\nquery a() { match { $p: Person } return { $p } }", `GQ004 in query "a" at 2:1:`},
		{"before any name", "nonsense", `GQ001 at 1:1:`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile(tc.src, cat)
			if err == nil || !strings.HasPrefix(err.Error(), tc.prefix) {
				t.Errorf("got %v\nwant prefix %s", err, tc.prefix)
			}
		})
	}
	pl, err := CompileQuery(`query q($h: String) { match { $p: Person { handle: $h } } return { $p } }`, "", cat)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Bind(pl, nil)
	if err == nil || !strings.HasPrefix(err.Error(), `GQ032 in query "q": parameter $h (String) is required`) {
		t.Errorf("bind: %v", err)
	}
}

// TestBindConvertsToSlotType pins the conversion of a parameter to the
// type of the property it is compared with, as a literal would be: F64 to
// F32 by its decimal spelling, F32 to F64 likewise, an F64 out of F32's
// range or an unknown enum value refused with CodeBadValue at the
// comparison's position.
func TestBindConvertsToSlotType(t *testing.T) {
	cat := socialCatalog(t)
	pl, err := CompileQuery(`query q($x: F64, $y: F32, $ind: String) {
  match { $c: Company  $c.industry = $ind }
  return { $x, $y }
}`, "", cat)
	if err != nil {
		t.Fatal(err)
	}
	a, err := Bind(pl, map[string]any{"x": 1.2, "y": float32(1.2), "ind": "finance"})
	if err != nil {
		t.Fatal(err)
	}
	f := pl.Read.Steps[0].(*ScanStep).Where[0]
	if got := a.Value(f.Right); got != "finance" {
		t.Errorf("enum param value %v", got)
	}
	// Direct use of the conversion: F64 1.2 as F32 is float32(1.2); F32 1.2
	// as F64 is 1.2 (not 1.2000000476837158).
	if v, err := convertParam(1.2, f32); err != nil || v != float32(1.2) {
		t.Errorf("F64 1.2 as F32 = %v %v", v, err)
	}
	if v, err := convertParam(float32(1.2), f64); err != nil || v != 1.2 {
		t.Errorf("F32 1.2 as F64 = %v %v", v, err)
	}
	if _, err := convertParam(1e39, f32); err == nil || !strings.Contains(err.Error(), "does not fit F32") {
		t.Errorf("1e39 as F32: %v", err)
	}
	_, err = Bind(pl, map[string]any{"x": 1.2, "y": float32(1.2), "ind": "mining"})
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeBadValue || e.Pos.String() != "2:38" || !strings.Contains(e.Msg, `parameter $ind: $c.industry: "mining" is not one of`) {
		t.Errorf("unknown enum: %v", err)
	}
}
