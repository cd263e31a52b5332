package pg

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/table"
)

const valueSchema = `node T {
  s: String
  b: Bool?
  i32: I32?
  i64: I64?
  u32: U32?
  u64: U64?
  f32: F32?
  f64: F64?
  d: Date?
  dt: DateTime?
  v: Vector(3)?
  blob: Blob?
  tags: [String]?
  ns: [I32]?
  days: [Date]?
  st: enum(draft, in-review, done)?
  age: I32? @range(0..150)
  score: F64? @range(-1.5..2.5)
  code: String? @check("^[A-Z]{3}$")
  big: U64? @range(..100)
}`

// TestCoerce covers every kind at its boundaries, from JSON-decoded input
// (float64 and json.Number both) and from Go values.
func TestCoerce(t *testing.T) {
	n := mustNode(t, mustCompile(t, valueSchema), "T")
	num := func(s string) json.Number { return json.Number(s) }
	tests := []struct {
		name string
		prop string
		in   any
		want any    // canonical value when err is ""
		err  string // substring of the error; "" for success
	}{
		{name: "string", prop: "s", in: "hi", want: "hi"},
		{name: "string from number", prop: "s", in: 1.0, err: "T.s: expected String (a string), got 1"},
		{name: "string null required", prop: "s", in: nil, err: "T.s: is required; expected String"},
		{name: "nullable null", prop: "i32", in: nil, want: nil},
		{name: "bool", prop: "b", in: true, want: true},
		{name: "bool from string", prop: "b", in: "true", err: `expected Bool (true or false), got "true"`},

		{name: "i32 max float64", prop: "i32", in: 2147483647.0, want: int32(math.MaxInt32)},
		{name: "i32 min number", prop: "i32", in: num("-2147483648"), want: int32(math.MinInt32)},
		{name: "i32 overflow", prop: "i32", in: num("2147483648"), err: "T.i32: expected I32 (a whole number from -2147483648 to 2147483647), got 2147483648 (out of range)"},
		{name: "i32 underflow", prop: "i32", in: -2147483649.0, err: "out of range"},
		{name: "i32 fraction", prop: "i32", in: 1.5, err: "expected I32"},
		{name: "i32 fraction number", prop: "i32", in: num("1.5"), err: "expected I32"},
		{name: "i32 whole in float text", prop: "i32", in: num("7.0"), want: int32(7)},
		{name: "i32 exponent", prop: "i32", in: num("1e3"), want: int32(1000)},
		{name: "i32 from string", prop: "i32", in: "42", want: int32(42)},
		{name: "i32 from bool", prop: "i32", in: true, err: "expected I32"},
		{name: "i32 from go int", prop: "i32", in: 12, want: int32(12)},
		{name: "i64 max as string", prop: "i64", in: "9223372036854775807", want: int64(math.MaxInt64)},
		{name: "i64 min", prop: "i64", in: num("-9223372036854775808"), want: int64(math.MinInt64)},
		{name: "i64 overflow", prop: "i64", in: num("9223372036854775808"), err: "out of range"},
		{name: "i64 go min", prop: "i64", in: int64(math.MinInt64), want: int64(math.MinInt64)},
		{name: "u32 max", prop: "u32", in: num("4294967295"), want: uint32(math.MaxUint32)},
		{name: "u32 overflow", prop: "u32", in: 4294967296.0, err: "out of range"},
		{name: "u32 negative", prop: "u32", in: num("-1"), err: "T.u32: expected U32 (a whole number from 0 to 4294967295), got -1 (out of range)"},
		{name: "u32 negative zero", prop: "u32", in: num("-0"), want: uint32(0)},
		{name: "u64 max", prop: "u64", in: num("18446744073709551615"), want: uint64(math.MaxUint64)},
		{name: "u64 overflow", prop: "u64", in: num("18446744073709551616"), err: "expected U64"},
		{name: "u64 negative", prop: "u64", in: -1.0, err: "out of range"},
		{name: "u64 go uint", prop: "u64", in: uint64(math.MaxUint64), want: uint64(math.MaxUint64)},

		{name: "f32", prop: "f32", in: 1.5, want: float32(1.5)},
		{name: "f32 number", prop: "f32", in: num("0.1"), want: float32(0.1)},
		{name: "f32 max", prop: "f32", in: float64(math.MaxFloat32), want: float32(math.MaxFloat32)},
		{name: "f32 overflow", prop: "f32", in: num("3.5e38"), err: "T.f32: expected F32 (a finite number within ±3.4e38), got 3.5e38 (out of range)"},
		{name: "f32 from int", prop: "f32", in: 3, want: float32(3)},
		{name: "f64 nan", prop: "f64", in: math.NaN(), err: "expected F64 (a finite number)"},
		{name: "f64 inf", prop: "f64", in: math.Inf(1), err: "expected F64"},
		{name: "f64 from string", prop: "f64", in: "1.5", err: "expected F64"},
		{name: "f64 number", prop: "f64", in: num("-2.25"), want: -2.25},

		{name: "date", prop: "d", in: "1970-01-02", want: int32(1)},
		{name: "date before epoch", prop: "d", in: "1969-12-31", want: int32(-1)},
		{name: "date leap day", prop: "d", in: "2024-02-29", want: int32(19782)},
		{name: "date invalid day", prop: "d", in: "2023-02-29", err: `T.d: expected Date as "YYYY-MM-DD", got "2023-02-29"`},
		{name: "date with time", prop: "d", in: "2024-01-01T00:00:00Z", err: "expected Date"},
		{name: "date days number", prop: "d", in: num("19782"), want: int32(19782)},
		{name: "date days float64", prop: "d", in: 19782.0, want: int32(19782)},
		{name: "date days overflow", prop: "d", in: num("2147483648"), err: "out of range"},
		{name: "date time.Time", prop: "d", in: time.Date(2024, 2, 29, 23, 0, 0, 0, time.UTC), want: int32(19782)},
		{name: "date canonical", prop: "d", in: int32(5), want: int32(5)},

		{name: "datetime utc", prop: "dt", in: "1970-01-01T00:00:01Z", want: int64(1_000_000)},
		{name: "datetime offset", prop: "dt", in: "1970-01-01T01:00:00+01:00", want: int64(0)},
		// Whole milliseconds, as the original (issue 26 item 13).
		{name: "datetime micros truncated", prop: "dt", in: "2024-05-01T12:00:00.123456Z", want: time.Date(2024, 5, 1, 12, 0, 0, 123000000, time.UTC).UnixMicro()},
		{name: "datetime nanos truncated", prop: "dt", in: "1970-01-01T00:00:00.001001999Z", want: int64(1000)},
		{name: "datetime no zone", prop: "dt", in: "2024-05-01T12:00:00", err: `expected DateTime as an RFC 3339 string with a zone`},
		{name: "datetime milliseconds", prop: "dt", in: num("1700000000123"), want: int64(1_700_000_000_123_000)}, // as the original
		{name: "datetime negative milliseconds", prop: "dt", in: num("-1500"), want: int64(-1_500_000)},
		{name: "datetime float64 milliseconds", prop: "dt", in: float64(2000), want: int64(2_000_000)},
		{name: "datetime fractional milliseconds", prop: "dt", in: num("1.5"), err: "whole milliseconds since the epoch"},
		{name: "datetime milliseconds overflow", prop: "dt", in: num("9223372036854775807"), err: "whole milliseconds since the epoch"},
		{name: "datetime canonical", prop: "dt", in: int64(42_000), want: int64(42_000)},
		{name: "datetime time.Time", prop: "dt", in: time.Unix(3, 0), want: int64(3_000_000)},

		{name: "vector", prop: "v", in: []any{1.0, num("0.5"), 0}, want: []float32{1, 0.5, 0}},
		{name: "vector float32", prop: "v", in: []float32{1, 2, 3}, want: []float32{1, 2, 3}},
		{name: "vector short", prop: "v", in: []any{1.0, 2.0}, err: "T.v: expected 3 numbers for Vector(3), got 2"},
		{name: "vector long", prop: "v", in: []float64{1, 2, 3, 4}, err: "got 4"},
		{name: "vector bad element", prop: "v", in: []any{1.0, "x", 2.0}, err: `element 1: expected a finite F32 number, got "x"`},
		{name: "vector overflow element", prop: "v", in: []any{1.0, 1e39, 2.0}, err: "element 1"},
		{name: "vector not array", prop: "v", in: "1,2,3", err: "expected Vector(3) (an array of 3 numbers)"},

		{name: "blob base64 prefix", prop: "blob", in: "base64:aGk=", want: table.InlineBlob([]byte("hi"))},
		{name: "blob plain base64", prop: "blob", in: "aGk=", want: table.InlineBlob([]byte("hi"))},
		{name: "blob raw base64", prop: "blob", in: "aGk", want: table.InlineBlob([]byte("hi"))},
		{name: "blob empty", prop: "blob", in: "base64:", want: table.InlineBlob([]byte{})},
		{name: "blob bytes", prop: "blob", in: []byte{0, 1}, want: table.InlineBlob([]byte{0, 1})},
		{name: "blob bad base64", prop: "blob", in: "base64:a*b", err: "neither base64 nor a URI"},
		{name: "blob uri", prop: "blob", in: "s3://bucket/x", want: table.ExternalBlob("s3://bucket/x")},
		{name: "blob https uri", prop: "blob", in: "https://cdn.example.com/a/b.png", want: table.ExternalBlob("https://cdn.example.com/a/b.png")},
		{name: "blob uri with user", prop: "blob", in: "https://u:p@example.com/x", err: "user info, a query or a fragment"},
		{name: "blob uri with query", prop: "blob", in: "https://example.com/x?sig=1", err: "user info, a query or a fragment"},
		{name: "blob uri with fragment", prop: "blob", in: "https://example.com/x#f", err: "user info, a query or a fragment"},
		{name: "blob uri with space", prop: "blob", in: "s3://b/a b", err: "spaces or control characters"},
		{name: "blob not absolute", prop: "blob", in: "mailto:x@y", err: "not an absolute URI"},
		{name: "blob uri too long", prop: "blob", in: "s3://b/" + strings.Repeat("k", MaxBlobURI), err: "the limit is"},
		{name: "blob uri no object", prop: "blob", in: "s3://", err: "names no object"},

		{name: "list", prop: "tags", in: []any{"a", "b"}, want: []any{"a", "b"}},
		{name: "list empty", prop: "tags", in: []any{}, want: []any{}},
		{name: "list of strings", prop: "tags", in: []string{"x"}, want: []any{"x"}},
		{name: "list wrong element", prop: "tags", in: []any{"a", 1.0}, err: "T.tags: element 1: expected String (a string), got 1"},
		{name: "list null element", prop: "tags", in: []any{nil}, err: "element 0: list elements cannot be null"},
		{name: "list not array", prop: "tags", in: "a", err: "expected [String] (an array)"},
		{name: "list of i32 overflow", prop: "ns", in: []any{1.0, 3e9}, err: "element 1: expected I32"},
		{name: "list of i32", prop: "ns", in: []any{num("1"), -2.0}, want: []any{int32(1), int32(-2)}},
		{name: "list of dates", prop: "days", in: []any{"1970-01-03"}, want: []any{int32(2)}},

		{name: "enum", prop: "st", in: "in-review", want: "in-review"},
		{name: "enum unknown", prop: "st", in: "dnoe", err: `T.st: expected one of done, draft, in-review, got "dnoe"; did you mean done?`},
		{name: "enum case", prop: "st", in: "Draft", err: "did you mean draft?"},
		{name: "enum not string", prop: "st", in: 1.0, err: "expected one of done, draft, in-review, got 1"},

		{name: "range low edge", prop: "age", in: 0.0, want: int32(0)},
		{name: "range high edge", prop: "age", in: num("150"), want: int32(150)},
		{name: "range above", prop: "age", in: num("151"), err: "T.age: 151 is outside @range(0..150)"},
		{name: "range below", prop: "age", in: -1.0, err: "outside @range(0..150)"},
		{name: "range float", prop: "score", in: -1.5, want: -1.5},
		{name: "range float below", prop: "score", in: num("-1.51"), err: "-1.51 is outside @range(-1.5..2.5)"},
		{name: "range open low", prop: "big", in: num("0"), want: uint64(0)},
		{name: "range open high", prop: "big", in: num("101"), err: "outside @range(..100)"},
		{name: "range null ok", prop: "age", in: nil, want: nil},
		{name: "check ok", prop: "code", in: "ABC", want: "ABC"},
		{name: "check fails", prop: "code", in: "abc", err: `T.code: "abc" does not match @check("^[A-Z]{3}$")`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := mustProp(t, n.Properties, tc.prop)
			got, err := p.Coerce(tc.in)
			if tc.err != "" {
				if err == nil {
					t.Fatalf("Coerce(%v) = %#v, want error %q", tc.in, got, tc.err)
				}
				if !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %q does not contain %q", err, tc.err)
				}
				var ve *ValueError
				if !errors.As(err, &ve) || ve.Entity != "T" || ve.Property != tc.prop || !errors.Is(err, ErrInvalidValue) {
					t.Fatalf("error %#v is not a ValueError for T.%s", err, tc.prop)
				}
				return
			}
			if err != nil {
				t.Fatalf("Coerce(%v): %v", tc.in, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Coerce(%v) = %#v (%T), want %#v (%T)", tc.in, got, got, tc.want, tc.want)
			}
			// Canonical values are accepted unchanged, and JSONValue reads back.
			again, err := p.Coerce(got)
			if err != nil || !reflect.DeepEqual(again, got) {
				t.Fatalf("Coerce(canonical %#v) = %#v, %v", got, again, err)
			}
			if back, err := p.Coerce(p.JSONValue(got)); err != nil || !reflect.DeepEqual(back, got) {
				t.Fatalf("Coerce(JSONValue(%#v)=%#v) = %#v, %v", got, p.JSONValue(got), back, err)
			}
		})
	}
}

