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

// TestSpoolCopiesBlobFreeLines: a line of a type without a Blob property
// (or whose data comes before its type) is copied past the spool in bulk
// after its head, longer than the spool's buffer or not, and the Blob
// values of the lines around it still stream; a type name with an escape
// is decoded and still found.
func TestSpoolCopiesBlobFreeLines(t *testing.T) {
	g, err := graph.Init(context.Background(), mem.New(), blobSchema+`node Tag {
  name: String @key
  text: String?
}
`, graph.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	enc := base64.StdEncoding.EncodeToString(seq(300 << 10))
	long := strings.Repeat("y", 200<<10) // beyond the spool's 64 KiB buffer
	lines := []string{
		fmt.Sprintf(`{"type":"Tag","data":{"name":"t","text":"%s","body":"base64:%s"}}`, long, enc),
		fmt.Sprintf(`{"type":"Doc","data":{"slug":"a","body":"base64:%s"}}`, enc),
		fmt.Sprintf(`{"data":{"slug":"b","body":"base64:%s"},"type":"Doc"}`, enc),
		fmt.Sprintf(`{"type":"D\u006fc","data":{"slug":"c","body":"base64:%s"}}`, enc),
		`{"type":"Tag","data":{"name":"u"}}`,
	}
	spooled := []bool{false, true, false, true, false}
	input := strings.Join(lines, "\n") + "\n"
	out, in, err := spoolOf(t, g, input)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(got) != len(lines) || len(in.spooled) != 2 {
		t.Fatalf("%d lines, %d spooled values; want %d and 2", len(got), len(in.spooled), len(lines))
	}
	for i, want := range spooled {
		s := strings.Contains(got[i], spoolScheme+in.nonce)
		if s != want || !s && got[i] != lines[i] {
			t.Fatalf("line %d: spooled=%v (want %v), %d bytes", i+1, s, want, len(got[i]))
		}
	}
	st := in.stats
	if st.unescaped != 1 {
		t.Fatalf("%d names decoded, want 1 (D\\u006fc)", st.unescaped)
	}
	// Followed: the Tag lines' heads, the data-first line's head up to its
	// data, and the Doc lines whole; the rest copied.
	if st.copied < int64(len(lines[0])+len(lines[2]))-100 {
		t.Fatalf("copied %d bytes, want about the Tag line and the data-first line (%d)", st.copied, len(lines[0])+len(lines[2]))
	}
}
