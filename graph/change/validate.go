package change

// The write-time validator shared by load and mutations. Row-local checks
// (types, required properties, enums, @range, @check) run as each row is
// coerced; the checks here run once, at the end of the write, against the
// write's snapshot overlaid with its pending rows, and before anything is
// staged: @unique and key uniqueness, edge endpoints, @card.

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/lang/pg"
	"github.com/omnigraph-go/omnigraph/table"
)

// validate runs the end-of-write checks: uniqueness and edge endpoints over
// every table with pending rows, then edges an overwrite would strand, then
// @card over every touched source.
func (s *Set) Validate(ctx context.Context) error {
	keys := make([]string, 0, len(s.tables))
	for k := range s.tables {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := s.tables[k]
		if len(p.rows) == 0 {
			continue
		}
		groups := p.uniqueGroups()
		for _, g := range groups {
			if err := s.checkUnique(ctx, p, g); err != nil {
				return err
			}
		}
		if p.edge != nil {
			if err := s.checkEndpoints(ctx, p); err != nil {
				return err
			}
		}
	}
	for _, e := range s.cat.Edges {
		if err := s.checkStranded(ctx, e); err != nil {
			return err
		}
	}
	for _, e := range s.cat.Edges {
		if err := s.checkCard(ctx, e); err != nil {
			return err
		}
	}
	return nil
}

// uniqueGroups are the @unique groups to check; a node's key group is
// enforced by its id already.
func (p *Table) uniqueGroups() [][]string {
	var src [][]string
	var key []string
	if p.node != nil {
		src, key = p.node.Unique, p.node.Key
	} else {
		src = p.edge.Unique
	}
	var out [][]string
	for _, g := range src {
		if sameColumnSet(g, key) {
			continue
		}
		out = append(out, g)
	}
	return out
}

func sameColumnSet(a, b []string) bool {
	if len(a) != len(b) || len(a) == 0 {
		return false
	}
	x := append([]string(nil), a...)
	y := append([]string(nil), b...)
	sort.Strings(x)
	sort.Strings(y)
	for i := range x {
		if x[i] != y[i] {
			return false
		}
	}
	return true
}

// uniqueTupleKey renders the values of cols in r; ok is false when one is NULL
// (NULLs are exempt from uniqueness).
func uniqueTupleKey(r Row, cols []string) (string, bool) {
	parts := make([]string, len(cols))
	for i, c := range cols {
		v := r[c]
		if v == nil {
			return "", false
		}
		parts[i] = fmt.Sprintf("%T:%v", v, v)
	}
	return strings.Join(parts, "\x00"), true
}

func uniqueTupleText(r Row, cols []string) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = fmt.Sprintf("%s=%v", c, r[c])
	}
	return strings.Join(parts, ", ")
}

// propKind is the kind of column c (String for the physical columns).
func (p *Table) propKind(c string) pg.Kind {
	var pr *pg.Property
	var ok bool
	if p.node != nil {
		pr, ok = p.node.Property(c)
	} else {
		pr, ok = p.edge.Property(c)
	}
	if !ok {
		return pg.KindString
	}
	return pr.Type.Kind
}

func (s *Set) checkUnique(ctx context.Context, p *Table, cols []string) error {
	name := p.TypeName()
	what := name + "." + strings.Join(cols, ",")
	seen := map[string]string{}
	for _, id := range p.order {
		tk, ok := uniqueTupleKey(p.rows[id], cols)
		if !ok {
			continue
		}
		if other, dup := seen[tk]; dup {
			return violation(ViolationUnique, p, id, graph.InputErrorf(p.origin[id], "@unique violation on %s: %s is also used by %s %q (%s); give each a distinct value",
				what, uniqueTupleText(p.rows[id], cols), name, other, p.origin[other]))
		}
		seen[tk] = id
	}
	if p.overwrite || len(seen) == 0 {
		return nil
	}
	var filter table.Predicate
	if len(seen) <= 256 {
		var ors []table.Predicate
		for _, id := range p.order {
			r := p.rows[id]
			var ands []table.Predicate
			for _, c := range cols {
				if pr, ok := PushdownCmp(c, p.propKind(c), "=", r[c]); ok {
					ands = append(ands, pr)
				}
			}
			if len(ands) != len(cols) {
				ors = nil
				break
			}
			ors = append(ors, table.And(ands...))
		}
		if len(ors) > 0 {
			filter = table.Or(ors...)
		}
	}
	committed, err := s.ScanRows(ctx, p.key, append([]string{pg.ColID}, cols...), filter)
	if err != nil {
		return fmt.Errorf("check @unique on %s: %w", what, err)
	}
	for _, cr := range committed {
		cid, _ := cr[pg.ColID].(string)
		if _, replaced := p.rows[cid]; replaced || p.deletes[cid] {
			continue
		}
		tk, ok := uniqueTupleKey(cr, cols)
		if !ok {
			continue
		}
		if id, clash := seen[tk]; clash && id != cid {
			return violation(ViolationUnique, p, id, graph.InputErrorf(p.origin[id], "@unique violation on %s: %s is already used by %s %q on branch %q; pick another value, or update that %s instead",
				what, uniqueTupleText(cr, cols), name, cid, s.snap.Branch(), name))
		}
	}
	return nil
}

