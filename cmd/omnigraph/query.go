package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/client"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/query"
	"github.com/omnigraph-go/omnigraph/server"
)

// queryFormats are the --format values of omnigraph query.
var queryFormats = []string{"table", "kv", "csv", "jsonl", "json"}

func init() {
	register(func(a *app) *cobra.Command {
		var t graphTarget
		var file, expr, params, paramsFile, branch, snapshot, format string
		var explain bool
		var bf budgetFlags
		c := &cobra.Command{
			Use:   "query (--query FILE.gq [NAME] | -e 'GQ' | NAME --server URL) [--params JSON | --params-file F] [--branch B | --snapshot COMMIT] [--format F] [--explain] [--max-rows N] [--max-memory SIZE] [--timeout D] [--max-read-bytes SIZE] --store URL",
			Short: "Run a read query on one snapshot of a branch (or of a past commit)",
			Long: "Run a .gq read query. The whole query reads one snapshot: the head of --branch\n" +
				"(default main) when the query starts, or the commit named by --snapshot.\n" +
				"Parameters are a JSON object (--params '{\"h\":\"alice\"}' or --params-file).\n" +
				"Formats: table (default), kv (one block per row), csv, jsonl (one object per\n" +
				"row), json ({query_name, row_count, columns, rows, graph_commit_id}).\n" +
				"The query runs under a budget: rows produced, memory, time and storage bytes\n" +
				"(--max-rows, --max-memory, --timeout, --max-read-bytes; 0 is no limit). Past\n" +
				"one it stops (or, when the planner's estimate is over, never starts) and the\n" +
				"exit code is 6. --explain prints the plan with the estimate of each step and\n" +
				"runs nothing. With --server and no --query or -e, NAME is a stored query of\n" +
				"the server (omnigraph queries list --server URL).",
			Args: cobra.MaximumNArgs(1),
			RunE: func(c *cobra.Command, args []string) error {
				ctx := c.Context()
				stored := file == "" && expr == "" && len(args) == 1
				if stored && t.server == "" {
					return usagef("a stored query NAME runs on a server: add --server URL (or give the file: --query FILE.gq NAME)")
				}
				if !stored && (file == "") == (expr == "") {
					return usagef("give the query once: --query FILE.gq [NAME], -e 'query q() { ... }', or with --server the NAME of a stored query")
				}
				name := ""
				if len(args) == 1 {
					if expr != "" {
						return usagef("a query NAME goes with --query FILE.gq; -e takes the query text only")
					}
					name = args[0]
				}
				if params != "" && paramsFile != "" {
					return usagef("give parameters once: --params JSON or --params-file FILE")
				}
				if branch != "" && snapshot != "" {
					return usagef("read either a branch (--branch) or a commit (--snapshot), not both")
				}
				if !queryHasFormat(queryFormats, format) {
					return usagef("--format %q: use one of %s", format, strings.Join(queryFormats, ", "))
				}
				src := expr
				if file != "" {
					b, err := os.ReadFile(file)
					if err != nil {
						return usagef("read the query file: %v", err)
					}
					src = string(b)
				}
				p, err := queryParams(params, paramsFile)
				if err != nil {
					return err
				}
				budget, err := bf.budget()
				if err != nil {
					return err
				}
				sg, err := t.serverGraph(c)
				if err != nil {
					return err
				}
				if sg != nil {
					if err := bf.localOnly(c, explain); err != nil {
						return err
					}
					var out *api.ReadOutput
					if stored {
						read := false
						var r *client.InvokeResult
						if r, err = sg.InvokeQuery(ctx, name, api.InvokeRequest{Params: p, Branch: branch, Snapshot: snapshot, ExpectMutation: &read}); err == nil {
							out = r.Read
						}
					} else {
						out, err = sg.Query(ctx, api.QueryRequest{Query: src, Name: name, Params: p, Branch: branch, Snapshot: snapshot})
					}
					if err != nil {
						return t.remoteErr(err)
					}
					return writeQueryResult(a.stdout, queryRows{QueryName: out.QueryName, Columns: out.Columns, Rows: out.Rows, CommitID: out.GraphCommitID}, format)
				}
				g, done, err := t.openGraph(ctx, false)
				if err != nil {
					return err
				}
				defer done()
				var snap *graph.Snapshot
				if snapshot != "" {
					snap, err = g.SnapshotAt(ctx, snapshot)
				} else {
					snap, err = g.Snapshot(ctx, branch)
				}
				if err != nil {
					return err
				}
				if explain {
					ex, err := query.Explain(ctx, snap, src, name)
					if err != nil {
						return err
					}
					return writeExplain(a.stdout, ex, budget, format)
				}
				res, err := query.RunWith(ctx, snap, src, name, p, query.Options{Budget: budget})
				if err != nil {
					return budgetExit(err)
				}
				return writeQueryResult(a.stdout, localRows(res), format)
			},
		}
		c.Flags().StringVar(&file, "query", "", "the .gq file holding the query (pick one of several with NAME)")
		c.Flags().StringVarP(&expr, "expr", "e", "", "the query text itself")
		c.Flags().StringVar(&params, "params", "", "query parameters as a JSON object")
		c.Flags().StringVar(&paramsFile, "params-file", "", "a file holding the parameters as a JSON object")
		c.Flags().StringVar(&branch, "branch", "", "branch to read (default main)")
		c.Flags().StringVar(&snapshot, "snapshot", "", "commit id to read instead of a branch head (time travel)")
		c.Flags().StringVar(&format, "format", "table", "output format: "+strings.Join(queryFormats, ", "))
		c.Flags().BoolVar(&explain, "explain", false, "print the plan with the planner's estimate of each step against the budget, and run nothing")
		bf.add(c, "the query")
		t.addStore(c)
		t.addServer(c)
		return c
	})
}

