package server

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/omnigraph-go/omnigraph/text"
)

// The one decoding layer of every request: JSON bodies of the routes, the
// arguments of the MCP tools and the query strings. The rules:
//
//   - a member of a JSON object is matched exactly against the json names
//     of the request type (the same struct the OpenAPI schema is built
//     from); an unknown member, or one given twice, is refused naming it,
//     before any engine work;
//   - a value of the wrong JSON type is refused naming the member and the
//     JSON type it must be, never a Go type;
//   - a query parameter the route does not list, or a single-valued one
//     given twice, is refused naming it.
//
// Every refusal is a 400 bad_request (a *Failure) whose message says what
// to send instead.

// DecodeJSON is decodeStrict for callers outside the server (the CLI's
// --params): the same rules and messages, so a user meets one wording
// whichever way the JSON came in. The error is a plain error whose message
// is safe to show.
func DecodeJSON(b []byte, v any, what string) error {
	if err := decodeStrict(b, v, what); err != nil {
		return errors.New(err.Error())
	}
	return nil
}

// decodeStrict decodes b, one JSON object, into v (a pointer to a request
// struct or a map). what names the input in messages ("the body", "the
// arguments of graph_query").
func decodeStrict(b []byte, v any, what string) error {
	t := reflect.TypeOf(v).Elem()
	if len(bytes.TrimSpace(b)) == 0 {
		if t.Kind() != reflect.Struct {
			return badRequest("%s is empty: send a JSON object", what)
		}
		return badRequest("%s is empty: send a JSON object with the members %s", what, memberList(t))
	}
	if err := syntaxCheck(b, what); err != nil {
		return err
	}
	if err := checkValue(json.RawMessage(b), t, "", what); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		// checkValue accepts only what decodes; this is a backstop, and
		// its message must not carry the decoder's Go type names.
		return badRequest("%s does not fit this request: send a JSON object as its documentation shows", what)
	}
	return nil
}

// syntaxCheck refuses input that is not exactly one JSON value, quoting
// the offending character as a character (not a byte) with its line and
// column.
func syntaxCheck(b []byte, what string) error {
	// Into a RawMessage: the syntax is checked whole and no number is
	// converted, so a valid number out of float64's range (1e400) is left
	// for checkValue to call out of range, not called invalid JSON.
	var x json.RawMessage
	err := json.Unmarshal(b, &x)
	if err == nil {
		return nil
	}
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return badRequest("%s is not valid JSON", what)
	}
	if se.Offset >= int64(len(b)) || strings.Contains(se.Error(), "unexpected end") {
		return badRequest("%s is not valid JSON: it ends before its JSON value is complete", what)
	}
	at := int(se.Offset) - 1
	if at < 0 {
		at = 0
	}
	// The decoder stops on a byte; step back to the start of the
	// character it belongs to.
	for at > 0 && !utf8.RuneStart(b[at]) {
		at--
	}
	r, _ := utf8.DecodeRune(b[at:])
	line := 1 + bytes.Count(b[:at], []byte{'\n'})
	col := 1 + utf8.RuneCount(b[bytes.LastIndexByte(b[:at], '\n')+1:at])
	if strings.Contains(se.Error(), "after top-level value") {
		return badRequest("%s is not valid JSON: unexpected %s after the JSON value at line %d, column %d; send one JSON object", what, quoteRune(r), line, col)
	}
	return badRequest("%s is not valid JSON: unexpected %s at line %d, column %d", what, quoteRune(r), line, col)
}

// quoteRune quotes one character for a message: the character itself
// when it is printable, else its U+ code point.
func quoteRune(r rune) string {
	if r == utf8.RuneError {
		return "a byte that is not UTF-8"
	}
	if strconv.IsPrint(r) {
		return strconv.QuoteRune(r)
	}
	return fmt.Sprintf("character U+%04X", r)
}

