package pg

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/omnigraph-go/omnigraph/table"
)

// Canonical values. Coerce returns, for each kind, exactly the Go type the
// Arrow column stores, so the table layer can append it without conversion:
//
//	String, enum  string
//	Bool          bool
//	I32 I64       int32 int64
//	U32 U64       uint32 uint64
//	F32 F64       float32 float64
//	Date          int32, days since 1970-01-01 (date32)
//	DateTime      int64, microseconds since 1970-01-01T00:00:00Z (timestamp[us, UTC])
//	Vector(N)     []float32 of length N
//	Blob          table.Blob (inline bytes, or an external reference)
//	[T]           []any of T's canonical values, never nil elements
//	null          nil (nullable properties only)
//
// JSONValue is the inverse: it renders a canonical value for JSON output in a
// form Coerce reads back.

// DateLayout is the JSON spelling of a Date.
const DateLayout = "2006-01-02"

// NewID returns a new ULID string: the id of an unkeyed node or an edge.
func NewID() string { return ulid.Make().String() }

// Coerce converts v into the property's canonical value (see above) and checks
// it: range and overflow, enum membership, vector length, @range and @check.
//
// Accepted inputs are what encoding/json produces (nil, bool, string, float64,
// json.Number, []any) plus the canonical values themselves and other Go
// numbers, []string, []float32, []float64, []byte and time.Time:
//   - integers: a whole number (json.Number, float64 or any Go integer) or a
//     decimal string (64-bit values are often sent as strings);
//   - Date: "YYYY-MM-DD", an integer number of days since 1970-01-01, or a
//     time.Time (its UTC date);
//   - DateTime: an RFC 3339 string with a zone ("2024-05-01T12:00:00Z"), a
//     time.Time, or an int64 of microseconds; finer precision is truncated to
//     microseconds. JSON numbers are refused because their unit is ambiguous;
//   - Blob: "base64:<payload>" (managed bytes), an absolute URI such as
//     "s3://bucket/key" (an external reference, which a writer admits only
//     under its external blob policy), a plain standard-base64 string,
//     []byte or a table.Blob;
//   - Vector: an array of exactly N finite numbers that fit float32.
//
// A nil v is accepted only for a nullable property. Errors are *ValueError
// naming the property and what was expected.
func (p *Property) Coerce(v any) (any, error) {
	if v == nil {
		if p.Nullable {
			return nil, nil
		}
		return nil, p.fail("is required; expected %s, got null", p.Type.describe())
	}
	out, msg := coerceType(p.Type, v)
	if msg != "" {
		return nil, p.fail("%s", msg)
	}
	if p.Range != nil {
		if f, ok := rangeValue(out); ok {
			if p.Range.Min != nil && f < *p.Range.Min || p.Range.Max != nil && f > *p.Range.Max {
				return nil, p.fail("%s is outside @range(%s)", formatCanonical(out), p.Range)
			}
		}
	}
	if p.Check != nil {
		if s, ok := out.(string); ok && !p.Check.Match(s) {
			return nil, p.fail("%q does not match @check(%s)", clip(s), quote(p.Check.Pattern))
		}
	}
	return out, nil
}

func (p *Property) fail(format string, args ...any) error {
	return &ValueError{Entity: p.Owner, Property: p.Name, Msg: fmt.Sprintf(format, args...)}
}

func rangeValue(v any) (float64, bool) {
	switch x := v.(type) {
	case int32:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint32:
		return float64(x), true
	case uint64:
		return float64(x), true
	case float32:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// describe says in words what values of t look like, for error messages.
func (t Type) describe() string {
	switch t.Kind {
	case KindString:
		return "String (a string)"
	case KindBool:
		return "Bool (true or false)"
	case KindI32:
		return "I32 (a whole number from -2147483648 to 2147483647)"
	case KindI64:
		return "I64 (a whole number from -9223372036854775808 to 9223372036854775807)"
	case KindU32:
		return "U32 (a whole number from 0 to 4294967295)"
	case KindU64:
		return "U64 (a whole number from 0 to 18446744073709551615)"
	case KindF32:
		return "F32 (a finite number within ±3.4e38)"
	case KindF64:
		return "F64 (a finite number)"
	case KindDate:
		return "Date (\"YYYY-MM-DD\" or whole days since 1970-01-01)"
	case KindDateTime:
		return "DateTime (an RFC 3339 string such as \"2024-05-01T12:00:00Z\")"
	case KindVector:
		return fmt.Sprintf("Vector(%d) (an array of %d numbers)", t.Dim, t.Dim)
	case KindBlob:
		return "Blob (\"base64:<payload>\" or an external URI such as \"s3://bucket/key\")"
	case KindList:
		return t.String() + " (an array)"
	case KindEnum:
		return "one of " + strings.Join(t.Values, ", ")
	}
	return t.String()
}

// got renders an input value briefly for error messages.
func got(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("%q", clip(x))
	case json.Number:
		return string(x)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32)
	case bool:
		return strconv.FormatBool(x)
	case []any:
		return fmt.Sprintf("an array of %d", len(x))
	case map[string]any:
		return "an object"
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return fmt.Sprint(v)
	}
	return fmt.Sprintf("a Go %T", v)
}

