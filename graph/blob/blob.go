// Package blob reads Blob property values: the bytes a query cannot return
// (rule T24). A value is selected by entity kind, type, id and property at
// one snapshot (a branch head or a past commit), so old snapshots read the
// bytes they held for as long as cleanup retains them.
//
// Open resolves the selector with descriptor work only (one key lookup of
// the row); Cell.Read then streams any byte range, a piece (at most
// table.BlobPieceSize) at a time, so memory does not grow with the value.
// An external reference has no bytes here: its readers fetch the URI
// themselves (the server redirects, the CLI reports it).
package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/lang/pg"
	"github.com/omnigraph-go/omnigraph/table"
)

// Entity kinds of a selector.
const (
	Node = "node"
	Edge = "edge"
)

// Errors, classified with errors.Is.
var (
	// ErrNotFound: no such entity at the snapshot, or its value is null.
	ErrNotFound = errors.New("blob not found")
	// ErrExternal: the value is an external reference, which has no bytes
	// in the graph.
	ErrExternal = errors.New("the Blob value is an external reference")
	// ErrIntegrity: the stored bytes are missing or do not match their
	// digest (table.ErrCorrupt).
	ErrIntegrity = errors.New("the Blob value's stored bytes are damaged or missing")
)

// RangeError is a byte range outside the value (HTTP 416).
type RangeError struct {
	Start, End, Length int64
}

func (e *RangeError) Error() string {
	return fmt.Sprintf("bytes %d..%d are outside the %d-byte value; ask for a range inside it", e.Start, e.End, e.Length)
}

// Is makes errors.Is(err, table.ErrBlobRange) hold.
func (e *RangeError) Is(target error) bool { return target == table.ErrBlobRange }

// Selector names one Blob cell.
type Selector struct {
	Entity   string `json:"entity"` // Node or Edge
	Type     string `json:"type"`
	ID       string `json:"id"`
	Property string `json:"property"`
}

// Cell is one resolved, non-null Blob value at one snapshot.
type Cell struct {
	Selector
	Value table.Blob
	snap  *graph.Snapshot
}

