package load

// Blob values of a load.
//
// A Blob value arrives as "base64:<payload>" text inside one NDJSON line,
// so a large value would make a line the parser must hold whole (and a
// 64 MiB value is an 85 MiB line, beyond MaxLine). The spool reader below
// sits between the input and the line parser: it follows the JSON of each
// line just enough to know, inside "data", which member is a Blob property
// of the line's type, and streams any such string longer than
// spoolThreshold straight into the table's blob area (table.BlobWriter:
// one piece in memory at a time), replacing it in the line with a
// placeholder reference only this load can resolve. The rest of the
// pipeline sees ordinary short lines. A line streams its Blob values only
// when it names its "type" (or "edge") before its "data", as export
// writes them; otherwise MaxLine applies as to any line.
//
// intake.admit then gives every Blob value of a parsed line its final
// form, in one place for the row and the columnar path: placeholders
// resolve to the stored values, inline values too large for a row are
// stored (table.PrepareBlob), and external references must pass the
// handle's policy (graph.ExternalBlobPolicy.Check).

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/lang/pg"
	"github.com/omnigraph-go/omnigraph/table"
)

// spoolThreshold: a Blob string of more raw bytes than this streams into
// the blob area while the line is read; shorter ones stay in the line.
const spoolThreshold = 256 << 10

// spoolScheme names the placeholders the spool leaves in lines.
const spoolScheme = "omnigraph-spooled://"

// maxSpoolName bounds the member names and type names the spool follows.
const maxSpoolName = 4 << 10

// intake holds the Blob state of one load.
type intake struct {
	ctx    context.Context
	snap   *graph.Snapshot
	cat    *pg.Catalog
	policy graph.ExternalBlobPolicy
	nonce  string
	// spooled are the values the spool stored, by placeholder number.
	spooled []table.Blob
	// spoolErr is what stopped the spool: the line parser, which meets the
	// cut line first, reports this instead (lineError).
	spoolErr error
	// stats count the load's work, for the tests that keep it off the
	// slow paths (TestLoadCosts).
	stats loadStats
}

// loadStats count what a load did with the input's bytes beyond one pass
// of the fast parser.
type loadStats struct {
	// followed bytes went through the spool's byte-at-a-time JSON state
	// machine; copied bytes it passed on in bulk (the rest of a line that
	// can hold no Blob value to stream).
	followed, copied int64
	// unescaped counts member names and type names the spool decoded
	// (they held an escape).
	unescaped int64
	// strictLines (strictBytes) are the columnar path's lines the fast
	// parser left to the strict one: their bytes are read twice.
	strictLines, strictBytes int64
}

// reader is the input as the line parser reads it: through the spool
// when the schema has a Blob property (a Blob-free schema pays nothing
// for Blob support), else r itself.
func (in *intake) reader(r io.Reader) io.Reader {
	if !hasBlob(in.cat) {
		return r
	}
	return newSpool(in, r)
}

// hasBlob reports whether any type of cat has a Blob property.
func hasBlob(cat *pg.Catalog) bool {
	for _, n := range cat.Nodes {
		if blobProps(n.Properties) {
			return true
		}
	}
	for _, e := range cat.Edges {
		if blobProps(e.Properties) {
			return true
		}
	}
	return false
}

func blobProps(props []*pg.Property) bool {
	for _, p := range props {
		if p.Type.Kind == pg.KindBlob {
			return true
		}
	}
	return false
}

// lineError is a parse failure of line n: an *InputError naming it, or
// the failure that stopped the spool there. A refused external Blob
// reference keeps its class (graph.ErrInvalidInput).
func (in *intake) lineError(n int, err error) error {
	if in.spoolErr != nil {
		return readErr(in.spoolErr, n-1)
	}
	if errors.Is(err, graph.ErrInvalidInput) {
		return fmt.Errorf("%s: %w", lineWhere(n), err)
	}
	return &graph.InputError{Where: lineWhere(n), Msg: err.Error()}
}

func newIntake(ctx context.Context, g *graph.Graph, snap *graph.Snapshot, cat *pg.Catalog) *intake {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return &intake{ctx: ctx, snap: snap, cat: cat, policy: g.ExternalBlobs(), nonce: hex.EncodeToString(b[:])}
}