func clip(s string) string {
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}

// coerceType converts v (not nil) to t's canonical value, or returns a
// message saying what was expected.
func coerceType(t Type, v any) (any, string) {
	bad := func() (any, string) { return nil, "expected " + t.describe() + ", got " + got(v) }
	switch t.Kind {
	case KindString:
		if s, ok := v.(string); ok {
			return s, ""
		}
	case KindEnum:
		if s, ok := v.(string); ok {
			return coerceEnum(t, s)
		}
	case KindBool:
		if b, ok := v.(bool); ok {
			return b, ""
		}
	case KindI32, KindI64, KindU32, KindU64:
		return coerceInt(t, v, bad)
	case KindF32, KindF64:
		return coerceFloat(t, v, bad)
	case KindDate:
		return coerceDate(v, bad)
	case KindDateTime:
		return coerceDateTime(v, bad)
	case KindBlob:
		return coerceBlob(t, v, bad)
	case KindVector:
		return coerceVector(t, v, bad)
	case KindList:
		return coerceList(t, v, bad)
	}
	return bad()
}

func coerceEnum(t Type, s string) (any, string) {
	i := sort.SearchStrings(t.Values, s)
	if i < len(t.Values) && t.Values[i] == s {
		return s, ""
	}
	msg := fmt.Sprintf("expected one of %s, got %q", strings.Join(t.Values, ", "), clip(s))
	if h := didYouMean(s, t.Values); h != "" {
		msg += "; " + h
	}
	return nil, msg
}

// coerceInt takes any integral number (JSON numbers, Go integers, floats
// with no fraction) that fits t.
func coerceInt(t Type, v any, bad func() (any, string)) (any, string) {
	neg, mag, ok := intValue(v)
	if !ok {
		return bad()
	}
	switch t.Kind {
	case KindI32:
		if neg && mag <= 1<<31 || !neg && mag < 1<<31 {
			return int32(signed(neg, mag)), ""
		}
	case KindI64:
		if neg && mag <= 1<<63 || !neg && mag < 1<<63 {
			return signed(neg, mag), ""
		}
	case KindU32:
		if !neg && mag <= math.MaxUint32 || neg && mag == 0 {
			return uint32(mag), ""
		}
	case KindU64:
		if !neg || mag == 0 {
			return mag, ""
		}
	}
	return nil, "expected " + t.describe() + ", got " + got(v) + " (out of range)"
}

// coerceFloat takes any finite number that fits t.
func coerceFloat(t Type, v any, bad func() (any, string)) (any, string) {
	f, ok := floatValue(v)
	if !ok {
		return bad()
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, "expected " + t.describe() + ", got " + got(v)
	}
	if t.Kind == KindF64 {
		return f, ""
	}
	if math.Abs(f) > math.MaxFloat32 {
		return nil, "expected " + t.describe() + ", got " + got(v) + " (out of range)"
	}
	return float32(f), ""
}

// coerceBlob takes bytes, a table.Blob, "base64:<payload>" (padded or
// not), an absolute URI (an external reference: ExternalBlobURI), or a
// plain base64 string.
func coerceBlob(t Type, v any, bad func() (any, string)) (any, string) {
	switch x := v.(type) {
	case []byte:
		return table.InlineBlob(x), ""
	case table.Blob:
		return x, ""
	case string:
		payload, tagged := strings.CutPrefix(x, "base64:")
		if !tagged && strings.Contains(x, ":") {
			uri, err := ExternalBlobURI(x)
			if err != nil {
				return nil, "expected " + t.describe() + ": " + err.Error()
			}
			return table.ExternalBlob(uri), ""
		}
		b, err := base64.StdEncoding.DecodeString(payload)
		if err != nil {
			if b, err = base64.RawStdEncoding.DecodeString(payload); err != nil {
				return nil, "expected " + t.describe() + ", got a string that is neither base64 nor a URI"
			}
		}
		return table.InlineBlob(b), ""
	}
	return bad()
}