func TestJSONValue(t *testing.T) {
	n := mustNode(t, mustCompile(t, valueSchema), "T")
	tests := []struct {
		prop string
		in   any
		want any
	}{
		{"d", int32(19782), "2024-02-29"},
		{"dt", int64(1_500_000), "1970-01-01T00:00:01.500Z"},
		{"dt", int64(1_714_552_200_000_000), "2024-05-01T08:30:00.000Z"}, // always milliseconds, as the original
		{"dt", int64(1_500_001), "1970-01-01T00:00:01.500001Z"},          // microseconds when there are some
		{"blob", table.InlineBlob([]byte("hi")), "base64:aGk="},
		{"blob", table.ExternalBlob("gs://b/k"), "gs://b/k"},
		{"days", []any{int32(0)}, []any{"1970-01-01"}},
		{"i32", int32(3), int32(3)},
		{"st", "done", "done"},
		{"d", nil, nil},
	}
	for _, tc := range tests {
		if got := mustProp(t, n.Properties, tc.prop).JSONValue(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("JSONValue(%s, %#v) = %#v, want %#v", tc.prop, tc.in, got, tc.want)
		}
	}
	// The whole row survives a real JSON round trip.
	row := map[string]any{"s": "x", "i64": int64(math.MaxInt64), "u64": uint64(math.MaxUint64), "dt": int64(7_000), "v": []float32{0.1, 0.2, 0.3}, "blob": table.InlineBlob([]byte{255})}
	out := map[string]any{}
	for k, v := range row {
		p := mustProp(t, n.Properties, k)
		out[k] = p.JSONValue(v)
	}
	raw, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	var decoded map[string]any
	if err := dec.Decode(&decoded); err != nil {
		t.Fatal(err)
	}
	got, err := n.CoerceRow(decoded)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range row {
		if !reflect.DeepEqual(got[k], v) {
			t.Errorf("%s: round trip %#v, want %#v", k, got[k], v)
		}
	}
}

