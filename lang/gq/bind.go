package gq

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/omnigraph-go/omnigraph/lang/pg"
)

// Args are a plan's parameters bound to values, plus the instant now()
// stands for during one execution.
type Args struct {
	// Values maps each declared parameter name to its canonical value (see
	// doc.go); nil is NULL. Every declared parameter has an entry.
	Values map[string]any
	// Now is the value of now() for the whole execution: microseconds since
	// the Unix epoch, UTC.
	Now int64

	// as holds each parameter converted to the types it is compared with
	// (Operand.As), keyed by asKey.
	as map[string]any
}

// Bind checks params (as decoded from JSON, or Go values of the canonical
// types) against the plan's declared parameters and coerces each to its
// declared type with pg's value rules, then to the type of every slot it is
// compared with or stored into (Operand.As): an unknown enum value, or a
// number out of an F32's range, is refused here, before any I/O, with the
// code a literal of that value gets (CodeBadValue). A parameter that is missing is NULL
// when declared nullable and an error otherwise; an undeclared name is an
// error; a limit parameter must be >= 0. Errors are *Error values with
// CodeMissingParam or CodeBadValue, classified by ErrInvalidQuery. now() is
// fixed to the current time, truncated to microseconds.
func Bind(p *Plan, params map[string]any) (*Args, error) {
	return BindAt(p, params, time.Now())
}

// BindAt is Bind with now() fixed to the given instant.
func BindAt(p *Plan, params map[string]any, now time.Time) (*Args, error) {
	a, err := bindAt(p, params, now)
	if err != nil {
		return nil, inQuery(err, p.Name)
	}
	return a, nil
}

func bindAt(p *Plan, params map[string]any, now time.Time) (*Args, *Error) {
	a := &Args{Values: make(map[string]any, len(p.Params)), Now: pg.DateTimeMicros(now)}
	var unknown []string
	for name := range params {
		if _, ok := p.Param(name); !ok {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return nil, errorf(CodeMissingParam, Pos{}, "there is no parameter %s; the query takes %s", strings.Join(unknown, ", "), paramList(p))
	}
	for _, pr := range p.Params {
		raw, given := params[pr.Name]
		if !given && !pr.Nullable {
			return nil, errorf(CodeMissingParam, Pos{}, "parameter $%s (%s) is required; pass it, as in {%q: %s}", pr.Name, pr.Type, pr.Name, example(pr.Type))
		}
		v, err := bareProperty(pr.Type, pr.Nullable).Coerce(raw)
		if err != nil {
			var ve *pg.ValueError
			msg := err.Error()
			if errors.As(err, &ve) {
				msg = ve.Msg
			}
			return nil, errorf(CodeBadValue, Pos{}, "parameter $%s: %s", pr.Name, msg)
		}
		a.Values[pr.Name] = v
		for _, u := range pr.uses {
			cv, err := convertParam(v, u.t)
			if err != nil {
				return nil, errorf(CodeBadValue, u.pos, "parameter $%s: %s: %v", pr.Name, u.what, err)
			}
			if a.as == nil {
				a.as = map[string]any{}
			}
			a.as[asKey(pr.Name, u.t)] = cv
		}
	}
	if rp := p.Read; rp != nil && rp.Limit != nil && rp.Limit.Kind == OperandParam {
		if n, ok := limitValue(a.Values[rp.Limit.Param]); !ok || n < 0 {
			return nil, errorf(CodeLimit, Pos{}, "parameter $%s is used as the limit and must be a non-negative integer; got %v", rp.Limit.Param, a.Values[rp.Limit.Param])
		}
	}
	return a, nil
}

func paramList(p *Plan) string {
	if len(p.Params) == 0 {
		return "no parameters"
	}
	parts := make([]string, len(p.Params))
	for i, pr := range p.Params {
		parts[i] = "$" + pr.Name + ": " + paramTypeString(pr)
	}
	return strings.Join(parts, ", ")
}

func limitValue(v any) (int64, bool) {
	switch n := v.(type) {
	case int32:
		return int64(n), true
	case int64:
		return n, true
	case uint32:
		return int64(n), true
	case uint64:
		if n > 1<<62 {
			return 1 << 62, true
		}
		return int64(n), true
	}
	return 0, false
}

// Value resolves a constant operand (literal, parameter or now()) to its
// canonical value. It panics on property and variable operands, which only
// the executor can read from a row.
func (a *Args) Value(o Operand) any {
	switch o.Kind {
	case OperandLiteral:
		return o.Value
	case OperandParam:
		v := a.Values[o.Param]
		if o.As == nil {
			return v
		}
		if cv, ok := a.as[asKey(o.Param, *o.As)]; ok {
			return cv
		}
		// Args not made by Bind: convert now; a value the type cannot hold
		// stays as it is and matches nothing of that type.
		if cv, err := convertParam(v, *o.As); err == nil {
			return cv
		}
		return v
	case OperandNow:
		return a.Now
	}
	panic(fmt.Sprintf("gq: Args.Value of a non-constant operand (kind %d)", o.Kind))
}

// Limit returns the bound limit of a read plan, and false when it has none.
func (a *Args) Limit(rp *ReadPlan) (int64, bool) {
	if rp == nil || rp.Limit == nil {
		return 0, false
	}
	n, _ := limitValue(a.Value(*rp.Limit))
	return n, true
}
