package gq

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// tokKind classifies a lexical token.
type tokKind int

const (
	tEOF      tokKind = iota
	tIdent            // name, Person, knows, match, ...
	tVar              // $name or $_ (text holds the name without '$')
	tString           // "..." (text holds the decoded value)
	tInt              // 123 (text holds the digits)
	tFloat            // 1.5
	tLBrace           // {
	tRBrace           // }
	tLParen           // (
	tRParen           // )
	tLBrack           // [
	tRBrack           // ]
	tComma            // ,
	tColon            // :
	tDot              // .
	tAt               // @
	tMinus            // -
	tEq               // =
	tNe               // !=
	tLt               // <
	tLe               // <=
	tGt               // >
	tGe               // >=
	tQuestion         // ?
)

var tokNames = map[tokKind]string{
	tEOF: "end of input", tIdent: "name", tVar: "variable", tString: "string",
	tInt: "integer", tFloat: "number", tLBrace: "'{'", tRBrace: "'}'", tLParen: "'('",
	tRParen: "')'", tLBrack: "'['", tRBrack: "']'", tComma: "','", tColon: "':'",
	tDot: "'.'", tAt: "'@'", tMinus: "'-'", tEq: "'='", tNe: "'!='", tLt: "'<'",
	tLe: "'<='", tGt: "'>'", tGe: "'>='", tQuestion: "'?'",
}

func (k tokKind) String() string { return tokNames[k] }

// Pos is a 1-based line and column (columns count characters, not bytes).
type Pos struct {
	Line int `json:"line"`
	Col  int `json:"column"`
}

func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

type token struct {
	kind tokKind
	text string
	pos  Pos
}

func (t token) describe() string {
	switch t.kind {
	case tIdent:
		return fmt.Sprintf("%q", t.text)
	case tVar:
		return "$" + t.text
	case tString:
		return fmt.Sprintf("string %q", t.text)
	case tInt, tFloat:
		return t.text
	}
	return t.kind.String()
}

// lex turns src into tokens. It stops at the first lexical error, returning
// it with the tokens before it. A leading UTF-8 byte order mark is skipped;
// positions count from the byte after it.
func lex(src string) ([]token, error) {
	l := &lexer{src: strings.TrimPrefix(src, "\ufeff"), line: 1, col: 1}
	var toks []token
	for {
		t, err := l.next()
		if err != nil {
			return toks, err
		}
		toks = append(toks, t)
		if t.kind == tEOF {
			return toks, nil
		}
	}
}

type lexer struct {
	src       string
	off       int
	line, col int
}

func (l *lexer) peek() rune {
	if l.off >= len(l.src) {
		return -1
	}
	r, _ := utf8.DecodeRuneInString(l.src[l.off:])
	return r
}

func (l *lexer) peekAt(n int) rune {
	off := l.off
	for i := 0; i < n; i++ {
		if off >= len(l.src) {
			return -1
		}
		_, sz := utf8.DecodeRuneInString(l.src[off:])
		off += sz
	}
	if off >= len(l.src) {
		return -1
	}
	r, _ := utf8.DecodeRuneInString(l.src[off:])
	return r
}

func (l *lexer) advance() rune {
	r, sz := utf8.DecodeRuneInString(l.src[l.off:])
	l.off += sz
	if r == '\n' {
		l.line++
		l.col = 1
	} else {
		l.col++
	}
	return r
}

func (l *lexer) pos() Pos { return Pos{l.line, l.col} }

func isIdentStart(r rune) bool {
	return r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
}

func isIdentPart(r rune) bool { return isIdentStart(r) || isDigit(r) }

func isDigit(r rune) bool { return r >= '0' && r <= '9' }

func (l *lexer) skipSpace() error {
	for {
		r := l.peek()
		switch {
		case r == ' ' || r == '\t' || r == '\n' || r == '\r':
			l.advance()
		case r == '/' && l.peekAt(1) == '/':
			for l.peek() != -1 && l.peek() != '\n' {
				l.advance()
			}
		case r == '/' && l.peekAt(1) == '*':
			start := l.pos()
			l.advance()
			l.advance()
			for {
				if l.peek() == -1 {
					return errorf(CodeSyntax, start, "unterminated /* comment; close it with */")
				}
				if l.peek() == '*' && l.peekAt(1) == '/' {
					l.advance()
					l.advance()
					break
				}
				l.advance()
			}
		default:
			return nil
		}
	}
}

