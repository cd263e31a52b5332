package load

// The one-pass line parser of the columnar path. It takes the common shape
// of a load line (flat members, "type"/"edge" before "data", strings
// without escapes, scalar values) straight into a table's scratch slots, and
// answers errSlow for anything else, including every error: the strict row
// parser (parseLoadLine) then reads the line, so results and messages are
// the row path's by construction.

import (
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/omnigraph-go/omnigraph/graph/change"
	"github.com/omnigraph-go/omnigraph/lang/pg"
)

var errSlow = errors.New("load: the line needs the strict parser")

// fastLine is one parsed line; its property values are in its table's
// scratch slots (the parser's own: each parse worker has its scratch).
type fastLine struct {
	t        *bulkTable
	id       string // "" for a new ULID; may alias the line
	from, to []byte
}

// scratch is one parser's scratch for one table: the values of the line
// being parsed, and which properties it gave.
type scratch struct {
	slots []slot
	seen  []bool
}

func newScratch(t *bulkTable) *scratch {
	return &scratch{slots: make([]slot, len(t.props)), seen: make([]bool, len(t.props))}
}

// fastKind is how a property's values go to its builder without Coerce.
type fastKind uint8

const (
	fastNone   fastKind = iota // pg.Property.Coerce, then change.AppendValue
	fastString                 // String without @check
	fastI64                    // I64 without @range
	fastI32                    // I32 without @range
	fastF64                    // F64 without @range
	fastBool
)

func fastKindOf(p *pg.Property, b array.Builder) fastKind {
	if p.Range != nil || p.Check != nil {
		return fastNone
	}
	switch p.Type.Kind {
	case pg.KindString:
		if _, ok := b.(*array.StringBuilder); ok {
			return fastString
		}
	case pg.KindI64:
		if _, ok := b.(*array.Int64Builder); ok {
			return fastI64
		}
	case pg.KindI32:
		if _, ok := b.(*array.Int32Builder); ok {
			return fastI32
		}
	case pg.KindF64:
		if _, ok := b.(*array.Float64Builder); ok {
			return fastF64
		}
	case pg.KindBool:
		if _, ok := b.(*array.BooleanBuilder); ok {
			return fastBool
		}
	}
	return fastNone
}

const (
	tagNull uint8 = iota
	tagBytes
	tagInt
	tagFloat
	tagBool
	tagValue // a canonical value in v
)

// slot is one property value of the line being added.
type slot struct {
	tag uint8
	b   []byte // aliases the line
	i   int64
	f   float64
	t   bool
	v   any
}

func (s *slot) appendTo(b array.Builder) error {
	switch s.tag {
	case tagNull:
		b.AppendNull()
	case tagBytes:
		b.(*array.StringBuilder).BinaryBuilder.Append(s.b)
	case tagInt:
		switch bb := b.(type) {
		case *array.Int64Builder:
			bb.Append(s.i)
		case *array.Int32Builder:
			bb.Append(int32(s.i))
		}
	case tagFloat:
		b.(*array.Float64Builder).Append(s.f)
	case tagBool:
		b.(*array.BooleanBuilder).Append(s.t)
	default:
		return change.AppendValue(b, s.v)
	}
	return nil
}

// canonical is the slot's value as pg.Property.Coerce returns it.
func (s *slot) canonical(k fastKind) any {
	switch s.tag {
	case tagBytes:
		return string(s.b)
	case tagInt:
		if k == fastI32 {
			return int32(s.i)
		}
		return s.i
	case tagFloat:
		return s.f
	case tagBool:
		return s.t
	case tagValue:
		return s.v
	}
	return nil
}

type scan struct {
	s []byte
	i int
}

func (p *scan) ws() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\r', '\n':
			p.i++
		default:
			return
		}
	}
}

func (p *scan) eat(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *scan) lit(w string) bool {
	if len(p.s)-p.i >= len(w) && string(p.s[p.i:p.i+len(w)]) == w {
		p.i += len(w)
		return true
	}
	return false
}