// jsonKind is the JSON type of a raw value, in the words messages use.
func jsonKind(raw json.RawMessage) string {
	s := bytes.TrimSpace(raw)
	if len(s) == 0 {
		return "nothing"
	}
	switch s[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// wantKind is the JSON type a Go type decodes from, in the words messages
// use.
func wantKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean (true or false)"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a JSON value"
}

var (
	rawMessageType      = reflect.TypeFor[json.RawMessage]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
)

// textKind says what string a type read from text takes.
func textKind(t reflect.Type) string {
	if t == reflect.TypeFor[time.Time]() {
		return "an RFC 3339 date-time string, as in \"2026-01-31T12:00:00Z\""
	}
	return "a string of its documented form"
}

// checkValue checks raw against the JSON shape of t: the kinds, the exact
// members of structs, no member twice. path is where raw sits ("" for the
// whole input).
func checkValue(raw json.RawMessage, t reflect.Type, path, what string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	got := jsonKind(raw)
	if got == "null" && path != "" {
		return nil // a member set to null keeps its default
	}
	if t == rawMessageType || t.Kind() == reflect.Interface {
		if path == "" && got != "an object" {
			return badRequest("%s must be a JSON object, not %s", what, got)
		}
		return nil
	}
	if reflect.PointerTo(t).Implements(textUnmarshalerType) {
		// A value read from a string (a time.Time): a string that the
		// type itself accepts.
		if got != "a string" {
			return badRequest("%s: %s must be %s, not %s", what, quotePath(path), textKind(t), got)
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return badRequest("%s: %s must be %s", what, quotePath(path), textKind(t))
		}
		if err := reflect.New(t).Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
			return badRequest("%s: %s must be %s, not %q", what, quotePath(path), textKind(t), s)
		}
		return nil
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshalerType) {
		// A type that reads its own JSON (a config size given as 512 or
		// "512MiB"): it decides, and its error is written for users.
		if err := reflect.New(t).Interface().(json.Unmarshaler).UnmarshalJSON(raw); err != nil {
			if path == "" {
				return badRequest("%s: %v", what, err)
			}
			return badRequest("%s: %s: %v", what, quotePath(path), err)
		}
		return nil
	}
	mismatch := func() error {
		if path == "" && t.Kind() == reflect.Struct {
			return badRequest("%s must be a JSON object with the members %s, not %s", what, memberList(t), got)
		}
		if path == "" {
			return badRequest("%s must be a JSON object, not %s", what, got)
		}
		return badRequest("%s: %s must be %s, not %s", what, quotePath(path), wantKind(t), got)
	}
	switch t.Kind() {
	case reflect.String:
		if got != "a string" {
			return mismatch()
		}
	case reflect.Bool:
		if got != "a boolean" {
			return mismatch()
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if got != "a number" {
			return mismatch()
		}
		if _, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, t.Bits()); err != nil {
			return badRequest("%s: %s must be a whole number between %d and %d, not %s", what, quotePath(path), minInt(t.Bits()), maxInt(t.Bits()), bytes.TrimSpace(raw))
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if got != "a number" {
			return mismatch()
		}
		if _, err := strconv.ParseUint(string(bytes.TrimSpace(raw)), 10, t.Bits()); err != nil {
			return badRequest("%s: %s must be a whole number from 0 to %d, not %s", what, quotePath(path), uint64(1)<<t.Bits()-1, bytes.TrimSpace(raw))
		}
	case reflect.Float32, reflect.Float64:
		if got != "a number" {
			return mismatch()
		}
		if _, err := strconv.ParseFloat(string(bytes.TrimSpace(raw)), t.Bits()); err != nil {
			return badRequest("%s: %s must be a number within range, not %s", what, quotePath(path), bytes.TrimSpace(raw))
		}
	case reflect.Slice:
		if got != "an array" {
			return mismatch()
		}
		var elems []json.RawMessage
		if err := json.Unmarshal(raw, &elems); err != nil {
			return mismatch()
		}
		for i, e := range elems {
			if err := checkValue(e, t.Elem(), path+"["+strconv.Itoa(i)+"]", what); err != nil {
				return err
			}
		}
	case reflect.Map:
		if got != "an object" || t.Key().Kind() != reflect.String {
			return mismatch()
		}
		return walkObject(raw, path, what, func(name string, v json.RawMessage) error {
			return checkValue(v, t.Elem(), joinPath(path, name), what)
		})
	case reflect.Struct:
		if got != "an object" {
			return mismatch()
		}
		fields := jsonFields(t)
		return walkObject(raw, path, what, func(name string, v json.RawMessage) error {
			ft, ok := fields[name]
			if !ok {
				return unknownMember(name, path, t, what)
			}
			return checkValue(v, ft, joinPath(path, name), what)
		})
	default:
		return mismatch()
	}
	return nil
}

func minInt(bits int) int64 { return -1 << (bits - 1) }
func maxInt(bits int) int64 { return 1<<(bits-1) - 1 }

// walkObject calls fn for each member of the JSON object raw, in order,
// refusing a member given twice (JSON leaves it undefined which wins).
func walkObject(raw json.RawMessage, path, what string, fn func(string, json.RawMessage) error) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // '{'
		return badRequest("%s is not valid JSON", what)
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return badRequest("%s is not valid JSON", what)
		}
		name, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return badRequest("%s is not valid JSON", what)
		}
		if seen[name] {
			return badRequest("%s: member %s is given twice; send it once", what, quotePath(joinPath(path, name)))
		}
		seen[name] = true
		if err := fn(name, v); err != nil {
			return err
		}
	}
	return nil
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// quotePath quotes a member path for a message.
func quotePath(p string) string { return strconv.Quote(p) }

