package gq

import (
	"fmt"
	"strings"

	"github.com/omnigraph-go/omnigraph/lang/pg"
)

func (c *checker) mutation(stmts []Statement) *MutationPlan {
	mp := &MutationPlan{}
	for i := range stmts {
		s := &stmts[i]
		if s.Kind == StmtDelete {
			mp.Destructive = true
		}
		if ms := c.statement(s); ms != nil {
			mp.Statements = append(mp.Statements, ms)
		}
	}
	return mp
}

func (c *checker) statement(s *Statement) *MutationStmt {
	ms := &MutationStmt{Pos: s.Pos, Kind: s.Kind}
	n, isNode := c.cat.Node(s.Type)
	e, isEdge := c.cat.Edge(s.Type)
	if isNode {
		isEdge = false
	}
	switch {
	case isNode:
		ms.Node = n
	case isEdge:
		ms.Edge = e
	default:
		names := append(c.nodeNames(), c.edgeNames()...)
		c.add(errorf(CodeUnknownType, s.TPos, "unknown type %q; %s", s.Type, suggest(s.Type, names)))
		return nil
	}
	nerr := len(c.errs)
	switch s.Kind {
	case StmtInsert:
		if isNode {
			c.insertNode(s, ms, n)
		} else {
			c.insertEdge(s, ms, e)
		}
	case StmtUpdate:
		if isEdge {
			c.add(errorf(CodeUpdateEdge, s.Pos, "%s is an edge type and edges cannot be updated; delete the edge and insert it again with the new values", e.Name))
			return nil
		}
		if len(s.Set) == 0 {
			c.add(errorf(CodeUnknownType, s.Pos, "update %s set { } assigns nothing; assign at least one property, as in set { %s: %s }", n.Name, firstNonKey(n), exampleFor(n, firstNonKey(n))))
		}
		ms.Values = c.assignments(s.Set, n.Name, n.Properties, func(p *pg.Property, pv *PropValue) bool {
			if p.Key {
				c.add(errorf(CodeKeyAssign, pv.Pos, "%s is part of the key of %s and cannot be updated; delete the node and insert it with the new key", p.Name, n.Name))
				return false
			}
			return true
		})
		ms.Where = c.mutationWhere(s.Where, n.Name, n.Properties, nil)
	case StmtDelete:
		if isNode {
			ms.Where = c.mutationWhere(s.Where, n.Name, n.Properties, nil)
		} else {
			ms.Where = c.mutationWhere(s.Where, e.Name, e.Properties, e)
		}
	}
	if len(c.errs) > nerr {
		return nil
	}
	return ms
}

func firstNonKey(n *pg.NodeType) string {
	for _, p := range n.Properties {
		if !p.Key {
			return p.Name
		}
	}
	return "prop"
}

func exampleFor(n *pg.NodeType, prop string) string {
	if p, ok := n.Property(prop); ok {
		return example(p.Type)
	}
	return "value"
}

// assignments checks prop: value pairs against props; extra runs per-property
// checks and returns false to drop the assignment.
func (c *checker) assignments(set []*PropValue, owner string, props []*pg.Property, extra func(*pg.Property, *PropValue) bool) []*Assignment {
	var out []*Assignment
	seen := map[string]Pos{}
	for _, pv := range set {
		p, ok := findProperty(props, pv.Name)
		if !ok {
			c.add(errorf(CodeUnknownProperty, pv.Pos, "%s has no property %q; %s", owner, pv.Name, suggest(pv.Name, propNames(props))))
			continue
		}
		if prev, dup := seen[pv.Name]; dup {
			c.add(errorf(CodeDuplicateAssign, pv.Pos, "%s is already assigned at %s; keep one value", pv.Name, prev))
			continue
		}
		seen[pv.Name] = pv.Pos
		if extra != nil && !extra(p, pv) {
			continue
		}
		v, ok := c.valueOperand(pv.Value, p.Type, p.Nullable, owner+"."+p.Name, true)
		if !ok {
			continue
		}
		if v.Kind == OperandLiteral && v.Value != nil {
			// Constraints (@range, @check) are checked now for literals.
			if _, err := p.Coerce(v.Value); err != nil {
				c.add(errorf(CodeBadValue, pv.Value.Pos, "%v", err))
				continue
			}
		}
		out = append(out, &Assignment{Prop: p, Value: v})
	}
	return out
}

func findProperty(props []*pg.Property, name string) (*pg.Property, bool) {
	for _, p := range props {
		if p.Name == name {
			return p, true
		}
	}
	return nil, false
}