func (l *lexer) next() (token, error) {
	if err := l.skipSpace(); err != nil {
		return token{}, err
	}
	start := l.pos()
	r := l.peek()
	if r == -1 {
		return token{kind: tEOF, pos: start}, nil
	}
	if r == utf8.RuneError {
		return token{}, errorf(CodeSyntax, start, "invalid UTF-8 in query text")
	}
	single := map[rune]tokKind{
		'{': tLBrace, '}': tRBrace, '(': tLParen, ')': tRParen, '[': tLBrack, ']': tRBrack,
		',': tComma, ':': tColon, '.': tDot, '@': tAt, '-': tMinus, '=': tEq, '?': tQuestion,
	}
	switch {
	case isIdentStart(r):
		off := l.off
		for isIdentPart(l.peek()) {
			l.advance()
		}
		return token{kind: tIdent, text: l.src[off:l.off], pos: start}, nil
	case r == '$':
		l.advance()
		if !isIdentStart(l.peek()) {
			return token{}, errorf(CodeSyntax, start, "'$' must be followed by a name, as in $person")
		}
		off := l.off
		for isIdentPart(l.peek()) {
			l.advance()
		}
		return token{kind: tVar, text: l.src[off:l.off], pos: start}, nil
	case isDigit(r):
		off := l.off
		for isDigit(l.peek()) {
			l.advance()
		}
		kind := tInt
		if l.peek() == '.' && isDigit(l.peekAt(1)) {
			kind = tFloat
			l.advance()
			for isDigit(l.peek()) {
				l.advance()
			}
		}
		if l.peek() == 'e' || l.peek() == 'E' {
			n := 1
			if l.peekAt(1) == '+' || l.peekAt(1) == '-' {
				n = 2
			}
			if isDigit(l.peekAt(n)) {
				kind = tFloat
				for i := 0; i < n; i++ {
					l.advance()
				}
				for isDigit(l.peek()) {
					l.advance()
				}
			}
		}
		if isIdentStart(l.peek()) {
			return token{}, errorf(CodeSyntax, start, "a number runs into a name here; put a space or comma between them")
		}
		return token{kind: kind, text: l.src[off:l.off], pos: start}, nil
	case r == '"':
		return l.lexString(start)
	case r == '!':
		l.advance()
		if l.peek() == '=' {
			l.advance()
			return token{kind: tNe, pos: start}, nil
		}
		return token{}, errorf(CodeSyntax, start, "unexpected '!'; write != for not-equal, or not { ... } for negation")
	case r == '<':
		l.advance()
		if l.peek() == '=' {
			l.advance()
			return token{kind: tLe, pos: start}, nil
		}
		return token{kind: tLt, pos: start}, nil
	case r == '>':
		l.advance()
		if l.peek() == '=' {
			l.advance()
			return token{kind: tGe, pos: start}, nil
		}
		return token{kind: tGt, pos: start}, nil
	}
	if k, ok := single[r]; ok {
		l.advance()
		return token{kind: k, pos: start}, nil
	}
	if r == '\ufeff' {
		return token{}, errorf(CodeSyntax, start, "unexpected byte order mark (U+FEFF); it may only start the file: remove this one")
	}
	return token{}, errorf(CodeSyntax, start, "unexpected character %q", r)
}

func (l *lexer) lexString(start Pos) (token, error) {
	l.advance() // opening quote
	var b strings.Builder
	for {
		r := l.peek()
		switch r {
		case -1, '\n':
			return token{}, errorf(CodeSyntax, start, "unterminated string; close it with \" on the same line")
		case '"':
			l.advance()
			return token{kind: tString, text: b.String(), pos: start}, nil
		case '\\':
			escPos := l.pos()
			l.advance()
			e := l.peek()
			switch e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case '"':
				b.WriteByte('"')
			case '\\':
				b.WriteByte('\\')
			default:
				return token{}, errorf(CodeSyntax, escPos, "unknown escape in string; use \\n, \\t, \\r, \\\" or \\\\")
			}
			l.advance()
		default:
			if r == utf8.RuneError {
				return token{}, errorf(CodeSyntax, l.pos(), "invalid UTF-8 in string")
			}
			b.WriteRune(l.advance())
		}
	}
}