// tablePath is where the table of a node (or edge) type lives.
func (in *intake) tablePath(node *pg.NodeType, edge *pg.EdgeType) (string, bool) {
	key := ""
	if node != nil {
		key = graph.NodeTableKey(node.Name)
	} else {
		key = graph.EdgeTableKey(edge.Name)
	}
	pin, ok := in.snap.Pin(key)
	return pin.Path, ok
}

// parseLine parses one line (parseLoadLine) and admits its Blob values.
func (in *intake) parseLine(b []byte) (loadLine, error) {
	ln, err := parseLoadLine(b, in.cat)
	if err != nil {
		return ln, err
	}
	return ln, in.admit(&ln)
}

// admit gives every Blob value of ln its final form (see the file
// comment); a refused external reference is an error naming the property.
func (in *intake) admit(ln *loadLine) error {
	props := propsOf(ln)
	for _, p := range props {
		if p.Type.Kind != pg.KindBlob {
			continue
		}
		v, ok := ln.props[p.Name].(table.Blob)
		if !ok {
			continue
		}
		if rest, isSpooled := strings.CutPrefix(v.URI, spoolScheme+in.nonce+"/"); isSpooled {
			n, err := strconv.Atoi(rest)
			if err != nil || n < 0 || n >= len(in.spooled) {
				return fmt.Errorf("%s.%s: a Blob placeholder this load did not make", p.Owner, p.Name)
			}
			ln.props[p.Name] = in.spooled[n]
			continue
		}
		if v.External() {
			if err := in.policy.Check(v.URI); err != nil {
				return fmt.Errorf("%s.%s: %w", p.Owner, p.Name, err)
			}
			continue
		}
		path, ok := in.tablePath(ln.node, ln.edge)
		if !ok {
			continue // no table: the write reports the type
		}
		stored, _, err := table.PrepareBlob(in.ctx, in.snap.Graph().Store(), path, v)
		if err != nil {
			return fmt.Errorf("%s.%s: store the Blob value: %w", p.Owner, p.Name, err)
		}
		ln.props[p.Name] = stored
	}
	return nil
}

func propsOf(ln *loadLine) []*pg.Property {
	if ln.node != nil {
		return ln.node.Properties
	}
	if ln.edge != nil {
		return ln.edge.Properties
	}
	return nil
}

// spool is the reader that streams large Blob strings of the input into
// the blob area (see the file comment). It never changes anything but
// such a string, which it replaces with a placeholder string.
type spool struct {
	in   *intake
	src  *bufio.Reader
	out  []byte // output, ready to be read from off
	off  int
	line int // 1-based line being read
	err  error

	// JSON state of the current line.
	stack    []frame
	inString bool
	escape   bool
	str      []byte // the current string's raw bytes (keys, type names, candidates), bounded
	strOver  bool   // the string outgrew str's bound
	strRole  int
	typeName string // the line's "type" or "edge" value
	isEdge   bool
	// skip: the rest of the line can hold no value to stream (its type
	// has no Blob property, or its data came before its type), so it is
	// copied up to the line break without being followed.
	skip bool
	// names are the member and type names seen, each kept once.
	names map[string]string
}

// frame is one open container of the line.
type frame struct {
	object    bool
	expectKey bool   // an object awaiting a member name
	key       string // the member being read (objects)
}

// The roles of a string the spool keeps.
const (
	roleNone = iota
	roleKey
	roleTypeName
	roleCandidate // a Blob property's value
)

func newSpool(in *intake, r io.Reader) *spool {
	return &spool{in: in, src: bufio.NewReaderSize(r, 1<<16), line: 1}
}

func (s *spool) Read(p []byte) (int, error) {
	for len(s.out) == s.off {
		if s.err != nil {
			return 0, s.err
		}
		s.fill()
	}
	n := copy(p, s.out[s.off:])
	s.off += n
	if s.off == len(s.out) {
		s.out, s.off = s.out[:0], 0 // the buffer is reused
	}
	return n, nil
}