func TestValidate(t *testing.T) {
	c := mustCompile(t, `node P { name: String @key
  age: I32?
  email: String }
edge E: P -> P { w: F64 note: String? }`)
	p := mustNode(t, c, "P")
	e, _ := c.Edge("E")
	tests := []struct {
		name string
		run  func() error
		err  string
	}{
		{name: "ok", run: func() error { return p.Validate(map[string]any{"name": "a", "email": "x"}) }},
		{name: "ok with null nullable", run: func() error { return p.Validate(map[string]any{"name": "a", "email": "x", "age": nil}) }},
		{name: "missing required", run: func() error { return p.Validate(map[string]any{"name": "a"}) }, err: "P.email: required property is missing; give String"},
		{name: "null required", run: func() error { return p.Validate(map[string]any{"name": "a", "email": nil}) }, err: "P.email: required property is null"},
		{name: "unknown property", run: func() error { return p.Validate(map[string]any{"name": "a", "email": "x", "emial": 1}) }, err: "P.emial: unknown property; P has properties name, age, email; did you mean email?"},
		{name: "id is not a property", run: func() error { return p.Validate(map[string]any{"id": "a", "name": "a", "email": "x"}) }, err: `P.id: "id" is a physical column`},
		{name: "edge ok", run: func() error { return e.Validate(map[string]any{"w": 1.0}) }},
		{name: "edge src", run: func() error { return e.Validate(map[string]any{"w": 1.0, "src": "a"}) }, err: `E.src: "src" is a physical column`},
		{name: "edge missing", run: func() error { return e.Validate(map[string]any{}) }, err: "E.w: required property is missing"},
		{name: "coerce row value error", run: func() error {
			_, err := p.CoerceRow(map[string]any{"name": "a", "email": "x", "age": "old"})
			return err
		}, err: `P.age: expected I32`},
		{name: "coerce edge row", run: func() error {
			row, err := e.CoerceRow(map[string]any{"w": json.Number("2")})
			if err == nil && (row["w"] != 2.0 || row["note"] != nil || len(row) != 2) {
				t.Errorf("row = %#v", row)
			}
			return err
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			if tc.err == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error = %v, want %q", err, tc.err)
			}
			if !errors.Is(err, ErrInvalidValue) {
				t.Fatalf("errors.Is(%v, ErrInvalidValue) = false", err)
			}
		})
	}
}