// nodesExist reports which of ids exist in node type n after the write:
// pending rows first, then the committed table (unless overwritten).
func (s *Set) nodesExist(ctx context.Context, n *pg.NodeType, ids []string) (map[string]bool, error) {
	found := map[string]bool{}
	p := s.tables[graph.NodeTableKey(n.Name)]
	var rest []string
	for _, id := range ids {
		switch {
		case p != nil && p.rows[id] != nil:
			found[id] = true
		case p != nil && (p.overwrite || p.deletes[id]):
		default:
			rest = append(rest, id)
		}
	}
	got, err := s.lookupIDs(ctx, graph.NodeTableKey(n.Name), rest)
	if err != nil {
		return nil, err
	}
	for id := range got {
		found[id] = true
	}
	return found, nil
}

func (s *Set) checkEndpoints(ctx context.Context, p *Table) error {
	e := p.edge
	for _, side := range []struct{ col, node, word string }{{pg.ColSrc, e.From, "from"}, {pg.ColDst, e.To, "to"}} {
		n, ok := s.cat.Node(side.node)
		if !ok {
			return fmt.Errorf("edge %s names unknown node type %s", e.Name, side.node)
		}
		// Endpoints staged by this write need no lookup; the rest are
		// looked up once each.
		np := s.tables[graph.NodeTableKey(n.Name)]
		staged := func(v string) bool { return np != nil && np.rows[v] != nil }
		var ids []string
		dedup := map[string]bool{}
		for _, id := range p.order {
			v, _ := p.rows[id][side.col].(string)
			if !staged(v) && !dedup[v] {
				dedup[v] = true
				ids = append(ids, v)
			}
		}
		found, err := s.nodesExist(ctx, n, ids)
		if err != nil {
			return fmt.Errorf("check %s endpoints: %w", e.Name, err)
		}
		for _, id := range p.order {
			v, _ := p.rows[id][side.col].(string)
			if !staged(v) && !found[v] {
				return violation(ViolationEndpoint, p, id, graph.InputErrorf(p.origin[id], "edge %s: %s %q not found in %s; insert that %s first (or earlier in the same write), or fix the %s value",
					e.Name, side.col, v, n.Name, n.Name, side.word))
			}
		}
	}
	return nil
}

// Violation kinds: which constraint a Violation broke.
const (
	ViolationUnique   = "unique"
	ViolationEndpoint = "endpoint"
	ViolationCard     = "card"
)

// Violation is the *graph.InputError of a broken constraint, with which
// constraint and which entity (for @card: the edge type and the source
// node id), so a writer that reports conflicts (merge) can classify it. It
// unwraps to the *graph.InputError, so errors.Is(err, graph.ErrInvalidInput)
// and errors.As(err, **graph.InputError) still hold.
type Violation struct {
	*graph.InputError
	Kind       string
	EntityKind string // "node" or "edge"
	TypeName   string
	EntityID   string
}

// Unwrap exposes the *graph.InputError.
func (v *Violation) Unwrap() error { return v.InputError }

func violation(kind string, p *Table, id string, err error) error {
	ek := "node"
	if p.edge != nil {
		ek = "edge"
	}
	return &Violation{InputError: err.(*graph.InputError), Kind: kind, EntityKind: ek, TypeName: p.TypeName(), EntityID: id}
}

// strandedError is an *InputError that also matches ErrReferentialIntegrity.
type strandedError struct{ graph.InputError }

func (e *strandedError) Is(target error) bool {
	return target == graph.ErrReferentialIntegrity || target == graph.ErrInvalidInput
}

