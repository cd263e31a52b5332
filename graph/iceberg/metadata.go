package iceberg

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"

	ice "github.com/apache/iceberg-go"
)

// ErrCorrupt: a stored Iceberg metadata file or sync cursor does not
// decode. Sync never overwrites it; it reports it.
var ErrCorrupt = errors.New("iceberg: corrupt metadata")

// metadata is one Iceberg table metadata file (format v2), written by this
// package and read back by it. It is plain data: the fields the spec
// requires, in an order that compresses well (the per-snapshot fields that
// repeat sit together), plus the sync's own state in one property.
type metadata struct {
	FormatVersion      int               `json:"format-version"`
	TableUUID          string            `json:"table-uuid"`
	Location           string            `json:"location"`
	LastSequenceNumber int64             `json:"last-sequence-number"`
	LastUpdatedMS      int64             `json:"last-updated-ms"`
	LastColumnID       int               `json:"last-column-id"`
	CurrentSchemaID    int               `json:"current-schema-id"`
	Schemas            []*ice.Schema     `json:"schemas"`
	DefaultSpecID      int               `json:"default-spec-id"`
	PartitionSpecs     []partitionSpec   `json:"partition-specs"`
	LastPartitionID    int               `json:"last-partition-id"`
	DefaultSortOrderID int               `json:"default-sort-order-id"`
	SortOrders         []sortOrder       `json:"sort-orders"`
	Properties         map[string]string `json:"properties"`
	CurrentSnapshotID  int64             `json:"current-snapshot-id"`
	Refs               map[string]ref    `json:"refs"`
	Snapshots          []snapshot        `json:"snapshots"`
	SnapshotLog        []snapshotLog     `json:"snapshot-log"`
	MetadataLog        []metadataLog     `json:"metadata-log"`

	// state is the decoded omnigraph.sync-state property.
	state *syncState
	// gz: the file read was gzip-compressed (v<N>.gz.metadata.json).
	gz bool
}

type partitionSpec struct {
	SpecID int        `json:"spec-id"`
	Fields []struct{} `json:"fields"`
}

type sortOrder struct {
	OrderID int        `json:"order-id"`
	Fields  []struct{} `json:"fields"`
}

type ref struct {
	SnapshotID int64  `json:"snapshot-id"`
	Type       string `json:"type"`
}

// snapshot is one Iceberg snapshot: one graph commit that changed the
// table. Its id is its sequence number (unique, never reused: the last
// sequence number only grows), which keeps the metadata small.
type snapshot struct {
	SequenceNumber   int64             `json:"sequence-number"`
	SnapshotID       int64             `json:"snapshot-id"`
	ParentSnapshotID *int64            `json:"parent-snapshot-id,omitempty"`
	TimestampMS      int64             `json:"timestamp-ms"`
	Summary          map[string]string `json:"summary"`
	ManifestList     string            `json:"manifest-list"`
	SchemaID         int               `json:"schema-id"`
}

type snapshotLog struct {
	TimestampMS int64 `json:"timestamp-ms"`
	SnapshotID  int64 `json:"snapshot-id"`
}

type metadataLog struct {
	TimestampMS  int64  `json:"timestamp-ms"`
	MetadataFile string `json:"metadata-file"`
}

// Summary keys this package writes besides the spec's.
const (
	// SummaryCommitID names the graph commit a snapshot is.
	SummaryCommitID = "omnigraph.graph-commit-id"
	// stateProperty holds the sync's bookkeeping (syncState, JSON).
	stateProperty = "omnigraph.sync-state"
	// graphProperty names the graph (its id) the table belongs to.
	graphProperty = "omnigraph.graph-id"
	// tableProperty names the graph table ("node:Person").
	tableProperty = "omnigraph.table"
	// nameMappingProperty resolves Parquet columns that carry no field ids.
	nameMappingProperty = "schema.name-mapping.default"
	// codecProperty is Java Iceberg's table property naming the codec of
	// the metadata files written after this one: CodecNone or CodecGzip.
	codecProperty = "write.metadata.compression-codec"
)

// The metadata codecs (Options.MetadataCompression).
const (
	// CodecNone writes plain JSON (v<N>.metadata.json), what every engine
	// reads with its defaults.
	CodecNone = "none"
	// CodecGzip writes gzip-compressed JSON (v<N>.gz.metadata.json): about
	// a tenth of the bytes, but DuckDB's iceberg_scan then needs
	// metadata_compression_codec='gzip' and some readers cannot read it.
	CodecGzip = "gzip"
)

// nextGzip reports whether the metadata file after m is gzip-compressed:
// m's codec property says so. A file without the property was written
// before plain JSON was the default, when every file was gzip. Deciding
// the next file's name from the file it extends (not from the caller's
// options) keeps put-if-absent exclusive: every sync that extends v<N>
// writes v<N+1> under the same name.
func (m *metadata) nextGzip() bool {
	c, ok := m.Properties[codecProperty]
	if !ok {
		return true
	}
	return c == CodecGzip
}