func TestIDFor(t *testing.T) {
	c := mustCompile(t, `node S { k: String @key }
node I { k: I64 @key }
node U { k: U64 @key }
node B { k: Bool @key }
node F { k: F32 @key }
node G { k: F64 @key }
node D { k: Date @key }
node T { k: DateTime @key }
node E { k: enum(a, b) @key }
node C { org: String  n: I32  @key(org, n) }
node Free { x: String? }`)
	tests := []struct {
		node string
		row  map[string]any
		want string
		err  string
	}{
		{node: "S", row: map[string]any{"k": "alice"}, want: "alice"},
		{node: "S", row: map[string]any{"k": "a:b/c"}, want: "a:b/c"},
		{node: "S", row: map[string]any{"k": ""}, err: "S.k: key value is empty"},
		{node: "S", row: map[string]any{}, err: "S.k: key property is missing"},
		{node: "S", row: map[string]any{"k": nil}, err: "key property is missing"},
		{node: "I", row: map[string]any{"k": json.Number("-42")}, want: "-42"},
		{node: "I", row: map[string]any{"k": 42.0}, want: "42"},
		{node: "I", row: map[string]any{"k": int64(42)}, want: "42"},
		{node: "I", row: map[string]any{"k": "42"}, want: "42"},
		{node: "I", row: map[string]any{"k": 4.5}, err: "I.k: expected I64"},
		{node: "U", row: map[string]any{"k": json.Number("18446744073709551615")}, want: "18446744073709551615"},
		{node: "B", row: map[string]any{"k": true}, want: "true"},
		{node: "F", row: map[string]any{"k": 0.1}, want: "0.1"},
		{node: "F", row: map[string]any{"k": math.Copysign(0, -1)}, want: "0"},
		{node: "G", row: map[string]any{"k": 0.1}, want: "0.1"},
		{node: "G", row: map[string]any{"k": 1e21}, want: "1e+21"},
		{node: "D", row: map[string]any{"k": "2024-02-29"}, want: "2024-02-29"},
		{node: "D", row: map[string]any{"k": json.Number("19782")}, want: "2024-02-29"},
		{node: "T", row: map[string]any{"k": "2024-05-01T14:00:00.5+02:00"}, want: "2024-05-01T12:00:00.5Z"},
		{node: "E", row: map[string]any{"k": "b"}, want: "b"},
		{node: "E", row: map[string]any{"k": "c"}, err: "E.k: expected one of a, b"},
		{node: "C", row: map[string]any{"org": "acme", "n": 7.0}, want: `["acme","7"]`},
		{node: "C", row: map[string]any{"org": "ac\"me", "n": 7.0}, want: `["ac\"me","7"]`},
		{node: "C", row: map[string]any{"org": "acme"}, err: "C.n: key property is missing"},
	}
	for _, tc := range tests {
		n := mustNode(t, c, tc.node)
		got, err := n.IDFor(tc.row)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrInvalidValue) {
				t.Errorf("%s IDFor(%v) = %q, %v; want error %q", tc.node, tc.row, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s IDFor(%v) = %q, %v; want %q", tc.node, tc.row, got, err, tc.want)
		}
		// Deterministic: the same key gives the same id.
		if again, _ := n.IDFor(tc.row); again != got {
			t.Errorf("%s IDFor not stable: %q then %q", tc.node, got, again)
		}
	}

	// Unkeyed nodes and edges get fresh ULIDs.
	free := mustNode(t, c, "Free")
	ulidRE := regexp.MustCompile(`^[0-9A-HJKMNP-TV-Z]{26}$`)
	seen := map[string]bool{}
	for range 100 {
		id, err := free.IDFor(map[string]any{"x": "same"})
		if err != nil || !ulidRE.MatchString(id) || seen[id] {
			t.Fatalf("unkeyed IDFor = %q, %v (want a fresh ULID)", id, err)
		}
		seen[id] = true
	}
	if id := NewID(); !ulidRE.MatchString(id) || seen[id] {
		t.Fatalf("NewID = %q", id)
	}
}