// MaxBlobURI bounds an external Blob reference.
const MaxBlobURI = 8 << 10

// ExternalBlobURI checks an external Blob reference: an absolute URI
// (scheme://...) of at most MaxBlobURI bytes with no user info, query or
// fragment (which could carry credentials into the graph), and returns it
// as given. Whether a graph may hold it is its writer's policy
// (graph.ExternalBlobPolicy).
func ExternalBlobURI(s string) (string, error) {
	if len(s) > MaxBlobURI {
		return "", fmt.Errorf("an external URI of %d bytes; the limit is %d", len(s), MaxBlobURI)
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || !strings.Contains(s, "://") || u.Opaque != "" {
		return "", fmt.Errorf("got %s, which is not base64 and not an absolute URI (scheme://...)", got(s))
	}
	if u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.ContainsAny(s, "#?") {
		return "", fmt.Errorf("the URI %s carries user info, a query or a fragment; give the object's plain address (credentials never go into the graph)", got(s))
	}
	if u.Host == "" && u.Path == "" {
		return "", fmt.Errorf("the URI %s names no object", got(s))
	}
	for _, r := range s {
		if r < 0x21 || r == 0x7f {
			return "", fmt.Errorf("the URI %s holds spaces or control characters", got(s))
		}
	}
	return s, nil
}

// coerceVector takes exactly t.Dim finite F32 numbers.
func coerceVector(t Type, v any, bad func() (any, string)) (any, string) {
	var out []float32
	switch x := v.(type) {
	case []float32:
		out = append([]float32(nil), x...)
	default:
		items, ok := sliceOf(v)
		if !ok {
			return bad()
		}
		out = make([]float32, len(items))
		for i, it := range items {
			f, ok := floatValue(it)
			if !ok || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > math.MaxFloat32 {
				return nil, fmt.Sprintf("element %d: expected a finite F32 number, got %s", i, got(it))
			}
			out[i] = float32(f)
		}
	}
	for i, f := range out {
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return nil, fmt.Sprintf("element %d: expected a finite F32 number, got %s", i, got(f))
		}
	}
	if len(out) != t.Dim {
		return nil, fmt.Sprintf("expected %d numbers for Vector(%d), got %d", t.Dim, t.Dim, len(out))
	}
	return out, ""
}

// coerceList coerces every element to t.Elem; elements cannot be null.
func coerceList(t Type, v any, bad func() (any, string)) (any, string) {
	items, ok := sliceOf(v)
	if !ok || t.Elem == nil {
		return bad()
	}
	out := make([]any, len(items))
	for i, it := range items {
		if it == nil {
			return nil, fmt.Sprintf("element %d: list elements cannot be null", i)
		}
		c, msg := coerceType(*t.Elem, it)
		if msg != "" {
			return nil, fmt.Sprintf("element %d: %s", i, msg)
		}
		out[i] = c
	}
	return out, ""
}

func signed(neg bool, mag uint64) int64 {
	if neg {
		return int64(-mag) // two's complement: mag 1<<63 gives MinInt64
	}
	return int64(mag)
}

// intValue reads a whole number as sign and magnitude so every 64-bit range
// check is exact.
func intValue(v any) (neg bool, mag uint64, ok bool) {
	switch x := v.(type) {
	case json.Number:
		return parseIntText(string(x))
	case string:
		return parseIntText(strings.TrimSpace(x))
	case float64:
		return floatInt(x)
	case float32:
		return floatInt(float64(x))
	case bool:
		return false, 0, false
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		i := rv.Int()
		if i < 0 {
			return true, uint64(-i), true // -MinInt64 wraps to 1<<63, which is right as uint64
		}
		return false, uint64(i), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return false, rv.Uint(), true
	}
	return false, 0, false
}

