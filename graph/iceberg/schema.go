package iceberg

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	ice "github.com/apache/iceberg-go"
)

// icebergType maps one Arrow column type of a graph table to its Iceberg
// type. nextID mints field ids for nested fields (a list's element); old,
// when non-nil, is the field's previous type, whose nested ids are kept.
//
// Iceberg has no unsigned integers: U32 and U64 read as long (a U64 above
// 2^63-1 does not fit; docs/iceberg.md says so). A Vector(N) is stored as
// a Parquet list (table/vectors.go), so it reads as list<float>. A Blob
// reads as struct<size long, sha256 string, data binary, ref string, uri
// string> (table.BlobType): readers see every value's length and digest,
// the bytes of inline values (up to table.BlobInlineMax), where a larger
// value's bytes are stored (ref, read them through the blob API) and an
// external value's URI.
func icebergType(t arrow.DataType, nullableElem bool, old ice.Type, nextID func() int) (ice.Type, error) {
	switch t.ID() {
	case arrow.STRING, arrow.LARGE_STRING:
		return ice.PrimitiveTypes.String, nil
	case arrow.BOOL:
		return ice.PrimitiveTypes.Bool, nil
	case arrow.INT8, arrow.INT16, arrow.INT32:
		return ice.PrimitiveTypes.Int32, nil
	case arrow.INT64, arrow.UINT32, arrow.UINT64:
		return ice.PrimitiveTypes.Int64, nil
	case arrow.FLOAT32:
		return ice.PrimitiveTypes.Float32, nil
	case arrow.FLOAT64:
		return ice.PrimitiveTypes.Float64, nil
	case arrow.DATE32:
		return ice.PrimitiveTypes.Date, nil
	case arrow.TIMESTAMP:
		ts := t.(*arrow.TimestampType)
		if ts.Unit != arrow.Microsecond {
			return nil, fmt.Errorf("timestamp unit %s has no Iceberg type", ts.Unit)
		}
		if ts.TimeZone == "" {
			return ice.PrimitiveTypes.Timestamp, nil
		}
		return ice.PrimitiveTypes.TimestampTz, nil
	case arrow.BINARY, arrow.LARGE_BINARY:
		return ice.PrimitiveTypes.Binary, nil
	case arrow.LIST, arrow.FIXED_SIZE_LIST, arrow.LARGE_LIST:
		elem := t.(arrow.ListLikeType).ElemField()
		var oldElem ice.Type
		id := 0
		if ol, ok := old.(*ice.ListType); ok {
			oldElem, id = ol.Element, ol.ElementID
		}
		et, err := icebergType(elem.Type, elem.Nullable, oldElem, nextID)
		if err != nil {
			return nil, err
		}
		if id == 0 || oldElem == nil || !oldElem.Equals(et) {
			id = nextID()
		}
		return &ice.ListType{ElementID: id, Element: et, ElementRequired: !elem.Nullable}, nil
	case arrow.STRUCT:
		// A Blob column (table.BlobType): its fields, each keeping its old
		// id by name.
		var oldFields []ice.NestedField
		if os, ok := old.(*ice.StructType); ok {
			oldFields = os.FieldList
		}
		var fields []ice.NestedField
		for _, f := range t.(*arrow.StructType).Fields() {
			var of *ice.NestedField
			for i := range oldFields {
				if oldFields[i].Name == f.Name {
					of = &oldFields[i]
				}
			}
			var ot ice.Type
			if of != nil {
				ot = of.Type
			}
			ft, err := icebergType(f.Type, f.Nullable, ot, nextID)
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", f.Name, err)
			}
			id := 0
			if of != nil && promotable(of.Type, ft) {
				id = of.ID
			} else {
				id = nextID()
			}
			fields = append(fields, ice.NestedField{ID: id, Name: f.Name, Type: ft, Required: !f.Nullable})
		}
		return &ice.StructType{FieldList: fields}, nil
	}
	return nil, fmt.Errorf("column type %s has no Iceberg type", t)
}

// promotable reports an Iceberg type promotion that keeps a field id.
func promotable(from, to ice.Type) bool {
	if from.Equals(to) {
		return true
	}
	switch {
	case from.Equals(ice.PrimitiveTypes.Int32) && to.Equals(ice.PrimitiveTypes.Int64):
		return true
	case from.Equals(ice.PrimitiveTypes.Float32) && to.Equals(ice.PrimitiveTypes.Float64):
		return true
	}
	return false
}

