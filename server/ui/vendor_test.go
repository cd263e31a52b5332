package ui

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestVendoredFilesArePinned: every file under assets/vendor is listed in
// VENDOR.md with the SHA-256 of the release file it was copied from, and
// matches it. A library changed by hand, or added without its entry,
// fails here; scripts/vendor-ui.sh refreshes both from the npm tarballs.
func TestVendoredFilesArePinned(t *testing.T) {
	doc, err := os.ReadFile("VENDOR.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([^`]+)` \\| `[^`]+` \\| `([0-9a-f]{64})` \\|$")
	want := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		want["vendor/"+m[1]] = m[2]
	}
	if len(want) == 0 {
		t.Fatal("VENDOR.md lists no file")
	}
	seen := map[string]bool{}
	err = fs.WalkDir(Assets(), "vendor", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(Assets(), p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		seen[p] = true
		switch h, ok := want[p]; {
		case !ok:
			t.Errorf("%s is vendored but not listed in VENDOR.md", p)
		case h != hex.EncodeToString(sum[:]):
			t.Errorf("%s differs from the release file VENDOR.md pins (sha256 %s)", p, hex.EncodeToString(sum[:]))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for p := range want {
		if !seen[p] {
			t.Errorf("VENDOR.md lists %s, which is not vendored", p)
		}
	}
	// Each library keeps its licence beside it.
	for p := range seen {
		lib := strings.SplitN(strings.TrimPrefix(p, "vendor/"), "/", 2)[0]
		if !seen["vendor/"+lib+"/LICENSE"] {
			t.Errorf("%s has no LICENSE", lib)
		}
	}
}
