// Package schema evolves a graph's accepted schema (seed 000's SchemaApply
// writer) and builds the indexes a schema declares (EnsureIndices).
//
// Plan compares the schema accepted at a snapshot with a desired .pg and
// lists the steps that turn one into the other, each classified by what it
// does to stored data: metadata only, a table rewrite, a new table, or
// refused (with a stable code and what to do instead). Checks that depend
// on data (adding a required property, a new @unique, @range or @check,
// dropping a populated type) read the snapshot's tables.
//
// Apply runs a supported plan as one graph commit on main through the
// write pipeline (graph.KindSchemaApply, the schema gate held exclusively):
// tables whose columns change are rewritten in place as staged table
// transactions under one recovery intent; added types (and renamed types
// whose columns also change) get a new table at a path no manifest
// version references, created before the intent is armed; renames without
// column changes and drops are pointer-only. The commit's manifest version
// names the new schema identity, whose source is stored first, so the one
// publish switches schema and data together, and every older snapshot
// keeps reading with its own schema (time travel).
//
// EnsureIndices (indices.go) builds the key index of every table that lacks
// one covering all its fragments, as one maintenance commit.
package schema

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/change"
	"github.com/omnigraph-go/omnigraph/lang/pg"
	"github.com/omnigraph-go/omnigraph/table"
)

// Step kinds (Step.Kind), as in the original's plan JSON.
const (
	KindAddType           = "add_type"
	KindRenameType        = "rename_type"
	KindDropType          = "drop_type"
	KindAddProperty       = "add_property"
	KindRenameProperty    = "rename_property"
	KindDropProperty      = "drop_property"
	KindReorderProperties = "reorder_properties"
	KindAddConstraint     = "add_constraint"
	KindDropConstraint    = "drop_constraint"
	KindExtendEnum        = "extend_enum"
	KindTypeMetadata      = "update_type_metadata"
	KindPropertyMetadata  = "update_property_metadata"
	KindUnsupported       = "unsupported_change"
)

// Effects (Step.Effect): what a step does to stored data.
const (
	// EffectMetadata changes only the accepted schema.
	EffectMetadata = "metadata"
	// EffectRewrite rewrites the type's table with its new columns.
	EffectRewrite = "rewrite"
	// EffectCreate creates the new type's (empty) table.
	EffectCreate = "create"
	// EffectRefused: the plan cannot be applied while this step is in it.
	EffectRefused = "refused"
)

// Stable codes of refused steps. The OG-MF and OG-DS codes are the
// original's schema-lint codes; OG-SA codes are this implementation's.
const (
	CodeRequiredProperty = "OG-MF-103" // a required property added to a populated type
	CodeTighten          = "OG-MF-104" // nullable -> required while rows hold null
	CodeTypeChange       = "OG-MF-106" // any type change but an enum widening
	CodeDropNodeType     = "OG-DS-102" // dropping a populated node type
	CodeDropEdgeType     = "OG-DS-103" // dropping a populated edge type
	CodeDropProperty     = "OG-DS-104" // dropping a property of a populated type
	CodeKeyChange        = "OG-SA-101" // @key added, removed or changed
	CodeEndpoints        = "OG-SA-102" // an edge's endpoint types changed
	CodeCard             = "OG-SA-103" // @card tightened
	CodeEmbed            = "OG-SA-104" // @embed changed
	CodeInterfaces       = "OG-SA-105" // implemented interfaces changed
	CodeViolation        = "OG-SA-106" // a new constraint that existing rows break
	CodeRename           = "OG-SA-107" // an @rename_from that cannot be applied
)

// rebuildHint is what to do instead of an unsupported change that only a
// rebuild can make.
const rebuildHint = "to make this change, export the graph ('omnigraph export --out data.jsonl --schema-out old.pg'), edit the data to fit, 'omnigraph init --schema new.pg' a new location and 'omnigraph load --mode overwrite' the data there"