// checkStranded refuses a write that replaces the image of a node type
// (load --mode overwrite) while committed edges of e it keeps still point at
// nodes the new image drops: such an edge would outlive its endpoint.
// Edges the write itself replaces or deletes are not kept, and an
// overwritten edge table keeps none (its new rows are checked by
// checkEndpoints).
func (s *Set) checkStranded(ctx context.Context, e *pg.EdgeType) error {
	ep := s.tables[graph.EdgeTableKey(e.Name)]
	if ep != nil && ep.overwrite {
		return nil
	}
	from := s.tables[graph.NodeTableKey(e.From)]
	to := s.tables[graph.NodeTableKey(e.To)]
	gone := func(p *Table, id string) bool { return p != nil && p.overwrite && p.rows[id] == nil }
	if (from == nil || !from.overwrite) && (to == nil || !to.overwrite) {
		return nil
	}
	committed, err := s.ScanRows(ctx, graph.EdgeTableKey(e.Name), []string{pg.ColID, pg.ColSrc, pg.ColDst}, table.Predicate{})
	if err != nil {
		return fmt.Errorf("check the edges of %s: %w", e.Name, err)
	}
	var n int
	var exID, exSrc, exDst, exCol, exNode, exEnd string
	for _, cr := range committed {
		cid, _ := cr[pg.ColID].(string)
		if ep != nil && (ep.rows[cid] != nil || ep.deletes[cid]) {
			continue
		}
		src, _ := cr[pg.ColSrc].(string)
		dst, _ := cr[pg.ColDst].(string)
		col, node, end := "", "", ""
		switch {
		case gone(from, src):
			col, node, end = pg.ColSrc, e.From, src
		case gone(to, dst):
			col, node, end = pg.ColDst, e.To, dst
		default:
			continue
		}
		n++
		if exID == "" || cid < exID {
			exID, exSrc, exDst, exCol, exNode, exEnd = cid, src, dst, col, node, end
		}
	}
	if n == 0 {
		return nil
	}
	return StrandedError(e, n, exID, exSrc, exDst, exCol, exNode, exEnd)
}

// StrandedError is the referential-integrity error of an overwrite that
// would strand n committed edges of e; the example is edge id (src -> dst),
// whose col endpoint end is not in the new image of node type node. It is
// an *InputError matching ErrReferentialIntegrity and ErrInvalidInput.
func StrandedError(e *pg.EdgeType, n int, id, src, dst, col, node, end string) error {
	more := ""
	if n > 1 {
		more = fmt.Sprintf(" (and %d more %s edges)", n-1, e.Name)
	}
	return &strandedError{graph.InputError{Msg: fmt.Sprintf(
		"referential integrity: overwriting %s would leave edge %s %q (src %q -> dst %q) with %s %q not found in %s%s; "+
			"put that %s in the file, or replace %s in the same load (give its edges in the file, or --type %s to empty it)",
		node, e.Name, id, src, dst, col, end, node, more, node, e.Name, e.Name)}}
}

