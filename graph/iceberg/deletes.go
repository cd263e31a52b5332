package iceberg

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// The reserved field ids of a position-delete file (Iceberg spec).
const (
	fieldIDFilePath = 2147483546
	fieldIDPos      = 2147483545
)

func fieldWithID(name string, t arrow.DataType, id int) arrow.Field {
	return arrow.Field{Name: name, Type: t, Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{strconv.Itoa(id)})}
}

// positionDeletes encodes an Iceberg position-delete file: one row
// (file_path, pos) per deleted row offset of the data file at dataPath,
// ascending, as the spec requires. A graph deletion vector is cumulative,
// so one such file states every deletion of its fragment.
func positionDeletes(dataPath string, rows []uint32) ([]byte, error) {
	s := arrow.NewSchema([]arrow.Field{
		fieldWithID("file_path", arrow.BinaryTypes.String, fieldIDFilePath),
		fieldWithID("pos", arrow.PrimitiveTypes.Int64, fieldIDPos),
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	paths := b.Field(0).(*array.StringBuilder)
	pos := b.Field(1).(*array.Int64Builder)
	for _, r := range rows {
		paths.Append(dataPath)
		pos.Append(int64(r))
	}
	rec := b.NewRecord()
	defer rec.Release()
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd), parquet.WithDictionaryDefault(true))
	w, err := pqarrow.NewFileWriter(s, &buf, props, pqarrow.DefaultWriterProps())
	if err != nil {
		return nil, fmt.Errorf("position deletes: %w", err)
	}
	if err := w.Write(rec); err != nil {
		w.Close()
		return nil, fmt.Errorf("position deletes: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("position deletes: %w", err)
	}
	return buf.Bytes(), nil
}
