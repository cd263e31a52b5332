package embed

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/omnigraph-go/omnigraph/lang/pg"
)

// Spec says which vectors a load file carries: the original's embed spec
// JSON, {"dimension": N, "types": {"Doc": {"target": "embedding",
// "fields": ["title", "body"]}}}. Dims, when set, gives a type its own
// dimension (a spec derived from a schema).
type Spec struct {
	Dimension int                 `json:"dimension"`
	Types     map[string]TypeSpec `json:"types"`
	Dims      map[string]int      `json:"-"`
}

// TypeSpec is one type's target Vector field and the fields its text is
// made of.
type TypeSpec struct {
	Target string   `json:"target"`
	Fields []string `json:"fields"`
}

// SpecFromCatalog derives a Spec from the @embed("source") annotations of
// a schema: each node type's one @embed Vector property, its source field,
// its dimension. A type with two @embed properties is refused (a load line
// has one text per spec).
func SpecFromCatalog(cat *pg.Catalog) (*Spec, error) {
	s := &Spec{Types: map[string]TypeSpec{}, Dims: map[string]int{}}
	for _, n := range cat.Nodes {
		for _, p := range n.Properties {
			if p.Embed == nil {
				continue
			}
			if _, dup := s.Types[n.Name]; dup {
				return nil, fmt.Errorf("%w: %s has more than one @embed property; give a --spec", ErrEmbed, n.Name)
			}
			s.Types[n.Name] = TypeSpec{Target: p.Name, Fields: []string{p.Embed.Source}}
			s.Dims[n.Name] = p.Type.Dim
		}
	}
	if len(s.Types) == 0 {
		return nil, fmt.Errorf("%w: the schema declares no @embed property", ErrEmbed)
	}
	return s, nil
}

// Mode is what FillJSONL does to the selected rows.
type Mode string

// Modes.
const (
	FillMissing Mode = "fill_missing" // embed rows whose target is absent, null or []
	ReembedAll  Mode = "reembed_all"  // embed every selected row
	Clean       Mode = "clean"        // remove the target field
)

// Job is one FillJSONL run.
type Job struct {
	Spec  *Spec
	Mode  Mode
	Types []string // only these types (all when empty)
	// Select are `Type:field=value` or `field=value` row selectors; with
	// any, only matching rows are processed, and FillMissing re-embeds them.
	Select []string
}

// Summary reports a FillJSONL run (the original's embed output fields).
type Summary struct {
	Records  int    `json:"records"`
	Selected int    `json:"selected_records"`
	Embedded int    `json:"embedded_records"`
	Cleaned  int    `json:"cleaned_records"`
	Mode     string `json:"mode"`
	Model    string `json:"model"`
}

type selector struct{ typ, field, want string }

// FillJSONL copies load lines from r to w, filling, re-embedding or
// removing the vectors job.Spec names. A node line's text is the original's:
// "type: T" then "field: value" for each non-empty field, one per line. Other
// lines (edges, types without a spec) pass through unchanged. e may be nil
// for Clean.
func FillJSONL(ctx context.Context, r io.Reader, w io.Writer, job Job, e Embedder) (*Summary, error) {
	var sels []selector
	for _, s := range job.Select {
		lhs, want, ok := strings.Cut(s, "=")
		typ, field, typed := strings.Cut(lhs, ":")
		if !typed {
			typ, field = "", lhs
		}
		if !ok || strings.TrimSpace(field) == "" {
			return nil, fmt.Errorf("%w: selector %q: write field=value or Type:field=value", ErrEmbed, s)
		}
		sels = append(sels, selector{strings.TrimSpace(typ), strings.TrimSpace(field), want})
	}
	types := map[string]bool{}
	for _, t := range job.Types {
		types[t] = true
	}
	mode := job.Mode
	if mode == "" {
		mode = FillMissing
	}
	sum := &Summary{Mode: string(mode)}
	if mode == FillMissing && len(sels) > 0 {
		sum.Mode = "reembed_selected"
	}
	if mode != Clean {
		if e == nil {
			return nil, fmt.Errorf("%w: no embedder", ErrEmbed)
		}
		sum.Model = e.Model()
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	bw := bufio.NewWriter(w)
	line := 0
	for sc.Scan() {
		line++
		raw := strings.TrimSpace(sc.Text())
		if raw == "" {
			continue
		}
		sum.Records++
		var root map[string]any
		dec := json.NewDecoder(strings.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&root); err != nil {
			return nil, fmt.Errorf("%w: line %d is not a JSON object: %w", ErrEmbed, line, err)
		}
		typ, _ := root["type"].(string)
		data, _ := root["data"].(map[string]any)
		ts, has := job.Spec.Types[typ]
		selected := typ != "" && data != nil && (len(types) == 0 || types[typ]) && matches(sels, typ, data)
		if selected {
			sum.Selected++
		}
		if selected && has {
			switch {
			case mode == Clean:
				if _, ok := data[ts.Target]; ok {
					delete(data, ts.Target)
					sum.Cleaned++
				}
			case mode == ReembedAll || len(sels) > 0 || missing(data[ts.Target]):
				dim := job.Spec.Dimension
				if d, ok := job.Spec.Dims[typ]; ok {
					dim = d
				}
				vs, err := e.Embed(ctx, []string{embedText(typ, data, ts.Fields)}, dim)
				if err != nil {
					return nil, fmt.Errorf("line %d: %w", line, err)
				}
				data[ts.Target] = vs[0]
				sum.Embedded++
			}
		}
		out, err := json.Marshal(root) // keys sorted
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %w", ErrEmbed, line, err)
		}
		if _, err := bw.Write(append(out, '\n')); err != nil {
			return nil, fmt.Errorf("%w: writing the output: %w", ErrEmbed, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: reading the input: %w", ErrEmbed, err)
	}
	if err := bw.Flush(); err != nil {
		return nil, fmt.Errorf("%w: writing the output: %w", ErrEmbed, err)
	}
	return sum, nil
}

func matches(sels []selector, typ string, data map[string]any) bool {
	if len(sels) == 0 {
		return true
	}
	for _, s := range sels {
		if (s.typ == "" || s.typ == typ) && render(data[s.field]) == s.want {
			return true
		}
	}
	return false
}

func missing(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case []any:
		return len(x) == 0
	}
	return false
}

// render is a field value as embedding text (the original's render_value).
func render(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return strings.TrimSpace(x)
	case bool:
		if x {
			return "true"
		}
		return "false"
	case json.Number:
		return x.String()
	case []any:
		var parts []string
		for _, el := range x {
			if s := render(el); s != "" {
				parts = append(parts, s)
			}
		}
		return strings.Join(parts, ", ")
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func embedText(typ string, data map[string]any, fields []string) string {
	parts := []string{"type: " + typ}
	for _, f := range fields {
		if s := render(data[f]); s != "" {
			parts = append(parts, f+": "+s)
		}
	}
	return strings.Join(parts, "\n")
}