func queryHasFormat(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// parseParams decodes the parameters object; numbers stay exact
// (json.Number) so 64-bit integers survive.
func queryParams(inline, file string) (map[string]any, error) {
	raw := []byte(inline)
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, usagef("read the parameters file: %v", err)
		}
		raw = b
	}
	what := "--params"
	if file != "" {
		what = "the parameters file " + file
	}
	return parseParams(raw, what)
}

// parseParams decodes the parameters of a query or mutation: one JSON
// object, numbers kept exact (json.Number) so 64-bit integers survive,
// with the server's messages (server.DecodeJSON): what was expected, in
// JSON's terms, never Go's.
func parseParams(raw []byte, what string) (map[string]any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	var p map[string]any
	if err := server.DecodeJSON(raw, &p, what); err != nil {
		return nil, usageError{msg: err.Error(), hint: `give an object of parameters by name, as in --params '{"h":"alice"}'`}
	}
	return p, nil
}

// queryCell renders a value for the table and kv formats so that no two
// different values print alike and every cell stays on one line: NULL is a
// bare null; a string prints as it is unless it could be read as another
// value or breaks the layout (see textNeedsQuotes), in which case it is
// double-quoted with JSON escapes. Lists and structs print as JSON.
func queryCell(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		if textNeedsQuotes(x) {
			return quoteText(x)
		}
		return x
	case json.RawMessage:
		return string(x)
	case []any, map[string]any:
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(x); err != nil {
			return fmt.Sprint(x)
		}
		return strings.TrimSuffix(b.String(), "\n")
	}
	return fmt.Sprint(v)
}

