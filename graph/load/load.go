// Package load is bulk load of strict graph-batch NDJSON: one envelope per
// line, node lines {"type":T,"data":{..}} and edge lines
// {"edge":E,"from":ID,"to":ID,"data":{..}}. The whole file is parsed
// (json.go: the strict parser) and validated (package graph/change) before
// anything is written, and lands as one graph commit through the shared
// write pipeline (graph.Write).
package load

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/change"
	"github.com/omnigraph-go/omnigraph/graph/diff"
	"github.com/omnigraph-go/omnigraph/lang/pg"
	"github.com/omnigraph-go/omnigraph/table"
)

// Mode says how loaded rows meet the rows a branch already has.
type Mode string

// Load modes; there is no default.
const (
	// Append is a strict insert: an id the branch already holds is a
	// *KeyConflict and nothing is written.
	Append Mode = "append"
	// Merge upserts by id: new ids are inserted, existing ones replaced;
	// rows not in the file are kept.
	Merge Mode = "merge"
	// Overwrite replaces the whole image of each type present in the
	// file (and of Options.Replace); other types keep their rows.
	Overwrite Mode = "overwrite"
)

// ParseMode checks a --mode value.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case Append, Merge, Overwrite:
		return m, nil
	}
	return "", fmt.Errorf("%w: unknown load mode %q; use append (strict insert), merge (upsert by id) or overwrite (replace each type in the file)", graph.ErrInvalidInput, s)
}

// MaxLine bounds one NDJSON line.
const MaxLine = 32 << 20

// Options shape one load.
type Options struct {
	// Branch to load into (default: the handle's current branch). It must
	// exist.
	Branch string
	// Mode is required.
	Mode Mode
	// Replace lists types an overwrite replaces even when the file has no
	// row of them (they become empty: a zero-fragment version).
	Replace []string
	// Progress, when set, is called as the load advances: phase is
	// "parse", "validate" or "write"; done counts lines parsed.
	Progress func(phase string, done int64)
	// Retries bounds re-preparing an append or merge that lost a race,
	// or any load (overwrite included) that only maintenance commits
	// moved (default graph.DefaultWriteRetries).
	Retries int
	// Actor overrides the handle's actor for this commit.
	Actor string
	// CountEffects fills Result's Inserted, Updated and Unchanged; for a
	// merge that reads the commit's diff against its parent (through the
	// handle, so its tables are then in the handle's caches). Off, the
	// three stay zero and nothing more is read.
	CountEffects bool
}

// Result is what a load did.
type Result struct {
	Nodes int `json:"nodes"`
	Edges int `json:"edges"`
	// Types counts loaded rows per node or edge type.
	Types map[string]int `json:"types"`
	// Inserted, Updated and Unchanged split the loaded rows by what they did
	// to the branch (append: all inserted). For a merge they come from the
	// diff of the commit against its parent (only the tables it wrote are
	// read, and of those only the fragments the commit changed), so a
	// merge of a file that is mostly the branch's rows says so instead of
	// "loaded" for all. Overwrite leaves them zero, and so does a load
	// without Options.CountEffects.
	Inserted  int `json:"inserted"`
	Updated   int `json:"updated"`
	Unchanged int `json:"unchanged"`
	// Commit is the published commit; nil when the file changed nothing.
	Commit   *graph.CommitInfo `json:"commit"`
	Warnings []string          `json:"warnings,omitempty"`
}

// loadLine is one parsed, coerced envelope.
type loadLine struct {
	line  int
	node  *pg.NodeType
	edge  *pg.EdgeType
	id    string // data.id, or the keyed node's derived id; "" for a new ULID
	props map[string]any
	from  string
	to    string
}

// reservedLoadFields may not appear in data.
var reservedLoadFields = []string{"_rowid", "_rowaddr", "_rowoffset", "_row_created_at_version", "_row_last_updated_at_version", "_tombstone"}