// fill reads more input into out (or sets err).
func (s *spool) fill() {
	for len(s.out) < 1<<16 {
		if s.skip {
			s.copyLine()
			if s.err != nil {
				return
			}
			continue
		}
		c, err := s.src.ReadByte()
		if err != nil {
			s.err = err
			return
		}
		s.stats().followed++
		if s.inString {
			if err := s.stringByte(c); err != nil {
				s.err, s.in.spoolErr = err, err
				return
			}
			continue
		}
		s.out = append(s.out, c)
		s.structural(c)
	}
}

func (s *spool) stats() *loadStats { return &s.in.stats }

// copyLine passes on the input up to and including the next line break
// (or what the buffer holds of it) in bulk.
func (s *spool) copyLine() {
	b, err := s.src.ReadSlice('\n')
	s.out = append(s.out, b...)
	s.stats().copied += int64(len(b))
	switch {
	case err == nil:
		s.skip = false
		s.structural('\n')
	case errors.Is(err, bufio.ErrBufferFull):
	default:
		s.err = err
	}
}

// structural follows one byte outside strings.
func (s *spool) structural(c byte) {
	top := func() *frame {
		if len(s.stack) == 0 {
			return nil
		}
		return &s.stack[len(s.stack)-1]
	}
	switch c {
	case '\n':
		s.line++
		s.stack, s.typeName, s.isEdge, s.skip = s.stack[:0], "", false, false
	case '{':
		s.stack = append(s.stack, frame{object: true, expectKey: true})
	case '[':
		s.stack = append(s.stack, frame{})
	case '}', ']':
		if len(s.stack) > 0 {
			s.stack = s.stack[:len(s.stack)-1]
		}
	case ',':
		if f := top(); f != nil && f.object {
			f.expectKey = true
		}
	case ':':
		if f := top(); f != nil && f.object {
			f.expectKey = false
			// data before the type: nothing of the line streams.
			s.skip = len(s.stack) == 1 && f.key == "data" && s.typeName == ""
		}
	case '"':
		s.inString, s.escape = true, false
		s.str, s.strOver = s.str[:0], false
		s.strRole = roleNone
		f := top()
		switch {
		case f == nil:
		case f.object && f.expectKey:
			s.strRole = roleKey
		case f.object && len(s.stack) == 1 && (f.key == "type" || f.key == "edge"):
			s.strRole = roleTypeName
		case f.object && len(s.stack) == 2 && s.stack[0].key == "data" && s.isBlobProp(f.key):
			// The quote is held back: a long value is replaced whole.
			s.out = s.out[:len(s.out)-1]
			s.strRole = roleCandidate
		}
	}
}

// isBlobProp reports whether name is a Blob property of the line's type.
func (s *spool) isBlobProp(name string) bool {
	if s.typeName == "" {
		return false
	}
	var props []*pg.Property
	if s.isEdge {
		e, ok := s.in.cat.Edge(s.typeName)
		if !ok {
			return false
		}
		props = e.Properties
	} else {
		n, ok := s.in.cat.Node(s.typeName)
		if !ok {
			return false
		}
		props = n.Properties
	}
	for _, p := range props {
		if p.Name == name {
			return p.Type.Kind == pg.KindBlob
		}
	}
	return false
}

// stringByte takes one byte inside a string.
func (s *spool) stringByte(c byte) error {
	end := !s.escape && c == '"'
	switch {
	case s.escape:
		s.escape = false
	case c == '\\':
		s.escape = true
	}
	if s.strRole == roleCandidate {
		if end {
			s.inString = false
			s.out = append(s.out, '"')
			s.out = append(s.out, s.str...)
			s.out = append(s.out, '"')
			return nil
		}
		s.str = append(s.str, c)
		if len(s.str) > spoolThreshold {
			return s.spoolValue()
		}
		return nil
	}
	s.out = append(s.out, c)
	if end {
		s.inString = false
		s.endString()
		return nil
	}
	if s.strRole != roleNone {
		if len(s.str) < maxSpoolName {
			s.str = append(s.str, c)
		} else {
			s.strOver = true
		}
	}
	return nil
}