// Step is one change of a plan.
type Step struct {
	Kind string `json:"kind"`
	// TypeKind is "node", "edge" or "interface".
	TypeKind string `json:"type_kind,omitempty"`
	// Name is the type a type-level step is about (its new name).
	Name string `json:"name,omitempty"`
	// TypeName and PropertyName name a property-level step's property
	// (new names).
	TypeName     string `json:"type_name,omitempty"`
	PropertyName string `json:"property_name,omitempty"`
	PropertyType string `json:"property_type,omitempty"`
	// From and To are a rename's old and new names.
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	// Constraint is an added or dropped constraint in .pg form.
	Constraint  string   `json:"constraint,omitempty"`
	AddedValues []string `json:"added_values,omitempty"`
	Annotations []string `json:"annotations,omitempty"`
	// Mode of a drop: always "soft" (the data stays reachable by time
	// travel until cleanup removes the versions that hold it).
	Mode string `json:"mode,omitempty"`
	// Rows is the live row count of the type's table, where it matters.
	Rows int64 `json:"rows,omitempty"`
	// Effect is what the step does to stored data (Effect*).
	Effect string `json:"effect"`
	// Entity, Reason, Code and Hint describe a refused step.
	Entity string `json:"entity,omitempty"`
	Reason string `json:"reason,omitempty"`
	Code   string `json:"code,omitempty"`
	Hint   string `json:"hint,omitempty"`
	// Examples are ids of rows that break a new constraint.
	Examples []string `json:"examples,omitempty"`
}

// Message renders a refused step: "[code] reason; hint".
func (s Step) Message() string {
	m := s.Reason
	if s.Code != "" {
		m = "[" + s.Code + "] " + m
	}
	if len(s.Examples) > 0 {
		m += " (for example " + strings.Join(s.Examples, ", ") + ")"
	}
	if s.Hint != "" {
		m += "; " + s.Hint
	}
	return m
}

// Plan is the difference between the accepted and a desired schema.
type Plan struct {
	// Supported: no step is refused, so Apply would run it.
	Supported bool `json:"supported"`
	// NoOp: the schemas are the same; there is nothing to apply.
	NoOp bool   `json:"no_op"`
	From string `json:"from_identity"`
	To   string `json:"to_identity"`
	// Branch and Version are the snapshot the plan was made against.
	Branch  string `json:"branch"`
	Version uint64 `json:"manifest_version"`
	Steps   []Step `json:"steps"`
	// Rewrites are the tables Apply would rewrite (new type names).
	Rewrites []string `json:"rewrites"`

	types   []*typeChange
	desired *pg.Catalog
}

// Refused returns the refused steps.
func (p *Plan) Refused() []Step {
	var out []Step
	for _, s := range p.Steps {
		if s.Effect == EffectRefused {
			out = append(out, s)
		}
	}
	return out
}

// PlanOptions tune a plan.
type PlanOptions struct {
	// AllowDataLoss permits dropping populated types and properties (the
	// drop is still soft: older snapshots keep the data until cleanup).
	AllowDataLoss bool
}

// ErrRefused: the plan holds a refused step; nothing was changed.
var ErrRefused = errors.New("schema change refused")

// RefusedError is a plan Apply will not run.
type RefusedError struct{ Plan *Plan }

func (e *RefusedError) Error() string {
	r := e.Plan.Refused()
	msgs := make([]string, len(r))
	for i, s := range r {
		msgs[i] = s.Entity + ": " + s.Message()
	}
	return fmt.Sprintf("schema change refused (nothing was changed): %s", strings.Join(msgs, "; "))
}

// Unwrap makes errors.Is(err, ErrRefused) hold.
func (e *RefusedError) Unwrap() error { return ErrRefused }

// typeView is a node or edge type as the planner compares it.
type typeView struct {
	kind   string // "node" or "edge"
	name   string
	key    string // the table's manifest key
	props  []*pg.Property
	ids    []string // node @key
	unique [][]string
	index  [][]string
	ann    pg.Annotations
	impls  []string
	from   string
	to     string
	card   pg.Card
	schema *arrow.Schema
	node   *pg.NodeType
	edge   *pg.EdgeType
}

func nodeView(n *pg.NodeType) *typeView {
	return &typeView{kind: "node", name: n.Name, key: graph.NodeTableKey(n.Name), props: n.Properties, ids: n.Key,
		unique: n.Unique, index: n.Index, ann: n.Annotations, impls: n.Implements, schema: n.ArrowSchema(), node: n}
}

func edgeView(e *pg.EdgeType) *typeView {
	return &typeView{kind: "edge", name: e.Name, key: graph.EdgeTableKey(e.Name), props: e.Properties,
		unique: e.Unique, index: e.Index, ann: e.Annotations, from: e.From, to: e.To, card: e.Card, schema: e.ArrowSchema(), edge: e}
}

