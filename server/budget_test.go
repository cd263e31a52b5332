package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/load"
)

// Resource governance of the server (issue 27): budgets in the query path
// (HTTP, MCP, a mutation's read phase), the 413 refusal, per-graph and
// per-actor budgets, read admission (429), the heavy lane, and deadlines
// bounded by progress.

// peopleGraph is a test graph of n people with names of width bytes.
func peopleGraph(t testing.TB, n, width int) *graph.Graph {
	t.Helper()
	g := testGraph(t)
	var b strings.Builder
	pad := strings.Repeat("x", max(width-8, 0))
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `{"type":"Person","data":{"name":"p%06d%s","age":%d}}`+"\n", i, pad, i%90)
	}
	if _, err := load.Run(context.Background(), g, strings.NewReader(b.String()), load.Options{Mode: load.Append}); err != nil {
		t.Fatal(err)
	}
	return g
}

const threeWay = `query q() { match { $a: Person  $b: Person  $c: Person } return { count($a) as n } }`

func queryBody(src string) string {
	return fmt.Sprintf(`{"query":%q}`, src)
}

// TestQueryBudgetRefusal: a query over its budget is 413 with
// resource_limit {resource, limit, actual, estimated} and a message that
// says what to do, on the query route, as an MCP error result and for a
// mutation's read phase; a query within its budget answers as before.
func TestQueryBudgetRefusal(t *testing.T) {
	g := peopleGraph(t, 30, 8)
	tokens, secrets := tokensFor(t, "alice")
	_, base := newTestServer(t, g, Config{Tokens: tokens, Limits: Limits{Query: graph.Budget{Rows: 1000}}})
	c := &client{t: t, base: base, token: secrets["alice"]}

	st, m := c.json("POST", "/graphs/default/query", queryBody(threeWay))
	mustStatus(t, "three-way", st, 413, m)
	rl, _ := m["resource_limit"].(map[string]any)
	if m["code"] != "bad_request" || rl["resource"] != "query_rows" || rl["limit"] != 1000.0 || rl["actual"] != 27931.0 || rl["estimated"] != true {
		t.Fatalf("413 body: %v", m)
	}
	msg, _ := m["error"].(string)
	for _, want := range []string{"estimates 27931 rows", "scan $c Person", "narrow the query", "--max-query-rows"} {
		if !strings.Contains(msg, want) {
			t.Fatalf("message %q lacks %q", msg, want)
		}
	}
	st, m = c.json("POST", "/graphs/default/query", queryBody(`query q() { match { $a: Person  $b: Person } return { count($a) as n } }`))
	mustStatus(t, "two-way", st, 200, m)
	if fmt.Sprint(m["rows"]) != "[map[n:900]]" {
		t.Fatalf("two-way rows: %v", m["rows"])
	}

	// The same refusal as an MCP error result.
	cs, err := mcpConnect(t, base, secrets["alice"])
	if err != nil {
		t.Fatal(err)
	}
	res := callTool(t, cs, "graph_query", map[string]any{"query": threeWay})
	sm := structured(t, res)
	rl, _ = sm["resource_limit"].(map[string]any)
	if !res.IsError || sm["status"] != 413.0 || rl["resource"] != "query_rows" || rl["actual"] != 27931.0 {
		t.Fatalf("MCP refusal: %v", sm)
	}

	// A mutation's read phase: 30 rows read are over a 10-row budget.
	_, base2 := newTestServer(t, g, Config{Tokens: tokens, Limits: Limits{Query: graph.Budget{Rows: 10}}})
	c2 := &client{t: t, base: base2, token: secrets["alice"]}
	st, m = c2.json("POST", "/graphs/default/mutate", `{"query":"mutation m() { update Person set { age: 1 } where age >= 0 }"}`)
	mustStatus(t, "mutation over budget", st, 413, m)
	if rl, _ := m["resource_limit"].(map[string]any); rl["resource"] != "query_rows" || rl["estimated"] != nil {
		t.Fatalf("mutation 413: %v", m)
	}
	st, m = c.json("POST", "/graphs/default/query", queryBody(`query q() { match { $p: Person } return { count($p) as n } }`))
	mustStatus(t, "count after the refused mutation", st, 200, m)
	st, m = c.json("POST", "/graphs/default/query", queryBody(`query q() { match { $p: Person { age: 1 } } return { count($p) as n } }`))
	if fmt.Sprint(m["rows"]) != "[map[n:1]]" {
		t.Fatalf("the refused mutation changed data: %v", m["rows"])
	}
}