// str reads a string without escapes or control characters, valid UTF-8.
func (p *scan) str() ([]byte, bool) {
	if p.i >= len(p.s) || p.s[p.i] != '"' {
		return nil, false
	}
	start := p.i + 1
	ascii := true
	for j := start; j < len(p.s); j++ {
		c := p.s[j]
		switch {
		case c == '"':
			v := p.s[start:j]
			if !ascii && !utf8.Valid(v) {
				return nil, false
			}
			p.i = j + 1
			return v, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= 0x80:
			ascii = false
		}
	}
	return nil, false
}

// number reads a JSON number; isInt when it has no fraction or exponent.
func (p *scan) number() (num []byte, isInt, ok bool) {
	start := p.i
	p.eat('-')
	digits := func() int {
		n := 0
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.eat('0') {
	} else if digits() == 0 {
		return nil, false, false
	}
	isInt = true
	if p.eat('.') {
		isInt = false
		if digits() == 0 {
			return nil, false, false
		}
	}
	if p.i < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		p.i++
		isInt = false
		if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return nil, false, false
		}
	}
	return p.s[start:p.i], isInt, true
}

// smallInt parses an integer literal of at most 18 digits.
func smallInt(b []byte) (int64, bool) {
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// value reads one property value into sl.
func (p *scan) value(sl *slot, prop *pg.Property, k fastKind) bool {
	if p.i >= len(p.s) || prop.Type.Kind == pg.KindBlob {
		// Blob values take the strict parser: it admits them (blobs.go).
		return false
	}
	var raw any
	switch c := p.s[p.i]; {
	case c == '"':
		s, ok := p.str()
		if !ok {
			return false
		}
		if k == fastString {
			*sl = slot{tag: tagBytes, b: s}
			return true
		}
		raw = string(s)
	case c == 't' || c == 'f':
		b := c == 't'
		if !(b && p.lit("true") || !b && p.lit("false")) {
			return false
		}
		if k == fastBool {
			*sl = slot{tag: tagBool, t: b}
			return true
		}
		raw = b
	case c == 'n':
		if !p.lit("null") || !prop.Nullable {
			return false
		}
		*sl = slot{tag: tagNull}
		return true
	case c == '-' || (c >= '0' && c <= '9'):
		num, isInt, ok := p.number()
		if !ok {
			return false
		}
		switch {
		case (k == fastI64 || k == fastI32) && isInt:
			if n, ok := smallInt(num); ok && (k == fastI64 || n >= -1<<31 && n < 1<<31) {
				*sl = slot{tag: tagInt, i: n}
				return true
			}
		case k == fastF64:
			f, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(num), len(num)), 64)
			if err != nil {
				return false
			}
			*sl = slot{tag: tagFloat, f: f}
			return true
		}
		raw = json.Number(num)
	default:
		return false // objects and arrays: the strict parser
	}
	v, err := prop.Coerce(raw)
	if err != nil {
		return false
	}
	*sl = slot{tag: tagValue, v: v}
	return true
}

