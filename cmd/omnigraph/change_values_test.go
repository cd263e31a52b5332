package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/client"
	"github.com/omnigraph-go/omnigraph/lang/pg"
)

// valueSample is one property of every kind: its .pg type and the values
// of the two loads (insert, then update).
type valueSample struct {
	decl     string
	old, new any
}

// valueSamples has one entry per property kind. TestChangeViewsRenderValues
// fails on a kind without one, so a new kind gets checked too.
var valueSamples = map[pg.Kind]valueSample{
	pg.KindString:   {"String", "s1", "s2"},
	pg.KindBool:     {"Bool", true, false},
	pg.KindI32:      {"I32", 1, 2},
	pg.KindI64:      {"I64", 5, 6},
	pg.KindU32:      {"U32", 3, 4},
	pg.KindU64:      {"U64", 7, 8},
	pg.KindF32:      {"F32", 1.5, 2.5},
	pg.KindF64:      {"F64", 0.25, 0.75},
	pg.KindDate:     {"Date", "2026-03-01", "2026-03-02"},
	pg.KindDateTime: {"DateTime", "2026-03-01T10:00:00.000Z", "2026-03-01T11:30:00.000Z"},
	pg.KindVector:   {"Vector(2)", []any{1, 2}, []any{3, 4}},
	pg.KindBlob:     {"Blob", "base64:aGk=", "base64:aG8="},
	pg.KindList:     {"[Date]", []any{"2026-03-01"}, []any{"2026-03-02", "2026-03-03"}},
	pg.KindEnum:     {"enum(red, blue)", "red", "blue"},
}

