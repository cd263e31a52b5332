package pg

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

type tokKind uint8

const (
	tEOF tokKind = iota
	tIdent
	tNumber
	tString
	tPunct
)

type token struct {
	kind tokKind
	text string // identifier, number text, unquoted string, or punctuation
	pos  Pos
}

// describe renders the token for "found ..." messages.
func (t token) describe() string {
	switch t.kind {
	case tEOF:
		return "end of file"
	case tIdent:
		return fmt.Sprintf("%q", t.text)
	case tNumber:
		return "number " + t.text
	case tString:
		return "string " + quote(t.text)
	}
	return fmt.Sprintf("%q", t.text)
}

type lexer struct {
	src  string
	off  int
	line int
	col  int
	// keepEscapes keeps an unknown backslash escape as written instead of
	// failing, for schemas accepted before unknown escapes were refused.
	keepEscapes bool
}

// newLexer starts at the first byte of src, after a UTF-8 byte order mark if
// the file begins with one (editors on Windows write it); positions count
// from the first byte after it, as the editor shows them.
func newLexer(src string) *lexer { return &lexer{src: StripBOM(src), line: 1, col: 1} }

// bom is the UTF-8 encoding of U+FEFF, the byte order mark.
const bom = "\ufeff"

// StripBOM removes one leading UTF-8 byte order mark from src.
func StripBOM(src string) string { return strings.TrimPrefix(src, bom) }

func (l *lexer) pos() Pos { return Pos{Line: l.line, Col: l.col} }

// advance moves n bytes on; columns count characters, not bytes.
func (l *lexer) advance(n int) {
	for i := 0; i < n && l.off < len(l.src); i++ {
		if l.src[l.off] == '\n' {
			l.line++
			l.col = 1
		} else if utf8.RuneStart(l.src[l.off]) {
			l.col++
		}
		l.off++
	}
}

func (l *lexer) errAt(p Pos, msg, hint string) *Error {
	return &Error{Line: p.Line, Col: p.Col, Msg: msg, Hint: hint}
}

// skipSpace skips whitespace and comments.
func (l *lexer) skipSpace() error {
	for l.off < len(l.src) {
		c := l.src[l.off]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			l.advance(1)
		case strings.HasPrefix(l.src[l.off:], "//"):
			for l.off < len(l.src) && l.src[l.off] != '\n' {
				l.advance(1)
			}
		case strings.HasPrefix(l.src[l.off:], "/*"):
			start := l.pos()
			end := strings.Index(l.src[l.off+2:], "*/")
			if end < 0 {
				return l.errAt(start, "unterminated block comment", "close it with */")
			}
			l.advance(end + 4)
		default:
			return nil
		}
	}
	return nil
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

// next scans one token.
func (l *lexer) next() (token, error) {
	if err := l.skipSpace(); err != nil {
		return token{}, err
	}
	start := l.pos()
	if l.off >= len(l.src) {
		return token{kind: tEOF, pos: start}, nil
	}
	rest := l.src[l.off:]
	c := rest[0]
	switch {
	case isLetter(c):
		n := 1
		for n < len(rest) && (isLetter(rest[n]) || isDigit(rest[n])) {
			n++
		}
		l.advance(n)
		return token{kind: tIdent, text: rest[:n], pos: start}, nil
	case isDigit(c) || c == '-' && len(rest) > 1 && isDigit(rest[1]):
		n := 1
		for n < len(rest) && isDigit(rest[n]) {
			n++
		}
		if n+1 < len(rest) && rest[n] == '.' && isDigit(rest[n+1]) {
			n += 2
			for n < len(rest) && isDigit(rest[n]) {
				n++
			}
		}
		l.advance(n)
		return token{kind: tNumber, text: rest[:n], pos: start}, nil
	case c == '"':
		return l.scanString(start)
	case strings.HasPrefix(rest, "->"), strings.HasPrefix(rest, ".."):
		l.advance(2)
		return token{kind: tPunct, text: rest[:2], pos: start}, nil
	case strings.IndexByte("{}()[]:,?@=*", c) >= 0:
		l.advance(1)
		return token{kind: tPunct, text: rest[:1], pos: start}, nil
	}
	if c >= 0x80 {
		// Quote the character, never its first byte.
		r, _ := utf8.DecodeRuneInString(rest)
		if r == '\ufeff' {
			return token{}, l.errAt(start, "unexpected byte order mark (U+FEFF)", "a byte order mark may only start the file; remove this one")
		}
		if r == utf8.RuneError {
			return token{}, l.errAt(start, "a byte that is not UTF-8", "save the file as UTF-8")
		}
		return token{}, l.errAt(start, fmt.Sprintf("unexpected non-ASCII character %q", r), "names use ASCII letters, digits and _; other text belongs in a \"string\"")
	}
	hint := "remove it"
	switch c {
	case ';':
		hint = "declarations and properties need no separator; remove the ;"
	case '-':
		hint = "write -> between edge endpoints, or a digit after - for a negative number"
	case '.':
		hint = "write .. for a range, e.g. 1..10"
	case '#':
		hint = "comments start with // or /*"
	case '<', '>':
		hint = "write -> between edge endpoints"
	case '\'':
		hint = "strings use double quotes"
	}
	return token{}, l.errAt(start, fmt.Sprintf("unexpected character %q", c), hint)
}

// scanString scans a double-quoted string. \" and \\ are escapes, \n \t \r
// are the control characters; any other escape is an error, as in the
// original (a regular expression writes "^\\d+$"), unless keepEscapes.
func (l *lexer) scanString(start Pos) (token, error) {
	var b strings.Builder
	i := 1
	src := l.src[l.off:]
	for {
		if i >= len(src) || src[i] == '\n' {
			return token{}, l.errAt(start, "unterminated string", "close the string with \" on the same line")
		}
		c := src[i]
		if c == '"' {
			i++
			break
		}
		if c == '\\' && i+1 < len(src) {
			switch src[i+1] {
			case '"', '\\':
				b.WriteByte(src[i+1])
				i += 2
				continue
			case 'n':
				b.WriteByte('\n')
				i += 2
				continue
			case 't':
				b.WriteByte('\t')
				i += 2
				continue
			case 'r':
				b.WriteByte('\r')
				i += 2
				continue
			}
			if !l.keepEscapes {
				at := Pos{Line: start.Line, Col: start.Col + utf8.RuneCountInString(src[:i])}
				r, _ := utf8.DecodeRuneInString(src[i+1:])
				return token{}, l.errAt(at, fmt.Sprintf("unknown escape \\%c in string", r), `strings know \n, \t, \r, \" and \\; write a literal backslash as \\, e.g. "^\\d+$"`)
			}
		}
		b.WriteByte(c)
		i++
	}
	l.advance(i)
	return token{kind: tString, text: b.String(), pos: start}, nil
}

// scanEnumValue scans one enum value: letters, digits, _ and -.
func (l *lexer) scanEnumValue() (token, error) {
	if err := l.skipSpace(); err != nil {
		return token{}, err
	}
	start := l.pos()
	rest := l.src[l.off:]
	n := 0
	for n < len(rest) && (isLetter(rest[n]) || isDigit(rest[n]) || rest[n] == '-') {
		// "->" never belongs to a value.
		if rest[n] == '-' && n+1 < len(rest) && rest[n+1] == '>' {
			break
		}
		n++
	}
	l.advance(n)
	return token{kind: tIdent, text: rest[:n], pos: start}, nil
}

// quote renders s as a .pg string literal that scanString reads back as s.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		case '\r':
			b.WriteString(`\r`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
