// Package merge merges one graph branch into another (three-way, per
// entity, whole-row) and computes the entity diff it stands on (Diff,
// CommitChanges). docs/dev/merge.md describes the algorithm; docs/branches.md
// is the user's guide.
//
// Authority (seed 000, "Branch-merge authority"): Run captures the source
// head and the target token (g.BeginWrite on the target), finds the merge
// base and classifies every changed entity against the immutable base,
// source and target snapshots outside the gates, runs the merged rows
// through the shared constraint evaluator (graph/change), and hands the
// result to the write pipeline, which re-checks the target token before any
// effect (a moved target is *graph.ReadSetChanged; a moved source is fine:
// the captured source is merged), arms one intent, commits each table once
// and publishes one commit whose second parent is the captured source head.
package merge

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/change"
	"github.com/omnigraph-go/omnigraph/internal/plant"
	"github.com/omnigraph-go/omnigraph/lang/pg"
	"github.com/omnigraph-go/omnigraph/manifest"
	"github.com/omnigraph-go/omnigraph/table"
)

// Outcome is what a merge did.
type Outcome string

// The outcomes.
const (
	// AlreadyUpToDate: the source head is the target head or one of its
	// ancestors; nothing was written.
	AlreadyUpToDate Outcome = "already_up_to_date"
	// FastForward: the target head is the merge base; the target now holds
	// exactly the source's rows.
	FastForward Outcome = "fast_forward"
	// Merged: a three-way merge.
	Merged Outcome = "merged"
)

// DefaultMaxChanges is the largest delta (entities inserted, updated or
// deleted on the target) a merge applies; a larger one is refused with
// ErrMergeTooLarge before any effect.
const DefaultMaxChanges = 1 << 20

// Options shape a merge.
type Options struct {
	// MaxChanges overrides DefaultMaxChanges (tests).
	MaxChanges int
	// Actor overrides the handle's actor for the merge commit (the server
	// passes the request's actor).
	Actor string

	// afterCapture, when set, runs once the source and the target are
	// captured, before classification: the tests' seam to move either
	// branch mid-merge (set through export_test.go).
	afterCapture func()
}

// Result reports a merge.
type Result struct {
	Outcome      Outcome `json:"outcome"`
	Source       string  `json:"source"`
	Target       string  `json:"target"`
	SourceCommit string  `json:"source_commit"`
	BaseCommit   string  `json:"base_commit,omitempty"`
	// Commit is the published commit (nil for AlreadyUpToDate).
	Commit   *graph.CommitInfo `json:"commit,omitempty"`
	Inserted int               `json:"inserted"`
	Updated  int               `json:"updated"`
	Deleted  int               `json:"deleted"`
	Warnings []string          `json:"warnings,omitempty"`
}

// Run merges branch source into branch target (default main). A target
// that moved while the merge was prepared refuses it (ReadSetChanged),
// unless only maintenance commits moved it: then the merge is prepared
// again (bounded), as what it read is unchanged.
func Run(ctx context.Context, g *graph.Graph, source, target string, opts Options) (*Result, error) {
	qb := target
	if qb == "" {
		qb = manifest.MainBranch
	}
	// The target's turn in the process's write queue: a write of this
	// process to it lands before the merge captures it.
	ctx, leave, err := g.EnterWriteQueue(ctx, qb)
	if err != nil {
		return nil, err
	}
	defer leave()
	var res *Result
	_, err = graph.Retry(ctx, graph.DefaultWriteRetries, func(ctx context.Context) (*graph.Result, error) {
		r, err := run(ctx, g, source, target, opts, nil)
		res = r
		return nil, err
	})
	if err != nil {
		// A branch deleted after the merge captured it takes its table
		// versions with it: say so, not which table version went missing.
		err = g.IfBranchDeleted(ctx, "merge source", source, err)
		err = g.IfBranchDeleted(ctx, "merge target", target, err)
	}
	return res, err
}

