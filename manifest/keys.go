package manifest

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/oklog/ulid/v2"
)

// The directory words of the control dataset's layout. Every key the
// package writes is built from them; LayoutWords lists them, so a branch
// name cannot be given a component that reads as one.
const (
	dirManifest = "__manifest"
	dirBranches = "branches"
	dirArchive  = "archive"
	dirSchema   = "_schema"
	// versionsMarker is the segment under a branch directory that holds its
	// versions; "." sorts before every name component.
	versionsMarker = ".v"
)

// Key prefixes of the control dataset, relative to the graph root.
const (
	// Dir holds everything the manifest owns.
	Dir = dirManifest + "/"
	// branchesDir holds one directory per branch name.
	branchesDir = Dir + dirBranches + "/"
	// SchemaDir holds accepted schema sources, content-addressed.
	SchemaDir = dirSchema + "/"
)

// LayoutWords returns every directory word of the manifest's layout.
func LayoutWords() []string {
	return []string{dirManifest, dirBranches, dirArchive, dirSchema, versionsMarker}
}

// MainBranch is the branch every graph has; it cannot be created or deleted.
const MainBranch = "main"

// SchemaApplyLockBranch is the internal branch that serialises schema
// migrations; branch listings hide it.
const SchemaApplyLockBranch = "__schema_apply_lock__"

// maxBranchName bounds a branch name in bytes.
const maxBranchName = 200

// ValidateBranchName checks a branch name: 1 to 200 bytes of slash-separated
// components, each starting with an ASCII letter, digit or underscore and
// continuing with letters, digits, '.', '_' or '-'.
func ValidateBranchName(name string) error {
	if name == "" {
		return branchNameErrorf("empty branch name")
	}
	if len(name) > maxBranchName {
		return branchNameErrorf("branch name is %d bytes; the limit is %d", len(name), maxBranchName)
	}
	for _, comp := range strings.Split(name, "/") {
		if comp == "" {
			return branchNameErrorf("branch name %q has an empty component; write names like feature or review/2026-07", name)
		}
		// Quote characters, never bytes: "fé" has 'é', not 'Ã'.
		for i, c := range comp {
			alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
			if i == 0 && !alnum {
				return branchNameErrorf("branch name %q: each component must start with an ASCII letter, digit or '_', not %s", name, quoteChar(c))
			}
			if !alnum && c != '.' && c != '-' {
				return branchNameErrorf("branch name %q has %s; use ASCII letters, digits, '.', '_', '-' and '/' only", name, quoteChar(c))
			}
		}
	}
	return nil
}

// ErrInvalidBranchName matches every refusal of ValidateBranchName: bad
// input, refused before any read.
var ErrInvalidBranchName = errors.New("invalid branch name")

// branchNameError is a refusal of ValidateBranchName.
type branchNameError string

func (e branchNameError) Error() string        { return string(e) }
func (e branchNameError) Is(target error) bool { return target == ErrInvalidBranchName }

func branchNameErrorf(format string, args ...any) error {
	return branchNameError(fmt.Sprintf(format, args...))
}

// quoteChar quotes one character of a name for a message: the character
// when printable, else its code point (a byte that is not UTF-8 says so).
func quoteChar(r rune) string {
	switch {
	case r == utf8.RuneError:
		return "a byte that is not UTF-8"
	case strconv.IsPrint(r):
		return strconv.QuoteRune(r)
	}
	return fmt.Sprintf("character U+%04X", r)
}

// ErrInvalidCommitID: a commit id that cannot be one (not a ULID). It is
// bad input, refused before any read.
var ErrInvalidCommitID = errors.New("malformed commit id")

// ValidateCommitID checks the form of a commit id: the 26-character ULID
// every commit gets (graph.newID). A malformed id is refused rather than
// looked up, so it is a clear 400 and never a scan of the history.
func ValidateCommitID(id string) error {
	if _, err := ulid.ParseStrict(id); err != nil || len(id) != ulid.EncodedSize {
		shown := id
		if utf8.RuneCountInString(shown) > 40 {
			shown = string([]rune(shown)[:40]) + "..."
		}
		return fmt.Errorf("%w %q: a commit id is the 26-character id that 'commit list' prints (letters and digits, e.g. 01KA3Q8J5YV9H0M3WQ8X2C4T7B)", ErrInvalidCommitID, shown)
	}
	return nil
}

// IsInternalBranch reports whether a branch is internal (hidden from listings
// and not creatable by users): names starting with "__".
func IsInternalBranch(name string) bool { return strings.HasPrefix(name, "__") }

// Inv renders MaxUint64-n as 20 zero-padded digits, so that ascending key
// order is descending n.
func Inv(n uint64) string { return fmt.Sprintf("%020d", uint64(math.MaxUint64)-n) }

// ParseInv is the inverse of Inv.
func ParseInv(s string) (uint64, error) {
	if len(s) != 20 {
		return 0, fmt.Errorf("inverted number %q is not 20 digits", s)
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("inverted number %q: %v", s, err)
	}
	return math.MaxUint64 - v, nil
}

// BranchDir is the directory of one branch name: its versions and its path
// descendants live under it.
func BranchDir(branch string) string { return branchesDir + branch + "/" }

// VersionsPrefix is the prefix of every version of every incarnation of a
// branch, newest first.
func VersionsPrefix(branch string) string { return BranchDir(branch) + versionsMarker + "/" }

// IncarnationPrefix is the prefix of the versions of one incarnation.
func IncarnationPrefix(branch string, incarnation uint64) string {
	return VersionsPrefix(branch) + Inv(incarnation) + "/"
}

// VersionKey is the key of one version of one incarnation of a branch.
func VersionKey(branch string, incarnation, version uint64) string {
	return IncarnationPrefix(branch, incarnation) + Inv(version)
}

// SchemaKey is where the accepted schema source with this identity lives.
func SchemaKey(identity string) string { return SchemaDir + identity + ".pg" }

// Describe names the manifest version a key holds for a user message
// ("branch \"main\" version 3"), never the key itself: storage keys are
// internal.
func Describe(key string) string {
	branch, inc, v, err := ParseVersionKey(key)
	if err != nil {
		return "a manifest object"
	}
	return fmt.Sprintf("branch %q version %d (incarnation %d)", branch, v, inc)
}

// ParseVersionKey splits a version key into its branch, incarnation and
// version.
func ParseVersionKey(key string) (branch string, incarnation, version uint64, err error) {
	rest, ok := strings.CutPrefix(key, branchesDir)
	if !ok {
		return "", 0, 0, fmt.Errorf("%w: a manifest object is not under the branches directory", ErrCorrupt)
	}
	i := strings.LastIndex(rest, "/"+versionsMarker+"/")
	if i < 0 {
		return "", 0, 0, fmt.Errorf("%w: a manifest object has no version marker", ErrCorrupt)
	}
	branch = rest[:i]
	parts := strings.Split(rest[i+len(versionsMarker)+2:], "/")
	if len(parts) != 2 {
		return "", 0, 0, fmt.Errorf("%w: a manifest object is not named <incarnation>/<version>", ErrCorrupt)
	}
	if incarnation, err = ParseInv(parts[0]); err != nil {
		return "", 0, 0, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if version, err = ParseInv(parts[1]); err != nil {
		return "", 0, 0, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return branch, incarnation, version, nil
}

// skipVersions is a StartAfter that skips every version of branch: "/.v0"
// sorts after every "/.v/..." key and before every descendant directory.
func skipVersions(branch string) string { return BranchDir(branch) + versionsMarker + "0" }
