package gq

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/omnigraph-go/omnigraph/lang/pg"
)

// A parameter compared with (or stored into) a slot of another type is
// converted to that slot's type exactly as a literal in its place would be
// (coerceLiteral): a number compared with an F32 property becomes the F32
// nearest its decimal spelling, a String compared with an enum property
// must be one of the enum's values. The checker marks such a use with
// Operand.As and records it on the Param; Bind converts the bound value
// once per use and refuses a value the slot's type cannot hold (CodeBadValue,
// as for a literal), before the executor reads anything.

// paramUse is one slot type a parameter is converted to.
type paramUse struct {
	t    pg.Type
	what string // the slot, for messages ("$p.status", "Person.status")
	pos  Pos
}

// needsAs reports whether a parameter of type p compared with a slot of
// type t must be converted first.
func needsAs(p, t pg.Type) bool {
	switch {
	case t.Kind.Float():
		return p.Kind.Numeric() && p.Kind != t.Kind
	case t.Kind == pg.KindEnum:
		return p.Kind == pg.KindString
	case t.Kind == pg.KindList && p.Kind == pg.KindList && p.Elem != nil && t.Elem != nil:
		return needsAs(*p.Elem, *t.Elem)
	}
	return false
}

// useParam marks the parameter operand o as converted to t when its type
// needs it, and records the use so Bind checks the value.
func (c *checker) useParam(o *Operand, t pg.Type, what string, pos Pos) {
	if o.Kind != OperandParam || !needsAs(o.Type, t) {
		return
	}
	p := c.params[o.Param]
	if p == nil {
		return
	}
	tt := t
	o.As = &tt
	for _, u := range p.uses {
		if u.t.Equal(t) {
			return
		}
	}
	p.uses = append(p.uses, paramUse{t: t, what: what, pos: pos})
}

// convertParam converts a bound parameter value (canonical, see doc.go) to
// type t as a literal of that value would be coerced. nil stays nil.
func convertParam(v any, t pg.Type) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch {
	case t.Kind.Float():
		text, ok := numberText(v)
		if !ok {
			return v, nil
		}
		return parseFloatText(text, t.Kind)
	case t.Kind == pg.KindEnum:
		s, ok := v.(string)
		if ok && !slices.Contains(t.Values, s) {
			return nil, fmt.Errorf("%q is not one of %s", s, strings.Join(t.Values, ", "))
		}
		return v, nil
	case t.Kind == pg.KindList && t.Elem != nil:
		l, ok := v.([]any)
		if !ok {
			return v, nil
		}
		out := make([]any, len(l))
		for i, e := range l {
			x, err := convertParam(e, *t.Elem)
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	}
	return v, nil
}

// numberText is the decimal spelling of a canonical number: the shortest
// one that reads back as the same value of its own width, so an F32 1.2
// reads as "1.2", not as its float64 widening.
func numberText(v any) (string, bool) {
	switch x := v.(type) {
	case int32:
		return strconv.FormatInt(int64(x), 10), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case uint32:
		return strconv.FormatUint(uint64(x), 10), true
	case uint64:
		return strconv.FormatUint(x, 10), true
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32), true
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), true
	}
	return "", false
}

// asKey names the conversion of parameter name to type t in Args.
func asKey(name string, t pg.Type) string { return name + "\x00" + t.String() }