func TestCanonicalID(t *testing.T) {
	c := mustCompile(t, `node S { k: String @key }
node I { k: I64 @key }
node B { k: Bool @key }
node F { k: F64 @key }
node D { k: Date @key }
node T { k: DateTime @key }
node C { org: String  n: I32  @key(org, n) }
node Free { x: String? }`)
	tests := []struct {
		node, in, want, err string
	}{
		{node: "S", in: "alice", want: "alice"},
		{node: "S", in: "", err: "S.id: id is empty"},
		{node: "I", in: "007", want: "7"},
		{node: "I", in: "-12", want: "-12"},
		{node: "I", in: "x", err: "I.k: expected I64"},
		{node: "B", in: "true", want: "true"},
		{node: "B", in: "yes", err: "not true or false"},
		{node: "F", in: "1.50", want: "1.5"},
		{node: "F", in: "-0", want: "0"},
		{node: "D", in: "2024-02-29", want: "2024-02-29"},
		{node: "D", in: "2024-2-29", err: "expected Date"},
		{node: "T", in: "2024-05-01T14:00:00+02:00", want: "2024-05-01T12:00:00Z"},
		{node: "C", in: `["acme","07"]`, want: `["acme","7"]`},
		{node: "C", in: `["acme"]`, err: "not a JSON array of 2 strings"},
		{node: "C", in: `acme`, err: "not a JSON array"},
		{node: "Free", in: "01ARZ3NDEKTSV4RRFFQ69G5FAV", want: "01ARZ3NDEKTSV4RRFFQ69G5FAV"},
		{node: "Free", in: "anything-given", want: "anything-given"},
	}
	for _, tc := range tests {
		got, err := mustNode(t, c, tc.node).CanonicalID(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrInvalidValue) {
				t.Errorf("%s CanonicalID(%q) = %q, %v; want error %q", tc.node, tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s CanonicalID(%q) = %q, %v; want %q", tc.node, tc.in, got, err, tc.want)
		}
	}
}

// TestDateTimeIsMilliseconds (issue 26 item 13): every DateTime written is
// whole milliseconds, whatever the input's precision, so output always has
// three fraction digits; only a stored value with microseconds (written
// before the rule) shows six.
func TestDateTimeIsMilliseconds(t *testing.T) {
	p := &Property{Name: "at", Type: Type{Kind: KindDateTime}}
	for _, in := range []any{"2025-01-10T08:30:00Z", "2025-01-10T08:30:00.5Z", "2025-01-10T08:30:00.123456Z", "2025-01-10T09:30:00.123456789+01:00",
		"1969-12-31T23:59:59.999999Z", time.Date(2025, 1, 10, 8, 30, 0, 548729000, time.UTC)} {
		v, err := p.Coerce(in)
		if err != nil {
			t.Fatalf("%v: %v", in, err)
		}
		if v.(int64)%1000 != 0 {
			t.Errorf("%v stored as %d µs: not whole milliseconds", in, v)
		}
		out := FormatDateTime(v.(int64))
		if len(out) != len("2025-01-10T08:30:00.000Z") || out[19] != '.' {
			t.Errorf("%v prints %q, want three fraction digits", in, out)
		}
	}
	// A value stored with microseconds before the rule passes Coerce
	// unchanged (engine paths copy it as it is) and prints all its digits.
	if v, err := p.Coerce(int64(-1)); err != nil || v != int64(-1) {
		t.Errorf("a stored canonical value: %v %v", v, err)
	}
	if got := FormatDateTime(-1); got != "1969-12-31T23:59:59.999999Z" {
		t.Errorf("a stored microsecond value prints %q", got)
	}
	if got := DateTimeMicros(time.Date(1969, 12, 31, 23, 59, 59, 999999000, time.UTC)); got != -1000 {
		t.Errorf("truncation before the epoch: %d, want -1000 (towards the past)", got)
	}
}