// Run reads strict NDJSON from r and writes it to the branch as one
// commit. Bad input (syntax, unknown or duplicate fields, a value that does
// not fit, a constraint) is an *InputError naming the line; an append of
// an existing id is a *KeyConflict; neither writes anything. An overwrite
// whose branch moved returns *ReadSetChanged; append and merge re-prepare.
func Run(ctx context.Context, g *graph.Graph, r io.Reader, opts Options) (*Result, error) {
	res, err := run(ctx, g, r, opts)
	if err != nil {
		return res, g.IfBranchDeleted(ctx, "load target", opts.Branch, err)
	}
	if !opts.CountEffects {
		return res, nil
	}
	if err := countEffects(ctx, g, res, opts.Mode); err != nil {
		// The load landed; only its report is short of the split.
		res.Warnings = append(res.Warnings, "the load committed, but its inserted/updated/unchanged counts could not be read: "+err.Error())
	}
	return res, nil
}

// countEffects fills res's Inserted, Updated and Unchanged.
func countEffects(ctx context.Context, g *graph.Graph, res *Result, mode Mode) error {
	total := res.Nodes + res.Edges
	switch {
	case mode == Append:
		res.Inserted = total
		return nil
	case mode != Merge:
		return nil
	case res.Commit == nil: // nothing changed: no commit
		res.Unchanged = total
		return nil
	case len(res.Commit.Parents) == 0:
		return nil
	}
	after, err := g.SnapshotAt(ctx, res.Commit.ID)
	if err != nil {
		return err
	}
	before, err := g.SnapshotAt(ctx, res.Commit.Parents[0])
	if err != nil {
		return err
	}
	cat, err := after.Catalog(ctx)
	if err != nil {
		return err
	}
	for _, t := range diff.Tables(cat) {
		if res.Types[t.Name] == 0 {
			continue
		}
		cs, err := diff.TableChanges(ctx, before, after, t)
		if err != nil {
			return err
		}
		for _, c := range cs {
			switch c.Op {
			case diff.OpInsert:
				res.Inserted++
			case diff.OpUpdate:
				res.Updated++
			}
		}
	}
	res.Unchanged = max(total-res.Inserted-res.Updated, 0)
	return nil
}

func run(ctx context.Context, g *graph.Graph, r io.Reader, opts Options) (*Result, error) {
	in, err := prepare(ctx, g, opts)
	if err != nil {
		return nil, err
	}
	return in.run(g, r, opts)
}

// prepare checks opts and reads the branch's schema for a load.
func prepare(ctx context.Context, g *graph.Graph, opts Options) (*intake, error) {
	if _, err := ParseMode(string(opts.Mode)); err != nil {
		return nil, err
	}
	snap, err := g.Snapshot(ctx, opts.Branch)
	if err != nil {
		return nil, err
	}
	cat, err := snap.Catalog(ctx)
	if err != nil {
		return nil, err
	}
	return newIntake(ctx, g, snap, cat), nil
}

// run loads r on the path the schema and mode allow.
func (in *intake) run(g *graph.Graph, r io.Reader, opts Options) (*Result, error) {
	r = in.reader(r)
	if columnar(in.cat, opts) {
		return runColumnar(in.ctx, g, in.snap, in, r, opts)
	}
	return runRows(in.ctx, g, in, r, opts)
}