// checkCard enforces @card(min..max) of e on every source the write
// touches, counted on the write's result (committed edges minus those it
// replaces or deletes, plus its pending edges). Touched: a source node the
// write inserts or loads, the source of every edge it adds or replaces, the
// former source of every committed edge it replaces (an edge moved to
// another source), deletes or overwrites. A source node the write deletes
// is not checked: its edges go with it.
func (s *Set) checkCard(ctx context.Context, e *pg.EdgeType) error {
	if e.Card.Min <= 0 && e.Card.Max < 0 {
		return nil
	}
	key := graph.EdgeTableKey(e.Name)
	p := s.tables[key]
	np := s.tables[graph.NodeTableKey(e.From)]
	// Only a minimum can fail for a source that gains no edge (a loaded
	// node, the former source of a moved or deleted edge); only the
	// sources of added edges can exceed a maximum.
	needMin := e.Card.Min > 0
	if (p == nil || p.empty()) && (!needMin || np == nil || len(np.rows) == 0) {
		return nil
	}
	var sources []string
	first := map[string]string{}
	touch := func(src, origin string) {
		if np != nil && (np.deletes[src] || (np.overwrite && np.rows[src] == nil)) {
			return
		}
		if _, ok := first[src]; !ok {
			sources = append(sources, src)
			first[src] = origin
		}
	}
	if np != nil && needMin {
		for _, id := range np.order {
			touch(id, np.origin[id])
		}
	}
	if p != nil {
		for _, id := range p.order {
			src, _ := p.rows[id][pg.ColSrc].(string)
			touch(src, p.origin[id])
		}
		switch {
		case !needMin:
		case p.overwrite:
			old, err := s.ScanRows(ctx, key, []string{pg.ColSrc}, table.Predicate{})
			if err != nil {
				return fmt.Errorf("check @card of %s: %w", e.Name, err)
			}
			for _, cr := range old {
				src, _ := cr[pg.ColSrc].(string)
				touch(src, "")
			}
		default:
			// The former sources of the committed edges this write replaces
			// or deletes.
			var ids []string
			for _, id := range p.order {
				if !p.fresh[id] {
					ids = append(ids, id)
				}
			}
			ids = append(ids, p.delOrd...)
			if len(ids) > 0 {
				old, err := s.ScanRows(ctx, key, []string{pg.ColID, pg.ColSrc}, table.In(pg.ColID, ids...))
				if err != nil {
					return fmt.Errorf("check @card of %s: %w", e.Name, err)
				}
				oldSrc := make(map[string]string, len(old))
				for _, cr := range old {
					cid, _ := cr[pg.ColID].(string)
					oldSrc[cid], _ = cr[pg.ColSrc].(string)
				}
				for _, cid := range ids {
					src, ok := oldSrc[cid]
					if !ok {
						continue
					}
					origin := p.origin[cid]
					if p.deletes[cid] {
						origin = p.delOrigin[cid]
					}
					touch(src, origin)
				}
			}
		}
	}
	if len(sources) == 0 {
		return nil
	}
	count := make(map[string]int, len(sources))
	if p == nil || !p.overwrite {
		committed, err := s.ScanRows(ctx, key, []string{pg.ColID, pg.ColSrc}, table.In(pg.ColSrc, sources...))
		if err != nil {
			return fmt.Errorf("check @card of %s: %w", e.Name, err)
		}
		for _, cr := range committed {
			cid, _ := cr[pg.ColID].(string)
			if p != nil && (p.rows[cid] != nil || p.deletes[cid]) {
				continue
			}
			count[cr[pg.ColSrc].(string)]++
		}
	}
	if p != nil {
		for _, id := range p.order {
			if src, _ := p.rows[id][pg.ColSrc].(string); hasKey(first, src) {
				count[src]++
			}
		}
	}
	for _, src := range sources {
		c := count[src]
		if e.Card.Max >= 0 && c > e.Card.Max {
			return &Violation{Kind: ViolationCard, EntityKind: "edge", TypeName: e.Name, EntityID: src, InputError: graph.InputErrorf(first[src], "@card violation on edge %s: source %q has %d edges (max %d, @card(%s)); remove the extra edges or delete an existing one first",
				e.Name, src, c, e.Card.Max, e.Card).(*graph.InputError)}
		}
		if c < e.Card.Min {
			return &Violation{Kind: ViolationCard, EntityKind: "edge", TypeName: e.Name, EntityID: src, InputError: graph.InputErrorf(first[src], "@card violation on edge %s: source %q has %d edges (min %d, @card(%s)); give a new %s its %s edges in the same write, and to drop the last edges of a %s delete the %s itself (or replace the edges in the same write)",
				e.Name, src, c, e.Card.Min, e.Card, e.From, e.Name, e.From, e.From).(*graph.InputError)}
		}
	}
	return nil
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

// PushdownCmp turns `col op v` into a table predicate when the table layer
// can evaluate it exactly (strings, booleans, numbers). The caller still
// evaluates the comparison itself; PushdownCmp only prunes what is read.
func PushdownCmp(col string, k pg.Kind, op string, v any) (table.Predicate, bool) {
	switch {
	case k == pg.KindString || k == pg.KindEnum || k.Numeric():
	case k == pg.KindBool && (op == "=" || op == "!="):
	default:
		return table.Predicate{}, false
	}
	switch v.(type) {
	case string, bool, int32, int64, uint32, uint64, float32, float64:
	default:
		return table.Predicate{}, false
	}
	if _, err := table.ScalarOf(v); err != nil {
		return table.Predicate{}, false
	}
	switch op {
	case "=":
		return table.Eq(col, v), true
	case "!=":
		return table.Ne(col, v), true
	case "<":
		return table.Lt(col, v), true
	case "<=":
		return table.Le(col, v), true
	case ">":
		return table.Gt(col, v), true
	case ">=":
		return table.Ge(col, v), true
	}
	return table.Predicate{}, false
}

// CheckAppendKeys refuses an append (load --mode append: a strict insert) of an id the branch already holds,
// reporting the clash that comes first in the file.
func (st *Set) CheckAppendKeys(ctx context.Context) error {
	keys := make([]string, 0, len(st.tables))
	for k := range st.tables {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var first *graph.KeyConflict
	firstSeq := -1
	for _, k := range keys {
		p := st.tables[k]
		var given []string
		for _, id := range p.order {
			if !p.minted[id] {
				given = append(given, id)
			}
		}
		found, err := st.lookupIDs(ctx, k, given)
		if err != nil {
			return fmt.Errorf("check existing ids of %s: %w", p.TypeName(), err)
		}
		for _, id := range given {
			if !found[id] {
				continue
			}
			if seq := p.seq[id]; firstSeq < 0 || seq < firstSeq {
				kind := "node"
				if p.edge != nil {
					kind = "edge"
				}
				first = &graph.KeyConflict{Where: p.origin[id], EntityKind: kind, TypeName: p.TypeName(), EntityID: id, Branch: st.snap.Branch()}
				firstSeq = seq
			}
			break
		}
	}
	if first != nil {
		return first
	}
	return nil
}
