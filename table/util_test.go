package table

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/counter"
	"github.com/omnigraph-go/omnigraph/backend/mem"
)

func itoa(v int64) string { return fmt.Sprint(v) }

func countedStore() (backend.StorageAdapter, *counter.Counter) {
	c := counter.New(mem.New())
	return c, c
}

func arrowRecordOther(t testing.TB, s *arrow.Schema) arrow.Record {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).Append("x")
	return b.NewRecordBatch()
}

func nullKeyRecord(t testing.TB) arrow.Record {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, personSchema)
	defer b.Release()
	b.Field(0).AppendNull()
	b.Field(1).AppendNull()
	b.Field(2).AppendNull()
	return b.NewRecordBatch()
}

func newTableReader(tbl arrow.Table) *array.TableReader { return array.NewTableReader(tbl, -1) }