func (c *checker) insertNode(s *Statement, ms *MutationStmt, n *pg.NodeType) {
	ms.Upsert = len(n.Key) > 0
	ms.Values = c.assignments(s.Set, n.Name, n.Properties, nil)
	given := map[string]bool{}
	for _, pv := range s.Set {
		given[pv.Name] = true
	}
	var missing []string
	for _, p := range n.Properties {
		if p.Nullable || given[p.Name] {
			continue
		}
		// A required embedding counts as set when its source text is set.
		if p.Embed != nil && given[p.Embed.Source] {
			continue
		}
		missing = append(missing, p.Name)
	}
	if len(missing) > 0 {
		ex := make([]string, len(missing))
		for i, m := range missing {
			ex[i] = m + ": " + exampleFor(n, m)
		}
		c.add(errorf(CodeMissingRequired, s.Pos, "insert %s misses required %s %s; add %s",
			n.Name, plural(len(missing), "property", "properties"), strings.Join(missing, ", "), strings.Join(ex, ", ")))
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// endpointType is the type of a from/to value for node type name: its key
// type for a single-property key, String otherwise.
func (c *checker) endpointType(name string) pg.Type {
	if n, ok := c.cat.Node(name); ok && len(n.Key) == 1 {
		if p, ok := n.Property(n.Key[0]); ok {
			return p.Type
		}
	}
	return pg.Type{Kind: pg.KindString}
}

func (c *checker) insertEdge(s *Statement, ms *MutationStmt, e *pg.EdgeType) {
	var rest []*PropValue
	for _, pv := range s.Set {
		if pv.Name != "from" && pv.Name != "to" {
			rest = append(rest, pv)
			continue
		}
		node := e.From
		if pv.Name == "to" {
			node = e.To
		}
		if (pv.Name == "from" && ms.From != nil) || (pv.Name == "to" && ms.To != nil) {
			c.add(errorf(CodeDuplicateAssign, pv.Pos, "%s is already given; keep one value", pv.Name))
			continue
		}
		what := fmt.Sprintf("%s.%s (the %s node's id)", e.Name, pv.Name, node)
		v, ok := c.valueOperand(pv.Value, c.endpointType(node), false, what, true)
		if !ok {
			continue
		}
		if pv.Name == "from" {
			ms.From = &v
		} else {
			ms.To = &v
		}
	}
	ms.Values = c.assignments(rest, e.Name, e.Properties, nil)
	var missing []string
	if ms.From == nil && !hasName(s.Set, "from") {
		missing = append(missing, "from: "+example(c.endpointType(e.From))+" (a "+e.From+" key)")
	}
	if ms.To == nil && !hasName(s.Set, "to") {
		missing = append(missing, "to: "+example(c.endpointType(e.To))+" (a "+e.To+" key)")
	}
	given := map[string]bool{}
	for _, pv := range rest {
		given[pv.Name] = true
	}
	for _, p := range e.Properties {
		if !p.Nullable && !given[p.Name] {
			missing = append(missing, p.Name+": "+example(p.Type))
		}
	}
	if len(missing) > 0 {
		c.add(errorf(CodeMissingRequired, s.Pos, "insert %s is missing values; add %s", e.Name, strings.Join(missing, ", ")))
	}
}

func hasName(set []*PropValue, name string) bool {
	for _, pv := range set {
		if pv.Name == name {
			return true
		}
	}
	return false
}

// mutationWhere checks `where column op value`; edge is set for edge deletes,
// where from / to name the endpoint columns.
func (c *checker) mutationWhere(fc *FilterClause, owner string, props []*pg.Property, edge *pg.EdgeType) *MutationWhere {
	name := fc.Left.Text
	mw := &MutationWhere{Column: name, Op: fc.Op}
	var t pg.Type
	if edge != nil && (name == "from" || name == "to") {
		node := edge.From
		mw.Column = pg.ColSrc
		if name == "to" {
			node, mw.Column = edge.To, pg.ColDst
		}
		t = c.endpointType(node)
		if fc.Op != OpEq && fc.Op != OpNe {
			c.add(errorf(CodeTypeMismatch, fc.OpPos, "%s is a node id and only = and != apply; write where %s = %s", name, name, example(t)))
			return nil
		}
	} else {
		p, ok := findProperty(props, name)
		if !ok {
			cands := propNames(props)
			if edge != nil {
				cands = append([]string{"from", "to"}, cands...)
			}
			c.add(errorf(CodeUnknownProperty, fc.Pos, "%s has no property %q; %s", owner, name, suggest(name, cands)))
			return nil
		}
		if p.Type.Kind == pg.KindBlob {
			c.add(errorf(CodeBlob, fc.Pos, "%s.%s is a Blob and cannot be matched on; select rows by another property", owner, name))
			return nil
		}
		mw.Prop = p
		rt, ok := c.rightType(fc.Op, p.Type, fc.OpPos, owner+"."+name)
		if !ok {
			return nil
		}
		t = rt
	}
	if fc.Right.Kind == ExprNull {
		c.add(errorf(CodeNull, fc.Right.Pos, "comparing with null never matches; compare with a value"))
		return nil
	}
	v, ok := c.valueOperand(fc.Right, t, false, owner+"."+name, false)
	if !ok {
		return nil
	}
	mw.Value = v
	return mw
}