// run is the merge. With pv set it is the preview (Preview): the target
// is read as a snapshot instead of captured for a write, and the run stops
// before staging, with the changes it would apply and the conflicts that
// refuse it recorded in pv; every verdict up to there is the merge's own.
func run(ctx context.Context, g *graph.Graph, source, target string, opts Options, pv *PreviewResult) (*Result, error) {
	if target == "" {
		target = manifest.MainBranch
	}
	for _, b := range []string{source, target} {
		if err := manifest.ValidateBranchName(b); err != nil {
			return nil, fmt.Errorf("%w: %v", graph.ErrInvalidBranch, err)
		}
		if manifest.IsInternalBranch(b) {
			return nil, fmt.Errorf("%w: %q is an internal branch; only public branches merge", graph.ErrInvalidBranch, b)
		}
	}
	if source == target {
		return nil, fmt.Errorf("%w: cannot merge %q into itself; name another target branch", graph.ErrInvalidBranch, source)
	}
	if opts.MaxChanges <= 0 {
		opts.MaxChanges = DefaultMaxChanges
	}
	// 1. Capture the source, then the target token.
	src, err := g.Snapshot(ctx, source)
	if err != nil {
		return nil, fmt.Errorf("merge source %q: %w", source, err)
	}
	wk := newWalker(g)
	sc, err := wk.commitOf(ctx, src.Entry())
	if err != nil {
		return nil, err
	}
	var w *graph.Write
	var tgt *graph.Snapshot
	if pv != nil {
		if tgt, err = g.Snapshot(ctx, target); err != nil {
			return nil, fmt.Errorf("merge target %q: %w", target, err)
		}
	} else {
		// The merge commit records where its second parent was published.
		from := &manifest.ForkPoint{Branch: sc.Branch, Incarnation: sc.Incarnation, Version: sc.Version, Head: sc.Commit.ID}
		if w, err = g.BeginWrite(ctx, target, graph.WriteOptions{Kind: graph.KindMerge, Strict: true, MergedParent: src.CommitID(), MergedFrom: from, Actor: opts.Actor}); err != nil {
			return nil, fmt.Errorf("merge target %q: %w", target, err)
		}
		tgt = w.Snapshot()
	}
	if opts.afterCapture != nil {
		opts.afterCapture()
	}
	res := &Result{Source: source, Target: target, SourceCommit: src.CommitID()}
	if src.SchemaIdentity() != tgt.SchemaIdentity() {
		return nil, fmt.Errorf("%w: %q and %q have different schemas; apply the same schema to both before merging", ErrSchemaBoundary, source, target)
	}
	// 2. The merge base, outside the gates.
	tc, err := wk.commitOf(ctx, tgt.Entry())
	if err != nil {
		return nil, err
	}
	bases, err := wk.mergeBases(ctx, sc, tc)
	if err != nil {
		return nil, fmt.Errorf("find the merge base of %q and %q: %w", source, target, err)
	}
	if len(bases) == 0 {
		return nil, fmt.Errorf("%q and %q share no history; nothing to merge", source, target)
	}
	base := bases[0]
	res.BaseCommit = base.Commit.ID
	if base.Commit.ID == sc.Commit.ID {
		res.Outcome = AlreadyUpToDate
		return res, nil
	}
	ff := base.Commit.ID == tc.Commit.ID
	res.Outcome = Merged
	if ff {
		res.Outcome = FastForward
	}
	if base.SchemaIdentity != tgt.SchemaIdentity() {
		return nil, fmt.Errorf("%w: a schema change lies between the merge base and the branches; merging across it is not supported", ErrSchemaBoundary)
	}
	cat, err := tgt.Catalog(ctx)
	if err != nil {
		return nil, err
	}
	m := &merger{g: g, cat: cat, base: g.SnapshotOf(base), src: src, tgt: tgt, ff: ff, source: source, target: target,
		puts: map[string]map[string]put{}, dels: map[string]map[string]bool{}, conflicted: map[string]bool{}, pv: pv}
	// 3. Classify every entity either side changed.
	if err := m.classify(ctx); err != nil {
		return nil, err
	}
	if err := m.checkOrphans(ctx); err != nil {
		return nil, err
	}
	m.checkValues()
	if len(m.conflicts) > 0 {
		return m.refuseOr(res)
	}
	n := 0
	for _, t := range m.puts {
		n += len(t)
	}
	for _, t := range m.dels {
		n += len(t)
	}
	if n > opts.MaxChanges {
		return nil, fmt.Errorf("%w: merging %q into %q changes %d entities, more than the limit of %d; nothing was written: merge in smaller steps (merge part of the work from an intermediate branch)", ErrMergeTooLarge, source, target, n, opts.MaxChanges)
	}
	// 4. The merged result through the shared constraint evaluator.
	set := change.New(tgt, cat)
	m.stage(set)
	if err := set.Validate(ctx); err != nil {
		if c, ok := asConflict(err); ok {
			m.conflicts = append(m.conflicts, c)
			return m.refuseOr(res)
		}
		return nil, err
	}
	if pv != nil {
		res.Inserted, res.Updated, res.Deleted = m.counts()
		return res, nil
	}
	if n == 0 {
		// Nothing changes on the target (both sides made the same
		// changes): the commit still records the source as merged, with a
		// pointer-only update of one unchanged pin.
		pins := tgt.Tables()
		if len(pins) == 0 {
			return nil, errors.New("merge: the graph has no tables")
		}
		if err := w.SetPin(pins[0]); err != nil {
			return nil, err
		}
	} else if err := set.StageInto(ctx, w); err != nil {
		return nil, err
	}
	// 5. The pipeline: gates, target re-check, intent, effects, publish.
	out, err := w.Commit(ctx)
	if err != nil {
		return nil, err
	}
	if !out.NoOp {
		ci := out.Commit
		res.Commit = &ci
	}
	res.Warnings = out.Warnings
	res.Inserted, res.Updated, res.Deleted = m.counts()
	return res, nil
}