// runRows is Run on the row path: every line is parsed into a row, the
// rows are validated by package change, then staged.
func runRows(ctx context.Context, g *graph.Graph, in *intake, r io.Reader, opts Options) (*Result, error) {
	cat := in.cat
	lines, err := parseLoad(r, in, opts.Progress)
	if err != nil {
		return nil, err
	}
	for _, t := range opts.Replace {
		if _, ok := cat.Node(t); ok {
			continue
		}
		if _, ok := cat.Edge(t); ok {
			continue
		}
		return nil, fmt.Errorf("%w: cannot replace unknown type %q; the schema has %s", graph.ErrInvalidInput, t, typeList(cat))
	}
	if len(opts.Replace) > 0 && opts.Mode != Overwrite {
		return nil, fmt.Errorf("%w: replacing types needs --mode overwrite", graph.ErrInvalidInput)
	}
	n := opts.Retries
	if n <= 0 {
		n = graph.DefaultWriteRetries
	}
	// Parsed and checked before its turn in the branch's write queue (that
	// overlaps the write ahead); prepared and committed inside it.
	ctx, leave, err := g.EnterWriteQueue(ctx, opts.Branch)
	if err != nil {
		return nil, err
	}
	defer leave()
	var out *Result
	_, err = graph.Retry(ctx, n, func(ctx context.Context) (*graph.Result, error) {
		res, err := attempt(ctx, g, cat, lines, opts)
		out = res
		return nil, err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func typeList(cat *pg.Catalog) string {
	var names []string
	for _, n := range cat.Nodes {
		names = append(names, n.Name)
	}
	for _, e := range cat.Edges {
		names = append(names, e.Name)
	}
	return strings.Join(names, ", ")
}

func lineWhere(n int) string { return fmt.Sprintf("line %d", n) }

func attempt(ctx context.Context, g *graph.Graph, cat *pg.Catalog, lines []loadLine, opts Options) (*Result, error) {
	w, err := g.BeginWrite(ctx, opts.Branch, graph.WriteOptions{Kind: graph.KindLoad, Strict: opts.Mode == Overwrite, Actor: opts.Actor})
	if err != nil {
		return nil, err
	}
	snap := w.Snapshot()
	if snap.SchemaIdentity() != cat.Identity {
		// A schema apply landed after the file was checked against the
		// schema: a concurrent change like any other that moved the
		// branch (409 over HTTP), not bad input; nothing was written.
		return nil, &graph.ReadSetChanged{Branch: snap.Branch(), Member: "schema_identity", Expected: cat.Identity, Actual: snap.SchemaIdentity()}
	}
	if opts.Progress != nil {
		opts.Progress("validate", int64(len(lines)))
	}
	st := change.New(snap, cat)
	res := &Result{Types: map[string]int{}}
	if opts.Mode == Overwrite {
		for _, t := range opts.Replace {
			if nt, ok := cat.Node(t); ok {
				st.NodeTable(nt).Overwrite()
			} else if et, ok := cat.Edge(t); ok {
				st.EdgeTable(et).Overwrite()
			}
		}
	}
	perTable := map[*pg.NodeType]int{}
	perEdge := map[*pg.EdgeType]int{}
	for i := range lines {
		if lines[i].node != nil {
			perTable[lines[i].node]++
		} else {
			perEdge[lines[i].edge]++
		}
	}
	for nt, c := range perTable {
		st.NodeTable(nt).Reserve(c)
	}
	for et, c := range perEdge {
		st.EdgeTable(et).Reserve(c)
	}
	ids := newMinter()
	var pairIDs map[int]string
	if opts.Mode == Merge {
		if pairIDs, err = mergeEdgeIDs(ctx, st, lines); err != nil {
			return nil, err
		}
	}
	for i := range lines {
		ln := &lines[i]
		where := lineWhere(ln.line)
		var p *change.Table
		// The coerced props become the row (the attempt owns them; a retry
		// sets the same physical columns again).
		r := change.Row(ln.props)
		id := ln.id
		if pid, ok := pairIDs[i]; ok {
			id = pid
		}
		fresh := false
		if ln.node != nil {
			p = st.NodeTable(ln.node)
			res.Nodes++
			res.Types[ln.node.Name]++
		} else {
			p = st.EdgeTable(ln.edge)
			r[pg.ColSrc], r[pg.ColDst] = ln.from, ln.to
			res.Edges++
			res.Types[ln.edge.Name]++
		}
		if id == "" {
			var minted [26]byte
			id, fresh = string(ids.at(int32(ln.line), minted[:])), true
			p.Mint(id)
		}
		if opts.Mode == Overwrite {
			p.Overwrite()
		}
		if prev, dup := p.Staged(id); dup && prev != nil {
			if ln.edge == nil {
				return nil, graph.InputErrorf(where, "%s %q is already given at %s; each id may appear once per file", p.TypeName(), id, p.Origin(id))
			}
			// The same edge id twice: the last line wins, as in the original.
			res.Edges--
			res.Types[ln.edge.Name]--
		}
		r[pg.ColID] = id
		p.Put(r, fresh || opts.Mode == Append, where)
	}
	if opts.Mode == Append {
		if err := st.CheckAppendKeys(ctx); err != nil {
			return nil, err
		}
	}
	if err := st.Validate(ctx); err != nil {
		return nil, err
	}
	if opts.Progress != nil {
		opts.Progress("write", int64(len(lines)))
	}
	if err := st.StageInto(ctx, w); err != nil {
		return nil, err
	}
	cr, err := w.Commit(ctx)
	if err != nil {
		return nil, err
	}
	if !cr.NoOp {
		c := cr.Commit
		res.Commit = &c
	}
	res.Warnings = cr.Warnings
	return res, nil
}

// mergeEdgeIDs gives each id-less edge line of a merge load its identity:
// the endpoint pair. The edge of that type from the same source to the same
// destination on the branch is replaced (its id kept), so loading one file
// twice changes nothing the second time; with no such edge the line is a new
// edge (not in the result: it gets a new ULID). A pair that names several
// edges (parallel edges on the branch, or two id-less lines of the file) is
// refused: only data.id can say which edge is meant. Keys of the result are
// indexes into lines.
func mergeEdgeIDs(ctx context.Context, st *change.Set, lines []loadLine) (map[int]string, error) {
	type pair struct {
		edge     *pg.EdgeType
		from, to string
	}
	seen := map[pair]int{} // pair -> index of its line
	bySrc := map[*pg.EdgeType][]string{}
	var order []pair
	for i := range lines {
		ln := &lines[i]
		if ln.edge == nil || ln.id != "" {
			continue
		}
		k := pair{ln.edge, ln.from, ln.to}
		if j, dup := seen[k]; dup {
			return nil, graph.InputErrorf(lineWhere(ln.line), "edge %s from %q to %q is already given at %s; --mode merge identifies an edge without data.id by its endpoints, so give each parallel edge its own data.id (or add them with --mode append)",
				ln.edge.Name, ln.from, ln.to, lineWhere(lines[j].line))
		}
		seen[k] = i
		order = append(order, k)
		bySrc[ln.edge] = append(bySrc[ln.edge], ln.from)
	}
	out := map[int]string{}
	for _, e := range st.Catalog().Edges {
		srcs := bySrc[e]
		if len(srcs) == 0 {
			continue
		}
		committed, err := st.ScanRows(ctx, graph.EdgeTableKey(e.Name), []string{pg.ColID, pg.ColSrc, pg.ColDst}, table.In(pg.ColSrc, srcs...))
		if err != nil {
			return nil, fmt.Errorf("look up existing %s edges: %w", e.Name, err)
		}
		have := map[pair][]string{}
		for _, cr := range committed {
			src, _ := cr[pg.ColSrc].(string)
			dst, _ := cr[pg.ColDst].(string)
			k := pair{e, src, dst}
			if _, wanted := seen[k]; !wanted {
				continue
			}
			cid, _ := cr[pg.ColID].(string)
			have[k] = append(have[k], cid)
		}
		for _, k := range order {
			if k.edge != e {
				continue
			}
			ids := have[k]
			i := seen[k]
			switch len(ids) {
			case 0:
			case 1:
				out[i] = ids[0]
			default:
				sort.Strings(ids)
				return nil, graph.InputErrorf(lineWhere(lines[i].line), "branch %q has %d %s edges from %q to %q (ids %s); --mode merge identifies an edge without data.id by its endpoints, so give data.id to say which one to replace (or add another with --mode append)",
					st.Snapshot().Branch(), len(ids), e.Name, k.from, k.to, strings.Join(quoteAll(ids, 3), ", "))
			}
		}
	}
	return out, nil
}

// quoteAll quotes the first n of ids, adding "..." when there are more.
func quoteAll(ids []string, n int) []string {
	var out []string
	for i, id := range ids {
		if i == n {
			out = append(out, "...")
			break
		}
		out = append(out, fmt.Sprintf("%q", id))
	}
	return out
}

// parseLoad reads and coerces every line. It stops at the first bad line.
func parseLoad(r io.Reader, in *intake, progress func(string, int64)) ([]loadLine, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), MaxLine)
	var out []loadLine
	n := 0
	for sc.Scan() {
		n++
		b := sc.Bytes()
		if n == 1 {
			b = bytes.TrimPrefix(b, []byte("\ufeff")) // a UTF-8 byte order mark starts the file, not the line
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		ln, err := in.parseLine(b)
		if err != nil {
			return nil, in.lineError(n, err)
		}
		ln.line = n
		out = append(out, ln)
		if progress != nil && n%65536 == 0 {
			progress("parse", int64(n))
		}
	}
	if err := readErr(sc.Err(), n); err != nil {
		return nil, err
	}
	if progress != nil {
		progress("parse", int64(n))
	}
	return out, nil
}

// readErr classifies the error that stopped reading the input after n
// lines: a line too long, a bad Blob value the spool met (already an
// *InputError), or the reader's own failure.
func readErr(err error, n int) error {
	var ie *graph.InputError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, bufio.ErrTooLong):
		return graph.InputErrorf(lineWhere(n+1), "line is longer than %d MiB; split the data (a Blob value of any size streams when its line names \"type\" or \"edge\" before \"data\")", MaxLine>>20)
	case errors.As(err, &ie):
		return ie
	}
	return fmt.Errorf("read the load data: %w", err)
}