// TestBudgetFor: the server's defaults, then the graph's overrides, then
// the actor's; unset fields inherit, and no budget is ever unlimited.
func TestBudgetFor(t *testing.T) {
	g := testGraph(t)
	s, err := New(Config{
		Graphs: []Graph{{ID: "a", G: g, Budget: graph.Budget{Rows: 500, Time: time.Second}}, {ID: "b", G: g}},
		Limits: Limits{Query: graph.Budget{Memory: 1 << 20}},
		Actors: map[string]ActorLimits{"etl": {Budget: graph.Budget{Rows: 9000, ReadBytes: 7}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		graph, actor string
		want         graph.Budget
	}{
		{"b", "", graph.Budget{Rows: DefaultQueryRows, Memory: 1 << 20, Time: DefaultQueryTime, ReadBytes: DefaultQueryReadBytes}},
		{"a", "bob", graph.Budget{Rows: 500, Memory: 1 << 20, Time: time.Second, ReadBytes: DefaultQueryReadBytes}},
		{"a", "etl", graph.Budget{Rows: 9000, Memory: 1 << 20, Time: time.Second, ReadBytes: 7}},
		{"b", "etl", graph.Budget{Rows: 9000, Memory: 1 << 20, Time: DefaultQueryTime, ReadBytes: 7}},
	} {
		if got := s.budgetFor(c.graph, c.actor); got != c.want {
			t.Errorf("graph %s actor %q: %+v, want %+v", c.graph, c.actor, got, c.want)
		}
	}
}

// TestReadAdmission: reads hold a slot of their actor and of the server
// while they run. With one read per actor, a second read of an actor whose
// first waits in the (full) heavy lane is 429 with Retry-After; another
// actor reads, and a write of the same actor is admitted (writes keep
// their own slots). When the first read's client disconnects its slot is
// freed and the actor reads again.
func TestReadAdmission(t *testing.T) {
	g := peopleGraph(t, 400, 8)
	tokens, secrets := tokensFor(t, "alice", "bob")
	s, base := newTestServer(t, g, Config{Tokens: tokens, Limits: Limits{ReadsPerActor: 1, Reads: 3, HeavyReads: 1, RetryAfter: 5}})
	alice := &client{t: t, base: base, token: secrets["alice"]}
	bob := &client{t: t, base: base, token: secrets["bob"]}
	// Fill the heavy lane so a heavy query waits in it.
	hold, err := s.heavy.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if hold != nil {
			hold()
		}
	}()
	heavy := `{"query":"query q() { match { $a: Person  $b: Person } return { count($a) as n } }"}` // 160,000 rows: heavy
	ctx, disconnect := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "POST", base+"/graphs/default/query", strings.NewReader(heavy))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+secrets["alice"])
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	waitFor(t, "the heavy query to take its read slot", func() bool { return s.adm.inFlightReads() == 1 })

	point := `{"query":"query q() { match { $p: Person { name: \"p000001\" } } return { $p.age } }"}`
	st, m, h := alice.do("POST", "/graphs/default/query", "application/json", point)
	mustStatus(t, "alice's second read", st, 429, m)
	if h.Get("Retry-After") != "5" || m["code"] != "too_many_requests" || !strings.Contains(m["error"].(string), `actor "alice" has 1 reads in flight`) {
		t.Fatalf("429: Retry-After %q, body %v", h.Get("Retry-After"), m)
	}
	st, m = bob.json("POST", "/graphs/default/query", point)
	mustStatus(t, "bob's point read while alice's heavy query waits", st, 200, m)
	st, m = alice.json("POST", "/graphs/default/mutate", `{"query":"mutation m() { insert Person { name: \"a1\" } }"}`)
	mustStatus(t, "alice's write", st, 200, m)

	disconnect()
	<-done
	waitFor(t, "the disconnected query to free its slot", func() bool { return s.adm.inFlightReads() == 0 })
	st, m = alice.json("POST", "/graphs/default/query", point)
	mustStatus(t, "alice after her disconnect", st, 200, m)

	// The server-wide bound: three heavy reads wait in the lane, a fourth
	// actor-independent read is refused.
	tokens2, secrets2 := tokensFor(t, "a", "b", "c", "d")
	s2, base2 := newTestServer(t, g, Config{Tokens: tokens2, Limits: Limits{Reads: 3, HeavyReads: 1}})
	hold2, _ := s2.heavy.Acquire(context.Background())
	ctx2, stop2 := context.WithCancel(context.Background())
	defer stop2()
	for _, a := range []string{"a", "b", "c"} {
		go func() {
			req, _ := http.NewRequestWithContext(ctx2, "POST", base2+"/graphs/default/query", strings.NewReader(heavy))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+secrets2[a])
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
	}
	waitFor(t, "three reads in flight", func() bool { return s2.adm.inFlightReads() == 3 })
	st, m = (&client{t: t, base: base2, token: secrets2["d"]}).json("POST", "/graphs/default/query", point)
	mustStatus(t, "a fourth read on the server", st, 429, m)
	stop2()
	hold2()
	waitFor(t, "the server's reads to end", func() bool { return s2.adm.inFlightReads() == 0 })
}