type put struct {
	row   change.Row
	fresh bool // not on the target: appended without a key lookup
	op    Op
}

type merger struct {
	g              *graph.Graph
	cat            *pg.Catalog
	base, src, tgt *graph.Snapshot
	ff             bool
	source, target string

	puts       map[string]map[string]put  // table key -> id -> row for the target
	dels       map[string]map[string]bool // table key -> ids to delete on the target
	conflicts  []Conflict
	conflicted map[string]bool // table key + "\x00" + id
	pv         *PreviewResult  // set by Preview: collects what the merge would do
}

func (m *merger) conflict(t tableRef, id, kind, msg string) {
	m.conflicts = append(m.conflicts, Conflict{EntityKind: t.kind, TypeName: t.name, EntityID: id, Kind: kind, Message: msg})
	m.conflicted[t.key+"\x00"+id] = true
}

func (m *merger) refuse() error {
	m.sortConflicts()
	return &MergeConflicts{Source: m.source, Target: m.target, Conflicts: m.conflicts}
}

// refuseOr refuses the merge, or for a preview records the conflicts
// (and the counts of the changes that do apply) and returns res.
func (m *merger) refuseOr(res *Result) (*Result, error) {
	if m.pv == nil {
		return nil, m.refuse()
	}
	m.sortConflicts()
	m.pv.Conflicts = m.conflicts
	res.Inserted, res.Updated, res.Deleted = m.counts()
	return res, nil
}

// sortConflicts orders the conflicts: nodes before edges, then type, id
// and kind.
func (m *merger) sortConflicts() {
	sort.SliceStable(m.conflicts, func(i, j int) bool {
		a, b := m.conflicts[i], m.conflicts[j]
		if a.EntityKind != b.EntityKind {
			return a.EntityKind == "node"
		}
		if a.TypeName != b.TypeName {
			return a.TypeName < b.TypeName
		}
		if a.EntityID != b.EntityID {
			return a.EntityID < b.EntityID
		}
		return a.Kind < b.Kind
	})
}