func parseLoadLine(b []byte, cat *pg.Catalog) (loadLine, error) {
	v, err := parseJSONLine(b)
	if err != nil {
		return loadLine{}, err
	}
	env, ok := v.(map[string]any)
	if !ok {
		return loadLine{}, errors.New(`each line must be one JSON object: {"type":..,"data":{..}} or {"edge":..,"from":..,"to":..,"data":{..}}`)
	}
	_, isNode := env["type"]
	_, isEdge := env["edge"]
	switch {
	case isNode && isEdge:
		return loadLine{}, errors.New(`a line has either "type" (a node) or "edge" (an edge), not both`)
	case !isNode && !isEdge:
		return loadLine{}, errors.New(`a line needs "type" (a node line) or "edge" (an edge line)`)
	}
	if err := checkEnvelopeFields(env, isNode); err != nil {
		return loadLine{}, err
	}
	data, givenID, err := lineData(env)
	if err != nil {
		return loadLine{}, err
	}
	if isNode {
		return nodeLine(env["type"], data, givenID, cat)
	}
	return edgeLine(env, data, givenID, cat)
}

// checkEnvelopeFields refuses fields other than a node line's type and data,
// or an edge line's edge, from, to and data.
func checkEnvelopeFields(env map[string]any, isNode bool) error {
	allowed := map[string]bool{"type": true, "data": true}
	if !isNode {
		allowed = map[string]bool{"edge": true, "from": true, "to": true, "data": true}
	}
	var fields []string
	for k := range env {
		fields = append(fields, k)
	}
	sort.Strings(fields)
	for _, k := range fields {
		if !allowed[k] {
			if isNode {
				return fmt.Errorf("unknown field %q; a node line has only \"type\" and \"data\"", k)
			}
			return fmt.Errorf("unknown field %q; an edge line has only \"edge\", \"from\", \"to\" and \"data\"", k)
		}
	}
	return nil
}