// jsonFields maps the json names of a struct's members (embedded structs
// flattened, as encoding/json does) to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for n, t := range jsonFields(ft) {
					out[n] = t
				}
				continue
			}
		}
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

// memberNames lists the json names of a struct type in declaration order.
func memberNames(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" {
			out = append(out, memberNames(f.Type)...)
			continue
		}
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	return out
}

func memberList(t reflect.Type) string {
	if t.Kind() != reflect.Struct {
		return "of your choice"
	}
	names := memberNames(t)
	if len(names) == 0 {
		return "(none: send {})"
	}
	return strings.Join(names, ", ")
}

func unknownMember(name, path string, t reflect.Type, what string) error {
	names := memberNames(t)
	hint := ""
	if s := text.Closest(name, names); s != "" {
		hint = fmt.Sprintf(" (did you mean %q?)", s)
	}
	where := what
	if path != "" {
		where = what + ", in " + quotePath(path)
	}
	if len(names) == 0 {
		return badRequest("%s: unknown member %q%s; it takes no members: send {}; nothing was changed", where, name, hint)
	}
	return badRequest("%s: unknown member %q%s; the members are %s; nothing was changed", where, name, hint, strings.Join(names, ", "))
}

// checkQuery refuses a query parameter rt does not list, and a
// single-valued one given more than once.
func checkQuery(rt Route, q url.Values) *Failure {
	names := make([]string, 0, len(q))
	for k := range q {
		names = append(names, k)
	}
	slices.Sort(names) // one answer whatever the map order
	known := make([]string, len(rt.Query))
	for i, p := range rt.Query {
		known[i] = p.Name
	}
	for _, k := range names {
		i := slices.Index(known, k)
		if i < 0 {
			hint := ""
			if s := text.Closest(k, known); s != "" {
				hint = fmt.Sprintf(" (did you mean %q?)", s)
			}
			if len(known) == 0 {
				return badRequest("unknown query parameter %q: %s %s takes no query parameters; nothing was changed", k, rt.Method, rt.Path)
			}
			return badRequest("unknown query parameter %q%s: %s %s takes %s; nothing was changed", k, hint, rt.Method, rt.Path, strings.Join(known, ", "))
		}
		if len(q[k]) > 1 && !rt.Query[i].Repeat {
			return badRequest("query parameter %q is given %d times; give it once", k, len(q[k]))
		}
	}
	return nil
}

// readBody reads a request body within the route's limit: a body cut at
// the limit is 413.
func readBody(body io.Reader) ([]byte, error) {
	b, err := io.ReadAll(body)
	if err != nil {
		var mbe *maxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge(mbe.resource, mbe.limit, 0)
		}
		return nil, badRequest("the request body could not be read to its end; send it again")
	}
	return b, nil
}