// TestChangeViewsRenderValues: every output that prints a change's values
// (commit changes, diff, the change feed, merge preview; the CLI locally
// and with --server, and the HTTP answers) prints each property kind as
// export and queries do (a Date "2026-03-01", never its day number 20513),
// for nodes and edges, before and after images. Generated over every kind
// of lang/pg and every output in the table below.
func TestChangeViewsRenderValues(t *testing.T) {
	var props []string
	var names []string
	for k := pg.KindString; k <= pg.KindEnum; k++ {
		s, ok := valueSamples[k]
		if !ok {
			t.Fatalf("no sample value for the property kind %s: add one to valueSamples", k)
		}
		name := "p_" + strings.ToLower(k.String())
		names = append(names, name)
		props = append(props, "  "+name+": "+s.decl+"?")
	}
	schema := "node T {\n  k: String @key\n" + strings.Join(props, "\n") + "\n}\n" +
		"edge E: T -> T {\n" + strings.Join(props, "\n") + "\n}\n"
	dir := t.TempDir()
	schemaFile := filepath.Join(dir, "s.pg")
	if err := os.WriteFile(schemaFile, []byte(schema), 0o644); err != nil {
		t.Fatal(err)
	}
	data := func(which func(valueSample) any) map[string]any {
		m := map[string]any{}
		for k := pg.KindString; k <= pg.KindEnum; k++ {
			m["p_"+strings.ToLower(k.String())] = which(valueSamples[k])
		}
		return m
	}
	loadFile := func(name string, which func(valueSample) any) string {
		node := data(which)
		node["k"] = "a"
		lines := []map[string]any{
			{"type": "T", "data": node},
			{"type": "T", "data": map[string]any{"k": "b"}},
			{"edge": "E", "from": "a", "to": "b", "data": data(which)},
		}
		var b strings.Builder
		for _, l := range lines {
			j, _ := json.Marshal(l)
			b.Write(append(j, '\n'))
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	store := filepath.Join(dir, "g")
	mustCLI(t, "init", "--schema", schemaFile, store)
	mustCLI(t, "load", "--data", loadFile("v1.jsonl", func(s valueSample) any { return s.old }), "--mode", "merge", store)
	mustCLI(t, "branch", "create", "b", "--store", store)
	mustCLI(t, "load", "--data", loadFile("v2.jsonl", func(s valueSample) any { return s.new }), "--mode", "merge", "--branch", "b", store)
	var list struct {
		Commits []struct {
			ID     string `json:"id"`
			TimeUS int64  `json:"time_us"`
		} `json:"commits"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, "commit", "list", "--branch", "b", "--json", "--store", store)), &list); err != nil || len(list.Commits) == 0 {
		t.Fatalf("commit list: %v %v", err, list)
	}
	head, newest := "", int64(0)
	for _, c := range list.Commits {
		if c.TimeUS > newest {
			head, newest = c.ID, c.TimeUS
		}
	}

	// The reference: what export prints for the entity (the load
	// spellings, as a query prints them).
	want := map[string]map[string]any{} // "old|new" + "T"/"E" -> data
	for _, side := range []struct{ name, branch string }{{"old", "main"}, {"new", "b"}} {
		sc := bufio.NewScanner(strings.NewReader(mustCLI(t, "export", "--branch", side.branch, "--store", store)))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var rec struct {
				Type string         `json:"type"`
				Edge string         `json:"edge"`
				Data map[string]any `json:"data"`
			}
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				t.Fatal(err)
			}
			if rec.Data["k"] == "a" || rec.Edge != "" {
				want[side.name+"|"+rec.Type+rec.Edge] = rec.Data
			}
		}
	}
	// Queries print the same as export (the reference is the one users
	// see first).
	var q struct {
		Rows []map[string]any `json:"rows"`
	}
	qout := mustCLI(t, "query", "-e", `query q() { match { $t: T { k: "a" } } return { $t.p_date, $t.p_datetime } }`, "--branch", "b", "--format", "json", "--store", store)
	if err := json.Unmarshal([]byte(qout), &q); err != nil || len(q.Rows) != 1 {
		t.Fatalf("query --format json: %v\n%s", err, qout)
	}
	for col, v := range q.Rows[0] {
		prop := col[strings.LastIndexByte(col, '.')+1:]
		if !reflect.DeepEqual(v, want["new|T"][prop]) {
			t.Fatalf("query prints %s = %v, export %v", col, v, want["new|T"][prop])
		}
	}

	tokens := filepath.Join(dir, "tokens.json")
	token := strings.TrimSpace(mustCLI(t, "token", "add", "anonymous", "--tokens", tokens))
	served := filepath.Join(dir, "served")
	copyDir(t, store, served)
	base, _, _ := startServe(t, "--store", served, "--tokens", tokens)
	t.Setenv(envToken, token)
	cl, err := client.New(base, client.WithToken(token))
	if err != nil {
		t.Fatal(err)
	}
	g := cl.Graph("default")
	ctx := context.Background()

	// Every output that prints changes, each read as []api.Change.
	cliChanges := func(args ...string) func(t *testing.T) []api.Change {
		return func(t *testing.T) []api.Change {
			var out struct {
				Changes []api.Change `json:"changes"`
				Blocks  []struct {
					Changes []api.Change `json:"changes"`
				} `json:"blocks"`
			}
			text := mustCLI(t, append(args, "--json")...)
			// changes poll may print more than one JSON value.
			var all []api.Change
			dec := json.NewDecoder(strings.NewReader(text))
			for dec.More() {
				out.Changes, out.Blocks = nil, nil
				if err := dec.Decode(&out); err != nil {
					t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, text)
				}
				all = append(all, out.Changes...)
				for _, b := range out.Blocks {
					all = append(all, b.Changes...)
				}
			}
			return all
		}
	}
	local := []string{"--store", store}
	remote := []string{"--server", base}
	outputs := []struct {
		name string
		read func(t *testing.T) []api.Change
	}{
		{"commit changes --json", cliChanges(append([]string{"commit", "changes", head}, local...)...)},
		{"commit changes --json --server", cliChanges(append([]string{"commit", "changes", head}, remote...)...)},
		{"diff --json", cliChanges(append([]string{"diff", "main", "b"}, local...)...)},
		{"diff --json --server", cliChanges(append([]string{"diff", "main", "b"}, remote...)...)},
		{"changes poll --json", cliChanges(append([]string{"changes", "poll", "--branch", "b", "--start", "beginning"}, local...)...)},
		{"changes poll --json --server", cliChanges(append([]string{"changes", "poll", "--branch", "b", "--start", "beginning"}, remote...)...)},
		{"GET commits/{id}/changes", func(t *testing.T) []api.Change {
			out, err := g.CommitChanges(ctx, head, client.ChangesOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return out.Changes
		}},
		{"POST diff", func(t *testing.T) []api.Change {
			out, err := g.Diff(ctx, api.DiffRequest{From: "main", To: "b"})
			if err != nil {
				t.Fatal(err)
			}
			return out.Changes
		}},
		{"POST branches/merge/preview", func(t *testing.T) []api.Change {
			out, err := g.PreviewMerge(ctx, api.MergePreviewRequest{Source: "b", Target: "main"})
			if err != nil {
				t.Fatal(err)
			}
			return out.Changes
		}},
		{"MCP commit_changes", func(t *testing.T) []api.Change {
			return mcpCommitChanges(t, base, token, head)
		}},
		{"POST changes (the feed)", func(t *testing.T) []api.Change {
			out, err := g.PollChanges(ctx, api.PollRequest{Branch: "b", Start: "beginning"})
			if err != nil {
				t.Fatal(err)
			}
			var all []api.Change
			for _, b := range out.Blocks {
				all = append(all, b.Changes...)
			}
			return all
		}},
	}
	for _, o := range outputs {
		t.Run(o.name, func(t *testing.T) {
			seen := map[string]bool{}
			for _, c := range o.read(t) {
				// The update of the second load carries both images (the
				// feed from the beginning also has the first load's inserts).
				if c.Op != "update" || (c.ID != "a" && c.EntityKind != "edge") {
					continue
				}
				typ := c.TypeName
				for _, img := range []struct {
					side string
					row  map[string]any
				}{{"old", c.Before}, {"new", c.After}} {
					if img.row == nil {
						continue
					}
					ref := want[img.side+"|"+typ]
					if ref == nil {
						t.Fatalf("no export of %s %s", img.side, typ)
					}
					seen[img.side+typ] = true
					for _, name := range names {
						// Compared as JSON: the client decodes numbers as
						// json.Number, the CLI's as float64.
						if got, w := jsonText(img.row[name]), jsonText(ref[name]); got != w {
							t.Errorf("%s %s %s image: %s = %s, export and queries print %s", o.name, typ, img.side, name, got, w)
						}
					}
				}
			}
			if !seen["newT"] || !seen["newE"] {
				t.Fatalf("%s printed no change of the node a or the edge (seen %v)", o.name, seen)
			}
		})
	}
	// The text output prints the rendered values too.
	if text := mustCLI(t, "commit", "changes", head, "--store", store); !strings.Contains(text, "p_date: 2026-03-01 -> 2026-03-02") {
		t.Errorf("commit changes (text) does not print the dates as dates:\n%s", text)
	}
}

// mcpCommitChanges calls the MCP tool commit_changes on the served graph
// "default" and returns the changes of its structured result.
func mcpCommitChanges(t *testing.T, base, token, commit string) []api.Change {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": "commit_changes", "arguments": map[string]any{"commit_id": commit}}})
	req, err := http.NewRequest("POST", base+"/graphs/default/mcp", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Result struct {
			IsError           bool `json:"isError"`
			StructuredContent struct {
				Changes []api.Change `json:"changes"`
			} `json:"structuredContent"`
		} `json:"result"`
		Error json.RawMessage `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("MCP commit_changes: %d: %v", resp.StatusCode, err)
	}
	if out.Error != nil || out.Result.IsError {
		t.Fatalf("MCP commit_changes: %s %+v", out.Error, out.Result)
	}
	return out.Result.StructuredContent.Changes
}

// copyDir copies a local graph directory (a fresh graph for a server, so
// the served one is never written by the CLI).
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.Walk(from, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if fi.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, fi.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