// lineData returns a line's property values without data.id, and data.id.
func lineData(env map[string]any) (map[string]any, string, error) {
	data := map[string]any{}
	if d, ok := env["data"]; ok && d != nil {
		m, ok := d.(map[string]any)
		if !ok {
			return nil, "", errors.New(`"data" must be a JSON object of property values`)
		}
		data = m
	}
	for _, f := range reservedLoadFields {
		if _, ok := data[f]; ok {
			return nil, "", fmt.Errorf("data field %q is reserved for the storage layer; remove it", f)
		}
	}
	var givenID string
	if idv, ok := data[pg.ColID]; ok {
		s, ok := idv.(string)
		if !ok || s == "" {
			return nil, "", fmt.Errorf(`data.id must be a non-empty string, got %s`, jsonText(idv))
		}
		givenID = s
		delete(data, pg.ColID)
	}
	return data, givenID, nil
}

// nodeLine types a node line; a keyed node's id is the one its @key gives.
func nodeLine(typ any, data map[string]any, givenID string, cat *pg.Catalog) (loadLine, error) {
	var ln loadLine
	name, ok := typ.(string)
	if !ok {
		return ln, errors.New(`"type" must be a node type name (a string)`)
	}
	n, ok := cat.Node(name)
	if !ok {
		if _, isE := cat.Edge(name); isE {
			return ln, fmt.Errorf("%s is an edge type; write edge lines as {\"edge\":%q,\"from\":..,\"to\":..}", name, name)
		}
		return ln, fmt.Errorf("unknown node type %q; the schema's node types are %s", name, nodeList(cat))
	}
	props, err := n.CoerceRow(data)
	if err != nil {
		return ln, err
	}
	ln.node, ln.props, ln.id = n, props, givenID
	if len(n.Key) > 0 {
		id, err := n.IDFor(props)
		if err != nil {
			return ln, err
		}
		if givenID != "" && givenID != id {
			return ln, fmt.Errorf("data.id %q does not match the id %q its @key gives; drop data.id or fix it", givenID, id)
		}
		ln.id = id
	}
	return ln, nil
}