// classify is the three-way rule, per table and entity: a table the source
// did not change keeps the target's rows; otherwise each entity the source
// changed is taken unless the target changed it too, differently.
func (m *merger) classify(ctx context.Context) error {
	for _, t := range tablesOf(m.cat) {
		ds, err := diffTable(ctx, m.base, m.src, t)
		if err != nil {
			return err
		}
		if len(ds) == 0 {
			continue
		}
		var dt map[string]*Change
		if !m.ff {
			if dt, err = diffTable(ctx, m.base, m.tgt, t); err != nil {
				return err
			}
		}
		for _, id := range sortedIDs(ds) {
			cs, ct := ds[id], dt[id]
			what := describe(t.kind, t.name, id)
			switch {
			case ct == nil:
				m.apply(t, cs)
			case cs.Op == OpDelete && ct.Op == OpDelete:
			case cs.Op != OpDelete && ct.Op != OpDelete && rowsEqual(cs.After, ct.After):
			case cs.Op == OpInsert && ct.Op == OpInsert:
				m.conflict(t, id, DivergentInsert, fmt.Sprintf("%s was inserted on both %q and %q with different values; change one side to match the other (or delete it on one side), then merge again", what, m.source, m.target))
			case cs.Op == OpDelete || ct.Op == OpDelete:
				del, upd := m.source, m.target
				if ct.Op == OpDelete {
					del, upd = m.target, m.source
				}
				m.conflict(t, id, DeleteVsUpdate, fmt.Sprintf("%s was deleted on %q and changed on %q; delete it on %q too, or restore it on %q, then merge again", what, del, upd, upd, del))
			default:
				m.conflict(t, id, DivergentUpdate, fmt.Sprintf("%s was changed on both %q and %q to different values (merge compares whole rows); make the two rows equal on one side, then merge again", what, m.source, m.target))
			}
		}
	}
	return nil
}

func (m *merger) apply(t tableRef, c *Change) {
	if c.Op == OpDelete && plant.On(plant.MergeDropDelete) {
		return
	}
	m.pv.record(c)
	if c.Op == OpDelete {
		if m.dels[t.key] == nil {
			m.dels[t.key] = map[string]bool{}
		}
		m.dels[t.key][c.ID] = true
		return
	}
	if m.puts[t.key] == nil {
		m.puts[t.key] = map[string]put{}
	}
	// The target did not change this entity, so it holds it exactly when
	// the base does: an insert is new there.
	m.puts[t.key][c.ID] = put{row: c.After, fresh: c.Op == OpInsert, op: c.Op}
}

// checkOrphans finds the edges the merged result would leave without an
// endpoint: an edge the merge writes whose endpoint is gone on the target
// (deleted there, or deleted by the merge), and an edge of the target whose
// endpoint the merge deletes.
func (m *merger) checkOrphans(ctx context.Context) error {
	for _, t := range tablesOf(m.cat) {
		if t.edge == nil {
			continue
		}
		for _, side := range []struct{ col, node string }{{pg.ColSrc, t.edge.From}, {pg.ColDst, t.edge.To}} {
			nk := graph.NodeTableKey(side.node)
			// Edges the merge writes.
			var ids []string
			for _, id := range sortedIDs(m.puts[t.key]) {
				v, _ := m.puts[t.key][id].row[side.col].(string)
				if _, staged := m.puts[nk][v]; !staged {
					ids = append(ids, v)
				}
			}
			onTarget, err := lookup(ctx, m.tgt, nk, ids)
			if err != nil {
				return err
			}
			for _, id := range sortedIDs(m.puts[t.key]) {
				v, _ := m.puts[t.key][id].row[side.col].(string)
				if _, staged := m.puts[nk][v]; staged || onTarget[v] && !m.dels[nk][v] {
					continue
				}
				m.conflict(t, id, OrphanEdge, fmt.Sprintf("%s (%s %q) points to %s, which is deleted on %q or by this merge; delete the edge on %q, or restore the %s, then merge again",
					describe(t.kind, t.name, id), side.col, v, describe("node", side.node, v), m.target, m.source, side.node))
			}
			// Edges of the target whose endpoint the merge deletes.
			gone := sortedIDs(m.dels[nk])
			if len(gone) == 0 {
				continue
			}
			ds, err := m.tgt.OpenTable(ctx, t.key)
			if err != nil {
				return err
			}
			if ds.RowCount() == 0 {
				continue
			}
			recs, err := ds.Scan(ctx, table.ScanOptions{Columns: []string{pg.ColID, side.col}, Filter: table.In(side.col, gone...)})
			if err != nil {
				return fmt.Errorf("check the edges of %s: %w", t.name, err)
			}
			var hits []change.Row
			for _, r := range recs {
				hits = append(hits, change.RecordRows(r)...)
				r.Release()
			}
			for _, r := range hits {
				id, _ := r[pg.ColID].(string)
				v, _ := r[side.col].(string)
				if m.dels[t.key][id] || m.conflicted[t.key+"\x00"+id] {
					continue
				}
				if _, replaced := m.puts[t.key][id]; replaced {
					continue // checked above with its new endpoints
				}
				m.conflict(t, id, OrphanEdge, fmt.Sprintf("%s on %q (%s %q) points to %s, which %q deletes; delete the edge on %q, or keep the %s on %q, then merge again",
					describe(t.kind, t.name, id), m.target, side.col, v, describe("node", side.node, v), m.source, m.target, side.node, m.source))
			}
		}
	}
	return nil
}

