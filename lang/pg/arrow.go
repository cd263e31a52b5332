package pg

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/omnigraph-go/omnigraph/table"
)

// Physical column names every table has besides its properties.
const (
	ColID  = "id"  // node and edge id, utf8, never null
	ColSrc = "src" // edge source node id, utf8, never null
	ColDst = "dst" // edge destination node id, utf8, never null
)

// ArrowType returns the Arrow column type of t:
// String and enum→utf8, Bool→bool, I32→int32, I64→int64, U32→uint32,
// U64→uint64, F32→float32, F64→float64, Date→date32,
// DateTime→timestamp[us, UTC], Vector(N)→fixed_size_list<float32>[N],
// Blob→table.BlobType (a struct: size, sha256, inline data, the blob
// area ref, an external uri), [T]→list<T>. List elements are never null in practice but
// the element field is declared nullable, as arrow.ListOf does.
func (t Type) ArrowType() arrow.DataType {
	switch t.Kind {
	case KindString, KindEnum:
		return arrow.BinaryTypes.String
	case KindBool:
		return arrow.FixedWidthTypes.Boolean
	case KindI32:
		return arrow.PrimitiveTypes.Int32
	case KindI64:
		return arrow.PrimitiveTypes.Int64
	case KindU32:
		return arrow.PrimitiveTypes.Uint32
	case KindU64:
		return arrow.PrimitiveTypes.Uint64
	case KindF32:
		return arrow.PrimitiveTypes.Float32
	case KindF64:
		return arrow.PrimitiveTypes.Float64
	case KindDate:
		return arrow.FixedWidthTypes.Date32
	case KindDateTime:
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	case KindVector:
		return arrow.FixedSizeListOf(int32(t.Dim), arrow.PrimitiveTypes.Float32)
	case KindBlob:
		return table.BlobType()
	case KindList:
		return arrow.ListOf(t.Elem.ArrowType())
	}
	return arrow.Null
}

// ArrowField returns the column of the property: its name, Arrow type and
// nullability.
func (p *Property) ArrowField() arrow.Field {
	return arrow.Field{Name: p.Name, Type: p.Type.ArrowType(), Nullable: p.Nullable}
}

// ArrowSchema returns the node table's schema: "id" (utf8, not null), then
// one column per property in Properties order.
func (n *NodeType) ArrowSchema() *arrow.Schema {
	fields := make([]arrow.Field, 0, 1+len(n.Properties))
	fields = append(fields, arrow.Field{Name: ColID, Type: arrow.BinaryTypes.String})
	for _, p := range n.Properties {
		fields = append(fields, p.ArrowField())
	}
	return arrow.NewSchema(fields, nil)
}

// ArrowSchema returns the edge table's schema: "id", "src", "dst" (utf8, not
// null), then one column per property in Properties order.
func (e *EdgeType) ArrowSchema() *arrow.Schema {
	fields := make([]arrow.Field, 0, 3+len(e.Properties))
	fields = append(fields,
		arrow.Field{Name: ColID, Type: arrow.BinaryTypes.String},
		arrow.Field{Name: ColSrc, Type: arrow.BinaryTypes.String},
		arrow.Field{Name: ColDst, Type: arrow.BinaryTypes.String},
	)
	for _, p := range e.Properties {
		fields = append(fields, p.ArrowField())
	}
	return arrow.NewSchema(fields, nil)
}