// syncState is what Sync needs to extend a ref without reading its
// manifests: per Iceberg branch, the graph branch life and version it is
// synced to, the table pin its head snapshot shows, and the live files of
// that snapshot with the snapshot and sequence number that added each.
type syncState struct {
	Refs map[string]*refState `json:"refs"`
}

type refState struct {
	Incarnation uint64     `json:"inc"`
	Version     uint64     `json:"ver"`
	Snapshot    int64      `json:"snap"`
	Pin         pin        `json:"pin"`
	Files       []liveFile `json:"files"`
}

// pin is a table version: path, table branch, version.
type pin struct {
	Path    string `json:"path"`
	Branch  string `json:"branch"`
	Version uint64 `json:"v"`
}

// liveFile is one data or position-delete file of a snapshot.
type liveFile struct {
	// Key is the file's key relative to the graph root.
	Key string `json:"k"`
	// Deletes marks a position-delete file.
	Deletes  bool  `json:"d,omitempty"`
	Snapshot int64 `json:"s"`
	Seq      int64 `json:"q"`
	Rows     int64 `json:"r"`
	Size     int64 `json:"z"`
	// PosLo and PosEnd, on a position-delete file, are its first deleted
	// row offset and its last plus one (0: unknown, as in state written
	// before they were kept): its pos bounds, kept here so a snapshot that
	// keeps the file states them without reading it.
	PosLo  int64 `json:"pl,omitempty"`
	PosEnd int64 `json:"pe,omitempty"`
}

// maxMetadataBytes bounds a decompressed metadata file.
const maxMetadataBytes = 1 << 30

// encode returns the JSON of m, gzip-compressed when gz (its state
// re-encoded into its property first).
func (m *metadata) encode(gz bool) ([]byte, error) {
	if m.state != nil {
		for _, r := range m.state.Refs {
			sort.Slice(r.Files, func(i, j int) bool { return r.Files[i].Key < r.Files[j].Key })
		}
		b, err := json.Marshal(m.state)
		if err != nil {
			return nil, err
		}
		m.Properties[stateProperty] = string(b)
	}
	raw, err := json.Marshal(m)
	if err != nil || !gz {
		return raw, err
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// decodeMetadata parses a stored metadata file (gzip or plain JSON, told
// apart by its first bytes, whatever its name).
func decodeMetadata(b []byte) (*metadata, error) {
	gz := len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b
	if gz {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		raw, err := io.ReadAll(io.LimitReader(zr, maxMetadataBytes+1))
		if err != nil || len(raw) > maxMetadataBytes {
			return nil, fmt.Errorf("%w: metadata does not decompress within %d bytes", ErrCorrupt, maxMetadataBytes)
		}
		b = raw
	}
	m := metadata{gz: gz}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if m.FormatVersion != 2 {
		return nil, fmt.Errorf("%w: format version %d, this build writes 2", ErrCorrupt, m.FormatVersion)
	}
	if m.Properties == nil {
		m.Properties = map[string]string{}
	}
	m.state = &syncState{Refs: map[string]*refState{}}
	if s := m.Properties[stateProperty]; s != "" {
		if err := json.Unmarshal([]byte(s), m.state); err != nil {
			return nil, fmt.Errorf("%w: sync state: %v", ErrCorrupt, err)
		}
		if m.state.Refs == nil {
			m.state.Refs = map[string]*refState{}
		}
	}
	if m.Refs == nil {
		m.Refs = map[string]ref{}
	}
	return &m, nil
}

// schema returns the schema with id, or nil.
func (m *metadata) schema(id int) *ice.Schema {
	for _, s := range m.Schemas {
		if s.ID == id {
			return s
		}
	}
	return nil
}

// snapshot returns the snapshot with id, or nil.
func (m *metadata) snapshot(id int64) *snapshot {
	for i := range m.Snapshots {
		if m.Snapshots[i].SnapshotID == id {
			return &m.Snapshots[i]
		}
	}
	return nil
}

// byCommit returns the snapshot of a graph commit, or nil.
func (m *metadata) byCommit(commitID string) *snapshot {
	for i := len(m.Snapshots) - 1; i >= 0; i-- {
		if m.Snapshots[i].Summary[SummaryCommitID] == commitID {
			return &m.Snapshots[i]
		}
	}
	return nil
}

// newMetadata starts the metadata of a table that has none; codec is the
// codec of its first file and of those after it.
func newMetadata(uuid, location, graphID, key, codec string) *metadata {
	return &metadata{
		FormatVersion:     2,
		TableUUID:         uuid,
		Location:          location,
		CurrentSchemaID:   0,
		PartitionSpecs:    []partitionSpec{{SpecID: 0, Fields: []struct{}{}}},
		LastPartitionID:   999,
		SortOrders:        []sortOrder{{OrderID: 0, Fields: []struct{}{}}},
		Properties:        map[string]string{graphProperty: graphID, tableProperty: key, codecProperty: codec},
		CurrentSnapshotID: -1,
		Refs:              map[string]ref{},
		Snapshots:         []snapshot{},
		SnapshotLog:       []snapshotLog{},
		MetadataLog:       []metadataLog{},
		state:             &syncState{Refs: map[string]*refState{}},
	}
}