// endString records a finished key or type name. Only a name that holds
// an escape is decoded; the names the spool compares against are kept
// without allocating (internName).
func (s *spool) endString() {
	if s.strRole == roleNone || s.strOver || len(s.stack) == 0 {
		return
	}
	v, ok := s.decodeName()
	if !ok {
		return
	}
	f := &s.stack[len(s.stack)-1]
	switch s.strRole {
	case roleKey:
		f.key = v
	case roleTypeName:
		s.typeName, s.isEdge = v, f.key == "edge"
		// A type with no Blob property (or none of that name) has nothing
		// to stream: the rest of its line is copied.
		s.skip = !s.typeHasBlob()
	}
}

// decodeName is the finished string as text (false: not valid JSON
// string text).
func (s *spool) decodeName() (string, bool) {
	if bytes.IndexByte(s.str, '\\') < 0 {
		return s.internName(s.str), true
	}
	s.stats().unescaped++
	var v string // on the heap (json.Unmarshal): only names with escapes
	err := json.Unmarshal(append(append([]byte{'"'}, s.str...), '"'), &v)
	return v, err == nil
}

// maxNames bounds the names a spool keeps (internName).
const maxNames = 1024

// internName is b as a string, without an allocation for the member and
// type names lines repeat.
func (s *spool) internName(b []byte) string {
	if v, ok := s.names[string(b)]; ok {
		return v
	}
	v := string(b)
	if len(s.names) < maxNames {
		if s.names == nil {
			s.names = map[string]string{}
		}
		s.names[v] = v
	}
	return v
}

// typeHasBlob reports whether the line's type has a Blob property.
func (s *spool) typeHasBlob() bool {
	if s.isEdge {
		e, ok := s.in.cat.Edge(s.typeName)
		return ok && blobProps(e.Properties)
	}
	n, ok := s.in.cat.Node(s.typeName)
	return ok && blobProps(n.Properties)
}

// spoolValue streams the rest of a long candidate string (its first raw
// bytes are in s.str) into the blob area and emits a placeholder. A
// value that is not "base64:..." text is let through unchanged: the
// parser reports it (or the line limit does).
func (s *spool) spoolValue() error {
	dec := &jsonUnescaper{}
	head, err := dec.write(nil, s.str)
	if err != nil || !strings.HasPrefix(string(head), "base64:") {
		return s.passThrough()
	}
	path, ok := s.pathOf()
	if !ok {
		return s.passThrough()
	}
	w := table.NewBlobWriter(s.in.ctx, s.in.snap.Graph().Store(), path)
	b64 := &base64Stream{w: w}
	fail := func(msg string) error {
		w.Abort()
		return graph.InputErrorf(lineWhere(s.line), "data: the Blob value %s; write it as \"base64:<payload>\"", msg)
	}
	if err := b64.write(head[len("base64:"):]); err != nil {
		return fail(err.Error())
	}
	// Read to the closing quote, unescaping and decoding as we go. esc:
	// the next byte is escaped (stringByte tracked it up to here).
	esc := s.escape
	raw := make([]byte, 0, 1<<16)
	for {
		c, err := s.src.ReadByte()
		if err != nil {
			w.Abort()
			if errors.Is(err, io.EOF) {
				return graph.InputErrorf(lineWhere(s.line), "the input ends inside a string")
			}
			return err
		}
		if esc {
			esc = false
		} else if c == '\\' {
			esc = true
		} else if c == '"' {
			break
		}
		if c == '\n' {
			w.Abort()
			return graph.InputErrorf(lineWhere(s.line), "a line break inside a string; a JSON string cannot hold one")
		}
		raw = append(raw, c)
		if len(raw) == cap(raw) {
			out, err := dec.write(nil, raw)
			if err != nil {
				return fail(err.Error())
			}
			if err := b64.write(out); err != nil {
				return fail(err.Error())
			}
			raw = raw[:0]
		}
	}
	out, err := dec.write(nil, raw)
	if err == nil && dec.pending() {
		err = errors.New("ends inside an escape")
	}
	if err != nil {
		return fail(err.Error())
	}
	if err := b64.write(out); err != nil {
		return fail(err.Error())
	}
	if err := b64.close(); err != nil {
		return fail(err.Error())
	}
	v, err := w.Close()
	if err != nil {
		return fmt.Errorf("line %d: store a Blob value: %w", s.line, err)
	}
	n := len(s.in.spooled)
	s.in.spooled = append(s.in.spooled, v)
	s.out = append(s.out, strconv.Quote(fmt.Sprintf("%s%s/%d", spoolScheme, s.in.nonce, n))...)
	s.inString = false
	s.str = s.str[:0]
	return nil
}