func parseIntText(s string) (bool, uint64, bool) {
	neg := strings.HasPrefix(s, "-")
	digits := strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+")
	if u, err := strconv.ParseUint(digits, 10, 64); err == nil && digits != "" && digits[0] != '+' {
		return neg, u, true
	}
	// 1.0 and 1e3 are whole numbers too.
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return false, 0, false
	}
	return floatInt(f)
}

func floatInt(f float64) (bool, uint64, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) || math.Abs(f) >= 1<<64 {
		return false, 0, false
	}
	if f < 0 {
		return true, uint64(-f), true
	}
	return false, uint64(f), true
}

func floatValue(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		return f, err == nil
	case string, bool:
		return 0, false
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(rv.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return float64(rv.Uint()), true
	}
	return 0, false
}

// sliceOf returns the elements of any Go slice except []byte.
func sliceOf(v any) ([]any, bool) {
	if x, ok := v.([]any); ok {
		return x, true
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice || rv.Type().Elem().Kind() == reflect.Uint8 {
		return nil, false
	}
	out := make([]any, rv.Len())
	for i := range out {
		out[i] = rv.Index(i).Interface()
	}
	return out, true
}

func coerceDate(v any, bad func() (any, string)) (any, string) {
	switch x := v.(type) {
	case string:
		d, err := time.ParseInLocation(DateLayout, x, time.UTC)
		if err != nil {
			return nil, "expected Date as \"YYYY-MM-DD\", got " + got(v)
		}
		return daysOf(d)
	case time.Time:
		y, m, dd := x.UTC().Date()
		return daysOf(time.Date(y, m, dd, 0, 0, 0, 0, time.UTC))
	case bool:
		return bad()
	}
	neg, mag, ok := intValue(v)
	if !ok {
		return bad()
	}
	if neg && mag <= 1<<31 || !neg && mag < 1<<31 {
		return int32(signed(neg, mag)), ""
	}
	return nil, "expected Date, got " + got(v) + " days (out of range)"
}

func daysOf(t time.Time) (any, string) {
	days := t.Unix() / 86400 // t is midnight UTC, so this divides exactly
	if days < math.MinInt32 || days > math.MaxInt32 {
		return nil, "Date out of range"
	}
	return int32(days), ""
}

func coerceDateTime(v any, bad func() (any, string)) (any, string) {
	switch x := v.(type) {
	case string:
		t, err := time.Parse(time.RFC3339Nano, x)
		if err != nil {
			return nil, "expected DateTime as an RFC 3339 string with a zone, e.g. \"2024-05-01T12:00:00Z\", got " + got(v)
		}
		return DateTimeMicros(t), ""
	case time.Time:
		return DateTimeMicros(x), ""
	case int64:
		return x, ""
	case json.Number, float64:
		// A number is milliseconds since the epoch, as in the original.
		neg, mag, ok := intValue(v)
		if !ok || mag > math.MaxInt64/1000 {
			return nil, "expected DateTime as an RFC 3339 string, e.g. \"2024-05-01T12:00:00Z\", or whole milliseconds since the epoch, got " + got(v)
		}
		return signed(neg, mag) * 1000, ""
	}
	return bad()
}

// FormatDate renders days since 1970-01-01 as "YYYY-MM-DD".
func FormatDate(days int32) string {
	return time.Unix(int64(days)*86400, 0).UTC().Format(DateLayout)
}

// DateTimeMicros is the stored value of a DateTime: microseconds since the
// epoch (the column's unit), truncated to whole milliseconds. DateTime has
// the original's precision (epoch milliseconds), so every value written,
// now() included, prints with exactly three fraction digits.
func DateTimeMicros(t time.Time) int64 {
	return t.UnixMilli() * 1000
}

// FormatDateTime renders microseconds since the epoch as RFC 3339 in UTC
// with milliseconds, as the original does ("2024-05-01T08:30:00.000Z"). It
// is the one DateTime format of every output (query rows in the CLI and
// HTTP, export). Values are stored in whole milliseconds (DateTimeMicros);
// only a value written before that rule, with sub-millisecond digits,
// shows all six, so that an export still loads back to the same value.
func FormatDateTime(micros int64) string {
	layout := "2006-01-02T15:04:05.000Z07:00"
	if micros%1000 != 0 {
		layout = "2006-01-02T15:04:05.000000Z07:00"
	}
	return time.UnixMicro(micros).UTC().Format(layout)
}

// JSONValue renders a canonical value of the property for JSON output: Date
// as "YYYY-MM-DD", DateTime as RFC 3339 UTC, an inline Blob as
// "base64:<payload>" and an external one as its URI, lists element-wise,
// everything else unchanged. Coerce reads the result back to the same
// canonical value. A Blob stored in a blob area has no bytes at hand: it
// renders as its descriptor (table.Blob's JSON), which the export streams
// instead (graph/export).
func (p *Property) JSONValue(v any) any { return jsonValue(p.Type, v) }

func jsonValue(t Type, v any) any {
	switch x := v.(type) {
	case int32:
		if t.Kind == KindDate {
			return FormatDate(x)
		}
	case int64:
		if t.Kind == KindDateTime {
			return FormatDateTime(x)
		}
	case []byte:
		return "base64:" + base64.StdEncoding.EncodeToString(x)
	case table.Blob:
		return blobJSONValue(x)
	case []any:
		if t.Kind == KindList && t.Elem != nil {
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = jsonValue(*t.Elem, e)
			}
			return out
		}
	}
	return v
}