// textNeedsQuotes reports whether a string printed bare would be mistaken
// for another value (null, a boolean, a number, a list or object, the empty
// cell), would hide spaces at its ends, or holds a character that is not
// printable (newlines, tabs and other control characters break the layout).
func textNeedsQuotes(s string) bool {
	switch s {
	case "", "null", "true", "false":
		return true
	}
	if s[0] == '"' || s[0] == '[' || s[0] == '{' || s[0] == ' ' || s[len(s)-1] == ' ' {
		return true
	}
	if (s[0] == '-' || s[0] >= '0' && s[0] <= '9') && json.Valid([]byte(s)) {
		return true // a JSON number
	}
	if !utf8.ValidString(s) {
		return true
	}
	for _, r := range s {
		if !unicode.IsPrint(r) && r != ' ' {
			return true
		}
	}
	return false
}

// quoteText double-quotes s with JSON escapes: \" \\ \n \t \r, and \uXXXX
// for every other character that is not printable (invalid UTF-8 bytes
// become \ufffd).
func quoteText(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range strings.ToValidUTF8(s, "\ufffd") {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == ' ' || unicode.IsPrint(r):
			b.WriteRune(r)
		case r > 0xffff:
			hi, lo := utf16.EncodeRune(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, hi, lo)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// queryRows is a query's answer as both modes have it: each row the JSON
// object of its columns (query.Result.JSONRow locally, the HTTP API's
// rows with --server), so every format prints from the same bytes.
type queryRows struct {
	QueryName string            `json:"query_name"`
	RowCount  int               `json:"row_count"`
	Columns   []string          `json:"columns"`
	Rows      []json.RawMessage `json:"rows"`
	CommitID  string            `json:"graph_commit_id"`
}

func localRows(res *query.Result) queryRows {
	out := queryRows{QueryName: res.QueryName, Columns: res.ColumnNames(), Rows: make([]json.RawMessage, len(res.Rows)), CommitID: res.CommitID}
	for i := range res.Rows {
		out.Rows[i] = res.JSONRow(i)
	}
	return out
}

// cells splits a row object into its values, in column order.
func (q queryRows) cells(i int) ([]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(q.Rows[i]))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("row %d is not a JSON object", i+1)
	}
	var vals []json.RawMessage
	for dec.More() {
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		vals = append(vals, v)
	}
	if len(vals) != len(q.Columns) {
		return nil, fmt.Errorf("row %d has %d values for %d columns", i+1, len(vals), len(q.Columns))
	}
	return vals, nil
}

// cellValue decodes one JSON value for the text formats: a string as a
// Go string, null as nil, numbers and booleans as their JSON text, lists
// and objects as compact JSON (key order kept, no HTML escapes).
func cellValue(raw json.RawMessage) any {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return nil
	case raw[0] == '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	case raw[0] == '{' || raw[0] == '[':
		var b bytes.Buffer
		if compactJSON(json.NewDecoder(bytes.NewReader(raw)), &b) == nil {
			return json.RawMessage(b.Bytes())
		}
	}
	return json.RawMessage(raw)
}

// compactJSON writes the next value of dec compactly, keeping key order,
// with strings encoded without HTML escapes.
func compactJSON(dec *json.Decoder, b *bytes.Buffer) error {
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch v := tok.(type) {
	case json.Delim:
		end := byte('}')
		if v == '[' {
			end = ']'
		}
		b.WriteByte(byte(v))
		for first := true; dec.More(); first = false {
			if !first {
				b.WriteByte(',')
			}
			if v == '{' {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				writeJSONString(b, k.(string))
				b.WriteByte(':')
			}
			if err := compactJSON(dec, b); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return err
		}
		b.WriteByte(end)
	case string:
		writeJSONString(b, v)
	case json.Number:
		b.WriteString(v.String())
	case bool:
		fmt.Fprint(b, v)
	case nil:
		b.WriteString("null")
	}
	return nil
}

func writeJSONString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	b.Truncate(b.Len() - 1) // Encode's newline
}

