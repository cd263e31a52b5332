package cleanup_test

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// classStat is what one class of object costs on a local store.
type classStat struct {
	Objects int
	Bytes   int64
}

// objectClass names the class of one object key (slash-separated, relative
// to the graph root): the manifest history, other control objects, and per
// table its version manifests, data fragments, deletion vectors, key and
// adjacency indexes and table-branch trees.
func objectClass(key string) string {
	parts := strings.Split(key, "/")
	switch {
	case strings.Contains(parts[len(parts)-1], "#"):
		return "temp residue (name#N)"
	case strings.HasPrefix(key, "__manifest/branches/"):
		return "manifest history"
	case strings.HasPrefix(key, "__manifest/archive/"):
		return "manifest archive"
	case parts[0] != "nodes" && parts[0] != "edges":
		return "control (" + parts[0] + ")"
	case len(parts) < 3:
		return "table other"
	}
	rest := parts[2:]
	if rest[0] == "tree" {
		return "table branch trees"
	}
	switch rest[0] {
	case "_versions":
		return "table versions"
	case "data":
		return "data fragments"
	case "_deletions":
		return "deletion vectors"
	case "_indices":
		if strings.HasSuffix(key, "key.idx") {
			return "key index"
		}
		return "other index"
	}
	return "table " + rest[0]
}

// breakdown sums a local store's objects by class.
func breakdown(t testing.TB, dir string) map[string]classStat {
	t.Helper()
	out := map[string]classStat{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		c := objectClass(filepath.ToSlash(rel))
		s := out[c]
		s.Objects++
		s.Bytes += fi.Size()
		out[c] = s
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// describeBreakdown renders two breakdowns side by side, one class a line.
func describeBreakdown(a, b map[string]classStat) string {
	classes := map[string]bool{}
	for c := range a {
		classes[c] = true
	}
	for c := range b {
		classes[c] = true
	}
	names := make([]string, 0, len(classes))
	for c := range classes {
		names = append(names, c)
	}
	sort.Strings(names)
	var sb strings.Builder
	fmt.Fprintf(&sb, "%-22s %20s %20s\n", "class", "cleaned (objs/bytes)", "fresh (objs/bytes)")
	for _, c := range names {
		fmt.Fprintf(&sb, "%-22s %8d %11d %8d %11d\n", c, a[c].Objects, a[c].Bytes, b[c].Objects, b[c].Bytes)
	}
	return sb.String()
}
