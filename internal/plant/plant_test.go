package plant

import "testing"

// TestOffUntilSetAndRestored: every bug is off by default, Set plants it,
// and its restore puts the previous setting back.
func TestOffUntilSetAndRestored(t *testing.T) {
	for b := Bug(0); b < numBugs; b++ {
		if On(b) {
			t.Fatalf("bug %d is planted by default", b)
		}
		restore := Set(b, true)
		if !On(b) {
			t.Fatalf("bug %d: Set did not plant it", b)
		}
		restore()
		if On(b) {
			t.Fatalf("bug %d: restore left it planted", b)
		}
	}
}