func (t *typeView) prop(name string) *pg.Property {
	for _, p := range t.props {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// typeChange is what Apply does to one type of the desired schema (or to
// a dropped one: new is nil).
type typeChange struct {
	old, new *typeView
	// columns maps each new column to the old column it is read from
	// ("" : a new column, all null).
	columns map[string]string
	rewrite bool
	// refused: a column change was refused, so no reorder is planned.
	refused bool
}

// Compute plans the change from the schema accepted at snap to desired. It
// reads the snapshot's tables for the data-dependent checks and writes
// nothing.
func Compute(ctx context.Context, snap *graph.Snapshot, desired *pg.Catalog, opts PlanOptions) (*Plan, error) {
	accepted, err := snap.Catalog(ctx)
	if err != nil {
		return nil, err
	}
	p := &Plan{From: accepted.Identity, To: desired.Identity, Branch: snap.Branch(), Version: snap.Version(),
		Steps: []Step{}, Rewrites: []string{}, desired: desired}
	if accepted.Identity == desired.Identity {
		p.Supported, p.NoOp = true, true
		return p, nil
	}
	pl := &planner{ctx: ctx, snap: snap, opts: opts, plan: p, renamedNodes: map[string]string{}}
	pl.interfaces(accepted, desired)
	var oldNodes, newNodes, oldEdges, newEdges []*typeView
	for _, n := range accepted.Nodes {
		oldNodes = append(oldNodes, nodeView(n))
	}
	for _, n := range desired.Nodes {
		newNodes = append(newNodes, nodeView(n))
	}
	for _, e := range accepted.Edges {
		oldEdges = append(oldEdges, edgeView(e))
	}
	for _, e := range desired.Edges {
		newEdges = append(newEdges, edgeView(e))
	}
	if err := pl.types(oldNodes, newNodes); err != nil {
		return nil, err
	}
	if err := pl.types(oldEdges, newEdges); err != nil {
		return nil, err
	}
	if len(p.Steps) == 0 {
		// Only formatting-neutral differences the identity still sees
		// (the canonical text changed without a modelled step).
		p.Steps = append(p.Steps, Step{Kind: KindTypeMetadata, TypeKind: "schema", Name: "schema", Effect: EffectMetadata})
	}
	p.Supported = len(p.Refused()) == 0
	for _, tc := range p.types {
		if tc.new != nil && tc.old != nil && tc.rewrite {
			p.Rewrites = append(p.Rewrites, tc.new.key)
		}
	}
	return p, nil
}

type planner struct {
	ctx          context.Context
	snap         *graph.Snapshot
	opts         PlanOptions
	plan         *Plan
	renamedNodes map[string]string // old node name -> new
}

func (pl *planner) add(s Step) { pl.plan.Steps = append(pl.plan.Steps, s) }

func (pl *planner) refuse(entity, code, reason, hint string) {
	pl.add(Step{Kind: KindUnsupported, Entity: entity, Code: code, Reason: reason, Hint: hint, Effect: EffectRefused})
}

// rows is the live row count of an accepted type's table.
func (pl *planner) rows(key string) (int64, error) {
	ds, err := pl.snap.OpenTable(pl.ctx, key)
	if err != nil {
		return 0, err
	}
	return ds.RowCount(), nil
}

func (pl *planner) interfaces(accepted, desired *pg.Catalog) {
	for _, i := range desired.Interfaces {
		if _, ok := accepted.Interface(i.Name); !ok {
			pl.add(Step{Kind: KindAddType, TypeKind: "interface", Name: i.Name, Effect: EffectMetadata})
		}
	}
	for _, i := range accepted.Interfaces {
		if _, ok := desired.Interface(i.Name); !ok {
			pl.add(Step{Kind: KindDropType, TypeKind: "interface", Name: i.Name, Mode: "soft", Effect: EffectMetadata})
		}
	}
}

// types matches the desired types of one kind with the accepted ones (by
// name, then by @rename_from) and plans each pair. Nodes are planned
// before edges, so an edge's endpoints are compared through node renames.
func (pl *planner) types(old, desired []*typeView) error {
	byName := map[string]*typeView{}
	for _, t := range old {
		byName[t.name] = t
	}
	wanted := map[string]bool{}
	for _, t := range desired {
		wanted[t.name] = true
	}
	matched := map[string]bool{}
	for _, nt := range desired {
		ot := byName[nt.name]
		if ot == nil {
			if from := nt.ann.Text("rename_from"); from != "" {
				switch src := byName[from]; {
				case src == nil:
					// Already renamed by an earlier apply, or a new type.
				case wanted[from]:
					pl.refuse(nt.kind+":"+nt.name, CodeRename,
						fmt.Sprintf("%s %s is renamed from %s, but the new schema still declares %s", nt.kind, nt.name, from, from),
						"remove the @rename_from, or the old declaration")
					matched[from] = true
					continue
				case matched[from]:
					pl.refuse(nt.kind+":"+nt.name, CodeRename, fmt.Sprintf("two %s types are renamed from %s", nt.kind, from), "rename it into one type only")
					continue
				default:
					ot = src
					pl.add(Step{Kind: KindRenameType, TypeKind: nt.kind, From: from, To: nt.name, Effect: EffectMetadata})
					if nt.kind == "node" {
						pl.renamedNodes[from] = nt.name
					}
				}
			}
		}
		if ot == nil {
			pl.add(Step{Kind: KindAddType, TypeKind: nt.kind, Name: nt.name, Effect: EffectCreate})
			pl.plan.types = append(pl.plan.types, &typeChange{new: nt})
			continue
		}
		matched[ot.name] = true
		if err := pl.pair(ot, nt); err != nil {
			return err
		}
	}
	for _, ot := range old {
		if matched[ot.name] {
			continue
		}
		n, err := pl.rows(ot.key)
		if err != nil {
			return err
		}
		st := Step{Kind: KindDropType, TypeKind: ot.kind, Name: ot.name, Mode: "soft", Rows: n, Effect: EffectMetadata}
		if n > 0 && !pl.opts.AllowDataLoss {
			code := CodeDropNodeType
			if ot.kind == "edge" {
				code = CodeDropEdgeType
			}
			st.Effect, st.Entity, st.Code = EffectRefused, ot.kind+":"+ot.name, code
			st.Reason = fmt.Sprintf("dropping %s type %s removes its %d rows from the graph", ot.kind, ot.name, n)
			st.Hint = "pass --allow-data-loss to drop it (older snapshots keep the rows until cleanup removes them), or keep the type"
		}
		pl.add(st)
		pl.plan.types = append(pl.plan.types, &typeChange{old: ot})
	}
	return nil
}

// pair plans the changes of one type that exists in both schemas.
func (pl *planner) pair(ot, nt *typeView) error {
	tc := &typeChange{old: ot, new: nt, columns: map[string]string{}}
	pl.plan.types = append(pl.plan.types, tc)
	entity := nt.kind + ":" + nt.name
	rows, err := pl.rows(ot.key)
	if err != nil {
		return err
	}
	for _, c := range ot.schema.Fields() {
		if c.Name == pg.ColID || c.Name == pg.ColSrc || c.Name == pg.ColDst {
			tc.columns[c.Name] = c.Name
		}
	}
	if nt.kind == "node" && !sameStrings(ot.impls, nt.impls) {
		pl.refuse(entity, CodeInterfaces, fmt.Sprintf("node %s changes the interfaces it implements", nt.name), rebuildHint)
	}
	if nt.kind == "edge" {
		if pl.mapNode(ot.from) != nt.from || pl.mapNode(ot.to) != nt.to {
			pl.refuse(entity, CodeEndpoints, fmt.Sprintf("edge %s changes its endpoints from %s -> %s to %s -> %s", nt.name, ot.from, ot.to, nt.from, nt.to),
				"declare a new edge type for the new endpoints, load its edges, then drop the old one")
		}
		if ot.card != nt.card {
			if nt.card.Min <= ot.card.Min && (nt.card.Max < 0 || ot.card.Max >= 0 && nt.card.Max >= ot.card.Max) {
				pl.add(Step{Kind: KindAddConstraint, TypeKind: "edge", TypeName: nt.name, Constraint: "@card(" + nt.card.String() + ")", Effect: EffectMetadata})
			} else {
				pl.refuse(entity, CodeCard, fmt.Sprintf("edge %s tightens @card from %s to %s", nt.name, ot.card, nt.card),
					"only widening @card is supported; keep the old bounds, or rebuild: "+rebuildHint)
			}
		}
	}
	pl.metadata(nt, "", ot.ann, nt.ann)

	// Properties, matched by name, then by @rename_from.
	wanted := map[string]bool{}
	for _, p := range nt.props {
		wanted[p.Name] = true
	}
	used := map[string]bool{}
	for _, np := range nt.props {
		op := ot.prop(np.Name)
		if op == nil {
			if from := np.Annotations.Text("rename_from"); from != "" {
				switch src := ot.prop(from); {
				case src == nil:
				case wanted[from] || used[from]:
					tc.refused = true
					pl.refuse(entity+"."+np.Name, CodeRename,
						fmt.Sprintf("%s.%s is renamed from %s, but %s is still declared or renamed twice", nt.name, np.Name, from, from),
						"remove the @rename_from, or the old property")
					used[from] = true
					continue
				default:
					op = src
					pl.add(Step{Kind: KindRenameProperty, TypeKind: nt.kind, TypeName: nt.name, From: from, To: np.Name, Effect: EffectRewrite})
					tc.rewrite = true
				}
			}
		}
		pentity := entity + "." + np.Name
		if op == nil {
			tc.columns[np.Name] = ""
			tc.rewrite = true
			st := Step{Kind: KindAddProperty, TypeKind: nt.kind, TypeName: nt.name, PropertyName: np.Name, PropertyType: typeText(np), Rows: rows, Effect: EffectRewrite}
			if !np.Nullable && rows > 0 {
				st.Kind, st.Effect, st.Entity, st.Code = KindUnsupported, EffectRefused, pentity, CodeRequiredProperty
				st.Reason = fmt.Sprintf("adding required property %s.%s to a type with %d rows: they would have no value", nt.name, np.Name, rows)
				st.Hint = fmt.Sprintf("declare it nullable (%s: %s?), apply, fill it in with a load or mutation, then make it required in a later apply", np.Name, np.Type)
			}
			pl.add(st)
			continue
		}
		used[op.Name] = true
		tc.columns[np.Name] = op.Name
		if err := pl.property(tc, op, np, rows); err != nil {
			return err
		}
	}
	for _, op := range ot.props {
		if used[op.Name] {
			continue
		}
		tc.rewrite = true
		st := Step{Kind: KindDropProperty, TypeKind: nt.kind, TypeName: nt.name, PropertyName: op.Name, Mode: "soft", Rows: rows, Effect: EffectRewrite}
		if rows > 0 && !pl.opts.AllowDataLoss {
			st.Effect, st.Entity, st.Code = EffectRefused, entity+"."+op.Name, CodeDropProperty
			st.Reason = fmt.Sprintf("dropping property %s.%s removes its values from %d rows", nt.name, op.Name, rows)
			st.Hint = "pass --allow-data-loss to drop it (older snapshots keep the values until cleanup removes them), or keep the property"
		}
		pl.add(st)
	}
	if !tc.rewrite && !tc.refused && !sameColumns(ot.schema, nt.schema, tc.columns) {
		// Same columns in another order, or a nullability change: the
		// stored schema is positional.
		tc.rewrite = true
		pl.add(Step{Kind: KindReorderProperties, TypeKind: nt.kind, Name: nt.name, Effect: EffectRewrite})
	}

	// Keys: identity changes need a rebuild.
	if nt.kind == "node" && !sameStrings(pl.mapProps(tc, ot.ids), nt.ids) {
		pl.refuse(entity, CodeKeyChange, fmt.Sprintf("node %s changes its @key from (%s) to (%s): every id would change", nt.name, strings.Join(ot.ids, ", "), strings.Join(nt.ids, ", ")), rebuildHint)
	}
	return pl.groups(tc, entity)
}

// property plans one matched property.
func (pl *planner) property(tc *typeChange, op, np *pg.Property, rows int64) error {
	nt := tc.new
	pentity := nt.kind + ":" + nt.name + "." + np.Name
	switch {
	case op.Type.Equal(np.Type) && op.Nullable == np.Nullable:
	case op.Type.Kind == pg.KindEnum && np.Type.Kind == pg.KindEnum && op.Nullable == np.Nullable && superset(np.Type.Values, op.Type.Values):
		pl.add(Step{Kind: KindExtendEnum, TypeKind: nt.kind, TypeName: nt.name, PropertyName: np.Name, AddedValues: minus(np.Type.Values, op.Type.Values), Effect: EffectMetadata})
	case op.Type.Equal(np.Type) && !op.Nullable:
		// required -> nullable: widening, but the column's nullability is
		// part of the stored schema.
		tc.rewrite = true
		pl.add(Step{Kind: KindPropertyMetadata, TypeKind: nt.kind, TypeName: nt.name, PropertyName: np.Name, PropertyType: typeText(np), Effect: EffectRewrite})
	case op.Type.Equal(np.Type):
		// nullable -> required: only while no live row holds null.
		nulls, err := pl.nullIDs(tc.old.key, op.Name)
		if err != nil {
			return err
		}
		if len(nulls) > 0 {
			tc.refused = true
			pl.add(Step{Kind: KindUnsupported, Entity: pentity, Code: CodeTighten, Effect: EffectRefused, Examples: nulls,
				Reason: fmt.Sprintf("making %s.%s required while rows hold no value for it", nt.name, np.Name),
				Hint:   "fill in the missing values with a load or mutation first, or keep it nullable"})
		} else {
			tc.rewrite = true
			pl.add(Step{Kind: KindPropertyMetadata, TypeKind: nt.kind, TypeName: nt.name, PropertyName: np.Name, PropertyType: typeText(np), Effect: EffectRewrite})
		}
	default:
		what := fmt.Sprintf("changing the type of %s.%s from %s to %s", nt.name, np.Name, typeText(op), typeText(np))
		if op.Type.Kind == pg.KindEnum && np.Type.Kind == pg.KindEnum {
			what = fmt.Sprintf("narrowing or renaming the values of enum %s.%s", nt.name, np.Name)
		}
		tc.refused = true
		pl.add(Step{Kind: KindUnsupported, Entity: pentity, Code: CodeTypeChange, Reason: what + " is not supported", Effect: EffectRefused,
			Hint: "add a new property of the new type, copy the values over with a load, then drop the old one; or " + rebuildHint})
	}
	if !sameEmbed(op.Embed, np.Embed) {
		pl.add(Step{Kind: KindUnsupported, Entity: pentity, Code: CodeEmbed, Effect: EffectRefused,
			Reason: fmt.Sprintf("changing @embed of %s.%s: the stored vectors would no longer match their declared source", nt.name, np.Name),
			Hint:   "add a new Vector property with the new @embed and fill it, then drop the old one"})
	}
	if op.Inherited != np.Inherited {
		pl.add(Step{Kind: KindUnsupported, Entity: pentity, Code: CodeInterfaces, Effect: EffectRefused,
			Reason: fmt.Sprintf("%s.%s changes where it is declared (interface %q, now %q)", nt.name, np.Name, op.Inherited, np.Inherited),
			Hint:   rebuildHint})
	}
	// @range and @check live on the property.
	if np.Range != nil && (op.Range == nil || op.Range.String() != np.Range.String()) {
		c := fmt.Sprintf("@range(%s, %s)", np.Name, np.Range)
		bad, err := pl.scanBad(tc.old.key, op.Name, func(v any) bool { return !inRange(v, np.Range) })
		if err != nil {
			return err
		}
		pl.constraint(tc, c, bad)
	} else if np.Range == nil && op.Range != nil {
		pl.add(Step{Kind: KindDropConstraint, TypeKind: nt.kind, TypeName: nt.name, Constraint: fmt.Sprintf("@range(%s, %s)", op.Name, op.Range), Effect: EffectMetadata})
	}
	if np.Check != nil && (op.Check == nil || op.Check.Pattern != np.Check.Pattern) {
		c := fmt.Sprintf("@check(%s, %q)", np.Name, np.Check.Pattern)
		re, err := regexp.Compile(np.Check.Pattern)
		if err != nil {
			return fmt.Errorf("%w: %v", graph.ErrInvalidSchema, err)
		}
		bad, err := pl.scanBad(tc.old.key, op.Name, func(v any) bool { s, ok := v.(string); return ok && !re.MatchString(s) })
		if err != nil {
			return err
		}
		pl.constraint(tc, c, bad)
	} else if np.Check == nil && op.Check != nil {
		pl.add(Step{Kind: KindDropConstraint, TypeKind: nt.kind, TypeName: nt.name, Constraint: fmt.Sprintf("@check(%s, %q)", op.Name, op.Check.Pattern), Effect: EffectMetadata})
	}
	pl.metadata(nt, np.Name, op.Annotations, np.Annotations)
	return nil
}

// groups plans @unique and @index groups.
func (pl *planner) groups(tc *typeChange, entity string) error {
	ot, nt := tc.old, tc.new
	oldU := groupSet(pl.mapGroups(tc, ot.unique))
	for _, g := range nt.unique {
		k := strings.Join(g, ",")
		if oldU[k] {
			continue
		}
		bad, err := pl.duplicates(tc, g)
		if err != nil {
			return err
		}
		pl.constraint(tc, "@unique("+strings.Join(g, ", ")+")", bad)
	}
	newU := groupSet(nt.unique)
	for _, g := range pl.mapGroups(tc, ot.unique) {
		if !newU[strings.Join(g, ",")] {
			pl.add(Step{Kind: KindDropConstraint, TypeKind: nt.kind, TypeName: nt.name, Constraint: "@unique(" + strings.Join(g, ", ") + ")", Effect: EffectMetadata})
		}
	}
	oldI := groupSet(pl.mapGroups(tc, ot.index))
	for _, g := range nt.index {
		if !oldI[strings.Join(g, ",")] {
			pl.add(Step{Kind: KindAddConstraint, TypeKind: nt.kind, TypeName: nt.name, Constraint: "@index(" + strings.Join(g, ", ") + ")", Effect: EffectMetadata})
		}
	}
	newI := groupSet(nt.index)
	for _, g := range pl.mapGroups(tc, ot.index) {
		if !newI[strings.Join(g, ",")] {
			pl.add(Step{Kind: KindDropConstraint, TypeKind: nt.kind, TypeName: nt.name, Constraint: "@index(" + strings.Join(g, ", ") + ")", Effect: EffectMetadata})
		}
	}
	return nil
}

// constraint adds an add_constraint step, refused when rows break it.
func (pl *planner) constraint(tc *typeChange, c string, bad []string) {
	nt := tc.new
	st := Step{Kind: KindAddConstraint, TypeKind: nt.kind, TypeName: nt.name, Constraint: c, Effect: EffectMetadata}
	if len(bad) > 0 {
		st.Kind, st.Effect, st.Entity, st.Code, st.Examples = KindUnsupported, EffectRefused, nt.kind+":"+nt.name, CodeViolation, bad
		st.Reason = fmt.Sprintf("existing rows of %s break the new constraint %s", nt.name, c)
		st.Hint = "fix or delete those rows first, then apply again"
	}
	pl.add(st)
}

// metadata plans annotation changes that are not constraints.
func (pl *planner) metadata(nt *typeView, prop string, old, new pg.Annotations) {
	o, n := metaAnnotations(old), metaAnnotations(new)
	if sameStrings(o, n) {
		return
	}
	if n == nil {
		n = []string{}
	}
	if prop == "" {
		pl.add(Step{Kind: KindTypeMetadata, TypeKind: nt.kind, Name: nt.name, Annotations: n, Effect: EffectMetadata})
		return
	}
	pl.add(Step{Kind: KindPropertyMetadata, TypeKind: nt.kind, TypeName: nt.name, PropertyName: prop, Annotations: n, Effect: EffectMetadata})
}

// constraintAnnotations are decoded into catalog fields and planned as
// constraints (or, for @rename_from, as renames), not as metadata.
var constraintAnnotations = map[string]bool{"rename_from": true, "key": true, "unique": true, "index": true,
	"range": true, "check": true, "embed": true, "card": true}

func metaAnnotations(as pg.Annotations) []string {
	var out []string
	for _, a := range as {
		if !constraintAnnotations[a.Name] {
			out = append(out, a.String())
		}
	}
	sort.Strings(out)
	return out
}

func (pl *planner) mapNode(name string) string {
	if n, ok := pl.renamedNodes[name]; ok {
		return n
	}
	return name
}

// mapProps renames old property names to their new names.
func (pl *planner) mapProps(tc *typeChange, names []string) []string {
	back := map[string]string{}
	for n, o := range tc.columns {
		if o != "" {
			back[o] = n
		}
	}
	out := make([]string, len(names))
	for i, n := range names {
		if m, ok := back[n]; ok {
			out[i] = m
		} else {
			out[i] = n
		}
	}
	return out
}

func (pl *planner) mapGroups(tc *typeChange, gs [][]string) [][]string {
	out := make([][]string, len(gs))
	for i, g := range gs {
		out[i] = pl.mapProps(tc, g)
	}
	return out
}

// maxExamples bounds the example ids a refused step lists.
const maxExamples = 5

// scanRows reads the live rows of an accepted table, the given columns
// plus id.
func (pl *planner) scanRows(key string, cols ...string) ([]change.Row, error) {
	ds, err := pl.snap.OpenTable(pl.ctx, key)
	if err != nil {
		return nil, err
	}
	if ds.RowCount() == 0 {
		return nil, nil
	}
	recs, err := ds.Scan(pl.ctx, table.ScanOptions{Columns: append([]string{pg.ColID}, cols...)})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	var out []change.Row
	for _, r := range recs {
		out = append(out, change.RecordRows(r)...)
		r.Release()
	}
	return out, nil
}

// scanBad returns example ids of rows whose non-null value of col fails.
func (pl *planner) scanBad(key, col string, fails func(any) bool) ([]string, error) {
	rows, err := pl.scanRows(key, col)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range rows {
		if v := r[col]; v != nil && fails(v) {
			out = append(out, fmt.Sprint(r[pg.ColID]))
		}
	}
	return firstSorted(out), nil
}

func (pl *planner) nullIDs(key, col string) ([]string, error) {
	rows, err := pl.scanRows(key, col)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range rows {
		if r[col] == nil {
			out = append(out, fmt.Sprint(r[pg.ColID]))
		}
	}
	return firstSorted(out), nil
}

// duplicates returns example ids of rows sharing a value tuple of the
// (new-named) group; rows with a null in the group are not compared.
func (pl *planner) duplicates(tc *typeChange, group []string) ([]string, error) {
	cols := make([]string, len(group))
	for i, c := range group {
		cols[i] = tc.columns[c]
		if cols[i] == "" {
			return nil, nil // a new column: all null
		}
	}
	rows, err := pl.scanRows(tc.old.key, cols...)
	if err != nil {
		return nil, err
	}
	seen := map[string]string{}
	var out []string
	for _, r := range rows {
		parts := make([]string, len(cols))
		null := false
		for i, c := range cols {
			if r[c] == nil {
				null = true
				break
			}
			parts[i] = fmt.Sprintf("%#v", r[c])
		}
		if null {
			continue
		}
		k := strings.Join(parts, "\x00")
		id := fmt.Sprint(r[pg.ColID])
		if first, ok := seen[k]; ok {
			out = append(out, first+" = "+id)
			continue
		}
		seen[k] = id
	}
	return firstSorted(out), nil
}

func firstSorted(ids []string) []string {
	sort.Strings(ids)
	if len(ids) > maxExamples {
		ids = ids[:maxExamples]
	}
	return ids
}

func inRange(v any, r *pg.Range) bool {
	var f float64
	switch x := v.(type) {
	case int32:
		f = float64(x)
	case int64:
		f = float64(x)
	case uint32:
		f = float64(x)
	case uint64:
		f = float64(x)
	case float32:
		f = float64(x)
	case float64:
		f = x
	default:
		return true
	}
	return (r.Min == nil || f >= *r.Min) && (r.Max == nil || f <= *r.Max)
}

func typeText(p *pg.Property) string {
	if p.Nullable {
		return p.Type.String() + "?"
	}
	return p.Type.String()
}

// sameColumns: the new schema reads the old table as is (same columns in
// the same order with the same types and nullability, through the column
// map).
func sameColumns(old, new *arrow.Schema, columns map[string]string) bool {
	if old.NumFields() != new.NumFields() {
		return false
	}
	for i, nf := range new.Fields() {
		of := old.Field(i)
		if columns[nf.Name] != of.Name || nf.Nullable != of.Nullable || !arrow.TypeEqual(nf.Type, of.Type) {
			return false
		}
	}
	return true
}

func sameEmbed(a, b *pg.Embed) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

func sameStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func superset(big, small []string) bool {
	have := map[string]bool{}
	for _, v := range big {
		have[v] = true
	}
	for _, v := range small {
		if !have[v] {
			return false
		}
	}
	return true
}

func minus(a, b []string) []string {
	drop := map[string]bool{}
	for _, v := range b {
		drop[v] = true
	}
	var out []string
	for _, v := range a {
		if !drop[v] {
			out = append(out, v)
		}
	}
	return out
}

func groupSet(gs [][]string) map[string]bool {
	out := map[string]bool{}
	for _, g := range gs {
		out[strings.Join(g, ",")] = true
	}
	return out
}