// lookup reports which of ids the snapshot's table holds.
func lookup(ctx context.Context, s *graph.Snapshot, key string, ids []string) (map[string]bool, error) {
	if len(ids) == 0 {
		return map[string]bool{}, nil
	}
	ds, err := s.OpenTable(ctx, key)
	if err != nil {
		return nil, err
	}
	return change.HasIDs(ctx, ds, ids)
}

// checkValues re-checks the value constraints (enum, @range, @check) of
// every row the merge writes. Rows come from commits that passed them
// under the same schema, so this is defence in depth.
func (m *merger) checkValues() {
	for _, t := range tablesOf(m.cat) {
		props := t.props()
		for _, id := range sortedIDs(m.puts[t.key]) {
			row := m.puts[t.key][id].row
			for _, p := range props {
				if p.Range == nil && p.Check == nil && p.Type.Kind != pg.KindEnum {
					continue
				}
				v := row[p.Name]
				switch v.(type) {
				case nil:
					continue
				case string, int32, int64, uint32, uint64, float32, float64:
				default:
					continue
				}
				if _, err := p.Coerce(v); err != nil {
					m.conflict(t, id, ValueConstraintViolation, fmt.Sprintf("%s: %v", describe(t.kind, t.name, id), err))
				}
			}
		}
	}
}

func (t tableRef) props() []*pg.Property {
	if t.node != nil {
		return t.node.Properties
	}
	return t.edge.Properties
}

// stage puts the merged rows into set, nodes first.
func (m *merger) stage(set *change.Set) {
	for _, t := range tablesOf(m.cat) {
		if len(m.puts[t.key]) == 0 && len(m.dels[t.key]) == 0 {
			continue
		}
		var p *change.Table
		if t.node != nil {
			p = set.NodeTable(t.node)
		} else {
			p = set.EdgeTable(t.edge)
		}
		for _, id := range sortedIDs(m.puts[t.key]) {
			pu := m.puts[t.key][id]
			p.Put(pu.row, pu.fresh, describe(t.kind, t.name, id))
		}
		for _, id := range sortedIDs(m.dels[t.key]) {
			p.Del(id, describe(t.kind, t.name, id))
		}
	}
}

func (m *merger) counts() (ins, upd, del int) {
	for _, t := range m.puts {
		for _, p := range t {
			if p.op == OpInsert {
				ins++
			} else {
				upd++
			}
		}
	}
	for _, t := range m.dels {
		del += len(t)
	}
	return ins, upd, del
}

// asConflict maps a failure of the shared constraint evaluator to a
// conflict.
func asConflict(err error) (Conflict, bool) {
	var v *change.Violation
	if errors.As(err, &v) {
		kind := UniqueViolation
		switch v.Kind {
		case change.ViolationCard:
			kind = CardinalityViolation
		case change.ViolationEndpoint:
			kind = OrphanEdge
		}
		return Conflict{EntityKind: v.EntityKind, TypeName: v.TypeName, EntityID: v.EntityID, Kind: kind, Message: v.Error()}, true
	}
	if errors.Is(err, graph.ErrInvalidInput) {
		return Conflict{Kind: ValueConstraintViolation, Message: err.Error()}, true
	}
	return Conflict{}, false
}