// formatCanonical renders a canonical scalar for messages and ids.
func formatCanonical(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float32:
		if x == 0 {
			return "0"
		}
		return strconv.FormatFloat(float64(x), 'g', -1, 32)
	case float64:
		if x == 0 {
			return "0"
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return fmt.Sprint(v)
}

// validateRow checks a row's property names: no unknown names, no physical
// columns, and every required property present and not null.
func validateRow(entity string, props []*Property, reserved []string, row map[string]any) error {
	names := make([]string, 0, len(row))
	for k := range row {
		names = append(names, k)
	}
	sort.Strings(names)
	known := make([]string, len(props))
	for i, p := range props {
		known[i] = p.Name
	}
	for _, k := range names {
		if _, ok := findProp(props, k); ok {
			continue
		}
		for _, r := range reserved {
			if k == r {
				return &ValueError{Entity: entity, Property: k, Msg: fmt.Sprintf("%q is a physical column, not a property; pass it separately (keyed nodes derive their id from the key)", k)}
			}
		}
		msg := fmt.Sprintf("unknown property; %s has %s", entity, listOrNone(known))
		if h := didYouMean(k, known); h != "" {
			msg += "; " + h
		}
		return &ValueError{Entity: entity, Property: k, Msg: msg}
	}
	for _, p := range props {
		if v, ok := row[p.Name]; !p.Nullable && (!ok || v == nil) {
			what := "missing"
			if ok {
				what = "null"
			}
			return &ValueError{Entity: entity, Property: p.Name, Msg: fmt.Sprintf("required property is %s; give %s", what, p.Type.describe())}
		}
	}
	return nil
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "no properties"
	}
	return "properties " + strings.Join(names, ", ")
}

// coerceRow validates a row and coerces every property; absent nullable
// properties come back as nil, so the result has exactly one entry per
// property.
func coerceRow(entity string, props []*Property, reserved []string, row map[string]any) (map[string]any, error) {
	if err := validateRow(entity, props, reserved, row); err != nil {
		return nil, err
	}
	out := make(map[string]any, len(props))
	for _, p := range props {
		c, err := p.Coerce(row[p.Name])
		if err != nil {
			return nil, err
		}
		out[p.Name] = c
	}
	return out, nil
}

// Validate checks a node row (property name to value, no "id"): every name is
// a property of the type and every required property is present and not
// null. Values are checked by Coerce or CoerceRow.
func (n *NodeType) Validate(row map[string]any) error {
	return validateRow(n.Name, n.Properties, []string{ColID}, row)
}

// CoerceRow validates a node row and coerces each value to its canonical
// form. The result holds one entry per property (nil for absent nullable
// ones) and never aliases row.
func (n *NodeType) CoerceRow(row map[string]any) (map[string]any, error) {
	return coerceRow(n.Name, n.Properties, []string{ColID}, row)
}

// Validate checks an edge row (properties only; no id, src or dst) the way
// NodeType.Validate does.
func (e *EdgeType) Validate(row map[string]any) error {
	return validateRow(e.Name, e.Properties, []string{ColID, ColSrc, ColDst}, row)
}

// CoerceRow validates an edge row and coerces each value, as
// NodeType.CoerceRow does.
func (e *EdgeType) CoerceRow(row map[string]any) (map[string]any, error) {
	return coerceRow(e.Name, e.Properties, []string{ColID, ColSrc, ColDst}, row)
}