// parseFast parses b into its table's scratch (w.scratch), or answers
// errSlow. It only reads the line and the tables' fixed parts (schema,
// properties), so parse workers run it at once.
func (w *parser) parseFast(b []byte) (fastLine, *scratch, error) {
	var fl fastLine
	p := scan{s: b}
	p.ws()
	if !p.eat('{') {
		return fl, nil, errSlow
	}
	var t *bulkTable
	var sc *scratch
	var isNode, isEdge, hasFrom, hasTo, hasData, hasID bool
	var givenID []byte
	for {
		p.ws()
		k, ok := p.str()
		if !ok {
			return fl, nil, errSlow
		}
		p.ws()
		if !p.eat(':') {
			return fl, nil, errSlow
		}
		p.ws()
		switch string(k) {
		case "type", "edge":
			if t != nil {
				return fl, nil, errSlow
			}
			name, ok := p.str()
			if !ok {
				return fl, nil, errSlow
			}
			var err error
			if t, err = w.table(string(k) == "type", name); err != nil || t == nil {
				return fl, nil, errSlowOr(err)
			}
			isNode, isEdge = t.node != nil, t.edge != nil
			sc = w.scratch(t)
			clear(sc.seen)
		case "from", "to":
			dst, has := &fl.from, &hasFrom
			if string(k) == "to" {
				dst, has = &fl.to, &hasTo
			}
			v, ok := p.str()
			if *has || !ok || len(v) == 0 {
				return fl, nil, errSlow
			}
			*dst, *has = v, true
		case "data":
			if hasData || t == nil {
				return fl, nil, errSlow
			}
			hasData = true
			if p.lit("null") {
				break
			}
			if !p.eat('{') {
				return fl, nil, errSlow
			}
			p.ws()
			if p.eat('}') {
				break
			}
			for {
				p.ws()
				name, ok := p.str()
				if !ok {
					return fl, nil, errSlow
				}
				p.ws()
				if !p.eat(':') {
					return fl, nil, errSlow
				}
				p.ws()
				if string(name) == pg.ColID {
					v, ok := p.str()
					if hasID || !ok || len(v) == 0 {
						return fl, nil, errSlow
					}
					givenID, hasID = v, true
				} else {
					j, ok := t.propIx[string(name)]
					if !ok || sc.seen[j] {
						return fl, nil, errSlow
					}
					sc.seen[j] = true
					if !p.value(&sc.slots[j], t.props[j], t.fast[j]) {
						return fl, nil, errSlow
					}
				}
				p.ws()
				if p.eat(',') {
					continue
				}
				if p.eat('}') {
					break
				}
				return fl, nil, errSlow
			}
		default:
			return fl, nil, errSlow
		}
		p.ws()
		if p.eat(',') {
			continue
		}
		if p.eat('}') {
			break
		}
		return fl, nil, errSlow
	}
	p.ws()
	if p.i != len(p.s) || t == nil {
		return fl, nil, errSlow
	}
	if isNode && (hasFrom || hasTo) || isEdge && (!hasFrom || !hasTo) {
		return fl, nil, errSlow
	}
	for j, pr := range t.props {
		if !sc.seen[j] {
			if !pr.Nullable {
				return fl, nil, errSlow
			}
			sc.slots[j] = slot{tag: tagNull}
		}
	}
	fl.t = t
	if hasID {
		fl.id = unsafe.String(unsafe.SliceData(givenID), len(givenID)) // aliases the line
	}
	if isNode && len(t.node.Key) > 0 {
		id, ok := t.keyID(sc.slots)
		if !ok || hasID && fl.id != id {
			return fl, nil, errSlow
		}
		fl.id = id
	}
	return fl, sc, nil
}

func errSlowOr(err error) error {
	if err != nil {
		return err
	}
	return errSlow
}

// typeByName finds the bulk table of a node ("type") or edge type name;
// nil when the schema has no such type. Parse workers call it at once.
func (bl *bulkLoad) typeByName(node bool, name []byte) (*bulkTable, error) {
	bl.mu.Lock()
	defer bl.mu.Unlock()
	m := bl.edgeName
	if node {
		m = bl.nodeName
	}
	if t := m[string(name)]; t != nil {
		return t, nil
	}
	var t *bulkTable
	var err error
	if node {
		n, ok := bl.cat.Node(string(name))
		if !ok {
			return nil, nil
		}
		t, err = bl.tableLocked(n, nil)
	} else {
		e, ok := bl.cat.Edge(string(name))
		if !ok {
			return nil, nil
		}
		t, err = bl.tableLocked(nil, e)
	}
	if err != nil {
		return nil, err
	}
	m[string(name)] = t
	return t, nil
}

// keyID is the id the keyed node's @key gives (pg.NodeType.IDFor) to the
// line whose values are slots. A single String key's id aliases the line.
func (t *bulkTable) keyID(slots []slot) (string, bool) {
	n := t.node
	if len(n.Key) == 1 {
		if j, ok := t.propIx[n.Key[0]]; ok && t.fast[j] == fastString && slots[j].tag == tagBytes {
			b := slots[j].b
			if len(b) == 0 {
				return "", false
			}
			return unsafe.String(unsafe.SliceData(b), len(b)), true
		}
	}
	m := make(map[string]any, len(n.Key))
	for _, k := range n.Key {
		j, ok := t.propIx[k]
		if !ok {
			return "", false
		}
		m[k] = slots[j].canonical(t.fast[j])
	}
	id, err := n.IDFor(m)
	return id, err == nil
}
