package load

// A strict JSON value parser for load lines. encoding/json silently keeps the
// last of two members with the same name; the loader must refuse them (at
// any depth), so lines are parsed here. Numbers come back as json.Number so
// 64-bit integers keep every digit; objects as map[string]any, arrays as
// []any.

import (
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// maxJSONDepth bounds nesting so a hostile line cannot exhaust the stack.
const maxJSONDepth = 64

// maxJSONTokens bounds the structural tokens of one line.
const maxJSONTokens = 1 << 22

type jsonParser struct {
	s      []byte
	i      int
	tokens int
}

// parseJSONLine parses one complete JSON value; trailing non-space is an
// error. Errors say what is wrong and at which byte column.
func parseJSONLine(b []byte) (any, error) {
	p := &jsonParser{s: b}
	p.space()
	v, err := p.value(0, "")
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i < len(p.s) {
		return nil, p.errorf("unexpected %s after the value; put one JSON object per line", p.char())
	}
	return v, nil
}

// errorf locates a message at the parser's position; columns count
// characters, not bytes.
func (p *jsonParser) errorf(format string, args ...any) error {
	return fmt.Errorf("column %d: %s", p.col(p.i), fmt.Sprintf(format, args...))
}

func (p *jsonParser) col(at int) int { return 1 + utf8.RuneCount(p.s[:min(at, len(p.s))]) }

// char quotes the character at the parser's position: the character, never
// its first byte ('é', not 'Ã'); a byte order mark and a byte that is not
// UTF-8 are named.
func (p *jsonParser) char() string {
	r, _ := utf8.DecodeRune(p.s[p.i:])
	switch {
	case r == '\ufeff':
		return "byte order mark (U+FEFF; only the file's first line may start with one)"
	case r == utf8.RuneError:
		return "byte that is not UTF-8"
	}
	return strconv.QuoteRune(r)
}

func (p *jsonParser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\r', '\n':
			p.i++
		default:
			return
		}
	}
}

func (p *jsonParser) value(depth int, path string) (any, error) {
	if depth > maxJSONDepth {
		return nil, p.errorf("JSON nested deeper than %d levels", maxJSONDepth)
	}
	p.tokens++
	if p.tokens > maxJSONTokens {
		return nil, p.errorf("line has more than %d JSON tokens; split it", maxJSONTokens)
	}
	if p.i >= len(p.s) {
		return nil, p.errorf("unexpected end of line; the JSON value is incomplete")
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.object(depth, path)
	case c == '[':
		return p.array(depth, path)
	case c == '"':
		return p.str()
	case c == 't':
		return true, p.lit("true")
	case c == 'f':
		return false, p.lit("false")
	case c == 'n':
		return nil, p.lit("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		return nil, p.errorf("unexpected %s; expected a JSON value", p.char())
	}
}

func (p *jsonParser) lit(w string) error {
	if len(p.s)-p.i < len(w) || string(p.s[p.i:p.i+len(w)]) != w {
		return p.errorf("invalid literal; expected %s", w)
	}
	p.i += len(w)
	return nil
}

func (p *jsonParser) object(depth int, path string) (any, error) {
	p.i++ // {
	out := map[string]any{}
	p.space()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return out, nil
	}
	for {
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			return nil, p.errorf("expected a quoted member name")
		}
		at := p.i
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		name := k.(string)
		member := name
		if path != "" {
			member = path + "." + name
		}
		if _, dup := out[name]; dup {
			p.i = at
			return nil, &dupFieldError{field: member, col: p.col(at)}
		}
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return nil, p.errorf("expected ':' after member %q", member)
		}
		p.i++
		p.space()
		v, err := p.value(depth+1, member)
		if err != nil {
			return nil, err
		}
		out[name] = v
		p.space()
		if p.i >= len(p.s) {
			return nil, p.errorf("unexpected end of line inside an object")
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return out, nil
		default:
			return nil, p.errorf("expected ',' or '}' after member %q", member)
		}
	}
}

// dupFieldError is a JSON member given twice in one object.
type dupFieldError struct {
	field string
	col   int
}

func (e *dupFieldError) Error() string {
	return fmt.Sprintf("column %d: duplicate field %q; give each field once", e.col, e.field)
}

func (p *jsonParser) array(depth int, path string) (any, error) {
	p.i++ // [
	out := []any{}
	p.space()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		return out, nil
	}
	for {
		p.space()
		v, err := p.value(depth+1, path+"[]")
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		p.space()
		if p.i >= len(p.s) {
			return nil, p.errorf("unexpected end of line inside an array")
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return out, nil
		default:
			return nil, p.errorf("expected ',' or ']' in an array")
		}
	}
}

func (p *jsonParser) str() (any, error) {
	p.i++ // opening quote
	start := p.i
	// Fast path: no escapes.
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c == '"' {
			s := p.s[start:p.i]
			p.i++
			if !utf8.Valid(s) {
				return nil, p.errorf("string is not valid UTF-8")
			}
			return string(s), nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			return nil, p.errorf("control character in a string; escape it")
		}
		p.i++
	}
	buf := append([]byte(nil), p.s[start:p.i]...)
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			if !utf8.Valid(buf) {
				return nil, p.errorf("string is not valid UTF-8")
			}
			return string(buf), nil
		case c < 0x20:
			return nil, p.errorf("control character in a string; escape it")
		case c != '\\':
			buf = append(buf, c)
			p.i++
			continue
		}
		p.i++
		if p.i >= len(p.s) {
			break
		}
		e := p.s[p.i]
		esc := p.char()
		p.i++
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, err := p.hex4()
			if err != nil {
				return nil, err
			}
			if utf16.IsSurrogate(r) {
				if p.i+6 <= len(p.s) && p.s[p.i] == '\\' && p.s[p.i+1] == 'u' {
					p.i += 2
					r2, err := p.hex4()
					if err != nil {
						return nil, err
					}
					r = utf16.DecodeRune(r, r2)
				} else {
					r = utf8.RuneError
				}
			}
			buf = utf8.AppendRune(buf, r)
		default:
			return nil, p.errorf("invalid escape: a backslash before %s in a string", esc)
		}
	}
	return nil, p.errorf("unterminated string")
}

func (p *jsonParser) hex4() (rune, error) {
	if p.i+4 > len(p.s) {
		return 0, p.errorf("incomplete \\u escape")
	}
	n, err := strconv.ParseUint(string(p.s[p.i:p.i+4]), 16, 32)
	if err != nil {
		return 0, p.errorf("invalid \\u escape")
	}
	p.i += 4
	return rune(n), nil
}

func (p *jsonParser) number() (any, error) {
	start := p.i
	if p.s[p.i] == '-' {
		p.i++
	}
	digits := func() int {
		n := 0
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.i < len(p.s) && p.s[p.i] == '0' {
		p.i++
	} else if digits() == 0 {
		return nil, p.errorf("invalid number")
	}
	if p.i < len(p.s) && p.s[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return nil, p.errorf("invalid number: digits must follow '.'")
		}
	}
	if p.i < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		p.i++
		if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return nil, p.errorf("invalid number: digits must follow the exponent")
		}
	}
	return json.Number(p.s[start:p.i]), nil
}