// evolve returns the Iceberg fields of an Arrow table schema, reusing the
// field ids of prev (the table's current Iceberg schema, nil for the
// first): a column keeps the id of the previous field of the same name,
// or of the field it was renamed from (renamed maps a new column name to
// its old name, from the schema's @rename_from), when the type is the same
// or a promotion; any other column gets a fresh id past lastID. It returns
// the fields and the new last column id.
func evolve(s *arrow.Schema, prev *ice.Schema, lastID int, renamed map[string]string) ([]ice.NestedField, int, error) {
	next := func() int { lastID++; return lastID }
	names := map[string]bool{}
	for _, f := range s.Fields() {
		names[f.Name] = true
	}
	fields := make([]ice.NestedField, 0, s.NumFields())
	used := map[int]bool{}
	for _, f := range s.Fields() {
		var old *ice.NestedField
		if prev != nil {
			if o, ok := prev.FindFieldByName(f.Name); ok {
				old = &o
			} else if from := renamed[f.Name]; from != "" && !names[from] {
				if o, ok := prev.FindFieldByName(from); ok {
					old = &o
				}
			}
		}
		if old != nil && used[old.ID] {
			old = nil
		}
		var t ice.Type
		var err error
		id := 0
		if old != nil {
			if t, err = icebergType(f.Type, f.Nullable, old.Type, next); err == nil && promotable(old.Type, t) {
				id = old.ID
			}
		}
		if id == 0 {
			if t, err = icebergType(f.Type, f.Nullable, nil, next); err != nil {
				return nil, 0, fmt.Errorf("column %q: %w", f.Name, err)
			}
			id = next()
		}
		used[id] = true
		fields = append(fields, ice.NestedField{ID: id, Name: f.Name, Type: t, Required: !f.Nullable})
	}
	return fields, lastID, nil
}

// sameFields reports whether two field lists are equal (ids, names, types,
// requiredness), so a schema can be reused instead of added again.
func sameFields(a, b []ice.NestedField) bool {
	return slices.EqualFunc(a, b, func(x, y ice.NestedField) bool {
		return x.ID == y.ID && x.Name == y.Name && x.Required == y.Required && x.Type.Equals(y.Type)
	})
}

// arrowNames lists the column names of s, in order.
func arrowNames(s *arrow.Schema) []string {
	out := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		out[i] = f.Name
	}
	return out
}

// nameMapping builds schema.name-mapping.default: every field of the
// current schema by its current name and by every older name any schema
// gave its id (so a Parquet file written before a rename resolves), unless
// a current field holds that name. The table's Parquet files carry no
// field ids, so readers resolve every column through this mapping. A
// list's element resolves by the names Parquet writers give it.
func nameMapping(current *ice.Schema, all []*ice.Schema) (string, error) {
	aliases := map[int][]string{}
	taken := map[string]bool{}
	for _, f := range current.Fields() {
		taken[f.Name] = true
	}
	for _, s := range all {
		for _, f := range s.Fields() {
			if !taken[f.Name] && !slices.Contains(aliases[f.ID], f.Name) {
				aliases[f.ID] = append(aliases[f.ID], f.Name)
			}
		}
	}
	var out ice.NameMapping
	for _, f := range current.Fields() {
		id := f.ID
		m := ice.MappedField{FieldID: &id, Names: append([]string{f.Name}, aliases[f.ID]...), Fields: nestedMapping(f.Type)}
		out = append(out, m)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// nestedMapping maps the nested fields of t: a list's element by the names
// Parquet writers give it, a struct's fields (a Blob column) by name.
func nestedMapping(t ice.Type) []ice.MappedField {
	switch x := t.(type) {
	case *ice.ListType:
		eid := x.ElementID
		return []ice.MappedField{{FieldID: &eid, Names: []string{"element", "item"}, Fields: nestedMapping(x.Element)}}
	case *ice.StructType:
		var out []ice.MappedField
		for _, f := range x.FieldList {
			id := f.ID
			out = append(out, ice.MappedField{FieldID: &id, Names: []string{f.Name}, Fields: nestedMapping(f.Type)})
		}
		return out
	}
	return nil
}