// edgeLine types an edge line; its endpoints come from "from" and "to".
func edgeLine(env, data map[string]any, givenID string, cat *pg.Catalog) (loadLine, error) {
	var ln loadLine
	name, ok := env["edge"].(string)
	if !ok {
		return ln, errors.New(`"edge" must be an edge type name (a string)`)
	}
	e, ok := cat.Edge(name)
	if !ok {
		if _, isN := cat.Node(name); isN {
			return ln, fmt.Errorf("%s is a node type; write node lines as {\"type\":%q,\"data\":{..}}", name, name)
		}
		return ln, fmt.Errorf("unknown edge type %q; the schema's edge types are %s", name, edgeList(cat))
	}
	for _, f := range []string{pg.ColSrc, pg.ColDst} {
		if _, ok := data[f]; ok {
			return ln, fmt.Errorf("data.%s is not allowed; give the endpoints as \"from\" and \"to\"", f)
		}
	}
	for _, end := range []struct {
		field string
		dst   *string
	}{{"from", &ln.from}, {"to", &ln.to}} {
		v, ok := env[end.field]
		if !ok {
			return ln, fmt.Errorf("edge line needs %q (the node id, its key value)", end.field)
		}
		s, ok := v.(string)
		if !ok || s == "" {
			return ln, fmt.Errorf("%q must be a node id as a non-empty string, got %s", end.field, jsonText(v))
		}
		*end.dst = s
	}
	props, err := e.CoerceRow(data)
	if err != nil {
		return ln, err
	}
	ln.edge, ln.props, ln.id = e, props, givenID
	return ln, nil
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func nodeList(cat *pg.Catalog) string {
	var names []string
	for _, n := range cat.Nodes {
		names = append(names, n.Name)
	}
	return strings.Join(names, ", ")
}

func edgeList(cat *pg.Catalog) string {
	var names []string
	for _, e := range cat.Edges {
		names = append(names, e.Name)
	}
	return strings.Join(names, ", ")
}
