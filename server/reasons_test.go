package server

import (
	"fmt"
	"testing"
)

// TestEveryReasonReachesTheEnvelope: each of the engine's named errors,
// wrapped as the engine wraps them, is answered with its name as the
// envelope's reason (what the CLI prints as its JSON code, so --server and
// --store agree), whatever status and message MapError gives it.
func TestEveryReasonReachesTheEnvelope(t *testing.T) {
	for _, r := range reasons {
		err := fmt.Errorf("open the graph: %w", r.target)
		want := Reason(err)
		if want == "" {
			t.Fatalf("%v: no reason", r.target)
		}
		f := MapError(err, "g")
		if f.Body.Reason != want {
			t.Errorf("%s (%v): the envelope's reason is %q, want %q (status %d)", r.name, r.target, f.Body.Reason, want, f.Status)
		}
	}
	if got := MapError(fmt.Errorf("plain"), "g").Body.Reason; got != "" {
		t.Errorf("an unnamed error has reason %q", got)
	}
}
