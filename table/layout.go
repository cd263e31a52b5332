package table

import (
	"slices"
	"strings"
)

// The directory words of a dataset's storage layout (docs/dev/tables.md).
// Every key the package writes is built from these constants, so
// LayoutWords, which lists them, is the whole vocabulary: a caller that
// lets users choose branch names refuses a component equal to one of them
// (a name like "feat/_versions/x" would otherwise read as a layout
// directory to anything parsing keys). TestLayoutWordsCoverEveryKey writes
// every kind of file and fails on a directory word missing here.
const (
	dirVersions    = "_versions"  // version manifests
	dirData        = "data"       // fragments
	dirDeletions   = "_deletions" // deletion vectors
	dirIndices     = "_indices"   // key, adjacency and search indexes
	dirTree        = "tree"       // the roots of branches other than main
	dirRefs        = "_refs"      // branch refs
	dirRefBranches = "branches"   // under _refs
	dirBlobs       = "_blobs"     // the blob area (blob.go), at the dataset root only: never under a branch root, so no branch name can be read as it
)

// fileDirs are the directories of a branch root that hold files its
// versions reference (never rewritten, reclaimed by Cleanup).
var fileDirs = []string{dirData, dirDeletions, dirIndices}

// LayoutWords returns every directory word of the layout.
func LayoutWords() []string {
	return []string{dirVersions, dirData, dirDeletions, dirIndices, dirTree, dirRefs, dirRefBranches}
}

// isFileDir reports whether rest (a key relative to a branch root) lies in
// one of the file directories.
func isFileDir(rest string) bool {
	dir, _, ok := strings.Cut(rest, "/")
	return ok && slices.Contains(fileDirs, dir)
}
