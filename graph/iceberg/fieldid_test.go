package iceberg_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	ice "github.com/apache/iceberg-go"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	pqschema "github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/omnigraph-go/omnigraph/graph/schema"
)

// mappedField is one node of schema.name-mapping.default.
func findMapped(fields []ice.MappedField, name string) *ice.MappedField {
	for i := range fields {
		for _, n := range fields[i].Names {
			if n == name {
				return &fields[i]
			}
		}
	}
	return nil
}

// physicalOK lists the Parquet physical types a reader accepts for an
// Iceberg primitive (Java Iceberg's Parquet readers: int columns widen to
// long, float to double).
func physicalOK(t ice.Type, p parquet.Type) bool {
	switch t.(type) {
	case ice.StringType, ice.BinaryType:
		return p == parquet.Types.ByteArray
	case ice.BooleanType:
		return p == parquet.Types.Boolean
	case ice.Int32Type, ice.DateType:
		return p == parquet.Types.Int32
	case ice.Int64Type, ice.TimestampType, ice.TimestampTzType:
		return p == parquet.Types.Int64 || p == parquet.Types.Int32
	case ice.Float32Type:
		return p == parquet.Types.Float
	case ice.Float64Type:
		return p == parquet.Types.Double || p == parquet.Types.Float
	}
	return false
}

// resolveColumns resolves every leaf column of a Parquet file's footer to
// the table's field ids the way Java Iceberg does: by the field ids in
// the Parquet schema when the file has any (then every column must), else
// through schema.name-mapping.default (a 3-level list's element by the
// mapping of its element, a struct's fields by theirs). It returns the
// field id of each leaf path.
func resolveColumns(t *testing.T, path string, sc *ice.Schema, nm ice.NameMapping) map[string]int {
	t.Helper()
	f, err := os.Open(strings.TrimPrefix(path, "file://"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pr, err := file.NewParquetReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	root := pr.MetaData().Schema.Root()
	withIDs, without := 0, 0
	var count func(n pqschema.Node)
	count = func(n pqschema.Node) {
		if n.FieldID() >= 0 {
			withIDs++
		} else {
			without++
		}
		if g, ok := n.(*pqschema.GroupNode); ok {
			for i := 0; i < g.NumFields(); i++ {
				count(g.Field(i))
			}
		}
	}
	for i := 0; i < root.NumFields(); i++ {
		count(root.Field(i))
	}
	if withIDs > 0 && without > 0 {
		t.Fatalf("%s: %d columns carry field ids and %d do not: a reader would drop the latter", path, withIDs, without)
	}
	out := map[string]int{}
	var walk func(n pqschema.Node, mapped []ice.MappedField, prefix string)
	walk = func(n pqschema.Node, mapped []ice.MappedField, prefix string) {
		id := n.FieldID()
		var m *ice.MappedField
		if withIDs == 0 {
			if m = findMapped(mapped, n.Name()); m == nil || m.FieldID == nil {
				t.Fatalf("%s: column %s%s resolves to no field id through the name mapping", path, prefix, n.Name())
			}
			id = int32(*m.FieldID)
		}
		field, ok := sc.FindFieldByID(int(id))
		if !ok {
			t.Fatalf("%s: column %s%s resolves to field id %d, which the schema does not have", path, prefix, n.Name(), id)
		}
		g, isGroup := n.(*pqschema.GroupNode)
		if !isGroup {
			if p := n.(*pqschema.PrimitiveNode).PhysicalType(); !physicalOK(field.Type, p) {
				t.Fatalf("%s: column %s%s (%s) resolves to field %d of type %s", path, prefix, n.Name(), p, id, field.Type)
			}
			out[prefix+n.Name()] = int(id)
			return
		}
		var sub []ice.MappedField
		if m != nil {
			sub = m.Fields
		}
		if _, isList := field.Type.(*ice.ListType); isList {
			// name (LIST) { repeated group list { element } }: the element
			// is the list's element field.
			rep := g.Field(0).(*pqschema.GroupNode)
			walk(rep.Field(0), sub, prefix+n.Name()+"."+rep.Name()+".")
			return
		}
		for i := 0; i < g.NumFields(); i++ {
			walk(g.Field(i), sub, prefix+n.Name()+".")
		}
	}
	for i := 0; i < root.NumFields(); i++ {
		walk(root.Field(i), nm, "")
	}
	return out
}

// TestParquetColumnsResolveByFieldID reads the footer of every data and
// position-delete file every retained snapshot names, across a schema
// apply that renames a column and adds one: each file's columns resolve to
// the table's field ids as Java Iceberg resolves them (the delete files by
// their reserved field ids, the data files, which carry none, through
// schema.name-mapping.default), to a field of a matching type; and a
// renamed column resolves to the same id in files written before and after
// the rename.
func TestParquetColumnsResolveByFieldID(t *testing.T) {
	ctx := context.Background()
	r := newLocalRig(t)
	r.init(testSchema)
	loadData(t, r.g, "main", testSeed)
	mutateQ(t, r.g, "main", `query q() { delete Person where handle = "bob" }`)
	r.sync()
	if _, err := schema.Apply(ctx, r.g, evolvedSchema, schema.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	loadData(t, r.g, "main", `{"type":"Person","data":{"handle":"dee","full_name":"Dee","nickname":"D","tags":["x"],"emb":[1,2,3]}}`+"\n")
	r.sync()

	for _, key := range tableKeys {
		tbl := r.loadTable(r.open(), key)
		var nm ice.NameMapping
		if raw := tbl.Properties()["schema.name-mapping.default"]; raw != "" {
			if err := json.Unmarshal([]byte(raw), &nm); err != nil {
				t.Fatalf("%s: name mapping: %v", key, err)
			}
		}
		fs, err := tbl.FS(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// The file column names each field id is read from.
		columns := map[int]map[string]bool{}
		files := 0
		for _, snap := range tbl.Metadata().Snapshots() {
			mfs, err := snap.Manifests(fs)
			if err != nil {
				t.Fatal(err)
			}
			for _, mf := range mfs {
				es, err := mf.FetchEntries(fs, true)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range es {
					df := e.DataFile()
					files++
					if df.ContentType() == ice.EntryContentPosDeletes {
						del := ice.NewSchema(0, ice.NestedField{ID: 2147483546, Name: "file_path", Type: ice.PrimitiveTypes.String, Required: true},
							ice.NestedField{ID: 2147483545, Name: "pos", Type: ice.PrimitiveTypes.Int64, Required: true})
						got := resolveColumns(t, df.FilePath(), del, nil)
						if got["file_path"] != 2147483546 || got["pos"] != 2147483545 {
							t.Fatalf("%s: delete file columns %v", key, got)
						}
						continue
					}
					for col, id := range resolveColumns(t, df.FilePath(), tbl.Schema(), nm) {
						if columns[id] == nil {
							columns[id] = map[string]bool{}
						}
						columns[id][col] = true
					}
				}
			}
		}
		if files == 0 {
			t.Fatalf("%s: no files", key)
		}
		for _, f := range tbl.Schema().Fields() {
			if _, prim := f.Type.(ice.PrimitiveType); prim && f.Required && len(columns[f.ID]) == 0 {
				t.Fatalf("%s: required field %s is read from no file column", key, f.Name)
			}
		}
		if key == "node:Person" {
			fn, ok := tbl.Schema().FindFieldByName("full_name")
			if !ok || !columns[fn.ID]["name"] || !columns[fn.ID]["full_name"] {
				t.Fatalf("full_name (renamed from name) is read from columns %v, want name (files before the rename) and full_name (after)", columns[fn.ID])
			}
		}
	}
}
