package iceberg

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/graph"
)

// Prefix is where the Iceberg metadata lives in the graph root, laid out
// like a Hadoop catalog whose warehouse is <root>/_iceberg:
//
//	_iceberg/<namespace>/<Type>/metadata/v<N>.metadata.json      table metadata, put-if-absent
//	                                       (v<N>.gz.metadata.json when gzip-compressed)
//	_iceberg/<namespace>/<Type>/metadata/version-hint.text       the newest N (a hint)
//	_iceberg/<namespace>/<Type>/metadata/snap-<id>-<commit>.avro        manifest list
//	_iceberg/<namespace>/<Type>/metadata/snap-<id>-<commit>-<data|deletes>.avro  manifests
//	_iceberg/<namespace>/<Type>/data/<fragment>-<deletion>.parquet      position deletes
//	_iceberg/_sync/<branch>.json                                  a branch's sync cursor
//
// The namespaces are "nodes" and "edges"; the table names are the type
// names. Data files are the graph's own Parquet fragments, referenced
// where they are (nodes/<Type>/data/...): nothing is copied.
const Prefix = "_iceberg/"

// Namespaces are the two Iceberg namespaces: node tables and edge tables.
const (
	NamespaceNodes = "nodes"
	NamespaceEdges = "edges"
)

// Ident names one Iceberg table of the graph.
type Ident struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

func (id Ident) String() string { return id.Namespace + "." + id.Name }

// IdentOf maps a graph table key ("node:Person") to its Iceberg table.
func IdentOf(key string) (Ident, bool) {
	kind, name, ok := strings.Cut(key, ":")
	if !ok || name == "" {
		return Ident{}, false
	}
	switch kind + ":" {
	case graph.NodeTableKey(""):
		return Ident{NamespaceNodes, name}, true
	case graph.EdgeTableKey(""):
		return Ident{NamespaceEdges, name}, true
	}
	return Ident{}, false
}

// Key maps an Iceberg table back to its graph table key.
func (id Ident) Key() string {
	if id.Namespace == NamespaceNodes {
		return graph.NodeTableKey(id.Name)
	}
	return graph.EdgeTableKey(id.Name)
}

// dir is the table's key prefix (with trailing slash).
func (id Ident) dir() string { return Prefix + id.Namespace + "/" + id.Name + "/" }

func (id Ident) metadataDir() string { return id.dir() + "metadata/" }

func (id Ident) hintKey() string { return id.metadataDir() + "version-hint.text" }

// metadataKey names metadata file n: v<n>.metadata.json, or
// v<n>.gz.metadata.json when it is gzip-compressed (the names Java
// Iceberg's Hadoop tables use: readers pick the codec by the name).
func (id Ident) metadataKey(n int, gz bool) string {
	suffix := plainSuffix
	if gz {
		suffix = gzipSuffix
	}
	return id.metadataDir() + "v" + strconv.Itoa(n) + suffix
}

const (
	plainSuffix = ".metadata.json"
	gzipSuffix  = ".gz.metadata.json"
)

// parseMetadataName returns N of a v<N>.metadata.json or
// v<N>.gz.metadata.json key, and whether it is the gzip one.
func parseMetadataName(key string) (n int, gz bool, ok bool) {
	name := key[strings.LastIndexByte(key, '/')+1:]
	if !strings.HasPrefix(name, "v") || !strings.HasSuffix(name, plainSuffix) {
		return 0, false, false
	}
	num := strings.TrimSuffix(name[1:], plainSuffix)
	if gz = strings.HasSuffix(num, ".gz"); gz {
		num = strings.TrimSuffix(num, ".gz")
	}
	n, err := strconv.Atoi(num)
	if err != nil || n <= 0 || strconv.Itoa(n) != num {
		return 0, false, false
	}
	return n, gz, true
}

// snapshotBase names a snapshot's manifest list and manifests: its id and
// its graph commit make it unique (an id is never reused), and the same
// inputs give the same names, so a re-run after a crash finds what the
// crashed run wrote.
func (id Ident) snapshotBase(snap int64, commit string) string {
	return id.metadataDir() + "snap-" + strconv.FormatInt(snap, 10) + "-" + commit
}

// deletesKey names the position-delete file of one deletion vector (its
// name is unique in the table, so the file is shared by every snapshot and
// branch that holds that vector).
func (id Ident) deletesKey(deletionPath string) string {
	base := deletionPath[strings.LastIndexByte(deletionPath, '/')+1:]
	return id.dir() + "data/" + strings.TrimSuffix(base, ".bin") + ".parquet"
}

// cursorKey is the sync cursor of a branch.
func cursorKey(branch string) string { return Prefix + "_sync/" + branch + ".json" }

// Location turns a storage URL (as given to --store) into the URI engines
// use for the graph root: file:///abs/path for a directory, the URL
// without its query for s3://, gs://, az:// and others. Iceberg metadata
// names every file by an absolute URI under it.
func Location(storeURL string) (string, error) {
	u, err := backend.ParseURL(storeURL)
	if err != nil {
		return "", err
	}
	switch u.Scheme {
	case "file":
		p := filepath.ToSlash(filepath.Clean(filepath.FromSlash(u.Path)))
		return "file://" + strings.TrimSuffix(p, "/"), nil
	case "mem":
		return "", fmt.Errorf("%w: a mem:// store has no location an Iceberg engine can read; give --location", graph.ErrInvalidInput)
	}
	loc := url.URL{Scheme: u.Scheme, Host: u.Host, Path: strings.TrimSuffix(u.Path, "/")}
	return loc.String(), nil
}

// join appends a key to a root location.
func join(root, key string) string { return strings.TrimSuffix(root, "/") + "/" + key }

// WarehouseOf is the warehouse a Hadoop-style catalog reads the static
// metadata from: <location>/_iceberg.
func WarehouseOf(location string) string { return join(location, strings.TrimSuffix(Prefix, "/")) }