// waitFor polls cond with a generous deadline (no timing is asserted).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// slowStore delays every object read.
type slowStore struct {
	backend.StorageAdapter
	delay time.Duration
}

func (s *slowStore) Get(ctx context.Context, key string) ([]byte, backend.Attrs, error) {
	time.Sleep(s.delay)
	return s.StorageAdapter.Get(ctx, key)
}

func (s *slowStore) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	time.Sleep(s.delay)
	return s.StorageAdapter.GetRange(ctx, key, off, n)
}

// TestLongReadsOutliveBodyTimeout: a request's read deadline is lifted
// once its body is read, or at once when it has none, so a read that runs
// past it is not cancelled by net/http's watch of the idle connection
// (which a passed deadline ends as if the client had gone): an export (a
// GET) over slow storage and a query waiting in the heavy lane both
// answer in full.
func TestLongReadsOutliveBodyTimeout(t *testing.T) {
	g := peopleGraph(t, 400, 8)
	slow, err := graph.Open(context.Background(), &slowStore{StorageAdapter: g.Store(), delay: 60 * time.Millisecond}, graph.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	s, base := newTestServer(t, slow, Config{Limits: Limits{BodyTimeout: 50 * time.Millisecond, HeavyReads: 1}})
	resp, err := http.Get(base + "/graphs/default/export")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Trailer.Get(api.TrailerExportEntities) != "400" || strings.Count(string(body), "\n") != 400 {
		t.Fatalf("export over slow storage: status %d, trailer %q, %d lines", resp.StatusCode, resp.Trailer.Get(api.TrailerExportEntities), strings.Count(string(body), "\n"))
	}

	hold, err := s.heavy.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(500 * time.Millisecond) // several times the body timeout
		hold()
	}()
	c := &client{t: t, base: base}
	st, m := c.json("POST", "/graphs/default/query", `{"query":"query q() { match { $a: Person  $b: Person } return { count($a) as n } }"}`)
	mustStatus(t, "a query longer than the body timeout", st, 200, m)
	if fmt.Sprint(m["rows"]) != "[map[n:160000]]" {
		t.Fatalf("rows %v", m["rows"])
	}
}

// TestSlowReadersAreCut: a client that stops reading its answer does not
// hold the server: a JSON answer must be taken within WriteTimeout and an
// export must make progress every StreamIdle; past either the connection
// is cut and the read slot freed.
func TestSlowReadersAreCut(t *testing.T) {
	g := peopleGraph(t, 40_000, 300) // answers of about 12 MB: more than the socket buffers
	// A second, not less: on a loaded 2-core machine the answer may take
	// a few hundred milliseconds to start, and the deadline runs from then.
	s, base := newTestServer(t, g, Config{Limits: Limits{WriteTimeout: time.Second, StreamIdle: time.Second}})
	addr := strings.TrimPrefix(base, "http://")
	for _, req := range []string{
		"POST /graphs/default/query HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		"GET /graphs/default/export HTTP/1.1\r\nHost: localhost\r\n\r\n",
	} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(req, "POST") {
			body := `{"query":"query q() { match { $p: Person } return { $p.name } }"}`
			req = fmt.Sprintf(req, len(body), body)
		}
		if _, err := io.WriteString(conn, req); err != nil {
			t.Fatal(err)
		}
		// Read the status line, then stop reading.
		line, err := bufio.NewReader(conn).ReadString('\n')
		if err != nil || !strings.Contains(line, "200") {
			t.Fatalf("%s: %q, %v", strings.Fields(req)[1], line, err)
		}
		waitFor(t, "the stalled answer to be cut and its slot freed", func() bool { return s.adm.inFlightReads() == 0 })
		// The connection was closed by the server: draining it ends.
		_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		n, err := io.Copy(io.Discard, conn)
		if err != nil {
			t.Fatalf("draining the cut connection: %v after %d bytes", err, n)
		}
		conn.Close()
	}
}
