package gq

import (
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/lang/pg"
)

// socialCatalog compiles the example schema the docs are written against.
func socialCatalog(t testing.TB) *pg.Catalog {
	t.Helper()
	src, err := os.ReadFile("../../examples/social.pg")
	if err != nil {
		t.Fatalf("read example schema: %v", err)
	}
	cat, err := pg.Compile(string(src))
	if err != nil {
		t.Fatalf("compile example schema: %v", err)
	}
	return cat
}

type docBlock struct {
	lang string
	line int
	text string
}

func docBlocks(t *testing.T, path string) []docBlock {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	var out []docBlock
	lines := strings.Split(string(raw), "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if !strings.HasPrefix(l, "```gq") {
			continue
		}
		b := docBlock{lang: strings.TrimPrefix(l, "```"), line: i + 2}
		var body []string
		for i++; i < len(lines) && lines[i] != "```"; i++ {
			body = append(body, lines[i])
		}
		b.text = strings.Join(body, "\n")
		out = append(out, b)
	}
	return out
}

// TestDocsExamples type-checks every ```gq block of docs/queries.md against
// examples/social.pg and checks that every ```gq-error block fails with the
// code named on its first line.
func TestDocsExamples(t *testing.T) {
	cat := socialCatalog(t)
	blocks := docBlocks(t, "../../docs/queries.md")
	var ok, bad int
	codeRe := regexp.MustCompile(`^// (GQ\d{3})`)
	for _, b := range blocks {
		switch b.lang {
		case "gq":
			ok++
			prog, err := Compile(b.text, cat)
			if err != nil {
				t.Errorf("docs/queries.md block at line %d does not check:\n%v", b.line, err)
				continue
			}
			for _, p := range prog.Plans {
				if p.String() == "" {
					t.Errorf("empty plan for %s", p.Name)
				}
			}
		case "gq-error":
			bad++
			m := codeRe.FindStringSubmatch(b.text)
			if m == nil {
				t.Errorf("gq-error block at line %d must start with // GQnnn", b.line)
				continue
			}
			_, err := Compile(b.text, cat)
			var e *Error
			if !errors.As(err, &e) {
				t.Errorf("block at line %d: want error %s, got %v", b.line, m[1], err)
				continue
			}
			if string(e.Code) != m[1] {
				t.Errorf("block at line %d: want %s, got %v", b.line, m[1], err)
			}
		default:
			t.Errorf("unknown block kind %q at line %d", b.lang, b.line)
		}
	}
	if ok < 13 || bad < 5 {
		t.Fatalf("found %d gq and %d gq-error blocks; the docs lost their examples", ok, bad)
	}
}
