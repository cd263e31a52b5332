package load

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/blob"
	"github.com/omnigraph-go/omnigraph/table"
)

const blobSchema = `node Doc {
  slug: String @key
  body: Blob?
  text: String?
}
edge Link: Doc -> Doc {
  note: Blob?
}
`

func blobGraph(t *testing.T) *graph.Graph {
	t.Helper()
	g, err := graph.Init(context.Background(), mem.New(), blobSchema, graph.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

func seq(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	return b
}

// spoolOf runs the spool over input and returns its output and intake.
func spoolOf(t *testing.T, g *graph.Graph, input string) (string, *intake, error) {
	t.Helper()
	ctx := context.Background()
	snap, _ := g.Snapshot(ctx, "")
	cat, _ := snap.Catalog(ctx)
	in := newIntake(ctx, g, snap, cat)
	out, err := io.ReadAll(newSpool(in, strings.NewReader(input)))
	return string(out), in, err
}

// TestSpool: a long Blob string of a line that names its type first is
// stored while the line streams by and replaced by a placeholder; every
// other byte passes unchanged (short values, strings of other properties,
// lines with data before type).
func TestSpool(t *testing.T) {
	g := blobGraph(t)
	big := seq(400 << 10)
	enc := base64.StdEncoding.EncodeToString(big)
	escaped := strings.ReplaceAll(enc, "/", `\/`) // JSON may escape '/'
	escaped = `\u0062ase64:` + escaped            // and any character
	text := strings.Repeat("x", 300<<10)
	lines := []string{
		fmt.Sprintf(`{"type":"Doc","data":{"slug":"a","body":"base64:%s"}}`, enc),
		fmt.Sprintf(`{"type":"Doc","data":{"slug":"b","body":"%s"}}`, escaped),
		fmt.Sprintf(`{"type":"Doc","data":{"slug":"c","body":"base64:aGk=","text":%q}}`, text),
		fmt.Sprintf(`{"data":{"slug":"d","body":"base64:%s"},"type":"Doc"}`, enc),
		fmt.Sprintf(` { "edge" : "link" , "from":"a","to":"b", "data" : { "note" : "base64:%s" } }`, enc),
	}
	out, in, err := spoolOf(t, g, strings.Join(lines, "\n")+"\n")
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(got) != len(lines) || len(in.spooled) != 3 {
		t.Fatalf("%d lines, %d spooled values; want %d and 3", len(got), len(in.spooled), len(lines))
	}
	for i, want := range []bool{true, true, false, false, true} {
		spooled := strings.Contains(got[i], spoolScheme+in.nonce)
		if spooled != want || !spooled && got[i] != lines[i] || spooled && len(got[i]) > 300 {
			t.Fatalf("line %d: spooled=%v (want %v), %d bytes", i+1, spooled, want, len(got[i]))
		}
	}
	for i, v := range in.spooled {
		if !v.Stored() || v.SHA256 != table.InlineBlob(big).SHA256 {
			t.Fatalf("spooled value %d: %+v", i, v)
		}
	}
}

// TestSpoolRefusals: a long Blob string that is not base64, or cut off,
// is an input error naming its line; a placeholder written by hand is an
// external reference the default policy refuses.
func TestSpoolRefusals(t *testing.T) {
	g := blobGraph(t)
	long := strings.Repeat("QUJD", 100<<10)
	for _, tc := range []struct{ name, input, want string }{
		{"not base64", "\n" + fmt.Sprintf(`{"type":"Doc","data":{"slug":"a","body":"base64:%s*%s"}}`, long, long), "line 2: data: the Blob value is not base64"},
		{"bad escape", fmt.Sprintf(`{"type":"Doc","data":{"slug":"a","body":"base64:%s\n%s"}}`, long, long), "line 1: data: the Blob value holds a control character"},
		{"line break", fmt.Sprintf(`{"type":"Doc","data":{"slug":"a","body":"base64:%s`+"\n"+`%s"}}`, long, long), "line 1: a line break inside a string"},
		{"cut off", fmt.Sprintf(`{"type":"Doc","data":{"slug":"a","body":"base64:%s`, long), "line 1: the input ends inside a string"},
		{"text after padding", fmt.Sprintf(`{"type":"Doc","data":{"slug":"a","body":"base64:%sQQ==%s"}}`, long, long), "line 1: data: the Blob value is not base64"},
		{"short text after padding", fmt.Sprintf(`{"type":"Doc","data":{"slug":"a","body":"base64:%sQQ==QU"}}`, long), "line 1: data: the Blob value is not base64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(context.Background(), g, strings.NewReader(tc.input), Options{Mode: Merge})
			var ie *graph.InputError
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v, want an input error with %q", err, tc.want)
			}
		})
	}
	forged := fmt.Sprintf(`{"type":"Doc","data":{"slug":"a","body":"%s%s/0"}}`, spoolScheme, strings.Repeat("0", 32))
	if _, err := Run(context.Background(), g, strings.NewReader(forged), Options{Mode: Merge}); !errors.Is(err, graph.ErrInvalidInput) {
		t.Fatalf("a forged placeholder: %v, want refused", err)
	}
	if cs, _ := g.Commits(context.Background(), "main", 0); len(cs) != 1 {
		t.Fatalf("%d commits after refusals, want the genesis only", len(cs))
	}
}

// TestLoadBlobPaths: the row path and the columnar path store the same
// values (spooled, stored after parsing, inline) and read back the same.
func TestLoadBlobPaths(t *testing.T) {
	ctx := context.Background()
	vals := map[string][]byte{"s": seq(5), "m": seq(table.BlobInlineMax + 100), "l": seq(600 << 10)}
	var lines []string
	for slug, v := range vals {
		lines = append(lines, fmt.Sprintf(`{"type":"Doc","data":{"slug":%q,"body":"base64:%s"}}`, slug, base64.StdEncoding.EncodeToString(v)))
	}
	for _, mode := range []Mode{Merge, Append} { // row path, columnar path
		g := blobGraph(t)
		if _, err := Run(ctx, g, strings.NewReader(strings.Join(lines, "\n")), Options{Mode: mode}); err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		snap, _ := g.Snapshot(ctx, "")
		for slug, want := range vals {
			c, err := blob.Open(ctx, snap, blob.Selector{Entity: blob.Node, Type: "Doc", ID: slug, Property: "body"})
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := c.Read(ctx, &buf, 0, c.Value.Size); err != nil || !bytes.Equal(buf.Bytes(), want) {
				t.Fatalf("%s %s: %v", mode, slug, err)
			}
			if c.Value.Stored() != (len(want) > table.BlobInlineMax) {
				t.Fatalf("%s %s: stored=%v for %d bytes", mode, slug, c.Value.Stored(), len(want))
			}
		}
	}
}
