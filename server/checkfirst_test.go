package server

import (
	"fmt"
	"sync"
	"testing"

	"github.com/omnigraph-go/omnigraph/graph"
)

// TestServerChecksMutationBeforeAdmission: a mutation that can never run
// (a type error, a syntax error, a parameter of the wrong type) answers
// its own 400 even while its actor's only write slot is taken, so it
// never holds a slot (on main it was 429, and while it held the slot a
// valid write beside it was turned away); a valid one still meets the
// limit; nothing was written but the write in flight.
func TestServerChecksMutationBeforeAdmission(t *testing.T) {
	g := testGraph(t)
	tokens, secrets := tokensFor(t, "alice")
	_, base := newTestServer(t, g, Config{Tokens: tokens, Limits: Limits{WritesPerActor: 1, RetryAfter: 7}})
	alice := &client{t: t, base: base, token: secrets["alice"]}
	unblock, done := writeInFlight(t, g, alice, `{"query":"mutation m() { insert Person { name: \"a1\" } }"}`)
	for _, body := range []string{
		`{"query":"mutation m() { update Person set { agee: 3 } where name = \"a1\" }"}`,
		`{"query":"mutation m() { insert Robot { name: \"r2\" } }"}`,
		`{"query":"mutation m() { insert Person { name: "}`,
		`{"query":"mutation m($n: String) { insert Person { name: $n } }","params":{"n":5}}`,
	} {
		st, m := alice.json("POST", "/graphs/default/mutate", body)
		mustStatus(t, fmt.Sprintf("a mutation that cannot run (%s) while the slot is taken", body), st, 400, m)
	}
	st, m := alice.json("POST", "/graphs/default/mutate", `{"query":"mutation m() { insert Person { name: \"a2\" } }"}`)
	mustStatus(t, "a valid write while the slot is taken", st, 429, m)
	unblock()
	if st := <-done; st != 200 {
		t.Fatalf("the write in flight: %d", st)
	}
	st, m = alice.json("POST", "/graphs/default/query", `{"query":"query q() { match { $p: Person } return { $p.name } order { $p.name asc } }"}`)
	mustStatus(t, "query", st, 200, m)
	if fmt.Sprint(m["rows"]) != "[map[p.name:a1]]" {
		t.Fatalf("rows: %v, want a1 alone", m["rows"])
	}
}

// writeInFlight sends body to mutate as c and returns once the write holds
// its admission slot, stopped after its sidecar (Phase A); unblock lets it
// go on, and done gets its status.
func writeInFlight(t *testing.T, g *graph.Graph, c *client, body string) (unblock func(), done chan int) {
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	clear := graph.Failpoints.Set(g.ID(), graph.FailpointPostPhaseA, func() error {
		first := false
		once.Do(func() { first = true })
		if first {
			close(entered)
			<-release
		}
		return nil
	})
	t.Cleanup(clear)
	done = make(chan int, 1)
	go func() {
		st, _ := (&client{t: t, base: c.base, token: c.token}).json("POST", "/graphs/default/mutate", body)
		done <- st
	}()
	<-entered
	return func() { close(release) }, done
}