// passThrough gives up on a candidate: its raw bytes so far are emitted
// and the string continues as an ordinary one.
func (s *spool) passThrough() error {
	s.out = append(s.out, '"')
	s.out = append(s.out, s.str...)
	s.strRole = roleNone
	s.str = s.str[:0]
	// The escape state is already right: stringByte tracked it.
	return nil
}

func (s *spool) pathOf() (string, bool) {
	if s.isEdge {
		e, ok := s.in.cat.Edge(s.typeName)
		if !ok {
			return "", false
		}
		return s.in.tablePath(nil, e)
	}
	n, ok := s.in.cat.Node(s.typeName)
	if !ok {
		return "", false
	}
	return s.in.tablePath(n, nil)
}

// jsonUnescaper decodes the escapes of JSON string bytes given in pieces.
type jsonUnescaper struct {
	esc []byte // an escape sequence split across pieces
}

func (d *jsonUnescaper) pending() bool { return len(d.esc) > 0 }

// write appends the decoded form of raw to dst.
func (d *jsonUnescaper) write(dst, raw []byte) ([]byte, error) {
	if len(d.esc) > 0 {
		raw = append(d.esc, raw...)
		d.esc = nil
	}
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' {
			if c < 0x20 {
				return nil, errors.New("holds a control character")
			}
			dst = append(dst, c)
			continue
		}
		if i+1 >= len(raw) {
			d.esc = append([]byte{}, raw[i:]...)
			break
		}
		switch e := raw[i+1]; e {
		case '"', '\\', '/':
			dst = append(dst, e)
			i++
		case 'b', 'f', 'n', 'r', 't':
			return nil, errors.New("holds a control character")
		case 'u':
			if i+6 > len(raw) {
				d.esc = append([]byte{}, raw[i:]...)
				i = len(raw)
				continue
			}
			r, err := strconv.ParseUint(string(raw[i+2:i+6]), 16, 16)
			if err != nil {
				return nil, errors.New("holds a bad \\u escape")
			}
			dst = utf8.AppendRune(dst, rune(r))
			i += 5
		default:
			return nil, errors.New("holds a bad escape")
		}
	}
	return dst, nil
}

// base64Stream decodes base64 text given in pieces into w (padded or
// not, as coerceBlob accepts).
type base64Stream struct {
	w    io.Writer
	buf  []byte
	done bool // padding seen: nothing may follow
}

func (b *base64Stream) write(p []byte) error {
	if len(p) == 0 {
		return nil
	}
	if b.done {
		return errors.New("is not base64 (text after the padding)")
	}
	b.buf = append(b.buf, p...)
	n := len(b.buf) / 4 * 4
	if n == len(b.buf) && n > 0 && b.buf[n-1] == '=' {
		// The last quad may be the padded end: keep it for close.
		n -= 4
	}
	if n <= 0 {
		return nil
	}
	if bytes.IndexByte(b.buf[:n], '=') >= 0 {
		// Padding ends the value; here more text follows it.
		return errors.New("is not base64 (text after the padding)")
	}
	out := make([]byte, base64.StdEncoding.DecodedLen(n))
	k, err := base64.StdEncoding.Decode(out, b.buf[:n])
	if err != nil {
		return errors.New("is not base64")
	}
	if _, err := b.w.Write(out[:k]); err != nil {
		return err
	}
	b.buf = append(b.buf[:0], b.buf[n:]...)
	return nil
}

func (b *base64Stream) close() error {
	if len(b.buf) == 0 {
		return nil
	}
	enc := base64.StdEncoding
	if len(b.buf)%4 != 0 {
		enc = base64.RawStdEncoding
	}
	out, err := enc.DecodeString(string(b.buf))
	if err != nil {
		return errors.New("is not base64")
	}
	b.done = true
	_, err = b.w.Write(out)
	return err
}