// Info describes a cell: what 'blob stat' prints and the server's headers
// carry. Size, SHA256 and ETag are set for managed values, URI for
// external ones.
type Info struct {
	Selector
	Kind   string `json:"kind"` // "managed" or "external"
	Size   *int64 `json:"size,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	ETag   string `json:"etag,omitempty"`
	URI    string `json:"uri,omitempty"`
	// Branch and Snapshot say what was read: the branch of the snapshot and
	// the graph commit it shows.
	Branch   string `json:"branch"`
	Snapshot string `json:"snapshot"`
}

// Open resolves sel at snap. Bad selectors (unknown entity kind, type or
// property, a property that is not a Blob, an empty id) are
// graph.ErrInvalidInput; a missing entity or a null value is ErrNotFound.
// It reads the row by its key (the table's key index), nothing else.
func Open(ctx context.Context, snap *graph.Snapshot, sel Selector) (*Cell, error) {
	c, err := open(ctx, snap, sel)
	return c, snap.Explain(ctx, err)
}

func open(ctx context.Context, snap *graph.Snapshot, sel Selector) (*Cell, error) {
	cat, err := snap.Catalog(ctx)
	if err != nil {
		return nil, err
	}
	key, props, err := resolve(cat, &sel)
	if err != nil {
		return nil, err
	}
	var prop *pg.Property
	for _, p := range props {
		if p.Name == sel.Property {
			prop = p
		}
	}
	switch {
	case prop == nil:
		return nil, fmt.Errorf("%w: %s %s has no property %q; its Blob properties are %s", graph.ErrInvalidInput, sel.Entity, sel.Type, sel.Property, blobProps(props))
	case prop.Type.Kind != pg.KindBlob:
		return nil, fmt.Errorf("%w: %s.%s is %s, not a Blob; read it with a query", graph.ErrInvalidInput, sel.Type, sel.Property, prop.Type)
	case sel.ID == "":
		return nil, fmt.Errorf("%w: give the id of the %s", graph.ErrInvalidInput, sel.Entity)
	}
	if _, ok := snap.Pin(key); !ok {
		return nil, fmt.Errorf("%w: %s %s %q does not exist at this snapshot", ErrNotFound, sel.Entity, sel.Type, sel.ID)
	}
	ds, err := snap.OpenTable(ctx, key)
	if err != nil {
		return nil, err
	}
	rec, err := ds.Lookup(ctx, sel.ID)
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	ids := rec.Column(rec.Schema().FieldIndices(pg.ColID)[0]).(*array.String)
	ci := rec.Schema().FieldIndices(sel.Property)
	for i := 0; i < ids.Len(); i++ {
		if ids.Value(i) != sel.ID {
			continue
		}
		col, ok := rec.Column(ci[0]).(*array.Struct)
		if len(ci) != 1 || !ok || !table.IsBlobType(col.DataType()) {
			return nil, fmt.Errorf("%w: column %s of %s is not a Blob column", ErrIntegrity, sel.Property, sel.Type)
		}
		v, ok := table.BlobAt(col, i)
		if !ok {
			return nil, fmt.Errorf("%w: %s.%s of %q is null at this snapshot", ErrNotFound, sel.Type, sel.Property, sel.ID)
		}
		return &Cell{Selector: sel, Value: v, snap: snap}, nil
	}
	return nil, fmt.Errorf("%w: %s %s %q does not exist at this snapshot", ErrNotFound, sel.Entity, sel.Type, sel.ID)
}

// resolve checks the entity kind and type and returns the table key and
// the type's properties; sel.Type becomes the schema's spelling.
func resolve(cat *pg.Catalog, sel *Selector) (string, []*pg.Property, error) {
	switch sel.Entity {
	case Node:
		n, ok := cat.Node(sel.Type)
		if !ok {
			return "", nil, fmt.Errorf("%w: unknown node type %q; the schema's node types are %s", graph.ErrInvalidInput, sel.Type, nodeNames(cat))
		}
		sel.Type = n.Name
		return graph.NodeTableKey(n.Name), n.Properties, nil
	case Edge:
		e, ok := cat.Edge(sel.Type)
		if !ok {
			return "", nil, fmt.Errorf("%w: unknown edge type %q; the schema's edge types are %s", graph.ErrInvalidInput, sel.Type, edgeNames(cat))
		}
		sel.Type = e.Name
		return graph.EdgeTableKey(e.Name), e.Properties, nil
	}
	return "", nil, fmt.Errorf("%w: the entity kind is %q; give node or edge", graph.ErrInvalidInput, sel.Entity)
}

func nodeNames(cat *pg.Catalog) string {
	var out []string
	for _, n := range cat.Nodes {
		out = append(out, n.Name)
	}
	return orNone(out)
}

func edgeNames(cat *pg.Catalog) string {
	var out []string
	for _, e := range cat.Edges {
		out = append(out, e.Name)
	}
	return orNone(out)
}

func blobProps(props []*pg.Property) string {
	var out []string
	for _, p := range props {
		if p.Type.Kind == pg.KindBlob {
			out = append(out, p.Name)
		}
	}
	return orNone(out)
}

func orNone(xs []string) string {
	if len(xs) == 0 {
		return "(none)"
	}
	return strings.Join(xs, ", ")
}

// Info describes the cell.
func (c *Cell) Info() Info {
	out := Info{Selector: c.Selector, Branch: c.snap.Branch(), Snapshot: c.snap.CommitID()}
	if c.Value.External() {
		out.Kind, out.URI = "external", c.Value.URI
		return out
	}
	n := c.Value.Size
	out.Kind, out.Size, out.SHA256, out.ETag = "managed", &n, c.Value.SHA256, c.Value.ETag()
	return out
}

// Snapshot is the snapshot the cell was read at.
func (c *Cell) Snapshot() *graph.Snapshot { return c.snap }

// Range checks a byte range of the cell: offset and length as given
// (length < 0: to the end). It returns the range to read, or a
// *RangeError when offset lies beyond the value (a length past the end is
// cut at the end, as HTTP ranges are).
func (c *Cell) Range(offset, length int64) (int64, int64, error) {
	if c.Value.External() {
		return 0, 0, c.external()
	}
	size := c.Value.Size
	if offset < 0 || offset > size || offset == size && size > 0 && length != 0 {
		// The end saturates: offset+length may be past 64 bits.
		end := offset + max(length, 1)
		if end < offset {
			end = math.MaxInt64
		}
		return 0, 0, &RangeError{Start: offset, End: end, Length: size}
	}
	if length < 0 || length > size-offset {
		length = size - offset
	}
	return offset, length, nil
}

// Read writes length bytes from offset to w (Range first). A stored value
// is read a piece at a time. A failure after bytes were written cannot
// take them back: the caller reports it (the CLI exits non-zero, the
// server cuts the response).
func (c *Cell) Read(ctx context.Context, w io.Writer, offset, length int64) error {
	if c.Value.External() {
		return c.external()
	}
	err := table.ReadBlob(ctx, c.snap.Graph().Store(), c.Value, offset, length, w)
	switch {
	case errors.Is(err, table.ErrCorrupt):
		return fmt.Errorf("%w: %v", ErrIntegrity, err)
	case errors.Is(err, table.ErrBlobRange):
		return &RangeError{Start: offset, End: offset + length, Length: c.Value.Size}
	}
	return err
}

func (c *Cell) external() error {
	return fmt.Errorf("%w: %s.%s of %q refers to %s; fetch it from there ('blob stat' shows the reference)", ErrExternal, c.Type, c.Property, c.ID, c.Value.URI)
}