// IDFor returns the id of a node with the given properties (raw JSON values
// or canonical ones). An unkeyed node gets a new ULID on every call. A keyed
// node's id is the canonical text of its key, so the same key always gives
// the same id, and that id is what edges name as their endpoints:
//   - String and enum: the value itself (it must not be empty);
//   - integers: decimal; Bool: true or false;
//   - F32/F64: shortest round-trip text at the stored width, -0 as 0;
//   - Date: "YYYY-MM-DD"; DateTime: RFC 3339 in UTC with up to µs digits;
//   - composite keys: a JSON array of those texts in @key order,
//     e.g. ["acme","42"].
func (n *NodeType) IDFor(props map[string]any) (string, error) {
	if len(n.Key) == 0 {
		return NewID(), nil
	}
	parts := make([]string, len(n.Key))
	for i, k := range n.Key {
		p, ok := n.Property(k)
		if !ok {
			return "", &ValueError{Entity: n.Name, Property: k, Msg: "key property is not declared"}
		}
		raw, present := props[k]
		if !present || raw == nil {
			return "", &ValueError{Entity: n.Name, Property: k, Msg: "key property is missing; keyed nodes need every @key property to derive their id"}
		}
		c, err := p.Coerce(raw)
		if err != nil {
			return "", err
		}
		s, err := keyText(p, c)
		if err != nil {
			return "", err
		}
		parts[i] = s
	}
	if len(parts) == 1 {
		return parts[0], nil
	}
	b, err := json.Marshal(parts)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

func keyText(p *Property, v any) (string, error) {
	switch x := v.(type) {
	case string:
		if x == "" {
			return "", p.fail("key value is empty; keys must be non-empty strings")
		}
		return x, nil
	case int32:
		if p.Type.Kind == KindDate {
			return FormatDate(x), nil
		}
	case int64:
		if p.Type.Kind == KindDateTime {
			// Ids keep the shortest RFC 3339 spelling they always had, so
			// existing keyed ids do not change.
			return time.UnixMicro(x).UTC().Format(time.RFC3339Nano), nil
		}
	case []byte, []any, []float32, table.Blob:
		return "", p.fail("%s cannot be a key", p.Type)
	}
	return formatCanonical(v), nil
}

// CanonicalID checks an id given as text (an edge endpoint, or data.id in
// load input) against the node type and returns its canonical spelling. For
// an unkeyed node any non-empty id is kept as is. For a keyed node the text
// is read as the key value and rendered as IDFor would ("007" becomes "7"
// for an integer key, a DateTime is normalised to UTC); a composite key is
// read as a JSON array of strings.
func (n *NodeType) CanonicalID(id string) (string, error) {
	if id == "" {
		return "", &ValueError{Entity: n.Name, Property: ColID, Msg: "id is empty"}
	}
	if len(n.Key) == 0 {
		return id, nil
	}
	parts := []string{id}
	if len(n.Key) > 1 {
		if err := json.Unmarshal([]byte(id), &parts); err != nil || len(parts) != len(n.Key) {
			return "", &ValueError{Entity: n.Name, Property: ColID, Msg: fmt.Sprintf("id %q is not a JSON array of %d strings (the composite key %s)", clip(id), len(n.Key), strings.Join(n.Key, ", "))}
		}
	}
	row := make(map[string]any, len(n.Key))
	for i, k := range n.Key {
		p, ok := n.Property(k)
		if !ok {
			return "", &ValueError{Entity: n.Name, Property: k, Msg: "key property is not declared"}
		}
		v, err := keyFromText(p, parts[i])
		if err != nil {
			return "", err
		}
		row[k] = v
	}
	return n.IDFor(row)
}

// keyFromText reads the text form of a key value (as IDFor writes it).
func keyFromText(p *Property, s string) (any, error) {
	switch p.Type.Kind {
	case KindBool:
		switch s {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, p.fail("key text %q is not true or false", clip(s))
	case KindF32, KindF64:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, p.fail("key text %q is not a number", clip(s))
		}
		return f, nil
	}
	return s, nil // strings, enums, integers, Date and DateTime read text
}

// blobJSONValue renders a Blob for JSON output (see JSONValue).
func blobJSONValue(b table.Blob) any {
	switch {
	case b.External():
		return b.URI
	case b.Stored():
		return b
	}
	return "base64:" + base64.StdEncoding.EncodeToString(b.Data)
}