func writeQueryResult(w io.Writer, res queryRows, format string) error {
	res.RowCount = len(res.Rows)
	if res.Columns == nil {
		res.Columns = []string{}
	}
	cols := res.Columns
	switch format {
	case "json":
		return writeJSON(w, res)
	case "jsonl":
		for _, r := range res.Rows {
			if _, err := fmt.Fprintf(w, "%s\n", r); err != nil {
				return err
			}
		}
		return nil
	}
	rows := make([][]any, len(res.Rows))
	for i := range res.Rows {
		vals, err := res.cells(i)
		if err != nil {
			return err
		}
		rows[i] = make([]any, len(vals))
		for j, v := range vals {
			rows[i][j] = cellValue(v)
		}
	}
	cell := func(i, j int) string { return queryCell(rows[i][j]) }
	switch format {
	case "csv":
		cw := csv.NewWriter(w)
		if err := cw.Write(cols); err != nil {
			return err
		}
		for i := range rows {
			rec := make([]string, len(cols))
			for j := range cols {
				// CSV has its own quoting: strings go in as they are.
				switch v := rows[i][j].(type) {
				case nil:
				case string:
					rec[j] = v
				default:
					rec[j] = queryCell(v)
				}
			}
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
		cw.Flush()
		return cw.Error()
	case "kv":
		width := 0
		for _, c := range cols {
			width = max(width, len(c))
		}
		for i := range rows {
			if i > 0 {
				fmt.Fprintln(w)
			}
			for j, c := range cols {
				fmt.Fprintf(w, "%-*s  %s\n", width, c, cell(i, j))
			}
		}
		_, err := fmt.Fprintf(w, "(%d %s, commit %s)\n", len(rows), queryPlural(len(rows), "row", "rows"), res.CommitID)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(cols, "\t"))
	for i := range rows {
		cells := make([]string, len(cols))
		for j := range cols {
			cells[j] = cell(i, j)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "(%d %s, commit %s)\n", len(rows), queryPlural(len(rows), "row", "rows"), res.CommitID)
	return err
}

// explainStep is one step of --explain --format json.
type explainStep struct {
	Step      string  `json:"step"`
	Depth     int     `json:"depth"`
	Rows      int64   `json:"rows"`
	PerInput  float64 `json:"per_input_row"`
	Total     int64   `json:"total_rows"`
	MaxDegree int64   `json:"max_degree,omitempty"`
}

// writeExplain prints the plan with its estimate and how it compares with
// the budget: text, or with --format json|jsonl one JSON object.
func writeExplain(w io.Writer, ex *query.Explanation, b graph.Budget, format string) error {
	e := ex.Estimate
	fits := (b.Rows <= 0 || e.Rows <= b.Rows) && (b.Memory <= 0 || e.Bytes <= b.Memory)
	if format == "json" || format == "jsonl" {
		out := struct {
			QueryName   string        `json:"query_name"`
			Plan        string        `json:"plan"`
			Steps       []explainStep `json:"steps"`
			OutputRows  int64         `json:"output_rows"`
			TotalRows   int64         `json:"total_rows"`
			Bytes       int64         `json:"bytes"`
			BudgetRows  int64         `json:"budget_rows"`
			BudgetBytes int64         `json:"budget_bytes"`
			Fits        bool          `json:"fits"`
		}{ex.Plan.Name, ex.Plan.String(), []explainStep{}, e.Output, e.Rows, e.Bytes, b.Rows, b.Memory, fits}
		for _, s := range e.Steps {
			out.Steps = append(out.Steps, explainStep{ex.Plan.Read.StepString(s.Step), s.Depth, s.Rows, s.PerInput, s.Total, s.MaxDegree})
		}
		return writeJSON(w, out)
	}
	if _, err := io.WriteString(w, ex.String()); err != nil {
		return err
	}
	verdict := "fits the budget"
	if !fits {
		verdict = "over the budget: the query would be refused before it starts"
	}
	_, err := fmt.Fprintf(w, "budget: %s rows, %s bytes; %s\n", limitText(b.Rows), limitText(b.Memory), verdict)
	return err
}

func limitText(n int64) string {
	if n <= 0 {
		return "no limit on"
	}
	return strconv.FormatInt(n, 10)
}

func queryPlural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
