package table

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/oklog/ulid/v2"

	"github.com/omnigraph-go/omnigraph/backend"
)

const formatVersion = 1

// errorf wraps sentinel with a formatted explanation.
func errorf(sentinel error, format string, args ...any) error {
	return fmt.Errorf("%w: %s", sentinel, fmt.Sprintf(format, args...))
}

// newUUID mints a unique, time-ordered identifier (a lower-case ULID).
func newUUID() string { return strings.ToLower(ulid.Make().String()) }

// branchRoot is the key prefix (with trailing slash) under which a branch
// keeps its version line and the files it writes.
func branchRoot(path, branch string) string {
	if branch == MainBranch {
		return path + "/"
	}
	return path + "/" + dirTree + "/" + branch + "/"
}

func versionsPrefix(path, branch string) string { return branchRoot(path, branch) + dirVersions + "/" }

// VersionsPrefix is the key prefix of the version manifests of one branch
// of the dataset at path (recovery lists and reclaims a fork's line).
func VersionsPrefix(path, branch string) string { return versionsPrefix(path, branch) }

// versionKey names version v so that newer versions sort first.
func versionKey(path, branch string, v uint64) string {
	return fmt.Sprintf("%s%020d.json", versionsPrefix(path, branch), math.MaxUint64-v)
}

// parseVersionKey inverts versionKey's file name.
func parseVersionKey(key string) (uint64, bool) {
	i := strings.LastIndexByte(key, '/')
	name := strings.TrimSuffix(key[i+1:], ".json")
	if len(name) != 20 || !strings.HasSuffix(key, ".json") {
		return 0, false
	}
	n, err := strconv.ParseUint(name, 10, 64)
	if err != nil {
		return 0, false
	}
	return math.MaxUint64 - n, true
}

func refKey(path, name string) string { return refsPrefix(path) + name }

// refsPrefix is the prefix of every branch ref of the dataset at path.
func refsPrefix(path string) string { return path + "/" + dirRefs + "/" + dirRefBranches + "/" }

func encodeSchema(s *arrow.Schema) ([]byte, error) {
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(s), ipc.WithAllocator(memory.DefaultAllocator))
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("encode schema: %w", err)
	}
	return buf.Bytes(), nil
}

func decodeSchema(b []byte) (*arrow.Schema, error) {
	r, err := ipc.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, errorf(ErrCorrupt, "decode schema: %v", err)
	}
	defer r.Release()
	return r.Schema(), nil
}

// A version manifest is stored gzip-compressed: its fragment list repeats
// the same field names and statistics for every fragment, so a table of 32
// small fragments holds 23 KB of JSON but about 3 KB compressed, and a
// one-row commit writes one such file. Readers also accept plain JSON (the
// first byte is '{'), which is what earlier builds wrote.
func encodeManifest(m *Manifest) ([]byte, error) {
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// maxManifestBytes bounds a decompressed version manifest, so a corrupt
// or hostile object cannot exhaust memory.
const maxManifestBytes = 1 << 30

func decodeManifest(b []byte) (*Manifest, error) {
	if len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, errorf(ErrCorrupt, "manifest: %v", err)
		}
		raw, err := io.ReadAll(io.LimitReader(zr, maxManifestBytes+1))
		if err != nil {
			return nil, errorf(ErrCorrupt, "manifest: %v", err)
		}
		if len(raw) > maxManifestBytes {
			return nil, errorf(ErrCorrupt, "manifest: larger than %d bytes decompressed", maxManifestBytes)
		}
		b = raw
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, errorf(ErrCorrupt, "manifest: %v", err)
	}
	if m.FormatVersion != formatVersion {
		return nil, errorf(ErrCorrupt, "manifest format %d, this build reads %d", m.FormatVersion, formatVersion)
	}
	return &m, nil
}

// clone returns a deep copy, so a staged manifest never aliases its parent.
func (m *Manifest) clone() *Manifest {
	c := *m
	c.Fragments = append([]Fragment(nil), m.Fragments...)
	for i := range c.Fragments {
		c.Fragments[i].Blobs = slices.Clone(c.Fragments[i].Blobs)
		if d := c.Fragments[i].Deletion; d != nil {
			dd := *d
			c.Fragments[i].Deletion = &dd
		}
	}
	c.Indexes = append([]Index(nil), m.Indexes...)
	for i := range c.Indexes {
		ix := &c.Indexes[i]
		ix.Fragments = append([]string(nil), ix.Fragments...)
		ix.Columns = slices.Clone(ix.Columns)
		ix.Rows = slices.Clone(ix.Rows)
		ix.Deletions = slices.Clone(ix.Deletions)
	}
	return &c
}

// readManifest GETs one version manifest: exactly one request.
func readManifest(ctx context.Context, store backend.StorageAdapter, path, branch string, v uint64) (*Manifest, error) {
	b, _, err := store.Get(ctx, versionKey(path, branch, v))
	if err != nil {
		if backend.IsNotFound(err) {
			return nil, fmt.Errorf("%w: version %d of branch %q: %w", ErrNotFound, v, branch, err)
		}
		return nil, fmt.Errorf("read version %d of branch %q: %w", v, branch, err)
	}
	return decodeManifest(b)
}

// latestVersion issues one List request (one key) and parses the newest
// version of the branch's own line. ok is false when the line is empty.
func latestVersion(ctx context.Context, store backend.StorageAdapter, path, branch string) (uint64, bool, error) {
	page, err := store.List(ctx, versionsPrefix(path, branch), backend.ListOptions{MaxKeys: 1})
	if err != nil {
		return 0, false, fmt.Errorf("list versions of branch %q: %w", branch, err)
	}
	for _, o := range page.Objects {
		if v, ok := parseVersionKey(o.Key); ok {
			return v, true, nil
		}
	}
	return 0, false, nil
}

func validatePath(path string) error {
	if err := backend.ValidateKey(path); err != nil {
		return fmt.Errorf("%w: dataset path %q: %w", ErrInvalid, path, err)
	}
	return nil
}

func isConflict(err error) bool { return errors.Is(err, backend.ErrPrecondition) }

func now() time.Time { return time.Now().UTC() }
