package local_test

import (
	"os"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/backend/local"
)

func lockFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".omnigraph-lock#") {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestCloseRemovesUnheldLockFiles pins the rule that a closed store leaves
// no lock files behind, that a lock another Store holds survives a Close,
// and that the store keeps working after Close.
func TestCloseRemovesUnheldLockFiles(t *testing.T) {
	ctx := t.Context()
	s, dir := open(t)
	other, err := local.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b/c", "d/e/f", "g"} {
		if _, err := s.Put(ctx, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	a, err := s.Put(ctx, "cas", []byte("1"))
	if err != nil {
		t.Fatal(err)
	}
	var heldDuringClose []string
	local.SetAfterCompare(func() {
		// s holds the stripe of "cas" here: other's Close must leave it.
		other.Close()
		heldDuringClose = lockFiles(t, dir)
	})
	_, err = s.PutIfMatch(ctx, "cas", []byte("2"), a.Version)
	local.SetAfterCompare(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(heldDuringClose) != 1 {
		t.Fatalf("lock files while one is held and the rest closed: %v, want exactly the held one", heldDuringClose)
	}
	if err := s.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if left := lockFiles(t, dir); len(left) != 0 {
		t.Fatalf("after Close the directory holds lock files %v", left)
	}
	// Still usable, and the data is intact.
	if _, err := s.PutIfMatch(ctx, "cas", []byte("3"), mustStat(t, s, "cas")); err != nil {
		t.Fatal(err)
	}
	got, _, err := s.Get(ctx, "cas")
	if err != nil || string(got) != "3" {
		t.Fatalf("Get after Close = %q, %v", got, err)
	}
	if got := strings.Join(keys(t, s, ""), ","); got != "b/c,cas,d/e/f,g" {
		t.Fatalf("keys after Close = %s", got)
	}
	s.Close()
}

func mustStat(t *testing.T, s *local.Store, key string) string {
	t.Helper()
	a, err := s.Stat(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	return a.Version
}
